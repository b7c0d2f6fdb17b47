#include "codegen/c_api.h"

#include <cctype>
#include <map>

#include "codegen/embed.h"
#include "support/error.h"

namespace modelc {

namespace {

// The table as the preprocessor spells it: the signature's parts stringized (whitespace collapsed
// to single blanks), the comment and body as the string literals they are.
struct RawEntry {
  const char* ret;
  const char* name;
  const char* params;
  const char* when;
  const char* doc;
  const char* body;
};

const RawEntry kTable[] = {
#define MC_API(RET, FUNCTION, PARAMS, WHEN, DOC, BODY) {#RET, #FUNCTION, #PARAMS, #WHEN, DOC, BODY},
#include "runtime_stub/c_api.def"
#undef MC_API
};

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(' ');
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(' ') - a + 1);
}

// "(void** ctx, int device)" -> {{"void**", "ctx"}, {"int", "device"}}; "()" -> {}.
std::vector<ApiParam> parse_params(const std::string& fn, const std::string& text) {
  const std::string inner = trim(text.size() >= 2 ? text.substr(1, text.size() - 2) : "");
  std::vector<ApiParam> r;
  if (inner.empty()) return r;
  std::size_t at = 0;
  while (at <= inner.size()) {
    const std::size_t comma = inner.find(',', at);
    const std::string p = trim(inner.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    std::size_t name = p.size();
    while (name > 0 && (std::isalnum(static_cast<unsigned char>(p[name - 1])) || p[name - 1] == '_')) --name;
    if (name == 0 || name == p.size()) {
      throw Error("internal: runtime_stub/c_api.def: parameter '" + p + "' of " + fn + " has no type or no name");
    }
    r.push_back({trim(p.substr(0, name)), p.substr(name)});
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return r;
}

std::vector<ApiFunction> read_table() {
  std::vector<ApiFunction> r;
  for (const RawEntry& e : kTable) {
    ApiFunction f;
    f.ret = e.ret;
    f.name = e.name;
    f.params = parse_params(f.name, e.params);
    const std::string when = e.when;
    if (when != "always" && when != "weights_file") {
      throw Error("internal: runtime_stub/c_api.def: " + f.name + " has WHEN '" + when + "' (always or weights_file)");
    }
    f.weights_file_only = when == "weights_file";
    f.doc = e.doc;
    f.body = e.body;
    r.push_back(std::move(f));
  }
  return r;
}

// The context parameter (named ctx) as NAME.h types it; other parameters as the table does.
std::string c_type(const ApiModel& m, const ApiParam& p) {
  if (p.name != "ctx") return p.type;
  if (p.type == "void**") return m.name + "_ctx**";
  if (p.type == "void*") return m.name + "_ctx*";
  if (p.type == "const void*") return "const " + m.name + "_ctx*";
  throw Error("internal: runtime_stub/c_api.def: a ctx parameter of type '" + p.type + "'");
}

// "(NAME_ctx* ctx, int i)", "(void)" in C for no parameter; as_table: the table's own types.
std::string param_list(const ApiModel& m, const ApiFunction& f, bool as_table) {
  if (f.params.empty()) return as_table ? "()" : "(void)";
  std::string s;
  for (const ApiParam& p : f.params) {
    const std::string t = as_table ? p.type : c_type(m, p);
    s += (s.empty() ? "" : ", ") + t + (t.back() == '*' ? "" : " ") + p.name;
  }
  return "(" + s + ")";
}

// "const char*" + "NAME_error" -> "const char* NAME_error".
std::string typed(const std::string& type, const std::string& name) {
  return type + (type.back() == '*' ? "" : " ") + name;
}

const ApiParam* ctx_param(const ApiFunction& f) {
  for (const ApiParam& p : f.params) {
    if (p.name == "ctx") return &p;
  }
  return nullptr;
}

// The model facts the table's comments and bodies name (@KEY@).
std::map<std::string, std::string> facts(const ApiModel& m) {
  const std::string& n = m.name;
  std::map<std::string, std::string> v;
  v["NAME"] = n;
  v["GRAPHS_NOTE"] = m.profiles ? " (one per batch profile)" : "";
  v["WEIGHTS_FILE_NOTE"] = m.weights_file ? "The weights are read from " + n +
                                                "_weights.bin next to the executable (see\n" + n +
                                                "_create_with_weights to give another path).\n"
                                          : "";
  v["RUN_NOTE"] = m.profiles ? " The largest batch\nprofile's batch: " + n + "_run_batch(ctx, " +
                                   std::to_string(m.largest_batch) + ", ...)."
                             : "";
  v["RUN_HOST_NOTE"] = m.profiles ? " The largest batch profile's batch." : "";
  v["AT_LARGEST_BATCH"] = m.profiles ? " at the largest batch" : "";
  v["ARENA_NOTE"] = m.profiles ? " (the largest batch profile's)" : "";
  // Embedded weights: the blob linked in must be the one the code was compiled with.
  v["EMBEDDED_WEIGHTS_CHECK"] =
      m.weights_file ? ""
                     : "if (static_cast<size_t>(" + n + "_weights_end - " + n + "_weights) != kModel.weights_bytes) {\n"
                       "  return (*ctx)->rt.status().fail(mc::kWeightsFile, \"the weights linked into this binary are not the \"\n"
                       "                                  \"ones its code was compiled with: rebuild it (make clean; make)\");\n"
                       "}\n";
  return v;
}

// Each line of `text` after `prefix` (an empty line gets the prefix without its trailing blank).
std::string prefixed(const std::string& text, const std::string& prefix) {
  std::string r;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(at, nl - at);
    r += (line.empty() ? trim(prefix) : prefix + line) + "\n";
    at = nl + 1;
  }
  return r;
}

// Calls out(f, last) for each function, `last` when the next one starts another comment group.
template <class F>
void for_each_grouped(const std::vector<const ApiFunction*>& fs, F&& out) {
  for (std::size_t i = 0; i < fs.size(); ++i) out(*fs[i], i + 1 == fs.size() || !fs[i + 1]->doc.empty());
}

}  // namespace

const std::vector<ApiFunction>& c_api_table() {
  static const std::vector<ApiFunction> table = read_table();
  return table;
}

std::vector<const ApiFunction*> api_functions(const ApiModel& m) {
  std::vector<const ApiFunction*> r;
  for (const ApiFunction& f : c_api_table()) {
    if (!f.weights_file_only || m.weights_file) r.push_back(&f);
  }
  return r;
}

std::string api_declarations(const ApiModel& m) {
  const std::map<std::string, std::string> v = facts(m);
  std::string s;
  for_each_grouped(api_functions(m), [&](const ApiFunction& f, bool last) {
    if (!f.doc.empty()) s += prefixed(render_template(f.doc, v, "runtime_stub/c_api.def (" + f.name + ")"), "/// ");
    s += typed(f.ret, m.name + "_" + f.name) + param_list(m, f, false) + ";\n";
    if (last) s += "\n";
  });
  return s;
}

std::string api_definitions(const ApiModel& m) {
  const std::map<std::string, std::string> v = facts(m);
  std::string s;
  for_each_grouped(api_functions(m), [&](const ApiFunction& f, bool last) {
    s += typed(f.ret, m.name + "_" + f.name) + param_list(m, f, false) + " {\n";
    s += prefixed(render_template(f.body, v, "runtime_stub/c_api.def (" + f.name + ")"), "  ");
    s += "}\n";
    if (last) s += "\n";
  });
  return s;
}

std::string cli_wrappers(const ApiModel& m) {
  const std::string& n = m.name;
  std::string s;
  for (const ApiFunction* f : api_functions(m)) {
    const ApiParam* ctx = ctx_param(*f);
    if (!ctx) continue;  // the table names the NAME_ function itself
    std::string args;
    for (const ApiParam& p : f->params) {
      std::string a = p.name;
      if (&p == ctx) a = ctx->type == "void**" ? "&c" : "static_cast<" + c_type(m, p) + ">(ctx)";
      args += (args.empty() ? "" : ", ") + a;
    }
    const std::string call = n + "_" + f->name + "(" + args + ")";
    s += typed(f->ret, f->name) + param_list(m, *f, true) + " {\n";
    if (ctx->type == "void**") {
      // The context comes back through a NAME_ctx**: set *ctx however the call ends.
      s += "  " + n + "_ctx* c = nullptr;\n  const " + typed(f->ret, "r") + " = " + call + ";\n  *ctx = c;\n  return r;\n";
    } else {
      s += "  " + std::string(f->ret == "void" ? "" : "return ") + call + ";\n";
    }
    s += "}\n\n";
  }
  return s;
}

std::string cli_table(const ApiModel& m) {
  const std::vector<const ApiFunction*> present = api_functions(m);
  std::string s;
  for (const ApiFunction& f : c_api_table()) {
    bool has = false;
    for (const ApiFunction* p : present) has = has || p == &f;
    s += "      " + (!has ? std::string("nullptr") : ctx_param(f) ? f.name : m.name + "_" + f.name) + ",\n";
  }
  return s;
}

std::string python_prototypes(const ApiModel& m) {
  // C type -> ctypes, with c = ctypes and pp = c.POINTER(c.c_void_p) (arrays of pointers, and the
  // context's address).
  static const std::map<std::string, std::string> kTypes = {
      {"void", "None"},
      {"int", "c.c_int"},
      {"int64_t", "c.c_int64"},
      {"size_t", "c.c_size_t"},
      {"const char*", "c.c_char_p"},
      {"const int64_t*", "c.POINTER(c.c_int64)"},
      {"void*", "c.c_void_p"},
      {"const void*", "c.c_void_p"},
      {"cudaStream_t", "c.c_void_p"},
      {"void**", "pp"},
      {"const void* const*", "pp"},
      {"void* const*", "pp"},
  };
  auto py = [&](const std::string& fn, const std::string& t) {
    const auto it = kTypes.find(t);
    if (it == kTypes.end()) {
      throw Error("internal: runtime_stub/c_api.def: " + fn + " has C type '" + t +
                  "', which codegen/c_api.cpp has no ctypes type for");
    }
    return it->second;
  };
  std::string s;
  s += "def _c_api():\n";
  s += "    \"\"\"The C API of " + m.name + ".h: function -> (restype, argtypes), generated by modelc from the\n";
  s += "    table of the C API (runtime/c_api.def) that the header is generated from too.\"\"\"\n";
  s += "    c = ctypes\n";
  s += "    pp = c.POINTER(c.c_void_p)\n";
  s += "    return {\n";
  for (const ApiFunction* f : api_functions(m)) {
    std::string args;
    for (const ApiParam& p : f->params) args += (args.empty() ? "" : ", ") + py(f->name, p.type);
    s += "        \"" + f->name + "\": (" + py(f->name, f->ret) + ", [" + args + "]),\n";
  }
  s += "    }\n";
  return s;
}

}  // namespace modelc

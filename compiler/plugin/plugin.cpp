// compiler/plugin/plugin.cpp — reading a plugin's manifest, its ops' rules, and their entries in
// the op table (plugin.h; the manifest's format: docs/PLUGINS.md).
#include "plugin/plugin.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ops/registry.h"
#include "plugin/runner.h"
#include "support/json_limits.h"

namespace fs = std::filesystem;

namespace modelc::plugin {

namespace {

using Json = nlohmann::ordered_json;

constexpr int kFormatVersion = 1;
constexpr std::uintmax_t kMaxManifestBytes = 1 << 20;
constexpr std::uintmax_t kMaxHeaderBytes = 4 << 20;

struct State {
  std::deque<Plugin> plugins;
  std::map<std::string, const Plugin*> by_manifest;  // canonical manifest path -> plugin
  std::map<std::pair<std::string, std::string>, const PluginOp*> by_op;  // (domain, op)
};

State& state() {
  static State s;
  return s;
}

Error file_error(const std::string& file, const std::string& message, const std::string& hint = {}) {
  Error::Where w;
  w.file = file;
  return Error(w, message, hint);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Words a Params field or the plugin's name cannot be (C++ keywords, and names the emitted code uses).
bool reserved_word(const std::string& s) {
  static const std::set<std::string> k = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor", "workspace"};
  return k.count(s) != 0;
}

// "a::b::Kernel"
bool is_qualified_name(const std::string& s) {
  std::size_t a = s.compare(0, 2, "::") == 0 ? 2 : 0;
  for (;;) {
    const std::size_t b = s.find("::", a);
    if (!is_identifier(s.substr(a, b == std::string::npos ? std::string::npos : b - a))) return false;
    if (b == std::string::npos) return true;
    a = b + 2;
  }
}

// A header path inside the plugin folder: relative, no "..", plain characters.
bool safe_relative_path(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  for (char c : p) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::string("_.-+/").find(c) == std::string::npos) return false;
  }
  std::size_t a = 0;
  for (;;) {
    const std::size_t b = p.find('/', a);
    const std::string part = p.substr(a, b == std::string::npos ? std::string::npos : b - a);
    if (part.empty() || part == "." || part == "..") return false;
    if (b == std::string::npos) return true;
    a = b + 1;
  }
}

// The DType spelled `name` ("float32", "float16", "int64", "bool", ...): dtype_name's words.
std::optional<DType> dtype_named(const std::string& name) {
  for (int code = 1; code < 64; ++code) {
    const DType t = dtype_from_onnx(code);
    if (t != DType::undefined && name == dtype_name(t)) return t;
  }
  return std::nullopt;
}

std::string dtype_words() {
  std::string s;
  for (int code = 1; code < 64; ++code) {
    const DType t = dtype_from_onnx(code);
    if (t == DType::undefined) continue;
    try {
      plugin_ctype(t);
    } catch (const Error&) {
      continue;
    }
    s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  }
  return s;
}

std::string read_file(const std::string& path, std::uintmax_t limit, const std::string& what, const std::string& manifest) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw file_error(path, what + " does not exist", manifest.empty() ? std::string() : "it is named in " + manifest);
  }
  if (!S_ISREG(st.st_mode)) throw file_error(path, what + " is not a regular file");
  if (static_cast<std::uintmax_t>(st.st_size) > limit) {
    throw file_error(path, what + " is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(limit) +
                               " a plugin's file may have");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw file_error(path, what + " cannot be read");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw file_error(path, what + " cannot be read");
  return ss.str();
}

// ---- the manifest, field by field -------------------------------------------------------------

// Reads one JSON object of the manifest, refusing keys it does not know (a typo is an error, not
// a silently ignored field). `at` names the object in messages: "ops[1] (RowMedian)".
class Fields {
 public:
  Fields(const Json& j, std::string at, const std::string& manifest) : j_(j), at_(std::move(at)), manifest_(manifest) {
    if (!j.is_object()) fail("", "expected an object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& message, const std::string& hint = {}) const {
    // "shape[1]" -> "shape"[1]: the field, then the element of it.
    std::string where = at_;
    const std::size_t bracket = key.find('[');
    if (!key.empty()) {
      where += (where.empty() ? "" : ": ") + std::string("\"") + key.substr(0, bracket) + "\"" +
               (bracket == std::string::npos ? "" : key.substr(bracket));
    }
    throw file_error(manifest_, (where.empty() ? "" : where + ": ") + message, hint);
  }
  const std::string& at() const { return at_; }
  const std::string& manifest() const { return manifest_; }

  bool has(const std::string& key) {
    known_.insert(key);
    return j_.contains(key) && !j_.at(key).is_null();
  }
  const Json& get(const std::string& key) {
    if (!has(key)) fail(key, "is required");
    return j_.at(key);
  }
  std::string string(const std::string& key) {
    const Json& v = get(key);
    if (!v.is_string()) fail(key, "expected a string");
    return v.get<std::string>();
  }
  std::string string_or(const std::string& key, const std::string& def) { return has(key) ? string(key) : def; }
  const Json& array(const std::string& key) {
    const Json& v = get(key);
    if (!v.is_array()) fail(key, "expected an array");
    return v;
  }
  // Unknown keys: after every field was read.
  void done() const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (known_.count(it.key())) continue;
      std::string names;
      for (const std::string& k : known_) names += (names.empty() ? "" : ", ") + k;
      fail(it.key(), "is not a field of this object", "its fields are " + names + " (docs/PLUGINS.md)");
    }
  }

 private:
  const Json& j_;
  std::string at_;
  const std::string& manifest_;
  std::set<std::string> known_;
};

// An expression field: a string or an integer.
Expr expression(Fields& f, const std::string& key, const Json& v, const Names& names, bool allow_slice = false) {
  if (v.is_number_integer()) return Expr::literal(v.get<int64_t>());
  if (!v.is_string()) f.fail(key, "expected an expression (a string) or an integer");
  try {
    return Expr::parse(v.get<std::string>(), names, allow_slice);
  } catch (const Error& e) {
    f.fail(key, e.message());
  }
}

Attribute attribute_value(Fields& f, const std::string& key, const Json& v, const AttributeRule& a) {
  Attribute r;
  using T = AttributeRule::Type;
  auto number = [&](const Json& x, bool integer) {
    if (integer ? !x.is_number_integer() : !x.is_number()) f.fail(key, std::string("expected ") + (integer ? "an integer" : "a number"));
  };
  switch (a.type) {
    case T::int_:
      number(v, true);
      r.kind = Attribute::Kind::i;
      r.i = v.get<int64_t>();
      break;
    case T::float_:
      number(v, false);
      r.kind = Attribute::Kind::f;
      r.f = v.get<double>();
      break;
    case T::string:
      if (!v.is_string()) f.fail(key, "expected a string");
      r.kind = Attribute::Kind::s;
      r.s = v.get<std::string>();
      break;
    case T::ints:
    case T::floats:
      if (!v.is_array()) f.fail(key, "expected an array");
      r.kind = a.type == T::ints ? Attribute::Kind::ints : Attribute::Kind::floats;
      for (const Json& x : v) {
        number(x, a.type == T::ints);
        if (a.type == T::ints) r.ints.push_back(x.get<int64_t>());
        else r.floats.push_back(x.get<double>());
      }
      break;
  }
  return r;
}

AttributeRule parse_attribute(const Json& j, const std::string& at, const std::string& manifest, const Names& names) {
  Fields f(j, at, manifest);
  AttributeRule a;
  a.name = f.string("name");
  const std::string type = f.string("type");
  static const std::map<std::string, AttributeRule::Type> kTypes = {{"int", AttributeRule::Type::int_},
                                                                     {"float", AttributeRule::Type::float_},
                                                                     {"string", AttributeRule::Type::string},
                                                                     {"ints", AttributeRule::Type::ints},
                                                                     {"floats", AttributeRule::Type::floats}};
  auto t = kTypes.find(type);
  if (t == kTypes.end()) f.fail("type", "'" + type + "' is not an attribute type", "use int, float, string, ints or floats");
  a.type = t->second;
  if (f.has("values")) {
    if (a.type != AttributeRule::Type::string) f.fail("values", "only a string attribute has values");
    for (const Json& v : f.array("values")) {
      if (!v.is_string()) f.fail("values", "expected strings");
      if (std::find(a.values.begin(), a.values.end(), v.get<std::string>()) != a.values.end()) {
        f.fail("values", "'" + v.get<std::string>() + "' is listed twice");
      }
      a.values.push_back(v.get<std::string>());
    }
    if (a.values.empty()) f.fail("values", "is empty");
  } else if (a.type == AttributeRule::Type::string) {
    f.fail("values", "is required for a string attribute: the kernel gets the index of the node's value in it");
  }
  if (f.has("length")) {
    if (a.type != AttributeRule::Type::ints && a.type != AttributeRule::Type::floats) {
      f.fail("length", "only a list attribute (ints, floats) has a length");
    }
    a.length = expression(f, "length", f.get("length"), names);
  }
  if (f.has("default")) {
    a.default_value = attribute_value(f, "default", f.get("default"), a);
    if (a.type == AttributeRule::Type::string &&
        std::find(a.values.begin(), a.values.end(), a.default_value->s) == a.values.end()) {
      f.fail("default", "'" + a.default_value->s + "' is not one of its values");
    }
  }
  f.done();
  return a;
}

PluginOp parse_op(const Json& j, std::size_t index, const Plugin& plugin, const std::string& manifest) {
  PluginOp op;
  op.plugin = &plugin;
  std::string at = "ops[" + std::to_string(index) + "]";
  if (j.is_object() && j.contains("op") && j.at("op").is_string()) at += " (" + j.at("op").get<std::string>() + ")";
  Fields f(j, at, manifest);
  op.op = f.string("op");
  if (!is_identifier(op.op)) f.fail("op", "'" + op.op + "' is not an operator name (letters, digits, '_')");
  op.domain = f.string_or("domain", "");
  if (op.domain == "ai.onnx") op.domain = "";
  if (op.domain == ops::kModelcDomain) {
    f.fail("domain", "the '" + std::string(ops::kModelcDomain) + "' domain is modelc's own (its internal fused ops)",
           "give the op your own domain, e.g. \"com.example\"");
  }
  op.doc = f.string_or("doc", "");
  op.header = f.string("header");
  if (!safe_relative_path(op.header)) {
    f.fail("header", "'" + op.header + "' is not a path inside the plugin's folder",
           "a relative path of letters, digits and _ . - + /, without '..'");
  }
  op.kernel = f.string("kernel");
  if (!is_qualified_name(op.kernel)) {
    f.fail("kernel", "'" + op.kernel + "' is not a class template's name", "e.g. \"example::ScaledSoftplus\"");
  }

  std::set<std::string> fields;  // Params field names: unique
  auto field = [&](Fields& g, const std::string& name, const char* key) {
    if (!is_identifier(name) || reserved_word(name)) {
      g.fail(key, "'" + name + "' cannot name a Params field", "a C identifier that is not a keyword nor 'workspace'");
    }
    if (!fields.insert(name).second) g.fail(key, "'" + name + "' names two inputs, outputs or attributes");
  };

  Names input_names;  // what checks and shapes read: the inputs and the attributes
  const Json& inputs = f.array("inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Fields g(inputs[i], at + ": inputs[" + std::to_string(i) + "]", manifest);
    InputRule in;
    in.name = g.string("name");
    field(g, in.name, "name");
    for (const Json& d : g.array("dtypes")) {
      if (!d.is_string()) g.fail("dtypes", "expected strings");
      const std::string s = d.get<std::string>();
      if (const std::optional<DType> t = dtype_named(s)) {
        try {
          plugin_ctype(*t);
        } catch (const Error& e) {
          g.fail("dtypes", e.message());
        }
      } else if (!input_names.tensors.count(s)) {
        g.fail("dtypes", "'" + s + "' is neither an element type nor an earlier input",
               "the types are " + dtype_words() + "; an earlier input's name means its type");
      }
      in.dtypes.push_back(s);
    }
    if (in.dtypes.empty()) g.fail("dtypes", "is empty");
    g.done();
    input_names.tensors.insert(in.name);
    op.inputs.push_back(in);
  }

  if (f.has("attributes")) {
    const Json& attrs = f.array("attributes");
    // Names first: a list's length may read another attribute.
    for (const Json& a : attrs) {
      if (!a.is_object() || !a.contains("name") || !a.at("name").is_string()) continue;
      const std::string type = a.contains("type") && a.at("type").is_string() ? a.at("type").get<std::string>() : "";
      (type == "ints" || type == "floats" ? input_names.lists : input_names.scalars).insert(a.at("name").get<std::string>());
    }
    for (std::size_t i = 0; i < attrs.size(); ++i) {
      const std::string aat = at + ": attributes[" + std::to_string(i) + "]";
      AttributeRule a = parse_attribute(attrs[i], aat, manifest, input_names);
      Fields g(attrs[i], aat, manifest);
      field(g, a.name, "name");
      op.attributes.push_back(std::move(a));
    }
  }

  if (f.has("checks")) {
    const Json& checks = f.array("checks");
    for (std::size_t i = 0; i < checks.size(); ++i) {
      const std::string key = "checks[" + std::to_string(i) + "]";
      Check c;
      if (checks[i].is_string()) {
        c.expr = expression(f, key, checks[i], input_names);
      } else {
        Fields g(checks[i], at + ": " + key, manifest);
        c.expr = expression(g, "expr", g.get("expr"), input_names);
        c.message = g.string_or("message", "");
        g.done();
      }
      op.checks.push_back(std::move(c));
    }
  }

  Names all_names = input_names;  // workspace, template_args, flops: the outputs too
  const Json& outputs = f.array("outputs");
  if (outputs.empty()) f.fail("outputs", "an op has at least one output");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    Fields g(outputs[i], at + ": outputs[" + std::to_string(i) + "]", manifest);
    OutputRule o;
    o.name = g.string("name");
    field(g, o.name, "name");
    o.dtype = g.string("dtype");
    if (!dtype_named(o.dtype) && !input_names.tensors.count(o.dtype)) {
      g.fail("dtype", "'" + o.dtype + "' is neither an element type nor an input",
             "the types are " + dtype_words() + "; an input's name means its type");
    }
    if (const std::optional<DType> t = dtype_named(o.dtype)) {
      try {
        plugin_ctype(*t);
      } catch (const Error& e) {
        g.fail("dtype", e.message());
      }
    }
    const Json& shape = g.get("shape");
    if (shape.is_string()) {
      o.shape_like = shape.get<std::string>();
      if (!input_names.tensors.count(o.shape_like)) {
        g.fail("shape", "'" + o.shape_like + "' is not an input", "give an input's name (its shape), or a list of dims");
      }
    } else if (shape.is_array()) {
      for (std::size_t d = 0; d < shape.size(); ++d) {
        o.shape.push_back(expression(g, "shape[" + std::to_string(d) + "]", shape[d], input_names, true));
      }
    } else {
      g.fail("shape", "expected an input's name or a list of dims");
    }
    g.done();
    all_names.tensors.insert(o.name);
    op.outputs.push_back(std::move(o));
  }

  if (f.has("template_args")) {
    const Json& targs = f.array("template_args");
    for (std::size_t i = 0; i < targs.size(); ++i) {
      op.template_args.push_back(expression(f, "template_args[" + std::to_string(i) + "]", targs[i], all_names));
    }
  }
  if (f.has("workspace")) op.workspace = expression(f, "workspace", f.get("workspace"), all_names);
  if (f.has("flops")) op.flops = expression(f, "flops", f.get("flops"), all_names);
  if (f.has("fp16")) {
    if (!f.get("fp16").is_boolean()) f.fail("fp16", "expected true or false");
    op.fp16 = f.get("fp16").get<bool>();
  }
  f.done();
  return op;
}

// ---- a node's scope ----------------------------------------------------------------------------

// The expressions' view of one node: inputs (and, once inferred, outputs) by their manifest names,
// attributes with their defaults.
class NodeScope : public Scope {
 public:
  NodeScope(const PluginOp& op, const Node& n, bool outputs) : op_(op), n_(n) {
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (n.has_input(static_cast<int>(i))) tensors_[op.inputs[i].name] = &n.input(static_cast<int>(i));
    }
    if (outputs) {
      for (std::size_t i = 0; i < op.outputs.size(); ++i) {
        if (n.has_output(static_cast<int>(i))) tensors_[op.outputs[i].name] = &n.output(static_cast<int>(i));
      }
    }
  }
  const Shape* tensor(const std::string& name) const override {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second->shape();
  }
  int64_t itemsize(const std::string& name) const override {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? 0 : static_cast<int64_t>(dtype_size(it->second->dtype()));
  }
  bool scalar(const std::string& name, Number& out) const override {
    const AttributeRule* a = rule(name);
    if (!a) return false;
    const Attribute* v = value(*a);
    switch (a->type) {
      case AttributeRule::Type::int_: out = Number::integer(v->i); return true;
      case AttributeRule::Type::float_: out = Number::real(v->f); return true;
      case AttributeRule::Type::string:
        out = Number::integer(std::find(a->values.begin(), a->values.end(), v->s) - a->values.begin());
        return true;
      default: return false;
    }
  }
  bool list(const std::string& name, std::vector<Number>& out) const override {
    const AttributeRule* a = rule(name);
    if (!a || (a->type != AttributeRule::Type::ints && a->type != AttributeRule::Type::floats)) return false;
    const Attribute* v = value(*a);
    out.clear();
    if (a->type == AttributeRule::Type::ints) {
      for (int64_t x : v->ints) out.push_back(Number::integer(x));
    } else {
      for (double x : v->floats) out.push_back(Number::real(x));
    }
    return true;
  }

  const AttributeRule* rule(const std::string& name) const {
    for (const AttributeRule& a : op_.attributes) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }
  // The node's value, else the default (validate made sure one of them exists).
  const Attribute* value(const AttributeRule& a) const {
    if (const Attribute* v = n_.attr(a.name)) return v;
    if (a.default_value) return &*a.default_value;
    throw Error("internal: attribute '" + a.name + "' has no value");
  }

 private:
  const PluginOp& op_;
  const Node& n_;
  std::map<std::string, const Value*> tensors_;
};

Attribute::Kind kind_of(AttributeRule::Type t) {
  switch (t) {
    case AttributeRule::Type::int_: return Attribute::Kind::i;
    case AttributeRule::Type::float_: return Attribute::Kind::f;
    case AttributeRule::Type::string: return Attribute::Kind::s;
    case AttributeRule::Type::ints: return Attribute::Kind::ints;
    case AttributeRule::Type::floats: return Attribute::Kind::floats;
  }
  return Attribute::Kind::i;
}

// The op table's validate: the attributes' kinds, required ones and allowed values.
void validate(const PluginOp& op, const Node& n) {
  for (const AttributeRule& a : op.attributes) {
    const Attribute* v = n.attr(a.name);
    if (!v) {
      if (!a.default_value) {
        throw n.error(op.where() + ": the required attribute '" + a.name + "' (" + AttributeRule::type_name(a.type) +
                      ") is missing");
      }
      continue;
    }
    if (v->kind != kind_of(a.type)) {
      throw n.error(op.where() + ": attribute '" + a.name + "' is " + Attribute::kind_name(v->kind) + ", the plugin declares " +
                    AttributeRule::type_name(a.type));
    }
    if (a.type == AttributeRule::Type::string && std::find(a.values.begin(), a.values.end(), v->s) == a.values.end()) {
      std::string vs;
      for (const std::string& s : a.values) vs += (vs.empty() ? "'" : ", '") + s + "'";
      throw n.error(op.where() + ": attribute '" + a.name + "' is '" + v->s + "', not one of " + vs);
    }
  }
}

// The op table's infer: the inputs' types, the checks, then each output's type and shape.
void infer(const PluginOp& op, Node& n) {
  std::map<std::string, DType> types;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const InputRule& in = op.inputs[i];
    const DType t = n.input(static_cast<int>(i)).dtype();
    bool ok = false;
    std::string allowed;
    for (const std::string& d : in.dtypes) {
      const std::optional<DType> named = dtype_named(d);
      const DType want = named ? *named : types.at(d);
      ok = ok || t == want;
      allowed += (allowed.empty() ? "" : ", ") + std::string(dtype_name(want)) + (named ? "" : " (as " + d + ")");
    }
    if (!ok) {
      throw n.error(op.where() + ": input " + std::to_string(i) + " ('" + in.name + "') is " + dtype_name(t) +
                    ", the plugin takes " + allowed);
    }
    types[in.name] = t;
  }
  const NodeScope scope(op, n, false);
  for (const Check& c : op.checks) {
    Number v;
    try {
      v = c.expr.eval(scope);
    } catch (const Error& e) {
      throw n.error(op.where() + ": check '" + c.expr.text() + "': " + e.message());
    }
    if (v.is_float ? v.f == 0 : v.i == 0) {
      throw n.error(op.where() + ": check '" + c.expr.text() + "' fails" + (c.message.empty() ? "" : ": " + c.message));
    }
  }
  for (const AttributeRule& a : op.attributes) {
    if (!a.length) continue;
    std::vector<Number> values;
    scope.list(a.name, values);
    int64_t want = 0;
    try {
      want = a.length->eval_int(scope, "the length of attribute '" + a.name + "'");
    } catch (const Error& e) {
      throw n.error(op.where() + ": the length rule of attribute '" + a.name + "': " + e.message());
    }
    if (want < 0) {
      throw n.error(op.where() + ": the length rule of attribute '" + a.name + "' ('" + a.length->text() + "') gives " +
                    std::to_string(want));
    }
    if (static_cast<int64_t>(values.size()) != want) {
      throw n.error(op.where() + ": attribute '" + a.name + "' has " + std::to_string(values.size()) +
                    " values, the plugin requires " + std::to_string(want) + " ('" + a.length->text() + "')");
    }
  }
  for (std::size_t i = 0; i < op.outputs.size(); ++i) {
    const OutputRule& o = op.outputs[i];
    const DType t = dtype_named(o.dtype) ? *dtype_named(o.dtype) : types.at(o.dtype);
    Shape shape;
    if (!o.shape_like.empty()) {
      shape = *scope.tensor(o.shape_like);
    } else {
      for (std::size_t d = 0; d < o.shape.size(); ++d) {
        std::vector<int64_t> dims;
        try {
          dims = o.shape[d].eval_dims(scope, "a dim");
        } catch (const Error& e) {
          throw n.error(op.where() + ": the shape rule of output '" + o.name + "', item " + std::to_string(d) + " ('" +
                        o.shape[d].text() + "'): " + e.message());
        }
        for (int64_t x : dims) {
          if (x < 0) {
            throw n.error(op.where() + ": the shape rule of output '" + o.name + "' gives the dim " + std::to_string(x) +
                          " (item " + std::to_string(d) + ", '" + o.shape[d].text() + "')");
          }
          shape.push_back(x);
        }
      }
    }
    if (n.has_output(static_cast<int>(i))) n.output(static_cast<int>(i)).set_type(t, shape);
  }
}

std::string float_literal(double v) {
  const float f = static_cast<float>(v);
  if (std::isnan(f)) return "NAN";
  if (std::isinf(f)) return f > 0 ? "INFINITY" : "(-INFINITY)";
  char b[48];
  std::snprintf(b, sizeof b, "%.9g", static_cast<double>(f));
  std::string s = b;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string int_literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + (v > 2147483647 || v < -2147483647 ? "LL" : "");
}

ops::OpDef op_def(const PluginOp& op) {
  ops::OpDef d;
  d.name = op.op;
  d.domain = op.domain;
  d.since = 0;  // every opset of its domain (a custom domain's version is the model's business)
  for (const AttributeRule& a : op.attributes) d.attributes.push_back(a.name);
  d.min_inputs = d.max_inputs = static_cast<int>(op.inputs.size());
  d.min_outputs = d.max_outputs = static_cast<int>(op.outputs.size());
  const PluginOp* p = &op;
  d.validate = [p](const Node& n) { validate(*p, n); };
  d.infer = [p](Node& n) { infer(*p, n); };
  d.eval = [p](const Node& n, const ops::TensorRefs& in) { return run_on_emulation(*p, n, in); };
  d.precision = op.fp16 ? ops::Precision::fp16 : ops::Precision::unset;
  d.kernels = {"plugin"};
  d.family = "plugin";
  if (op.flops) {
    d.flops = [p](const Node& n) -> int64_t {
      const Number v = p->flops->eval(NodeScope(*p, n, true));
      return v.is_float ? static_cast<int64_t>(std::llround(v.f)) : v.i;
    };
  }
  d.doc = (op.doc.empty() ? std::string("custom operator") : op.doc) + " (plugin '" + op.plugin->name + "')";
  return d;
}

}  // namespace

const char* AttributeRule::type_name(Type t) {
  switch (t) {
    case Type::int_: return "int";
    case Type::float_: return "float";
    case Type::string: return "string";
    case Type::ints: return "ints";
    case Type::floats: return "floats";
  }
  return "?";
}

std::string PluginOp::qualified() const { return domain.empty() ? op : domain + "." + op; }
std::string PluginOp::where() const { return plugin->where() + ", op " + qualified(); }
std::string Plugin::where() const { return "plugin '" + name + "' (" + manifest + ")"; }

std::string plugin_ctype(DType t) {
  switch (t) {
    case DType::float32: return "float";
    case DType::float16: return "__half";
    case DType::int64: return "int64_t";
    case DType::int32: return "int32_t";
    case DType::int8: return "int8_t";
    case DType::uint8: return "uint8_t";
    case DType::boolean: return "bool";
    default: break;
  }
  throw Error(std::string("plugin kernels do not take ") + dtype_name(t) + " tensors");
}

std::string emitted_header(const Plugin& p, const std::string& header) { return "plugins/" + p.name + "/" + header; }

const Plugin& load_plugin(const std::string& path) {
  std::error_code ec;
  if (path.empty()) throw Error("--plugin: the path is empty", "give a plugin folder (holding plugin.json) or its manifest");
  std::string manifest = path;
  std::string dir;
  if (fs::is_directory(path, ec)) {
    manifest = (fs::path(path) / kManifestName).string();
    dir = path;
  } else {
    if (!fs::exists(path, ec)) {
      throw file_error(path, "the plugin does not exist", "--plugin takes a folder holding plugin.json, or the manifest itself");
    }
    dir = fs::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
  }
  const std::string text = read_file(manifest, kMaxManifestBytes, "the plugin's manifest", "");
  const std::string canonical = fs::weakly_canonical(manifest, ec).string();
  State& s = state();
  if (auto it = s.by_manifest.find(canonical); it != s.by_manifest.end()) return *it->second;

  if (const std::string deep = json_nesting_problem(text); !deep.empty()) {
    throw file_error(manifest, "the plugin's manifest " + deep, "a manifest's deepest field, ops[i].inputs[j].dtypes, is 6 levels deep (docs/PLUGINS.md)");
  }
  Json j;
  try {
    j = Json::parse(text, nullptr, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    // Line and column of the byte it stopped at.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string what = e.what();
    const std::size_t colon = what.find(": ", what.find("parse error"));
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw file_error(manifest, "the plugin's manifest is not valid JSON (line " + std::to_string(line) + ", column " +
                                   std::to_string(column) + "): " + what);
  } catch (const nlohmann::json::exception& e) {
    // The parser's other errors: a number too large for a double ("number overflow", out_of_range).
    throw file_error(manifest, std::string("the plugin's manifest is not valid JSON: ") + e.what());
  }

  Plugin p;
  p.dir = dir;
  p.manifest = manifest;
  Fields f(j, "", manifest);
  const Json& version = f.get("modelc_plugin");
  if (!version.is_number_integer() || version.get<int64_t>() != kFormatVersion) {
    f.fail("modelc_plugin", "must be " + std::to_string(kFormatVersion) + " (the manifest format this modelc reads)");
  }
  p.name = f.string("name");
  if (!is_identifier(p.name)) f.fail("name", "'" + p.name + "' is not a C identifier (letters, digits, '_')");
  std::vector<std::string> headers;
  if (f.has("headers")) {
    for (const Json& h : f.array("headers")) {
      if (!h.is_string() || !safe_relative_path(h.get<std::string>())) {
        f.fail("headers", (h.is_string() ? "'" + h.get<std::string>() + "'" : std::string("an entry")) +
                              " is not a path inside the plugin's folder",
               "relative paths of letters, digits and _ . - + /, without '..'");
      }
      headers.push_back(h.get<std::string>());
    }
  }
  for (const Plugin& other : s.plugins) {
    if (other.name == p.name) {
      f.fail("name", "'" + p.name + "' is the name of another plugin already loaded (" + other.manifest + ")",
             "plugins' names must differ: the emitted folder keeps each one's headers in kernels/plugins/NAME/");
    }
  }
  const Json& ops_json = f.array("ops");
  if (ops_json.empty()) f.fail("ops", "is empty: a plugin defines one op or more");
  for (std::size_t i = 0; i < ops_json.size(); ++i) p.ops.push_back(parse_op(ops_json[i], i, p, manifest));
  f.done();

  // Clashes: with modelc's own ops, other plugins, and within this one.
  const ops::OpRegistry& registry = ops::OpRegistry::instance();
  std::set<std::pair<std::string, std::string>> mine;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const PluginOp& op = p.ops[i];
    const std::string at = "ops[" + std::to_string(i) + "] (" + op.op + ")";
    auto key = std::make_pair(op.domain, op.op);
    if (!mine.insert(key).second) throw file_error(manifest, at + ": the op " + op.qualified() + " is defined twice");
    if (auto other = s.by_op.find(key); other != s.by_op.end()) {
      throw file_error(manifest, at + ": the op " + op.qualified() + " is defined by " + other->second->plugin->where() + " already");
    }
    if (registry.knows(op.op, op.domain)) {
      throw file_error(manifest,
                       at + ": the op " + op.op + " is built into modelc" +
                           (op.domain.empty() ? " (default ONNX domain)" : " (domain '" + op.domain + "')") +
                           ": a plugin cannot replace it",
                       "give the plugin op another name or its own domain (\"domain\": \"com.example\"), or use "
                       "modelc's op (docs/operators.md)");
    }
  }

  // Headers: every op's and the extra ones, read now (the emitted folder and the reference run
  // use these bytes).
  for (const PluginOp& op : p.ops) headers.push_back(op.header);
  for (const std::string& h : headers) {
    if (p.headers.count(h)) continue;
    p.headers[h] = read_file((fs::path(dir) / h).string(), kMaxHeaderBytes, "the plugin header", manifest);
  }

  s.plugins.push_back(std::move(p));
  Plugin& loaded = s.plugins.back();
  for (PluginOp& op : loaded.ops) {
    op.plugin = &loaded;
    s.by_op[{op.domain, op.op}] = &op;
    ops::OpRegistry::instance().add(op_def(op));
  }
  s.by_manifest[canonical] = &loaded;
  return loaded;
}

void load_plugins(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) load_plugin(p);
}

std::vector<const Plugin*> loaded_plugins() {
  std::vector<const Plugin*> r;
  for (const Plugin& p : state().plugins) r.push_back(&p);
  return r;
}

void unload_plugins() {
  State& s = state();
  for (const Plugin& p : s.plugins) {
    for (const PluginOp& op : p.ops) ops::OpRegistry::instance().remove(op.op, op.domain);
  }
  s.by_op.clear();
  s.by_manifest.clear();
  s.plugins.clear();
}

const PluginOp* plugin_op(const Node& n) {
  const State& s = state();
  if (s.by_op.empty()) return nullptr;
  const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
  auto it = s.by_op.find({domain, n.op()});
  return it == s.by_op.end() ? nullptr : it->second;
}

const PluginOp& plugin_op_of(const Node& n) {
  const PluginOp* op = plugin_op(n);
  if (!op) throw n.error("internal: the op is not a loaded plugin's");
  return *op;
}

Instance instantiate(const PluginOp& op, const Node& n) {
  Instance r;
  std::string args;
  auto tensor = [&](const Value& v) {
    std::string t = "mc::plugin::Tensor<" + plugin_ctype(v.dtype());
    for (int64_t d : v.shape()) t += ", " + std::to_string(d);
    args += (args.empty() ? "" : ", ") + t + ">";
  };
  for (int i = 0; i < static_cast<int>(op.inputs.size()); ++i) tensor(n.input(i));
  for (int i = 0; i < static_cast<int>(op.outputs.size()); ++i) tensor(n.output(i));
  const NodeScope scope(op, n, true);
  for (std::size_t i = 0; i < op.template_args.size(); ++i) {
    try {
      args += ", " + int_literal(op.template_args[i].eval_int(scope, "a template argument"));
    } catch (const Error& e) {
      throw n.error(op.where() + ": template_args[" + std::to_string(i) + "]: " + e.message());
    }
  }
  r.type = op.kernel + "<" + args + ">";
  for (const AttributeRule& a : op.attributes) {
    const Attribute* v = scope.value(a);
    switch (a.type) {
      case AttributeRule::Type::int_: r.attributes.emplace_back(a.name, int_literal(v->i)); break;
      case AttributeRule::Type::float_: r.attributes.emplace_back(a.name, float_literal(v->f)); break;
      case AttributeRule::Type::string: {
        const auto at = std::find(a.values.begin(), a.values.end(), v->s) - a.values.begin();
        r.attributes.emplace_back(a.name, std::to_string(at));
        break;
      }
      case AttributeRule::Type::ints:
      case AttributeRule::Type::floats: {
        const std::size_t count = a.type == AttributeRule::Type::ints ? v->ints.size() : v->floats.size();
        for (std::size_t i = 0; i < count; ++i) {
          r.attributes.emplace_back(a.name + "[" + std::to_string(i) + "]", a.type == AttributeRule::Type::ints
                                                                              ? int_literal(v->ints[i])
                                                                              : float_literal(v->floats[i]));
        }
        if (count > 0) {
          r.declarations += "static_assert(mc::plugin::capacity<decltype(" + r.type + "::Params::" + a.name + ")>() >= " +
                            std::to_string(count) + ", \"plugin '" + op.plugin->name + "': " + op.kernel + "::Params::" +
                            a.name + " holds fewer than the " + std::to_string(count) + " values of attribute '" +
                            a.name + "'\");\n";
        }
        break;
      }
    }
  }
  if (op.workspace) {
    int64_t bytes = 0;
    try {
      bytes = op.workspace->eval_int(scope, "the workspace size");
    } catch (const Error& e) {
      throw n.error(op.where() + ": workspace: " + e.message());
    }
    constexpr int64_t kMaxWorkspace = int64_t{1} << 40;
    if (bytes < 0 || bytes > kMaxWorkspace) {
      throw n.error(op.where() + ": the workspace rule '" + op.workspace->text() + "' gives " + std::to_string(bytes) +
                    " bytes (at least 0, at most 2^40)");
    }
    r.workspace_bytes = (bytes + 15) / 16 * 16;
  }
  return r;
}

}  // namespace modelc::plugin

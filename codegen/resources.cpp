// codegen/resources.cpp — see resources.h.
#include "codegen/resources.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "codegen/emitter.h"
#include "codegen/report.h"
#include "codegen/report.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc {
namespace {

using Json = nlohmann::ordered_json;

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r\n") + 1 - a);
}

// The number just before `what` in `line` ("Used 22 registers" -> 22 for " registers"); -1 if absent.
int64_t number_before(const std::string& line, const std::string& what) {
  const std::size_t p = line.find(what);
  if (p == std::string::npos || p == 0) return -1;
  std::size_t a = p;
  while (a > 0 && std::isdigit(static_cast<unsigned char>(line[a - 1]))) --a;
  if (a == p) return -1;
  return std::stoll(line.substr(a, p - a));
}

// The number just after `what` ("used 1 barriers": after "used "); -1 if absent.
int64_t number_after(const std::string& line, const std::string& what) {
  const std::size_t p = line.find(what);
  if (p == std::string::npos) return -1;
  std::size_t a = p + what.size(), b = a;
  while (b < line.size() && std::isdigit(static_cast<unsigned char>(line[b]))) ++b;
  if (a == b) return -1;
  return std::stoll(line.substr(a, b - a));
}

std::string quoted(const std::string& line, std::size_t from) {
  const std::size_t a = line.find('\'', from);
  if (a == std::string::npos) return "";
  const std::size_t b = line.find('\'', a + 1);
  return b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

}  // namespace

// ---- ptxas -v ----------------------------------------------------------------------------------

std::vector<PtxasEntry> parse_ptxas_log(const std::string& text) {
  std::vector<PtxasEntry> out;
  std::map<std::pair<std::string, std::string>, std::size_t> index;  // (function, arch) -> out
  std::string arch, entry, properties_of;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t compiling = line.find("Compiling entry function");
    if (compiling != std::string::npos) {
      entry = quoted(line, compiling);
      const std::size_t for_at = line.find(" for ", compiling);
      arch = for_at == std::string::npos ? "" : quoted(line, for_at);
      properties_of.clear();
      if (entry.empty()) continue;
      const auto key = std::make_pair(entry, arch);
      if (!index.count(key)) {
        index[key] = out.size();
        PtxasEntry r;
        r.function = entry;
        r.arch = arch;
        out.push_back(r);
      }
      continue;
    }
    const std::size_t props = line.find("Function properties for ");
    if (props != std::string::npos) {
      properties_of = trim(line.substr(props + 24));
      continue;
    }
    if (entry.empty()) continue;
    PtxasEntry& r = out[index[std::make_pair(entry, arch)]];
    if (line.find("bytes stack frame") != std::string::npos) {
      if (properties_of != entry) continue;  // a called function's frame
      r.stack_bytes = std::max<int64_t>(0, number_before(line, " bytes stack frame"));
      r.spill_store_bytes = std::max<int64_t>(0, number_before(line, " bytes spill stores"));
      r.spill_load_bytes = std::max<int64_t>(0, number_before(line, " bytes spill loads"));
      continue;
    }
    if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      r.registers = static_cast<int>(number_before(line, " registers"));
      r.barriers = static_cast<int>(std::max<int64_t>(0, number_after(line, "used ")));
      r.shared_bytes = std::max<int64_t>(0, number_before(line, " bytes smem"));
      r.constant_bytes = std::max<int64_t>(0, number_before(line, " bytes cmem[0]"));
    }
  }
  return out;
}

// ---- PTX ---------------------------------------------------------------------------------------

std::vector<PtxEntry> parse_ptx(const std::string& text) {
  struct Function {
    std::string name;
    bool entry = false;
    std::string body;
  };
  std::string arch;
  const std::size_t target = text.find(".target ");
  if (target != std::string::npos) {
    std::size_t a = target + 8, b = a;
    while (b < text.size() && (std::isalnum(static_cast<unsigned char>(text[b])) || text[b] == '_')) ++b;
    arch = text.substr(a, b - a);
  }
  auto skip_space = [&](std::size_t i) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    return i;
  };
  auto skip_parens = [&](std::size_t i) {  // i at '(' -> after its ')'
    int depth = 0;
    for (; i < text.size(); ++i) {
      if (text[i] == '(') ++depth;
      if (text[i] == ')' && --depth == 0) return i + 1;
    }
    return i;
  };
  std::vector<Function> functions;
  std::size_t p = 0;
  for (;;) {
    const std::size_t e = text.find(".entry ", p), f = text.find(".func ", p);
    if (e == std::string::npos && f == std::string::npos) break;
    const bool entry = e < f;
    std::size_t i = skip_space(entry ? e + 7 : f + 6);
    if (!entry && i < text.size() && text[i] == '(') i = skip_space(skip_parens(i));  // return values
    std::size_t n = i;
    while (n < text.size() && text[n] != '(' && text[n] != ';' && !std::isspace(static_cast<unsigned char>(text[n]))) ++n;
    Function fn;
    fn.name = text.substr(i, n - i);
    fn.entry = entry;
    n = skip_space(n);
    if (n < text.size() && text[n] == '(') n = skip_parens(n);
    const std::size_t open = text.find_first_of("{;", n);
    if (open == std::string::npos) break;
    if (text[open] == ';') {  // a declaration
      p = open + 1;
      continue;
    }
    int depth = 0;
    std::size_t end = open;
    for (; end < text.size(); ++end) {
      if (text[end] == '{') ++depth;
      if (text[end] == '}' && --depth == 0) break;
    }
    fn.body = text.substr(open, end - open);
    functions.push_back(fn);
    p = end;  // the next function starts after this body
  }
  // MMAs: in the body, or in a called function (to a fixed point).
  std::vector<bool> mma(functions.size()), s8(functions.size());
  // An MMA: mma.sync.aligned.m16n8k* (or the 8-bit m8n8k16 that sm_75 runs) that is not WMMA's
  // wmma.mma.sync, with ldmatrix beside it; `eight_bit`: one with 8-bit operands (.s8 / .u8 A, .s8 B).
  auto issues_mma = [](const std::string& body, bool eight_bit) {
    bool found = false;
    for (const char* shape : {"mma.sync.aligned.m16n8k", "mma.sync.aligned.m8n8k16"}) {
      for (std::size_t at = body.find(shape); at != std::string::npos && !found; at = body.find(shape, at + 1)) {
        if (at != 0 && body[at - 1] == '.') continue;
        const std::string line = body.substr(at, body.find(';', at) - at);
        found = !eight_bit || line.find(".s8.s8.s32") != std::string::npos || line.find(".u8.s8.s32") != std::string::npos;
      }
    }
    return found && body.find("ldmatrix.sync.aligned") != std::string::npos;
  };
  for (std::size_t k = 0; k < functions.size(); ++k) {
    mma[k] = issues_mma(functions[k].body, false);
    s8[k] = issues_mma(functions[k].body, true);
  }
  for (std::vector<bool>* v : {&mma, &s8}) {
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t k = 0; k < functions.size(); ++k) {
        if ((*v)[k]) continue;
        for (std::size_t c = 0; c < functions.size(); ++c) {
          if (c == k || functions[c].entry || !(*v)[c] || functions[c].name.empty()) continue;
          const std::string& body = functions[k].body;
          const std::size_t at = body.find(functions[c].name);
          if (at != std::string::npos && body.rfind("call", at) != std::string::npos) {
            (*v)[k] = true;
            changed = true;
            break;
          }
        }
      }
    }
  }
  std::vector<PtxEntry> out;
  for (std::size_t k = 0; k < functions.size(); ++k) {
    if (functions[k].entry) out.push_back({functions[k].name, arch, mma[k], s8[k]});
  }
  return out;
}

// ---- into the report ---------------------------------------------------------------------------

namespace {

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

Json numbers(const PtxasEntry& r) {
  Json a = Json::object();
  a["registers"] = r.registers;
  a["shared_bytes"] = r.shared_bytes;
  a["stack_bytes"] = r.stack_bytes;
  a["spill_store_bytes"] = r.spill_store_bytes;
  a["spill_load_bytes"] = r.spill_load_bytes;
  return a;
}

std::string cell(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return r;
}

}  // namespace

namespace {

// The report's kernel arrays: "kernels", and with batch profiles each profile's (its kernels named
// "b8/k12" in messages and report.md).
template <class J>  // Json or const Json
std::vector<std::pair<std::string, J*>> kernel_lists(J& report) {
  std::vector<std::pair<std::string, J*>> r;
  if (report.contains("kernels") && report["kernels"].is_array()) r.emplace_back("", &report["kernels"]);
  if (report.contains("profiles") && report["profiles"].is_array()) {
    for (J& p : report["profiles"]) {
      if (!p.is_object() || !p.contains("kernels") || !p["kernels"].is_array()) continue;
      const std::string batch = p.contains("batch") && p["batch"].is_number_integer()
                                    ? std::to_string(p["batch"].template get<int64_t>())
                                    : std::string("?");
      r.emplace_back("b" + batch + "/", &p["kernels"]);
    }
  }
  return r;
}

}  // namespace

ResourcesOutcome merge_resources(Json& report, const std::vector<PtxasEntry>& compiled, const std::vector<PtxEntry>& ptx,
                                 bool check) {
  ResourcesOutcome o;
  std::set<std::string> arch_set, ptx_arch_set, functions;
  for (const PtxasEntry& r : compiled) {
    arch_set.insert(r.arch);
    functions.insert(r.function);
  }
  for (const PtxEntry& p : ptx) {
    ptx_arch_set.insert(p.arch);
    functions.insert(p.function);
  }
  o.archs.assign(arch_set.begin(), arch_set.end());
  o.ptx_archs.assign(ptx_arch_set.begin(), ptx_arch_set.end());

  std::set<std::string> launched;
  for (const auto& [prefix, kernels] : kernel_lists(report)) {
    for (Json& k : *kernels) {
      const std::string id = prefix + k.value("id", "");
      const bool tensor_core = on_tensor_cores(k.value("engine", ""));
      // The INT8 kernels (templates/tensor_core_int8.cuh) must multiply 8-bit operands.
      const std::string family = k.value("family", "");
      const bool int8 = family == "conv_int8" || family == "gemm_int8";
      if (tensor_core) ++o.tensor_core_kernels;
      k.erase("resources");
      std::vector<std::string> launches;
      if (k.contains("launches")) launches = k["launches"].get<std::vector<std::string>>();
      if (launches.empty()) {
        if (tensor_core && check) o.failures.push_back(id + ": marked tensor_core but launches no kernel");
        continue;
      }
      ++o.kernels;
      bool complete = true;
      for (const std::string& f : launches) {
        launched.insert(f);
        if (!functions.count(f)) {
          o.missing.push_back(id + ": no compiled entry point " + f);
          complete = false;
        }
      }
      Json res = Json::object();
      // A tensor-core kernel's variant for an arch without tensor cores for its operands (BF16
      // below sm_80: report.json's arch_engine) is a SIMT tile there: no MMA to look for.
      const Json arch_engine = k.contains("arch_engine") ? k["arch_engine"] : Json::object();
      for (const std::string& arch : o.archs) {
        const bool tc_here = tensor_core && arch_engine.value(arch, std::string()) != "simt";
        std::vector<const PtxasEntry*> mine;
        for (const PtxasEntry& r : compiled) {
          if (r.arch == arch && has(launches, r.function)) mine.push_back(&r);
        }
        PtxasEntry sum;  // the largest registers, shared memory, stack; the spills summed
        for (const PtxasEntry* r : mine) {
          sum.registers = std::max(sum.registers, r->registers);
          sum.barriers = std::max(sum.barriers, r->barriers);
          sum.shared_bytes = std::max(sum.shared_bytes, r->shared_bytes);
          sum.stack_bytes = std::max(sum.stack_bytes, r->stack_bytes);
          sum.constant_bytes = std::max(sum.constant_bytes, r->constant_bytes);
          sum.spill_store_bytes += r->spill_store_bytes;
          sum.spill_load_bytes += r->spill_load_bytes;
        }
        if (sum.registers < 0) {
          if (complete) {
            o.missing.push_back(id + " " + arch + (mine.empty() ? ": not compiled for this arch" : ": ptxas reported no registers"));
          }
          complete = false;
          continue;
        }
        Json a = numbers(sum);
        a["barriers"] = sum.barriers;
        a["constant_bytes"] = sum.constant_bytes;
        a["functions"] = mine.size();
        if (mine.size() > 1) {  // arch variants or several launches: each one's numbers
          Json each = Json::array();
          for (const PtxasEntry* r : mine) {
            Json f = Json::object();
            f["function"] = r->function;
            f.update(numbers(*r));
            each.push_back(std::move(f));
          }
          a["per_function"] = std::move(each);
        }
        if (ptx_arch_set.count(arch)) {
          // Any of its entry points: a split-K kernel's second launch (the reduction) has no MMA.
          bool any = false, some_mma = false, some_s8 = false;
          for (const PtxEntry& p : ptx) {
            if (p.arch != arch || !has(launches, p.function)) continue;
            any = true;
            some_mma = some_mma || p.mma;
            some_s8 = some_s8 || p.mma_s8;
          }
          if (any) a["mma"] = some_mma;
          if (any && int8) a["mma_s8"] = some_s8;
          if (check && tc_here && (!any || !some_mma)) {
            o.failures.push_back(id + " " + arch + ": " +
                                 (any ? "no ldmatrix + mma.sync.aligned.m16n8k* in the PTX" : "no PTX of its kernel"));
          } else if (check && int8 && !some_s8) {
            o.failures.push_back(id + " " + arch + ": an INT8 kernel without ldmatrix + mma.sync on .s8 operands in the PTX");
          }
        }
        if (check && tc_here && (sum.spill_store_bytes > 0 || sum.spill_load_bytes > 0)) {
          o.failures.push_back(id + " " + arch + ": ptxas spills " + std::to_string(sum.spill_store_bytes) +
                               " bytes stored, " + std::to_string(sum.spill_load_bytes) + " bytes loaded");
        }
        if (check && tc_here && sum.stack_bytes > 0) {
          o.failures.push_back(id + " " + arch + ": a " + std::to_string(sum.stack_bytes) +
                               "-byte stack frame (local memory in the main loop)");
        }
        res[arch] = std::move(a);
      }
      if (complete && !o.archs.empty()) ++o.kernels_with_resources;
      k["resources"] = std::move(res);
      if (check && tensor_core) {
        for (const std::string& arch : o.archs) {
          if (!ptx_arch_set.count(arch)) {
            o.failures.push_back(id + " " + arch + ": no PTX for " + arch +
                                 " (build with KEEP_PTX=1 from a clean folder: make clean; make KEEP_PTX=1)");
          }
        }
      }
    }
  }
  for (const std::string& f : functions) {
    if (!launched.count(f)) o.unmatched.push_back(f);
  }
  if (check) {
    for (const std::string& m : o.missing) o.failures.push_back(m);
    for (const std::string& u : o.unmatched) o.failures.push_back(u + ": compiled, but no kernel of the report launches it");
    if (o.archs.empty()) o.failures.push_back("no ptxas -v output (the objects were built without it: make clean; make)");
  }

  std::string archs;
  for (const std::string& a : o.archs) archs += (archs.empty() ? "" : ", ") + a;
  o.summary = std::to_string(o.kernels_with_resources) + " of " + std::to_string(o.kernels) +
              " kernels with registers and shared memory for " + (archs.empty() ? "no arch" : archs) + " (ptxas -v)";
  if (!o.unmatched.empty()) o.summary += "; compiled entry points no kernel launches: " + std::to_string(o.unmatched.size());
  Json top = Json::object();
  top["source"] = "ptxas -v";
  top["archs"] = o.archs;
  top["ptx_archs"] = o.ptx_archs;
  top["kernels"] = o.kernels;
  top["kernels_with_resources"] = o.kernels_with_resources;
  top["compiled_functions"] = functions.size();
  top["unmatched_functions"] = o.unmatched;
  top["missing"] = o.missing;
  top["summary"] = o.summary;
  report.erase("resources");
  report["resources"] = std::move(top);
  return o;
}

std::string resources_markdown(const Json& report, const ResourcesOutcome& o) {
  std::string m = std::string(kResourcesHeading) + "\n\n";
  m += "From ptxas -v during the nvcc build (`modelc resources DIR`, or `make resources`; `modelc MODEL --build` "
       "runs it): " +
       o.summary + ". Per arch: registers / static shared memory bytes / stack bytes / spilled bytes (stores + loads)";
  m += o.ptx_archs.empty() ? ".\n\n" : "; \"mma\" when the kernel's PTX issues ldmatrix and mma.sync m16n8k*.\n\n";
  m += "| id | family | engine |";
  std::string rule = "|---|---|---|";
  for (const std::string& a : o.archs) {
    m += " " + a + " |";
    rule += "---|";
  }
  m += "\n" + rule + "\n";
  for (const auto& [prefix, kernels] : kernel_lists(report)) {
    for (const Json& k : *kernels) {
      if (!k.contains("resources")) continue;
      const Json& res = k["resources"];
      m += "| " + prefix + k.value("id", "") + " | " + cell(k.value("family", "")) + " | " + k.value("engine", "") + " |";
      for (const std::string& a : o.archs) {
        if (!res.contains(a)) {
          m += " - |";
          continue;
        }
        const Json& r = res[a];
        auto get = [&](const char* key) { return r.value(key, int64_t{0}); };
        m += " " + std::to_string(get("registers")) + " / " + grouped(get("shared_bytes")) + " / " +
             grouped(get("stack_bytes")) + " / " + grouped(get("spill_store_bytes") + get("spill_load_bytes"));
        if (r.value("mma", false)) m += " mma";
        m += " |";
      }
      m += "\n";
    }
  }
  if (!o.unmatched.empty()) {
    m += "\nCompiled entry points no kernel of the report launches:\n\n";
    for (const std::string& u : o.unmatched) m += "- `" + u + "`\n";
  }
  return m;
}

std::string with_resources_section(const std::string& md, const std::string& section) {
  std::string base = md;
  const std::size_t at = base.find(std::string("\n") + kResourcesHeading);
  if (at != std::string::npos) base.resize(at);
  while (!base.empty() && base.back() == '\n') base.pop_back();
  return base + "\n\n" + section;
}

// ---- the command -------------------------------------------------------------------------------

namespace {

// Writes through a temporary sibling: an interrupted write leaves the previous file.

// Files under `dir` (recursively) whose names end with `suffix`, sorted.
std::vector<fs::path> files_with(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> r;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return r;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (e.is_regular_file() && n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) {
      r.push_back(e.path());
    }
  }
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace

ResourcesOutcome report_resources(const std::string& dir, const std::string& objects, bool check) {
  const fs::path folder(dir);
  const fs::path report_path = folder / "report.json";
  if (!fs::is_regular_file(report_path)) {
    throw Error(dir + " has no report.json", "give the folder modelc wrote (modelc MODEL.onnx -o DIR)");
  }
  Json report;
  try {
    report = Json::parse(read_text_file(report_path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(report_path.string() + " is not JSON: " + e.what());
  }
  fs::path objdir = objects;
  if (objects.empty()) {  // the Makefile's folder for the report's archs: build/sm_75_90
    std::string archs;
    for (const Json& a : report.value("archs", Json::array())) {
      const std::string arch = a.get<std::string>();
      archs += (archs.empty() ? "" : "_") + (arch.compare(0, 3, "sm_") == 0 ? arch.substr(3) : arch);
    }
    objdir = fs::path("build") / ("sm_" + archs);
  }
  if (objdir.is_relative()) objdir = folder / objdir;
  // The logs and kept PTX of the folder's sources (NAME.cu and its parts), beside their objects.
  const std::string name = report.value("model", "");
  std::vector<std::string> sources{name};
  if (report.contains("sources") && report["sources"].is_array()) {  // batch profiles: every source by name
    sources.clear();
    for (const Json& f : report["sources"]) {
      if (f.is_string()) sources.push_back(f.get<std::string>());
    }
  } else {
    for (int p = 0; p < report.value("parts", 0); ++p) sources.push_back(name + "_part" + std::to_string(p));
  }
  std::vector<PtxasEntry> compiled;
  std::vector<PtxEntry> ptx;
  for (const std::string& source : sources) {
    const fs::path log = objdir / (source + ".ptxas");
    if (!fs::is_regular_file(log)) {
      throw Error("no ptxas -v log " + log.string(),
                  "build the objects first: make -C " + dir + " objs (or give the folder of other ARCHS with --objects)");
    }
    for (PtxasEntry& r : parse_ptxas_log(read_text_file(log))) compiled.push_back(std::move(r));
    for (const fs::path& f : files_with(objdir / "keep" / source, ".ptx")) {
      for (PtxEntry& e : parse_ptx(read_text_file(f))) ptx.push_back(std::move(e));
    }
  }
  const ResourcesOutcome o = merge_resources(report, compiled, ptx, check);
  write_text_file(report_path, report.dump(2) + "\n");
  const fs::path md_path = folder / "report.md";
  const std::string md = fs::is_regular_file(md_path) ? read_text_file(md_path) : std::string();
  write_text_file(md_path, with_resources_section(md, resources_markdown(report, o)));
  return o;
}

}  // namespace modelc

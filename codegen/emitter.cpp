// codegen/emitter.cpp — the kernels' code: the weights' names and the views' pointers, and per
// file of kernels their entry points and the statements that launch them in order (kernel_code.h).
// The folder around them (NAME.h, NAME.cu's tables and API, NAME_main.cu, the weights, the
// Makefile, the embedding files, the reports) is codegen/package.cpp's.
#include "codegen/emitter.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>

#include "codegen/kernel_code.h"
#include "codegen/literals.h"
#include "codegen/report.h"
#include "support/error.h"

namespace modelc {

// ---- the weights' names ----------------------------------------------------------------------

WeightNames::WeightNames(const std::vector<WeightEntry>& weights) : weights_(&weights) {
  std::set<std::string> taken;
  for (const WeightEntry& w : weights) {
    std::string id;
    for (unsigned char c : w.value) {
      const bool word = std::isalnum(c) != 0;
      if (word) {
        id += static_cast<char>(c);
      } else if (!id.empty() && id.back() != '_') {
        id += '_';
      }
    }
    while (!id.empty() && id.back() == '_') id.pop_back();
    const std::string base = "kW_" + (id.empty() ? std::string("weight") : id);
    std::string name = base;
    for (int k = 2; !taken.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    names_.push_back(name);
  }
}

std::string WeightNames::offset(const TensorView& v) const {
  // The entry the view lies in: its own value's when several share the bytes.
  const std::vector<WeightEntry>& ws = *weights_;
  std::size_t best = ws.size();
  for (std::size_t i = 0; i < ws.size(); ++i) {
    const int64_t end = ws[i].offset + std::max<int64_t>(1, static_cast<int64_t>(ws[i].data.nbytes()));
    if (v.offset < ws[i].offset || v.offset >= end) continue;
    if (ws[i].value == v.value) {
      best = i;
      break;
    }
    if (best == ws.size()) best = i;
  }
  if (best == ws.size()) {
    throw Error("internal: view '" + v.value + "' at weights offset " + std::to_string(v.offset) + " lies in no weight");
  }
  const int64_t inside = v.offset - ws[best].offset;
  return names_[best] + (inside == 0 ? "" : " + " + std::to_string(inside));
}

// ---- pointers and types in the emitted code -----------------------------------------------------

std::string ViewPointers::ctype(DType t) const {
  switch (t) {
    case DType::float32: return "float";
    case DType::float16: return "__half";
    case DType::bfloat16: return "mc::bf16";  // runtime_stub/device.h: conversions from and to float
    case DType::float64: return "double";
    case DType::int64: return "int64_t";
    case DType::uint64: return "uint64_t";
    case DType::int32: return "int32_t";
    case DType::uint32: return "uint32_t";
    case DType::int16: return "int16_t";
    case DType::uint16: return "uint16_t";
    case DType::int8: return "int8_t";
    case DType::uint8: return "uint8_t";
    case DType::boolean: return "bool";
    case DType::undefined: break;
  }
  throw Error("internal: no C++ type for an undefined dtype");
}

std::string ViewPointers::ptr(const TensorView& v, bool is_const) const {
  if (v.dtype == DType::undefined) return "nullptr";
  const std::string t = (is_const ? "const " : "") + ctype(v.dtype) + "*";
  const std::string off = std::to_string(v.offset);
  switch (v.space) {
    case Space::input: {
      const std::string p = "inputs[" + std::to_string(v.index) + "]";
      if (!is_const) throw Error("internal: a kernel writes model input " + std::to_string(v.index) + " ('" + v.value + "')");
      if (v.offset == 0) return "static_cast<" + t + ">(" + p + ")";
      return "reinterpret_cast<" + t + ">(static_cast<const unsigned char*>(" + p + ") + " + off + ")";
    }
    case Space::output: {
      const std::string p = "outputs[" + std::to_string(v.index) + "]";
      if (v.offset == 0) return "static_cast<" + t + ">(" + p + ")";
      return "reinterpret_cast<" + t + ">(static_cast<unsigned char*>(" + p + ") + " + off + ")";
    }
    case Space::arena: return "reinterpret_cast<" + t + ">(arena + " + off + ")";
    case Space::weights:
      if (!is_const) throw Error("internal: a kernel writes weight '" + v.value + "'");
      return "reinterpret_cast<" + t + ">(weights + " + weights_.offset(v) + ")";
  }
  return "nullptr";
}

std::string c_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7f && c != '?') {  // '?': no trigraph-like sequences
      r += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      r += buf;
    }
  }
  return r + "\"";
}


// Text for a // comment: one line, no backslash that could continue it, valid UTF-8.
std::string comment(const std::string& s) {
  std::string r;
  for (unsigned char c : s) {
    if (c == '\\') {
      r += "\\x5c";
    } else if (c < 0x20 || c == 0x7f) {
      r += ' ';
    } else {
      r += static_cast<char>(c);
    }
  }
  return valid_utf8(r);
}

std::string type_text(DType t, const Shape& s) {
  return std::string(dtype_name(t)) + "[" + (s.empty() ? "" : shape_str(s)) + "]";
}

namespace {

// A template header name as a family lists it ("gemm.cuh" or "templates/gemm.cuh") -> "gemm.cuh".
std::string header_name(const std::string& h) {
  return h.compare(0, 10, "templates/") == 0 ? h.substr(10) : h;
}

// ---- kernels: code for one file (NAME.cu, or a part) ---------------------------------------------

std::string kernel_comment(const Kernel& k) {
  // "k3 (gemm): MatMul 'mm': float32[1x64], float32[64x10] -> float32[1x10]", then where the
  // buffers are, then the tactic and note.
  std::string types, where;
  auto add = [&](const std::vector<TensorView>& views) {
    std::string t, w;
    for (const TensorView& v : views) {
      t += (t.empty() ? "" : ", ") + (v.dtype == DType::undefined ? std::string("-") : type_text(v.dtype, v.shape));
      const std::string vt = view_text(v);
      w += (w.empty() ? "" : ", ") + (vt.find('@') == std::string::npos ? vt : vt.substr(vt.find('@')));
    }
    types += t;
    where += w;
  };
  add(k.inputs);
  types += " -> ";
  where += " -> ";
  add(k.outputs);
  std::string nodes;
  for (const std::string& n : k.nodes) nodes += (nodes.empty() ? "'" : ", '") + n + "'";
  std::string c = "// " + comment(k.id + " (" + k.family_name() + "): " + (k.op.empty() ? "" : k.op.type + " ") + nodes + ": " +
                                  types) + "\n";
  c += "//   " + comment(where) + "\n";
  std::string tactic;
  for (const auto& [key, value] : tactic_fields(k.tactic)) tactic += (tactic.empty() ? "" : " ") + key + "=" + std::to_string(value);
  if (!tactic.empty() || !k.note.empty()) {
    c += "//   " + comment((tactic.empty() ? "" : "tactic " + tactic + (k.note.empty() ? "" : "; ")) + k.note) + "\n";
  }
  return c;
}

// `using SYMBOL_t = TYPE;` and the entry point SYMBOL: C linkage, so ptxas and the report name
// the kernel by this symbol, unmangled.
std::string entry_point(const std::string& symbol, const Launch& l) {
  const std::string t = symbol + "_t";
  const std::string bounds = t + "::kThreads" + (l.min_blocks > 0 ? ", " + std::to_string(l.min_blocks) : "");
  const std::string constant = l.tensor_maps.empty() ? "" : "__grid_constant__ ";  // TMA reads the maps from p
  return "// " + comment(l.comment) + "\nusing " + t + " = " + l.type + ";\nextern \"C\" __global__ void __launch_bounds__(" +
         bounds + ") " + symbol + "(const " + constant + t + "::Params p) {\n  " + t + "::run(p);\n}\n\n";
}

// The stream a kernel of stream `s` runs on in the enqueue function: `stream` (the caller's) for
// stream 0, else the context's own (runtime.h, Bindings::streams).
std::string stream_of(int s) { return s == 0 ? "stream" : "mc_bindings.streams[" + std::to_string(s) + "]"; }
std::string event_of(int e) { return "mc_bindings.events[" + std::to_string(e) + "]"; }

// The statements that launch entry point `symbol` with the launch's params on stream `s`.
std::string launch_statements(const std::string& symbol, const Launch& l, int s) {
  const std::string t = symbol + "_t";
  std::string r = t + "::Params p{};\n";
  for (const LaunchParam& p : l.params) r += "p." + p.field + " = " + p.value + ";\n";
  std::string grid = t + "::grid()";
  if (!l.tensor_maps.empty()) {  // the Hopper engine: its tensor maps, a persistent grid
    r += "MC_CHECK(" + t + "::make_maps(p, " + l.tensor_maps + "));\n";
    r += "int ctas = 0;\nMC_CHECK(mc::hopper::persistent_ctas(" + t + "::kTiles, &ctas));\n";
    grid = t + "::grid(ctas)";
  }
  const std::string smem = l.dynamic_smem > 0 ? t + "::kSmemBytes" : "0";
  const std::string args = symbol + ", " + grid + ", " + t + "::block(), " + smem + ", p);\n";
  return r + (s == 0 ? "MC_LAUNCH(" + args : "MC_LAUNCH_ON(" + stream_of(s) + ", " + args);
}

// The launches are either all arch variants (min_sm > 0, non-decreasing: a variant may be several
// launches) or none is.
bool arch_variants(const Kernel& k, const KernelLaunches& kl) {
  int previous = 0;
  bool variants = false;
  for (std::size_t i = 0; i < kl.launches.size(); ++i) {
    const int sm = kl.launches[i].min_sm;
    if (i > 0 && (sm > 0) != variants) throw Error("internal: kernel " + k.id + " mixes arch variants with other launches");
    if (sm > 0 && sm < previous) throw Error("internal: kernel " + k.id + ": arch variants not in ascending order");
    variants = sm > 0;
    previous = sm;
  }
  return variants;
}

// The kernel's limit on dynamic shared memory raised to what entry point `symbol` launches with,
// where that may exceed the default 48 KiB.
std::string raise_smem_limit(const std::string& symbol, const Launch& l) {
  if (l.dynamic_smem <= 48 * 1024) return "";
  return "MC_CHECK(cudaFuncSetAttribute(" + symbol + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " + symbol +
         "_t::kSmemBytes));\n";
}

// The statements that run one kernel's launches (the arch variants: the newest not above the
// device's SM), on its stream; records each distinct entry point in code.entries / code.launches.
std::string kernel_launches(const std::string& name, const Kernel& k, const KernelLaunches& kl,
                            std::map<std::string, std::string>& symbol_of, KernelCode& code) {
  if (kl.launches.empty()) return "// " + comment(kl.nothing_to_run.empty() ? "nothing to run" : kl.nothing_to_run) + "\n";
  std::string r;
  const bool variants = arch_variants(k, kl);
  const std::size_t n = kl.launches.size();
  std::vector<std::string> symbols;
  for (std::size_t i = 0; i < n; ++i) {
    const Launch& l = kl.launches[i];
    // A variant of several launches numbers them after its arch.
    const bool shared_sm = variants && ((i > 0 && kl.launches[i - 1].min_sm == l.min_sm) ||
                                        (i + 1 < n && kl.launches[i + 1].min_sm == l.min_sm));
    int nth = 0;
    for (std::size_t j = 0; j < i; ++j) nth += kl.launches[j].min_sm == l.min_sm ? 1 : 0;
    const std::string own =
        name + "_" + k.id +
        (variants ? "_sm" + std::to_string(l.min_sm) + (shared_sm ? "_" + std::to_string(nth) : "")
                  : n > 1 ? "_" + std::to_string(i) : "");
    const auto [it, added] = symbol_of.emplace(l.type, own);
    if (added) {
      code.entries += entry_point(own, l);
      code.prepare += raise_smem_limit(own, l);
    }
    symbols.push_back(it->second);
    std::vector<std::string>& launched = code.launches[k.id];
    if (std::find(launched.begin(), launched.end(), it->second) == launched.end()) launched.push_back(it->second);
  }
  if (variants) {
    // The newest variant not above the device's SM; the oldest below all of them. Variant v is the
    // launches [first[v], first[v + 1]).
    std::vector<std::size_t> first;
    for (std::size_t i = 0; i < n; ++i) {
      if (i == 0 || kl.launches[i].min_sm != kl.launches[i - 1].min_sm) first.push_back(i);
    }
    const std::size_t nv = first.size();
    first.push_back(n);
    for (std::size_t v = nv; v-- > 0;) {
      if (nv == 1) {
        r += "{\n";
      } else if (v > 0) {
        r += (v + 1 == nv ? "if" : "} else if") + std::string(" (mc_bindings.sm >= ") +
             std::to_string(kl.launches[first[v]].min_sm) + ") {\n";
      } else {
        r += "} else {\n";
      }
      for (std::size_t i = first[v]; i < first[v + 1]; ++i) {
        if (first[v + 1] - first[v] > 1) r += "{\n";
        r += launch_statements(symbols[i], kl.launches[i], k.stream);
        if (first[v + 1] - first[v] > 1) r += "}\n";
      }
    }
    r += "}\n";
    return r;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (n > 1) r += "// " + comment(kl.launches[i].comment) + "\n";
    r += "{\n" + launch_statements(symbols[i], kl.launches[i], k.stream) + "}\n";
  }
  return r;
}

const char* kBindings =
    "  [[maybe_unused]] unsigned char* const arena = mc_bindings.arena;\n"
    "  [[maybe_unused]] const unsigned char* const weights = mc_bindings.weights;\n"
    "  [[maybe_unused]] const void* const* const inputs = mc_bindings.inputs;\n"
    "  [[maybe_unused]] void* const* const outputs = mc_bindings.outputs;\n"
    "  static_cast<void>(mc_status);\n"
    "  static_cast<void>(stream);\n";

}  // namespace

KernelCode kernel_code(const std::string& name, const std::vector<const Kernel*>& kernels, const ViewPointers& pointers,
                       int first) {
  KernelCode code;
  std::set<std::string> seen;                   // declarations written
  std::map<std::string, std::string> symbol_of;  // instantiation -> its entry point (this file)
  int index = first;                             // the kernel's index in its profile (mc::Probe)
  for (const Kernel* k : kernels) {
    const KernelFamily* f = FamilyRegistry::instance().find(k->family_name());
    if (!f || !f->emit) {
      const std::string what = "no code generator for template family '" + k->family_name() + "'";
      throw k->op.empty() ? Error(what) : k->error(what);
    }
    KernelLaunches kl;
    try {
      kl = f->emit(*k, pointers);
    } catch (const Error& err) {
      if (k->op.empty() || err.names_node()) throw;
      throw err.with_node(k->op.name, k->op.type, k->op.opset);
    }
    for (const std::string& h : f->headers) code.headers.insert(header_name(h));
    code.headers.insert(kl.includes.begin(), kl.includes.end());
    code.own_headers.insert(kl.own_headers.begin(), kl.own_headers.end());
    if (!kl.declarations.empty() && seen.insert(kl.declarations).second) code.declarations.push_back(kl.declarations);
    code.body += "\n" + kernel_comment(*k);
    const std::string stream = stream_of(k->stream);
    for (int e : k->waits) code.body += "MC_CHECK(cudaStreamWaitEvent(" + stream + ", " + event_of(e) + ", 0));\n";
    const std::string probe = "(" + std::to_string(index++) + ", " + stream + ");\n";
    code.body += "MC_KERNEL_BEGIN" + probe + kernel_launches(name, *k, kl, symbol_of, code) + "MC_KERNEL_END" + probe;
    if (k->event >= 0) code.body += "MC_CHECK(cudaEventRecord(" + event_of(k->event) + ", " + stream + "));\n";
  }
  return code;
}

std::string includes_of(const std::set<std::string>& headers) {
  std::string s;
  for (const std::string& h : headers) s += "#include \"kernels/" + h + "\"\n";
  return s;
}

// The families' declarations in an unnamed namespace (what one file declares stays its own, so the
// parts, and several models linked into one program, never clash), then the entry points (their
// symbols start with the model's name and hold kernel ids: unique in a program).
std::string declarations_of(const KernelCode& code) {
  std::string s;
  if (!code.declarations.empty()) {
    s += "namespace {\n\n";
    for (const std::string& d : code.declarations) s += d + (d.back() == '\n' ? "" : "\n") + "\n";
    s += "}  // namespace\n\n";
  }
  return s + code.entries;
}

// With several streams (schedule/streams.h), the statements before the first kernel (the other
// streams wait for the caller's: the fork) and after the last (the caller's waits for each of them:
// the join, so a run's outputs are ready on the caller's stream, and a capture may end); the
// schedule's last events are these.
ForkJoin fork_join(const Schedule& s) {
  ForkJoin r;
  if (s.streams <= 1) return r;
  const int fork = s.events - s.streams;
  r.fork = "  // the other streams start after the caller's work so far\n";
  r.fork += "  MC_CHECK(cudaEventRecord(" + event_of(fork) + ", stream));\n";
  r.join = "  // the caller's stream continues after every stream's last kernel\n";
  for (int t = 1; t < s.streams; ++t) {
    r.fork += "  MC_CHECK(cudaStreamWaitEvent(" + stream_of(t) + ", " + event_of(fork) + ", 0));\n";
    r.join += "  MC_CHECK(cudaEventRecord(" + event_of(fork + t) + ", " + stream_of(t) + "));\n";
    r.join += "  MC_CHECK(cudaStreamWaitEvent(stream, " + event_of(fork + t) + ", 0));\n";
  }
  return r;
}

std::string enqueue_function(const std::string& fn, const KernelCode& code, bool is_static, const ForkJoin& fj) {
  std::string s = std::string(is_static ? "static " : "") + "int " + fn +
                  "(mc::Status& mc_status, const mc::Bindings& mc_bindings, cudaStream_t stream) {\n";
  s += kBindings;
  s += fj.fork;
  s += code.body;
  s += fj.join;
  s += "  return 0;\n}\n";
  return s;
}

std::string prepare_function(const std::string& fn, const std::string& body, bool is_static) {
  return std::string(is_static ? "static " : "") + "int " + fn + "(mc::Status& mc_status) {\n" + body + "  return 0;\n}\n";
}

}  // namespace modelc

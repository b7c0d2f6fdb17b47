#include "codegen/emitter.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "codegen/embed.h"
#include "codegen/format.h"
#include "codegen/literals.h"
#include "codegen/report.h"
#include "codegen/report_graph.h"
#include "schedule/profiles.h"
#include "support/data_dir.h"
#include "support/error.h"

namespace fs = std::filesystem;

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

namespace {

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

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

/// The weights checksum of runtime.h (mc::checksum64: FNV-1a 64 over little-endian 64-bit
/// words, then the bytes of a last partial word), over bytes that come in pieces.
class Checksum {
 public:
  void add(const uint8_t* p, std::size_t n) {
    while (n > 0 && fill_ > 0) {  // complete a partial word
      word_[fill_++] = *p++;
      --n;
      if (fill_ == 8) {
        mix(word_);
        fill_ = 0;
      }
    }
    for (; n >= 8; n -= 8, p += 8) mix(p);
    while (n > 0) {
      word_[fill_++] = *p++;
      --n;
    }
  }
  uint64_t value() const {
    uint64_t h = h_;
    for (int i = 0; i < fill_; ++i) h = (h ^ word_[i]) * 1099511628211ull;
    return h;
  }

 private:
  void mix(const uint8_t* p) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | p[b];
    h_ = (h_ ^ w) * 1099511628211ull;
  }
  uint64_t h_ = 1469598103934665603ull;
  uint8_t word_[8] = {};
  int fill_ = 0;
};

/// Calls out(bytes, n) over the weights blob in order: the entries at their offsets, zeros between.
template <class F>
void for_each_blob_piece(const Schedule& s, F&& out) {
  std::vector<const WeightEntry*> order;
  for (const WeightEntry& w : s.weights) order.push_back(&w);
  std::stable_sort(order.begin(), order.end(), [](const WeightEntry* a, const WeightEntry* b) {
    return a->offset < b->offset;
  });
  static const uint8_t zero[4096] = {};
  int64_t at = 0;
  auto pad = [&](int64_t to) {
    while (at < to) {
      const int64_t n = std::min<int64_t>(to - at, static_cast<int64_t>(sizeof zero));
      out(zero, static_cast<std::size_t>(n));
      at += n;
    }
  };
  for (const WeightEntry* w : order) {
    if (w->offset < at) continue;  // shares the bytes of an entry written already
    if (w->offset + static_cast<int64_t>(w->data.nbytes()) > s.weights_bytes) {
      throw Error("internal: weight '" + w->value + "' lies outside the blob");
    }
    pad(w->offset);
    out(w->data.raw(), w->data.nbytes());
    at += static_cast<int64_t>(w->data.nbytes());
  }
  pad(s.weights_bytes);
}

std::vector<int> sorted_archs(const Schedule& s) {
  std::set<int> a;
  for (const std::string& x : s.archs) {
    if (x.size() < 4 || x.compare(0, 3, "sm_") != 0) throw Error("internal: arch '" + x + "'");
    a.insert(std::stoi(x.substr(3)));
  }
  if (a.empty()) throw Error("internal: no --arch");
  return {a.begin(), a.end()};
}

std::string join_ints(const std::vector<int>& v, const std::string& sep) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : sep) + std::to_string(x);
  return s;
}

// A template header name as a family lists it ("gemm.cuh" or "templates/gemm.cuh") -> "gemm.cuh".
std::string header_name(const std::string& h) {
  return h.compare(0, 10, "templates/") == 0 ? h.substr(10) : h;
}

// ---- kernels: code for one file (NAME.cu, or a part) ---------------------------------------------

struct KernelCode {
  std::set<std::string> headers;          // kernels/ headers the file includes
  std::map<std::string, std::string> own_headers;  // kernels/ headers that are not templates (plugins'): path -> text
  std::vector<std::string> declarations;  // the families' declarations: deduplicated, in order of first use
  std::string entries;                    // per distinct instantiation: its alias and entry point
  std::string body;                       // the statements of the enqueue function
  std::string prepare;                    // the statements of the prepare function (run at create)
  std::map<std::string, std::vector<std::string>> launches;  // kernel id -> the entry points it launches
};

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
  std::string c = "// " + comment(k.id + " (" + k.family + "): " + (k.node ? k.node->op() + " " : "") + nodes + ": " +
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
  return "// " + comment(l.comment) + "\nusing " + t + " = " + l.type + ";\nextern \"C\" __global__ void __launch_bounds__(" +
         bounds + ") " + symbol + "(const " + t + "::Params p) {\n  " + t + "::run(p);\n}\n\n";
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
  const std::string smem = l.dynamic_smem > 0 ? t + "::kSmemBytes" : "0";
  const std::string args = symbol + ", " + t + "::grid(), " + t + "::block(), " + smem + ", p);\n";
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

KernelCode kernel_code(const std::string& name, const std::vector<const Kernel*>& kernels, const ViewPointers& pointers) {
  KernelCode code;
  std::set<std::string> seen;                   // declarations written
  std::map<std::string, std::string> symbol_of;  // instantiation -> its entry point (this file)
  for (const Kernel* k : kernels) {
    const KernelFamily* f = FamilyRegistry::instance().find(k->family);
    if (!f || !f->emit) {
      const std::string what = "no code generator for template family '" + k->family + "'";
      throw k->node ? k->node->error(what) : Error(what);
    }
    KernelLaunches kl;
    try {
      kl = f->emit(*k, pointers);
    } catch (const Error& err) {
      if (!k->node || !err.where().node.empty()) throw;
      throw err.with_node(k->node->name(), k->node->op(), k->node->opset());
    }
    for (const std::string& h : f->headers) code.headers.insert(header_name(h));
    code.headers.insert(kl.includes.begin(), kl.includes.end());
    code.own_headers.insert(kl.own_headers.begin(), kl.own_headers.end());
    if (!kl.declarations.empty() && seen.insert(kl.declarations).second) code.declarations.push_back(kl.declarations);
    code.body += "\n" + kernel_comment(*k);
    const std::string stream = stream_of(k->stream);
    for (int e : k->waits) code.body += "MC_CHECK(cudaStreamWaitEvent(" + stream + ", " + event_of(e) + ", 0));\n";
    code.body += kernel_launches(name, *k, kl, symbol_of, code);
    if (k->event >= 0) code.body += "MC_CHECK(cudaEventRecord(" + event_of(k->event) + ", " + stream + "));\n";
  }
  return code;
}

const char* kBindings =
    "  [[maybe_unused]] unsigned char* const arena = mc_bindings.arena;\n"
    "  [[maybe_unused]] const unsigned char* const weights = mc_bindings.weights;\n"
    "  [[maybe_unused]] const void* const* const inputs = mc_bindings.inputs;\n"
    "  [[maybe_unused]] void* const* const outputs = mc_bindings.outputs;\n"
    "  static_cast<void>(mc_status);\n"
    "  static_cast<void>(stream);\n";

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

// ---- the files -------------------------------------------------------------------------------

// One batch profile's code (schedule/profiles.h): its schedule, the prefix of its symbols (NAME
// with one profile, NAME_b8 with several), and where its kernels go.
struct ProfileUnit {
  const Schedule* s = nullptr;
  int64_t batch = 1;   ///< s->batch, or default_batch(*s) where the compile left it unset
  std::string prefix;
  /// Empty: one file (NAME.cu with one profile; PREFIX.cu with several); else PREFIX_partK.cu.
  std::vector<std::vector<const Kernel*>> parts;
};

struct Model {
  const Schedule& s;  ///< the largest profile (the only one without profiles): the tensors, the weights
  const EmitOptions& o;
  std::string name;
  std::string source;  // file name only
  std::vector<int> archs;
  std::vector<std::vector<const Kernel*>> parts;  // empty: the kernels are in NAME.cu (one profile)
  uint64_t checksum = 0;
  std::vector<ProfileUnit> profiles;  ///< ascending batch; one without batch profiles
  bool multi() const { return profiles.size() > 1; }
  /// The activation arena: the largest of the profiles'.
  int64_t arena_bytes() const {
    int64_t b = 0;
    for (const ProfileUnit& u : profiles) b = std::max(b, u.s->arena_bytes);
    return b;
  }
};

// "input  x  float32[8x3x32x32]" (+ "  (first dim: the batch)", or "16 x the batch", with profiles).
std::string tensor_line(const Model& m, const ModelTensor& t, const char* what) {
  std::string l = what + std::string(" ") + comment(t.name + "  " + type_text(t.dtype, t.shape));
  if (m.multi() && t.batched) {
    const int64_t rows = t.shape[0] / m.profiles.back().batch;
    l += "  (first dim: " + (rows == 1 ? std::string() : std::to_string(rows) + " x ") + "the batch)";
  }
  return l;
}

std::string header_file(const Model& m) {
  const std::string& n = m.name;
  std::string io;
  for (const ModelTensor& t : m.s.inputs) io += "///   " + tensor_line(m, t, "input ") + "\n";
  for (const ModelTensor& t : m.s.outputs) io += "///   " + tensor_line(m, t, "output") + "\n";
  std::string batches;
  for (const ProfileUnit& u : m.profiles) batches += (batches.empty() ? "" : ", ") + std::to_string(u.batch);
  std::string h;
  h += "/// \\file " + n + ".h\n";
  h += "/// \\brief C API of model " + n + ", generated by modelc from " + comment(m.source) + ".\n";
  h += "///\n" + io;
  h += "///\n";
  if (m.multi()) {
    h += "/// Batch profiles " + batches + ": the model is compiled for each of these batch sizes (its kernels\n";
    h += "/// specialised to each one's shapes, one weights blob). " + n + "_run_batch runs any batch from 1 to " +
         std::to_string(m.profiles.back().batch) + "\n";
    h += "/// on the smallest profile that holds it (inputs padded with zeros along their first dim, outputs\n";
    h += "/// trimmed); the shapes above are at batch " + std::to_string(m.profiles.back().batch) +
         ", the largest, which " + n + "_run and " + n + "_run_host run.\n";
  } else {
    h += "/// Compiled for batch " + batches + " (" + n + "_profile_batch(0)); compile with --batch 1,8,32 (batch\n";
    h += "/// profiles) to run several batch sizes.\n";
  }
  h += "///\n";
  h += "/// Every function returns 0 on success, else 1 CUDA error, 2 bad argument, 3 no device or an\n";
  h += "/// unsupported compute capability, 4 out of device memory, 5 weights file error; " + n + "_error()\n";
  h += "/// then says why. Dtypes are ONNX TensorProto codes (1 float32, 10 float16, 7 int64, ...).\n";
  h += "/// There is no global state: several models, and several contexts of one model, share a\n";
  h += "/// process. A context runs one inference at a time (its activation arena is its own).\n";
  std::string guard = "MODELC_" + n + "_H_";
  for (char& ch : guard) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  h += "#ifndef " + guard + "\n#define " + guard + "\n\n";
  h += "#include <stddef.h>\n#include <stdint.h>\n\n";
  // cudaStream_t is CUDA's `struct CUstream_st*` (driver_types.h; the emulation's runtime_api.h too):
  // declared here unless CUDA's header came first, so that the header needs no CUDA include path and
  // no define, for the GPU library and the emulated one alike.
  h += "/* cudaStream_t as CUDA declares it (driver_types.h), unless a CUDA header came first: this header\n";
  h += "   needs nothing but the C library, for the CUDA library and the emulated one alike. */\n";
  h += "#if !defined(__DRIVER_TYPES_H__) && !defined(MODELC_CUDA_STREAM_T_DECLARED)\n";
  h += "#define MODELC_CUDA_STREAM_T_DECLARED\n";
  h += "struct CUstream_st;\ntypedef struct CUstream_st* cudaStream_t;\n#endif\n\n";
  h += "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h += "/// \\brief An instance of the model on one device: weights, activation arena, CUDA graph.\n";
  h += "typedef struct " + n + "_ctx " + n + "_ctx;\n\n";
  h += "/// \\brief Creates a context on `device`: checks that the device exists and that its compute\n";
  h += "/// capability has an image in this binary, and that its memory suffices; uploads the weights;\n";
  h += "/// allocates the activation arena; captures the run into a CUDA graph" +
       std::string(m.multi() ? " (one per batch profile)" : "") + ".\n";
  if (m.o.weights_file) {
    h += "/// The weights are read from " + n + "_weights.bin next to the executable (see\n";
    h += "/// " + n + "_create_with_weights to give another path).\n";
  }
  h += "/// On failure *ctx is still set (unless host memory ran out), so " + n + "_error(*ctx) can say why;\n";
  h += "/// destroy it then.\n";
  h += "int " + n + "_create(" + n + "_ctx** ctx, int device);\n\n";
  if (m.o.weights_file) {
    h += "/// \\brief " + n + "_create, with the weights read from `weights_path` (null: the default, " + n +
         "_weights.bin\n/// next to the executable). The file's size and checksum must match this build (error 5).\n";
    h += "int " + n + "_create_with_weights(" + n + "_ctx** ctx, int device, const char* weights_path);\n\n";
  }
  h += "/// \\brief Enqueues one inference on `stream`: device pointers, one per input and per output in\n";
  h += "/// order. Replays the CUDA graph; new pointers are captured once more first (keep the same\n";
  h += "/// buffers between runs to only replay). Returns before the work is done.";
  h += m.multi() ? " The largest batch\n/// profile's batch: " + n + "_run_batch(ctx, " + std::to_string(m.profiles.back().batch) +
                       ", ...).\n"
                 : "\n";
  h += "int " + n + "_run(" + n + "_ctx* ctx, const void* const* inputs, void* const* outputs, cudaStream_t stream);\n\n";
  h += "/// \\brief One inference on host pointers: copies the inputs in, runs, copies the outputs out,\n";
  h += "/// and returns when they are written.";
  h += m.multi() ? " The largest batch profile's batch.\n" : "\n";
  h += "int " + n + "_run_host(" + n + "_ctx* ctx, const void* const* inputs, void* const* outputs);\n\n";
  h += "/// \\brief " + n + "_run for `batch` items: the buffers hold the tensors at that batch (a batched\n";
  h += "/// tensor's first dim is its shape[0] / B * batch, B the largest profile's batch; " + n + "_input_batched\n";
  h += "/// says which are). Runs the smallest batch profile whose batch is at least `batch` (" + n +
       "_profile_for_batch):\n";
  h += "/// at its own batch on these buffers, else through the context's own, the inputs padded with zeros\n";
  h += "/// and the first `batch` items of the outputs copied back. Error 2 for a batch no profile holds.\n";
  h += "int " + n + "_run_batch(" + n + "_ctx* ctx, int64_t batch, const void* const* inputs, void* const* outputs,\n";
  h += "    cudaStream_t stream);\n\n";
  h += "/// \\brief " + n + "_run_host for `batch` items (as " + n + "_run_batch).\n";
  h += "int " + n + "_run_host_batch(" + n + "_ctx* ctx, int64_t batch, const void* const* inputs, void* const* outputs);\n\n";
  h += "/// \\brief The message of the context's last failure (\"\" when its last call succeeded); never null.\n";
  h += "const char* " + n + "_error(const " + n + "_ctx* ctx);\n\n";
  h += "/// \\brief Frees everything the context holds; null is fine.\n";
  h += "void " + n + "_destroy(" + n + "_ctx* ctx);\n\n";
  h += "/// \\brief Number of model inputs / outputs.\n";
  h += "int " + n + "_num_inputs(void);\nint " + n + "_num_outputs(void);\n\n";
  const std::string at = m.multi() ? " at the largest batch" : "";
  h += "/// \\brief Input i's ONNX name, dtype code, rank and shape (static" + at +
       "); null / -1 when i is out of range.\n";
  h += "const char* " + n + "_input_name(int i);\nint " + n + "_input_dtype(int i);\nint " + n +
       "_input_rank(int i);\nconst int64_t* " + n + "_input_shape(int i);\n\n";
  h += "/// \\brief Output i's ONNX name, dtype code, rank and shape (static" + at +
       "); null / -1 when i is out of range.\n";
  h += "const char* " + n + "_output_name(int i);\nint " + n + "_output_dtype(int i);\nint " + n +
       "_output_rank(int i);\nconst int64_t* " + n + "_output_shape(int i);\n\n";
  h += "/// \\brief Device memory of a context's activation arena, in bytes" +
       std::string(m.multi() ? " (the largest batch profile's)" : "") + ".\n";
  h += "size_t " + n + "_workspace_bytes(void);\n\n";
  h += "/// \\brief Batch profiles: how many (1 without --batch N,M,...), and profile p's batch (ascending;\n";
  h += "/// -1 when p is out of range).\n";
  h += "int " + n + "_num_profiles(void);\nint64_t " + n + "_profile_batch(int p);\n\n";
  h += "/// \\brief The profile a run of `batch` items uses: the smallest whose batch is at least `batch`;\n";
  h += "/// -1 when none is (a model with one profile runs its own batch only).\n";
  h += "int " + n + "_profile_for_batch(int64_t batch);\n\n";
  h += "/// \\brief 1 when input / output i's first dim is the batch times a constant (padded / trimmed by\n";
  h += "/// " + n + "_run_batch), 0 when its shape is the same at every batch (every tensor with one profile),\n";
  h += "/// -1 when i is out of range.\n";
  h += "int " + n + "_input_batched(int i);\nint " + n + "_output_batched(int i);\n\n";
  h += "#ifdef __cplusplus\n}  // extern \"C\"\n#endif\n\n#endif  // " + guard + "\n";
  return h;
}

// With several streams (schedule/streams.h), the statements before the first kernel (the other
// streams wait for the caller's: the fork) and after the last (the caller's waits for each of them:
// the join, so a run's outputs are ready on the caller's stream, and a capture may end); the
// schedule's last events are these.
struct ForkJoin {
  std::string fork, join;
};
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

std::string enqueue_function(const std::string& fn, const KernelCode& code, bool is_static, const ForkJoin& fj = {}) {
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

// " (batch 8)" after a profile's file's description, with several profiles.
std::string batch_note(const Model& m, const ProfileUnit& u) {
  return m.multi() ? " at batch " + std::to_string(u.batch) : "";
}

std::string part_file(const Model& m, const ProfileUnit& u, int p, const KernelCode& code) {
  const std::string& n = m.name;
  const std::string part = u.prefix + "_part" + std::to_string(p);
  std::string c = "// " + part + ".cu: kernels " + u.parts[p].front()->id + " to " + u.parts[p].back()->id + " of model " +
                  n + batch_note(m, u) + " (generated by modelc from " + comment(m.source) + "; do not edit).\n";
  c += "#include \"runtime/runtime.h\"\n#include \"" + n + "_weights.h\"\n" + includes_of(code.headers) + "\n";
  c += declarations_of(code);
  c += "// Enqueues this part's kernels; called by " + n + ".cu in order.\n";
  c += enqueue_function(part + "_enqueue", code, false);
  if (!code.prepare.empty()) {
    c += "\n// Raises the shared memory limit of this part's kernels that need more than 48 KiB; called by " + n +
         ".cu at create.\n";
    c += prepare_function(part + "_prepare", code.prepare, false);
  }
  return c;
}

// A batch profile's kernels in a file of their own (several profiles, each within
// max_kernels_per_file): PREFIX.cu with PREFIX_enqueue (and PREFIX_prepare), which NAME.cu's
// profile table names.
std::string profile_file(const Model& m, const ProfileUnit& u, const KernelCode& code) {
  const std::string& n = m.name;
  std::string c = "// " + u.prefix + ".cu: the " + std::to_string(u.s->kernels.size()) + " kernels of model " + n +
                  batch_note(m, u) + ", a batch profile (generated by modelc from " + comment(m.source) +
                  "; do not edit).\n";
  c += "#include \"runtime/runtime.h\"\n#include \"" + n + "_weights.h\"\n" + includes_of(code.headers) + "\n";
  c += declarations_of(code);
  c += u.s->streams > 1
           ? "// Enqueues every kernel of the profile on `stream` and the context's other streams (forked from it\n"
             "// and joined back; captured into a CUDA graph). NAME.cu's profile table names it.\n"
           : "// Enqueues every kernel of the profile in order on `stream` (captured into a CUDA graph). " + n +
                 ".cu's\n// profile table names it.\n";
  c += enqueue_function(u.prefix + "_enqueue", code, false, fork_join(*u.s));
  if (!code.prepare.empty()) {
    c += "\n// Raises the shared memory limit of the profile's kernels that need more than 48 KiB; called at "
         "create.\n";
    c += prepare_function(u.prefix + "_prepare", code.prepare, false);
  }
  return c;
}

std::string tensor_table(const std::vector<ModelTensor>& ts, const std::string& what, bool batch_flags) {
  std::string s;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    std::string dims;
    for (int64_t d : ts[i].shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    s += "const int64_t k" + what + "Shape" + std::to_string(i) + "[] = {" + (dims.empty() ? "0" : dims) + "};" +
         (dims.empty() ? "  // a scalar: rank 0" : "") + "\n";
  }
  s += "const mc::TensorInfo k" + what + "s[] = {\n";
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const int64_t bytes = num_elements(ts[i].shape) * static_cast<int64_t>(dtype_size(ts[i].dtype));
    s += "    {" + c_string(ts[i].name) + ", " + std::to_string(static_cast<int>(ts[i].dtype)) + ", " +
         std::to_string(ts[i].shape.size()) + ", k" + what + "Shape" + std::to_string(i) + ", " + std::to_string(bytes) +
         (batch_flags ? std::string(", ") + (ts[i].batched ? "1" : "0") : "") + "},\n";
  }
  if (ts.empty()) s += "    {\"\", 0, 0, nullptr, 0" + std::string(batch_flags ? ", 0" : "") + "},  // none: the array may not be empty\n";
  s += "};\n";
  if (batch_flags) s += "// {name, dtype, rank, shape at the largest batch, bytes, 1: batched (first dim x the batch)}\n";
  return s;
}

/// How each profile's code reaches NAME.cu: its kernels in NAME.cu itself (`code`: one profile that
/// fits), in PREFIX.cu, or in parts (`parts_prepared`: which parts have a prepare function).
struct UnitCode {
  const KernelCode* code = nullptr;  ///< the kernels are in NAME.cu
  bool own_file = false;             ///< in PREFIX.cu
  bool file_prepared = false;        ///< PREFIX.cu has PREFIX_prepare
  std::vector<bool> parts_prepared;  ///< in PREFIX_partK.cu
};

std::string main_cu_file(const Model& m, const std::vector<UnitCode>& units) {
  const Schedule& s = m.s;
  const std::string& n = m.name;
  const std::vector<int>& archs = m.archs;
  const KernelCode* code = units.size() == 1 ? units[0].code : nullptr;
  std::string c;
  c += "// " + n + ".cu: model " + n + ", generated by modelc from " + comment(m.source) +
       ". Do not edit: compile the model again.\n";
  c += "//\n";
  if (!m.multi()) {
    c += "// " + std::to_string(s.kernels.size()) + " kernels" +
         (m.parts.empty() ? "" : " in " + std::to_string(m.parts.size()) + " parts (" + n + "_partK.cu)") +
         "; activation arena " + grouped(s.arena_bytes) + " bytes (all activations: " +
         grouped(s.activation_bytes_total) + "); weights " + grouped(s.weights_bytes) + " bytes in " +
         std::to_string(s.weights.size()) + " tensors.\n";
  } else {
    c += "// Batch profiles (a run of b items runs on the smallest profile whose batch is at least b):\n";
    for (const ProfileUnit& u : m.profiles) {
      c += "//   batch " + std::to_string(u.batch) + ": " + std::to_string(u.s->kernels.size()) + " kernels in " +
           (u.parts.empty() ? u.prefix + ".cu" : std::to_string(u.parts.size()) + " parts (" + u.prefix + "_partK.cu)") +
           ", activation arena " + grouped(u.s->arena_bytes) + " bytes\n";
    }
    c += "// Activation arena " + grouped(m.arena_bytes()) + " bytes (the largest profile's); weights " +
         grouped(s.weights_bytes) + " bytes in " + std::to_string(s.weights.size()) + " tensors, shared by the profiles.\n";
  }
  for (const ModelTensor& t : s.inputs) c += "//   " + tensor_line(m, t, "input ") + "\n";
  for (const ModelTensor& t : s.outputs) c += "//   " + tensor_line(m, t, "output") + "\n";
  c += "#include \"runtime/runtime.h\"\n";
  c += "#include \"" + n + ".h\"\n";
  if (code) c += "#include \"" + n + "_weights.h\"\n" + includes_of(code->headers);
  c += "\n";
  c += "// The images compiled into the binary (the Makefile passes its ARCHS, '_' between them).\n";
  c += "#ifndef MODELC_ARCHS\n#define MODELC_ARCHS " + join_ints(archs, "_") + "\n#endif\n";
  c += "#ifndef MODELC_PTX_ARCH\n#define MODELC_PTX_ARCH " + std::to_string(archs.back()) + "\n#endif\n\n";

  if (!m.o.weights_file) {
    c += "// The weights (" + n + "_weights.h: where each tensor lies in them).\n";
    c += "extern \"C\" const unsigned char " + n + "_weights[];  // " + n + "_weights.S\n";
    c += "extern \"C\" const unsigned char " + n + "_weights_end[];\n\n";
  }

  // Each profile's enqueue and prepare functions: defined here, or declared (in PREFIX.cu).
  std::vector<bool> prepared;
  for (std::size_t i = 0; i < m.profiles.size(); ++i) {
    const ProfileUnit& u = m.profiles[i];
    const UnitCode& uc = units[i];
    const std::string& pn = u.prefix;
    if (m.multi()) c += "// Batch profile " + std::to_string(u.batch) + ".\n";
    if (uc.code) {
      c += declarations_of(*uc.code);
      c += u.s->streams > 1
               ? "// Enqueues every kernel of the model on `stream` and the context's other streams (forked from it\n"
                 "// and joined back; captured into a CUDA graph).\n"
               : "// Enqueues every kernel of the model in order on `stream` (captured into a CUDA graph).\n";
      c += enqueue_function(pn + "_enqueue", *uc.code, true, fork_join(*u.s));
    } else if (uc.own_file) {
      c += "int " + pn + "_enqueue(mc::Status& mc_status, const mc::Bindings& mc_bindings, cudaStream_t stream);\n";
      if (uc.file_prepared) c += "int " + pn + "_prepare(mc::Status& mc_status);\n";
    } else {
      for (std::size_t p = 0; p < u.parts.size(); ++p) {
        c += "int " + pn + "_part" + std::to_string(p) +
             "_enqueue(mc::Status& mc_status, const mc::Bindings& mc_bindings, cudaStream_t stream);\n";
      }
      c += u.s->streams > 1
               ? "\n// Enqueues every kernel of the model: the parts, one after another, between the fork of the\n"
                 "// context's other streams from `stream` and their join.\n"
               : "\n// Enqueues every kernel of the model in order on `stream`: the parts, one after another.\n";
      c += "static int " + pn + "_enqueue(mc::Status& mc_status, const mc::Bindings& mc_bindings, cudaStream_t stream) {\n";
      const ForkJoin fj = fork_join(*u.s);
      c += fj.fork;
      for (std::size_t p = 0; p < u.parts.size(); ++p) {
        c += "  if (const int r = " + pn + "_part" + std::to_string(p) +
             "_enqueue(mc_status, mc_bindings, stream)) return r;\n";
      }
      c += fj.join;
      c += "  return 0;\n}\n";
    }
    // The prepare function: this file's, or one calling the parts' that have one.
    std::string prepare_body;
    if (uc.code) {
      prepare_body = uc.code->prepare;
    } else {
      for (std::size_t p = 0; p < uc.parts_prepared.size(); ++p) {
        if (!uc.parts_prepared[p]) continue;
        const std::string fn = pn + "_part" + std::to_string(p) + "_prepare";
        c += "int " + fn + "(mc::Status& mc_status);\n";
        prepare_body += "  if (const int r = " + fn + "(mc_status)) return r;\n";
      }
    }
    if (!prepare_body.empty()) {
      c += "\n// Raises the shared memory limit of the kernels that need more than 48 KiB (at create, before the\n"
           "// capture).\n";
      c += prepare_function(pn + "_prepare", prepare_body, true);
    }
    prepared.push_back(!prepare_body.empty() || uc.file_prepared);
    c += "\n";
  }

  c += "namespace {\n\n";
  c += tensor_table(s.inputs, "Input", m.multi());
  c += tensor_table(s.outputs, "Output", m.multi());
  c += "\n// {batch, arena bytes, enqueue, streams, events, prepare}, ascending batch (runtime/runtime.h).\n";
  c += "const mc::Profile kProfiles[] = {\n";
  for (std::size_t i = 0; i < m.profiles.size(); ++i) {
    const ProfileUnit& u = m.profiles[i];
    c += "    {" + std::to_string(u.batch) + ", " + std::to_string(u.s->arena_bytes) + "u, " + u.prefix + "_enqueue, " +
         std::to_string(u.s->streams) + ", " + std::to_string(u.s->events) + ", " +
         (prepared[i] ? u.prefix + "_prepare" : std::string("nullptr")) + "},\n";
  }
  c += "};\n\n";
  c += "#define MODELC_STRING_(x) #x\n#define MODELC_STRING(x) MODELC_STRING_(x)\n\n";
  c += "const mc::ModelInfo kModel = {\n";
  c += "    " + c_string(n) + ",\n";
  c += "    MODELC_STRING(MODELC_ARCHS),\n    MODELC_PTX_ARCH,\n";
  c += "    " + std::to_string(m.arena_bytes()) + "u,  // arena bytes" + (m.multi() ? " (the largest profile's)" : "") + "\n";
  c += "    " + std::to_string(s.weights_bytes) + "u,  // weights bytes\n";
  char sum[32];
  std::snprintf(sum, sizeof sum, "0x%016llxull", static_cast<unsigned long long>(m.checksum));
  c += "    " + std::string(sum) + ",  // mc::checksum64 of the weights\n";
  c += m.o.weights_file ? "    nullptr,  // weights read at create\n" : "    " + n + "_weights,\n";
  c += "    " + c_string(n + "_weights.bin") + ",\n";
  c += "    " + std::to_string(s.inputs.size()) + ",\n    kInputs,\n";
  c += "    " + std::to_string(s.outputs.size()) + ",\n    kOutputs,\n";
  c += "    " + std::to_string(m.profiles.size()) + ",\n    kProfiles,\n";
  c += "};\n\n";
  c += "}  // namespace\n\n";

  c += "struct " + n + "_ctx {\n  " + n + "_ctx() : rt(kModel) {}\n  mc::Context rt;\n};\n\n";
  c += "extern \"C\" {\n\n";
  const std::string create_args = m.o.weights_file ? "weights_path" : "nullptr";
  auto create_fn = [&](const std::string& fn, const std::string& extra) {
    std::string f = "int " + fn + "(" + n + "_ctx** ctx, int device" + extra + ") {\n";
    f += "  if (!ctx) return mc::kBadArgument;\n";
    f += "  *ctx = new (std::nothrow) " + n + "_ctx();\n";
    f += "  if (!*ctx) return mc::kOutOfMemory;\n";
    if (!m.o.weights_file) {
      f += "  if (static_cast<size_t>(" + n + "_weights_end - " + n + "_weights) != kModel.weights_bytes) {\n";
      f += "    return (*ctx)->rt.status().fail(mc::kWeightsFile, \"the weights linked into this binary are not the \"\n";
      f += "                                    \"ones its code was compiled with: rebuild it (make clean; make)\");\n";
      f += "  }\n";
    }
    f += "  return (*ctx)->rt.create(device, " + std::string(extra.empty() ? "nullptr" : create_args) + ");\n}\n\n";
    return f;
  };
  c += create_fn(n + "_create", "");
  if (m.o.weights_file) c += create_fn(n + "_create_with_weights", ", const char* weights_path");
  c += "int " + n + "_run(" + n + "_ctx* ctx, const void* const* inputs, void* const* outputs, cudaStream_t stream) {\n";
  c += "  if (!ctx) return mc::kBadArgument;\n  return ctx->rt.run(inputs, outputs, stream);\n}\n\n";
  c += "int " + n + "_run_host(" + n + "_ctx* ctx, const void* const* inputs, void* const* outputs) {\n";
  c += "  if (!ctx) return mc::kBadArgument;\n  return ctx->rt.run_host(inputs, outputs);\n}\n\n";
  c += "int " + n + "_run_batch(" + n +
       "_ctx* ctx, int64_t batch, const void* const* inputs, void* const* outputs, cudaStream_t stream) {\n";
  c += "  if (!ctx) return mc::kBadArgument;\n  return ctx->rt.run_batch(batch, inputs, outputs, stream);\n}\n\n";
  c += "int " + n + "_run_host_batch(" + n + "_ctx* ctx, int64_t batch, const void* const* inputs, void* const* outputs) {\n";
  c += "  if (!ctx) return mc::kBadArgument;\n  return ctx->rt.run_host_batch(batch, inputs, outputs);\n}\n\n";
  c += "const char* " + n + "_error(const " + n + "_ctx* ctx) {\n";
  c += "  return ctx ? ctx->rt.error() : \"no context (a null pointer, or " + n +
       "_create ran out of host memory)\";\n}\n\n";
  c += "void " + n + "_destroy(" + n + "_ctx* ctx) { delete ctx; }\n\n";
  c += "int " + n + "_num_inputs(void) { return kModel.num_inputs; }\n";
  c += "int " + n + "_num_outputs(void) { return kModel.num_outputs; }\n\n";
  for (const char* dir : {"input", "output"}) {
    const std::string d = dir;
    const std::string count = "kModel.num_" + d + "s";
    const std::string table = "kModel." + d + "s";
    const std::string guard = "  if (i < 0 || i >= " + count + ") return ";
    c += "const char* " + n + "_" + d + "_name(int i) {\n" + guard + "nullptr;\n  return " + table + "[i].name;\n}\n";
    c += "int " + n + "_" + d + "_dtype(int i) {\n" + guard + "-1;\n  return " + table + "[i].dtype;\n}\n";
    c += "int " + n + "_" + d + "_rank(int i) {\n" + guard + "-1;\n  return " + table + "[i].rank;\n}\n";
    c += "const int64_t* " + n + "_" + d + "_shape(int i) {\n" + guard + "nullptr;\n  return " + table +
         "[i].shape;\n}\n";
    c += "int " + n + "_" + d + "_batched(int i) {\n" + guard + "-1;\n  return " + table + "[i].batched;\n}\n\n";
  }
  c += "size_t " + n + "_workspace_bytes(void) { return kModel.arena_bytes; }\n\n";
  c += "int " + n + "_num_profiles(void) { return kModel.num_profiles; }\n\n";
  c += "int64_t " + n + "_profile_batch(int p) {\n";
  c += "  if (p < 0 || p >= kModel.num_profiles) return -1;\n  return kModel.profiles[p].batch;\n}\n\n";
  c += "int " + n + "_profile_for_batch(int64_t batch) { return mc::profile_for(kModel, batch); }\n\n";
  c += "}  // extern \"C\"\n";
  return c;
}

std::string cli_file(const Model& m) {
  const std::string& n = m.name;
  std::string c;
  c += "// " + n + "_main.cu: the command-line program of model " + n + " (./" + n +
       " --help; the options are in runtime/cli.h). Generated by modelc.\n";
  c += "#include \"" + n + ".h\"\n#include \"runtime/cli.h\"\n\n";
  c += "namespace {\n\n";
  c += "int create(void** ctx, int device) {\n  " + n + "_ctx* c = nullptr;\n  const int r = " + n +
       "_create(&c, device);\n  *ctx = c;\n  return r;\n}\n\n";
  if (m.o.weights_file) {
    c += "int create_with_weights(void** ctx, int device, const char* weights_path) {\n  " + n +
         "_ctx* c = nullptr;\n  const int r = " + n + "_create_with_weights(&c, device, weights_path);\n  *ctx = c;\n" +
         "  return r;\n}\n\n";
  }
  c += "int run(void* ctx, const void* const* inputs, void* const* outputs, cudaStream_t stream) {\n  return " + n +
       "_run(static_cast<" + n + "_ctx*>(ctx), inputs, outputs, stream);\n}\n\n";
  c += "int run_host(void* ctx, const void* const* inputs, void* const* outputs) {\n  return " + n +
       "_run_host(static_cast<" + n + "_ctx*>(ctx), inputs, outputs);\n}\n\n";
  c += "const char* error(const void* ctx) { return " + n + "_error(static_cast<const " + n + "_ctx*>(ctx)); }\n\n";
  c += "void destroy(void* ctx) { " + n + "_destroy(static_cast<" + n + "_ctx*>(ctx)); }\n\n";
  c += "int run_batch(void* ctx, int64_t batch, const void* const* inputs, void* const* outputs, cudaStream_t stream) {\n"
       "  return " + n + "_run_batch(static_cast<" + n + "_ctx*>(ctx), batch, inputs, outputs, stream);\n}\n\n";
  c += "int run_host_batch(void* ctx, int64_t batch, const void* const* inputs, void* const* outputs) {\n  return " + n +
       "_run_host_batch(static_cast<" + n + "_ctx*>(ctx), batch, inputs, outputs);\n}\n\n";
  c += "}  // namespace\n\n";
  c += "int main(int argc, char** argv) {\n";
  c += "  const mc_cli::Model model = {\n";
  c += "      " + c_string(n) + ",\n";
  c += "      create,\n      " + std::string(m.o.weights_file ? "create_with_weights" : "nullptr") + ",\n";
  c += "      run,\n      run_host,\n      error,\n      destroy,\n";
  for (const char* f : {"num_inputs", "num_outputs", "input_name", "input_dtype", "input_rank", "input_shape",
                        "output_name", "output_dtype", "output_rank", "output_shape", "workspace_bytes"}) {
    c += "      " + n + "_" + f + ",\n";
  }
  c += "      run_batch,\n      run_host_batch,\n";
  for (const char* f : {"num_profiles", "profile_batch", "profile_for_batch", "input_batched", "output_batched"}) {
    c += "      " + n + "_" + f + ",\n";
  }
  c += "  };\n  return mc_cli::main(argc, argv, model);\n}\n";
  return c;
}

std::string weights_header(const Model& m, const WeightNames& names) {
  const std::string& n = m.name;
  std::string h = "// " + n + "_weights.h: where each weight of model " + n + " lies in its weights (" + n +
                  "_weights.bin), in bytes from their start: 256-byte aligned, identical tensors stored once. "
                  "Generated by modelc.\n";
  h += "#pragma once\n\n#include <stddef.h>\n\n";
  for (std::size_t i = 0; i < m.s.weights.size(); ++i) {
    const WeightEntry& w = m.s.weights[i];
    h += "constexpr size_t " + names.names()[i] + " = " + std::to_string(w.offset) + ";  // " +
         comment(type_text(w.data.dtype(), w.data.shape()) + " '" + w.value + "'") + "\n";
  }
  if (m.s.weights.empty()) h += "// (none)\n";
  return h;
}

std::string weights_asm(const Model& m) {
  const std::string& n = m.name;
  std::string a;
  a += "/* " + n + "_weights.S: the weights of model " + n + " (" + n + "_weights.bin, " +
       std::to_string(m.s.weights_bytes) + " bytes) in the binary, as " + n + "_weights .. " + n +
       "_weights_end. Generated by modelc. */\n";
  a += "    .section .rodata." + n + "_weights,\"a\",@progbits\n";
  a += "    .balign 64\n";
  a += "    .globl " + n + "_weights\n    .type " + n + "_weights, @object\n";
  a += n + "_weights:\n";
  a += "    .incbin \"" + n + "_weights.bin\"\n";
  a += "    .globl " + n + "_weights_end\n";
  a += n + "_weights_end:\n";
  a += "    .size " + n + "_weights, " + n + "_weights_end - " + n + "_weights\n";
  a += "    .section .note.GNU-stack,\"\",@progbits\n";
  return a;
}

// The files a header includes with quotes (#include "x.cuh"), in order.
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> r;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t a = line.find_first_not_of(" \t");
    if (a == std::string::npos || line.compare(a, 1, "#") != 0) continue;
    const std::size_t inc = line.find("include", a);
    const std::size_t q1 = line.find('"', a);
    if (inc == std::string::npos || q1 == std::string::npos || q1 < inc) continue;
    const std::size_t q2 = line.find('"', q1 + 1);
    if (q2 != std::string::npos) r.push_back(line.substr(q1 + 1, q2 - q1 - 1));
  }
  return r;
}

// Copies of templates/ headers, with the templates they include (#include "x.cuh"), transitively.
void add_kernel_headers(const fs::path& templates, std::set<std::string> todo, std::map<std::string, std::string>& files) {
  std::set<std::string> done;
  while (!todo.empty()) {
    const std::string h = *todo.begin();
    todo.erase(todo.begin());
    if (!done.insert(h).second) continue;
    const fs::path p = templates / h;
    if (!fs::is_regular_file(p)) {
      throw Error("template header '" + h + "' is not in " + templates.string(),
                  "a family lists a header that does not exist, or MODELC_DATA_DIR points elsewhere");
    }
    const std::string text = read_text_file(p);
    files["kernels/" + h] = text;
    for (const std::string& dep : quoted_includes(text)) {
      if (fs::is_regular_file(templates / dep)) todo.insert(dep);  // else: device.h, in runtime/
    }
  }
}

void add_runtime(const fs::path& stub, std::map<std::string, std::string>& files) {
  if (!fs::is_directory(stub)) throw Error("modelc's runtime folder " + stub.string() + " is missing");
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(stub)) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = fs::relative(e.path(), stub);
    bool hidden = false;
    for (const auto& part : rel) hidden = hidden || part.string().front() == '.';
    if (!hidden) paths.push_back(rel);
  }
  for (const fs::path& rel : paths) files["runtime/" + rel.generic_string()] = read_text_file(stub / rel);
}

}  // namespace

std::string read_text_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string data_dir() {
  const std::string dir = modelc_data_dir();  // support/data_dir.h
  if (!fs::is_regular_file(fs::path(dir) / "Makefile.gen") || !fs::is_directory(fs::path(dir) / "runtime_stub")) {
    throw Error("modelc's data folder " + dir + " lacks Makefile.gen or runtime_stub/",
                "set MODELC_DATA_DIR to the folder that holds templates/, runtime_stub/ and Makefile.gen");
  }
  return dir;
}

std::string weights_blob(const Schedule& s) {
  std::string b;
  b.reserve(static_cast<std::size_t>(s.weights_bytes));
  for_each_blob_piece(s, [&](const uint8_t* p, std::size_t n) { b.append(reinterpret_cast<const char*>(p), n); });
  return b;
}

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

uint64_t weights_checksum(const Schedule& s) {
  Checksum c;
  for_each_blob_piece(s, [&](const uint8_t* p, std::size_t n) { c.add(p, n); });
  return c.value();
}

}  // namespace

namespace {

// The text files of the folder; `sources` gets the .cu files make compiles for the library (NAME.cu
// first, then the profiles' and parts' files, NAME_main.cu not included).
std::map<std::string, std::string> render(const std::vector<const Schedule*>& profiles, const EmitOptions& o,
                                          std::vector<std::string>* sources) {
  if (profiles.empty()) throw Error("internal: nothing to emit");
  const Schedule& s = *profiles.back();  // the largest batch: the tensors; the weights are everyone's
  for (const Schedule* p : profiles) {
    if (p->name != s.name || p->archs != s.archs || p->weights_bytes != s.weights_bytes ||
        p->weights.size() != s.weights.size()) {
      throw Error("internal: the batch profiles differ in name, archs or weights (schedule/profiles.h share_weights)");
    }
  }
  if (!is_identifier(s.name)) {
    throw Error("--name '" + s.name + "' is not a C identifier", "use letters, digits and '_', not starting with a digit");
  }
  // x86-64 code reaches its data with 32-bit PC-relative offsets: beyond about 2 GB of embedded
  // weights the link fails, so say so now.
  constexpr int64_t kMaxEmbeddedWeights = int64_t{3} << 29;  // 1.5 GiB
  if (!o.weights_file && s.weights_bytes > kMaxEmbeddedWeights) {
    throw Error("the weights are " + grouped(s.weights_bytes) + " bytes: too many to embed in the binary (at most " +
                    grouped(kMaxEmbeddedWeights) + ")",
                "compile with --weights-file: the weights are then read from " + s.name + "_weights.bin at create");
  }
  const fs::path data = o.data_dir.empty() ? data_dir() : o.data_dir;
  Model m{s, o, s.name, fs::path(o.source).filename().string(), sorted_archs(s), {}, weights_checksum(s), {}};
  if (m.source.empty()) m.source = "(a graph)";
  const std::string& n = m.name;

  // Each profile's kernels: one file, or parts of about max_kernels_per_file.
  const int per = std::max(1, o.max_kernels_per_file);
  for (const Schedule* p : profiles) {
    ProfileUnit u;
    u.s = p;
    u.batch = p->batch > 0 ? p->batch : default_batch(*p);
    if (profiles.size() > 1 && p->batch <= 0) throw Error("internal: a batch profile without its batch");
    u.prefix = profiles.size() > 1 ? n + "_b" + std::to_string(u.batch) : n;
    std::vector<const Kernel*> all;
    for (const Kernel& k : p->kernels) all.push_back(&k);
    if (static_cast<int>(all.size()) > per) {
      const std::size_t nparts = (all.size() + per - 1) / per;
      for (std::size_t q = 0; q < nparts; ++q) {
        const std::size_t a = all.size() * q / nparts, b = all.size() * (q + 1) / nparts;
        u.parts.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(a), all.begin() + static_cast<std::ptrdiff_t>(b));
      }
    }
    m.profiles.push_back(std::move(u));
  }
  if (!m.multi()) m.parts = m.profiles[0].parts;

  std::map<std::string, std::string> files;
  std::set<std::string> headers;
  std::map<std::string, std::string> own_headers;  // a plugin's headers: path -> text
  std::vector<std::string> extra_sources;  // the profiles' files and parts, in order
  std::vector<std::map<std::string, std::vector<std::string>>> launches(m.profiles.size());
  const WeightNames weight_names(s.weights);
  const ViewPointers pointers(weight_names);
  std::vector<UnitCode> units(m.profiles.size());
  std::unique_ptr<KernelCode> main_code;  // the kernels of a single profile in NAME.cu
  for (std::size_t i = 0; i < m.profiles.size(); ++i) {
    const ProfileUnit& u = m.profiles[i];
    UnitCode& uc = units[i];
    if (u.parts.empty()) {
      std::vector<const Kernel*> all;
      for (const Kernel& k : u.s->kernels) all.push_back(&k);
      KernelCode code = kernel_code(u.prefix, all, pointers);
      headers.insert(code.headers.begin(), code.headers.end());
      own_headers.insert(code.own_headers.begin(), code.own_headers.end());
      launches[i] = code.launches;
      if (m.multi()) {
        uc.own_file = true;
        uc.file_prepared = !code.prepare.empty();
        files[u.prefix + ".cu"] = profile_file(m, u, code);
        extra_sources.push_back(u.prefix + ".cu");
      } else {
        main_code = std::make_unique<KernelCode>(std::move(code));
        uc.code = main_code.get();
      }
      continue;
    }
    for (std::size_t p = 0; p < u.parts.size(); ++p) {
      const KernelCode code = kernel_code(u.prefix, u.parts[p], pointers);
      headers.insert(code.headers.begin(), code.headers.end());
      own_headers.insert(code.own_headers.begin(), code.own_headers.end());
      launches[i].insert(code.launches.begin(), code.launches.end());
      const std::string file = u.prefix + "_part" + std::to_string(p) + ".cu";
      files[file] = part_file(m, u, static_cast<int>(p), code);
      extra_sources.push_back(file);
      uc.parts_prepared.push_back(!code.prepare.empty());
    }
  }
  files[n + ".cu"] = main_cu_file(m, units);
  files[n + ".h"] = header_file(m);
  files[n + "_weights.h"] = weights_header(m, weight_names);
  files[n + "_main.cu"] = cli_file(m);
  if (!o.weights_file) files[n + "_weights.S"] = weights_asm(m);
  if (o.format) {
    // One file per task: libFormat takes a while on big models; the results do not depend on it.
    std::vector<std::pair<std::string*, std::future<std::string>>> formatted;
    for (auto& [name, text] : files) {
      const bool code = (name.size() > 3 && name.compare(name.size() - 3, 3, ".cu") == 0) ||
                        (name.size() > 2 && name.compare(name.size() - 2, 2, ".h") == 0);
      if (!code) continue;
      const std::string* in = &text;
      const std::string* file = &name;
      formatted.emplace_back(&text, std::async(std::launch::async, [in, file] { return format_source(*in, *file); }));
    }
    for (auto& [text, f] : formatted) *text = f.get();
  }

  std::string part_list;
  for (const std::string& f : extra_sources) part_list += (part_list.empty() ? "" : " ") + f;
  std::string makefile = read_text_file(data / "Makefile.gen");
  makefile = replace_all(makefile, "@NAME@", n);
  makefile = replace_all(makefile, "@ARCHS@", join_ints(m.archs, " "));
  makefile = replace_all(makefile, "@PARTS@", part_list);
  makefile = replace_all(makefile, "@WEIGHTS_EMBEDDED@", o.weights_file ? "0" : "1");
  makefile = replace_all(makefile, "@SOURCE@", m.source);
  files["Makefile"] = makefile;
  // CMakeLists.txt, the pkg-config files, the Python module, the folder's README (codegen/embed.h);
  // CMake compiles the sources the Makefile does.
  add_embedding_files(EmbedInfo{n, m.source, m.archs, split_words(part_list), o.weights_file, s.inputs, s.outputs},
                      data / "embed", files);

  if (!m.multi()) {
    ReportInfo info{m.source, o.weights_file, static_cast<int>(m.parts.size()), launches[0], "report.svg"};
    files["report.json"] = report_json(s, info);
    files["report.md"] = report_markdown(s, info);
    files["report.svg"] = report_graph_svg(s);
  } else {
    std::vector<ProfileReport> reports;
    for (std::size_t i = 0; i < m.profiles.size(); ++i) {
      const ProfileUnit& u = m.profiles[i];
      const std::string svg = "report_b" + std::to_string(u.s->batch) + ".svg";  // each profile's kernel graph
      reports.push_back({u.s, ReportInfo{m.source, o.weights_file, static_cast<int>(u.parts.size()), launches[i], svg},
                         u.parts.empty() ? std::vector<std::string>{u.prefix} : std::vector<std::string>{}});
      files[svg] = report_graph_svg(*u.s);
      for (std::size_t p = 0; p < u.parts.size(); ++p) reports.back().sources.push_back(u.prefix + "_part" + std::to_string(p));
    }
    files["report.json"] = report_json_profiles(reports);
    files["report.md"] = report_markdown_profiles(reports);
  }
  add_runtime(data / "runtime_stub", files);
  // A plugin's headers (KernelLaunches::own_headers), and the templates they include.
  for (const auto& [path, text] : own_headers) {
    headers.erase(path);
    files["kernels/" + path] = text;
    for (const std::string& dep : quoted_includes(text)) {
      if (!own_headers.count(dep) && fs::is_regular_file(data / "templates" / dep)) headers.insert(dep);
    }
  }
  if (!headers.empty()) add_kernel_headers(data / "templates", headers, files);
  if (sources) {
    sources->assign({n + ".cu"});
    sources->insert(sources->end(), extra_sources.begin(), extra_sources.end());
  }
  return files;
}

}  // namespace

std::map<std::string, std::string> render_model(const Schedule& s, const EmitOptions& o) {
  return render({&s}, o, nullptr);
}

std::map<std::string, std::string> render_profiles(const std::vector<const Schedule*>& profiles, const EmitOptions& o) {
  return render(profiles, o, nullptr);
}

namespace {

bool same_content(const fs::path& p, const std::string& text) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) != text.size()) return false;
  return read_text_file(p) == text;
}

// A folder emit_model may replace: empty, or a previous output (report.json says modelc wrote it).
bool replaceable(const fs::path& dir) {
  if (fs::is_empty(dir)) return true;
  const fs::path report = dir / "report.json";
  if (!fs::is_regular_file(report)) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(report));
    return j.is_object() && j.value("generator", "") == "modelc";
  } catch (const std::exception&) {
    return false;
  }
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) throw Error("cannot write " + p.string());
}


// Writes the weights blob to `p` without holding it in memory; true when `old` holds the same bytes.
bool write_weights(const fs::path& p, const Schedule& s, const fs::path& old) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  std::error_code ec;
  std::ifstream previous;
  bool same = fs::is_regular_file(old, ec) && fs::file_size(old, ec) == static_cast<uintmax_t>(s.weights_bytes);
  if (same) previous.open(old, std::ios::binary);
  std::vector<char> buf;
  for_each_blob_piece(s, [&](const uint8_t* data, std::size_t n) {
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
    if (!same) return;
    buf.resize(n);
    previous.read(buf.data(), static_cast<std::streamsize>(n));
    same = previous && std::memcmp(buf.data(), data, n) == 0;
  });
  f.close();
  if (!f) throw Error("cannot write " + p.string());
  return same;
}

}  // namespace

EmitResult emit_model(const Schedule& s, const std::string& dir, const EmitOptions& o) { return emit_profiles({&s}, dir, o); }

EmitResult emit_profiles(const std::vector<const Schedule*>& profiles, const std::string& dir, const EmitOptions& o) {
  std::vector<std::string> sources;
  const std::map<std::string, std::string> files = render(profiles, o, &sources);
  const Schedule& s = *profiles.back();
  const std::string bin = s.name + "_weights.bin";

  fs::path out = fs::absolute(fs::path(dir)).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();
  const fs::path parent = out.parent_path();
  const std::string base = out.filename().string();
  const std::string suffix = ".modelc-" + std::to_string(static_cast<long>(getpid()));
  const fs::path tmp = parent / ("." + base + suffix + ".new");
  const fs::path old = parent / ("." + base + suffix + ".old");
  EmitResult result;
  result.dir = out.string();
  try {
    fs::create_directories(parent);
    const bool exists = fs::exists(out);
    if (exists && (!fs::is_directory(out) || !replaceable(out))) {
      throw Error("the output folder " + out.string() + " exists and is not a modelc output",
                  "choose another folder with -o, or remove it");
    }
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    // Unchanged files keep their time stamps: make rebuilds only what changed.
    for (const auto& [name, text] : files) {
      const fs::path p = tmp / name;
      write_file(p, text);
      if (exists && same_content(out / name, text)) fs::last_write_time(p, fs::last_write_time(out / name));
      result.files.push_back(name);
    }
    if (write_weights(tmp / bin, s, out / bin) && exists) fs::last_write_time(tmp / bin, fs::last_write_time(out / bin));
    result.files.push_back(bin);
    std::sort(result.files.begin(), result.files.end());
    if (exists) {
      fs::remove_all(old);
      fs::rename(out, old);
    }
    fs::rename(tmp, out);
    if (exists) {
      // Keep the previous build (objects per arch set) and products; best effort.
      std::error_code ec;
      for (const std::string& keep : {std::string("build"), s.name, s.name + "_emu", "lib" + s.name + ".a",
                                      "lib" + s.name + "_emu.a", "lib" + s.name + ".so", "lib" + s.name + "_emu.so"}) {
        if (fs::exists(old / keep, ec) && !fs::exists(out / keep, ec)) fs::rename(old / keep, out / keep, ec);
      }
      fs::remove_all(old, ec);
    }
  } catch (const fs::filesystem_error& e) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw Error(std::string("cannot write the output folder ") + out.string() + ": " + e.what());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  result.cuda_sources = sources;
  result.parts = static_cast<int>(sources.size()) - 1;
  return result;
}

}  // namespace modelc

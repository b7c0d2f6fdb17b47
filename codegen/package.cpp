// codegen/package.cpp — the generated folder around the kernels' code (codegen/emitter.cpp): the
// files' fixed text comes from the data folder's embed/*.in templates, the C API from its table
// (codegen/c_api.h), and this file fills in the model: NAME.h, NAME.cu (the kernels of a model that
// fits one file, its tables, its mc::ModelInfo and the C API's definitions), the parts and batch
// profiles' files, NAME_main.cu, NAME_weights.h/.S, the Makefile, the embedding files (embed.h), the
// reports, runtime/ and kernels/. render() makes the text; emit_profiles() writes it, atomically.
#include "codegen/emitter.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "codegen/c_api.h"
#include "codegen/embed.h"
#include "codegen/format.h"
#include "codegen/kernel_code.h"
#include "codegen/literals.h"
#include "codegen/report.h"
#include "codegen/report_graph.h"
#include "schedule/cost_model.h"
#include "schedule/profiles.h"
#include "schedule/target.h"
#include "support/build_paths.h"
#include "support/data_dir.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc {

namespace {

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

/// The compute capabilities of --arch as the Makefile's ARCHS spells them ("75", "90a"), ascending.
std::vector<std::string> sorted_archs(const Schedule& s) {
  std::set<std::pair<int, bool>> a;
  for (const std::string& x : s.archs) {
    if (x.size() < 4 || x.compare(0, 3, "sm_") != 0) throw Error("internal: arch '" + x + "'");
    a.insert({std::stoi(x.substr(3)), x.back() == 'a'});
  }
  if (a.empty()) throw Error("internal: no --arch");
  std::vector<std::string> r;
  for (const auto& x : a) r.push_back(std::to_string(x.first) + (x.second ? "a" : ""));
  return r;
}

/// The arch whose PTX the binary embeds: the newest that is not arch-specific (sm_90a's PTX would
/// run on 9.0 only), 0 for none.
int ptx_arch(const std::vector<std::string>& archs) {
  int p = 0;
  for (const std::string& a : archs)
    if (a.back() != 'a') p = std::stoi(a);
  return p;
}

std::string join_words(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
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
  std::vector<std::string> archs;  ///< "75", "90a"
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

// The facts of the model its C API's texts depend on (codegen/c_api.h).
ApiModel api_model(const Model& m) {
  return ApiModel{m.name, m.o.weights_file, m.multi(), m.profiles.back().batch};
}

// NAME.h (embed/model.h.in): the tensors, the batch it runs, and the declarations of the C API.
std::string header_file(const Model& m, const fs::path& embed) {
  const std::string& n = m.name;
  std::string tensors;
  for (const ModelTensor& t : m.s.inputs) tensors += "///   " + tensor_line(m, t, "input ") + "\n";
  for (const ModelTensor& t : m.s.outputs) tensors += "///   " + tensor_line(m, t, "output") + "\n";
  std::string batches;
  for (const ProfileUnit& u : m.profiles) batches += (batches.empty() ? "" : ", ") + std::to_string(u.batch);
  std::string batch;
  if (m.multi()) {
    const std::string largest = std::to_string(m.profiles.back().batch);
    batch += "/// Batch profiles " + batches + ": the model is compiled for each of these batch sizes (its kernels\n";
    batch += "/// specialised to each one's shapes, one weights blob). " + n + "_run_batch runs any batch from 1 to " +
             largest + "\n";
    batch += "/// on the smallest profile that holds it (inputs padded with zeros along their first dim, outputs\n";
    batch += "/// trimmed); the shapes above are at batch " + largest + ", the largest, which " + n + "_run and " + n +
             "_run_host run.\n";
  } else {
    batch += "/// Compiled for batch " + batches + " (" + n + "_profile_batch(0)); compile with --batch 1,8,32 (batch\n";
    batch += "/// profiles) to run several batch sizes.\n";
  }
  std::string guard = "MODELC_" + n + "_H_";
  for (char& ch : guard) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return render_embed_template(embed, "model.h.in",
                               {{"NAME", n},
                                {"SOURCE", comment(m.source)},
                                {"TENSORS", tensors},
                                {"BATCH_NOTE", batch},
                                {"GUARD", guard},
                                {"DECLARATIONS", api_declarations(api_model(m))}});
}

// Profile `p`'s taps (runtime.h TapInfo): every output view of every kernel, in order, as the
// graph's value and where the kernel stores it; *count gets how many.
std::string tap_table(const Schedule& s, int p, int* count) {
  const std::string n = std::to_string(p);
  std::string dims, taps;
  int64_t at = 0;
  *count = 0;
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    for (const TensorView& v : s.kernels[k].outputs) {
      if (v.dtype == DType::undefined) continue;  // an absent optional output
      if (v.space != Space::arena && v.space != Space::output) {
        throw Error("internal: kernel " + s.kernels[k].id + " writes '" + v.value + "' outside the arena and the outputs");
      }
      std::vector<int64_t> strides = v.strides;
      if (strides.size() != v.shape.size()) {  // dense: C order
        strides.assign(v.shape.size(), 1);
        for (std::size_t d = v.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * v.shape[d];
      }
      std::string shape_text, stride_text;
      for (std::size_t d = 0; d < v.shape.size(); ++d) {
        if (strides[d] < 0) throw Error("internal: kernel " + s.kernels[k].id + " writes '" + v.value + "' with a negative stride");
        shape_text += std::to_string(v.shape[d]) + ", ";
        stride_text += std::to_string(strides[d]) + ", ";
      }
      const int64_t rank = static_cast<int64_t>(v.shape.size());
      if (rank > 0) dims += "    " + shape_text + stride_text + " // t" + std::to_string(*count) + ": shape, strides\n";
      taps += "    {" + std::to_string(k) + ", " + c_string(v.value) + ", " + std::to_string(static_cast<int>(v.dtype)) + ", " +
              std::to_string(rank) + ", kTapDims" + n + " + " + std::to_string(at) + ", kTapDims" + n + " + " +
              std::to_string(at + rank) + ", " + (v.space == Space::output ? "mc::kTapOutput, " : "mc::kTapArena, ") +
              std::to_string(v.space == Space::output ? v.index : 0) + ", " + std::to_string(v.offset) + "u},  // " +
              comment(s.kernels[k].id) + "\n";
      at += 2 * rank;
      ++*count;
    }
  }
  std::string r = "const int64_t kTapDims" + n + "[] = {\n" + (dims.empty() ? "    0,  // none\n" : dims) + "};\n";
  r += "const mc::TapInfo kTaps" + n + "[] = {\n" +
       (taps.empty() ? "    {-1, \"\", 0, 0, kTapDims" + n + ", kTapDims" + n + ", mc::kTapArena, 0, 0u},  // none\n" : taps) +
       "};\n";
  return r;
}

// NAME_self_test.h (embed/model_self_test.h.in): the self-test's data as byte arrays, or none.
std::string self_test_file(const Model& m, const fs::path& embed) {
  const std::string& n = m.name;
  const std::optional<SelfTestData>& st = m.o.self_test;
  std::string data, self_test;
  if (!st) {
    self_test = "nullptr, nullptr, 0, 0, 0, " + c_string(m.o.no_self_test);
    return render_embed_template(embed, "model_self_test.h.in",
                                 {{"NAME", n}, {"ABOUT", comment(m.o.no_self_test)}, {"DATA", ""}, {"SELF_TEST", self_test}});
  }
  auto bytes = [&](const std::string& array, const Tensor& t, const ModelTensor& mt, const char* what) {
    if (t.dtype() != mt.dtype || t.shape() != mt.shape) {
      throw Error("internal: the self-test's " + std::string(what) + " '" + mt.name + "' is " + type_text(t.dtype(), t.shape()) +
                  ", the model's " + type_text(mt.dtype, mt.shape));
    }
    std::string a = "// " + std::string(what) + " " + comment("'" + mt.name + "' " + type_text(mt.dtype, mt.shape)) + ", " +
                    std::to_string(t.nbytes()) + " bytes\nconst unsigned char " + array + "[] = {";
    const uint8_t* p = t.raw();
    for (std::size_t i = 0; i < t.nbytes(); ++i) {
      char b[8];
      std::snprintf(b, sizeof b, "0x%02x,", p[i]);
      a += std::string(i % 16 == 0 ? "\n    " : " ") + b;
    }
    return a + (t.nbytes() == 0 ? "0};  // empty\n" : "\n};\n");
  };
  if (st->inputs.size() != m.s.inputs.size() || st->outputs.size() != m.s.outputs.size()) {
    throw Error("internal: the self-test's data have other inputs or outputs than the model");
  }
  std::string inputs, outputs;
  for (std::size_t i = 0; i < st->inputs.size(); ++i) {
    data += bytes("kSelfTestInput" + std::to_string(i), st->inputs[i], m.s.inputs[i], "input");
    inputs += (inputs.empty() ? "" : ", ") + std::string("kSelfTestInput") + std::to_string(i);
  }
  for (std::size_t i = 0; i < st->outputs.size(); ++i) {
    data += bytes("kSelfTestOutput" + std::to_string(i), st->outputs[i], m.s.outputs[i], "output");
    outputs += (outputs.empty() ? "" : ", ") + std::string("kSelfTestOutput") + std::to_string(i);
  }
  data += "const unsigned char* const kSelfTestInputs[] = {" + (inputs.empty() ? "nullptr" : inputs) + "};\n";
  data += "const unsigned char* const kSelfTestOutputs[] = {" + (outputs.empty() ? "nullptr" : outputs) + "};\n";
  char tolerance[96];
  std::snprintf(tolerance, sizeof tolerance, "%g, %g, %g", st->rtol, st->atol, st->max_rel_l2);
  self_test = "kSelfTestInputs, kSelfTestOutputs, " + std::string(tolerance) + ", " + c_string(st->about);
  return render_embed_template(embed, "model_self_test.h.in",
                               {{"NAME", n}, {"ABOUT", comment(st->about)}, {"DATA", data + "\n"}, {"SELF_TEST", self_test}});
}

// NAME.cu (embed/model.cu.in): the kernels of a single profile that fits (else the declarations of
// the files that hold them), the tables of the model's tensors and profiles, its mc::ModelInfo and
// the definitions of the C API.
std::string main_cu_file(const Model& m, const std::vector<UnitCode>& units, const fs::path& embed) {
  const Schedule& s = m.s;
  const std::string& n = m.name;
  const KernelCode* code = units.size() == 1 ? units[0].code : nullptr;
  std::string summary;
  if (!m.multi()) {
    summary += "// " + std::to_string(s.kernels.size()) + " kernels" +
               (m.parts.empty() ? "" : " in " + std::to_string(m.parts.size()) + " parts (" + n + "_partK.cu)") +
               "; activation arena " + grouped(s.arena_bytes) + " bytes (all activations: " +
               grouped(s.activation_bytes_total) + "); weights " + grouped(s.weights_bytes) + " bytes in " +
               std::to_string(s.weights.size()) + " tensors.\n";
  } else {
    summary += "// Batch profiles (a run of b items runs on the smallest profile whose batch is at least b):\n";
    for (const ProfileUnit& u : m.profiles) {
      summary += "//   batch " + std::to_string(u.batch) + ": " + std::to_string(u.s->kernels.size()) + " kernels in " +
                 (u.parts.empty() ? u.prefix + ".cu" : std::to_string(u.parts.size()) + " parts (" + u.prefix + "_partK.cu)") +
                 ", activation arena " + grouped(u.s->arena_bytes) + " bytes\n";
    }
    summary += "// Activation arena " + grouped(m.arena_bytes()) + " bytes (the largest profile's); weights " +
               grouped(s.weights_bytes) + " bytes in " + std::to_string(s.weights.size()) +
               " tensors, shared by the profiles.\n";
  }
  for (const ModelTensor& t : s.inputs) summary += "//   " + tensor_line(m, t, "input ") + "\n";
  for (const ModelTensor& t : s.outputs) summary += "//   " + tensor_line(m, t, "output") + "\n";

  std::string embedded;
  if (!m.o.weights_file) {
    embedded += "// The weights (" + n + "_weights.h: where each tensor lies in them).\n";
    embedded += "extern \"C\" const unsigned char " + n + "_weights[];  // " + n + "_weights.S\n";
    embedded += "extern \"C\" const unsigned char " + n + "_weights_end[];\n\n";
  }

  // Each profile's enqueue and prepare functions: defined here, or declared (in PREFIX.cu).
  std::string c;
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

  std::string profiles, kernel_tables;
  for (std::size_t i = 0; i < m.profiles.size(); ++i) {
    const ProfileUnit& u = m.profiles[i];
    const std::string ids = "kKernelIds" + std::to_string(i);
    std::string list;
    for (const Kernel& k : u.s->kernels) list += (list.empty() ? "" : ", ") + c_string(k.id);
    kernel_tables += "const char* const " + ids + "[] = {" + (list.empty() ? "nullptr};  // none\n" : list + "};\n");
    int taps = 0;
    kernel_tables += tap_table(*u.s, static_cast<int>(i), &taps);
    profiles += "    {" + std::to_string(u.batch) + ", " + std::to_string(u.s->arena_bytes) + "u, " + u.prefix +
                "_enqueue, " + std::to_string(u.s->streams) + ", " + std::to_string(u.s->events) + ", " +
                (prepared[i] ? u.prefix + "_prepare" : std::string("nullptr")) + ", " +
                std::to_string(u.s->kernels.size()) + ", " + ids + ", " + std::to_string(taps) + ", kTaps" +
                std::to_string(i) +
                (u.s->zeroed_bytes > 0 ? ", /*zeroed*/ " + std::to_string(u.s->zeroed_offset) + "u, " +
                                             std::to_string(u.s->zeroed_bytes) + "u"
                                       : std::string()) +
                "},\n";
  }
  char sum[32];
  std::snprintf(sum, sizeof sum, "0x%016llxull", static_cast<unsigned long long>(m.checksum));
  return render_embed_template(
      embed, "model.cu.in",
      {{"NAME", n},
       {"SOURCE", comment(m.source)},
       {"SUMMARY", summary},
       {"KERNEL_INCLUDES", code ? "#include \"" + n + "_weights.h\"\n" + includes_of(code->headers) : ""},
       {"ARCHS", join_words(m.archs, "_")},
       {"PTX_ARCH", std::to_string(ptx_arch(m.archs))},
       {"EMBEDDED_WEIGHTS", embedded},
       {"KERNELS", c},
       {"TENSOR_TABLES", tensor_table(s.inputs, "Input", m.multi()) + tensor_table(s.outputs, "Output", m.multi())},
       {"KERNEL_TABLES", kernel_tables},
       {"PROFILES", profiles},
       {"ARENA_BYTES", std::to_string(m.arena_bytes())},
       {"ARENA_NOTE", m.multi() ? " (the largest profile's)" : ""},
       {"WEIGHTS_BYTES", std::to_string(s.weights_bytes)},
       {"WEIGHTS_CHECKSUM", sum},
       {"WEIGHTS_POINTER", m.o.weights_file ? "nullptr,  // weights read at create" : n + "_weights,"},
       {"NUM_INPUTS", std::to_string(s.inputs.size())},
       {"NUM_OUTPUTS", std::to_string(s.outputs.size())},
       {"NUM_PROFILES", std::to_string(m.profiles.size())},
       {"DEFINITIONS", api_definitions(api_model(m))}});
}

// "%.6g" of a figure of the estimates' table.
std::string figure(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The rate a kernel's FLOPs run at with `tactic` for the roofline (runtime/profile.h): its work's
// engine (schedule/cost_model.h), a Winograd kernel's GEMMs on tensor cores.
std::string roofline_engine(const Kernel& k, const Tactic& tactic) {
  if (std::holds_alternative<WinogradTactic>(tactic)) return "tensor_core";
  // The Hopper engine's FLOPs against the wgmma peak (the tensor-core rate, INT8's for s8): a
  // roofline's ceiling.
  if (const HopperTile* h = std::get_if<HopperTile>(&tactic)) return h->int8 ? "tensor_core_int8" : "tensor_core";
  const KernelWork w = kernel_work(k, tactic);
  return w.engine == Engine::tensor_core && w.int8 ? "tensor_core_int8" : engine_name(w.engine);
}

// NAME_main.cu's view of the kernels for --profile (runtime/profile.h mc_cli::Estimates): each
// --arch target's rates and, per profile and kernel, its id, family, tactic and the cost model's
// estimate on each target (the first's is report.json's "estimate").
std::string estimates_table(const Model& m) {
  const std::vector<Target> targets = targets_for(m.s.archs, false);
  std::string s = "// The cost model's view of the kernels, for --profile (runtime/profile.h): each --arch target's rates\n"
                  "// (compiler/schedule/target.cpp), and per kernel its estimate on each target with the tactic chosen\n"
                  "// there (report.json's \"estimate\" is the first target's).\n";
  s += "const mc_cli::TargetRates kTargets[] = {\n";
  for (const Target& t : targets) {
    s += "    {" + std::to_string(t.sm) + ", " + c_string(t.part) + ", " + figure(t.dram_gbps) + ", " +
         figure(t.tc_fp16_tflops) + ", " + figure(t.tc_int8_tops) + ", " + figure(t.fp32_tflops) + "},\n";
  }
  s += "};\n// {sm, part, DRAM GB/s, FP16 tensor-core TFLOPS, INT8 tensor-core TOPS, FP32 TFLOPS}\n";
  std::string profiles;
  for (std::size_t i = 0; i < m.profiles.size(); ++i) {
    const Schedule& p = *m.profiles[i].s;
    const std::string n = std::to_string(i);
    std::string estimates, kernels;
    for (std::size_t k = 0; k < p.kernels.size(); ++k) {
      const Kernel& kernel = p.kernels[k];
      for (std::size_t t = 0; t < targets.size(); ++t) {
        const auto at = kernel.arch_tactic.find(targets[t].sm);
        const Tactic& tactic = at != kernel.arch_tactic.end() ? at->second : kernel.tactic;
        const Estimate e = t == 0 ? kernel.estimate : estimate_kernel(kernel, targets[t]);
        estimates += "    {" + figure(e.us) + ", " + figure(e.flops) + ", " + figure(e.bytes) + ", " +
                     c_string(roofline_engine(kernel, tactic)) + "},  // " + comment(kernel.id) + " sm_" +
                     std::to_string(targets[t].sm) + "\n";
      }
      std::string tactic;
      for (const auto& [key, value] : tactic_fields(kernel.tactic)) {
        tactic += (tactic.empty() ? "" : " ") + key + "=" + std::to_string(value);
      }
      kernels += "    {" + c_string(kernel.id) + ", " + c_string(kernel.family_name()) + ", " + c_string(tactic) + ", kEstimates" +
                 n + " + " + std::to_string(k * targets.size()) + "},\n";
    }
    if (p.kernels.empty()) {
      estimates = "    {0, 0, 0, \"\"},  // none\n";
      kernels = "    {\"\", \"\", \"\", kEstimates" + n + "},  // none\n";
    }
    s += "// Batch profile " + std::to_string(i) + ": {us, FLOPs, bytes, engine} per kernel and target.\n";
    s += "const mc_cli::KernelEstimate kEstimates" + n + "[] = {\n" + estimates + "};\n";
    s += "const mc_cli::KernelFacts kKernels" + n + "[] = {\n" + kernels + "};\n";
    profiles += "    {" + std::to_string(p.kernels.size()) + ", kKernels" + n + "},\n";
  }
  s += "const mc_cli::ProfileFacts kProfileFacts[] = {\n" + profiles + "};\n";
  s += "const mc_cli::Estimates kEstimates = {" + std::to_string(targets.size()) + ", kTargets, " +
       std::to_string(m.profiles.size()) + ", kProfileFacts};\n";
  return s;
}

// NAME_main.cu (embed/model_main.cu.in): runtime/cli.h's table of the C API, and the estimates.
std::string cli_file(const Model& m, const fs::path& embed) {
  return render_embed_template(embed, "model_main.cu.in",
                               {{"NAME", m.name},
                                {"WRAPPERS", cli_wrappers(api_model(m))},
                                {"ESTIMATES", estimates_table(m)},
                                {"TABLE", cli_table(api_model(m))}});
}

std::string weights_header(const Model& m, const WeightNames& names, const fs::path& embed) {
  std::string offsets;
  for (std::size_t i = 0; i < m.s.weights.size(); ++i) {
    const WeightEntry& w = m.s.weights[i];
    offsets += "constexpr size_t " + names.names()[i] + " = " + std::to_string(w.offset) + ";  // " +
               comment(type_text(w.data.dtype(), w.data.shape()) + " '" + w.value + "'") + "\n";
  }
  if (m.s.weights.empty()) offsets += "// (none)\n";
  offsets.pop_back();  // the template ends the line
  return render_embed_template(embed, "model_weights.h.in", {{"NAME", m.name}, {"OFFSETS", offsets}});
}

std::string weights_asm(const Model& m, const fs::path& embed) {
  return render_embed_template(embed, "model_weights.S.in",
                               {{"NAME", m.name}, {"WEIGHTS_BYTES", std::to_string(m.s.weights_bytes)}});
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

}  // namespace

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

std::string read_text_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text_file(const fs::path& p, const std::string& text) {
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f) throw Error("cannot write " + tmp.string());
  }
  fs::rename(tmp, p);
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
  const fs::path embed = data / "embed";
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
      KernelCode code = kernel_code(u.prefix, all, pointers, 0);
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
    int first = 0;  // the part's first kernel's index in the profile
    for (std::size_t p = 0; p < u.parts.size(); ++p) {
      const KernelCode code = kernel_code(u.prefix, u.parts[p], pointers, first);
      first += static_cast<int>(u.parts[p].size());
      headers.insert(code.headers.begin(), code.headers.end());
      own_headers.insert(code.own_headers.begin(), code.own_headers.end());
      launches[i].insert(code.launches.begin(), code.launches.end());
      const std::string file = u.prefix + "_part" + std::to_string(p) + ".cu";
      files[file] = part_file(m, u, static_cast<int>(p), code);
      extra_sources.push_back(file);
      uc.parts_prepared.push_back(!code.prepare.empty());
    }
  }
  files[n + ".cu"] = main_cu_file(m, units, embed);
  files[n + ".h"] = header_file(m, embed);
  files[n + "_weights.h"] = weights_header(m, weight_names, embed);
  files[n + "_main.cu"] = cli_file(m, embed);
  const std::string self_test_name = n + "_self_test.h";  // data: written as they are, not formatted
  if (!o.weights_file) files[n + "_weights.S"] = weights_asm(m, embed);
  if (o.format) {
    // One file per task: libFormat takes a while on big models; the results do not depend on it.
    std::vector<std::pair<std::string*, std::future<std::string>>> formatted;
    for (auto& [name, text] : files) {
      const bool code = (name.size() > 3 && name.compare(name.size() - 3, 3, ".cu") == 0) ||
                        (name.size() > 2 && name.compare(name.size() - 2, 2, ".h") == 0);
      if (!code || name == self_test_name) continue;
      const std::string* in = &text;
      const std::string* file = &name;
      formatted.emplace_back(&text, std::async(std::launch::async, [in, file] { return format_source(*in, *file); }));
    }
    for (auto& [text, f] : formatted) *text = f.get();
  }

  files[self_test_name] = self_test_file(m, embed);

  std::string part_list;
  for (const std::string& f : extra_sources) part_list += (part_list.empty() ? "" : " ") + f;
  std::string makefile = read_text_file(data / "Makefile.gen");
  makefile = replace_all(makefile, "@NAME@", n);
  makefile = replace_all(makefile, "@ARCHS@", join_words(m.archs, " "));
  makefile = replace_all(makefile, "@PARTS@", part_list);
  makefile = replace_all(makefile, "@WEIGHTS_EMBEDDED@", o.weights_file ? "0" : "1");
  makefile = replace_all(makefile, "@SOURCE@", m.source);
  files["Makefile"] = makefile;
  // CMakeLists.txt, the pkg-config files, the Python module, the folder's README (codegen/embed.h);
  // CMake compiles the sources the Makefile does.
  add_embedding_files(EmbedInfo{n, m.source, m.archs, split_words(part_list), o.weights_file, s.inputs, s.outputs},
                      embed, files);

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

}  // namespace

bool has_marker(const fs::path& dir, const std::string& file) {
  const fs::path report = dir / file;
  if (!fs::is_regular_file(report)) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(read_text_file(report));
    return j.is_object() && j.value("generator", "") == "modelc";
  } catch (const std::exception&) {
    return false;
  }
}

namespace {

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

FolderWrite write_folder(const std::string& dir, const std::map<std::string, std::string>& files,
                         const std::function<bool(const fs::path&)>& replaceable_folder,
                         const std::vector<std::string>& keep, const MoreFiles& more) {
  fs::path out = fs::absolute(fs::path(dir)).lexically_normal();
  if (out.filename().empty()) out = out.parent_path();
  const fs::path parent = out.parent_path();
  const std::string base = out.filename().string();
  const std::string suffix = ".modelc-" + std::to_string(static_cast<long>(getpid()));
  const fs::path tmp = parent / ("." + base + suffix + ".new");
  const fs::path old = parent / ("." + base + suffix + ".old");
  FolderWrite result;
  result.dir = out.string();
  try {
    fs::create_directories(parent);
    const bool exists = fs::exists(out);
    if (exists && (!fs::is_directory(out) || !(fs::is_empty(out) || replaceable_folder(out)))) {
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
    if (more) {
      for (std::string& f : more(tmp, exists ? out : fs::path())) result.files.push_back(std::move(f));
    }
    std::sort(result.files.begin(), result.files.end());
    if (exists) {
      fs::remove_all(old);
      fs::rename(out, old);
    }
    fs::rename(tmp, out);
    if (exists) {
      // Keep the previous build (objects per arch set) and products; best effort.
      std::error_code ec;
      for (const std::string& k : keep) {
        if (fs::exists(old / k, ec) && !fs::exists(out / k, ec)) fs::rename(old / k, out / k, ec);
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
  return result;
}

EmitResult emit_profiles(const std::vector<const Schedule*>& profiles, const std::string& dir, const EmitOptions& o) {
  std::vector<std::string> sources;
  const std::map<std::string, std::string> files = render(profiles, o, &sources);
  const Schedule& s = *profiles.back();
  const std::string bin = s.name + "_weights.bin";
  const std::vector<std::string> keep = {"build", s.name, s.name + "_emu", "lib" + s.name + ".a", "lib" + s.name + "_emu.a",
                                         "lib" + s.name + ".so", "lib" + s.name + "_emu.so"};
  const FolderWrite w = write_folder(
      dir, files, [](const fs::path& d) { return has_marker(d, "report.json"); }, keep,
      [&](const fs::path& tmp, const fs::path& previous) {
        if (write_weights(tmp / bin, s, previous.empty() ? fs::path() : previous / bin) && !previous.empty()) {
          fs::last_write_time(tmp / bin, fs::last_write_time(previous / bin));
        }
        return std::vector<std::string>{bin};
      });
  EmitResult result;
  result.dir = w.dir;
  result.files = w.files;
  result.cuda_sources = sources;
  result.parts = static_cast<int>(sources.size()) - 1;
  return result;
}

}  // namespace modelc
// codegen/tune.cpp — the tuning folder (see tune.h): the candidates of each tuned kernel, printed
// by the kernel's own family (codegen/families/) as kernels of their own on buffers of the
// kernel's sizes, the driver's tables, the Makefile and README from the data folder's embed/.
#include "codegen/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "codegen/embed.h"
#include "codegen/emitter.h"
#include "codegen/kernel_code.h"
#include "schedule/tactics.h"
#include "schedule/target.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc {

namespace {

/// One buffer of a signature's scratch arena: where it lies, its bytes and element type, and what
/// the driver fills it with (tune.h mc::tune::Region).
struct Region {
  int64_t offset = 0, bytes = 0;
  DType dtype = DType::undefined;
  bool data = true;  ///< random data (an operand); false: zeros (a workspace)
  std::string what;  ///< the value it holds (the table's comment)
  /// The elements the kernel's contract says are zero are those outside these runs, per period
  /// (a channels-last buffer's padded channels, an OHWI weight's padding): element i is data when
  /// (i % period) lies in [r * run_pitch, r * run_pitch + run_len) for some r < runs. period 0:
  /// every element is data.
  int64_t period = 0, runs = 0, run_pitch = 0, run_len = 0;
};

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// The data runs of a buffer whose layout pads it (tune.h Region): an OHWI weight's taps, or a
// channels-last activation's channels below the pitch.
void set_runs(Region& r, const Buffer& b) {
  if (b.ohwi && b.shape.size() >= 2) {
    int64_t taps = 1;
    for (std::size_t d = 2; d < b.shape.size(); ++d) taps *= b.shape[d];
    r.period = b.ohwi->row;
    r.runs = taps;
    r.run_pitch = b.ohwi->pitch;
    r.run_len = b.shape[1];
  } else if (b.storage.channels_last && b.shape.size() >= 2 && b.storage.pitch > b.shape[1]) {
    r.period = b.storage.pitch;
    r.runs = 1;
    r.run_pitch = 0;
    r.run_len = b.shape[1];
  }
}

/// A signature's scratch arena: every buffer the kernel touches (its operands' and outputs'
/// buffers, whatever their space in the model) at an offset of its own, and the largest workspace
/// its candidates need; `k` rewritten to address them.
struct Scratch {
  std::vector<Region> regions;
  int64_t bytes = 0;
  int64_t workspace_offset = -1;
  std::vector<TensorView> outputs;  ///< the kernel's outputs as placed here (the driver compares them)
};

Scratch place_scratch(const Schedule& s, const Kernel& k, Kernel& placed) {
  Scratch sc;
  std::map<int, int64_t> at;  // buffer -> its offset here
  auto place = [&](TensorView& v) {
    if (v.dtype == DType::undefined) return;
    if (v.buffer < 0 || v.buffer >= static_cast<int>(s.buffers.size())) {
      throw k.error("internal: tune: operand '" + v.value + "' has no buffer");
    }
    auto it = at.find(v.buffer);
    if (it == at.end()) {
      const Buffer& b = s.buffers[static_cast<std::size_t>(v.buffer)];
      Region r;
      r.offset = sc.bytes;
      r.bytes = std::max<int64_t>(b.bytes, 1);
      r.dtype = b.dtype == DType::undefined ? v.dtype : b.dtype;
      r.what = b.name;
      set_runs(r, b);
      sc.regions.push_back(r);
      sc.bytes = align_up(sc.bytes + r.bytes, kBufferAlignment);
      it = at.emplace(v.buffer, r.offset).first;
    }
    v.space = Space::arena;
    v.index = 0;
    v.offset = it->second + v.buffer_offset;
  };
  for (TensorView& v : placed.inputs) place(v);
  for (TensorView& v : placed.outputs) place(v);
  sc.outputs = placed.outputs;
  int64_t workspace = 0;
  for (const TcCandidate& c : k.tune_candidates) workspace = std::max(workspace, c.workspace_bytes);
  if (workspace > 0) {
    Region r;
    r.offset = sc.bytes;
    r.bytes = workspace;
    r.dtype = DType::float32;
    r.data = false;
    r.what = "split-K partial sums";
    sc.workspace_offset = r.offset;
    sc.regions.push_back(r);
    sc.bytes = align_up(sc.bytes + workspace, kBufferAlignment);
  }
  return sc;
}

// Kernel k without a row norm (fuse_row_norm): the candidates time the product, whose tiles are
// what they choose (the LayerNorm in its tail reads the same rows whichever tile wrote them).
Kernel product_only(const Kernel& k) {
  Kernel p = k;
  if (!p.row_norm.active) return p;
  p.row_norm = RowNorm{};
  p.inputs.resize(std::min<std::size_t>(p.inputs.size(), kRowNormGammaInput));
  p.outputs.resize(1);
  return p;
}

// Kernel `k` with candidate `c`, named `id`, on the scratch arena (its views already placed in
// `placed`), on the driver's one stream.
Kernel candidate_kernel(const Kernel& placed, const Scratch& sc, const TcCandidate& c, const std::string& id) {
  Kernel kc = placed;
  kc.id = id;
  kc.tactic = c.tile;
  kc.arch_tactic.clear();
  kc.estimate = c.estimate;
  kc.stream = 0;
  kc.waits.clear();
  kc.event = -1;
  kc.workspace_bytes = c.workspace_bytes;
  if (c.workspace_bytes > 0) {
    kc.workspace = TensorView{"split-K partial sums", DType::float32, {c.workspace_bytes / 4}, {1}, Space::arena, 0,
                              sc.workspace_offset, -1, 0};
  } else {
    kc.workspace = TensorView{"", DType::undefined, {}, {}, Space::arena, 0, 0};
  }
  // The candidates are tc::Gemm tiles: no small-M tickets.
  kc.zeroed_bytes = 0;
  kc.zeroed = TensorView{"", DType::undefined, {}, {}, Space::arena, 0, 0};
  kc.note = fmt::format("tune candidate: {}; estimate {:.2f} us", c.tile.name(), c.estimate.us);
  return kc;
}

// The tolerance of a candidate's output against the cost model's choice: the same products in
// another order (tiles, split-K) differ by the rounding of the stored type, scaled by the output's
// largest magnitude (atol) where values cancel.
std::pair<double, double> tolerance(DType t, bool fp16_accumulate) {
  if (t == DType::int8 || t == DType::uint8 || t == DType::int32) return {0, 1};  // exact products; 1 for rounding
  if (fp16_accumulate) return {3e-2, 1e-2};
  if (t == DType::bfloat16) return {2e-2, 4e-3};
  if (t == DType::float16) return {5e-3, 1e-3};
  return {1e-4, 1e-5};
}

std::string number(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

std::vector<const Kernel*> tuned_kernels(const Schedule& s) {
  std::vector<const Kernel*> r;
  std::set<std::string> seen;
  for (const Kernel& k : s.kernels) {
    if (k.tune_candidates.empty() || k.tuning_signature.empty()) continue;
    if (seen.insert(k.tuning_signature).second) r.push_back(&k);
  }
  return r;
}

std::map<std::string, std::string> render_tuning(const Schedule& s, const TuneOptions& o) {
  const std::vector<const Kernel*> tuned = tuned_kernels(s);
  if (tuned.empty()) {
    throw Error("modelc tune: " + s.name + " has no tensor-core convolution or matrix product on " +
                    (s.archs.empty() ? std::string("?") : s.archs.front()) + ", the kernels the tuner times",
                "report.md says each product's engine and why; FP32 products run SIMT (--fp16, --bf16 on sm_80 or "
                "newer, or --int8 put them on tensor cores), and products of at most 8 rows run the GEMV");
  }
  const fs::path data = o.data_dir.empty() ? fs::path(data_dir()) : fs::path(o.data_dir);
  const std::string& name = s.name;
  const std::string arch = s.archs.front();
  const int sm = arch_number(arch);
  std::map<std::string, std::string> files;
  std::set<std::string> headers;
  std::vector<std::string> sources;
  std::string tables, declarations;
  nlohmann::ordered_json manifest;
  manifest["generator"] = "modelc";
  manifest["modelc_tuning_folder"] = 1;
  manifest["model"] = fs::path(o.source).filename().string();
  manifest["name"] = name;
  manifest["arch"] = arch;
  manifest["flags"] = o.flags;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  const std::vector<WeightEntry> no_weights;
  const WeightNames weight_names(no_weights);
  const ViewPointers pointers(weight_names);
  std::string signature_rows;
  for (std::size_t si = 0; si < tuned.size(); ++si) {
    const Kernel k = product_only(*tuned[si]);
    Kernel placed = k;
    const Scratch sc = place_scratch(s, k, placed);
    // Every candidate printed by the kernel's family, one file per signature.
    KernelCode merged;
    std::string functions, candidate_rows;
    std::set<std::string> seen_declarations;
    nlohmann::ordered_json cands = nlohmann::ordered_json::array();
    for (std::size_t ci = 0; ci < k.tune_candidates.size(); ++ci) {
      const TcCandidate& c = k.tune_candidates[ci];
      const std::string id = fmt::format("s{}_c{}", si, ci);
      const Kernel kc = candidate_kernel(placed, sc, c, id);
      const KernelCode code = kernel_code(name, {&kc}, pointers, 0);
      merged.headers.insert(code.headers.begin(), code.headers.end());
      for (const std::string& d : code.declarations) {
        if (seen_declarations.insert(d).second) merged.declarations.push_back(d);
      }
      merged.entries += code.entries;
      const std::string fn = name + "_" + id;
      functions += "\n// candidate " + std::to_string(ci) + (ci == 0 ? " (the cost model's choice)" : "") + ": " +
                   c.tile.name() + "\n";
      functions += enqueue_function(fn + "_enqueue", code, false);
      functions += prepare_function(fn + "_prepare", "  static_cast<void>(mc_status);\n" + code.prepare, false);
      declarations += "int " + fn + "_enqueue(mc::Status&, const mc::Bindings&, cudaStream_t);\nint " + fn +
                      "_prepare(mc::Status&);\n";
      candidate_rows += fmt::format("    {{{}, {}, {}, {}_enqueue, {}_prepare}},\n", c_string(c.tile.name()),
                                    number(c.estimate.us), c.workspace_bytes, fn, fn);
      cands.push_back({{"tactic", c.tile.name()}, {"estimate_us", c.estimate.us}, {"workspace_bytes", c.workspace_bytes}});
    }
    headers.insert(merged.headers.begin(), merged.headers.end());
    const std::string file = fmt::format("{}_tune_s{}.cu", name, si);
    sources.push_back(file);
    std::string text = "// " + file + ": the candidates of " + comment(k.tuning_signature) + " (kernel " + k.id +
                       " of " + name + "), generated by modelc tune. Do not edit: run modelc tune again.\n";
    text += "#include \"runtime/runtime.h\"\n" + includes_of(merged.headers) + "\n";
    text += declarations_of(merged) + functions;
    files[file] = text;

    // The driver's tables for this signature.
    const std::string p = fmt::format("kS{}", si);
    tables += "\n// " + comment(k.tuning_signature) + ": kernel " + k.id + " (" + k.family_name() + ") " +
              comment(k.nodes.empty() ? std::string() : k.nodes.front()) + "\n";
    tables += "const mc::tune::Region " + p + "Regions[] = {\n";
    for (const Region& r : sc.regions) {
      tables += fmt::format("    {{{}u, {}u, {}, {}, {}, {}, {}, {}}},  // {}\n", r.offset, r.bytes,
                            static_cast<int>(r.dtype), r.data ? 1 : 0, r.period, r.runs, r.run_pitch, r.run_len,
                            comment(r.what));
    }
    tables += "};\n";
    std::string dims;
    std::string outputs;
    int64_t dim_at = 0;
    int num_outputs = 0;
    for (const TensorView& v : sc.outputs) {
      if (v.dtype == DType::undefined) continue;
      ++num_outputs;
      for (int64_t d : v.shape) dims += std::to_string(d) + ", ";
      for (int64_t d : v.strides) dims += std::to_string(d) + ", ";
      const auto tol = tolerance(v.dtype, k.tune_candidates.front().tile.fp16_accumulate);
      outputs += fmt::format("    {{{}u, {}, {}, {}Dims + {}, {}Dims + {}, {}, {}}},  // {}\n", v.offset,
                             static_cast<int>(v.dtype), v.shape.size(), p, dim_at, p,
                             dim_at + static_cast<int64_t>(v.shape.size()), number(tol.first), number(tol.second),
                             comment(v.value));
      dim_at += 2 * static_cast<int64_t>(v.shape.size());
    }
    tables += "const int64_t " + p + "Dims[] = {" + (dims.empty() ? std::string("0") : dims) + "};\n";
    tables += "const mc::tune::Output " + p + "Outputs[] = {\n" + outputs + "};\n";
    tables += "const mc::tune::Candidate " + p + "Candidates[] = {\n" + candidate_rows + "};\n";
    signature_rows += fmt::format(
        "    {{{}, {}, {}u, {}, {}Regions, {}, {}Outputs, {}, {}Candidates}},\n", c_string(k.tuning_signature),
        c_string(k.id), sc.bytes, sc.regions.size(), p, num_outputs, p, k.tune_candidates.size(), p);
    nlohmann::ordered_json e;
    e["signature"] = k.tuning_signature;
    e["kernel"] = k.id;
    e["family"] = k.family_name();
    e["nodes"] = k.nodes;
    e["scratch_bytes"] = sc.bytes;
    e["candidates"] = cands;
    list.push_back(e);
  }
  manifest["signatures"] = list;
  files["tuning.json"] = manifest.dump(1) + "\n";

  std::string main = "// " + name + "_tune.cu: the tuning driver of " + name + " (" + comment(fs::path(o.source).filename().string()) +
                     ") for " + arch + ", generated by modelc tune. Do not edit: run modelc tune again.\n";
  main += "// ./" + name + "_tune --help; README.md says how its times.json becomes a tuning cache.\n";
  main += "#include \"runtime/tune.h\"\n\n";
  main += "// Each candidate's kernels (" + name + "_tune_sI.cu).\n" + declarations + "\nnamespace {\n";
  main += "// Per signature: its scratch buffers {offset, bytes, ONNX dtype, data (else zeros), period, runs, run "
          "pitch, run length}, the outputs compared {offset, dtype, rank, shape, strides, rtol, atol (of the largest "
          "magnitude)}, and the candidates {tactic, estimate us, workspace bytes, enqueue, prepare}, the cost "
          "model's choice first.\n";
  main += tables;
  main += "\nconst mc::tune::Signature kSignatures[] = {\n" + signature_rows + "};\n\n";
  main += fmt::format("const mc::tune::Tuning kTuning = {{{}, {}, {}, {}, {}, kSignatures}};\n\n", c_string(name),
                      c_string(fs::path(o.source).filename().string()), c_string(arch), sm, tuned.size());
  main += "}  // namespace\n\nint main(int argc, char** argv) { return mc::tune::main(kTuning, argc, argv); }\n";
  files[name + "_tune.cu"] = main;

  std::string source_list;
  for (const std::string& f : sources) source_list += (source_list.empty() ? "" : " ") + f;
  const fs::path embed = data / "embed";
  const std::map<std::string, std::string> values = {
      {"NAME", name},       {"SOURCE", fs::path(o.source).filename().string()},
      {"ARCH", arch.substr(3)}, {"SOURCES", source_list},
      {"FLAGS", o.flags},   {"SIGNATURES", std::to_string(tuned.size())}};
  files["Makefile"] = render_embed_template(embed, "tune_Makefile.in", values);
  files["README.md"] = render_embed_template(embed, "tune_README.md.in", values);
  add_runtime(data / "runtime_stub", files);
  if (!headers.empty()) add_kernel_headers(data / "templates", headers, files);
  return files;
}

std::vector<std::string> emit_tuning(const Schedule& s, const std::string& dir, const TuneOptions& o) {
  const std::map<std::string, std::string> files = render_tuning(s, o);
  const std::vector<std::string> keep = {"build", s.name + "_tune", s.name + "_tune_emu"};
  return write_folder(dir, files, [](const fs::path& d) { return has_marker(d, "tuning.json"); }, keep).files;
}

}  // namespace modelc

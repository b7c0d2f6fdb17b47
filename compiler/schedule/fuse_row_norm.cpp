// compiler/schedule/fuse_row_norm.cpp — the fuse_row_norm stage (schedule/stages.h).
//
// A LayerNormalization over the last dim of a matrix product's output runs no kernel of its own:
// the product's launch normalizes its rows once they are written. Each block of the product
// arrives at its row panel's ticket after storing its tile; the last block of the panel (every
// tile of those rows done) reads the panel's rows back from L2 and writes them normalized
// (templates/residual_norm.cuh PanelNorm, Kernel::row_norm). It is the transformer's "add and
// norm": fuse_epilogue has already put the residual add (and the bias) into the product's
// epilogue, so X + R + bias is the product's output and the LayerNorm is all that is left — a
// kernel launch, a read of the rows from memory and a write, against the tail's reads from L2 (the
// rows were just written) by one block per panel.
//
// The cost model chooses (issue 27: "measure both and let the cost model choose"): the product
// with the norm in its launch, planned and tactic-chosen as the later stages will (no split-K for
// tc::Gemm, no GEMV, no Hopper engine), against the product and the LayerNorm kernel as they are;
// the LayerNorm stays a kernel, with both estimates in its note, where the one kernel is not
// faster (today's model prices the tail at a ticket's round trips and the panel's bytes through
// L2, and a LayerNorm kernel at its launch: a long-K product that loses split-K keeps its norm).
//
// Why the last block, not a block that owns whole rows: a tile as wide as the hidden size (768 at
// 64 rows would be 49152 FP32 accumulators) leaves few blocks at transformer row counts (M = 128:
// 2-8 blocks on 132 SMs); the panel tail keeps the product's own tiling (and its small-M split-K)
// and adds a latency of one panel's rows through L2 at the end (the cost model's handoff and L2
// bytes: schedule/family_work.cpp). Split across the panels, the tails run in parallel.
//
// Taken where exact and where the tail can run:
//  - the LayerNormalization normalizes the last dim only (axis -1), its Mean / InvStdDev outputs
//    unread, Scale and B (optional) holding N values each, N a multiple of 8 (16-byte chunks) and
//    at most 2048 (a row in one warp's registers, 8 chunks a thread), more than kGemvMaxRows rows;
//  - X is the output (or a Reshape of it) of a `gemm` kernel running a MatMul or Gemm (fused forms included; not an
//    Einsum, whose output dims the lowering may reorder; not a horizontally fused kernel), that
//    kernel's node's own output (not written through a Transpose), X and Y dense rows (row pitch a
//    multiple of 8 elements, 16-byte aligned), FP32, FP16 or BF16;
// else the LayerNormalization stays a kernel and Kernel::kept_row_norm says why (the report's
// note). The product's tactics then leave out what has no panels: the GEMV (at most 8 rows), the
// Hopper engine's persistent tiles and tc::Gemm's split-K (a second launch) (schedule/
// tactics_linear.cpp); the tickets are the kernel's zeroed scratch.
//
// A schedule stage for fuse_prologue's reasons: the graph keeps the node (the reference, `verify`
// and --print-after see the model unchanged); only the kernel list and the product's views change.
// Runs after fuse_prologue and before streams and the memory plan (the LayerNormalization's output
// is now written by the product).
#include <fmt/format.h>

#include <set>
#include <vector>

#include "schedule/cost_model.h"
#include "schedule/linear.h"
#include "schedule/stages.h"
#include "schedule/tactics.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

namespace {

/// The longest row the tail takes: 32 threads (a one-warp tile) x 8 chunks of 8.
constexpr int64_t kRowNormMaxN = 2048;

/// The row pitch of v when it is dense rows over its last dim (every other dim steps whole rows in
/// order), a multiple of 8 elements, 16-byte aligned; 0 otherwise.
int64_t flat_row_pitch(const TensorView& v) {
  const std::size_t r = v.shape.size();
  if (r == 0 || v.strides.size() != r || v.strides[r - 1] != 1 || !v.aligned(16)) return 0;
  const int64_t pitch = r >= 2 ? v.strides[r - 2] : v.shape[0];
  if (pitch < v.shape[r - 1] || pitch % 8 != 0) return 0;
  int64_t step = pitch;
  for (std::size_t d = r - 1; d-- > 0;) {
    if (v.shape[d] != 1 && v.strides[d] != step) return 0;
    step *= v.shape[d];
  }
  return pitch;
}

bool float_type(DType t) { return t == DType::float32 || t == DType::float16 || t == DType::bfloat16; }

/// Why Scale or B (`what`, view v) cannot be read as N contiguous values; "" when it can.
std::string unfit_vector(const TensorView& v, int64_t N, const char* what) {
  if (v.numel() != N) return fmt::format("its {} holds {} values, not one per column ({})", what, v.numel(), N);
  if (!float_type(v.dtype)) return fmt::format("its {} is {}", what, dtype_name(v.dtype));
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] != 1 && v.strides[d] != 1) return fmt::format("its {} is not contiguous", what);
  }
  return "";
}

/// Why LayerNormalization kernel ln cannot run in the tail of product kernel p (null: no kernel
/// writes its X); "" when it can.
std::string unfit(const Kernel& ln, const Kernel* p) {
  const Node& n = *ln.source.node;
  const TensorView& x = ln.inputs.at(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  if (rank == 0 || axis != rank - 1) return "it normalizes more than the last dim";
  for (std::size_t i = 1; i < ln.source.outputs.size(); ++i) {
    const Value* v = ln.source.outputs[i];
    if (v && (!v->users().empty() || v->is_graph_output())) return "its Mean / InvStdDev output is read";
  }
  const int64_t N = x.shape.back(), rows = N > 0 ? x.numel() / N : 0;
  if (N % 8 != 0) return fmt::format("rows of {} (not whole 16-byte chunks of 8)", N);
  if (N > kRowNormMaxN) return fmt::format("rows of {} (the tail holds a row in a warp: at most {})", N, kRowNormMaxN);
  if (rows <= linear::kGemvMaxRows) {
    return fmt::format("{} rows (at most {}: the GEMV, which has no row panels)", rows, linear::kGemvMaxRows);
  }
  if (std::string r = unfit_vector(ln.inputs.at(1), N, "Scale"); !r.empty()) return r;
  if (ln.inputs.size() > 2 && ln.inputs[2].dtype != DType::undefined) {
    if (std::string r = unfit_vector(ln.inputs[2], N, "B"); !r.empty()) return r;
  }
  if (!p) return "no matrix product writes its input";
  if (p->family_name() != "gemm") return fmt::format("its input comes from a kernel of the {} family, not a matrix product", p->family_name());
  const std::string op = linear::producer_op(*p->source.node);
  if (op != "MatMul" && op != "Gemm") return fmt::format("its input comes from {} (a MatMul or Gemm only)", op);
  if (!p->ranges.empty()) return "its input comes from a horizontally fused product";
  if (p->row_norm.active || p->outputs.size() != 1) return "its input's product has other outputs";
  if (p->source.outputs.at(0) != &p->source.node->output(0)) return "its input's product writes through a view";
  if (p->row_maps.scatter_y) return "its input's product scatters its rows through a table (fold_row_maps)";
  const TensorView& y = ln.outputs.at(0);
  if (!float_type(x.dtype) || !float_type(y.dtype)) {
    return fmt::format("{} in, {} out", dtype_name(x.dtype), dtype_name(y.dtype));
  }
  if (flat_row_pitch(x) == 0) return "its input is not dense 16-byte aligned rows";
  if (flat_row_pitch(y) == 0) return "its output is not dense 16-byte aligned rows";
  // The product's output and the norm's input: the same rows (a Reshape between them changes only
  // the dims before the last).
  const TensorView& w = p->outputs[0];
  if (w.dtype != x.dtype || w.numel() != x.numel() || w.shape.back() != N || w.buffer_offset != x.buffer_offset ||
      flat_row_pitch(w) != flat_row_pitch(x)) {
    return "it reads the product's output through a view that moves its rows";
  }
  return "";
}

/// The cost model's estimate (the first --arch) of kernel k as the later stages will plan it: a
/// product's batch dims folded into rows where they fold (fold_gemm_batch), its plan, its tactic.
Estimate estimate_of(Kernel k, const std::vector<Target>& targets) {
  if (k.family_name() == "gemm") {
    const int64_t products = linear::lower_gemm(k).batch_count();
    k.batch_as_rows = true;
    if (linear::lower_gemm(k).batch_count() == products) k.batch_as_rows = false;
  }
  plan_kernel(k);
  choose_tactic(k, targets);
  return k.estimate;
}

/// Product p with the LayerNormalization ln in its launch (its views resolved by the caller).
void take_norm(Kernel& p, const Kernel& ln) {
  p.source.inputs.resize(kRowNormBetaInput + 1, nullptr);
  p.source.inputs[kRowNormGammaInput] = ln.source.inputs.at(1);
  p.source.inputs[kRowNormBetaInput] = ln.source.inputs.size() > 2 ? ln.source.inputs[2] : nullptr;
  p.source.outputs.push_back(ln.source.outputs.at(0));
  p.inputs.resize(kRowNormBetaInput + 1, TensorView{"", DType::undefined, {}, {}, Space::arena, 0, 0});
  p.inputs[kRowNormGammaInput] = ln.inputs.at(1);
  p.inputs[kRowNormBetaInput] = ln.inputs.size() > 2 ? ln.inputs[2] : TensorView{"", DType::undefined, {}, {}, Space::arena, 0, 0};
  p.outputs.push_back(ln.outputs.at(0));
  p.row_norm.active = true;
  p.row_norm.epsilon = static_cast<float>(ln.source.node->attr_float("epsilon", 1e-5));
  p.row_norm.nodes = ln.nodes;
  p.nodes.insert(p.nodes.end(), ln.nodes.begin(), ln.nodes.end());
  p.folded_casts.insert(p.folded_casts.end(), ln.folded_casts.begin(), ln.folded_casts.end());
}

}  // namespace

bool fuse_row_norm(Schedule& s, const LowerOptions& o) {
  std::vector<Target> targets = targets_for(s.archs, o.passes.fp16_accumulate);
  for (Target& t : targets) t.tuning = o.passes.tuning;
  ValueIndex index(s);
  std::set<std::size_t> folded;
  for (std::size_t li = 0; li < s.kernels.size(); ++li) {
    Kernel& ln = s.kernels[li];
    if (ln.family_name() != "layernorm" || !ln.source.node || ln.source.node->op() != "LayerNormalization") continue;
    // The last kernel before it writing its input's buffer (a Reshape of the product's output is
    // a view in that buffer).
    const int xb = index.buffer(ln.source.inputs.at(0));
    Kernel* p = nullptr;
    for (std::size_t pi = 0; pi < li; ++pi) {
      for (const Value* v : s.kernels[pi].source.outputs) {
        if (v && xb >= 0 && index.buffer(v) == xb) p = &s.kernels[pi];
      }
    }
    ln.kept_row_norm = unfit(ln, p);
    if (!ln.kept_row_norm.empty()) continue;
    // The cost model chooses: the product with the norm in its launch (its tactics without split-K
    // or the GEMV) against the product and the LayerNorm kernel as they are.
    Kernel with = *p;
    take_norm(with, ln);
    const Estimate one = estimate_of(with, targets), product = estimate_of(*p, targets), norm = estimate_of(ln, targets);
    const std::string arch = "sm_" + std::to_string(targets.front().sm);
    if (one.us >= product.us + norm.us) {
      ln.kept_row_norm = fmt::format("the cost model ({}) rates the product with it in its launch {:.2f} us, not below "
                                     "the two kernels' {:.2f} + {:.2f} us",
                                     arch, one.us, product.us, norm.us);
      continue;
    }
    take_norm(*p, ln);
    p->row_norm.why = fmt::format("estimate ({}) {:.2f} us against {:.2f} + {:.2f} us as two kernels", arch, one.us,
                                  product.us, norm.us);
    folded.insert(li);
  }
  if (folded.empty()) return false;
  erase_kernels(s, folded);
  return true;
}

}  // namespace modelc

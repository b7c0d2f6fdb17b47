// compiler/schedule/fuse_horizontal.cpp — the fuse_horizontal stage (schedule/stages.h).
//
// Sibling convolutions, i.e. Conv / FusedConv kernels that read the same X with the same geometry
// (input, kernel, strides, pads, dilations; groups 1), run as ONE kernel: their weights
// concatenated along the output channels at compile time (and their biases, zeros for a sibling
// without one), each sibling's output the channel range [begin, end) of the fused product, with
// that sibling's own activation, WRITTEN WHERE IT WAS GOING TO BE: in its own buffer at its own
// layout and pitch, or in its slice of an elided Concat's buffer (an Inception module's first
// 1x1 branch goes straight into the Concat while the two 1x1 "reduce" convs write the buffers the
// 3x3 and 5x5 convs read). templates/gemm.cuh's EpilogueRanges says per channel where it goes.
//
// Sibling matrix products likewise: MatMul / FusedMatMul (or Gemm / FusedGemm) kernels that read
// the same A (the same value, so the same view) with a constant 2-D B of the same K (Gemm: the
// same transA and transB), the same alpha (and beta), run as one product A x [B1 | B2 | ...]: the
// B's concatenated along N (the columns; rows for transB), the biases likewise (Gemm's C only as a
// bias per column: [N] or [1, N]), each sibling's output the columns [begin, end) of the product,
// with its own activation, at its own strides (the attention's Q, K and V projections exported as
// three MatMuls are one kernel). A has at most one batch dim > 1, so each range's output is
// addressed by (batch, row, column) with one batch stride; siblings whose outputs differ in
// whether that batch continues their rows (one written through a Transpose) stay apart, as the
// batch folds into rows (fold_gemm_batch) only when it does for every output.
//
// Why a schedule stage and not a graph pass: a fused node with several outputs would have to be
// taught to every single-output stage before it (precision, layout, elide_concat each reason about
// a node's one output), whereas here those decisions are already made per sibling and are kept as
// they are: each output keeps its layout, pitch and Concat slice. The graph keeps the original
// nodes, so the reference interpreter, `verify` and --print-after see the model unchanged; only the
// kernel list changes. The fused kernel runs at the first sibling's place (its inputs are X, which
// that sibling already reads, and constants), so no reader can come before its writer: it keeps
// the first sibling's kernel, its source inputs 1 and 2 the concatenated weights and bias (new
// constants, W's buffer stored as the first sibling's was), its source outputs every range's
// output (Kernel::ranges), its covered nodes and operand views every sibling's.
//
// Siblings stay separate when they differ in geometry, dtypes or layout (a channels-last and a
// dense output; weights at different pitches), when one has a residual input (it must be read at
// its output's layout, per range), or when a boundary Cast was folded into one (it converts at its
// edges). Runs after elide_concat (a range may be a Concat's slice) and before the memory plan (the
// fused kernel writes every range at the first sibling's position).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "ops/fused.h"
#include "ops/gemm.h"
#include "ops/registry.h"
#include "ops/window.h"
#include "schedule/stages.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

namespace {

bool has_bias(const Node& n) { return n.has_input(ops::kFusedBiasInput); }

DType bias_dtype(const Node& n) { return has_bias(n) ? n.input(ops::kFusedBiasInput).dtype() : DType::undefined; }

std::string producer(const Node& n) {
  const std::string p = ops::producer_of_fused(n.op());
  return p.empty() ? n.op() : p;
}

// A kernel that can be a range of a horizontally fused one: constant weights (and bias), one
// output, no residual; a convolution of groups 1, or a matrix product (below).
bool fusable_common(const Node& n) {
  if (n.num_outputs() != 1 || !n.has_input(0) || !n.has_input(1) || !n.input(1).is_constant()) return false;
  if (has_bias(n) && !n.input(ops::kFusedBiasInput).is_constant()) return false;
  return !n.has_input(ops::kFusedResidualInput);
}

// A matrix product's output columns (N): B's columns, or its rows under Gemm's transB.
int64_t product_columns(const Node& n) {
  const Shape& b = n.input(1).shape();
  return producer(n) == "Gemm" && ops::gemm_attributes(n).trans_b ? b.at(0) : b.at(1);
}

// A MatMul / Gemm (or fused) whose B has no batch, whose bias is one value per output column
// (FusedMatMul's always is; Gemm's C when it is [N] or [1, N]), and whose A has at most one batch
// dim > 1 (each range's output then has one batch stride: templates/gemm.cuh Range).
bool fusable_product(const Node& n) {
  const std::string op = producer(n);
  if ((op != "MatMul" && op != "Gemm") || n.input(1).shape().size() != 2) return false;
  const Shape& a = n.input(0).shape();
  if (a.size() < 2 || std::count_if(a.begin(), a.end() - 2, [](int64_t d) { return d > 1; }) > 1) return false;
  if (!has_bias(n)) return true;
  const Shape& c = n.input(ops::kFusedBiasInput).shape();
  const int64_t columns = product_columns(n);
  return (c.size() == 1 || (c.size() == 2 && c[0] == 1)) && c.back() == columns;
}

bool fusable(const Node& n, const std::string& family) {
  if (!fusable_common(n)) return false;
  if (family == "conv") return producer(n) == "Conv" && ops::conv_geometry(n).group == 1;
  return family == "gemm" && fusable_product(n);
}

// Same geometry: everything of the convolution but the output channels.
bool same_conv_geometry(const Node& a, const Node& b) {
  const ops::WindowGeometry ga = ops::conv_geometry(a), gb = ops::conv_geometry(b);
  return ga.N == gb.N && ga.C == gb.C && ga.in == gb.in && ga.kernel == gb.kernel && ga.stride == gb.stride &&
         ga.dilation == gb.dilation && ga.pad_begin == gb.pad_begin && ga.pad_end == gb.pad_end;
}

// Same product but for N, given the same A: one op, the same transposes (so one M and K: a Gemm
// reading A transposed has K = A's rows) and scales (the fused epilogue has one alpha and beta).
bool same_product(const Node& a, const Node& b) {
  if (producer(a) != producer(b)) return false;
  if (producer(a) == "MatMul") return a.attr_float("alpha", 1.0) == b.attr_float("alpha", 1.0);
  const ops::GemmAttributes ga = ops::gemm_attributes(a), gb = ops::gemm_attributes(b);
  return ga.trans_a == gb.trans_a && ga.trans_b == gb.trans_b && ga.alpha == gb.alpha && ga.beta == gb.beta;
}

// The tensors concatenated along dim 0 (same dtype, same trailing dims); an absent one (null) is
// `rows` zero rows of each.
Tensor concat_rows(const std::vector<const Tensor*>& parts, const std::vector<int64_t>& rows, DType dtype,
                   Shape trailing) {
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  Shape shape{total};
  shape.insert(shape.end(), trailing.begin(), trailing.end());
  Tensor t(dtype, shape);  // zero-filled
  const std::size_t row_bytes = static_cast<std::size_t>(num_elements(trailing)) * dtype_size(dtype);
  uint8_t* dst = t.mutable_raw();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i]) std::memcpy(dst, parts[i]->raw(), parts[i]->nbytes());
    dst += static_cast<std::size_t>(rows[i]) * row_bytes;
  }
  return t;
}

// The [K, columns[i]] matrices side by side: [K, sum of columns].
Tensor concat_columns(const std::vector<const Tensor*>& parts, const std::vector<int64_t>& columns, DType dtype,
                      int64_t K) {
  int64_t total = 0;
  for (int64_t c : columns) total += c;
  Tensor t(dtype, {K, total});
  const std::size_t size = dtype_size(dtype);
  uint8_t* dst = t.mutable_raw();
  for (int64_t k = 0; k < K; ++k) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::size_t bytes = static_cast<std::size_t>(columns[i]) * size;
      std::memcpy(dst, parts[i]->raw() + static_cast<std::size_t>(k) * bytes, bytes);
      dst += bytes;
    }
  }
  return t;
}

// Whether kernels a and b can be ranges of one kernel (the file comment says when).
bool compatible_siblings(const Schedule& s, const ValueIndex& index, const Kernel& ka, const Kernel& kb) {
  const Node& a = *ka.source.node;
  const Node& b = *kb.source.node;
  if (&a.input(0) != &b.input(0)) return false;
  if (!(producer(a) == "Conv" ? same_conv_geometry(a, b) : same_product(a, b))) return false;
  // A product's batch runs as more rows of it (fold_gemm_batch) only where every output continues
  // its rows across the batch: a sibling written through a Transpose (batch stride not rows x M)
  // would keep the others' batch as separate products, so such siblings stay apart.
  auto batch_continues_rows = [&](const Node& n) {
    const Value& y = n.output(0);
    std::vector<int64_t> st;
    int64_t offset = 0;
    if (!strides_in_buffer(s, index, &y, &st, &offset)) return false;
    const Shape& sh = y.shape();
    const std::size_t r = sh.size();
    for (std::size_t d = 0; d + 2 < r; ++d) {
      if (sh[d] > 1 && sh[r - 2] > 1 && st[d] != st[r - 2] * sh[r - 2]) return false;
    }
    return true;
  };
  if (producer(a) != "Conv" && batch_continues_rows(a) != batch_continues_rows(b)) return false;
  if (!ka.folded_casts.empty() || !kb.folded_casts.empty()) return false;
  if (a.input(1).dtype() != b.input(1).dtype() || ka.source.outputs[0]->dtype() != kb.source.outputs[0]->dtype()) {
    return false;
  }
  const DType ba = bias_dtype(a), bb = bias_dtype(b);
  if (ba != DType::undefined && bb != DType::undefined && ba != bb) return false;
  if (ka.channels_last != kb.channels_last) return false;
  auto buffer = [&](const Value* v) -> const Buffer& { return s.buffers[static_cast<std::size_t>(index.buffer(v))]; };
  const WeightStorage wa = buffer(&a.input(1)).ohwi.value_or(WeightStorage{});
  const WeightStorage wb = buffer(&b.input(1)).ohwi.value_or(WeightStorage{});
  return wa == wb && buffer(ka.source.outputs[0]).storage.channels_last == buffer(kb.source.outputs[0]).storage.channels_last;
}

}  // namespace

bool fuse_horizontal(Schedule& s, const LowerOptions&) {
  Graph& g = *s.graph;
  ValueIndex index(s);
  // The sibling sets, in kernel order: each kernel joins the first earlier set whose first member
  // (the leader) it is compatible with.
  std::vector<std::vector<std::size_t>> sets;
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    if (!fusable(*s.kernels[k].source.node, s.kernels[k].family_name())) continue;
    if (s.kernels[k].row_maps.active()) continue;  // its rows through a table (fold_row_maps)
    bool joined = false;
    for (auto& set : sets) {
      if (s.kernels[set[0]].family == s.kernels[k].family && compatible_siblings(s, index, s.kernels[set[0]], s.kernels[k])) {
        set.push_back(k);
        joined = true;
        break;
      }
    }
    if (!joined) sets.push_back({k});
  }
  std::set<std::size_t> merged;  // kernels that became ranges of an earlier one
  for (const auto& set : sets) {
    if (set.size() < 2) continue;
    Kernel& fused = s.kernels[set[0]];
    const Node* leader = fused.source.node;
    const Value& w0 = leader->input(1);
    // The weights are concatenated along their rows (a convolution's output channels; Gemm's B
    // under transB) or their columns (a matrix product's B [K, N]).
    const std::string op = producer(*leader);
    const bool by_columns = op == "MatMul" || (op == "Gemm" && !ops::gemm_attributes(*leader).trans_b);
    std::vector<OutputRange> ranges;
    std::vector<const Tensor*> weights, biases;
    std::vector<int64_t> widths;
    DType bias_type = DType::undefined;
    for (std::size_t k : set) {
      const Node* n = s.kernels[k].source.node;
      const int64_t width = op == "Conv" ? n->input(1).shape().at(0) : product_columns(*n);
      ranges.push_back({n, s.kernels[k].op, n->output(0).name(), ranges.empty() ? 0 : ranges.back().end, 0});
      ranges.back().end = ranges.back().begin + width;
      widths.push_back(width);
      weights.push_back(&n->input(1).constant());
      biases.push_back(has_bias(*n) ? &n->input(ops::kFusedBiasInput).constant() : nullptr);
      if (has_bias(*n)) bias_type = bias_dtype(*n);
      if (k != set[0]) merged.insert(k);
    }
    const Tensor w = by_columns ? concat_columns(weights, widths, w0.dtype(), w0.shape()[0])
                                : concat_rows(weights, widths, w0.dtype(), Shape(w0.shape().begin() + 1, w0.shape().end()));
    const Value* fused_w = g.add_constant(w0.name() + "_horizontal", w);
    const Value* fused_b = nullptr;
    if (bias_type != DType::undefined) {
      fused_b = g.add_constant(leader->name() + "_horizontal_B", concat_rows(biases, widths, bias_type, {}));
    }
    // The concatenated W is stored as the first sibling's (OHWI at its pitch, when channels-last).
    const int wb = add_value_buffer(s, fused_w);
    s.buffers[static_cast<std::size_t>(wb)].ohwi = s.buffers[static_cast<std::size_t>(index.buffer(&w0))].ohwi;
    if (fused_b) add_value_buffer(s, fused_b);
    index.rebuild();
    std::vector<const Value*>& inputs = fused.source.inputs;
    inputs.resize(std::max<std::size_t>(inputs.size(), ops::kFusedBiasInput + 1));
    inputs[1] = fused_w;
    inputs[ops::kFusedBiasInput] = fused_b;
    fused.source.outputs.clear();
    for (const OutputRange& r : ranges) fused.source.outputs.push_back(&r.source->output(0));
    for (std::size_t i = 1; i < set.size(); ++i) {
      const Kernel& sibling = s.kernels[set[i]];
      fused.nodes.insert(fused.nodes.end(), sibling.nodes.begin(), sibling.nodes.end());
      for (const std::string& v : sibling.operand_views) {
        if (std::find(fused.operand_views.begin(), fused.operand_views.end(), v) == fused.operand_views.end()) {
          fused.operand_views.push_back(v);
        }
      }
    }
    fused.ranges = std::move(ranges);
  }
  if (merged.empty()) return false;
  erase_kernels(s, merged);
  return true;
}

}  // namespace modelc

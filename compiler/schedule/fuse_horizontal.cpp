// compiler/schedule/fuse_horizontal.cpp — the fuse_horizontal stage (Lowering::fuse_horizontal,
// lower.h).
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
// Why a schedule stage and not a graph pass: a fused node with several outputs would have to be
// taught to every single-output stage before it (precision, layout, elide_concat each reason about
// a node's one output), whereas here those decisions are already made per sibling and are kept as
// they are: each output keeps its layout, pitch and Concat slice. The graph keeps the original
// nodes, so the reference interpreter, `verify` and --print-after see the model unchanged; only the
// kernel list changes. The fused kernel runs at the first sibling's place (its inputs are X, which
// that sibling already reads, and constants), so no reader can come before its writer.
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
#include "ops/registry.h"
#include "ops/window.h"
#include "schedule/lower.h"
#include "support/error.h"

namespace modelc {

namespace {

// A convolution that can be a range of a horizontally fused kernel: groups 1, constant weights and
// bias, one output, no residual.
bool fusable_conv(const Node& n, const std::string& family) {
  if (family != "conv") return false;
  if (n.op() != "Conv" && ops::producer_of_fused(n.op()) != "Conv") return false;
  if (n.num_outputs() != 1 || !n.has_input(0) || !n.has_input(1) || !n.input(1).is_constant()) return false;
  if (n.has_input(ops::kFusedBiasInput) && !n.input(ops::kFusedBiasInput).is_constant()) return false;
  if (n.has_input(ops::kFusedResidualInput)) return false;
  return ops::conv_geometry(n).group == 1;
}

// Same geometry: everything of the convolution but the output channels.
bool same_geometry(const Node& a, const Node& b) {
  const ops::WindowGeometry ga = ops::conv_geometry(a), gb = ops::conv_geometry(b);
  return ga.N == gb.N && ga.C == gb.C && ga.in == gb.in && ga.kernel == gb.kernel && ga.stride == gb.stride &&
         ga.dilation == gb.dilation && ga.pad_begin == gb.pad_begin && ga.pad_end == gb.pad_end;
}

DType bias_dtype(const Node& n) {
  return n.has_input(ops::kFusedBiasInput) ? n.input(ops::kFusedBiasInput).dtype() : DType::undefined;
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

}  // namespace

bool Lowering::compatible_siblings(const Node& a, const Node& b) const {
  if (&a.input(0) != &b.input(0) || !same_geometry(a, b)) return false;
  if (folded_into_.count(&a) || folded_into_.count(&b)) return false;
  if (a.input(1).dtype() != b.input(1).dtype() || stored(&a.output(0))->dtype() != stored(&b.output(0))->dtype()) {
    return false;
  }
  const DType ba = bias_dtype(a), bb = bias_dtype(b);
  if (ba != DType::undefined && bb != DType::undefined && ba != bb) return false;
  if (layout_.channels_last_kernels.count(&a) != layout_.channels_last_kernels.count(&b)) return false;
  auto pa = layout_.weight_pitch.find(&a.input(1)), pb = layout_.weight_pitch.find(&b.input(1));
  const int64_t wa = pa == layout_.weight_pitch.end() ? 0 : pa->second;
  const int64_t wb = pb == layout_.weight_pitch.end() ? 0 : pb->second;
  return wa == wb && storage_of(buffer(&a.output(0))).channels_last == storage_of(buffer(&b.output(0))).channels_last;
}

bool Lowering::fuse_horizontal() {
  done_.insert("fuse_horizontal");
  // The sibling sets, in kernel order: each kernel joins the first earlier set whose first member
  // (the leader) it is compatible with.
  std::vector<std::vector<std::size_t>> sets;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (!fusable_conv(*nodes_[k], families_[k])) continue;
    bool joined = false;
    for (auto& set : sets) {
      if (compatible_siblings(*nodes_[set[0]], *nodes_[k])) {
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
    const Node* leader = nodes_[set[0]];
    HorizontalFusion f;
    std::vector<const Tensor*> weights, biases;
    std::vector<int64_t> rows;
    DType bias_type = DType::undefined;
    for (std::size_t k : set) {
      const Node* n = nodes_[k];
      const int64_t m = n->input(1).shape().at(0);
      f.ranges.push_back({n, f.ranges.empty() ? 0 : f.ranges.back().end, 0});
      f.ranges.back().end = f.ranges.back().begin + m;
      rows.push_back(m);
      weights.push_back(&n->input(1).constant());
      const bool has_bias = n->has_input(ops::kFusedBiasInput);
      biases.push_back(has_bias ? &n->input(ops::kFusedBiasInput).constant() : nullptr);
      if (has_bias) bias_type = bias_dtype(*n);
      if (k != set[0]) merged.insert(k);
    }
    const Value& w0 = leader->input(1);
    const Shape trailing(w0.shape().begin() + 1, w0.shape().end());
    f.weights = g_.add_constant(w0.name() + "_horizontal", concat_rows(weights, rows, w0.dtype(), trailing));
    auto pitch = layout_.weight_pitch.find(&w0);
    if (pitch != layout_.weight_pitch.end()) layout_.weight_pitch[f.weights] = pitch->second;
    if (bias_type != DType::undefined) {
      f.bias = g_.add_constant(leader->name() + "_horizontal_B", concat_rows(biases, rows, bias_type, {}));
    }
    horizontal_[leader] = std::move(f);
  }
  for (std::size_t k = nodes_.size(); k-- > 0;) {
    if (!merged.count(k)) continue;
    nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(k));
    families_.erase(families_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return !merged.empty();
}

std::vector<const Value*> Lowering::kernel_inputs(const Node* n) const {
  auto f = horizontal_.find(n);
  std::vector<const Value*> r(n->inputs().begin(), n->inputs().end());
  if (f == horizontal_.end()) return r;
  r.resize(std::max<std::size_t>(r.size(), ops::kFusedBiasInput + 1));
  r[1] = f->second.weights;
  r[ops::kFusedBiasInput] = f->second.bias;
  return r;
}

std::vector<const Value*> Lowering::kernel_outputs(const Node* n) const {
  auto f = horizontal_.find(n);
  if (f == horizontal_.end()) return {n->outputs().begin(), n->outputs().end()};
  std::vector<const Value*> r;
  for (const OutputRange& range : f->second.ranges) r.push_back(&range.node->output(0));
  return r;
}

}  // namespace modelc

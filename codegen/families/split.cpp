// codegen/families/split.cpp — the "split" family: Split as one strided copy per output from its
// place along the axis of the input (mc::dm::Copy). The part lengths come from the outputs' shapes,
// or, where an output is left out, from the rules the reference follows (compiler/ops/tensor.cpp).
#include "codegen/families/data_movement.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

// The length of every part along the axis: the 'split' attribute (< 13) or input (13+), else
// equal parts (ceil(len / num_outputs) from opset 18, the last part smaller).
std::vector<int64_t> part_lengths(const Node& n, int64_t len) {
  if (n.opset() < 13 && n.has_attr("split")) return n.attr_ints("split");
  if (n.opset() >= 13 && n.has_input(1)) {
    if (!n.input(1).is_constant()) throw n.error("input 'split' must be a constant");
    return n.input(1).constant().to_i64();
  }
  const int64_t parts = n.num_outputs();
  const int64_t chunk = n.opset() >= 18 ? len / parts + (len % parts != 0 ? 1 : 0) : len / parts;
  std::vector<int64_t> r(static_cast<std::size_t>(parts), chunk);
  r.back() = len - chunk * (parts - 1);
  return r;
}

}  // namespace

std::vector<StridedCopy> split_plan(const Node& n, const TensorView& x, const std::vector<TensorView>& ys) {
  const auto rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) throw n.error("attribute 'axis' is out of range");
  const auto a = static_cast<std::size_t>(axis);
  const std::vector<int64_t> lengths = part_lengths(n, x.shape[a]);
  if (lengths.size() < ys.size()) throw n.error("internal: fewer split lengths than outputs");
  std::vector<StridedCopy> copies;
  int64_t at = 0;  // where the next part starts along the axis
  for (std::size_t i = 0; i < ys.size(); ++i) {
    StridedCopy c;
    if (ys[i].dtype != DType::undefined) {
      c.shape = ys[i].shape;
      c.y_strides = ys[i].strides;
      c.x_strides = x.strides;
      c.x_offset = at * x.strides[a];
      if (c.shape[a] != lengths[i])
        throw n.error("internal: output " + std::to_string(i) + " has another length than its part");
    } else {
      c.shape = {0};  // absent: nothing to copy
      c.y_strides = c.x_strides = {1};
    }
    at += lengths[i];
    copies.push_back(c);
  }
  return copies;
}

namespace {

KernelLaunches emit_split(const Kernel& k, const EmitContext& ctx) {
  const TensorView& x = k.inputs.at(0);
  const std::vector<StridedCopy> copies = split_plan(*k.node, x, k.outputs);
  KernelLaunches r;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    if (k.outputs[i].dtype == DType::undefined) continue;
    std::optional<Launch> l = copy_launch(ctx, k.outputs[i], x, copies[i],
                                          "output " + std::to_string(i) + " of " + std::to_string(copies.size()) +
                                              " (" + view_str(k.outputs[i]) + ") from its place");
    if (l) r.launches.push_back(std::move(*l));
  }
  if (r.launches.empty()) r.nothing_to_run = "every output is empty, nothing to copy";
  return r;
}

}  // namespace

MODELC_REGISTER_FAMILY(split_family)
(KernelFamily{
    "split", {"tensor_index.cuh", "data_movement.cuh"}, data_plan("one strided copy per output"), emit_split});

}  // namespace modelc::codegen

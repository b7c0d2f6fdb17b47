// codegen/families/concat.cpp — the "concat" family: Concat as one strided copy per input into its
// place along the axis of the output (mc::dm::Copy).
#include "codegen/families/data_movement.h"
#include "ops/tensor.h"
#include "support/error.h"

namespace modelc::codegen {

std::vector<StridedCopy> concat_plan(const Node& n, const std::vector<TensorView>& xs, const TensorView& y) {
  const auto a = static_cast<std::size_t>(ops::concat_axis(n, static_cast<int64_t>(y.shape.size())));
  std::vector<StridedCopy> copies;
  int64_t at = 0;  // where the next input starts along the axis
  for (const TensorView& x : xs) {
    StridedCopy c;
    c.shape = x.shape;
    c.x_strides = x.strides;
    c.y_strides = y.strides;
    c.y_offset = at * y.strides[a];
    at += x.shape[a];
    copies.push_back(c);
  }
  if (at != y.shape[a]) throw n.error("internal: the inputs do not fill the output along the axis");
  return copies;
}

namespace {

KernelLaunches emit_concat(const Kernel& k, const EmitContext& ctx) {
  const TensorView& y = k.outputs.at(0);
  const std::vector<StridedCopy> copies = concat_plan(*k.source.node, k.inputs, y);
  KernelLaunches r;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    std::optional<Launch> l = copy_launch(ctx, y, k.inputs[i], copies[i],
                                          "input " + std::to_string(i) + " of " + std::to_string(copies.size()) +
                                              " (" + view_str(k.inputs[i]) + ") into its place");
    if (l) r.launches.push_back(std::move(*l));
  }
  if (r.launches.empty()) r.nothing_to_run = "every input is empty, nothing to copy";
  return r;
}

}  // namespace

MODELC_REGISTER_FAMILY(concat_family)
(KernelFamily{
    "concat", {"tensor_index.cuh", "data_movement.cuh"}, emit_concat});

}  // namespace modelc::codegen

// codegen/families/split.cpp — the "split" family: Split as one strided copy per output from its
// place along the axis of the input (mc::dm::Copy). The axis and the part lengths, also of an output
// left out, are ops::split_parts (ops/tensor.h), the reference's.
#include "codegen/families/data_movement.h"
#include "ops/tensor.h"
#include "support/error.h"

namespace modelc::codegen {

std::vector<StridedCopy> split_plan(const Node& n, const TensorView& x, const std::vector<TensorView>& ys) {
  const ops::SplitParts parts = ops::split_parts(n, x.shape);
  const auto a = static_cast<std::size_t>(parts.axis);
  const std::vector<int64_t>& lengths = parts.sizes;
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
  const std::vector<StridedCopy> copies = split_plan(*k.source.node, x, k.outputs);
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
    "split", {"tensor_index.cuh", "data_movement.cuh"}, emit_split});

}  // namespace modelc::codegen

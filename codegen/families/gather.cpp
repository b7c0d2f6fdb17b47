// codegen/families/gather.cpp — the "gather" family: Gather along an axis, int32 or int64 indices
// (negative ones count from the end), any element type copied as bits (mc::dm::Gather).
#include "codegen/families/elementwise_util.h"
#include "schedule/data_movement.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_gather(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &indices = k.inputs.at(1), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to gather");
  const GatherPlan& p = plan_of<GatherPlan>(k);
  const std::string comment =
      "axis " + std::to_string(p.axis) + ", " + elem_type(indices.dtype) + " indices (negative ones count from the end)";
  Shape idx_shape = indices.shape, y_shape = y.shape;
  Strides idx_strides = indices.strides, y_strides = y.strides;
  collapse(idx_shape, {&idx_strides});
  collapse(y_shape, {&y_strides});
  Launch l;
  l.comment = comment;
  l.type = "mc::dm::Gather<" + bits_type(x.dtype) + ", " + elem_type(indices.dtype) + ",\n      " + dims(p.outer) +
           ", " + dims(p.x_outer_strides) + ", " + std::to_string(p.axis_len) + ", " + std::to_string(p.x_axis_stride) +
           ", " + dims(p.inner) + ", " + dims(p.x_inner_strides) + ",\n      " + dims(idx_shape) + ", " +
           dims(idx_strides) + ", " + dims(y_shape) + ", " + dims(y_strides) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}, {"indices", ctx.ptr(indices, true)}};
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(gather_family)
(KernelFamily{"gather",
              {"tensor_index.cuh", "data_movement.cuh"},
              emit_gather});

}  // namespace modelc::codegen

// codegen/families/gather.cpp — the "gather" family: Gather along an axis, int32 or int64 indices
// (negative ones count from the end), any element type copied as bits (mc::dm::Gather).
#include "codegen/families/data_movement.h"
#include "ops/tensor.h"
#include "support/error.h"

namespace modelc::codegen {

GatherPlan gather_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const int64_t axis = ops::gather_axis(n, x.shape);
  const auto a = static_cast<std::size_t>(axis);
  GatherPlan p;
  p.outer.assign(x.shape.begin(), x.shape.begin() + axis);
  p.x_outer_strides.assign(x.strides.begin(), x.strides.begin() + axis);
  p.inner.assign(x.shape.begin() + axis + 1, x.shape.end());
  p.x_inner_strides.assign(x.strides.begin() + axis + 1, x.strides.end());
  p.axis_len = x.shape[a];
  p.x_axis_stride = x.strides[a];
  collapse(p.outer, {&p.x_outer_strides});
  collapse(p.inner, {&p.x_inner_strides});
  if (num_elements(p.outer) * num_elements(p.inner) != 0 &&
      y.numel() % (num_elements(p.outer) * num_elements(p.inner)) != 0) {
    throw n.error("internal: the output shape disagrees with the data's");
  }
  return p;
}

namespace {

KernelLaunches emit_gather(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &indices = k.inputs.at(1), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to gather");
  const std::string comment = "axis " + std::to_string(k.source.node->attr_int("axis", 0)) + ", " + elem_type(indices.dtype) +
                              " indices (negative ones count from the end)";
  const GatherPlan p = gather_plan(*k.source.node, x, y);
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

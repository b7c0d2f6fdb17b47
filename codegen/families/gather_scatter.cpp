// codegen/families/gather_scatter.cpp — the gather_elements, gather_nd, scatter_elements,
// scatter_nd and onehot families (templates/gather_scatter.cuh; the ops' rules: ops/indexing.h; the
// kernels' plans: schedule/indexing.h).
// Each prints the views' shapes and strides as the templates' Dims; a scatter is the copy of the
// data into Y (mc::dm::Copy) and the scatter launch.
#include <string>
#include <vector>

#include "codegen/families/elementwise_util.h"
#include "schedule/indexing.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

Shape drop(const Shape& s, std::size_t d) {
  Shape r = s;
  r.erase(r.begin() + static_cast<std::ptrdiff_t>(d));
  return r;
}

std::string reduce_of(ops::ScatterReduction r) { return std::string("mc::gs::Reduce::") + ops::reduction_name(r); }

/// The copy of the data (input 0) into Y, the first launch of a scatter; none when Y is empty.
void copy_data(const Kernel& k, const EmitContext& ctx, KernelLaunches& out) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  StridedCopy c{y.shape, y.strides, x.strides, 0, 0};
  if (auto l = copy_launch(ctx, y, x, c, node_str(k) + ": the data")) out.launches.push_back(std::move(*l));
}

KernelLaunches emit_gather_elements(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &indices = k.inputs.at(1), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to gather");
  const auto axis = static_cast<std::size_t>(plan_of<ElementsPlan>(k).axis);
  Strides x_strides = x.strides;
  x_strides[axis] = 0;  // the axis coordinate comes from the indices
  Launch l;
  l.comment = "axis " + num(static_cast<int64_t>(axis)) + ", " + elem_type(indices.dtype) + " indices over " +
              shape_str(y.shape) + " (negative ones count from the end)";
  l.type = "mc::gs::GatherElements<" + bits_type(x.dtype) + ", " + elem_type(indices.dtype) + ", " + dims(y.shape) +
           ",\n      " + dims(y.strides) + ", " + dims(indices.strides) + ", " + dims(x_strides) + ", " +
           num(x.shape[axis]) + ", " + num(x.strides[axis]) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}, {"indices", ctx.ptr(indices, true)}};
  return single_launch(std::move(l));
}

KernelLaunches emit_gather_nd(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &indices = k.inputs.at(1), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to gather");
  const ops::GatherNdDims& d = plan_of<ops::GatherNdDims>(k);
  const auto b = static_cast<std::size_t>(d.batch_dims), kk = static_cast<std::size_t>(d.k);
  const std::size_t q = indices.shape.size();
  const Shape rows(indices.shape.begin(), indices.shape.end() - 1);
  Strides row_x(q - 1, 0), row_i(indices.strides.begin(), indices.strides.end() - 1);
  for (std::size_t i = 0; i < b; ++i) row_x[i] = x.strides[i];
  const Shape kdims(x.shape.begin() + static_cast<std::ptrdiff_t>(b), x.shape.begin() + static_cast<std::ptrdiff_t>(b + kk));
  const Strides kx(x.strides.begin() + static_cast<std::ptrdiff_t>(b), x.strides.begin() + static_cast<std::ptrdiff_t>(b + kk));
  Shape inner(x.shape.begin() + static_cast<std::ptrdiff_t>(b + kk), x.shape.end());
  Strides inner_x(x.strides.begin() + static_cast<std::ptrdiff_t>(b + kk), x.strides.end());
  collapse(inner, {&inner_x});
  Shape y_shape = y.shape;
  Strides y_strides = y.strides;
  collapse(y_shape, {&y_strides});
  Launch l;
  l.comment = "index tuples of " + num(d.k) + (d.batch_dims ? ", " + num(d.batch_dims) + " batch dims" : "") +
              ", slices of " + num(num_elements(inner)) + " elements";
  l.type = "mc::gs::GatherND<" + bits_type(x.dtype) + ", " + dims(rows) + ", " + dims(row_x) + ", " + dims(row_i) +
           ",\n      " + num(d.k) + ", " + num(indices.strides.back()) + ", " + dims(kdims) + ", " + dims(kx) + ",\n      " +
           dims(inner) + ", " + dims(inner_x) + ", " + dims(y_shape) + ", " + dims(y_strides) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}, {"indices", ctx.ptr(indices, true)}};
  return single_launch(std::move(l));
}

KernelLaunches emit_scatter_elements(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &indices = k.inputs.at(1), &updates = k.inputs.at(2), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  KernelLaunches out;
  copy_data(k, ctx, out);
  if (updates.numel() == 0) return out;
  const ElementsPlan& p = plan_of<ElementsPlan>(k);
  const auto axis = static_cast<std::size_t>(p.axis);
  const ops::ScatterReduction red = p.reduction;
  Shape lines = drop(updates.shape, axis);
  Strides us = drop(updates.strides, axis), is = drop(indices.strides, axis), ys = drop(y.strides, axis);
  collapse(lines, {&us, &is, &ys});
  const std::string t = red == ops::ScatterReduction::none ? bits_type(y.dtype) : elem_type(y.dtype);
  Launch l;
  l.comment = "reduction " + std::string(ops::reduction_name(red)) + " along axis " + num(static_cast<int64_t>(axis)) +
              ": a thread per line of " + num(updates.shape[axis]) + " updates, applied in order";
  l.type = "mc::gs::ScatterElements<" + t + ", " + elem_type(indices.dtype) + ", " + reduce_of(red) + ",\n      " +
           dims(lines) + ", " + dims(us) + ", " + dims(is) + ", " + dims(ys) + ",\n      " + num(updates.shape[axis]) +
           ", " + num(updates.strides[axis]) + ", " + num(indices.strides[axis]) + ", " + num(y.shape[axis]) + ", " +
           num(y.strides[axis]) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"updates", ctx.ptr(updates, true)}, {"indices", ctx.ptr(indices, true)}};
  out.launches.push_back(std::move(l));
  return out;
}

KernelLaunches emit_scatter_nd(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &indices = k.inputs.at(1), &updates = k.inputs.at(2), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  KernelLaunches out;
  copy_data(k, ctx, out);
  if (updates.numel() == 0) return out;
  const ScatterNdPlan& p = plan_of<ScatterNdPlan>(k);
  const auto kk = static_cast<std::size_t>(p.k);
  const ops::ScatterReduction red = p.reduction;
  const std::size_t q = indices.shape.size();
  const Shape rows(indices.shape.begin(), indices.shape.end() - 1);
  const Strides row_u(updates.strides.begin(), updates.strides.begin() + static_cast<std::ptrdiff_t>(q - 1));
  const Strides row_i(indices.strides.begin(), indices.strides.end() - 1);
  const Shape kdims(y.shape.begin(), y.shape.begin() + static_cast<std::ptrdiff_t>(kk));
  const Strides ky(y.strides.begin(), y.strides.begin() + static_cast<std::ptrdiff_t>(kk));
  Shape slice(y.shape.begin() + static_cast<std::ptrdiff_t>(kk), y.shape.end());
  Strides slice_y(y.strides.begin() + static_cast<std::ptrdiff_t>(kk), y.strides.end());
  Strides slice_u(updates.strides.begin() + static_cast<std::ptrdiff_t>(q - 1), updates.strides.end());
  collapse(slice, {&slice_y, &slice_u});
  const std::string t = red == ops::ScatterReduction::none ? bits_type(y.dtype) : elem_type(y.dtype);
  Launch l;
  l.comment = "reduction " + std::string(ops::reduction_name(red)) + ": " + num(num_elements(rows)) +
              " index tuples of " + num(static_cast<int64_t>(kk)) + ", slices of " + num(num_elements(slice)) +
              (red == ops::ScatterReduction::none ? " elements, a thread per element"
                                                  : " elements, a thread per slice element over the tuples in order");
  l.type = "mc::gs::ScatterND<" + t + ", " + reduce_of(red) + ", " + dims(rows) + ", " + dims(row_u) + ", " +
           dims(row_i) + ",\n      " + num(static_cast<int64_t>(kk)) + ", " + num(indices.strides.back()) + ", " +
           dims(kdims) + ", " + dims(ky) + ",\n      " + dims(slice) + ", " + dims(slice_u) + ", " + dims(slice_y) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"updates", ctx.ptr(updates, true)}, {"indices", ctx.ptr(indices, true)}};
  out.launches.push_back(std::move(l));
  return out;
}

KernelLaunches emit_onehot(const Kernel& k, const EmitContext& ctx) {
  const TensorView &indices = k.inputs.at(0), &values = k.inputs.at(2), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  const auto axis = static_cast<std::size_t>(plan_of<ElementsPlan>(k).axis);
  const int64_t depth = y.shape[axis];
  int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < indices.shape.size(); ++d) (d < axis ? outer : inner) *= indices.shape[d];
  Shape is = indices.shape, y_shape = y.shape;
  Strides ist = indices.strides, yst = y.strides;
  collapse(is, {&ist});
  collapse(y_shape, {&yst});
  Launch l;
  l.comment = "depth " + num(depth) + " at axis " + num(static_cast<int64_t>(axis)) + ", " + elem_type(indices.dtype) +
              " indices (negative ones count from the end)";
  l.type = "mc::gs::OneHot<" + bits_type(y.dtype) + ", " + elem_type(indices.dtype) + ", " + num(outer) + ", " +
           num(depth) + ", " + num(inner) + ",\n      " + dims(is) + ", " + dims(ist) + ", " + dims(y_shape) + ", " +
           dims(yst) + ", " + num(values.strides.at(0)) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"indices", ctx.ptr(indices, true)}, {"values", ctx.ptr(values, true)}};
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(gather_elements_family)
(KernelFamily{"gather_elements", {"tensor_index.cuh", "gather_scatter.cuh"}, emit_gather_elements});
MODELC_REGISTER_FAMILY(gather_nd_family)
(KernelFamily{"gather_nd", {"tensor_index.cuh", "gather_scatter.cuh"}, emit_gather_nd});
MODELC_REGISTER_FAMILY(scatter_elements_family)
(KernelFamily{"scatter_elements", {"tensor_index.cuh", "data_movement.cuh", "gather_scatter.cuh"},
              emit_scatter_elements});
MODELC_REGISTER_FAMILY(scatter_nd_family)
(KernelFamily{"scatter_nd", {"tensor_index.cuh", "data_movement.cuh", "gather_scatter.cuh"}, emit_scatter_nd});
MODELC_REGISTER_FAMILY(onehot_family)
(KernelFamily{"onehot", {"tensor_index.cuh", "gather_scatter.cuh"}, emit_onehot});

}  // namespace modelc::codegen

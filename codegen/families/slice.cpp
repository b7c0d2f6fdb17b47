// codegen/families/slice.cpp — the "slice" family: Slice as a strided copy from an offset with
// stepped strides (negative steps walk backward): the ranges and the view of ops::slice_ranges and
// ops::slice_view (ops/tensor.h), as the reference takes them; mc::dm::Copy.
#include "codegen/families/data_movement.h"
#include "ops/tensor.h"
#include "support/error.h"

namespace modelc::codegen {

StridedCopy slice_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const std::vector<ops::SliceRange> ranges = ops::slice_ranges(n, x.shape, ops::slice_params(n));
  StridedCopy c;
  c.shape = y.shape;
  c.y_strides = y.strides;
  c.x_strides = x.strides;
  c.x_offset = ops::slice_view(ranges, c.x_strides);
  for (const ops::SliceRange& r : ranges) {
    if (r.count != y.shape[static_cast<std::size_t>(r.axis)])
      throw n.error("internal: the slice of axis " + std::to_string(r.axis) + " has another length than the output");
  }
  return c;
}

namespace {

KernelLaunches emit_slice(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  return copy_kernel(ctx, y, x, slice_plan(*k.source.node, x, y), "x sliced to " + shape_str(y.shape));
}

}  // namespace

MODELC_REGISTER_FAMILY(slice_family)
(KernelFamily{
    "slice", {"tensor_index.cuh", "data_movement.cuh"}, emit_slice});

}  // namespace modelc::codegen

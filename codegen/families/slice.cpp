// codegen/families/slice.cpp — the "slice" family: Slice as a strided copy from an offset with
// stepped strides (negative steps walk backward): the ranges and the view of ops::slice_ranges and
// ops::slice_view (ops/tensor.h), as the reference takes them (the kernel's plan: schedule/copy.h
// slice_plan); mc::dm::Copy.
#include "codegen/families/elementwise_util.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_slice(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  return copy_kernel(ctx, y, x, plan_of<StridedCopy>(k), "x sliced to " + shape_str(y.shape));
}

}  // namespace

MODELC_REGISTER_FAMILY(slice_family)
(KernelFamily{
    "slice", {"tensor_index.cuh", "data_movement.cuh"}, emit_slice});

}  // namespace modelc::codegen

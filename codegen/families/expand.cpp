// codegen/families/expand.cpp — the "expand" family: Expand as a strided copy with x's numpy
// broadcast strides (0 along the broadcast dims) over y's shape (mc::dm::Copy).
#include "codegen/families/elementwise_util.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_expand(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  return copy_kernel(ctx, y, x, expand_plan(x, y), "x broadcast to " + shape_str(y.shape));
}

}  // namespace

MODELC_REGISTER_FAMILY(expand_family)
(KernelFamily{"expand",
              {"tensor_index.cuh", "data_movement.cuh"},
              emit_expand});

}  // namespace modelc::codegen

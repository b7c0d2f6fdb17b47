// codegen/families/tile.cpp — the "tile" family: Tile as a strided copy over
// [repeats_0, len_0, repeats_1, len_1, ...], x's strides 0 on the repeat dims (mc::dm::Copy).
#include "codegen/families/elementwise_util.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_tile(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  return copy_kernel(ctx, y, x, tile_plan(x, y), "x repeated to " + shape_str(y.shape));
}

}  // namespace

MODELC_REGISTER_FAMILY(tile_family)
(KernelFamily{"tile",
              {"tensor_index.cuh", "data_movement.cuh"},
              emit_tile});

}  // namespace modelc::codegen

// codegen/families/tile.cpp — the "tile" family: Tile as a strided copy over
// [repeats_0, len_0, repeats_1, len_1, ...], x's strides 0 on the repeat dims (mc::dm::Copy).
#include "codegen/families/data_movement.h"

namespace modelc::codegen {

StridedCopy tile_plan(const TensorView& x, const TensorView& y) {
  StridedCopy c;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t len = x.shape[d];
    const int64_t repeats = len == 0 ? 0 : y.shape[d] / len;
    c.shape.insert(c.shape.end(), {repeats, len});
    c.x_strides.insert(c.x_strides.end(), {0, x.strides[d]});
    c.y_strides.insert(c.y_strides.end(), {len * y.strides[d], y.strides[d]});
  }
  return c;
}

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

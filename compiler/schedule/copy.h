// compiler/schedule/copy.h — strided copies, the form most data-movement kernels take (transpose,
// slice, concat, split, expand, tile, depth_space, layout conversions): the copy of a view into
// another, dim collapsing, numpy broadcast strides, whether a copy goes through shared-memory
// tiles, and each copy family's copies, worked out from the op's axes, ranges and parameters
// (compiler/ops, the reference's own rules) applied to its views. The plan_kernels stage keeps
// them as the kernels' plans (schedule/data_movement.h); the tactics stage reads them for the
// notes; the families print them.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/schedule.h"

namespace modelc {

using Strides = std::vector<int64_t>;

/// Strides of view v as an operand over `out` (numpy broadcasting: v's dims align with the last
/// dims of out; a dim of length 1 and every missing leading dim get stride 0).
Strides broadcast_strides(const TensorView& v, const Shape& out);

/// Drops dims of length 1 and merges neighbouring dims that every stride list walks as one
/// (s[d] == s[d+1] * shape[d+1]), so the kernels do the least index math. Keeps the element order.
void collapse(Shape& shape, std::vector<Strides*> strides);

/// \brief A strided copy: y[offset(i, y_strides) + y_offset] = x[offset(i, x_strides) + x_offset]
/// for every element i (C order) of `shape`. Offsets and strides are in elements.
struct StridedCopy {
  Shape shape;
  Strides y_strides, x_strides;
  int64_t y_offset = 0, x_offset = 0;
};

/// The dim along which x is contiguous when a (collapsed) copy should go through shared-memory
/// tiles: x and y contiguous along different dims, both at least 8 long. -1 otherwise.
int tiled_dim(const StridedCopy& collapsed);

/// Transpose: y[i] = x[perm(i)] (ops::transpose_perm).
StridedCopy transpose_plan(const Node& n, const TensorView& x, const TensorView& y);
/// Slice: the ranges of ops::slice_ranges as an offset and stepped strides.
StridedCopy slice_plan(const Node& n, const TensorView& x, const TensorView& y);
/// Expand: x's broadcast strides over y's shape.
StridedCopy expand_plan(const TensorView& x, const TensorView& y);
/// Tile: a copy over [repeats_0, len_0, repeats_1, len_1, ...] with zero strides in x on the repeats.
StridedCopy tile_plan(const TensorView& x, const TensorView& y);
/// DepthToSpace (DCR / CRD) and SpaceToDepth: a copy over six dims.
StridedCopy depth_space_plan(const Node& n, const TensorView& x, const TensorView& y);
/// Concat: one copy per input, into its place along the axis of y.
std::vector<StridedCopy> concat_plan(const Node& n, const std::vector<TensorView>& xs, const TensorView& y);
/// Split: one copy per output (absent outputs: an empty copy), from its place along the axis of x.
std::vector<StridedCopy> split_plan(const Node& n, const TensorView& x, const std::vector<TensorView>& ys);

}  // namespace modelc

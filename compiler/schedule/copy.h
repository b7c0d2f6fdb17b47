// compiler/schedule/copy.h — strided copies, the form most data-movement kernels take (transpose,
// slice, concat, split, expand, tile, depth_space, layout conversions): the copy of a view into
// another, dim collapsing, numpy broadcast strides, and whether a copy goes through shared-memory
// tiles. The tactics stage reads them for the data families' notes; the families print them.
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

}  // namespace modelc

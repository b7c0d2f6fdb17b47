// codegen/families/data_movement.h — the emit-time plans of the data-movement families
// (transpose, slice, concat, split, expand, tile, depth_space, pad, gather, resize): the index math
// of each op, worked out before any code is written by applying the op's axes, ranges and
// parameters (compiler/ops, the reference's own rules) to its views. The family files emit these
// plans; tests check them against the reference interpreter.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/families/elementwise_util.h"

namespace modelc::codegen {

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

/// \brief Pad along each dim d: output coordinate o reads input coordinate lo[d] + (o - max(begin[d], 0))
/// when that falls in the kept range [lo[d], lo[d] + kept[d]), else by the mode (templates/
/// data_movement.cuh, mc::dm::Pad).
struct PadPlan {
  std::string mode;  ///< constant, edge, reflect, wrap
  std::vector<int64_t> lo, kept, begin;
  Tensor fill;          ///< the constant-mode value as x's dtype, when known at emit time
  int fill_input = -1;  ///< else the node input that holds it (a tensor computed at run time)
};
PadPlan pad_plan(const Node& n, const TensorView& x, const TensorView& y);

/// \brief Gather: y = [outer..., indices..., inner...], x = [outer..., axis_len, inner...].
struct GatherPlan {
  Shape outer, inner;
  Strides x_outer_strides, x_inner_strides;
  int64_t axis_len = 0, x_axis_stride = 0;
};
GatherPlan gather_plan(const Node& n, const TensorView& x, const TensorView& y);

/// \brief Resize: per dim, the taps of every output coordinate (none for a dim the reference leaves
/// as it is). Each coordinate has `taps[d]` entries in `table`, from `start[d]`: index -1 is an
/// unused tap, index -2 on the first tap marks a coordinate outside the crop box.
struct ResizePlan {
  std::vector<int64_t> taps, start;
  std::vector<std::pair<int32_t, double>> table;
  double extrapolation = 0.0;
  std::string summary;  ///< "linear, half_pixel" for comments
};
ResizePlan resize_plan(const Node& n, const TensorView& x, const TensorView& y);

}  // namespace modelc::codegen

// compiler/ops/tensor.h — the index rules of the data-movement ops Concat, Split, Slice, Gather
// and Transpose: the reference evaluation and shape rules (ops/tensor.cpp) and the code
// generator's concat, split, slice, gather and transpose families read the same axes, lengths,
// ranges and permutations.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

/// Concat's 'axis' (required; negative from opset 11 on) made non-negative for inputs of rank
/// `rank`. Error naming the node when it is absent or out of range.
int64_t concat_axis(const Node& n, int64_t rank);

/// \brief Where a Split cuts its input: the axis and one length per output.
struct SplitParts {
  int64_t axis = 0;
  std::vector<int64_t> sizes;
};
/// The lengths are given (the 'split' attribute before opset 13; from 13 the 'split' input, whose
/// values `split_input` holds, null when the node has none) or equal parts (from opset 18
/// 'num_outputs' parts of ceil(len / num_outputs), the last smaller). Error naming the node when
/// they do not fit the input of shape `in`.
SplitParts split_parts(const Node& n, const Shape& in, const std::vector<int64_t>* split_input);
/// The same with the 'split' input read as a constant of the graph.
SplitParts split_parts(const Node& n, const Shape& in);

/// \brief A Slice's starts, ends, axes and steps as the node gives them.
struct SliceParams {
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
};
/// Attributes before opset 10, constant inputs from 10 (Error naming the node when one is computed
/// at run time).
SliceParams slice_params(const Node& n);

/// \brief What a Slice takes along one axis: `count` elements from `start`, `step` apart.
struct SliceRange {
  int64_t axis = 0;  ///< made non-negative
  int64_t start = 0, step = 1, count = 0;
};
/// One range per sliced axis, in the order the node lists them (axes absent: 0, 1, ...), with
/// negative starts and ends counted from the end of the axis and clamped to it. Error naming the
/// node for lists of different lengths, an axis out of range or repeated, or a step of 0.
std::vector<SliceRange> slice_ranges(const Node& n, const Shape& in, const SliceParams& p);
/// The slice as a view of its input: `strides` (the input's, in elements, any layout) become the
/// slice's (step * stride along a sliced axis, 0 where it keeps one element); returns the offset
/// of the slice's first element.
int64_t slice_view(const std::vector<SliceRange>& ranges, std::vector<int64_t>& strides);

/// Gather's 'axis' (default 0; negative from opset 11 on) made non-negative for data of shape
/// `data`. Error naming the node for a scalar or an axis out of range.
int64_t gather_axis(const Node& n, const Shape& data);

/// Transpose's 'perm' (default: the dims reversed) for an input of rank `rank`. Error naming the
/// node when it is not a permutation of 0..rank-1.
std::vector<int64_t> transpose_perm(const Node& n, int64_t rank);

/// A Transpose whose permutation keeps the dims of extent > 1 in order: it moves only unit dims,
/// so its output holds its input's elements in the same order (false for any other node).
bool transpose_moves_unit_dims_only(const Node& n);

}  // namespace modelc::ops

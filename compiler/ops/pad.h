// compiler/ops/pad.h — what a Pad node does, in every form (pads as an attribute before opset 11,
// as an input from 11, with axes from 18, the wrap mode from 19): the reference evaluation and
// shape rule (ops/pad.cpp) and the code generator's pad family read the same pads, mode and fill.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief A Pad's mode and, per input dim, its begin and end pads (a negative pad crops).
struct PadParams {
  std::string mode;  ///< constant, reflect, edge or wrap
  std::vector<int64_t> begin, end;
};
/// The pads are the 'pads' attribute before opset 11, else the 'pads' input's values
/// (`pads_input`); from opset 18 they pad the axes of the 'axes' input (`axes_input`, null when the
/// node has none: every axis). Error naming the node for a mode its opset does not have, pads that
/// do not fit the input of shape `in`, a bad axis, or a crop larger than its axis.
PadParams pad_params(const Node& n, const Shape& in, const std::vector<int64_t>* pads_input,
                     const std::vector<int64_t>* axes_input);
/// The same with the 'pads' and 'axes' inputs read as constants of the graph.
PadParams pad_params(const Node& n, const Shape& in);

/// The constant mode's fill value as a scalar of `dtype`: the 'value' attribute (default 0) before
/// opset 11, else `constant_value` (the 'constant_value' input's data; null when the node has
/// none: 0). Error naming the node when it is not one value.
Tensor pad_fill(const Node& n, DType dtype, const Tensor* constant_value);

}  // namespace modelc::ops

// compiler/ops/softmax.h — which dims of its input a Softmax / LogSoftmax normalizes over: the
// reference evaluation (ops/softmax.cpp) and the code generator's softmax family read the same rule.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief The dims [axis, end) of X that one softmax row runs over; the dims before axis and
/// from end on index the rows.
struct SoftmaxDims {
  int64_t axis = 0;
  int64_t end = 0;
  bool coerced = false;  ///< before opset 13: the input coerced to 2-D at axis (end is the rank)
};

/// Before opset 13 every dim from `axis` (default 1) on; from opset 13 the one dim `axis`
/// (default -1). Error naming the node when the axis is out of range for `rank`.
SoftmaxDims softmax_dims(const Node& n, int64_t rank);

}  // namespace modelc::ops

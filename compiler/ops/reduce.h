// compiler/ops/reduce.h — which dims the reduction ops reduce and their attributes: Reduce*,
// ArgMax / ArgMin and TopK. The reference evaluation and shape rules (ops/reduce.cpp) and the code
// generator's reduce, argminmax and topk families read the same rules.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief The dims a Reduce* node reduces.
struct ReduceDims {
  std::vector<bool> reduced;  ///< per input dim
  bool noop = false;          ///< empty axes with noop_with_empty_axes = 1: nothing reduced
  bool keepdims = true;       ///< reduced dims stay in the output as 1s
};

/// The axes come from the 'axes' input (`axes_input`, its values; null when the node has none)
/// or, in the forms before ReduceSum 13 / the others 18, the 'axes' attribute. Empty axes reduce
/// every dim, unless noop_with_empty_axes says none. Error naming the node for an axis out of
/// range for `rank`, a repeated axis, or an axis of a scalar.
ReduceDims reduce_dims(const Node& n, int64_t rank, const std::vector<int64_t>* axes_input);
/// The same with the 'axes' input read as a constant of the graph (Error naming the node when it
/// is computed at run time).
ReduceDims reduce_dims(const Node& n, int64_t rank);

/// \brief An ArgMax / ArgMin node's attributes, checked against its input.
struct ArgReduce {
  int64_t axis = 0;  ///< made non-negative
  bool keepdims = true;
  bool select_last_index = false;
};
/// 'axis' (default 0), 'keepdims' (default 1), 'select_last_index' (default 0) for an input of
/// shape `x`. Error naming the node for a scalar input, an axis out of range, or an empty axis.
ArgReduce arg_reduce(const Node& n, const Shape& x);

/// \brief A TopK node's parameters, checked against its input.
struct TopKParams {
  int64_t axis = 0;  ///< made non-negative
  int64_t k = 0;
  bool largest = true;
  bool sorted = true;
};
/// 'axis' (default -1), k from `k_values` (the 'k' attribute before opset 10, input 'K' after),
/// 'largest' and 'sorted' (default 1). Error naming the node for a scalar input, an axis out of
/// range, or a k that is not one value in [0, the axis' length].
TopKParams topk_params(const Node& n, const Shape& x, const std::vector<int64_t>& k_values);
/// The same with k read from the node: the attribute, or input 'K' as a constant of the graph.
TopKParams topk_params(const Node& n, const Shape& x);

}  // namespace modelc::ops

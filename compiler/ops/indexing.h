// compiler/ops/indexing.h — the index rules of the gather / scatter ops and their kin:
// GatherElements, GatherND, ScatterElements (and the deprecated Scatter), ScatterND, OneHot and
// NonZero (ops/indexing.cpp), Trilu and CumSum (ops/trilu_cumsum.cpp). The reference evaluation,
// the shape rules and the code generator's families of the same names (codegen/families/
// gather_scatter.cpp, scan.cpp) read the same axes, dims and reductions.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace modelc::ops {

/// GatherElements' / ScatterElements' / Scatter's 'axis' (default 0, negative counts from the end)
/// made non-negative for data of rank `rank`. Error naming the node when out of range.
int64_t elements_axis(const Node& n, int64_t rank);

/// \brief GatherND's dims: data is [batch..., k indexed dims..., inner...], indices
/// [batch..., rows..., k]; the output is indices' shape without its last dim, then inner.
struct GatherNdDims {
  int64_t batch_dims = 0;  ///< 'batch_dims' (default 0)
  int64_t k = 0;           ///< indices' last dim: how many of data's dims each index row names
};
/// Checks the shapes (Error naming the node) and returns the dims.
GatherNdDims gather_nd_dims(const Node& n, const Shape& data, const Shape& indices);
/// GatherND's output shape.
Shape gather_nd_shape(const Shape& data, const Shape& indices, const GatherNdDims& d);

/// \brief How a scatter combines an update with the value in place ('reduction', opset 16 on;
/// max and min from 18).
enum class ScatterReduction { none, add, mul, max, min };
/// The node's reduction; Error naming the node for a name its opset does not have.
ScatterReduction scatter_reduction(const Node& n);
const char* reduction_name(ScatterReduction r);

/// ScatterND: indices' last dim k (<= data's rank). Checks that updates' shape is indices' shape
/// without its last dim, then data's dims from k on (Error naming the node).
int64_t scatter_nd_k(const Node& n, const Shape& data, const Shape& indices, const Shape& updates);

/// OneHot's 'axis' (default -1) made non-negative for an output of rank `indices_rank` + 1.
int64_t onehot_axis(const Node& n, int64_t indices_rank);
/// OneHot's depth from input 1 (a constant of one element, truncated to an integer, > 0), or
/// from `value` when given (the reference passes the tensor it evaluates with). Error naming the
/// node otherwise.
int64_t onehot_depth(const Node& n, const Tensor* value = nullptr);

/// \brief NonZero's output is [rank, columns]. When the input is a constant, columns is the count
/// of non-zero elements (the node folds). Otherwise (or for a constant of more than 2^24 / rank
/// elements, which would not fold) modelc bounds it statically: columns is the input's element
/// count, the first `count` columns hold the coordinates (row-major order, as ONNX) and every
/// column after them holds -1 in each row, so the count is the number of columns before the
/// first -1. True for the bounded form.
bool nonzero_bounded(const Node& n);

/// Trilu's 'upper' (default 1): true keeps the upper triangle. Error for a value other than 0 or 1.
bool trilu_upper(const Node& n);
/// Trilu's diagonal offset k (input 1, optional, default 0) when known at compile time; nullopt
/// when input 1 is computed at run time (the kernel reads it then).
std::optional<int64_t> trilu_k(const Node& n);

/// \brief CumSum's axis (input 1, a constant scalar, made non-negative) and its attributes.
struct CumSumParams {
  int64_t axis = 0;
  bool exclusive = false, reverse = false;
};
/// Error naming the node when the axis is not a constant scalar in range, or an attribute is not 0 or 1.
CumSumParams cumsum_params(const Node& n, const Tensor* axis_value = nullptr);

}  // namespace modelc::ops

// compiler/ops/common.h — helpers shared by the op families: broadcasting,
// axes, constant inputs, elementwise evaluation.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/registry.h"

namespace modelc::ops {

/// Numpy-style multidirectional broadcast of two shapes; throws Error naming
/// the node when they are incompatible.
Shape broadcast_shapes(const Node& n, const Shape& a, const Shape& b);
/// Broadcast of every present input's shape.
Shape broadcast_inputs(const Node& n);
/// For each output element (C order over `out`), the flat index into a tensor
/// of shape `in` broadcast to `out`.
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out);

/// An axis in [-rank, rank) made non-negative; Error naming the node otherwise.
int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank, const char* what = "axis");
std::vector<int64_t> normalize_axes(const Node& n, std::vector<int64_t> axes, int64_t rank);

/// \brief What to do about a value an op needs at compile time that is not a constant: a graph
/// input can be bound to a file's data with --bind (LoadOptions::bind); a computed value must
/// fold into a constant, or follow from static input shapes (--shape).
std::string not_constant_hint(const Value& v);

/// Input i's constant data as int64s, or nullopt when the input is absent.
/// Throws Error naming the node when the input is present but not constant
/// ("shape tensor must be constant" style errors).
std::optional<std::vector<int64_t>> const_ints(const Node& n, int i, const char* what);
/// Same for float data (Clip min/max, Pad value, Resize scales).
std::optional<std::vector<double>> const_floats(const Node& n, int i, const char* what);
/// Ints from an attribute (older opsets) or from input `input` (newer ones):
/// the one form the node uses.
std::optional<std::vector<int64_t>> attr_or_input_ints(const Node& n, const std::string& attr, int input);

/// The same values from a reference-evaluation input (the interpreter passes
/// tensors, constant or not).
std::vector<int64_t> ints_of(const Tensor* t);

/// Output 0 gets input 0's dtype and shape.
void infer_same_as_input(Node& n);
/// Output 0: dtype of input 0, broadcast shape of all inputs.
void infer_broadcast(Node& n);
/// Output 0: bool, broadcast shape (comparisons, logical ops).
void infer_broadcast_bool(Node& n);

/// Checks that input i has one of the given dtypes.
void require_dtype(const Node& n, int i, std::initializer_list<DType> allowed);

/// Elementwise evaluation: unary over doubles (result rounded to out dtype).
Tensor map_unary(const Tensor& x, const std::function<double(double)>& f, DType out = DType::undefined);
/// Broadcasting binary over doubles; ints are computed in int64 when `fi` is given
/// and the inputs are integers (a uint64 as its bit pattern: exact for what wraps), and in uint64
/// with `fu` when it is given and both inputs are uint64 (order, division).
Tensor map_binary(const Node& n, const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                  DType out = DType::undefined,
                  const std::function<int64_t(int64_t, int64_t)>& fi = nullptr,
                  const std::function<uint64_t(uint64_t, uint64_t)>& fu = nullptr);

/// Per-spatial-axis attribute list with a default (kernel ops): `n` values,
/// or `def` repeated when absent. Error when present with another length.
std::vector<int64_t> spatial_attr(const Node& n, const std::string& name, std::size_t count, int64_t def);

/// FLOPs rule for elementwise ops: `per_element` operations per element of output 0.
FlopsFn flops_per_output(int64_t per_element);

/// Integer division rounding toward -inf (b > 0): window arithmetic with pads can make `a` negative.
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
/// Integer division rounding toward +inf (b > 0).
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

}  // namespace modelc::ops

// compiler/ops/elementwise_rules.h — type rules and evaluation helpers shared
// by the elementwise op files (elementwise.cpp, logical.cpp, activation.cpp).
// Defined in elementwise.cpp unless said otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "ops/common.h"

namespace modelc::ops {

/// \brief A set of DTypes as a bit mask (bit = the ONNX type code). constexpr,
/// so the op files can use the sets in their static registrations without
/// depending on another file's static initialisation.
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType t) { return DTypeSet{1} << static_cast<int>(t); }
constexpr DTypeSet kFloat16_32 = dtype_bit(DType::float32) | dtype_bit(DType::float16);
constexpr DTypeSet kFloat64 = dtype_bit(DType::float64);
constexpr DTypeSet kFloats = kFloat16_32 | dtype_bit(DType::bfloat16);
constexpr DTypeSet kBf16 = dtype_bit(DType::bfloat16);
constexpr DTypeSet kInt32_64 = dtype_bit(DType::int32) | dtype_bit(DType::int64);
/// uint32 and uint64: ONNX lists them beside int32 and int64 in the older arithmetic rules.
constexpr DTypeSet kUint32_64 = dtype_bit(DType::uint32) | dtype_bit(DType::uint64);
/// Every integer type (8, 16, 32 and 64 bits, signed and unsigned).
constexpr DTypeSet kInts = kInt32_64 | kUint32_64 | dtype_bit(DType::int8) | dtype_bit(DType::uint8) |
                           dtype_bit(DType::int16) | dtype_bit(DType::uint16);
/// The signed integer types.
constexpr DTypeSet kSignedInts = kInt32_64 | dtype_bit(DType::int8) | dtype_bit(DType::int16);
constexpr DTypeSet kBool = dtype_bit(DType::boolean);
/// ONNX's numeric types (all_numeric_types): every float and integer type.
constexpr DTypeSet kNumeric = kFloats | kFloat64 | kInts;
constexpr DTypeSet kAllTypes = kNumeric | kBool;

/// \brief The types an input accepts, by opset: entry {since, set} holds from
/// opset `since` until the next entry. Entries are in increasing `since`.
using TypeRule = std::vector<std::pair<int, DTypeSet>>;

/// The set in force at `opset` (0 when the rule starts later).
DTypeSet types_at(const TypeRule& rule, int opset);
/// Error naming input i, its type, the op, the opset and the accepted types
/// when input i (if present) is not in the rule's set at the node's opset.
void require_types(const Node& n, int i, const TypeRule& rule);
/// Error naming both inputs and their types when inputs i and j (if present)
/// differ in type (ONNX's "T" constraint: one type for all of them).
void require_same_type(const Node& n, int i, int j);
/// A validator: every input present, in `rule`, and of input 0's type.
ValidateFn same_type_inputs(TypeRule rule);

/// Wrapping int64 arithmetic (two's complement, no undefined behaviour).
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t wrap_neg(int64_t a) { return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); }

/// Unary map that is exact for integer tensors: `fi` over int64 for integer
/// and bool dtypes, `f` over doubles for float dtypes. Output dtype = input's.
Tensor map_unary_exact(const Tensor& x, const std::function<double(double)>& f,
                       const std::function<int64_t(int64_t)>& fi);
/// Reference evaluation of a unary op (floats only, or computed in double).
EvalFn eval_unary(std::function<double(double)> f);
/// Reference evaluation of a unary op that also takes integers (exact).
EvalFn eval_unary_exact(std::function<double(double)> f, std::function<int64_t(int64_t)> fi);

/// PRelu 1 and 6: the slope's shape in numpy form (one element: a scalar; one value per channel:
/// [C, 1, ..., 1]) for X of shape `x`; Error naming the node for another slope. Defined in
/// activation.cpp.
Shape legacy_slope_shape(const Node& n, const Shape& x, const Shape& slope);

}  // namespace modelc::ops

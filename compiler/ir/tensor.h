// compiler/ir/tensor.h — a dense, C-order tensor with its bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace modelc {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape (1 for a scalar, the empty shape; 0 when a dim is 0, whatever the
/// others). A product past int64 saturates at INT64_MAX (shapes read from a file before
/// check_size_limit), so it is never undefined.
int64_t num_elements(const Shape& s);
/// \brief The most elements one tensor may have, 2^31 - 1: the GEMM, convolution and reduction
/// kernels index a tensor's elements with 32-bit ints. The frontend refuses larger tensors and
/// inputs, shape inference larger values (docs/LIMITS.md).
constexpr int64_t kMaxTensorElements = 2147483647;
/// \brief Throws Error "`what` has more than 2147483647 elements ..." when `s` (dims >= 0) has
/// more than kMaxTensorElements elements; the count cannot overflow on the way.
void check_size_limit(const Shape& s, const std::string& what);
/// "1x3x224x224" ("scalar" for the empty shape).
std::string shape_str(const Shape& s);
/// C-order strides in elements.
std::vector<int64_t> strides_of(const Shape& s);

/// \brief Constant data and reference-interpreter values: dtype, shape and
/// little-endian C-order bytes. The bytes are shared (copy-on-write is not
/// needed: a Tensor's data is never modified after it is built, except
/// through mutable_data() on a tensor that owns its only reference).
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  ///< zero-filled
  Tensor(DType dtype, Shape shape, std::vector<uint8_t> bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return num_elements(shape_); }
  std::size_t nbytes() const { return data_ ? data_->size() : 0; }
  bool defined() const { return dtype_ != DType::undefined; }

  const uint8_t* raw() const { return data_ ? data_->data() : nullptr; }
  uint8_t* mutable_raw();  ///< detaches from other holders first
  template <class T> const T* data() const { return reinterpret_cast<const T*>(raw()); }
  template <class T> T* mutable_data() { return reinterpret_cast<T*>(mutable_raw()); }

  /// Same bytes, new shape (element count must match).
  Tensor reshaped(Shape shape) const;

  /// Every element as double (float16/bfloat16/bool/integers converted; uint64 by its value).
  std::vector<double> to_f64() const;
  /// Every element as int64 (floats truncated toward zero, saturating; bool as 0/1; a uint64
  /// beyond INT64_MAX as its bit pattern, so integer arithmetic that wraps is exact for it too).
  std::vector<int64_t> to_i64() const;
  /// Element i as double / int64 without converting the whole tensor.
  double f64_at(int64_t i) const;
  int64_t i64_at(int64_t i) const;

  /// Build from doubles, rounding to dtype (round-to-nearest-even for the float types, once:
  /// a double becomes float16/bfloat16 without a double rounding through float; truncation toward
  /// zero for integers, saturating; x != 0 for bool).
  static Tensor from_f64(DType dtype, Shape shape, const std::vector<double>& v);
  /// Build from int64s: integers wrap as a C cast (a uint64 takes the bit pattern), floats round
  /// to nearest even, bool is x != 0.
  static Tensor from_i64(DType dtype, Shape shape, const std::vector<int64_t>& v);
  static Tensor from_f32(Shape shape, const std::vector<float>& v);
  static Tensor scalar_i64(int64_t v) { return from_i64(DType::int64, {}, {v}); }

  /// The values as the element type, converting when dtype differs, element by element from
  /// the stored value (ONNX Cast: float -> integer truncates toward zero and saturates, NaN -> 0;
  /// integer -> integer wraps; unsigned sources by their value; anything -> bool is x != 0;
  /// -> a float type rounds once to nearest even).
  Tensor cast(DType to) const;

 private:
  DType dtype_ = DType::undefined;
  Shape shape_;
  std::shared_ptr<std::vector<uint8_t>> data_;
};

}  // namespace modelc

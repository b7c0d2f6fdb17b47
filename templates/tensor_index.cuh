// templates/tensor_index.cuh — compile-time shapes and strides, index math, and element
// conversions shared by the elementwise and data-movement templates (namespace mc::ix).
//
// A shape or a stride list is a type, `Dims<2, 3, 4>`: kernels are specialised to the model's
// exact shapes, so every division and modulo in the index math is by a constant. Strides are in
// elements, one per dim of the shape they walk; 0 on a broadcast dim, negative on a reversed one.
//
// Element conversions follow the reference interpreter (compiler/ir/tensor.cpp) exactly:
// float -> integer truncates toward zero and saturates (NaN -> 0), integer -> integer wraps,
// anything -> bool is `!= 0`, -> float16/bfloat16 rounds once to nearest even (a double or a wide
// integer through a float rounded to odd, so there is no double rounding).
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <math.h>  // INFINITY, NAN in emitted literals
#include <stdint.h>

#include <type_traits>
#include <utility>

#include "device.h"

namespace mc::ix {

/// Threads per block of every kernel here (grid-stride loops).
constexpr int kBlock = 256;
/// Most blocks a launch uses; larger tensors loop (each thread takes several elements).
constexpr int64_t kMaxBlocks = 4096;

/// \brief Blocks for `n` elements, one per thread up to kMaxBlocks blocks (at least one block).
__host__ __device__ constexpr unsigned grid_for(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

/// \brief A list of compile-time integers: a shape, or the strides of a view over a shape.
template <int64_t... V>
struct Dims {
  static constexpr int rank = static_cast<int>(sizeof...(V));
  static constexpr int64_t numel = (int64_t{1} * ... * V);
  /// The k-th value (0 <= k < rank).
  __host__ __device__ static constexpr int64_t at(int k) {
    constexpr int64_t v[] = {V..., 0};
    return v[k];
  }
};

/// Product of Shape's dims after dim d: the linear-index step of dim d in C order.
template <class Shape>
__host__ __device__ constexpr int64_t inner_size(int d) {
  int64_t p = 1;
  for (int k = d + 1; k < Shape::rank; ++k) p *= Shape::at(k);
  return p;
}

/// Largest |offset| + 1 that Strides reach over Shape.
template <class Shape, class Strides>
__host__ __device__ constexpr int64_t extent() {
  static_assert(Shape::rank == Strides::rank, "mc::ix: a stride list must have one stride per dim of its shape");
  int64_t e = 1;
  for (int d = 0; d < Shape::rank; ++d) {
    const int64_t s = Strides::at(d);
    e += (s < 0 ? -s : s) * (Shape::at(d) > 0 ? Shape::at(d) - 1 : 0);
  }
  return e;
}

/// True when 32-bit indices suffice for Shape (with a grid-stride loop) and every view over it.
template <class Shape, class... Strides>
__host__ __device__ constexpr bool fits_int32() {
  constexpr int64_t limit = int64_t{1} << 31;
  const int64_t loop = Shape::numel + int64_t{grid_for(Shape::numel)} * kBlock;
  bool ok = loop < limit;
  const int64_t extents[] = {int64_t{0}, extent<Shape, Strides>()...};
  for (int64_t e : extents) ok = ok && e < limit;
  return ok;
}

/// The index type of a kernel over Shape: int32_t where it is enough (cheaper division), else int64_t.
template <class Shape, class... Strides>
using index_t = std::conditional_t<fits_int32<Shape, Strides...>(), int32_t, int64_t>;

/// \brief Coordinate along dim D of the element at linear (C-order) position i of Shape.
template <class Shape, int D, class Index>
__device__ __forceinline__ Index coord(Index i) {
  constexpr Index step = static_cast<Index>(inner_size<Shape>(D));
  constexpr Index n = static_cast<Index>(Shape::at(D));
  if constexpr (D == 0) {
    return i / step;  // i < numel: no modulo on the outermost dim
  } else {
    return (i / step) % n;
  }
}

namespace detail {
// Offset over dims 0..D, where i is the linear index over those dims.
template <class Shape, class Strides, int D, class Index>
__device__ __forceinline__ Index offset_upto(Index i) {
  constexpr Index n = static_cast<Index>(Shape::at(D));
  constexpr Index s = static_cast<Index>(Strides::at(D));
  if constexpr (D == 0) {
    return i * s;
  } else if constexpr (s == 0) {
    return offset_upto<Shape, Strides, D - 1>(i / n);
  } else {
    return (i % n) * s + offset_upto<Shape, Strides, D - 1>(i / n);
  }
}
}  // namespace detail

/// \brief Offset (in elements) of the element at linear position i of Shape in a view with Strides.
template <class Shape, class Strides, class Index>
__device__ __forceinline__ Index offset(Index i) {
  static_assert(Shape::rank == Strides::rank, "mc::ix: a stride list must have one stride per dim of its shape");
  if constexpr (Shape::rank == 0) {
    return 0;
  } else {
    return detail::offset_upto<Shape, Strides, Shape::rank - 1>(i);
  }
}

/// First index and step of a grid-stride loop.
template <class Index>
__device__ __forceinline__ Index first_index() {
  return static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + static_cast<Index>(threadIdx.x);
}
template <class Index>
__device__ __forceinline__ Index grid_stride() {
  return static_cast<Index>(gridDim.x) * static_cast<Index>(blockDim.x);
}

// ---- element types and conversions --------------------------------------------------------------

/// \brief bfloat16 storage: runtime_stub/device.h's mc::bf16 (conversions only; arithmetic in float).
using bf16 = ::mc::bf16;

__device__ __forceinline__ float bf16_to_float(bf16 v) { return static_cast<float>(v); }
/// Round to nearest even; NaN stays a (quiet) NaN, as compiler/ir/dtype.cpp's float_to_bfloat16.
__device__ __forceinline__ bf16 float_to_bf16(float f) { return bf16(f); }

/// \brief The type a stored element is computed in: float for float32/float16/bfloat16, double for
/// float64, int64_t for the integers up to 32 bits and int64, uint64_t for uint64 (exact unsigned
/// order and division), bool for bool. Raw bits (copies: the elementwise family's uint8_t ..
/// uint64_t operands) load and store unchanged through these too.
template <class T>
struct ComputeOf {
  using type = int64_t;  // int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t
};
template <>
struct ComputeOf<double> {
  using type = double;
};
template <>
struct ComputeOf<float> {
  using type = float;
};
template <>
struct ComputeOf<__half> {
  using type = float;
};
template <>
struct ComputeOf<bf16> {
  using type = float;
};
template <>
struct ComputeOf<bool> {
  using type = bool;
};
template <>
struct ComputeOf<uint64_t> {
  using type = uint64_t;
};
template <class T>
using compute_t = typename ComputeOf<T>::type;

/// \brief Element `off` of a T array, as its compute type.
template <class T, class Index>
__device__ __forceinline__ compute_t<T> load(const void* p, Index off) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<const uint8_t*>(p)[off] != 0;  // any non-zero byte is true
  } else if constexpr (std::is_same_v<T, __half>) {
    return __half2float(static_cast<const __half*>(p)[off]);
  } else if constexpr (std::is_same_v<T, bf16>) {
    return bf16_to_float(static_cast<const bf16*>(p)[off]);
  } else {
    return static_cast<compute_t<T>>(static_cast<const T*>(p)[off]);
  }
}

namespace detail {
template <class I>
struct IntLimits;
template <>
struct IntLimits<int8_t> {
  static constexpr int8_t min = INT8_MIN, max = INT8_MAX;
};
template <>
struct IntLimits<uint8_t> {
  static constexpr uint8_t min = 0, max = UINT8_MAX;
};
template <>
struct IntLimits<int16_t> {
  static constexpr int16_t min = INT16_MIN, max = INT16_MAX;
};
template <>
struct IntLimits<uint16_t> {
  static constexpr uint16_t min = 0, max = UINT16_MAX;
};
template <>
struct IntLimits<int32_t> {
  static constexpr int32_t min = INT32_MIN, max = INT32_MAX;
};
template <>
struct IntLimits<uint32_t> {
  static constexpr uint32_t min = 0, max = UINT32_MAX;
};
template <>
struct IntLimits<int64_t> {
  static constexpr int64_t min = INT64_MIN, max = INT64_MAX;
};
template <>
struct IntLimits<uint64_t> {
  static constexpr uint64_t min = 0, max = UINT64_MAX;
};

// double -> integer as the reference's from_f64: truncation toward zero, saturating, NaN -> 0.
template <class I>
__device__ __forceinline__ I saturate_to_int(double d) {
  constexpr double lo = static_cast<double>(IntLimits<I>::min);
  constexpr double hi = static_cast<double>(IntLimits<I>::max);  // 2^63, 2^64 for the 64-bit ones: >= catches it
  if (d != d) return 0;
  if (d <= lo) return IntLimits<I>::min;
  if (d >= hi) return IntLimits<I>::max;
  return static_cast<I>(d);
}
}  // namespace detail

/// True for the stored float types (float, __half, bf16, double).
template <class T>
__host__ __device__ constexpr bool is_float_type() {
  return std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, bf16> ||
         std::is_same_v<T, double>;
}

namespace detail {
// float -> a stored float type of at most 32 bits, rounding to nearest even.
template <class To>
__device__ __forceinline__ To from_float(float f) {
  if constexpr (std::is_same_v<To, float>) {
    return f;
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(f);
  } else {
    return float_to_bf16(f);
  }
}

// double -> float rounded to odd (truncated, the last bit set when inexact), as
// compiler/ir/dtype.cpp's double_to_float_round_odd: a second rounding to float16 or bfloat16 then
// gives the nearest-even rounding of the double itself.
__device__ __forceinline__ float round_odd(double d) {
  float f = static_cast<float>(d);
  if (d != d || f - f != 0.0f || static_cast<double>(f) == d) return f;  // NaN, infinite, or exact
  if ((f < 0.0f ? -static_cast<double>(f) : static_cast<double>(f)) > (d < 0.0 ? -d : d)) {
    f = __uint_as_float(__float_as_uint(f) - 1u);  // one step toward zero (f != 0: |f| > |d| >= 0)
  }
  return __uint_as_float(__float_as_uint(f) | 1u);
}
}  // namespace detail

/// \brief A computed value (float, double, int64_t, uint64_t, bool) as element type To, with the
/// reference interpreter's rounding: see the file comment.
template <class To, class From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<From, To>) {
    return v;
  } else if constexpr (std::is_same_v<From, bool>) {
    return convert<To>(static_cast<int64_t>(v ? 1 : 0));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, float> || std::is_same_v<To, double>) {
    return static_cast<To>(v);  // float, double or an integer: rounded once
  } else if constexpr (std::is_floating_point_v<From>) {  // float or double
    if constexpr (is_float_type<To>()) {  // __half, bf16
      if constexpr (std::is_same_v<From, double>) {
        return detail::from_float<To>(detail::round_odd(v));
      } else {
        return detail::from_float<To>(v);
      }
    } else {
      return detail::saturate_to_int<To>(static_cast<double>(v));
    }
  } else if constexpr (is_float_type<To>()) {  // int64_t / uint64_t -> __half, bf16: as the reference, via double
    return detail::from_float<To>(detail::round_odd(static_cast<double>(v)));
  } else {
    return static_cast<To>(v);  // integer -> integer: wraps, as a C cast
  }
}

/// \brief Stores a computed value as element `off` of a To array.
template <class To, class Index, class V>
__device__ __forceinline__ void store(void* p, Index off, V v) {
  static_cast<To*>(p)[off] = convert<To>(v);
}

}  // namespace mc::ix

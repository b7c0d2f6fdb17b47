// templates/elementwise.cuh — broadcasting elementwise kernels (namespace mc::ew):
// y = Op(x0, x1, ...) for every element of one output shape.
//
// Each operand is a view over the output's shape: an element type and a stride per output dim
// (0 on a dim it is broadcast along), so numpy broadcasting, strided inputs and strided outputs
// are all the same index math (mc::ix::offset). Operands are loaded as their compute type
// (float for float32/float16/bfloat16, int64_t for integers, bool for bool; see tensor_index.cuh),
// the Op computes, and the result is stored with the reference interpreter's rounding
// (mc::ix::convert). So Cast is the Identity op between two element types, and a copy is the
// Identity op on raw bits (uint16_t, uint32_t, uint64_t pass unchanged).
//
// Float math is FP32 (the reference computes in float64: results agree to a few ulps), for FP16
// storage too (loads widen to float, stores round to nearest even); integer math is exact int64
// arithmetic that wraps like the reference's (two's complement). FP16 operands that are all
// contiguous go two elements at a time through __half2 loads and stores (Elementwise::kPairs).
//
// Emitted use (codegen/families/elementwise.cpp; the entry point and the launch: codegen/launch.h):
//   using resnet50_k3_t = mc::ew::Elementwise<mc::ew::Add, mc::ix::Dims<64, 3136>,
//                                             mc::ew::Operand<float, mc::ix::Dims<3136, 1>>,  // y
//                                             mc::ew::Operand<float, mc::ix::Dims<3136, 1>>,  // x0
//                                             mc::ew::Operand<float, mc::ix::Dims<1, 0>>>;    // x1 (per channel)
//   resnet50_k3_t::Params p{};
//   p.y = y;
//   p.x[0] = x0;
//   p.x[1] = x1;  // p.op: the Op's attributes, for ops that have some (mc::ew::LeakyRelu{0.01f})
//   MC_LAUNCH(resnet50_k3, resnet50_k3_t::grid(), resnet50_k3_t::block(), 0, p);
#pragma once

#include "tensor_index.cuh"  // first: the standard headers before device.h

#include "activation.cuh"
#include "elementwise_math.cuh"  // Sin, Cos, ..., Round, Sign, IsNaN, IsInf, Mod, Softsign, Mish, Celu, Gelu

namespace mc::ew {

/// \brief An operand of an elementwise kernel: element type T, one stride per output dim.
template <class T, class Strides>
struct Operand {
  using type = T;
  using strides = Strides;
};

/// \brief y = Op(x...) over Shape. Y and X are Operands. Op is a functor passed by value in Params
/// (its members are the op's attributes).
template <class Op, class Shape, class Y, class... X>
struct Elementwise {
  static constexpr int kInputs = static_cast<int>(sizeof...(X));
  using Index = ix::index_t<Shape, typename Y::strides, typename X::strides...>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    void* y = nullptr;
    const void* x[kInputs > 0 ? kInputs : 1] = {};
    Op op{};  ///< a default-constructed Op for the ops without attributes
  };

  template <std::size_t... K>
  static __device__ __forceinline__ void element(const Params& p, Index i, std::index_sequence<K...>) {
    ix::store<typename Y::type>(p.y, ix::offset<Shape, typename Y::strides>(i),
                                p.op(ix::load<typename X::type>(p.x[K], ix::offset<Shape, typename X::strides>(i))...));
  }

  // ---- FP16 pairs (half2) ----
  // When every operand is __half and walks the collapsed, one-dim shape contiguously (stride 1),
  // or is a single broadcast element (stride 0), and the count is even, each thread takes two
  // neighbouring elements: 32-bit __half2 loads and stores instead of 16-bit ones (half the memory
  // transactions of this memory-bound loop). The math is the scalar path's (FP32 per element,
  // rounded to nearest even at the store), so both paths give the same bits.
  template <class Operand>
  static constexpr bool pairable() {
    return std::is_same_v<typename Operand::type, __half> && Operand::strides::rank == 1 &&
           (Operand::strides::at(0) == 1 || Operand::strides::at(0) == 0);
  }
  static constexpr bool kPairs = Shape::rank == 1 && Shape::numel >= 2 && Shape::numel % 2 == 0 &&
                                 std::is_same_v<typename Y::type, __half> && Y::strides::rank == 1 &&
                                 Y::strides::at(0) == 1 && (pairable<X>() && ...) && sizeof...(X) > 0;

  struct Pair {
    float lo, hi;
  };

  template <class Operand>
  static __device__ __forceinline__ Pair load_pair(const void* x, Index j) {
    if constexpr (Operand::strides::at(0) == 0) {
      const float v = __half2float(*static_cast<const __half*>(x));
      return {v, v};
    } else {
      const __half2 h = static_cast<const __half2*>(x)[j];
      return {__low2float(h), __high2float(h)};
    }
  }

  template <std::size_t... K>
  static __device__ __forceinline__ void pair(const Params& p, Index j, std::index_sequence<K...>) {
    const Pair v[] = {load_pair<X>(p.x[K], j)...};
    const float lo = static_cast<float>(p.op(v[K].lo...));
    const float hi = static_cast<float>(p.op(v[K].hi...));
    static_cast<__half2*>(p.y)[j] = __floats2half2_rn(lo, hi);
  }

  /// The pointers the pairs read and write whole: 4-byte aligned (buffers are 256-byte aligned;
  /// checked anyway, the scalar loop serves otherwise).
  template <std::size_t... K>
  static __device__ __forceinline__ bool pairs_aligned(const Params& p, std::index_sequence<K...>) {
    uintptr_t bits = reinterpret_cast<uintptr_t>(p.y);
    ((bits |= X::strides::at(0) != 0 ? reinterpret_cast<uintptr_t>(p.x[K]) : 0), ...);
    return (bits & 3) == 0;
  }

  static __device__ void run(const Params& p) {
    if constexpr (kPairs) {
      if (pairs_aligned(p, std::make_index_sequence<sizeof...(X)>{})) {
        for (Index j = ix::first_index<Index>(); j < static_cast<Index>(Shape::numel / 2); j += ix::grid_stride<Index>()) {
          pair(p, j, std::make_index_sequence<sizeof...(X)>{});
        }
        return;
      }
    }
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(Shape::numel); i += ix::grid_stride<Index>()) {
      element(p, i, std::make_index_sequence<sizeof...(X)>{});
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) elementwise_kernel(const typename K::Params p) {
  K::run(p);
}

// ---- ops ---------------------------------------------------------------------------------------
// Each op has an overload per compute type it accepts (float; int64_t for integer tensors; bool).
// An op applied to a type it has no overload for does not compile: the op registry's type rules
// keep that from happening.

namespace detail {
// Wrapping int64 arithmetic (no undefined behaviour on overflow), as the reference's wrap_*.
__device__ __forceinline__ int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
__device__ __forceinline__ int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
__device__ __forceinline__ int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
__device__ __forceinline__ int64_t wrap_neg(int64_t a) {
  return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a));
}
__device__ __forceinline__ bool is_nan(float x) { return x != x; }
// std::min / std::max as the reference writes them (NaN in `b` is dropped, in `a` kept).
__device__ __forceinline__ float min_of(float a, float b) { return b < a ? b : a; }
__device__ __forceinline__ float max_of(float a, float b) { return a < b ? b : a; }
}  // namespace detail

/// x (Identity, Cast: the conversion happens in the store).
struct Identity {
  template <class T>
  __device__ T operator()(T x) const {
    return x;
  }
};

// ---- unary math ----

struct Neg {
  __device__ float operator()(float x) const { return -x; }
  __device__ int64_t operator()(int64_t x) const { return detail::wrap_neg(x); }
};
struct Abs {
  __device__ float operator()(float x) const { return fabsf(x); }
  __device__ int64_t operator()(int64_t x) const { return x < 0 ? detail::wrap_neg(x) : x; }
};
struct Sqrt {
  __device__ float operator()(float x) const { return sqrtf(x); }
};
struct Exp {
  __device__ float operator()(float x) const { return expf(x); }
};
struct Log {
  __device__ float operator()(float x) const { return logf(x); }
};
struct Reciprocal {
  __device__ float operator()(float x) const { return 1.0f / x; }
};
struct Floor {
  __device__ float operator()(float x) const { return floorf(x); }
};
struct Ceil {
  __device__ float operator()(float x) const { return ceilf(x); }
};
/// erf; an integer input gives the truncated erf (computed in double, as the reference).
struct Erf {
  __device__ float operator()(float x) const { return erff(x); }
  __device__ double operator()(int64_t x) const { return erf(static_cast<double>(x)); }
};
struct Not {
  __device__ bool operator()(bool x) const { return !x; }
};

// ---- activations ----

struct Relu {
  __device__ float operator()(float x) const { return x > 0.0f ? x : 0.0f; }  // NaN -> 0, as the reference
  __device__ int64_t operator()(int64_t x) const { return x > 0 ? x : 0; }
};
struct LeakyRelu {
  float alpha;
  __device__ float operator()(float x) const { return x < 0.0f ? alpha * x : x; }
};
struct Elu {
  float alpha;
  __device__ float operator()(float x) const { return x < 0.0f ? alpha * expm1f(x) : x; }
};
struct Selu {
  float alpha, gamma;
  __device__ float operator()(float x) const { return x > 0.0f ? gamma * x : gamma * (alpha * expf(x) - alpha); }
};
struct Sigmoid {
  __device__ float operator()(float x) const {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);  // split by sign so exp never overflows into inf/inf
    return e / (1.0f + e);
  }
};
struct HardSigmoid {
  float alpha, beta;
  __device__ float operator()(float x) const { return detail::max_of(0.0f, detail::min_of(1.0f, alpha * x + beta)); }
};
struct HardSwish {
  __device__ float operator()(float x) const { return x * detail::max_of(0.0f, detail::min_of(1.0f, x / 6.0f + 0.5f)); }
};
struct Tanh {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct Softplus {
  __device__ float operator()(float x) const { return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
};
/// min(max(x, lo), hi) with bounds known at emit time; a bound that is not given (kLo / kHi
/// false) does not clip. T is the compute type (float or int64_t).
template <class T, bool kLo, bool kHi>
struct Clip {
  T lo, hi;
  __device__ T operator()(T x) const {
    if constexpr (kLo) x = x < lo ? lo : x;  // NaN stays NaN: both comparisons are false
    if constexpr (kHi) x = x > hi ? hi : x;
    return x;
  }
};
/// Clip whose bounds are tensors (inputs 1 and 2 when present, in that order).
template <bool kLo, bool kHi>
struct ClipInputs {
  template <class T>
  __device__ T operator()(T x, T bound) const {
    static_assert(kLo != kHi, "ClipInputs: one bound input");
    if constexpr (kLo) {
      return x < bound ? bound : x;
    } else {
      return x > bound ? bound : x;
    }
  }
  template <class T>
  __device__ T operator()(T x, T lo, T hi) const {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
  }
};
/// x < 0 ? slope * x : x.
struct PRelu {
  __device__ float operator()(float x, float slope) const { return x < 0.0f ? slope * x : x; }
  __device__ int64_t operator()(int64_t x, int64_t slope) const { return x < 0 ? detail::wrap_mul(slope, x) : x; }
};
/// Inference BatchNormalization: (x - mean) * scale / sqrt(var + epsilon) + B, the parameters
/// broadcast per channel (operands x, scale, B, mean, var).
struct BatchNorm {
  float epsilon;
  __device__ float operator()(float x, float scale, float b, float mean, float var) const {
    return (x - mean) * (scale / sqrtf(var + epsilon)) + b;
  }
};

// ---- binary arithmetic ----

struct Add {
  __device__ float operator()(float a, float b) const { return a + b; }
  __device__ int64_t operator()(int64_t a, int64_t b) const { return detail::wrap_add(a, b); }
};
struct Sub {
  __device__ float operator()(float a, float b) const { return a - b; }
  __device__ int64_t operator()(int64_t a, int64_t b) const { return detail::wrap_sub(a, b); }
};
struct Mul {
  __device__ float operator()(float a, float b) const { return a * b; }
  __device__ int64_t operator()(int64_t a, int64_t b) const { return detail::wrap_mul(a, b); }
};
/// Integer division truncates toward zero. Division by zero is an error in the reference; here it
/// gives 0 (a kernel cannot report it, and must not trap).
struct Div {
  __device__ float operator()(float a, float b) const { return a / b; }
  __device__ int64_t operator()(int64_t a, int64_t b) const {
    if (b == 0) return 0;
    if (b == -1) return detail::wrap_neg(a);  // INT64_MIN / -1 overflows
    return a / b;
  }
};
/// Pow: float base in float; an integer base with a float exponent in double (the result
/// truncates to the base's type); integer base and exponent exactly, wrapping like repeated
/// multiplication (a negative exponent gives the truncated 1 / base^-exp; 0 to a negative
/// power, an error in the reference, gives 0).
struct Pow {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
  __device__ float operator()(float a, int64_t b) const { return powf(a, static_cast<float>(b)); }
  __device__ double operator()(int64_t a, float b) const { return pow(static_cast<double>(a), static_cast<double>(b)); }
  __device__ int64_t operator()(int64_t base, int64_t exp) const {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      return 0;
    }
    int64_t r = 1;
    while (exp > 0) {
      if (exp & 1) r = detail::wrap_mul(r, base);
      base = detail::wrap_mul(base, base);
      exp >>= 1;
    }
    return r;
  }
};

// ---- comparisons and logic (bool results) ----

struct Equal {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Less {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Greater {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a > b;
  }
};
struct LessOrEqual {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOrEqual {
  template <class T>
  __device__ bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct And {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  __device__ bool operator()(bool a, bool b) const { return a != b; }
};

/// condition ? x : y (x and y are usually raw bits: an exact copy).
struct Where {
  template <class T>
  __device__ T operator()(bool c, T x, T y) const {
    return c ? x : y;
  }
};

// ---- variadic (one or more inputs, folded left to right) ----

/// Largest input; NaN propagates (numpy's maximum, what the reference computes).
struct Max {
  template <class... R>
  __device__ float operator()(float a, R... rest) const {
    ((a = (detail::is_nan(a) || detail::is_nan(rest)) ? a + rest : (rest > a ? rest : a)), ...);
    return a;
  }
  template <class... R>
  __device__ int64_t operator()(int64_t a, R... rest) const {
    ((a = rest > a ? rest : a), ...);
    return a;
  }
};
/// Smallest input; NaN propagates.
struct Min {
  template <class... R>
  __device__ float operator()(float a, R... rest) const {
    ((a = (detail::is_nan(a) || detail::is_nan(rest)) ? a + rest : (rest < a ? rest : a)), ...);
    return a;
  }
  template <class... R>
  __device__ int64_t operator()(int64_t a, R... rest) const {
    ((a = rest < a ? rest : a), ...);
    return a;
  }
};
struct Sum {
  template <class... R>
  __device__ float operator()(float a, R... rest) const {
    ((a += rest), ...);
    return a;
  }
};
struct Mean {
  template <class... R>
  __device__ float operator()(float a, R... rest) const {
    ((a += rest), ...);
    return a / static_cast<float>(1 + sizeof...(R));
  }
};

// ---- fused ----

/// An op and the activation after it in one kernel (a FusedBatchNormalization, FusedAdd, FusedSub,
/// FusedMul or FusedDiv node: passes/fuse_elementwise): act(Op(x...)) in FP32, rounded once at the
/// store, e.g. mc::ew::Activated<mc::ew::BatchNorm, mc::Act::relu>{{1e-05f}, {}} for a densenet's
/// pre-activation BN + ReLU. Float ops only (the fused ops take float types).
template <class Op, Act A>
struct Activated {
  Op op{};
  ActParams act{};
  template <class... X>
  __device__ float operator()(X... x) const {
    return activate<A>(static_cast<float>(op(x...)), act);
  }
};

}  // namespace mc::ew

// templates/elementwise.cuh — broadcasting elementwise kernels (namespace mc::ew):
// y = Op(x0, x1, ...) for every element of one output shape.
//
// Each operand is a view over the output's shape: an element type and a stride per output dim
// (0 on a dim it is broadcast along), so numpy broadcasting, strided inputs and strided outputs
// are all the same index math (mc::ix::offset). Operands are loaded as their compute type
// (float for float32/float16/bfloat16, double for float64, int64_t for integers (uint64_t for
// uint64), bool for bool; see tensor_index.cuh),
// the Op computes, and the result is stored with the reference interpreter's rounding
// (mc::ix::convert). So Cast is the Identity op between two element types, and a copy is the
// Identity op on raw bits (uint16_t, uint32_t, uint64_t pass unchanged).
//
// Float math is FP32 (the reference computes in float64: results agree to a few ulps), for FP16
// storage too (loads widen to float, stores round to nearest even), and FP64 for float64 storage;
// integer math is exact int64 (uint64 for uint64) arithmetic that wraps like the reference's
// (two's complement). FP16 operands that are all
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
// Each op computes in the operands' compute types (tensor_index.cuh): F, a floating type (float for
// float32/float16/bfloat16 storage, double for float64), or I, an integer type (int64_t, or
// uint64_t for uint64), or bool. An op has a template for each kind it accepts; an op applied to a
// kind it has none for does not compile: the op registry's type rules keep that from happening.

namespace detail {
template <class T>
constexpr bool is_fp = std::is_floating_point_v<T>;
template <class T>
constexpr bool is_int = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
using if_fp = std::enable_if_t<is_fp<T>, int>;
template <class T>
using if_int = std::enable_if_t<is_int<T>, int>;

// Wrapping integer arithmetic (no undefined behaviour on overflow), as the reference's wrap_*;
// uint64_t wraps by itself.
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
__device__ __forceinline__ uint64_t wrap_add(uint64_t a, uint64_t b) { return a + b; }
__device__ __forceinline__ uint64_t wrap_sub(uint64_t a, uint64_t b) { return a - b; }
__device__ __forceinline__ uint64_t wrap_mul(uint64_t a, uint64_t b) { return a * b; }
__device__ __forceinline__ uint64_t wrap_neg(uint64_t a) { return uint64_t{0} - a; }

template <class F>
__device__ __forceinline__ bool is_nan(F x) {
  return x != x;
}
// std::min / std::max as the reference writes them (NaN in `b` is dropped, in `a` kept).
template <class F>
__device__ __forceinline__ F min_of(F a, F b) {
  return b < a ? b : a;
}
template <class F>
__device__ __forceinline__ F max_of(F a, F b) {
  return a < b ? b : a;
}

// The math functions in the precision of F: the float ones for float, the double ones for double.
#define MC_EW_MATH(name)                                                              \
  __device__ __forceinline__ float m_##name(float x) { return name##f(x); }           \
  __device__ __forceinline__ double m_##name(double x) { return name(x); }
MC_EW_MATH(sqrt)
MC_EW_MATH(exp)
MC_EW_MATH(log)
MC_EW_MATH(floor)
MC_EW_MATH(ceil)
MC_EW_MATH(erf)
MC_EW_MATH(expm1)
MC_EW_MATH(tanh)
MC_EW_MATH(log1p)
MC_EW_MATH(fabs)
#undef MC_EW_MATH

// base^exp for integers, wrapping like repeated multiplication in the type (the reference's
// int_pow): a negative exponent gives the truncated 1 / base^-exp (0 to a negative power, an
// error in the reference, gives 0).
template <class I, class E>
__device__ __forceinline__ I int_pow(I base, E exp) {
  if constexpr (std::is_signed_v<E>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if constexpr (std::is_signed_v<I>) {
        if (base == -1) return (exp % 2 == 0) ? 1 : -1;
      }
      return 0;
    }
  }
  I r = 1;
  while (exp > 0) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}
}  // namespace detail

/// x (Identity, Cast: the conversion happens in the store).
struct Identity {
  template <class T>
  __device__ T operator()(T x) const {
    return x;
  }
};

// ---- unary math ----

#define MC_EW_FLOAT_UNARY(Name, expr)                 \
  struct Name {                                       \
    template <class F, detail::if_fp<F> = 0>          \
    __device__ F operator()(F x) const {              \
      return expr;                                    \
    }                                                 \
  };

struct Neg {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return -x;
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I x) const {
    return detail::wrap_neg(x);
  }
};
struct Abs {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return detail::m_fabs(x);
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I x) const {
    if constexpr (std::is_signed_v<I>) {
      return x < 0 ? detail::wrap_neg(x) : x;
    } else {
      return x;
    }
  }
};
MC_EW_FLOAT_UNARY(Sqrt, detail::m_sqrt(x))
MC_EW_FLOAT_UNARY(Exp, detail::m_exp(x))
MC_EW_FLOAT_UNARY(Log, detail::m_log(x))
MC_EW_FLOAT_UNARY(Reciprocal, F(1) / x)
MC_EW_FLOAT_UNARY(Floor, detail::m_floor(x))
MC_EW_FLOAT_UNARY(Ceil, detail::m_ceil(x))
/// erf; an integer input gives the truncated erf (computed in double, as the reference).
struct Erf {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return detail::m_erf(x);
  }
  template <class I, detail::if_int<I> = 0>
  __device__ double operator()(I x) const {
    return erf(static_cast<double>(x));
  }
};
struct Not {
  __device__ bool operator()(bool x) const { return !x; }
};

// ---- activations ----

struct Relu {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return x > F(0) ? x : F(0);  // NaN -> 0, as the reference
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I x) const {
    return x > 0 ? x : 0;
  }
};
struct LeakyRelu {
  float alpha;
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return x < F(0) ? F(alpha) * x : x;
  }
};
struct Elu {
  float alpha;
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return x < F(0) ? F(alpha) * detail::m_expm1(x) : x;
  }
};
struct Selu {
  float alpha, gamma;
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return x > F(0) ? F(gamma) * x : F(gamma) * (F(alpha) * detail::m_exp(x) - F(alpha));
  }
};
struct Sigmoid {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    if (x >= F(0)) return F(1) / (F(1) + detail::m_exp(-x));
    const F e = detail::m_exp(x);  // split by sign so exp never overflows into inf/inf
    return e / (F(1) + e);
  }
};
struct HardSigmoid {
  float alpha, beta;
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return detail::max_of(F(0), detail::min_of(F(1), F(alpha) * x + F(beta)));
  }
};
struct HardSwish {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x) const {
    return x * detail::max_of(F(0), detail::min_of(F(1), x / F(6) + F(0.5)));
  }
};
MC_EW_FLOAT_UNARY(Tanh, detail::m_tanh(x))
MC_EW_FLOAT_UNARY(Softplus, x > F(0) ? x + detail::m_log1p(detail::m_exp(-x)) : detail::m_log1p(detail::m_exp(x)))
#undef MC_EW_FLOAT_UNARY

/// min(max(x, lo), hi) with bounds known at emit time; a bound that is not given (kLo / kHi
/// false) does not clip. T is the compute type (float, double, int64_t or uint64_t).
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
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x, F slope) const {
    return x < F(0) ? slope * x : x;
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I x, I slope) const {
    if constexpr (std::is_signed_v<I>) {
      return x < 0 ? detail::wrap_mul(slope, x) : x;
    } else {
      return x;
    }
  }
};
/// Inference BatchNormalization: (x - mean) * scale / sqrt(var + epsilon) + B, the parameters
/// broadcast per channel (operands x, scale, B, mean, var).
struct BatchNorm {
  float epsilon;
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F x, F scale, F b, F mean, F var) const {
    return (x - mean) * (scale / detail::m_sqrt(var + F(epsilon))) + b;
  }
};

// ---- binary arithmetic ----

struct Add {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F a, F b) const {
    return a + b;
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I a, I b) const {
    return detail::wrap_add(a, b);
  }
};
struct Sub {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F a, F b) const {
    return a - b;
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I a, I b) const {
    return detail::wrap_sub(a, b);
  }
};
struct Mul {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F a, F b) const {
    return a * b;
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I a, I b) const {
    return detail::wrap_mul(a, b);
  }
};
/// Integer division truncates toward zero. Division by zero is an error in the reference; here it
/// gives 0 (a kernel cannot report it, and must not trap).
struct Div {
  template <class F, detail::if_fp<F> = 0>
  __device__ F operator()(F a, F b) const {
    return a / b;
  }
  template <class I, detail::if_int<I> = 0>
  __device__ I operator()(I a, I b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<I>) {
      if (b == -1) return detail::wrap_neg(a);  // INT64_MIN / -1 overflows
    }
    return a / b;
  }
};
/// Pow: a float base with a float or integer exponent in float; a double on either side, or an
/// integer base with a float exponent, in double (the result truncates to an integer base's type);
/// integer base and exponent exactly, wrapping like repeated multiplication (detail::int_pow).
struct Pow {
  template <class A, class B>
  __device__ auto operator()(A a, B b) const {
    if constexpr (detail::is_int<A> && detail::is_int<B>) {
      return detail::int_pow(a, b);
    } else if constexpr (std::is_same_v<A, float> && !std::is_same_v<B, double>) {
      return powf(a, static_cast<float>(b));
    } else {
      return pow(static_cast<double>(a), static_cast<double>(b));
    }
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
  template <class F, class... R, detail::if_fp<F> = 0>
  __device__ F operator()(F a, R... rest) const {
    ((a = (detail::is_nan(a) || detail::is_nan(rest)) ? a + rest : (rest > a ? rest : a)), ...);
    return a;
  }
  template <class I, class... R, detail::if_int<I> = 0>
  __device__ I operator()(I a, R... rest) const {
    ((a = rest > a ? rest : a), ...);
    return a;
  }
};
/// Smallest input; NaN propagates.
struct Min {
  template <class F, class... R, detail::if_fp<F> = 0>
  __device__ F operator()(F a, R... rest) const {
    ((a = (detail::is_nan(a) || detail::is_nan(rest)) ? a + rest : (rest < a ? rest : a)), ...);
    return a;
  }
  template <class I, class... R, detail::if_int<I> = 0>
  __device__ I operator()(I a, R... rest) const {
    ((a = rest < a ? rest : a), ...);
    return a;
  }
};
struct Sum {
  template <class F, class... R, detail::if_fp<F> = 0>
  __device__ F operator()(F a, R... rest) const {
    ((a += rest), ...);
    return a;
  }
};
struct Mean {
  template <class F, class... R, detail::if_fp<F> = 0>
  __device__ F operator()(F a, R... rest) const {
    ((a += rest), ...);
    return a / static_cast<F>(1 + sizeof...(R));
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

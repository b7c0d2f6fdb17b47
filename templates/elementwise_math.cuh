// templates/elementwise_math.cuh — more ops of the elementwise kernels (mc::ew::Elementwise in
// elementwise.cuh, which includes this header): the trigonometric and hyperbolic functions, Round,
// Sign, IsNaN, IsInf, Mod (compiler/ops/math.cpp) and the smooth activations Softsign, Mish, Celu
// and Gelu (compiler/ops/activation_smooth.cpp), which compute exactly what a fused epilogue's
// activation does (activation.cuh), so they round the same fused or alone.
//
// As in elementwise.cuh, float math is FP32 (FP16 storage widens at the load and rounds to nearest
// even at the store) and integer math is exact int64.
#pragma once

#include "tensor_index.cuh"  // first: the standard headers before device.h

#include "activation.cuh"

namespace mc::ew {

// ---- trigonometric and hyperbolic functions (float only) ----

struct Sin {
  __device__ float operator()(float x) const { return sinf(x); }
};
struct Cos {
  __device__ float operator()(float x) const { return cosf(x); }
};
struct Tan {
  __device__ float operator()(float x) const { return tanf(x); }
};
struct Asin {
  __device__ float operator()(float x) const { return asinf(x); }
};
struct Acos {
  __device__ float operator()(float x) const { return acosf(x); }
};
struct Atan {
  __device__ float operator()(float x) const { return atanf(x); }
};
struct Sinh {
  __device__ float operator()(float x) const { return sinhf(x); }
};
struct Cosh {
  __device__ float operator()(float x) const { return coshf(x); }
};
struct Asinh {
  __device__ float operator()(float x) const { return asinhf(x); }
};
struct Acosh {
  __device__ float operator()(float x) const { return acoshf(x); }
};
struct Atanh {
  __device__ float operator()(float x) const { return atanhf(x); }
};

// ---- rounding, sign, classification ----

/// The nearest integer, halves to even (rintf in the default rounding mode, as the reference's
/// nearbyint).
struct Round {
  __device__ float operator()(float x) const { return rintf(x); }
};
/// -1, 0 or 1; NaN stays NaN (and -0 stays -0), as numpy's sign.
struct Sign {
  __device__ float operator()(float x) const { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : x); }
  __device__ int64_t operator()(int64_t x) const { return x > 0 ? 1 : (x < 0 ? -1 : 0); }
};
struct IsNaN {
  __device__ bool operator()(float x) const { return x != x; }
};
/// x is an infinity of a detected sign (IsInf's detect_negative, detect_positive).
template <bool kNegative, bool kPositive>
struct IsInf {
  __device__ bool operator()(float x) const { return (kPositive && x == INFINITY) || (kNegative && x == -INFINITY); }
};

/// Mod: integers exactly, with the divisor's sign (kFmod false, Python's %) or the dividend's
/// (kFmod true, C's %); a zero divisor, an error in the reference, gives 0 here (a kernel cannot
/// report it and must not trap). Floats (always kFmod) by fmodf (fmod for double), exact.
template <bool kFmod>
struct Mod {
  __device__ float operator()(float a, float b) const { return fmodf(a, b); }
  __device__ double operator()(double a, double b) const { return fmod(a, b); }
  // uint64 computes in uint64_t (its values above INT64_MAX): no sign, the remainder as it is.
  __device__ uint64_t operator()(uint64_t a, uint64_t b) const { return b == 0 ? 0 : a % b; }
  __device__ int64_t operator()(int64_t a, int64_t b) const {
    if (b == 0 || b == -1) return 0;  // INT64_MIN % -1 overflows; the remainder is 0
    const int64_t r = a % b;
    if (kFmod || r == 0 || (r < 0) == (b < 0)) return r;
    return r + b;
  }
};

// ---- smooth activations: activation.cuh's functions ----

struct Softsign {
  __device__ float operator()(float x) const { return activate<Act::softsign>(x, ActParams{}); }
};
struct Mish {
  __device__ float operator()(float x) const { return activate<Act::mish>(x, ActParams{}); }
};
struct Celu {
  float alpha;
  __device__ float operator()(float x) const {
    ActParams p;
    p.alpha = alpha;
    return activate<Act::celu>(x, p);
  }
};
/// Gelu, erf form (approximate = "none").
struct Gelu {
  __device__ float operator()(float x) const { return activate<Act::gelu>(x, ActParams{}); }
};
/// Gelu, tanh form (approximate = "tanh").
struct GeluTanh {
  __device__ float operator()(float x) const { return activate<Act::gelu_tanh>(x, ActParams{}); }
};

}  // namespace mc::ew

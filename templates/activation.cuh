// templates/activation.cuh — the activations of a fused epilogue (compiler/ops/fused.h), in FP32:
// the gemm / conv epilogues (gemm.cuh EpilogueFused, EpilogueRanges) and the fused elementwise ops
// (elementwise.cuh Activated: a BatchNormalization or an arithmetic op with its activation) apply
// the same function, so an activation rounds the same wherever it is fused.
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <math.h>  // INFINITY: ActParams' open bounds

#include "device.h"

namespace mc {

/// \brief The activations of a fused epilogue (compiler/ops/fused.h).
enum class Act {
  none, relu, clip, leaky_relu, sigmoid, tanh, hard_sigmoid, hard_swish, silu, gelu, gelu_tanh,
  softsign, mish, celu
};

/// \brief An activation's parameters: leaky_relu's slope (alpha), celu's alpha, hard_sigmoid's and
/// hard_swish's alpha and beta, clip's bounds (-INFINITY / INFINITY when a side is open). The
/// defaults are neutral (alpha x + beta = x, no bounds): an activation that uses none of them leaves
/// them so.
struct ActParams {
  float alpha = 1.0f, beta = 0.0f, min = -INFINITY, max = INFINITY;
};

template <Act A>
__device__ __forceinline__ float activate(float x, const ActParams& p) {
  if constexpr (A == Act::relu) return x > 0.0f ? x : 0.0f;
  if constexpr (A == Act::clip) {
    // NaN stays NaN: both comparisons are false.
    if (x < p.min) x = p.min;
    if (x > p.max) x = p.max;
    return x;
  }
  if constexpr (A == Act::leaky_relu) return x < 0.0f ? p.alpha * x : x;
  if constexpr (A == Act::sigmoid) return 1.0f / (1.0f + expf(-x));
  if constexpr (A == Act::tanh) return tanhf(x);
  if constexpr (A == Act::hard_sigmoid) return fmaxf(0.0f, fminf(1.0f, p.alpha * x + p.beta));
  if constexpr (A == Act::hard_swish) return x * fmaxf(0.0f, fminf(1.0f, p.alpha * x + p.beta));
  if constexpr (A == Act::silu) return x / (1.0f + expf(-x));
  if constexpr (A == Act::gelu) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if constexpr (A == Act::gelu_tanh) {
    return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
  }
  if constexpr (A == Act::softsign) return x / (1.0f + fabsf(x));
  if constexpr (A == Act::mish) {
    const float sp = x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));  // ln(1 + e^x) without overflow
    return x * tanhf(sp);
  }
  if constexpr (A == Act::celu) return fmaxf(0.0f, x) + fminf(0.0f, p.alpha * expm1f(x / p.alpha));
  return x;
}

}  // namespace mc

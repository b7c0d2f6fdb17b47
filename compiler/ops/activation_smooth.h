// compiler/ops/activation_smooth.h — the parameters of the smooth activations of
// ops/activation_smooth.cpp (Celu's alpha, Gelu's approximation) with the spec's defaults, and
// their values: the reference evaluation, the fused epilogues (ops/fused.cpp) and the elementwise
// family read the same ones.
#pragma once

#include "ir/graph.h"

namespace modelc::ops {

inline constexpr double kCeluAlpha = 1.0;

/// Celu's 'alpha' (default 1), an ONNX float read rounded to float32. Error naming the node when
/// it is 0 (the function divides by it).
double celu_alpha(const Node& n);
/// Gelu's 'approximate': false for "none" (the default: the erf form), true for "tanh". Error
/// naming the node for another string.
bool gelu_approximates_tanh(const Node& n);

/// The functions, in double: x / (1 + |x|); x * tanh(ln(1 + e^x)); max(0, x) + min(0, alpha *
/// (e^(x / alpha) - 1)).
double softsign(double x);
double mish(double x);
double celu(double x, double alpha);

}  // namespace modelc::ops

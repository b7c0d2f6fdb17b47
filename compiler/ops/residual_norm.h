// compiler/ops/residual_norm.h — modelc.ResidualNorm (domain "modelc"), the transformer's "add and
// norm" as one op, made by passes/fuse_attention.cpp (fuse_residual_norm) from Add (+ the bias Add
// of the product before it) + LayerNormalization over the last dim:
//
//   h = X + R [+ Bias]                     (Bias: [N], broadcast over the rows; N = X's last dim)
//   Y = (h - mean(h)) / sqrt(var(h) + epsilon) * Gamma [+ Beta]      norm 'layer'
//   Y = h / sqrt(mean(h^2) + epsilon) * Gamma [+ Beta]               norm 'rms'
//
// over each row (the last dim). Inputs: 0 X, 1 R (X's type and shape), 2 Gamma, 3 Beta (optional),
// 4 Bias (optional; the optional ones last, as ONNX orders inputs); Gamma, Beta and Bias hold N values (any shape of N elements whose other dims
// are 1), any float type. Outputs: 0 Y (X's type and shape), 1 Sum (optional): h itself, in X's
// type, for a later residual add (pre-norm blocks). Attributes: epsilon (default 1e-5), norm
// ('layer', the default, or 'rms'). The kernel is templates/residual_norm.cuh (wired into the
// schedule separately: no template family yet).
#pragma once

#include "ir/graph.h"

namespace modelc::ops {

/// Input slots of modelc.ResidualNorm.
constexpr int kResidualNormX = 0, kResidualNormR = 1, kResidualNormGamma = 2, kResidualNormBeta = 3,
              kResidualNormBias = 4;

/// True for norm 'rms', false for 'layer'; Error naming the node for any other value.
bool residual_norm_is_rms(const Node& n);

}  // namespace modelc::ops

// compiler/ops/se_gate.h — modelc's squeeze-and-excite gate op (domain "modelc"), made by
// passes/fuse_se_gate.cpp from what exporters write (GlobalAveragePool or ReduceMean over H, W ->
// Conv 1x1 / Gemm / MatMul -> activation -> Conv 1x1 / Gemm / MatMul -> Sigmoid / HardSigmoid):
//
//   p[n, c] = mean over the spatial dims of X[n, c]
//   h[n, s] = act(B1[s] + sum_c W1[s, c] p[n, c])
//   Y[n, c, 1, 1] = gate(B2[c] + sum_s W2[c, s] h[n, s])
//
// Inputs:  0 X [N, C, H, W], 1 W1 [S, C], 2 B1 [S], 3 W2 [C, S], 4 B2 [C]: one float type (float32,
//          float16, bfloat16); the weights and biases constant.
// Output:  0 Y [N, C, 1, 1], X's type (the gate; the Mul that applies it stays outside the op).
// Attributes: activation, activation_alpha, activation_beta (FC1's activation, as a fused epilogue
//          spells it: ops/fused.h), gate ('sigmoid' or 'hard_sigmoid'), gate_alpha, gate_beta
//          (hard_sigmoid's).
//
// The op's facts (se_gate.cpp): computes in FP32 on its storage type (fp32_compute); NHWC form
// (Layout::channels: X read channels-last at any pitch); its kernel the "se_gate" family
// (templates/se_gate.cuh, schedule/se_gate.h).
#pragma once

#include "ops/fused.h"

namespace modelc::ops {

constexpr int kSeGateX = 0, kSeGateW1 = 1, kSeGateB1 = 2, kSeGateW2 = 3, kSeGateB2 = 4;

/// \brief The attributes of a modelc.SEGate node, read and checked.
struct SeGateSpec {
  int64_t n = 0, c = 0, s = 0, hw = 0;  ///< images, channels, squeezed width, pixels an image
  EpilogueActivation act;               ///< FC1's activation
  EpilogueActivation gate;              ///< sigmoid or hard_sigmoid
};

/// The spec of node n (shapes from its inputs); an Error naming the node when the attributes or
/// the input shapes are not those of the op.
SeGateSpec se_gate_spec(const Node& n);
/// Writes the gate's attributes (gate, gate_alpha, gate_beta) on n.
void set_gate(Node& n, const EpilogueActivation& gate);

}  // namespace modelc::ops

// compiler/passes/fuse_se_gate.h — the gate of a squeeze-and-excite block into one modelc.SEGate
// node (ops/se_gate.h): global average pool, FC, activation, FC, sigmoid / hard-sigmoid.
//
// fuse_se_gate is the pipeline's fuse_se_gate stage (compiler/pipeline/pipeline.cpp), after
// fuse_epilogue (each FC is then a FusedConv / FusedGemm / FusedMatMul carrying its activation:
// SiLU's x * Sigmoid(x), HardSwish, the gate's Sigmoid / HardSigmoid) and before fuse_elementwise;
// its kernel is the "se_gate" family (schedule/se_gate.h, templates/se_gate.cuh). The Mul(X, gate)
// after it stays (an elementwise kernel, or the next 1x1 convolution's operand load).
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace modelc {

/// \brief What the gate fusion did with one candidate (a GlobalAveragePool, or a ReduceMean over
/// the spatial dims keeping them, of a rank-4 value): fused into the node `fused_node` (covering
/// `covers`), or left unfused, and why.
struct SeGateOutcome {
  std::string pool;                 ///< the candidate's pool node
  bool fused = false;
  std::string fused_node;           ///< the modelc.SEGate node's name (fused)
  std::vector<std::string> covers;  ///< the ONNX nodes it stands for (fused)
  std::string reason;               ///< why it stayed unfused (not fused)
};

/// Fuses every squeeze-and-excite gate the kernel can take (fuse_se_gate.cpp lists the forms);
/// appends one outcome per candidate to `outcomes` when given. Needs shapes inferred, constants
/// folded, the epilogues fused. Returns true when it changed the graph.
bool fuse_se_gate(Graph& g, const PassOptions& o, std::vector<SeGateOutcome>* outcomes);
/// The same as a pass (PassFn).
bool fuse_se_gate(Graph& g, const PassOptions& o);

}  // namespace modelc

// compiler/passes/fuse_attention.h — the transformer fusions: attention subgraphs into one
// modelc.Attention node (ops/attention.h), Add + LayerNormalization into one modelc.ResidualNorm
// (ops/residual_norm.h).
//
// fuse_attention is the pipeline's fuse_attention stage (compiler/pipeline/pipeline.cpp), after
// precision (Q, K and V already FP16 / BF16, the masks and scales folded into constants by
// fold_constants; no Dropout, no Identity: simplify; a node precision keeps FP32 sits behind its
// Casts, which stop the match) and before sink_reshapes and fuse_epilogue (which would move the
// scale or mask Add across the scores' Reshape, or take the mask Add as the score product's
// residual); its kernel is the "attention" family (schedule/attention.h, templates/attention.cuh).
//
// fuse_residual_norm is NOT IN THE PIPELINE YET: modelc.ResidualNorm has no template family until
// templates/residual_norm.cuh is wired into the schedule, and a compile would fail on it. The wiring
// adds it to the stage list beside fuse_attention (before fuse_epilogue, which would otherwise take
// the residual Add into the product before the norm).
#pragma once

#include <string>
#include <vector>

#include "passes/pass.h"

namespace modelc {

/// \brief What the attention fusion did with one candidate (a Softmax whose input comes from a
/// MatMul and whose output a MatMul reads): fused into the node `fused` (covering `covers`), or left
/// unfused, and why.
struct AttentionOutcome {
  std::string softmax;              ///< the candidate's Softmax node
  bool fused = false;
  std::string fused_node;           ///< the modelc.Attention node's name (fused)
  std::vector<std::string> covers;  ///< the ONNX nodes it stands for (fused)
  std::string reason;               ///< why it stayed unfused (not fused)
};

/// Fuses every attention subgraph the fused kernel can take (see fuse_attention.cpp for the
/// patterns and the kernel's constraints); appends one outcome per candidate to `outcomes` when
/// given. Needs shapes inferred and constants folded. Returns true when it changed the graph.
bool fuse_attention(Graph& g, const PassOptions& o, std::vector<AttentionOutcome>* outcomes);
/// The same as a pass (PassFn).
bool fuse_attention(Graph& g, const PassOptions& o);

/// \brief What the residual + norm fusion did with one LayerNormalization over the last dim.
struct ResidualNormOutcome {
  std::string norm;     ///< the LayerNormalization node
  bool fused = false;
  std::string reason;   ///< why not
};

/// Fuses Add (+ a product's bias Add before it) + LayerNormalization over the last dim into
/// modelc.ResidualNorm where the kernel can take it; appends outcomes when given.
bool fuse_residual_norm(Graph& g, const PassOptions& o, std::vector<ResidualNormOutcome>* outcomes);
bool fuse_residual_norm(Graph& g, const PassOptions& o);

}  // namespace modelc

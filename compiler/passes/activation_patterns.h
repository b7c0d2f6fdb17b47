// compiler/passes/activation_patterns.h — what the fusion passes share: the activation that
// follows a value (a single activation node, or one of the multi-node patterns exporters write:
// SiLU, HardSwish before opset 14, GELU in its erf and tanh forms), small graph queries, and the
// replacement of a head node (a producer, or an elementwise op) and the chain after it by one
// fused node of compiler/ops/fused.h. passes/fuse_epilogue.cpp and passes/fuse_elementwise.cpp
// (fold_batchnorm.cpp uses the graph queries).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fused.h"
#include "ops/registry.h"

namespace modelc::fusion {

/// The ONNX default domain ("" or "ai.onnx").
bool default_domain(const Node& n);
/// The op's registry entry at its opset; null outside the default domain or for an unknown op.
const ops::OpDef* def_of(const Node& n);
/// n is a default-domain `op` with exactly one output, present.
bool is_op(const Node* n, const char* op);
/// The one reader of v; null when v has several, none, or is a graph output.
Node* sole_user(const Value& v);
/// For a two-input node reading `v`: the other input (v itself for x op x); null when the node does
/// not read v or has another arity.
Value* other_operand(const Node& n, const Value& v);
/// A constant of one element close to `want`: within `rtol` (exporters write float32 constants),
/// or within half a unit in the last place of a narrower type (after passes/precision, sqrt(2) is
/// 1.4140625 in float16).
bool scalar_const(const Value* v, double want, double rtol = 1e-6);
/// The ONNX nodes a node stands for: its covers, or its own name.
std::vector<std::string> covers_of(const Node& n);
/// The node after n in graph order; null for the last.
Node* next_node(const Graph& g, const Node* n);

/// \brief An activation found after a value: the nodes it spans (the last one writes `out`) and
/// its epilogue form.
struct ActivationMatch {
  std::vector<Node*> nodes;
  Value* out = nullptr;
  ops::EpilogueActivation act;
};

/// The activation after x, when every reader of x and of the pattern's inner values is in the
/// pattern, none of them is a graph output, and the result has x's type and shape.
std::optional<ActivationMatch> match_activation(const Value& x);

/// Replaces `head` and `chain` (the nodes after it, in graph order; not empty) by one node of
/// `fused_op` in the modelc domain, reading `inputs` and writing `out` (the chain's last output,
/// which keeps its name): the head's name, opset and attributes, the union of the covers, placed
/// where the chain's last node was. The caller adds the epilogue attributes, then check_fused.
Node* replace_with_fused(Graph& g, Node* head, const std::vector<Node*>& chain, const std::string& fused_op,
                         const std::vector<Value*>& inputs, Value* out);
/// Validates and infers a fused node; an internal Error when it infers another type or shape than
/// its output already has (the nodes it replaced computed that).
void check_fused(Node& f);

}  // namespace modelc::fusion

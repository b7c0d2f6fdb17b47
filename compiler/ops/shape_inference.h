// compiler/ops/shape_inference.h — modelc's own type and shape propagation.
#pragma once

#include "ir/graph.h"
#include "ops/registry.h"

namespace modelc::ops {

/// \brief One node of infer_graph: validates it against its form `def`, checks that its inputs
/// are typed, infers its outputs, and, when every present input is constant, evaluates it by the
/// reference rule so its outputs become constants (outputs above 2^24 elements stay computed at
/// run time). Throws Error naming the node; the caller adds the context it wants.
void infer_node(Node& n, const OpDef& def);

/// \brief Looks up, validates and infers every node in order. A node whose
/// present inputs are all constant is evaluated by the reference rule and its
/// outputs become constants (value propagation: this is what resolves the
/// Shape -> Gather -> Concat -> Reshape chains exporters emit). Throws Error
/// naming the first node at fault.
void infer_graph(Graph& g);

/// Collects, instead of throwing at the first, every node whose op or form
/// is unsupported: (node, reason). Used by `modelc inspect`.
struct Unsupported {
  std::string node, op, reason;
  std::string hint;  ///< what to do about it ("" when there is nothing to suggest)
};
std::vector<Unsupported> find_unsupported(const Graph& g);

}  // namespace modelc::ops

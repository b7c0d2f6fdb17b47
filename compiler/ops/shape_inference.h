// compiler/ops/shape_inference.h — modelc's own type and shape propagation.
#pragma once

#include "ir/graph.h"

namespace modelc::ops {

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
};
std::vector<Unsupported> find_unsupported(const Graph& g);

}  // namespace modelc::ops

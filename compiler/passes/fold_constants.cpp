// compiler/passes/fold_constants.cpp — nodes whose outputs are all constant
// (ops::infer_graph evaluated them from constant inputs: shape subgraphs,
// Constant nodes, weight transforms) are replaced by their constants.
// Needs: ops::infer_graph ran (it does the evaluation). Leaves: no node whose
// every output is constant; graph outputs that are constant keep a producer.
#include "passes/pass.h"

namespace modelc {

bool fold_constants(Graph& g, const PassOptions&) {
  std::vector<Node*> todo;
  for (const auto& up : g.nodes()) {
    bool all_const = true;
    bool feeds_output = false;
    for (const Value* v : up->outputs()) {
      if (!v) continue;
      all_const = all_const && v->is_constant();
      feeds_output = feeds_output || v->is_graph_output();
    }
    if (all_const && !feeds_output) todo.push_back(up.get());
  }
  // The outputs keep their constant data and become producer-less constants.
  for (Node* n : todo) g.remove_node(n);
  if (!todo.empty()) g.remove_dead();
  return !todo.empty();
}

}  // namespace modelc

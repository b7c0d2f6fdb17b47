// compiler/passes/simplify.cpp — removes nodes that compute nothing at inference:
// Identity, Dropout (inference), Casts to the type the value already has, and a Concat of one input.
// Needs: shapes inferred. Leaves: none of those nodes, unless one feeds a graph
// output straight from a graph input (a copy is then required).
#include "passes/pass.h"

namespace modelc {

namespace {

bool is_noop(const Node& n) {
  if (n.op() == "Identity") return true;
  if (n.op() == "Dropout") return !n.has_output(1) || n.output(1).users().empty();
  if (n.op() == "Cast") return n.input(0).dtype() == n.output(0).dtype();
  if (n.op() == "Concat") return n.num_inputs() == 1;  // densenet121's first layer of each block
  return false;
}

}  // namespace

bool remove_passthrough(Graph& g, Node* n) {
  Value& in = n->input(0);
  Value& out = n->output(0);
  if (out.is_graph_output() && (in.is_graph_input() || in.is_graph_output() || in.is_constant())) return false;
  if (out.is_graph_output()) {
    // Keep the graph output's name: the producer of `in` writes `out` directly.
    if (!in.producer()) return false;
    Node* p = in.producer();
    const int idx = in.producer_output();
    g.replace_all_uses(&in, &out);  // other readers of `in` read `out` now
    g.remove_node(n);
    p->set_output(idx, &out);
  } else {
    g.replace_all_uses(&out, &in);
    g.remove_node(n);
  }
  return true;
}

bool simplify(Graph& g, const PassOptions&) {
  bool changed = false;
  std::vector<Node*> todo;
  for (const auto& n : g.nodes()) if (is_noop(*n)) todo.push_back(n.get());
  for (Node* n : todo) changed = remove_passthrough(g, n) || changed;
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace modelc

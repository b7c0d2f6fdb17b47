// compiler/passes/fuse_elementwise.cpp — elementwise chains: an elementwise op and the activation
// after it become one node, FusedBatchNormalization / FusedAdd / FusedSub / FusedMul / FusedDiv
// (compiler/ops/fused.h), which the elementwise template family runs as one kernel
// (templates/elementwise.cuh Activated). The case the issue names: a pre-activation network
// (DenseNet) normalizes the concatenated features with a BatchNormalization that no convolution
// before it can absorb, then applies a ReLU: two kernels, and the BN's output written and read
// once more, become one.
//
// The head: a default-domain BatchNormalization (inference: one output, no training_mode) or
// Add / Sub / Mul / Div (opset 7 and later: numpy broadcasting, no legacy attributes) with a float
// result. The activation: what fuse_epilogue takes after a producer (a single Relu, LeakyRelu,
// Sigmoid, Tanh, HardSigmoid, HardSwish or Clip with constant bounds; the SiLU, HardSwish and GELU
// patterns), when every value between the head and the activation's output is read only inside
// the chain and is not a graph output.
//
// Needs: fuse_epilogue and fold_scale done (a producer's bias, residual Add and activation are its
// epilogue, which is better still: no elementwise kernel at all), so this runs last of the graph
// passes. Leaves: no head followed by a fusable activation.
#include <set>

#include "ops/fused.h"
#include "ops/registry.h"
#include "passes/activation_patterns.h"
#include "passes/pass.h"

namespace modelc {

namespace {

using namespace fusion;

bool is_head(const Node& n) {
  if (!default_domain(n) || n.num_outputs() != 1 || !n.has_output(0) || !is_narrow_float(n.output(0).dtype())) {
    return false;  // float64 stays unfused: the fused ops compute in FP32
  }
  const std::string fused = ops::fused_op_for(n.op());
  if (fused.empty() || !ops::activation_only_fused(fused)) return false;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) return false;
  }
  if (n.op() == "BatchNormalization") return n.attr_int("training_mode", 0) == 0;
  return n.opset() >= 7;
}

}  // namespace

bool fuse_elementwise(Graph& g, const PassOptions&) {
  std::vector<Node*> heads;
  for (const auto& up : g.nodes()) {
    if (is_head(*up)) heads.push_back(up.get());
  }
  // A head can be inside an earlier head's activation pattern (the Mul of x * Sigmoid(x)): such a
  // node is gone once the earlier one is fused, and is skipped.
  std::set<const Node*> removed;
  bool changed = false;
  for (Node* h : heads) {
    if (removed.count(h)) continue;
    const std::optional<ActivationMatch> m = match_activation(h->output(0));
    if (!m) continue;
    removed.insert(m->nodes.begin(), m->nodes.end());
    std::vector<Value*> inputs;
    for (int i = 0; i < h->num_inputs(); ++i) inputs.push_back(&h->input(i));
    Node* f = replace_with_fused(g, h, m->nodes, ops::fused_op_for(h->op()), inputs, m->out);
    ops::set_activation(*f, m->act);
    check_fused(*f);
    changed = true;
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace modelc

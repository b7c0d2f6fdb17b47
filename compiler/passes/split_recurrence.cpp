// compiler/passes/split_recurrence.cpp — the input projection of LSTM / GRU / RNN becomes one
// matrix product before the recurrence.
//
// X * W^T does not depend on the state, so every step's (and direction's) projection is one
// product: XW = Reshape(X, [1, S*B, I]) x Transpose(W, [0, 2, 1]) -> [D, S*B, G*H], viewed as
// [D, S, B, G*H] (layout 1: batch-major, [D, B, S, G*H]). That runs on the GEMM templates (tensor
// cores in FP16, the cost model's tile), and the node becomes its recurrence form
// (modelc.LSTMRecurrence / GRURecurrence / RNNRecurrence, ops/rnn.h) reading XW, which leaves only
// the recurrent product h * R^T to the rnn family's loop over the steps. A constant W is
// transposed at compile time; otherwise a Transpose does it (fold_operand_views reads it as B's
// strides). Both new nodes and the recurrence cover the ONNX node (the report names it; --keep-fp32
// pins them together).
//
// Needs: constant weights final (fold_batchnorm), before precision (the product then takes FP16).
// Leaves: no LSTM, GRU or RNN node.
#include <cstring>
#include <map>

#include "ops/registry.h"
#include "ops/rnn.h"
#include "ops/shape_inference.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool is_recurrent(const Node& n) {
  return default_domain(n) && (n.op() == "LSTM" || n.op() == "GRU" || n.op() == "RNN");
}

// W [D, GH, I] -> [D, I, GH], any dtype, bytes moved.
Tensor transposed(const Tensor& w) {
  const Shape& s = w.shape();
  const int64_t D = s[0], GH = s[1], I = s[2];
  const std::size_t e = dtype_size(w.dtype());
  std::vector<uint8_t> out(static_cast<std::size_t>(w.nbytes()));
  const uint8_t* in = w.raw();
  for (int64_t d = 0; d < D; ++d)
    for (int64_t j = 0; j < GH; ++j)
      for (int64_t i = 0; i < I; ++i) {
        std::memcpy(out.data() + static_cast<std::size_t>((d * I + i) * GH + j) * e,
                    in + static_cast<std::size_t>((d * GH + j) * I + i) * e, e);
      }
  return Tensor(w.dtype(), {D, I, GH}, std::move(out));
}

Node* next_node(const Graph& g, const Node* n) {
  const auto& nodes = g.nodes();
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    if (nodes[i].get() == n) return nodes[i + 1].get();
  }
  return nullptr;
}

// A node placed before `before`, covering `covers`, with attributes `ints`, typed by its shape rule.
Node* add(Graph& g, const std::string& op, const std::string& name, const std::vector<Value*>& in, Value* out,
          Node* before, const std::string& covers, const std::map<std::string, std::vector<int64_t>>& ints = {}) {
  Node* n = g.add_node(op, name, in, {out}, before);
  n->set_covers({covers});
  for (const auto& [k, v] : ints) n->set_attr_ints(k, v);
  ops::infer_node(*n, ops::lookup(*n));
  return n;
}

void split(Graph& g, Node* n) {
  const ops::RnnParams p = ops::rnn_params(*n);
  const int64_t D = p.directions, S = p.seq, B = p.batch, I = p.input, GH = p.gates * p.hidden;
  const std::string name = n->name();
  Value* x = &n->input(ops::RnnParams::kX);
  Value* w = &n->input(ops::RnnParams::kW);

  Value* wt;
  if (w->is_constant()) {
    wt = g.add_constant(w->name() + "_transposed", transposed(w->constant()), w->is_initializer());
  } else {
    wt = g.add_value(w->name() + "_transposed");
    add(g, "Transpose", name + "/W_transposed", {w}, wt, n, name, {{"perm", {0, 2, 1}}});
  }
  Value* rows_shape = g.add_constant(name + "/X_rows_shape", Tensor::from_i64(DType::int64, {3}, {1, S * B, I}));
  Value* rows = g.add_value(x->name() + "_rows");
  add(g, "Reshape", name + "/X_rows", {x, rows_shape}, rows, n, name);
  Value* xw = g.add_value(name + "/XW");
  add(g, "MatMul", name + "/input_projection", {rows, wt}, xw, n, name);
  Value* steps_shape = g.add_constant(
      name + "/XW_shape", Tensor::from_i64(DType::int64, {4}, p.layout == 0 ? std::vector<int64_t>{D, S, B, GH}
                                                                            : std::vector<int64_t>{D, B, S, GH}));
  Value* xw4 = g.add_value(name + "/XW_steps");
  add(g, "Reshape", name + "/XW_steps", {xw, steps_shape}, xw4, n, name);

  std::vector<Value*> inputs(n->inputs().begin(), n->inputs().end());
  inputs[ops::RnnParams::kX] = xw4;
  inputs[ops::RnnParams::kW] = nullptr;
  const std::vector<Value*> outputs(n->outputs().begin(), n->outputs().end());
  const auto attrs = n->attrs();
  const int opset = n->opset();
  Node* after = next_node(g, n);
  g.remove_node(n);
  Node* r = g.add_node(ops::recurrence_op(p.cell), name, inputs, outputs, after);
  r->set_domain(ops::kModelcDomain);
  r->set_opset(opset);
  for (const auto& [k, a] : attrs) r->set_attr(k, a);
  r->set_covers({name});
  ops::infer_node(*r, ops::lookup(*r));
}

}  // namespace

bool split_recurrence(Graph& g, const PassOptions&) {
  std::vector<Node*> nodes;
  for (const auto& up : g.nodes()) {
    if (is_recurrent(*up)) nodes.push_back(up.get());
  }
  for (Node* n : nodes) split(g, n);
  return !nodes.empty();
}

}  // namespace modelc

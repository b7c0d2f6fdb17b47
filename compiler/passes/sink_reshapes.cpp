// compiler/passes/sink_reshapes.cpp — an elementwise binary op that reads a matrix product or conv
// through a reshape moves before that reshape, so fuse_epilogue sees the op as the producer's
// epilogue (its residual Add):
//
//   Op(R, V(X))  ->  V'(Op(Reshape(R, shape of X), X))
//
// where V is a chain of nodes that keep the elements' order (the view ops: Reshape, Flatten,
// Squeeze, Unsqueeze, ...; and a Transpose that moves only dims of extent 1), each read only by
// the next and none a graph output; X is computed by a node that can take an epilogue (fusion
// class `producer`: Conv, Gemm, MatMul) and is read only by the chain; Op's fusion class is
// epilogue_binary; R is not a constant and has Op's output type and shape (no broadcast either
// way). V' is one Reshape to Op's output shape, writing Op's output Value (its name kept); the
// Reshape of R is a view. Either operand may be the reshaped one; Op keeps its operand order.
//
// Exporters write such chains after a product of rows: torch's MultiheadAttention projects
// [L*N, E] with a Gemm, reshapes to [L, N, E] and transposes back to [N, L, E] before the
// residual Add (the BERT-like encoder's Reshape [128, 768] -> [128, 1, 768], Transpose (1, 0, 2)).
//
// A Transpose that moves the last dim back to dim 1 (perm (0, r-1, 1, ..., r-2), rank 4 or 5: NHWC
// to NCHW) after a matrix product, with its bias Add between them or not, is sunk the same way, the
// other operand taking the inverse Transpose (a ConvNeXt block's residual Add after its second
// Linear):
//
//   Op(R, T(X))  ->  T(Op(T'(R), X))       X = MatMul (-> Add (constant bias))
//
// so fuse_epilogue takes Op as the product's residual. T'(R) is (0, 2, ..., r-1, 1), the
// channels-last move: where R is stored channels-last (a convolution's input or output, as in
// ConvNeXt) both Transposes are views of the same memory in the schedule (fold_operand_views), and
// the product reads the residual in place.
//
// A Transpose whose input is a Transpose read only by it then reads that one's input with the two
// permutations composed, and is an Identity (a view) where they compose to none: the result
// Transpose above, read by a LayerNorm2d's channels-last move (ConvNeXt's downsampling after a
// block), cancels.
//
// Needs: shapes inferred; the precision Casts in place (a Cast in the chain stops it). Runs before
// fuse_epilogue. Leaves: no such Op reading a producer through a reshape.
#include "ops/registry.h"
#include "ops/tensor.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

const ops::OpDef* def_of(const Node& n) {
  return default_domain(n) ? ops::OpRegistry::instance().find(n.op(), n.opset()) : nullptr;
}

/// Output 0 of n holds input 0's elements in the same order (a view op, or a Transpose of unit
/// dims), with nothing else read or written.
bool keeps_order(const Node& n) {
  const ops::OpDef* def = def_of(n);
  if (!def || n.num_outputs() != 1 || !n.has_output(0) || !n.has_input(0)) return false;
  if (n.input(0).dtype() != n.output(0).dtype()) return false;
  return def->kernels == std::vector<std::string>{"view"} || ops::transpose_moves_unit_dims_only(n);
}

/// The value `v` reshapes: the start of the chain of order-keeping nodes that ends in v, each
/// value in it read once and not a graph output; v itself when v is not such a node's output.
Value* reshaped_from(Value* v) {
  while (v->producer() && keeps_order(*v->producer())) {
    Value* in = &v->producer()->input(0);
    if (in->is_graph_output() || in->users().size() != 1) break;
    v = in;
  }
  return v;
}

bool is_producer(const Value& x) {
  const Node* p = x.producer();
  const ops::OpDef* def = p ? def_of(*p) : nullptr;
  return def && def->fusion == ops::Fusion::producer && !x.is_graph_output() && x.users().size() == 1;
}

/// A Reshape of `in` to `shape`, writing `out` (a new Value when null), placed before `before`.
Value* add_reshape(Graph& g, const std::string& name, Value* in, const Shape& shape, Value* out, Node* before) {
  Value* s = g.add_constant(name + "_shape",
                            Tensor::from_i64(DType::int64, {static_cast<int64_t>(shape.size())}, shape));
  if (!out) {
    out = g.add_value(name + "_output_0");
    out->set_type(in->dtype(), shape);
  }
  g.add_node("Reshape", name, {in, s}, {out}, before);
  return out;
}

Node* next_node(const Graph& g, const Node* n) {
  const auto& nodes = g.nodes();
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    if (nodes[i].get() == n) return nodes[i + 1].get();
  }
  return nullptr;
}

/// Moves op before the reshape of its input i; false when the rule above does not hold.
bool sink(Graph& g, Node* op, int i) {
  Value* y = &op->output(0);
  Value* v = &op->input(i);
  Value* r = &op->input(1 - i);
  if (v->is_graph_output() || v->users().size() != 1) return false;
  Value* x = reshaped_from(v);
  if (x == v || !is_producer(*x) || x->dtype() != y->dtype()) return false;
  if (v->shape() != y->shape() || r->shape() != y->shape() || r->dtype() != y->dtype() || r->is_constant()) return false;
  Value* r2 = add_reshape(g, op->name() + "/reshape_operand", r, x->shape(), nullptr, op);
  Value* y2 = g.add_value(op->name() + "_output_0");
  y2->set_type(y->dtype(), x->shape());
  op->set_input(1 - i, r2);
  op->set_input(i, x);
  op->set_output(0, y2);
  add_reshape(g, op->name() + "/reshape_result", y2, y->shape(), y, next_node(g, op));
  return true;
}


/// perm is (0, r-1, 1, ..., r-2): the last dim moves to dim 1 (NHWC -> NCHW), rank 4 or 5.
bool moves_last_to_channels(const std::vector<int64_t>& perm) {
  const int64_t r = static_cast<int64_t>(perm.size());
  if (r != 4 && r != 5) return false;
  if (perm[0] != 0 || perm[1] != r - 1) return false;
  for (int64_t d = 2; d < r; ++d) {
    if (perm[static_cast<std::size_t>(d)] != d - 1) return false;
  }
  return true;
}

/// x is a matrix product's output (MatMul, Gemm, FusedMatMul; read once), or a constant bias Add
/// after one: a product whose epilogue can take a residual.
bool product_chain(const Value& x) {
  const Node* p = x.producer();
  if (!p || x.is_graph_output() || x.users().size() != 1) return false;
  if (default_domain(*p) && p->op() == "Add" && p->num_inputs() == 2 && p->has_input(0) && p->has_input(1)) {
    const int c = p->input(0).is_constant() ? 0 : p->input(1).is_constant() ? 1 : -1;
    if (c < 0 || p->input(1 - c).shape() != x.shape()) return false;
    return product_chain(p->input(1 - c)) && p->input(1 - c).producer()->op() != "Add";
  }
  const ops::OpDef* def = def_of(*p);
  return def && def->fusion == ops::Fusion::producer && (p->op() == "MatMul" || p->op() == "Gemm");
}

/// Moves op before the NHWC -> NCHW Transpose of its input i (the header's second form).
bool sink_transpose(Graph& g, Node* op, int i) {
  Value* y = &op->output(0);
  Value* v = &op->input(i);
  Value* r = &op->input(1 - i);
  Node* t = v->producer();
  if (op->op() != "Add") return false;  // the residual fuse_epilogue takes
  if (!t || !default_domain(*t) || t->op() != "Transpose" || !t->has_input(0)) return false;
  if (v->is_graph_output() || v->users().size() != 1) return false;
  const std::vector<int64_t> perm = ops::transpose_perm(*t, v->rank());
  if (!moves_last_to_channels(perm)) return false;
  Value* x = &t->input(0);
  if (!product_chain(*x) || x->dtype() != y->dtype()) return false;
  if (v->shape() != y->shape() || r->shape() != y->shape() || r->dtype() != y->dtype() || r->is_constant()) return false;
  std::vector<int64_t> inverse(perm.size());
  for (std::size_t d = 0; d < perm.size(); ++d) inverse[static_cast<std::size_t>(perm[d])] = static_cast<int64_t>(d);
  Value* r2 = g.add_value(op->name() + "/transpose_operand_output_0");
  r2->set_type(r->dtype(), x->shape());
  g.add_node("Transpose", op->name() + "/transpose_operand", {r}, {r2}, op)->set_attr_ints("perm", inverse);
  Value* y2 = g.add_value(op->name() + "_output_0");
  y2->set_type(y->dtype(), x->shape());
  op->set_input(1 - i, r2);
  op->set_input(i, x);
  op->set_output(0, y2);
  g.add_node("Transpose", op->name() + "/transpose_result", {y2}, {y}, next_node(g, op))->set_attr_ints("perm", perm);
  return true;
}

/// Transpose(Transpose(x, p1), p2) -> Transpose(x, p1 o p2), an Identity when that is no permutation
/// (the inner Transpose read only by the outer one); false when `outer` is not such a pair.
bool fold_transpose_pair(Graph& g, Node* outer) {
  if (!default_domain(*outer) || outer->op() != "Transpose" || !outer->has_input(0) || !outer->has_output(0)) return false;
  Value* mid = &outer->input(0);
  Node* inner = mid->producer();
  if (!inner || !default_domain(*inner) || inner->op() != "Transpose" || !inner->has_input(0)) return false;
  if (mid->is_graph_output() || mid->users().size() != 1) return false;
  const int64_t rank = mid->rank();
  const std::vector<int64_t> p1 = ops::transpose_perm(*inner, rank), p2 = ops::transpose_perm(*outer, rank);
  std::vector<int64_t> perm(static_cast<std::size_t>(rank));
  bool identity = true;
  for (std::size_t i = 0; i < perm.size(); ++i) {
    perm[i] = p1[static_cast<std::size_t>(p2[i])];
    identity = identity && perm[i] == static_cast<int64_t>(i);
  }
  Value* x = &inner->input(0);
  Value* y = &outer->output(0);
  if (identity) {
    g.add_node("Identity", outer->name() + "/identity", {x}, {y}, outer);
    g.remove_node(outer);
  } else {
    outer->set_input(0, x);
    outer->set_attr_ints("perm", perm);
  }
  return true;
}
}  // namespace

bool sink_reshapes(Graph& g, const PassOptions&) {
  std::vector<Node*> ops;
  for (const auto& up : g.nodes()) {
    const ops::OpDef* def = def_of(*up);
    if (!def || def->fusion != ops::Fusion::epilogue_binary || up->num_inputs() != 2) continue;
    if (!up->has_input(0) || !up->has_input(1) || up->num_outputs() != 1 || !up->has_output(0)) continue;
    ops.push_back(up.get());
  }
  bool changed = false;
  for (Node* op : ops) {
    if (sink(g, op, 1) || sink(g, op, 0) || sink_transpose(g, op, 1) || sink_transpose(g, op, 0)) changed = true;
  }
  if (changed) {
    std::vector<Node*> transposes;
    for (const auto& up : g.nodes()) transposes.push_back(up.get());
    for (Node* t : transposes) fold_transpose_pair(g, t);
    g.remove_dead();
  }
  return changed;
}

}  // namespace modelc

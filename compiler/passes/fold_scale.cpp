// compiler/passes/fold_scale.cpp — a constant scale on a matrix product's operand or result folds
// into the product's alpha: Mul(X, c), Mul(c, X) or Div(X, c) with c a constant scalar, read only
// by matrix products (MatMul, Gemm, FusedMatMul, FusedGemm) as their A or B, or reading the result
// of a MatMul / FusedMatMul without epilogue that only it reads, disappears; each product reads X
// (its readers read the product's result) and multiplies its sum by c (1/c) through alpha (Gemm's own; FusedMatMul's, a
// MatMul becoming a FusedMatMul with no epilogue). alpha scales the product alone, before any
// bias (Gemm's C included), activation or residual, as scaling the operand did. Attention's
// 1/sqrt(d) on its queries is this.
//
// Needs: the epilogues fused (fuse_epilogue: a MatMul made a FusedMatMul here would no longer take
// its bias). Leaves: no scalar Mul / Div read only by products' operands or after a bare product.
#include <algorithm>
#include <cmath>

#include "ops/fused.h"
#include "ops/registry.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool is_product(const Node& n) {
  if (default_domain(n)) return n.op() == "MatMul" || n.op() == "Gemm";
  return n.domain() == ops::kModelcDomain && (n.op() == "FusedMatMul" || n.op() == "FusedGemm");
}

/// The factor a scalar Mul / Div applies to its non-constant input (set in *x), or 0 when n is not one.
double scale_of(const Node& n, Value** x) {
  if (!default_domain(n) || (n.op() != "Mul" && n.op() != "Div") || n.num_inputs() != 2) return 0;
  if (!n.has_input(0) || !n.has_input(1) || !n.has_output(0)) return 0;
  const int c = n.input(1).is_constant() ? 1 : n.op() == "Mul" && n.input(0).is_constant() ? 0 : -1;
  if (c < 0 || n.input(1 - c).is_constant()) return 0;
  const Value& k = n.input(c);
  if (k.numel() != 1 || !is_float(k.dtype()) || n.input(1 - c).shape() != n.output(0).shape()) return 0;
  const double v = k.constant().to_f64().at(0);
  if (!(v != 0) || !std::isfinite(v)) return 0;
  *x = &n.input(1 - c);
  return n.op() == "Mul" ? v : 1 / v;
}

/// The scaled value is read by products only, each taking it once, as A or B.
bool only_product_operand(const Value& y) {
  if (y.is_graph_output() || y.users().empty()) return false;
  for (const Node* u : y.users()) {
    if (!is_product(*u)) return false;
    int reads = 0;
    for (int i = 0; i < u->num_inputs(); ++i) {
      if (u->input_ptr(i) != &y) continue;
      if (i > 1) return false;
      ++reads;
    }
    if (reads != 1) return false;
  }
  return true;
}

/// The FusedMatMul (no epilogue) that replaces MatMul m, in its place.
Node* as_fused_matmul(Graph& g, Node* m) {
  const auto& nodes = g.nodes();
  Node* before = nullptr;
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    if (nodes[i].get() == m) before = nodes[i + 1].get();
  }
  const std::string name = m->name();
  const int opset = m->opset();
  Value* a = &m->input(0);
  Value* b = &m->input(1);
  Value* y = &m->output(0);
  g.remove_node(m);
  Node* f = g.add_node("FusedMatMul", name, {a, b}, {y}, before);
  f->set_domain(ops::kModelcDomain);
  f->set_opset(opset);
  ops::set_activation(*f, ops::EpilogueActivation{});
  return f;
}

/// The product whose result a scale reads, when the scale is its only reader and the product has
/// no epilogue (alpha would scale only part of it); else null.
Node* product_scaled(const Value& x, const Value& y) {
  Node* p = x.producer();
  if (!p || !is_product(*p) || x.is_graph_output() || x.users().size() != 1 || y.is_graph_output()) return nullptr;
  if (p->op() == "Gemm" || p->op() == "FusedGemm" || p->num_inputs() > 2) return nullptr;  // C / bias / residual
  return p->attr_string("activation", "none") == "none" ? p : nullptr;
}

}  // namespace

bool fold_scale(Graph& g, const PassOptions&) {
  std::vector<Node*> scales;
  for (const auto& up : g.nodes()) {
    Value* x = nullptr;
    if (scale_of(*up, &x) == 0) continue;
    if (only_product_operand(up->output(0)) || product_scaled(*x, up->output(0))) scales.push_back(up.get());
  }
  for (Node* s : scales) {
    Value* x = nullptr;
    const double factor = scale_of(*s, &x);
    Value* y = &s->output(0);
    std::vector<Node*> users(y->users().begin(), y->users().end());
    if (!only_product_operand(*y)) users = {x->producer()};  // the scale of a product's result
    for (Node* u : users) {
      std::vector<std::string> covers = u->covers().empty() ? std::vector<std::string>{u->name()} : u->covers();
      covers.push_back(s->name());
      if (default_domain(*u) && u->op() == "MatMul") u = as_fused_matmul(g, u);
      u->set_attr_float("alpha", u->attr_float("alpha", 1.0) * factor);
      u->set_covers(covers);
    }
    g.replace_all_uses(y, x);
    g.remove_node(s);
  }
  return !scales.empty();
}

}  // namespace modelc

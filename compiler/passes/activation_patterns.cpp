// compiler/passes/activation_patterns.cpp — what the fusion passes (fuse_epilogue,
// fuse_elementwise) match after a value: the activation patterns exporters write, and the
// replacement of a head node and its chain by one fused node (see activation_patterns.h).
#include "passes/activation_patterns.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ops/registry.h"

namespace modelc::fusion {

using ops::Activation;
using ops::EpilogueActivation;

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

const ops::OpDef* def_of(const Node& n) {
  return default_domain(n) ? ops::OpRegistry::instance().find(n.op(), n.opset()) : nullptr;
}

bool is_op(const Node* n, const char* op) {
  return n && default_domain(*n) && n->op() == op && n->num_outputs() == 1 && n->has_output(0);
}

Node* sole_user(const Value& v) {
  if (v.is_graph_output() || v.users().size() != 1) return nullptr;
  return v.users()[0];
}

/// For a two-input node reading `v`: the other input (v itself for x op x);
/// null when the node does not read v or has another arity.
Value* other_operand(const Node& n, const Value& v) {
  if (n.num_inputs() != 2 || !n.has_input(0) || !n.has_input(1)) return nullptr;
  if (&n.input(0) == &v) return &n.input(1);
  if (&n.input(1) == &v) return &n.input(0);
  return nullptr;
}

/// A constant of one element close to `want`: within `rtol` (exporters write
/// float32 constants), or within half a unit in the last place of a narrower
/// type (after passes/precision, sqrt(2) is 1.4140625 in float16).
bool scalar_const(const Value* v, double want, double rtol) {
  if (!v || !v->is_constant() || v->numel() != 1 || !is_float(v->dtype())) return false;
  if (v->dtype() == DType::float16) rtol = std::max(rtol, 1.0 / 2048);
  if (v->dtype() == DType::bfloat16) rtol = std::max(rtol, 1.0 / 256);
  const double x = v->constant().f64_at(0);
  return std::fabs(x - want) <= rtol * std::fabs(want);
}

std::vector<std::string> covers_of(const Node& n) {
  return n.covers().empty() ? std::vector<std::string>{n.name()} : n.covers();
}

Node* next_node(const Graph& g, const Node* n) {
  const auto& nodes = g.nodes();
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    if (nodes[i].get() == n) return nodes[i + 1].get();
  }
  return nullptr;
}

namespace {

/// Every reader of `in` and of each pattern node's outputs (but the last's)
/// is in the pattern, none of them is a graph output, and the result has
/// `in`'s type and shape (scalar constants broadcast without changing it).
bool closed(const std::vector<Node*>& nodes, const Value& in) {
  const std::set<const Node*> inside(nodes.begin(), nodes.end());
  auto readers_inside = [&](const Value& v) {
    if (v.is_graph_output()) return false;
    return std::all_of(v.users().begin(), v.users().end(), [&](const Node* u) { return inside.count(u) != 0; });
  };
  if (!readers_inside(in)) return false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    if (!default_domain(*n) || n->num_outputs() != 1 || !n->has_output(0)) return false;
    const Value& o = n->output(0);
    if (o.dtype() != in.dtype() || o.shape() != in.shape()) return false;
    if (i + 1 < nodes.size() && !readers_inside(o)) return false;
  }
  return true;
}

std::optional<ActivationMatch> finish(std::vector<Node*> nodes, const Value& in, EpilogueActivation act) {
  if (!closed(nodes, in)) return std::nullopt;
  ActivationMatch m;
  m.out = &nodes.back()->output(0);
  m.nodes = std::move(nodes);
  m.act = act;
  return m;
}

/// x * u * 0.5 in any association, where u is the value computed from x:
/// (x * u) * 0.5, (u * 0.5) * x, (x * 0.5) * u. Appends its nodes.
bool match_half_product(const Value& x, const Value& u, std::vector<Node*>& nodes) {
  Node* m1 = sole_user(u);
  if (!is_op(m1, "Mul")) return false;
  Value* o = other_operand(*m1, u);
  if (!o) return false;
  if (o == &x) {  // (x * u) * 0.5
    Node* m2 = sole_user(m1->output(0));
    if (!is_op(m2, "Mul") || !scalar_const(other_operand(*m2, m1->output(0)), 0.5)) return false;
    nodes.push_back(m1);
    nodes.push_back(m2);
    return true;
  }
  if (scalar_const(o, 0.5)) {  // (u * 0.5) * x
    Node* m2 = sole_user(m1->output(0));
    if (!is_op(m2, "Mul") || other_operand(*m2, m1->output(0)) != &x) return false;
    nodes.push_back(m1);
    nodes.push_back(m2);
    return true;
  }
  Node* h = o->producer();  // (x * 0.5) * u
  if (is_op(h, "Mul") && other_operand(*h, x) && scalar_const(other_operand(*h, x), 0.5)) {
    nodes.push_back(h);
    nodes.push_back(m1);
    return true;
  }
  return false;
}

// x * Sigmoid(x)
std::optional<ActivationMatch> match_silu(const Value& x) {
  for (Node* s : x.users()) {
    if (!is_op(s, "Sigmoid") || &s->input(0) != &x) continue;
    Node* m = sole_user(s->output(0));
    if (!is_op(m, "Mul") || other_operand(*m, s->output(0)) != &x) continue;
    EpilogueActivation a;
    a.kind = Activation::silu;
    if (auto r = finish({s, m}, x, a)) return r;
  }
  return std::nullopt;
}

// x * HardSigmoid(x; 1/6, 0.5): HardSwish before opset 14.
std::optional<ActivationMatch> match_hard_swish(const Value& x) {
  for (Node* hs : x.users()) {
    if (!is_op(hs, "HardSigmoid") || &hs->input(0) != &x) continue;
    const std::optional<EpilogueActivation> h = ops::epilogue_activation_of(*hs);
    if (!h || std::fabs(h->alpha - 1.0 / 6.0) > 1e-6 || h->beta != 0.5) continue;
    Node* m = sole_user(hs->output(0));
    if (!is_op(m, "Mul") || other_operand(*m, hs->output(0)) != &x) continue;
    EpilogueActivation a = *h;
    a.kind = Activation::hard_swish;
    if (auto r = finish({hs, m}, x, a)) return r;
  }
  return std::nullopt;
}

// x * (Erf(x / sqrt2) + 1) * 0.5
std::optional<ActivationMatch> match_gelu_erf(const Value& x) {
  const double sqrt2 = std::sqrt(2.0);
  for (Node* d : x.users()) {
    const bool div = is_op(d, "Div") && &d->input(0) == &x && scalar_const(&d->input(1), sqrt2);
    const bool mul = is_op(d, "Mul") && scalar_const(other_operand(*d, x), 1.0 / sqrt2);
    if (!div && !mul) continue;
    Node* e = sole_user(d->output(0));
    if (!is_op(e, "Erf")) continue;
    Node* a1 = sole_user(e->output(0));
    if (!is_op(a1, "Add") || !scalar_const(other_operand(*a1, e->output(0)), 1.0)) continue;
    std::vector<Node*> nodes{d, e, a1};
    if (!match_half_product(x, a1->output(0), nodes)) continue;
    EpilogueActivation a;
    a.kind = Activation::gelu;
    if (auto r = finish(nodes, x, a)) return r;
  }
  return std::nullopt;
}

// x * (Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) + 1) * 0.5
std::optional<ActivationMatch> match_gelu_tanh(const Value& x) {
  const double k = 0.79788456080286535588;  // sqrt(2 / pi)
  for (Node* a0 : x.users()) {
    if (!is_op(a0, "Add")) continue;
    Value* cubic = other_operand(*a0, x);  // 0.044715 * x^3
    Node* m2 = cubic ? cubic->producer() : nullptr;
    if (!is_op(m2, "Mul") || m2->num_inputs() != 2) continue;
    const int ci = scalar_const(&m2->input(0), 0.044715, 1e-5) ? 0 : scalar_const(&m2->input(1), 0.044715, 1e-5) ? 1 : -1;
    if (ci < 0) continue;
    Node* cube = m2->input(1 - ci).producer();
    std::vector<Node*> nodes;
    if (is_op(cube, "Pow") && &cube->input(0) == &x && scalar_const(&cube->input(1), 3.0, 0)) {
      nodes = {cube};
    } else if (is_op(cube, "Mul") && other_operand(*cube, x)) {
      Node* sq = other_operand(*cube, x)->producer();  // x * (x * x) or (x * x) * x
      if (!is_op(sq, "Mul") || &sq->input(0) != &x || &sq->input(1) != &x) continue;
      nodes = {sq, cube};
    } else {
      continue;
    }
    Node* m3 = sole_user(a0->output(0));
    if (!is_op(m3, "Mul") || !scalar_const(other_operand(*m3, a0->output(0)), k, 1e-5)) continue;
    Node* t = sole_user(m3->output(0));
    if (!is_op(t, "Tanh")) continue;
    Node* a1 = sole_user(t->output(0));
    if (!is_op(a1, "Add") || !scalar_const(other_operand(*a1, t->output(0)), 1.0)) continue;
    for (Node* n : {m2, a0, m3, t, a1}) nodes.push_back(n);
    if (!match_half_product(x, a1->output(0), nodes)) continue;
    EpilogueActivation a;
    a.kind = Activation::gelu_tanh;
    if (auto r = finish(nodes, x, a)) return r;
  }
  return std::nullopt;
}

// One node whose fusion class is epilogue_activation, with an epilogue form.
std::optional<ActivationMatch> match_single(const Value& x) {
  Node* u = sole_user(x);
  if (!u || !default_domain(*u) || &u->input(0) != &x) return std::nullopt;
  const ops::OpDef* def = def_of(*u);
  if (!def || def->fusion != ops::Fusion::epilogue_activation) return std::nullopt;
  const std::optional<EpilogueActivation> a = ops::epilogue_activation_of(*u);
  if (!a) return std::nullopt;
  return finish({u}, x, *a);
}

}  // namespace

std::optional<ActivationMatch> match_activation(const Value& x) {
  if (x.is_graph_output()) return std::nullopt;
  for (auto matcher : {match_silu, match_hard_swish, match_gelu_erf, match_gelu_tanh, match_single}) {
    if (auto m = matcher(x)) return m;
  }
  return std::nullopt;
}


Node* replace_with_fused(Graph& g, Node* head, const std::vector<Node*>& chain, const std::string& fused_op,
                         const std::vector<Value*>& inputs, Value* out) {
  std::vector<std::string> covers = covers_of(*head);
  for (const Node* n : chain) {
    for (const std::string& c : covers_of(*n)) {
      if (std::find(covers.begin(), covers.end(), c) == covers.end()) covers.push_back(c);
    }
  }
  const std::string name = head->name();
  const int opset = head->opset();
  const auto attrs = head->attrs();
  Node* before = next_node(g, chain.back());
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) g.remove_node(*it);
  g.remove_node(head);

  Node* f = g.add_node(fused_op, name, inputs, {out}, before);
  f->set_domain(ops::kModelcDomain);
  f->set_opset(opset);
  f->set_covers(covers);
  for (const auto& [k, a] : attrs) f->set_attr(k, a);
  return f;
}

void check_fused(Node& f) {
  Value& out = f.output(0);
  const DType dtype = out.dtype();
  const Shape shape = out.shape();
  const ops::OpDef& def = ops::lookup(f);
  ops::validate_node(f, def);
  def.infer(f);
  if (out.dtype() != dtype || out.shape() != shape) {
    throw f.error("internal: the fused node infers " + out.type_str() + " where its nodes computed " +
                  dtype_name(dtype) + "[" + shape_str(shape) + "]");
  }
}

}  // namespace modelc::fusion

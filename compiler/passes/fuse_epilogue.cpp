// compiler/passes/fuse_epilogue.cpp — vertical fusion: a producer (an op whose
// fusion class is `producer` and which has a fused form: Conv, Gemm, MatMul)
// and the epilogue after it become one FusedConv / FusedGemm / FusedMatMul
// node (compiler/ops/fused.h), in this order:
//
//   1. bias      MatMul: Add of a constant whose only non-1 dim is the last
//                (N values); Gemm without C (opset 11+): Add of a constant that
//                broadcasts to [M, N], which becomes C. (Conv's constant Adds
//                are folded into its bias by fold_batchnorm.)
//   2. residual  Add of the current value and another non-constant value of
//                the same type and shape (ResNet: Conv -> Add -> Relu)
//   3. activation  a node whose fusion class is epilogue_activation and that
//                has an epilogue form (ops::epilogue_activation_of), or one of
//                the multi-node patterns exporters write (the only place op
//                names are matched here):
//                  SiLU        x * Sigmoid(x)
//                  HardSwish   x * HardSigmoid(x) (alpha 1/6, beta 0.5: opset < 14)
//                  GELU        x * (Erf(x / sqrt2) + 1) * 0.5, the product in any
//                              association (torch 1.13 at opsets 11-17 writes
//                              Div, Erf, Add 1, Mul x, Mul 0.5); x * (1/sqrt2) too
//                  GELU tanh   x * (Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)) + 1) * 0.5
//                              (torch's approximate='tanh': Mul x x, Mul x, Mul c,
//                              Add x, Mul c, Tanh, Add 1, Mul x, Mul 0.5; x^3 as
//                              Pow(x, 3) too)
//   4. residual  the same, after the activation (when step 2 found none)
//
// Steps are taken only while every intermediate value has all its readers in
// the chain and is not a graph output. The fused node takes the producer's
// name and place of the last node it replaces, writes the last node's output
// Value (which keeps its name), and records every ONNX node it covers.
//
// Needs: BN and constant scales folded (fold_batchnorm); runs after precision,
// whose boundary Casts stop a chain (a pinned FP32 activation stays apart).
// Leaves: no producer followed by a fusable bias, activation or residual Add.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ops/fused.h"
#include "ops/registry.h"
#include "passes/pass.h"

namespace modelc {

namespace {

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
bool scalar_const(const Value* v, double want, double rtol = 1e-6) {
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

/// An activation found after the current value: the nodes it spans (the
/// last one writes `out`) and its epilogue form.
struct Match {
  std::vector<Node*> nodes;
  Value* out = nullptr;
  EpilogueActivation act;
};

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

std::optional<Match> finish(std::vector<Node*> nodes, const Value& in, EpilogueActivation act) {
  if (!closed(nodes, in)) return std::nullopt;
  Match m;
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
std::optional<Match> match_silu(const Value& x) {
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
std::optional<Match> match_hard_swish(const Value& x) {
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
std::optional<Match> match_gelu_erf(const Value& x) {
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
std::optional<Match> match_gelu_tanh(const Value& x) {
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
std::optional<Match> match_single(const Value& x) {
  Node* u = sole_user(x);
  if (!u || !default_domain(*u) || &u->input(0) != &x) return std::nullopt;
  const ops::OpDef* def = def_of(*u);
  if (!def || def->fusion != ops::Fusion::epilogue_activation) return std::nullopt;
  const std::optional<EpilogueActivation> a = ops::epilogue_activation_of(*u);
  if (!a) return std::nullopt;
  return finish({u}, x, *a);
}

std::optional<Match> match_activation(const Value& x) {
  if (x.is_graph_output()) return std::nullopt;
  for (auto matcher : {match_silu, match_hard_swish, match_gelu_erf, match_gelu_tanh, match_single}) {
    if (auto m = matcher(x)) return m;
  }
  return std::nullopt;
}

/// An Add whose fusion class is epilogue_binary, reading `x` once.
Node* add_after(const Value& x) {
  Node* u = sole_user(x);
  if (!is_op(u, "Add") || u->num_inputs() != 2) return nullptr;
  const ops::OpDef* def = def_of(*u);
  if (!def || def->fusion != ops::Fusion::epilogue_binary) return nullptr;
  const Value& out = u->output(0);
  if (out.dtype() != x.dtype() || out.shape() != x.shape()) return nullptr;
  return other_operand(*u, x) ? u : nullptr;
}

/// The residual of an Add after x: non-constant, x's type and shape.
Value* residual_of(const Node& add, const Value& x) {
  Value* r = other_operand(add, x);
  if (!r || r == &x || r->is_constant() || r->dtype() != x.dtype() || r->shape() != x.shape()) return nullptr;
  return r;
}

/// MatMul's bias: a constant with N = x's last dim values, every other dim 1.
bool is_row_bias(const Value& c, const Value& x) {
  if (!c.is_constant() || c.dtype() != x.dtype() || x.rank() < 1 || c.rank() > x.rank()) return false;
  const int64_t N = x.shape().back();
  if (c.numel() != N) return false;
  for (int64_t i = 0; i + 1 < c.rank(); ++i) {
    if (c.shape()[static_cast<std::size_t>(i)] != 1) return false;
  }
  return c.rank() == 0 ? N == 1 : c.shape().back() == N;
}

/// Gemm's C: a constant that broadcasts unidirectionally to [M, N].
bool is_gemm_c(const Value& c, const Value& x) {
  if (!c.is_constant() || c.dtype() != x.dtype() || c.rank() > 2) return false;
  for (int64_t i = 0; i < c.rank(); ++i) {
    const int64_t d = c.shape()[static_cast<std::size_t>(i)];
    const int64_t t = x.shape()[static_cast<std::size_t>(2 - c.rank() + i)];
    if (d != 1 && d != t) return false;
  }
  return true;
}

bool fuse_one(Graph& g, Node* p) {
  const std::string fused_op = ops::fused_op_for(p->op());
  const bool is_matmul = p->op() == "MatMul";
  const bool is_gemm = p->op() == "Gemm";
  Value* cur = &p->output(0);
  std::vector<Node*> chain;
  Value* bias = nullptr;
  Value* residual = nullptr;
  bool residual_first = false;
  std::optional<EpilogueActivation> act;

  // 1. bias
  if (Node* u = add_after(*cur)) {
    Value* c = other_operand(*u, *cur);
    if (is_matmul && is_row_bias(*c, *cur)) {
      bias = c;
    } else if (is_gemm && !p->has_input(2) && p->opset() >= 11 && is_gemm_c(*c, *cur)) {
      bias = c;
    }
    if (bias) {
      chain.push_back(u);
      cur = &u->output(0);
    }
  }
  // 2. residual before the activation
  if (Node* u = add_after(*cur)) {
    if (Value* r = residual_of(*u, *cur)) {
      residual = r;
      residual_first = true;
      chain.push_back(u);
      cur = &u->output(0);
    }
  }
  // 3. activation
  if (std::optional<Match> m = match_activation(*cur)) {
    act = m->act;
    for (Node* n : m->nodes) chain.push_back(n);
    cur = m->out;
  }
  // 4. residual after it
  if (!residual) {
    if (Node* u = add_after(*cur)) {
      if (Value* r = residual_of(*u, *cur)) {
        residual = r;
        chain.push_back(u);
        cur = &u->output(0);
      }
    }
  }
  if (chain.empty()) return false;

  // The fused node's inputs: the producer's operands, the bias, the residual.
  std::vector<Value*> inputs{&p->input(0), &p->input(1), p->input_ptr(2), residual};
  if (bias && is_matmul) {
    // FusedMatMul takes the bias as [N]: a reshaped copy when it is [1, N] etc.
    const int64_t N = cur->shape().back();
    if (bias->shape() != Shape{N}) {
      bias = g.add_constant(bias->name() + "_1d", bias->constant().reshaped({N}), bias->is_initializer());
    }
    inputs[ops::kFusedBiasInput] = bias;
  } else if (bias) {
    inputs[ops::kFusedBiasInput] = bias;  // Gemm without C: the Add's constant is C
  }
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();

  std::vector<std::string> covers = covers_of(*p);
  for (const Node* n : chain) {
    for (const std::string& c : covers_of(*n)) {
      if (std::find(covers.begin(), covers.end(), c) == covers.end()) covers.push_back(c);
    }
  }
  const std::string name = p->name();
  const int opset = p->opset();
  const auto attrs = p->attrs();
  Node* before = next_node(g, chain.back());
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) g.remove_node(*it);
  g.remove_node(p);

  Node* f = g.add_node(fused_op, name, inputs, {cur}, before);
  f->set_domain(ops::kModelcDomain);
  f->set_opset(opset);
  f->set_covers(covers);
  for (const auto& [k, a] : attrs) f->set_attr(k, a);
  if (bias && is_gemm) f->set_attr_float("beta", 1.0);
  ops::set_activation(*f, act ? *act : EpilogueActivation{});
  if (residual) {
    f->set_attr_string("residual_position", residual_first && act ? "before_activation" : "after_activation");
  }
  // The fused node must check and infer to the type its output already has.
  const DType dtype = cur->dtype();
  const Shape shape = cur->shape();
  const ops::OpDef& def = ops::lookup(*f);
  ops::validate_node(*f, def);
  def.infer(*f);
  if (cur->dtype() != dtype || cur->shape() != shape) {
    throw f->error("internal: the fused node infers " + cur->type_str() + " where its nodes computed " +
                   dtype_name(dtype) + "[" + shape_str(shape) + "]");
  }
  return true;
}

}  // namespace

bool fuse_epilogue(Graph& g, const PassOptions&) {
  std::vector<Node*> producers;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    const ops::OpDef* def = def_of(n);
    if (!def || def->fusion != ops::Fusion::producer || ops::fused_op_for(n.op()).empty()) continue;
    if (n.num_outputs() != 1 || !n.has_output(0) || !is_float(n.output(0).dtype())) continue;
    if (!n.has_input(0) || !n.has_input(1)) continue;
    producers.push_back(up.get());
  }
  // A producer is never part of another's chain (chains hold Adds and
  // activations), so the pointers stay valid while earlier ones are fused.
  bool changed = false;
  for (Node* p : producers) changed = fuse_one(g, p) || changed;
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace modelc

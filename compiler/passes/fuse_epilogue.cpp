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
#include <optional>

#include "ops/fused.h"
#include "ops/registry.h"
#include "passes/activation_patterns.h"
#include "passes/pass.h"

namespace modelc {

namespace {

using ops::Activation;
using ops::EpilogueActivation;
using namespace fusion;

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
bool is_row_bias(const Value& c, const Value& x, bool any_float = false) {
  if (!c.is_constant() || (c.dtype() != x.dtype() && !(any_float && is_float(c.dtype()))) || x.rank() < 1 ||
      c.rank() > x.rank()) {
    return false;
  }
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
  // QMatMul (ops/quantize.h) takes a row bias too, as float32 [N], when it has none yet.
  const bool is_qmatmul = p->op() == "QMatMul";
  const bool is_matmul = p->op() == "MatMul" || (is_qmatmul && !p->has_input(2));
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
    if (is_matmul && is_row_bias(*c, *cur, is_qmatmul)) {
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
  if (std::optional<ActivationMatch> m = match_activation(*cur)) {
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
  // The INT8 products' inputs past the residual (their scales and weight sums) stay where they are.
  for (int i = ops::kFusedResidualInput + 1; i < p->num_inputs(); ++i) inputs.push_back(p->input_ptr(i));
  if (bias && is_matmul) {
    // FusedMatMul takes the bias as [N]: a reshaped copy when it is [1, N] etc.; QMatMul as float32.
    const int64_t N = cur->shape().back();
    if (is_qmatmul && bias->dtype() != DType::float32) {
      bias = g.add_constant(bias->name() + "_fp32", bias->constant().cast(DType::float32).reshaped({N}),
                            bias->is_initializer());
    } else if (bias->shape() != Shape{N}) {
      bias = g.add_constant(bias->name() + "_1d", bias->constant().reshaped({N}), bias->is_initializer());
    }
    inputs[ops::kFusedBiasInput] = bias;
  } else if (bias) {
    inputs[ops::kFusedBiasInput] = bias;  // Gemm without C: the Add's constant is C
  }
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();

  Node* f = replace_with_fused(g, p, chain, fused_op, inputs, cur);
  if (bias && is_gemm) f->set_attr_float("beta", 1.0);
  ops::set_activation(*f, act ? *act : EpilogueActivation{});
  if (residual) {
    f->set_attr_string("residual_position", residual_first && act ? "before_activation" : "after_activation");
  }
  check_fused(*f);
  return true;
}

}  // namespace

bool fuse_epilogue(Graph& g, const PassOptions&) {
  std::vector<Node*> producers;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    // An internal producer (the INT8 products QConv, QMatMul) is its own fused form.
    const ops::OpDef* def = n.domain() == ops::kModelcDomain
                                ? ops::OpRegistry::instance().find(n.op(), n.opset(), ops::kModelcDomain)
                                : def_of(n);
    if (!def || def->fusion != ops::Fusion::producer || ops::fused_op_for(n.op()).empty()) continue;
    if (n.num_outputs() != 1 || !n.has_output(0) || !is_narrow_float(n.output(0).dtype())) continue;
    if (!n.has_input(0) || !n.has_input(1)) continue;
    // An INT8 product is its own fused form: one that has an epilogue already is done.
    if (n.has_input(ops::kFusedResidualInput) || n.attr_string("activation", "none") != "none") continue;
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

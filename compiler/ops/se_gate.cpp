// compiler/ops/se_gate.cpp — modelc.SEGate (see se_gate.h): its attributes, shape rule, reference
// evaluation and facts.
//
// The reference pools, multiplies and applies both activations in double and rounds once to the
// output type; the kernel keeps the pooled and hidden vectors in FP32 (templates/se_gate.cuh), so
// this is the closer model of it than the unfused chain's rounded steps.
#include "ops/se_gate.h"

#include <string>

#include "ops/common.h"
#include "ops/registry.h"

namespace modelc::ops {

namespace {

EpilogueActivation gate_of(const Node& n) {
  EpilogueActivation g;
  const std::string name = n.attr_string("gate", "sigmoid");
  if (name == "sigmoid") {
    g.kind = Activation::sigmoid;
    if (n.has_attr("gate_alpha") || n.has_attr("gate_beta")) {
      throw n.error("attributes 'gate_alpha' and 'gate_beta' apply to gate 'hard_sigmoid', not 'sigmoid'");
    }
  } else if (name == "hard_sigmoid") {
    g.kind = Activation::hard_sigmoid;
    g.alpha = n.attr_float("gate_alpha", 0.2);
    g.beta = n.attr_float("gate_beta", 0.5);
  } else {
    throw n.error("attribute 'gate' is '" + name + "', expected sigmoid or hard_sigmoid");
  }
  return g;
}

void validate_se_gate(const Node& n) {
  if (n.input(kSeGateX).has_type()) se_gate_spec(n);
}

void infer_se_gate(Node& n) {
  const SeGateSpec s = se_gate_spec(n);
  n.output(0).set_type(n.input(kSeGateX).dtype(), {s.n, s.c, 1, 1});
}

std::vector<Tensor> eval_se_gate(const Node& n, const TensorRefs& in) {
  const SeGateSpec s = se_gate_spec(n);
  const std::vector<double> x = in.at(kSeGateX)->to_f64(), w1 = in.at(kSeGateW1)->to_f64(),
                            b1 = in.at(kSeGateB1)->to_f64(), w2 = in.at(kSeGateW2)->to_f64(),
                            b2 = in.at(kSeGateB2)->to_f64();
  std::vector<double> y(static_cast<std::size_t>(s.n * s.c));
  std::vector<double> p(static_cast<std::size_t>(s.c)), h(static_cast<std::size_t>(s.s));
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t c = 0; c < s.c; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < s.hw; ++i) sum += x[static_cast<std::size_t>((b * s.c + c) * s.hw + i)];
      p[static_cast<std::size_t>(c)] = sum / static_cast<double>(s.hw);
    }
    for (int64_t j = 0; j < s.s; ++j) {
      double v = b1[static_cast<std::size_t>(j)];
      for (int64_t c = 0; c < s.c; ++c) v += w1[static_cast<std::size_t>(j * s.c + c)] * p[static_cast<std::size_t>(c)];
      h[static_cast<std::size_t>(j)] = apply_activation(s.act, v);
    }
    for (int64_t c = 0; c < s.c; ++c) {
      double v = b2[static_cast<std::size_t>(c)];
      for (int64_t j = 0; j < s.s; ++j) v += w2[static_cast<std::size_t>(c * s.s + j)] * h[static_cast<std::size_t>(j)];
      y[static_cast<std::size_t>(b * s.c + c)] = apply_activation(s.gate, v);
    }
  }
  return {Tensor::from_f64(n.output(0).dtype(), {s.n, s.c, 1, 1}, y)};
}

int64_t flops_se_gate(const Node& n) {
  const SeGateSpec s = se_gate_spec(n);
  return s.n * (s.c * s.hw + 4 * s.c * s.s + 2 * s.c + 2 * s.s);
}

}  // namespace

SeGateSpec se_gate_spec(const Node& n) {
  SeGateSpec s;
  const Value& x = n.input(kSeGateX);
  if (x.rank() < 3) throw n.error("X ('" + x.name() + "') is " + x.type_str() + "; expected [N, C, spatial...]");
  s.n = x.shape()[0];
  s.c = x.shape()[1];
  s.hw = x.numel() / (s.n * s.c == 0 ? 1 : s.n * s.c);
  const Value& w1 = n.input(kSeGateW1);
  if (w1.rank() != 2 || w1.shape()[1] != s.c) {
    throw n.error("W1 ('" + w1.name() + "') is " + w1.type_str() + "; expected [S, " + std::to_string(s.c) + "]");
  }
  s.s = w1.shape()[0];
  const std::pair<int, Shape> want[] = {{kSeGateB1, {s.s}}, {kSeGateW2, {s.c, s.s}}, {kSeGateB2, {s.c}}};
  for (const auto& [i, shape] : want) {
    const Value& v = n.input(i);
    if (v.shape() != shape) {
      throw n.error("input " + std::to_string(i) + " ('" + v.name() + "') is " + v.type_str() + "; expected [" +
                    shape_str(shape) + "]");
    }
  }
  for (int i = kSeGateW1; i <= kSeGateB2; ++i) {
    if (n.input(i).dtype() != x.dtype()) {
      throw n.error("input " + std::to_string(i) + " ('" + n.input(i).name() + "') is " + n.input(i).type_str() +
                    ", X is " + x.type_str() + ": one float type");
    }
  }
  if (x.dtype() != DType::float32 && x.dtype() != DType::float16 && x.dtype() != DType::bfloat16) {
    throw n.error(std::string("X is ") + dtype_name(x.dtype()) + "; expected float32, float16 or bfloat16");
  }
  s.act = activation_of_fused(n);
  s.gate = gate_of(n);
  return s;
}

void set_gate(Node& n, const EpilogueActivation& gate) {
  n.set_attr_string("gate", activation_name(gate.kind));
  n.remove_attr("gate_alpha");
  n.remove_attr("gate_beta");
  if (gate.kind == Activation::hard_sigmoid) {
    n.set_attr_float("gate_alpha", gate.alpha);
    n.set_attr_float("gate_beta", gate.beta);
  }
}

// The kernel: the "se_gate" family (templates/se_gate.cuh; its descriptor schedule/se_gate.h, its
// printer codegen/families/se_gate.cpp).
MODELC_REGISTER_OP(SEGate)
    .domain(kModelcDomain)
    .since(1)
    .attrs({"activation", "activation_alpha", "activation_beta", "activation_min", "activation_max", "gate",
            "gate_alpha", "gate_beta"})
    .inputs(5, 5)
    .validate(validate_se_gate)
    .infer(infer_se_gate)
    .eval(eval_se_gate)
    .precision(Precision::fp32_compute)
    .layout(Layout::channels)
    .kernel("se_gate")
    .family("se_gate")
    .flops(flops_se_gate)
    .doc("the gate of a squeeze-and-excite block: gate(W2 act(W1 mean_hw(X) + B1) + B2), [N, C, 1, 1] (made by "
         "passes/fuse_se_gate)");

}  // namespace modelc::ops

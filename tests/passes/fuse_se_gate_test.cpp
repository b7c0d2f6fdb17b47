// passes/fuse_se_gate and the op it makes (modelc.SEGate: ops/se_gate.cpp).
//
// Small graphs in the forms exporters write, run through fuse_epilogue first (as the pipeline
// does): torchvision's SqueezeExcitation (GlobalAveragePool, Conv 1x1, ReLU, Conv 1x1, Sigmoid),
// EfficientNet's (ReduceMean over H, W, SiLU as x * Sigmoid(x)), MobileNetV3's HardSigmoid gate, the
// Gemm form after a Flatten with the gate reshaped back to [N, C, 1, 1], and the MatMul + Add form
// after a Reshape with an Unsqueeze; each fused into one SEGate node (its weights [S, C] and
// [C, S], its activations), the Mul left in place, the reference output unchanged (1e-6). And the
// refusals, each with its reason: the pooled vector read twice, a tanh gate, a 3x3 FC.
#include <doctest/doctest.h>

#include <map>

#include "ops/se_gate.h"
#include "ops/shape_inference.h"
#include "passes/fuse_se_gate.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/passes/graph_data.h"

using namespace modelc;

namespace {

struct Builder {
  Graph g;
  uint64_t seed = 1;
  Builder() { g.set_opset(17); }
  Value* in(const char* name, Shape s) {
    Value* v = g.add_value(name);
    v->set_type(DType::float32, std::move(s));
    g.add_input(v);
    return v;
  }
  Value* w(const std::string& name, Shape s, double scale = 0.5) {
    std::vector<double> v = test::ramp(s, 0.37 + 0.11 * static_cast<double>(seed++)).to_f64();
    for (double& x : v) x *= scale;
    return g.add_constant(name, Tensor::from_f64(DType::float32, s, v), true);
  }
  Value* ints(const std::string& name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return g.add_constant(name, Tensor::from_i64(DType::int64, {n}, v));
  }
  Node* last() { return g.nodes().back().get(); }
  Value* node(const char* op, const std::string& name, const std::vector<Value*>& inputs) {
    Value* out = g.add_value(name + "_out");
    g.add_node(op, name, inputs, {out});
    return out;
  }
  Value* conv1x1(Value* x, int64_t cin, int64_t cout, const std::string& name) {
    Value* y = node("Conv", name, {x, w(name + ".W", {cout, cin, 1, 1}), w(name + ".B", {cout})});
    last()->set_attr_ints("kernel_shape", {1, 1});
    return y;
  }
  void finish(Value* out) {
    g.add_output(out);
    ops::infer_graph(g);
  }
};

/// fuse_epilogue, then fuse_se_gate; the reference output must not change. Returns the outcomes.
std::vector<SeGateOutcome> fuse_checked(Graph& g) {
  const TensorMap in = random_inputs(g, 7);
  const TensorMap before = run_reference(g, in);
  PassOptions o;
  run_graph_stage(g, o, "fuse_epilogue");
  std::vector<SeGateOutcome> out;
  fuse_se_gate(g, o, &out);
  g.verify();
  ops::infer_graph(g);
  const TensorMap after = run_reference(g, in);
  for (const auto& entry : before) CHECK_MESSAGE(test::max_rel_diff(entry.second, after.at(entry.first)) <= 1e-6, entry.first);
  return out;
}

int count(const Graph& g, const std::string& op) {
  int c = 0;
  for (const auto& n : g.nodes()) c += n->op() == op;
  return c;
}

Node* gate_node(Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->op() == "SEGate") return n.get();
  }
  FAIL("no SEGate node");
  return nullptr;
}

std::string reasons(const std::vector<SeGateOutcome>& out) {
  std::string r;
  for (const SeGateOutcome& o : out) r += o.pool + ": " + (o.fused ? "fused" : o.reason) + "\n";
  return r;
}

}  // namespace

TEST_CASE("fuse_se_gate: torchvision's SqueezeExcitation (GlobalAveragePool, Conv, ReLU, Conv, Sigmoid)") {
  Builder b;
  Value* x = b.in("x", {2, 24, 5, 5});
  Value* p = b.node("GlobalAveragePool", "gap", {x});
  Value* h = b.node("Relu", "relu", {b.conv1x1(p, 24, 10, "fc1")});
  Value* s = b.node("Sigmoid", "sigmoid", {b.conv1x1(h, 10, 24, "fc2")});
  b.finish(b.node("Mul", "scale", {x, s}));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  CHECK(out[0].covers == std::vector<std::string>{"gap", "fc1", "relu", "fc2", "sigmoid"});
  Node* n = gate_node(b.g);
  const ops::SeGateSpec spec = ops::se_gate_spec(*n);
  CHECK(spec.n == 2);
  CHECK(spec.c == 24);
  CHECK(spec.s == 10);
  CHECK(spec.hw == 25);
  CHECK(spec.act.kind == ops::Activation::relu);
  CHECK(spec.gate.kind == ops::Activation::sigmoid);
  CHECK(n->input(ops::kSeGateW1).shape() == Shape{10, 24});
  CHECK(n->input(ops::kSeGateW2).shape() == Shape{24, 10});
  CHECK(&n->input(0) == b.g.inputs()[0]);
  CHECK(count(b.g, "Mul") == 1);  // the gate is applied outside the op
  CHECK(count(b.g, "GlobalAveragePool") == 0);
  CHECK(count(b.g, "FusedConv") == 0);
}

TEST_CASE("fuse_se_gate: EfficientNet's ReduceMean and SiLU; MobileNetV3's HardSigmoid gate") {
  Builder b;
  Value* x = b.in("x", {1, 16, 4, 3});
  Value* p = b.node("ReduceMean", "mean", {x});
  b.last()->set_attr_ints("axes", {-2, -1});
  b.last()->set_attr_int("keepdims", 1);
  Value* z = b.conv1x1(p, 16, 4, "fc1");
  Value* h = b.node("Mul", "silu", {z, b.node("Sigmoid", "sig", {z})});
  Value* s = b.node("HardSigmoid", "hsig", {b.conv1x1(h, 4, 16, "fc2")});
  b.last()->set_attr_float("alpha", 1.0 / 6);
  b.finish(b.node("Mul", "scale", {x, s}));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  const ops::SeGateSpec spec = ops::se_gate_spec(*gate_node(b.g));
  CHECK(spec.act.kind == ops::Activation::silu);
  CHECK(spec.gate.kind == ops::Activation::hard_sigmoid);
  CHECK(spec.gate.alpha == doctest::Approx(1.0 / 6));
  CHECK(spec.gate.beta == doctest::Approx(0.5));
  CHECK(spec.hw == 12);
}

TEST_CASE("fuse_se_gate: the Gemm form (Flatten, Gemm transB, Relu, Gemm, Sigmoid, Reshape)") {
  Builder b;
  Value* x = b.in("x", {2, 12, 3, 3});
  Value* f = b.node("Flatten", "flatten", {b.node("GlobalAveragePool", "gap", {x})});
  Value* g1 = b.node("Gemm", "fc1", {f, b.w("fc1.W", {6, 12}), b.w("fc1.B", {6})});  // [S, C]: transB
  b.last()->set_attr_int("transB", 1);
  Value* h = b.node("Relu", "relu", {g1});
  Value* g2 = b.node("Gemm", "fc2", {h, b.w("fc2.W", {6, 12}), b.w("fc2.B", {12})});  // [S, C] for S -> C: no transB
  Value* s = b.node("Sigmoid", "sigmoid", {g2});
  Value* r = b.node("Reshape", "view", {s, b.ints("view.shape", {2, 12, 1, 1})});
  b.finish(b.node("Mul", "scale", {x, r}));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  CHECK(count(b.g, "Flatten") == 0);
  CHECK(count(b.g, "Reshape") == 0);
  CHECK(gate_node(b.g)->output(0).shape() == Shape{2, 12, 1, 1});
}

TEST_CASE("fuse_se_gate: the MatMul form (Reshape, MatMul + Add, HardSwish, MatMul + Add, Sigmoid, Unsqueeze)") {
  Builder b;
  Value* x = b.in("x", {1, 8, 2, 2});
  Value* v = b.node("Reshape", "view", {b.node("GlobalAveragePool", "gap", {x}), b.ints("view.shape", {1, 8})});
  Value* z1 = b.node("Add", "fc1.add", {b.node("MatMul", "fc1", {v, b.w("fc1.W", {8, 4})}), b.w("fc1.B", {4})});
  Value* h = b.node("HardSwish", "hswish", {z1});
  Value* z2 = b.node("Add", "fc2.add", {b.node("MatMul", "fc2", {h, b.w("fc2.W", {4, 8})}), b.w("fc2.B", {8})});
  Value* s = b.node("Unsqueeze", "unsqueeze", {b.node("Sigmoid", "sigmoid", {z2}), b.ints("axes", {2, 3})});
  b.finish(b.node("Mul", "scale", {x, s}));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  CHECK(ops::se_gate_spec(*gate_node(b.g)).act.kind == ops::Activation::hard_swish);
}

TEST_CASE("fuse_se_gate: what the kernel cannot take stays unfused, with the reason") {
  SUBCASE("the pooled vector read twice") {
    Builder b;
    Value* x = b.in("x", {1, 8, 2, 2});
    Value* p = b.node("GlobalAveragePool", "gap", {x});
    Value* s = b.node("Sigmoid", "sigmoid", {b.conv1x1(b.node("Relu", "relu", {b.conv1x1(p, 8, 4, "fc1")}), 4, 8, "fc2")});
    Value* y = b.node("Mul", "scale", {x, s});
    b.finish(b.node("Add", "add", {y, p}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK_FALSE(out[0].fused);
    CHECK(out[0].reason.find("the pooled vector ('gap_out') has 2 readers") != std::string::npos);
    CHECK(count(b.g, "SEGate") == 0);
  }
  SUBCASE("a tanh gate") {
    Builder b;
    Value* x = b.in("x", {1, 8, 2, 2});
    Value* p = b.node("GlobalAveragePool", "gap", {x});
    Value* s = b.node("Tanh", "tanh", {b.conv1x1(b.node("Relu", "relu", {b.conv1x1(p, 8, 4, "fc1")}), 4, 8, "fc2")});
    b.finish(b.node("Mul", "scale", {x, s}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK_FALSE(out[0].fused);
    CHECK(out[0].reason == "the gate (FC2's activation) is tanh: the kernel's gate is sigmoid or hard_sigmoid");
  }
  SUBCASE("a 3x3 FC") {
    Builder b;
    Value* x = b.in("x", {1, 8, 2, 2});
    Value* p = b.node("GlobalAveragePool", "gap", {x});
    Value* c = b.node("Conv", "fc1", {p, b.w("fc1.W", {4, 8, 3, 3}), b.w("fc1.B", {4})});
    b.last()->set_attr_ints("pads", {1, 1, 1, 1});
    Value* s = b.node("Sigmoid", "sigmoid", {b.conv1x1(b.node("Relu", "relu", {c}), 4, 8, "fc2")});
    b.finish(b.node("Mul", "scale", {x, s}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK_FALSE(out[0].fused);
    CHECK(out[0].reason.find("is not a 1x1 convolution of 8 channels") != std::string::npos);
  }
}

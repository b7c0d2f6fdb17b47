// passes/precision with --bf16: the --fp16 policy (the same nodes, the same Casts) with bfloat16
// storage: weights converted to bfloat16 (FP32's range: only values beyond 3.3895e38 clamp), the
// "_bf16" names, --keep-fp32, the report; the BF16 simulation within bfloat16's error of the FP32
// graph; fold_cast_pairs on a BF16 model's FP32 islands; the BF16 models through the whole graph
// pipeline.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "frontend/onnx_import.h"
#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "support/build_paths.h"
#include "tests/ir/graph_input.h"

using namespace modelc;

namespace {

std::vector<double> randoms(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

double rel_l2(const Tensor& ref, const Tensor& got) {
  const std::vector<double> a = ref.to_f64(), b = got.to_f64();
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += a[i] * a[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

Node* node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes()) {
    if (n->name() == name) return n.get();
  }
  FAIL("no node " << name);
  return nullptr;
}

int count(const Graph& g, const char* op) { return static_cast<int>(g.nodes_of(op).size()); }

/// X -> Conv -> Relu -> Softmax -> Y (opset 17)
void conv_relu_softmax(Graph& g) {
  g.set_opset(17);
  Value* x = modelc::test::input(g, "X", {1, 2, 5, 5});
  Value* w = g.add_constant("W", Tensor::from_f64(DType::float32, {3, 2, 3, 3}, randoms(54, 1)), true);
  Value* b = g.add_constant("B", Tensor::from_f64(DType::float32, {3}, randoms(3, 2)), true);
  Value *c = g.add_value("c"), *r = g.add_value("r"), *y = g.add_value("Y");
  g.add_node("Conv", "conv", {x, w, b}, {c});
  g.add_node("Relu", "relu", {c}, {r});
  g.add_node("Softmax", "softmax", {r}, {y})->set_attr_int("axis", 1);
  g.add_output(y);
  ops::infer_graph(g);
}

}  // namespace

TEST_CASE("precision --bf16: conv, relu and softmax store bfloat16; Casts only at the graph's input and output") {
  Graph g;
  conv_relu_softmax(g);
  const TensorMap in = random_inputs(g, 11);
  const TensorMap before = run_reference(g, in);
  PassOptions o;
  o.bf16 = true;
  o.verify_each = true;
  PrecisionReport report;
  o.precision_report = &report;
  CHECK(o.half_type() == DType::bfloat16);
  CHECK(run_graph_stage(g, o, "precision"));
  REQUIRE(count(g, "Cast") == 2);
  CHECK(g.nodes().front()->output(0).dtype() == DType::bfloat16);
  CHECK(g.outputs()[0]->name() == "Y");
  CHECK(g.outputs()[0]->dtype() == DType::float32);
  const Node* conv = node_named(g, "conv");
  CHECK(conv->input(1).name() == "W_bf16");
  CHECK(conv->input(1).dtype() == DType::bfloat16);
  CHECK(conv->output(0).dtype() == DType::bfloat16);
  CHECK(node_named(g, "softmax")->output(0).name() == "Y_bf16");
  CHECK(report.type == DType::bfloat16);
  CHECK(report.fp16_nodes == 3);
  CHECK(report.casts_inserted == 2);
  CHECK(report.weights.size() == 2);
  CHECK(report.fp32_nodes.empty());
  // The weights are W rounded to bfloat16, exactly.
  const std::vector<double> w32 = Tensor::from_f64(DType::float32, {54}, randoms(54, 1)).to_f64();
  const std::vector<double> w16 = conv->input(1).constant().to_f64();
  for (std::size_t i = 0; i < w32.size(); ++i) {
    CHECK(w16[i] == static_cast<double>(bfloat16_to_float(float_to_bfloat16(static_cast<float>(w32[i])))));
  }
  // The BF16 simulation: within bfloat16's error (2^-9 per rounding), beyond FP16's.
  const TensorMap after = run_reference(g, in);
  const double e = rel_l2(before.at("Y"), after.at("Y"));
  CHECK(e > 0);
  CHECK(e <= 2e-2);
}

TEST_CASE("precision --bf16: only values beyond bfloat16's largest (3.3895e38) clamp; subnormals and underflow counted") {
  Graph g;
  g.set_opset(17);
  Value* x = modelc::test::input(g, "X", {6});
  Value* c =
      g.add_constant("C", Tensor::from_f64(DType::float32, {6}, {1e5, -7e4, 3.4e38, 1e-39, 1e-42, 1.5}), true);
  Value* m = g.add_value("m");
  g.add_node("Mul", "mul", {x, c}, {m});
  g.add_output(m);
  ops::infer_graph(g);
  PassOptions o;
  o.bf16 = true;
  PrecisionReport report;
  o.precision_report = &report;
  CHECK(run_graph_stage(g, o, "precision"));
  REQUIRE(report.weights.size() == 1);
  const PrecisionReport::Weight& w = report.weights[0];
  CHECK(w.clamped == 1);    // 3.4e38 (FP16 would clamp three)
  CHECK(w.subnormal == 1);  // 1e-39 < 2^-126
  CHECK(w.underflow == 1);  // 1e-42 (an FP32 subnormal): below bfloat16's smallest, 2^-133
  const std::vector<double> v = node_named(g, "mul")->input(1).constant().to_f64();
  CHECK(v[0] == 99840.0);  // 1e5 in bfloat16
  CHECK(v[2] == 3.3895313892515355e38);
  CHECK(std::isfinite(v[2]));
}

TEST_CASE("precision: --fp16 and --bf16 take the same nodes (the policy is one)") {
  Graph a, b;
  conv_relu_softmax(a);
  conv_relu_softmax(b);
  PassOptions fp16, bf16;
  fp16.fp16 = true;
  bf16.bf16 = true;
  PrecisionReport ra, rb;
  fp16.precision_report = &ra;
  bf16.precision_report = &rb;
  run_graph_stage(a, fp16, "precision");
  run_graph_stage(b, bf16, "precision");
  CHECK(ra.fp16_nodes == rb.fp16_nodes);
  CHECK(ra.casts_inserted == rb.casts_inserted);
  REQUIRE(a.nodes().size() == b.nodes().size());
  for (std::size_t i = 0; i < a.nodes().size(); ++i) {
    CHECK(a.nodes()[i]->op() == b.nodes()[i]->op());
    for (int k = 0; k < a.nodes()[i]->num_outputs(); ++k) {
      const DType ta = a.nodes()[i]->output(k).dtype(), tb = b.nodes()[i]->output(k).dtype();
      CHECK((ta == DType::float16 ? DType::bfloat16 : ta) == tb);
    }
  }
}

TEST_CASE("fold_cast_pairs: a BF16 model's FP32 island (Cast to float, Softmax, Cast to bfloat16) folds") {
  Graph g;
  g.set_opset(17);
  Value* x = modelc::test::input(g, "X", {2, 5}, DType::bfloat16);
  Value *x32 = g.add_value("x32"), *p = g.add_value("p"), *y = g.add_value("Y");
  g.add_node("Cast", "to32", {x}, {x32})->set_attr_int("to", static_cast<int64_t>(DType::float32));
  g.add_node("Softmax", "softmax", {x32}, {p})->set_attr_int("axis", 1);
  g.add_node("Cast", "to16", {p}, {y})->set_attr_int("to", static_cast<int64_t>(DType::bfloat16));
  g.add_output(y);
  ops::infer_graph(g);
  const TensorMap in = random_inputs(g, 3);
  const TensorMap before = run_reference(g, in);
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(g, o, "fold_cast_pairs"));
  CHECK(count(g, "Cast") == 0);
  const Node& softmax = *g.outputs()[0]->producer();
  CHECK(softmax.op() == "Softmax");
  CHECK(&softmax.input(0) == x);
  CHECK(g.outputs()[0]->dtype() == DType::bfloat16);
  const TensorMap after = run_reference(g, in);
  CHECK(after.at("Y").to_f64() == before.at("Y").to_f64());  // one rounding either way
}

TEST_CASE("pipeline --bf16 on the tiny models: within 2e-2, everything bfloat16 between one Cast in and one out") {
  for (const char* m : {"tiny_cnn.onnx", "tiny_transformer.onnx", "tiny_mlp.onnx"}) {
    CAPTURE(m);
    std::unique_ptr<Graph> g = load_onnx(std::string(build_source_dir()) + "/models/" + m);
    const TensorMap in = random_inputs(*g, 9);
    const TensorMap before = run_reference(*g, in);
    PassOptions o;
    o.bf16 = true;
    o.verify_each = true;
    PrecisionReport report;
    o.precision_report = &report;
    run_graph_stages(*g, o);
    const TensorMap after = run_reference(*g, in);
    for (const auto& [name, t] : before) {
      CHECK(rel_l2(t, after.at(name)) <= 2e-2);
      CHECK(rel_l2(t, after.at(name)) > 0);
    }
    CHECK(count(*g, "Cast") == 2);
    CHECK(report.type == DType::bfloat16);
    CHECK(report.fp32_nodes.empty());
    for (const auto& n : g->nodes()) {
      if (n->op() == "Cast") continue;
      CAPTURE(n->name());
      CHECK(n->output(0).dtype() == DType::bfloat16);
    }
  }
}

// passes/precision (--fp16): FP16 storage by the registry's policy, Casts at
// the FP16/FP32 boundaries, weights converted at compile time with clamping
// counted, --keep-fp32 and --io-fp16. The reference output stays within a
// relative L2 error of 1e-2 of the FP32 graph's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "frontend/onnx_import.h"
#include "ops/fused.h"
#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "support/build_paths.h"

using namespace modelc;

namespace {

std::vector<double> randoms(int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

struct Builder {
  Graph g;
  Node* last = nullptr;
  uint64_t seed = 1;
  explicit Builder(int opset = 17) { g.set_opset(opset); }
  Value* in(const char* name, Shape s, DType t = DType::float32) {
    Value* v = g.add_value(name);
    v->set_type(t, std::move(s));
    g.add_input(v);
    return v;
  }
  Value* w(const char* name, Shape s) {
    return g.add_constant(name, Tensor::from_f64(DType::float32, s, randoms(num_elements(s), seed++)), true);
  }
  Value* node(const char* op, const char* name, const std::vector<Value*>& inputs, const char* out_name = nullptr) {
    Value* out = g.add_value(out_name ? out_name : std::string(name) + "_out");
    last = g.add_node(op, name, inputs, {out});
    return out;
  }
};

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

bool all_finite(const Tensor& t) {
  const std::vector<double> v = t.to_f64();
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

void check_reinfer(Graph& g) {
  std::map<const Value*, std::string> types;
  for (const Value* v : g.values()) types[v] = v->type_str();
  ops::infer_graph(g);
  for (const Value* v : g.values()) CHECK_MESSAGE(v->type_str() == types[v], v->name());
}

/// Inputs for the graph as the pass left it: float16 where its inputs became float16.
TensorMap inputs_for(const Graph& g, const TensorMap& in) {
  TensorMap r;
  for (const auto& [name, t] : in) r[name] = t.cast(g.find_value(name)->dtype());
  return r;
}

/// Runs precision with the verifier; outputs within relative L2 1e-2 of the FP32 graph's.
void run_precision(Graph& g, PassOptions& o, PrecisionReport& report) {
  ops::infer_graph(g);
  const TensorMap in = random_inputs(g, 11);
  const TensorMap before = run_reference(g, in);
  o.fp16 = true;
  o.verify_each = true;
  o.precision_report = &report;
  CHECK(run_graph_stage(g, o, "precision"));
  check_reinfer(g);
  const TensorMap after = run_reference(g, inputs_for(g, in));
  for (const auto& entry : before) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    const Tensor& t = entry.second;
    CAPTURE(name);
    CHECK(rel_l2(t, after.at(name)) <= 1e-2);
    CHECK(all_finite(after.at(name)));
  }
}

int count(const Graph& g, const char* op) { return static_cast<int>(g.nodes_of(op).size()); }

Node* node_named(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes()) {
    if (n->name() == name) return n.get();
  }
  FAIL("no node " << name);
  return nullptr;
}

/// X -> Conv -> Relu -> Softmax -> Y
void conv_relu_softmax(Builder& b) {
  Value* x = b.in("X", {1, 2, 5, 5});
  Value* c = b.node("Conv", "conv", {x, b.w("W", {3, 2, 3, 3}), b.w("B", {3})});
  Value* r = b.node("Relu", "relu", {c});
  Value* y = b.node("Softmax", "softmax", {r}, "Y");
  b.last->set_attr_int("axis", 1);
  b.g.add_output(y);
}

}  // namespace

TEST_CASE("precision: conv, relu and softmax store FP16; Casts only at the graph's input and output") {
  Builder b;
  conv_relu_softmax(b);
  PassOptions o;
  PrecisionReport report;
  run_precision(b.g, o, report);
  REQUIRE(count(b.g, "Cast") == 2);
  const Node* first = b.g.nodes().front().get();
  const Node* last = b.g.nodes().back().get();
  CHECK(first->op() == "Cast");
  CHECK(first->input(0).name() == "X");
  CHECK(first->output(0).dtype() == DType::float16);
  CHECK(last->op() == "Cast");
  CHECK(&last->output(0) == b.g.outputs()[0]);
  CHECK(b.g.outputs()[0]->name() == "Y");
  CHECK(b.g.outputs()[0]->dtype() == DType::float32);
  CHECK(b.g.inputs()[0]->dtype() == DType::float32);
  const Node* conv = node_named(b.g, "conv");
  CHECK(conv->input(1).name() == "W_fp16");
  CHECK(conv->input(1).dtype() == DType::float16);
  CHECK(conv->input(1).is_initializer());
  CHECK(b.g.find_value("W") == nullptr);  // no FP32 reader left
  CHECK(node_named(b.g, "relu")->output(0).dtype() == DType::float16);
  CHECK(node_named(b.g, "softmax")->output(0).dtype() == DType::float16);
  CHECK(report.fp16_nodes == 3);
  CHECK(report.casts_inserted == 2);
  REQUIRE(report.weights.size() == 2);
  CHECK(report.weights[0].name == "W");
  CHECK(report.weights[0].elements == 54);
  CHECK(report.total_clamped() == 0);
  CHECK(report.fp32_nodes.empty());
}

TEST_CASE("precision: --keep-fp32 pins a node: Casts on both sides of it; unknown names are an Error") {
  Builder b;
  conv_relu_softmax(b);
  PassOptions o;
  o.keep_fp32 = {"relu"};
  PrecisionReport report;
  run_precision(b.g, o, report);
  CHECK(count(b.g, "Cast") == 4);
  const Node* relu = node_named(b.g, "relu");
  CHECK(relu->input(0).dtype() == DType::float32);
  CHECK(relu->input(0).producer()->op() == "Cast");
  CHECK(relu->output(0).dtype() == DType::float32);
  CHECK(node_named(b.g, "softmax")->input(0).producer()->op() == "Cast");
  REQUIRE(report.fp32_nodes.size() == 1);
  CHECK(report.fp32_nodes[0].name == "relu");
  CHECK(report.fp32_nodes[0].reason.find("--keep-fp32") != std::string::npos);

  Builder b2;
  conv_relu_softmax(b2);
  ops::infer_graph(b2.g);
  PassOptions o2;
  o2.keep_fp32 = {"relu", "nope", "nada"};
  try {
    precision(b2.g, o2);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("'nope'") != std::string::npos);
    CHECK(m.find("'nada'") != std::string::npos);
    CHECK(m.find("'relu'") == std::string::npos);
  }
}

TEST_CASE("precision: --keep-fp32 names a node a fused node covers") {
  Builder b;
  conv_relu_softmax(b);
  ops::infer_graph(b.g);
  PassOptions o;
  fuse_epilogue(b.g, o);
  REQUIRE(count(b.g, "FusedConv") == 1);
  o.keep_fp32 = {"relu"};
  PrecisionReport report;
  run_precision(b.g, o, report);
  CHECK(b.g.nodes_of("FusedConv")[0]->output(0).dtype() == DType::float32);
  CHECK(node_named(b.g, "softmax")->output(0).dtype() == DType::float16);
}

TEST_CASE("precision: --io-fp16 makes the graph's inputs and outputs float16, no Cast needed") {
  Builder b;
  conv_relu_softmax(b);
  PassOptions o;
  o.io_fp16 = true;
  PrecisionReport report;
  run_precision(b.g, o, report);
  CHECK(count(b.g, "Cast") == 0);
  CHECK(b.g.inputs()[0]->dtype() == DType::float16);
  CHECK(b.g.outputs()[0]->dtype() == DType::float16);
  CHECK(b.g.outputs()[0]->name() == "Y");
  CHECK(report.io_fp16);

  // FP32 nodes at the boundary: one Cast reads the float16 input for them, Casts write the float16 outputs.
  Builder b2;
  Value* x = b2.in("X", {4});
  Value* e = b2.node("Equal", "eq", {x, b2.w("K", {4})});
  Value* f = b2.node("Cast", "to_float", {e}, "F");
  b2.last->set_attr_int("to", 1);
  Value* y = b2.g.add_value("Y");
  b2.g.add_node("TopK", "topk", {x, b2.g.add_constant("k", Tensor::from_i64(DType::int64, {1}, {2}))},
                {y, b2.g.add_value("idx")});
  b2.g.add_output(y);
  b2.g.add_output(f);
  PassOptions o2;
  o2.io_fp16 = true;
  PrecisionReport r2;
  run_precision(b2.g, o2, r2);
  CHECK(b2.g.outputs()[0]->dtype() == DType::float16);
  CHECK(b2.g.outputs()[1]->dtype() == DType::float16);
  CHECK(b2.g.outputs()[0]->name() == "Y");
  CHECK(b2.g.outputs()[1]->name() == "F");
  CHECK(node_named(b2.g, "topk")->input(0).dtype() == DType::float32);
  CHECK(node_named(b2.g, "topk")->output(0).dtype() == DType::float32);
  CHECK(&node_named(b2.g, "topk")->input(0) == &node_named(b2.g, "eq")->input(0));
  CHECK(count(b2.g, "Cast") == 4);  // X to float32 (shared), two outputs to float16, the model's own
}

TEST_CASE("precision: weights beyond FP16's range are clamped and counted; a weight read in FP32 too is kept") {
  Builder b;
  Value* x = b.in("X", {6});
  Value* c = b.g.add_constant("C", Tensor::from_f64(DType::float32, {6}, {1e5, -7e4, 1e-6, 1e-9, 0.0, 1.5}), true);
  Value* m = b.node("Mul", "mul", {x, c});
  Value* a = b.node("Add", "add", {x, c});  // pinned: reads C in FP32
  b.g.add_output(m);
  b.g.add_output(a);
  ops::infer_graph(b.g);
  PassOptions o;
  o.fp16 = true;
  o.keep_fp32 = {"add"};
  o.verify_each = true;
  PrecisionReport report;
  o.precision_report = &report;
  CHECK(run_graph_stage(b.g, o, "precision"));
  check_reinfer(b.g);
  REQUIRE(report.weights.size() == 1);
  const PrecisionReport::Weight& w = report.weights[0];
  CHECK(w.name == "C");
  CHECK(w.elements == 6);
  CHECK(w.clamped == 2);
  CHECK(w.subnormal == 1);
  CHECK(w.underflow == 1);
  const Value& c16 = node_named(b.g, "mul")->input(1);
  CHECK(c16.name() == "C_fp16");
  CHECK(c16.constant().to_f64() == std::vector<double>{65504, -65504, c16.constant().f64_at(2), 0, 0, 1.5});
  CHECK(c16.constant().f64_at(2) == doctest::Approx(1e-6).epsilon(0.05));
  CHECK(&node_named(b.g, "add")->input(1) == c);  // the original, unchanged
  CHECK(c->constant().f64_at(0) == 1e5);
  // Results stay finite where the weight was clamped.
  TensorMap in{{"X", Tensor::from_f32({6}, {1, 1, 1, 1, 1, 1})}};
  const TensorMap out = run_reference(b.g, in);
  CHECK(all_finite(out.at(m->name())));
}

TEST_CASE("precision: integer and bool tensors never change; comparisons read FP32; Resize's scales stay float32") {
  Builder b;
  Value* x = b.in("X", {2, 3});
  Value* idx = b.g.add_constant("idx", Tensor::from_i64(DType::int64, {2}, {1, 0}));
  Value* gth = b.node("Gather", "gather", {x, idx});
  Value* eq = b.node("Greater", "greater", {gth, x});
  Value* wh = b.node("Where", "where", {eq, gth, x});
  Value* shape = b.g.add_constant("shape", Tensor::from_i64(DType::int64, {4}, {1, 1, 2, 3}));
  Value* rs = b.node("Reshape", "reshape", {wh, shape});
  Value* scales = b.g.add_constant("scales", Tensor::from_f32({4}, {1, 1, 2, 2}));
  Value* y = b.node("Resize", "resize", {rs, nullptr, scales});
  b.g.add_output(y);
  PassOptions o;
  PrecisionReport report;
  run_precision(b.g, o, report);
  CHECK(idx->dtype() == DType::int64);
  CHECK(&node_named(b.g, "gather")->input(1) == idx);
  CHECK(node_named(b.g, "gather")->output(0).dtype() == DType::float16);
  const Node* gt = node_named(b.g, "greater");
  CHECK(gt->input(0).dtype() == DType::float32);
  CHECK(&gt->input(1) == x);
  CHECK(gt->output(0).dtype() == DType::boolean);
  CHECK(node_named(b.g, "where")->input(0).dtype() == DType::boolean);
  CHECK(node_named(b.g, "where")->input(2).dtype() == DType::float16);
  CHECK(node_named(b.g, "reshape")->input(1).dtype() == DType::int64);
  const Node* resize = node_named(b.g, "resize");
  CHECK(resize->input(0).dtype() == DType::float16);
  CHECK(&resize->input(2) == scales);
  CHECK(scales->dtype() == DType::float32);
  // X to float16 (Gather and Where share it), Gather's output back to float32 for Greater, Y.
  CHECK(count(b.g, "Cast") == 3);
  REQUIRE(report.fp32_nodes.size() == 1);
  CHECK(report.fp32_nodes[0].name == "greater");
}

TEST_CASE("precision: the model's own Cast to float reads the FP16 value; no Cast chains are left") {
  Builder b;
  Value* x = b.in("X", {4});
  Value* r1 = b.node("Relu", "r1", {x});
  Value* c = b.node("Cast", "cast", {r1});
  b.last->set_attr_int("to", 1);
  Value* y = b.node("Relu", "r2", {c});
  b.g.add_output(y);
  PassOptions o;
  PrecisionReport report;
  run_precision(b.g, o, report);
  CHECK(count(b.g, "Cast") == 2);  // the graph's input and output
  CHECK(&node_named(b.g, "r2")->input(0) == &node_named(b.g, "r1")->output(0));
  for (const Node* n : b.g.nodes_of("Cast")) {
    CHECK((n->input(0).producer() == nullptr || n->input(0).producer()->op() != "Cast"));
  }
}

TEST_CASE("precision: FP16 stress: LayerNorm over rows of |x| >= 1e4, softmax of logits +-1e4, a sum over 1e6") {
  Builder b;
  Value* x = b.in("X", {2, 1024});
  Value* ln = b.node("LayerNormalization", "ln", {x, b.w("scale", {1024}), b.w("bias", {1024})});
  Value* l = b.in("L", {4, 16});
  Value* sm = b.node("Softmax", "softmax", {l});
  Value* s = b.in("S", {1000000});
  Value* sum = b.node("ReduceSum", "sum", {s});
  b.last->set_attr_int("keepdims", 0);
  for (Value* v : {ln, sm, sum}) b.g.add_output(v);
  ops::infer_graph(b.g);
  std::vector<double> xv = randoms(2048, 3, 1e4, 3e4), lv = randoms(64, 4, -1e4, 1e4), sv = randoms(1000000, 5);
  for (std::size_t i = 0; i < xv.size(); i += 2) xv[i] = -xv[i];
  TensorMap in{{"X", Tensor::from_f64(DType::float32, {2, 1024}, xv)},
               {"L", Tensor::from_f64(DType::float32, {4, 16}, lv)},
               {"S", Tensor::from_f64(DType::float32, {1000000}, sv)}};
  const TensorMap before = run_reference(b.g, in);
  PassOptions o;
  o.fp16 = true;
  precision(b.g, o);
  const TensorMap after = run_reference(b.g, in);
  for (const auto& entry : after) {
    const std::string& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    const Tensor& t = entry.second;
    CAPTURE(name);
    CHECK(all_finite(t));
    CHECK(all_finite(before.at(name)));
    CHECK(rel_l2(before.at(name), t) <= 1e-2);
  }
}

namespace {

/// A shipped model through the whole pipeline with --fp16 against the FP32 reference.
std::unique_ptr<Graph> fp16_pipeline(const std::string& file, PrecisionReport& report) {
  std::unique_ptr<Graph> g = load_onnx(std::string(build_source_dir()) + "/models/" + file);
  const TensorMap in = random_inputs(*g, 9);
  const TensorMap before = run_reference(*g, in);
  PassOptions o;
  o.fp16 = true;
  o.verify_each = true;
  o.fuse_epilogue = true;
  o.precision_report = &report;
  run_graph_stages(*g, o);
  check_reinfer(*g);
  const TensorMap after = run_reference(*g, in);
  for (const auto& [name, t] : before) {
    CAPTURE(file);
    CHECK(rel_l2(t, after.at(name)) <= 1e-2);
    CHECK(all_finite(after.at(name)));
  }
  return g;
}

}  // namespace

TEST_CASE("pipeline --fp16 on the tiny models: within 1e-2, everything FP16 between one Cast in and one out") {
  for (const char* m : {"tiny_cnn.onnx", "tiny_transformer.onnx", "tiny_mlp.onnx"}) {
    CAPTURE(m);
    PrecisionReport report;
    std::unique_ptr<Graph> g = fp16_pipeline(m, report);
    CHECK(count(*g, "Cast") == 2);
    CHECK(report.casts_inserted == 2);
    CHECK(report.fp32_nodes.empty());
    for (const auto& n : g->nodes()) {
      if (n->op() == "Cast") continue;
      CAPTURE(n->name());
      CHECK(n->output(0).dtype() == DType::float16);
    }
  }
}

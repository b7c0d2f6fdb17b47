// The INT8 passes: quantize_explicit (Q/DQ patterns and the ONNX integer products with constant
// weights become QConv / QMatMul), precision with --int8 (calibrated products), fold_quantize
// (INT8 storage between INT8 kernels, MaxPool on INT8); the calibration (thresholds by method, the
// cache's JSON round trip). The reference runs the graph before and after each rewrite.
#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "ops/quantize.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "passes/calibration.h"
#include "passes/pass.h"
#include "pipeline/calibrate.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"

using namespace modelc;

namespace {

std::vector<double> randoms(int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& up : g.nodes()) n += up->op() == op;
  return n;
}

const Node* find(const Graph& g, const std::string& op) {
  for (const auto& up : g.nodes()) {
    if (up->op() == op) return up.get();
  }
  return nullptr;
}

/// x [1, 8, 6, 6] -> Q(0.02) -> DQ -> Conv(DQ(W int8 per channel), B) -> Relu -> Q(0.05) -> DQ -> y:
/// a Q/DQ model as the quantization tools write it.
struct QdqModel {
  Graph g;
  TensorMap feeds;
  QdqModel() {
    g.set_opset(13);
    Value* x = g.add_value("x");
    x->set_type(DType::float32, {1, 8, 6, 6});
    g.add_input(x);
    feeds["x"] = Tensor::from_f64(DType::float32, {1, 8, 6, 6}, randoms(288, 1, -2, 2));
    auto q = [&](Value* v, float s, const std::string& name) {
      Value* o = g.add_value(name);
      g.add_node("QuantizeLinear", name, {v, g.add_constant(name + "_s", Tensor::from_f32({}, {s})),
                                          g.add_constant(name + "_z", Tensor::from_i64(DType::int8, {}, {0}))}, {o});
      return o;
    };
    auto dq = [&](Value* v, Value* s, Value* z, const std::string& name, int64_t axis = 1) {
      Value* o = g.add_value(name);
      Node* n = g.add_node("DequantizeLinear", name, {v, s, z}, {o});
      n->set_attr_int("axis", axis);
      return o;
    };
    Value* xq = q(x, 0.02f, "xq");
    Value* xd = dq(xq, g.find_value("xq_s"), g.find_value("xq_z"), "xd");
    std::vector<double> wv = randoms(16 * 8 * 9, 2, -127, 127);
    for (double& w : wv) w = std::round(w);
    Value* wq = g.add_constant("wq", Tensor::from_f64(DType::int8, {16, 8, 3, 3}, wv), true);
    Value* ws = g.add_constant("ws", Tensor::from_f64(DType::float32, {16}, randoms(16, 3, 0.002, 0.01)), true);
    Value* wz = g.add_constant("wz", Tensor::from_i64(DType::int8, {16}, std::vector<int64_t>(16, 0)), true);
    Value* wd = dq(wq, ws, wz, "wd", 0);
    Value* b = g.add_constant("b", Tensor::from_f64(DType::float32, {16}, randoms(16, 4)), true);
    Value* c = g.add_value("c");
    Node* conv = g.add_node("Conv", "conv", {xd, wd, b}, {c});
    conv->set_attr_ints("pads", {1, 1, 1, 1});
    Value* r = g.add_value("r");
    g.add_node("Relu", "relu", {c}, {r});
    Value* rq = q(r, 0.05f, "rq");
    Value* y = dq(rq, g.find_value("rq_s"), g.find_value("rq_z"), "y");
    g.add_output(y);
    ops::infer_graph(g);
  }
};

/// |a - b| per element in units of `step` (a quantization step): the largest.
double max_steps(const Tensor& a, const Tensor& b, double step) {
  const std::vector<double> x = a.to_f64(), y = b.to_f64();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]) / step);
  return m;
}

}  // namespace

TEST_CASE("quantize_explicit: DQ -> Conv -> ... becomes QConv on the quantized input; fold_quantize makes its output INT8") {
  QdqModel m;
  const Tensor before = run_reference(m.g, m.feeds).at("y");
  PassOptions o;
  CHECK(run_graph_stage(m.g, o, "quantize_explicit"));
  CHECK(count(m.g, "Conv") == 0);
  const Node* qc = find(m.g, "QConv");
  REQUIRE(qc);
  CHECK(qc->input(0).name() == "xq");  // the INT8 input, not the dequantized one
  CHECK(qc->input(1).dtype() == DType::int8);
  CHECK(qc->attr_float("x_scale", 0) == doctest::Approx(0.02));
  const Tensor after = run_reference(m.g, m.feeds).at("y");
  CHECK(max_steps(before, after, 0.05) <= 1.0);  // float32 sums in another order: a step at most
  run_graph_stages(m.g, o);
  qc = find(m.g, "QConv");
  REQUIRE(qc);
  CHECK(qc->attr_string("activation", "") == "relu");
  CHECK(qc->output(0).dtype() == DType::int8);  // the Relu's Q moved into it
  CHECK(qc->attr_float("y_scale", 0) == doctest::Approx(0.05));
  CHECK(count(m.g, "QuantizeLinear") == 1);  // x's
  CHECK(count(m.g, "Relu") == 0);
  const Tensor folded = run_reference(m.g, m.feeds).at("y");
  CHECK(max_steps(after, folded, 0.05) == 0.0);  // exact: Q(relu) is the epilogue's quantization
}

TEST_CASE("quantize_explicit: ConvInteger with a run-time zero point (DynamicQuantizeLinear) becomes QConv, exactly") {
  Graph g;
  g.set_opset(13);
  Value* x = g.add_value("x");
  x->set_type(DType::float32, {1, 4, 5, 5});
  g.add_input(x);
  Value* xq = g.add_value("xq");
  Value* xs = g.add_value("xs");
  Value* xz = g.add_value("xz");
  g.add_node("DynamicQuantizeLinear", "dq", {x}, {xq, xs, xz});
  std::vector<double> wv = randoms(6 * 4 * 9, 5, 0, 255);
  for (double& w : wv) w = std::round(w);
  Value* w = g.add_constant("w", Tensor::from_f64(DType::uint8, {6, 4, 3, 3}, wv), true);
  Value* wz = g.add_constant("wz", Tensor::from_i64(DType::uint8, {}, {128}), true);
  Value* acc = g.add_value("acc");
  Node* ci = g.add_node("ConvInteger", "ci", {xq, w, xz, wz}, {acc});
  ci->set_attr_ints("pads", {1, 1, 1, 1});
  g.add_output(acc);
  ops::infer_graph(g);
  TensorMap feeds{{"x", Tensor::from_f64(DType::float32, {1, 4, 5, 5}, randoms(100, 6, -1, 3))}};
  const Tensor before = run_reference(g, feeds).at("acc");
  CHECK(run_graph_stage(g, PassOptions{}, "quantize_explicit"));
  const Node* qc = find(g, "QConv");
  REQUIRE(qc);
  CHECK(qc->input(ops::kQZeroPointInput).name() == "xz");
  CHECK(qc->input(1).dtype() == DType::int8);  // uint8 weights minus 128
  CHECK(run_reference(g, feeds).at("acc").to_i64() == before.to_i64());
}

TEST_CASE("precision --int8: calibrated Conv / Gemm become QConv / QMatMul on QuantizeLinear; the rest FP16; reasons") {
  Graph g;
  g.set_opset(17);
  Value* x = g.add_value("x");
  x->set_type(DType::float32, {16, 8, 4, 4});
  g.add_input(x);
  auto w = [&](const char* name, Shape s, uint64_t seed) {
    return g.add_constant(name, Tensor::from_f64(DType::float32, s, randoms(num_elements(s), seed)), true);
  };
  Value* c1 = g.add_value("c1");
  g.add_node("Conv", "conv1", {x, w("w1", {16, 8, 3, 3}, 1), w("b1", {16}, 2)}, {c1})->set_attr_ints("pads", {1, 1, 1, 1});
  Value* r1 = g.add_value("r1");
  g.add_node("Relu", "relu1", {c1}, {r1});
  Value* c2 = g.add_value("c2");
  Node* dw = g.add_node("Conv", "depthwise", {r1, w("w2", {16, 1, 3, 3}, 3)}, {c2});
  dw->set_attr_int("group", 16);
  dw->set_attr_ints("pads", {1, 1, 1, 1});
  Value* p = g.add_value("p");
  g.add_node("GlobalAveragePool", "gap", {c2}, {p});
  Value* f = g.add_value("f");
  g.add_node("Flatten", "flatten", {p}, {f});
  Value* y = g.add_value("y");
  Node* fc = g.add_node("Gemm", "fc", {f, w("wf", {10, 16}, 4), w("bf", {10}, 5)}, {y});
  fc->set_attr_int("transB", 1);
  g.add_output(y);
  ops::infer_graph(g);
  TensorMap feeds{{"x", Tensor::from_f64(DType::float32, {16, 8, 4, 4}, randoms(16 * 128, 6))}};
  const Tensor want = run_reference(g, feeds).at("y");

  CalibrationData data;
  data.samples = {feeds};
  data.source = "test";
  PassOptions o;
  o.fp16 = o.int8 = true;
  const CalibrationTable cal = calibrate(g, o, data, CalibrationMethod::max);
  CHECK(cal.find("x"));
  CHECK(cal.find("r1"));
  o.calibration = &cal;
  PrecisionReport report;
  o.precision_report = &report;
  CHECK(run_graph_stage(g, o, "precision"));
  CHECK(count(g, "QConv") == 1);
  CHECK(count(g, "QMatMul") == 1);  // 16 rows: INT8
  CHECK(count(g, "Conv") == 1);     // the depthwise one
  REQUIRE(report.int8_layers.size() == 3);
  CHECK(report.int8_layers[0].precision == "INT8");
  CHECK(report.int8_layers[0].x_scale == doctest::Approx(cal.find("x")->scale()));
  CHECK(report.int8_layers[1].precision == "FP16");
  CHECK(report.int8_layers[1].reason.find("groups = 16") != std::string::npos);
  CHECK(report.int8_layers[2].precision == "INT8");
  CHECK(find(g, "QConv")->output(0).dtype() == DType::float16);
  CHECK(find(g, "QuantizeLinear")->input(0).name() == "x");  // the model input, read in FP32 (no Cast)
  REQUIRE(report.fp32_nodes.size() == 1);
  CHECK(report.fp32_nodes[0].reason == "quantizes a model input: reads it in FP32");
  // The INT8 program stays close to FP32 (max calibration: no clipping).
  const Tensor got = run_reference(g, feeds).at("y");
  const std::vector<double> a = got.to_f64(), b = want.to_f64();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  CHECK(std::sqrt(num / den) < 0.05);
  // Without calibration: a clear error.
  PassOptions none;
  none.int8 = none.fp16 = true;
  CHECK_THROWS_WITH_AS(run_graph_stage(g, none, "precision"), doctest::Contains("--int8 needs calibration data"), Error);
}

TEST_CASE("fold_quantize: MaxPool runs on INT8, its producer then writes INT8; Q(DQ(q)) is q") {
  Graph g;
  g.set_opset(13);
  Value* x = g.add_value("x");
  x->set_type(DType::int8, {1, 16, 6, 6});
  g.add_input(x);
  std::vector<double> wv = randoms(16 * 16, 7, -100, 100);
  for (double& w : wv) w = std::round(w);
  Value* c = g.add_value("c");
  Node* qc = g.add_node("QConv", "qc", {x, g.add_constant("w", Tensor::from_f64(DType::int8, {16, 16, 1, 1}, wv)), nullptr, nullptr,
                                        g.add_constant("ws", Tensor::from_f64(DType::float32, {16}, randoms(16, 8, 0.01, 0.02)))}, {c});
  qc->set_domain(ops::kModelcDomain);
  qc->set_covers({"qc"});
  qc->set_attr_float("x_scale", 0.1);
  Value* p = g.add_value("p");
  Node* mp = g.add_node("MaxPool", "mp", {c}, {p});
  mp->set_attr_ints("kernel_shape", {2, 2});
  mp->set_attr_ints("strides", {2, 2});
  Value* pq = g.add_value("pq");
  g.add_node("QuantizeLinear", "q", {p, g.add_constant("s", Tensor::from_f32({}, {0.07f})),
                                     g.add_constant("z", Tensor::from_i64(DType::int8, {}, {0}))}, {pq});
  Value* d = g.add_value("d");
  g.add_node("DequantizeLinear", "dq", {pq, g.find_value("s"), g.find_value("z")}, {d});
  Value* qq = g.add_value("qq");
  g.add_node("QuantizeLinear", "q2", {d, g.find_value("s"), g.find_value("z")}, {qq});
  Value* y = g.add_value("y");
  g.add_node("DequantizeLinear", "dq2", {qq, g.find_value("s"), g.find_value("z")}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  std::vector<double> xv = randoms(576, 9, -128, 127);
  for (double& v : xv) v = std::round(v);
  TensorMap feeds{{"x", Tensor::from_f64(DType::int8, {1, 16, 6, 6}, xv)}};
  const Tensor before = run_reference(g, feeds).at("y");
  CHECK(run_graph_stage(g, PassOptions{}, "fold_quantize"));
  CHECK(count(g, "DequantizeLinear") == 1);  // the output's
  CHECK(count(g, "QuantizeLinear") == 0);
  CHECK(find(g, "QConv")->output(0).dtype() == DType::int8);
  CHECK(find(g, "MaxPool")->input(0).dtype() == DType::int8);
  CHECK(run_reference(g, feeds).at("y").to_f64() == before.to_f64());  // exact
}

TEST_CASE("calibration: thresholds by method; the cache's JSON reads back to the same table, byte for byte") {
  AbsHistogram h;
  h.range = 10;
  // Most values below 1, a few outliers up to 10.
  for (int i = 0; i < 100000; ++i) h.add((i % 1000) / 1000.0);
  for (int i = 0; i < 5; ++i) h.add(9.99);
  const double mx = calibration_threshold(h, CalibrationMethod::max);
  const double pc = calibration_threshold(h, CalibrationMethod::percentile);
  const double en = calibration_threshold(h, CalibrationMethod::entropy);
  CHECK(mx == 10);
  CHECK(pc == doctest::Approx(1.0).epsilon(0.01));
  CHECK(en < 2.0);   // the outliers are clipped
  CHECK(en > 0.5);
  CalibrationTable t;
  t.method = CalibrationMethod::percentile;
  t.samples = 16;
  t.source = "random:16";
  t.order = {"b", "a"};
  t.tensors["b"] = {1.0 / 3.0, 2.0};
  t.tensors["a"] = {0.1, 0.1};
  const std::string json = t.to_json();
  const CalibrationTable r = CalibrationTable::from_json(json, "cache.json");
  CHECK(r.to_json() == json);
  CHECK(r.find("b")->threshold == 1.0 / 3.0);
  CHECK(r.order == t.order);
  CHECK_THROWS_WITH_AS(CalibrationTable::from_json("{\"x\": 1}", "bad.json"), doctest::Contains("not a modelc calibration cache"), Error);
  CHECK_THROWS_WITH_AS(CalibrationTable::from_json("not json", "bad.json"), doctest::Contains("invalid JSON"), Error);
  // An unknown method is the cache's fault: the error names the file (a fuzz finding: it named
  // only the method, as the --calibration-method flag's error does).
  std::string wrong_method = json;
  const std::size_t at = wrong_method.find("\"percentile\"");
  REQUIRE(at != std::string::npos);
  wrong_method.replace(at, 12, "\"percentilE\"");
  try {
    CalibrationTable::from_json(wrong_method, "cache.json");
    FAIL("an unknown method was accepted");
  } catch (const Error& e) {
    CHECK(e.where().file == "cache.json");
    CHECK(std::string(e.what()).find("'percentilE', not entropy, percentile or max") != std::string::npos);
  }
}

// Tests of compiler/ops/activation.cpp: Relu, LeakyRelu, PRelu, Elu, Selu,
// Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus, Clip.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/graph.h"
#include "ops/activation.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"

using namespace modelc;

namespace {

using Attrs = std::function<void(Node&)>;

/// One node `op` at `opset` whose inputs are graph inputs fed with `ins` (an
/// undefined Tensor is an omitted input); returns output 0.
Tensor run_act(const std::string& op, int opset, const std::vector<Tensor>& ins, const Attrs& attrs = nullptr) {
  Graph g;
  g.set_opset(opset);
  std::vector<Value*> vals;
  TensorMap feeds;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].defined()) {
      vals.push_back(nullptr);
      continue;
    }
    Value* v = g.add_value("in" + std::to_string(i));
    v->set_type(ins[i].dtype(), ins[i].shape());
    g.add_input(v);
    feeds[v->name()] = ins[i];
    vals.push_back(v);
  }
  Value* y = g.add_value("Y");
  Node* n = g.add_node(op, "node", vals, {y});
  if (attrs) attrs(*n);
  g.add_output(y);
  ops::infer_graph(g);
  TensorMap out = run_reference(g, feeds);
  const Tensor& t = out.at("Y");
  REQUIRE(t.dtype() == y->dtype());
  REQUIRE(t.shape() == y->shape());
  return t;
}

std::string act_error(const std::string& op, int opset, const std::vector<Tensor>& ins, const Attrs& attrs = nullptr) {
  try {
    run_act(op, opset, ins, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_f32(std::move(s), v); }
Tensor ints(DType t, Shape s, std::vector<int64_t> v) { return Tensor::from_i64(t, std::move(s), v); }

void near(const Tensor& t, const std::vector<double>& want) {
  const std::vector<double> got = t.to_f64();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK_MESSAGE(std::isnan(got[i]), "element " << i);
    } else if (std::isinf(want[i])) {
      CHECK_MESSAGE(got[i] == want[i], "element " << i);
    } else {
      CHECK_MESSAGE(got[i] == doctest::Approx(want[i]).epsilon(1e-6), "element " << i);
    }
  }
}

Attrs attr_f(const char* name, double v) { return [name, v](Node& n) { n.set_attr_float(name, v); }; }

const double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kBig = (int64_t{1} << 53) + 1;

}  // namespace

TEST_CASE("Relu: floats, integers from opset 14 (exact)") {
  near(run_act("Relu", 6, {f32({4}, {-1, 0, 2.5f, -0.0f})}), {0, 0, 2.5, 0});
  CHECK(run_act("Relu", 14, {ints(DType::int64, {3}, {-kBig, kBig, 0})}).to_i64() ==
        std::vector<int64_t>{0, kBig, 0});
  CHECK(run_act("Relu", 14, {ints(DType::int8, {2}, {-3, 3})}).to_i64() == std::vector<int64_t>{0, 3});
  CHECK_THROWS_AS(run_act("Relu", 13, {ints(DType::int32, {1}, {1})}), Error);
  CHECK_THROWS_AS(run_act("Relu", 14, {ints(DType::uint8, {1}, {1})}), Error);
  CHECK_THROWS_AS(run_act("Relu", 14, {ints(DType::boolean, {1}, {1})}), Error);
  CHECK_THROWS_AS(run_act("Relu", 14, {f32({1}, {1})}, attr_f("alpha", 1)), Error);
}

TEST_CASE("LeakyRelu: alpha defaults to 0.01") {
  near(run_act("LeakyRelu", 6, {f32({3}, {-2, 0, 3})}), {-0.02, 0, 3});
  near(run_act("LeakyRelu", 16, {f32({3}, {-2, 0, 3})}, attr_f("alpha", 0.5)), {-1, 0, 3});
  CHECK_THROWS_AS(run_act("LeakyRelu", 16, {f32({1}, {1})}, [](Node& n) { n.set_attr_string("alpha", "x"); }),
                  Error);
  CHECK_THROWS_AS(run_act("LeakyRelu", 15, {Tensor::from_f64(DType::bfloat16, {1}, {1})}), Error);
  CHECK(run_act("LeakyRelu", 16, {Tensor::from_f64(DType::bfloat16, {1}, {1})}).dtype() == DType::bfloat16);
}

TEST_CASE("PRelu: slope broadcasts unidirectionally to X") {
  // NCHW input, per-channel slope [C,1,1].
  const Tensor x = f32({1, 2, 1, 2}, {-1, 2, -3, 4});
  Tensor y = run_act("PRelu", 9, {x, f32({2, 1, 1}, {0.5, 0.25})});
  CHECK(y.shape() == Shape{1, 2, 1, 2});
  near(y, {-0.5, 2, -0.75, 4});
  near(run_act("PRelu", 7, {x, f32({1}, {0.1f})}), {-0.1, 2, -0.3, 4});
  near(run_act("PRelu", 16, {f32({2, 2}, {-1, -1, 1, -2}), f32({2}, {2, 3})}), {-2, -3, 1, -6});
  // Integers from 9, exact.
  CHECK(run_act("PRelu", 9, {ints(DType::int64, {2}, {-kBig, kBig}), ints(DType::int64, {1}, {1})}).to_i64() ==
        std::vector<int64_t>{-kBig, kBig});
  CHECK_THROWS_AS(run_act("PRelu", 8, {ints(DType::int32, {1}, {-1}), ints(DType::int32, {1}, {2})}), Error);
  // A slope that would need X to broadcast, a slope of higher rank, one that does not match.
  const std::string msg = act_error("PRelu", 9, {f32({2, 1}, {1, 2}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  CHECK(msg.find("slope") != std::string::npos);
  CHECK_THROWS_AS(run_act("PRelu", 9, {f32({2}, {1, 2}), f32({1, 2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_act("PRelu", 9, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_act("PRelu", 9, {x, Tensor::from_f64(DType::float16, {1}, {1})}), Error);
  CHECK_THROWS_AS(run_act("PRelu", 9, {x}), Error);
}

TEST_CASE("PRelu 1 and 6: slope of one element, or one value per channel (X's dim 1)") {
  // X [2,3,2]: per-channel slope [3] (numpy would align it with the last dim).
  const Tensor x = f32({2, 3, 2}, {-1, 1, -1, 1, -1, 1, -2, 2, -2, 2, -2, 2});
  Tensor y = run_act("PRelu", 6, {x, f32({3}, {0.5, 0.25, 2})});
  CHECK(y.shape() == Shape{2, 3, 2});
  near(y, {-0.5, 1, -0.25, 1, -2, 1, -1, 2, -0.5, 2, -4, 2});
  // One element, of any rank, is shared.
  near(run_act("PRelu", 6, {x, f32({1}, {0.1f})}), {-0.1, 1, -0.1, 1, -0.1, 1, -0.2, 2, -0.2, 2, -0.2, 2});
  near(run_act("PRelu", 1, {f32({3}, {-4, 0, 4}), f32({1, 1}, {0.25})}), {-1, 0, 4});
  near(run_act("PRelu", 6, {f32({2, 2}, {-1, -1, 1, -2}), f32({2}, {2, 3})}), {-2, -3, 1, -6});
  // consumed_inputs only at opset 1.
  const Attrs consumed = [](Node& n) { n.set_attr_ints("consumed_inputs", {0}); };
  near(run_act("PRelu", 1, {x, f32({3}, {0.5, 0.25, 2})}, consumed), {-0.5, 1, -0.25, 1, -2, 1, -1, 2, -0.5, 2, -4, 2});
  CHECK_THROWS_AS(run_act("PRelu", 6, {x, f32({3}, {1, 2, 3})}, consumed), Error);
  // A slope that is neither one element nor [C]: the last dim's length, a numpy-style [C,1],
  // a channel count for a 1-D X.
  const std::string msg = act_error("PRelu", 6, {x, f32({2}, {1, 2})});
  CHECK(msg.find("slope") != std::string::npos);
  CHECK(msg.find("per channel") != std::string::npos);
  CHECK_THROWS_AS(run_act("PRelu", 6, {x, f32({3, 1}, {1, 2, 3})}), Error);
  CHECK_THROWS_AS(run_act("PRelu", 6, {f32({3}, {1, 2, 3}), f32({3}, {1, 2, 3})}), Error);
  // Floats only; one type.
  CHECK_THROWS_AS(run_act("PRelu", 6, {ints(DType::int32, {1}, {-1}), ints(DType::int32, {1}, {2})}), Error);
  CHECK_THROWS_AS(run_act("PRelu", 6, {x, Tensor::from_f64(DType::float16, {1}, {1})}), Error);
  const auto& r = ops::OpRegistry::instance();
  CHECK(r.find("PRelu", 5)->since == 1);
  CHECK(r.find("PRelu", 6)->since == 6);
  CHECK(r.find("PRelu", 6)->layout == ops::Layout::unset);
  CHECK(r.find("PRelu", 6)->family == "activation");
}

TEST_CASE("Elu, Selu, Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus values") {
  const Tensor x = f32({3}, {-1, 0, 1});
  near(run_act("Elu", 6, {x}), {-0.632120559, 0, 1});
  near(run_act("Elu", 6, {x}, attr_f("alpha", 2)), {-1.264241118, 0, 1});
  near(run_act("Selu", 6, {x}), {-1.111330737, 0, 1.050701});
  near(run_act("Selu", 6, {x},
               [](Node& n) {
                 n.set_attr_float("alpha", 2);
                 n.set_attr_float("gamma", 3);
               }),
       {-3.792723965, 0, 3});
  near(run_act("Sigmoid", 13, {x}), {0.268941421, 0.5, 0.731058579});
  near(run_act("HardSigmoid", 6, {f32({4}, {-3, 0, 1, 3})}), {0, 0.5, 0.7, 1});
  near(run_act("HardSigmoid", 6, {f32({2}, {1, -1})},
               [](Node& n) {
                 n.set_attr_float("alpha", 0.5);
                 n.set_attr_float("beta", 0.25);
               }),
       {0.75, 0});
  near(run_act("HardSwish", 14, {f32({5}, {-4, -1, 0, 1, 4})}), {0, -1.0 / 3, 0, 2.0 / 3, 4});
  near(run_act("Tanh", 13, {x}), {-0.761594156, 0, 0.761594156});
  near(run_act("Softplus", 1, {x}), {0.313261687, 0.693147181, 1.313261687});
  // Extreme inputs neither overflow nor give NaN.
  const Tensor big = f32({2}, {-1000, 1000});
  near(run_act("Sigmoid", 6, {big}), {0, 1});
  near(run_act("Softplus", 1, {big}), {0, 1000});
  near(run_act("Tanh", 6, {big}), {-1, 1});
  near(run_act("Elu", 6, {big}), {-1, 1000});
  // float16 in, float16 out.
  Tensor h = run_act("Sigmoid", 13, {Tensor::from_f64(DType::float16, {1}, {0})});
  CHECK(h.dtype() == DType::float16);
  near(h, {0.5});
}

TEST_CASE("Activation type sets and attributes") {
  const Tensor i = ints(DType::int32, {1}, {1});
  for (const char* op : {"Elu", "Selu", "Sigmoid", "HardSigmoid", "Tanh", "Softplus"}) {
    CHECK_THROWS_AS(run_act(op, 13, {i}), Error);
  }
  CHECK_THROWS_AS(run_act("HardSwish", 14, {i}), Error);
  CHECK_THROWS_AS(run_act("HardSwish", 13, {f32({1}, {1})}), Error);  // from opset 14
  const Tensor bf = Tensor::from_f64(DType::bfloat16, {1}, {0});
  CHECK_THROWS_AS(run_act("Sigmoid", 12, {bf}), Error);
  near(run_act("Sigmoid", 13, {bf}), {0.5});
  CHECK_THROWS_AS(run_act("Elu", 21, {bf}), Error);  // bfloat16 Elu is opset 22
  CHECK_THROWS_AS(run_act("Elu", 6, {f32({1}, {1})}, attr_f("gamma", 1)), Error);
  CHECK_THROWS_AS(run_act("Selu", 6, {f32({1}, {1})}, [](Node& n) { n.set_attr_ints("alpha", {1}); }), Error);
}

TEST_CASE("Clip 6: bounds as attributes") {
  const Tensor x = f32({5}, {-2, -0.5f, 0, 0.5f, 2});
  auto bounds = [](double lo, double hi) {
    return [lo, hi](Node& n) {
      n.set_attr_float("min", lo);
      n.set_attr_float("max", hi);
    };
  };
  near(run_act("Clip", 6, {x}, bounds(-1, 1)), {-1, -0.5, 0, 0.5, 1});
  near(run_act("Clip", 10, {x}, attr_f("min", 0)), {0, 0, 0, 0.5, 2});
  // No bounds: nothing is clipped, infinities included.
  near(run_act("Clip", 6, {f32({3}, {-INFINITY, 1, INFINITY})}), {-kInf, 1, kInf});
  // min > max: every element becomes max.
  near(run_act("Clip", 6, {x}, bounds(1, -1)), {-1, -1, -1, -1, -1});
  CHECK_THROWS_AS(run_act("Clip", 6, {x, f32({}, {0})}), Error);  // inputs are Clip-11
  CHECK_THROWS_AS(run_act("Clip", 6, {ints(DType::int32, {1}, {1})}), Error);
  CHECK_THROWS_AS(run_act("Clip", 6, {x}, [](Node& n) { n.set_attr_string("min", "0"); }), Error);
}

TEST_CASE("Clip 11+: optional scalar inputs; integers from 12") {
  const Tensor x = f32({5}, {-2, -0.5f, 0, NAN, 2});
  near(run_act("Clip", 11, {x, f32({}, {-1}), f32({}, {1})}), {-1, -0.5, 0, NAN, 1});
  // Omitted min (an empty name in ONNX) with max; min alone; nothing.
  near(run_act("Clip", 13, {x, Tensor(), f32({}, {0})}), {-2, -0.5, 0, NAN, 0});
  near(run_act("Clip", 13, {x, f32({}, {0})}), {0, 0, 0, NAN, 2});
  near(run_act("Clip", 13, {x}), {-2, -0.5, 0, NAN, 2});
  // A one-element 1-D bound is accepted; min > max gives max.
  near(run_act("Clip", 12, {x, f32({1}, {1}), f32({1}, {-1})}), {-1, -1, -1, NAN, -1});
  // Integers: exact.
  const Tensor i = ints(DType::int64, {3}, {-kBig, 5, kBig});
  CHECK(run_act("Clip", 12, {i, ints(DType::int64, {}, {-kBig + 1}), ints(DType::int64, {}, {kBig - 1})})
            .to_i64() == std::vector<int64_t>{-kBig + 1, 5, kBig - 1});
  CHECK(run_act("Clip", 13, {ints(DType::int8, {3}, {-128, 0, 127}), Tensor(), ints(DType::int8, {}, {100})})
            .to_i64() == std::vector<int64_t>{-128, 0, 100});
  CHECK_THROWS_AS(run_act("Clip", 11, {i}), Error);
  // Errors: bound not a scalar, of another type, min/max as attributes, too many inputs.
  const std::string msg = act_error("Clip", 13, {x, f32({2}, {0, 1})});
  CHECK(msg.find("'min'") != std::string::npos);
  CHECK(msg.find("scalar") != std::string::npos);
  CHECK_THROWS_AS(run_act("Clip", 13, {x, Tensor(), f32({1, 1}, {1})}), Error);
  CHECK_THROWS_AS(run_act("Clip", 13, {x, Tensor::from_f64(DType::float16, {}, {0})}), Error);
  CHECK_THROWS_AS(run_act("Clip", 11, {x}, attr_f("min", 0)), Error);
  CHECK_THROWS_AS(run_act("Clip", 13, {x, f32({}, {0}), f32({}, {1}), f32({}, {2})}), Error);
}

TEST_CASE("Activation facts") {
  const auto& r = ops::OpRegistry::instance();
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                         "Softplus", "Clip"}) {
    const ops::OpDef* d = r.find(op, 21);
    REQUIRE_MESSAGE(d, op);
    CHECK_MESSAGE(d->fusion == ops::Fusion::epilogue_activation, op);
    CHECK_MESSAGE(d->layout == ops::Layout::agnostic, op);
    CHECK_MESSAGE(d->kernels == std::vector<std::string>{"elementwise"}, op);
    CHECK_MESSAGE(d->family == "activation", op);
    CHECK_MESSAGE(d->flops != nullptr, op);
  }
  CHECK(r.find("Relu", 21)->precision == ops::Precision::fp16);
  CHECK(r.find("Sigmoid", 21)->precision == ops::Precision::fp32_compute);
  CHECK(r.find("Tanh", 21)->precision == ops::Precision::fp32_compute);
  CHECK(r.find("Clip", 10)->since == 6);
  CHECK(r.find("Clip", 11)->since == 11);
  CHECK(r.find("PRelu", 21)->family == "activation");
}

TEST_CASE("activation_attrs: the spec's defaults, attributes read as float32, other ops refused") {
  Node leaky("LeakyRelu", "lr", 16);
  CHECK(ops::activation_attrs(leaky).alpha == static_cast<double>(0.01f));
  leaky.set_attr_float("alpha", 0.1);
  CHECK(ops::activation_attrs(leaky).alpha == static_cast<double>(0.1f));
  CHECK(ops::activation_attrs(Node("Elu", "e", 6)).alpha == 1.0);
  const ops::ActivationAttrs selu = ops::activation_attrs(Node("Selu", "s", 6));
  CHECK(selu.alpha == static_cast<double>(static_cast<float>(ops::kSeluAlpha)));
  CHECK(selu.gamma == static_cast<double>(static_cast<float>(ops::kSeluGamma)));
  Node hs("HardSigmoid", "hs", 6);
  hs.set_attr_float("beta", 0.25);
  const ops::ActivationAttrs h = ops::activation_attrs(hs);
  CHECK(h.alpha == static_cast<double>(0.2f));
  CHECK(h.beta == 0.25);
  CHECK_THROWS_WITH_AS(ops::activation_attrs(Node("Relu", "r", 14)), doctest::Contains("node 'r'"), Error);
}

TEST_CASE("clip_bounds: attributes before opset 11, optional inputs from 11 (constant or computed)") {
  Node c6("Clip", "c6", 6);
  c6.set_attr_float("max", 6.1);
  std::array<ops::ClipBound, 2> b = ops::clip_bounds(c6);
  CHECK_FALSE(b[0].given);
  REQUIRE(b[1].given);
  REQUIRE(b[1].value);
  CHECK(b[1].value->dtype() == DType::float32);
  CHECK(b[1].value->f64_at(0) == static_cast<double>(6.1f));
  CHECK(b[1].input == -1);

  Value x("x"), lo("lo"), hi("hi");
  x.set_type(DType::int32, {4});
  lo.set_constant(Tensor::from_i64(DType::int32, {}, {-3}));
  hi.set_type(DType::int32, {});
  Node c11("Clip", "c11", 13);
  c11.add_input(&x);
  c11.add_input(&lo);
  b = ops::clip_bounds(c11);
  REQUIRE(b[0].value);
  CHECK(b[0].value->i64_at(0) == -3);
  CHECK(b[0].input == 1);
  CHECK_FALSE(b[1].given);
  c11.add_input(&hi);  // computed at run time
  b = ops::clip_bounds(c11);
  CHECK(b[1].given);
  CHECK_FALSE(b[1].value);
  CHECK(b[1].input == 2);
}

// BatchNormalization, InstanceNormalization, LayerNormalization: values by
// hand, opset forms, optional outputs, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "op_test_util.h"
#include "ops/normalization.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor iota(Shape s, float start = 0) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from_f32(std::move(s), v);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

}  // namespace

namespace {

std::vector<Tensor> batchnorm(int opset, const Tensor& x, const std::vector<Tensor>& params,
                              const std::function<void(Node&)>& set = nullptr, int outs = 1) {
  std::vector<Tensor> ins{x};
  ins.insert(ins.end(), params.begin(), params.end());
  OneNode n("BatchNormalization", opset, ins, outs);
  if (set) set(*n.n);
  return n.run();
}

}  // namespace

TEST_CASE("BatchNormalization: per-channel affine from running statistics") {
  const Tensor x = f32({1, 2, 1, 2}, {1, 3, 2, 6});
  const std::vector<Tensor> p{f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 2}), f32({2}, {3, 0})};
  for (int opset : {7, 9, 14, 15}) {
    INFO("opset " << opset);
    const Tensor y = batchnorm(opset, x, p, [](Node& n) { n.set_attr_float("epsilon", 1.0); })[0];
    CHECK(y.shape() == x.shape());
    check_close(values(y), {0, 1, 1, 9});
  }
  // Default epsilon 1e-5; rank-2 input (N x C).
  const Tensor y2 = batchnorm(14, f32({2, 2}, {1, 2, 3, 4}),
                              {f32({2}, {1, 1}), f32({2}, {0, 0}), f32({2}, {0, 0}), f32({2}, {1, 4})})[0];
  check_close(values(y2), {1 / std::sqrt(1 + 1e-5), 2 / std::sqrt(4 + 1e-5), 3 / std::sqrt(1 + 1e-5),
                           4 / std::sqrt(4 + 1e-5)});
  // Opset 6 with is_test=1 is inference.
  const Tensor y6 = batchnorm(6, x, p, [](Node& n) {
    n.set_attr_float("epsilon", 1.0);
    n.set_attr_int("is_test", 1);
  })[0];
  check_close(values(y6), {0, 1, 1, 9});
}

TEST_CASE("BatchNormalization opset 7 spatial=0: one parameter per activation") {
  const Tensor x = iota({2, 2, 2});
  const Tensor ones = f32({2, 2}, {1, 1, 1, 1}), zeros = f32({2, 2}, {0, 0, 0, 0});
  const Tensor y = batchnorm(7, x, {ones, zeros, f32({2, 2}, {0, 1, 2, 3}), zeros}, [](Node& n) {
    n.set_attr_int("spatial", 0);
    n.set_attr_float("epsilon", 1.0);
  })[0];
  check_close(values(y), {0, 0, 0, 0, 4, 4, 4, 4});
  // With spatial=1 (default) those parameters have the wrong shape.
  CHECK_THROWS_AS(batchnorm(7, x, {ones, zeros, zeros, zeros}), Error);
  CHECK_THROWS_AS(batchnorm(9, x, {ones, zeros, zeros, zeros}, [](Node& n) { n.set_attr_int("spatial", 0); }), Error);
}

TEST_CASE("BatchNormalization: training mode is an error") {
  const Tensor x = f32({1, 2, 1, 2}, {1, 3, 2, 6});
  const std::vector<Tensor> p{f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {1, 2}), f32({2}, {3, 1})};
  auto message = [&](int opset, const std::function<void(Node&)>& set, int outs) {
    try {
      batchnorm(opset, x, p, set, outs);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string not_supported = "training mode is not supported";
  CHECK(message(15, [](Node& n) { n.set_attr_int("training_mode", 1); }, 1).find(not_supported) != std::string::npos);
  CHECK(message(14, nullptr, 3).find(not_supported) != std::string::npos);
  CHECK(message(9, nullptr, 5).find(not_supported) != std::string::npos);
  CHECK(message(6, nullptr, 1).find(not_supported) != std::string::npos);  // is_test defaults to 0
  CHECK(message(14, [](Node& n) { n.set_attr_int("spatial", 0); }, 1).find("spatial") != std::string::npos);
  CHECK_THROWS_AS(batchnorm(14, x, {f32({3}, {1, 1, 1}), p[1], p[2], p[3]}), Error);
  CHECK_THROWS_AS(batchnorm(14, f32({2}, {1, 2}), {f32({1}, {1}), p[1], p[2], p[3]}), Error);  // rank 1
  OneNode facts("BatchNormalization", 15, {x, p[0], p[1], p[2], p[3]});
  CHECK(facts.flops() == 2 * 4);
  const ops::OpDef& d = ops::lookup(*facts.n);
  CHECK(d.fusion == ops::Fusion::normalization);
  CHECK(d.layout == ops::Layout::channels);
}

TEST_CASE("InstanceNormalization: per (n, c) statistics over the spatial dims") {
  OneNode n("InstanceNormalization", 6, {f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 5, 5, 5}), f32({2}, {2, 1}), f32({2}, {0, 7})});
  const Tensor y = n.run1();
  const double r = 1 / std::sqrt(1.25 + 1e-5);
  check_close(values(y), {2 * -1.5 * r, 2 * -0.5 * r, 2 * 0.5 * r, 2 * 1.5 * r, 7, 7, 7, 7});
  CHECK(ops::lookup(*n.n).precision == ops::Precision::fp32_compute);

  OneNode e("InstanceNormalization", 6, {f32({1, 2, 2}, {1, 2, 3, 5}), f32({2}, {1, 1}), f32({2}, {0, 0})});
  e.n->set_attr_float("epsilon", 0.75);
  check_close(values(e.run1()), {-0.5, 0.5, -1 / std::sqrt(1.75), 1 / std::sqrt(1.75)});

  OneNode bad("InstanceNormalization", 6, {f32({1, 2, 2}, {1, 2, 3, 5}), f32({3}, {1, 1, 1}), f32({2}, {0, 0})});
  CHECK_THROWS_AS(bad.run(), Error);
  OneNode rank2("InstanceNormalization", 6, {f32({1, 2}, {1, 2}), f32({2}, {1, 1}), f32({2}, {0, 0})});
  CHECK_THROWS_AS(rank2.run(), Error);
}

TEST_CASE("LayerNormalization: axis, epsilon, broadcast Scale/B, Mean and InvStdDev outputs") {
  const Tensor x = f32({2, 2}, {1, 3, 2, 2});
  OneNode n("LayerNormalization", 17, {x, f32({2}, {1, 2}), f32({2}, {0, 1})}, 3);
  n.n->set_attr_float("epsilon", 1.0);
  const std::vector<Tensor> out = n.run();
  const double r = 1 / std::sqrt(2.0);
  check_close(values(out[0]), {-r, 2 * r + 1, 0, 1});
  CHECK(out[1].shape() == Shape{2, 1});
  CHECK(out[1].dtype() == DType::float32);
  check_close(values(out[1]), {2, 2});
  check_close(values(out[2]), {r, 1});

  // axis 0: one group over everything; B omitted.
  OneNode a("LayerNormalization", 17, {x, f32({2, 2}, {1, 1, 1, 1})}, 3);
  a.n->set_attr_int("axis", 0);
  a.n->set_attr_float("epsilon", 0.5);
  const std::vector<Tensor> o0 = a.run();
  CHECK(o0[1].shape() == Shape{1, 1});
  check_close(values(o0[0]), {-1, 1, 0, 0});
  check_close(values(o0[2]), {1});

  // Y only, Scale broadcast from [1].
  OneNode s("LayerNormalization", 17, {f32({1, 3}, {0, 1, 2}), f32({1}, {3})});
  s.n->set_attr_float("epsilon", 0.0);
  check_close(values(s.run1()), {-3 * std::sqrt(1.5), 0, 3 * std::sqrt(1.5)});
  CHECK(ops::lookup(*s.n).precision == ops::Precision::fp32_compute);

  auto ln = [&](const Tensor& scale, const std::function<void(Node&)>& set) {
    OneNode e("LayerNormalization", 17, {x, scale});
    if (set) set(*e.n);
    e.run();
  };
  CHECK_THROWS_AS(ln(f32({3}, {1, 1, 1}), nullptr), Error);                                  // Scale does not broadcast
  CHECK_THROWS_AS(ln(f32({2}, {1, 1}), [](Node& e) { e.set_attr_int("axis", 2); }), Error);     // axis out of range
  CHECK_THROWS_AS(ln(f32({2}, {1, 1}), [](Node& e) { e.set_attr_int("stash_type", 11); }), Error);  // double
  OneNode old("LayerNormalization", 16, {x, f32({2}, {1, 1})});
  CHECK_THROWS_AS(old.run(), Error);  // no form before opset 17
}

TEST_CASE("norm_epsilon, layernorm_axis, instancenorm_axis: defaults, negative axes, errors") {
  Node bn("BatchNormalization", "bn", 15);
  CHECK(ops::norm_epsilon(bn) == doctest::Approx(1e-5));
  bn.set_attr_float("epsilon", 1e-3);
  CHECK(ops::norm_epsilon(bn) == doctest::Approx(1e-3));

  Node ln("LayerNormalization", "ln", 17);
  CHECK(ops::layernorm_axis(ln, 3) == 2);  // default -1: the last dim
  ln.set_attr_int("axis", -3);
  CHECK(ops::layernorm_axis(ln, 3) == 0);
  ln.set_attr_int("axis", 3);
  CHECK_THROWS_WITH_AS(ops::layernorm_axis(ln, 3), doctest::Contains("node 'ln'"), Error);

  Value x("x");
  x.set_type(DType::float32, {1, 2});
  Node in("InstanceNormalization", "in", 6);
  in.add_input(&x);
  CHECK(ops::instancenorm_axis(in, {1, 2, 5}) == 2);
  CHECK_THROWS_WITH_AS(ops::instancenorm_axis(in, {1, 2}), doctest::Contains("expected rank 3 or more"), Error);
}

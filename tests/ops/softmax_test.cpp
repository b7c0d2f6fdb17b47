// Softmax, LogSoftmax: the opset < 13 2-D coercion vs the opset 13 per-axis
// form, numerical stability, errors.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "op_test_util.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "ops/softmax.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {


void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

Tensor softmax(const std::string& op, int opset, const Tensor& x, const std::function<void(Node&)>& set = nullptr) {
  OneNode n(op, opset, {x});
  if (set) set(*n.n);
  return n.run1();
}

}  // namespace

TEST_CASE("Softmax along the last axis; stable for large inputs") {
  // Row 1 is row 0 shifted by 1000: exp(1000) overflows unless the max is subtracted.
  const Tensor x = f32({2, 3}, {0, 1, 2, 1000, 1001, 1002});
  const double s = 1 + std::exp(1.0) + std::exp(2.0);
  const std::vector<double> p{1 / s, std::exp(1.0) / s, std::exp(2.0) / s};
  const Tensor y = softmax("Softmax", 13, x);
  CHECK(y.shape() == Shape{2, 3});
  check_close(values(y), {p[0], p[1], p[2], p[0], p[1], p[2]});
  const std::vector<double> lp{std::log(p[0]), std::log(p[1]), std::log(p[2])};
  check_close(values(softmax("LogSoftmax", 13, x)), {lp[0], lp[1], lp[2], lp[0], lp[1], lp[2]});
  // opset < 13 on 2-D: the same (axis 1 is the last).
  check_close(values(softmax("Softmax", 11, x)), {p[0], p[1], p[2], p[0], p[1], p[2]});
  const Tensor big = f32({1, 2}, {-1e30f, 1e30f});
  check_close(values(softmax("Softmax", 13, big)), {0, 1});
  check_close(values(softmax("LogSoftmax", 13, big)), {-2e30, 0});
}

TEST_CASE("Softmax: opset < 13 coerces to 2-D at axis, opset 13 works along one axis") {
  // [1, 2, 2]: along axis 1 the pairs are (x0, x2) and (x1, x3); coerced at
  // axis 1 all four elements form one row.
  const double l3 = std::log(3.0);
  const Tensor x = Tensor::from_f64(DType::float32, {1, 2, 2}, {0, 0, l3, l3});
  check_close(values(softmax("Softmax", 11, x)), {0.125, 0.125, 0.375, 0.375});  // default axis 1, coerced
  check_close(values(softmax("Softmax", 1, x)), {0.125, 0.125, 0.375, 0.375});
  check_close(values(softmax("Softmax", 13, x, [](Node& n) { n.set_attr_int("axis", 1); })), {0.25, 0.25, 0.75, 0.75});
  check_close(values(softmax("Softmax", 13, x)), {0.5, 0.5, 0.5, 0.5});  // default axis -1
  check_close(values(softmax("LogSoftmax", 11, x, [](Node& n) { n.set_attr_int("axis", 2); })),
              {-std::log(2.0), -std::log(2.0), -std::log(2.0), -std::log(2.0)});
  check_close(values(softmax("LogSoftmax", 11, x, [](Node& n) { n.set_attr_int("axis", -2); })),
              {std::log(0.125), std::log(0.125), std::log(0.375), std::log(0.375)});
  // axis 0 coerced: one row of everything.
  check_close(values(softmax("Softmax", 11, x, [](Node& n) { n.set_attr_int("axis", 0); })), {0.125, 0.125, 0.375, 0.375});
}

TEST_CASE("Softmax facts and errors") {
  OneNode f("Softmax", 13, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  f.run1();
  const ops::OpDef& d = ops::lookup(*f.n);
  CHECK(d.precision == ops::Precision::fp32_compute);
  CHECK(d.kernels == std::vector<std::string>{"softmax"});
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_AS(softmax("Softmax", 13, x, [](Node& n) { n.set_attr_int("axis", 2); }), Error);
  CHECK_THROWS_AS(softmax("LogSoftmax", 11, x, [](Node& n) { n.set_attr_int("axis", -3); }), Error);
  CHECK_THROWS_AS(softmax("Softmax", 13, x, [](Node& n) { n.set_attr_float("beta", 2.0); }), Error);
  CHECK_THROWS_AS(softmax("Softmax", 13, Tensor::from_i64(DType::int64, {2}, {1, 2})), Error);
}

TEST_CASE("softmax_dims: the opset < 13 coercion from axis on, the opset 13 single axis, defaults, negative axes") {
  auto dims = [](const Node& n, int64_t rank) {
    const ops::SoftmaxDims d = ops::softmax_dims(n, rank);
    return std::vector<int64_t>{d.axis, d.end, d.coerced ? 1 : 0};
  };
  Node n("Softmax", "sm", 11);
  CHECK(dims(n, 3) == std::vector<int64_t>{1, 3, 1});  // default axis 1, every dim from it on
  n.set_attr_int("axis", -3);
  CHECK(dims(n, 3) == std::vector<int64_t>{0, 3, 1});

  Node m("LogSoftmax", "lsm", 13);
  CHECK(dims(m, 3) == std::vector<int64_t>{2, 3, 0});  // default axis -1, that dim alone
  m.set_attr_int("axis", -2);
  CHECK(dims(m, 3) == std::vector<int64_t>{1, 2, 0});

  m.set_attr_int("axis", 3);
  CHECK_THROWS_WITH_AS(ops::softmax_dims(m, 3), doctest::Contains("node 'lsm'"), Error);
  CHECK_THROWS_WITH_AS(ops::softmax_dims(m, 3), doctest::Contains("axis 3 is out of range for rank 3"), Error);
  CHECK_THROWS_AS(ops::softmax_dims(Node("Softmax", "s0", 13), 0), Error);  // a scalar has no axis
}

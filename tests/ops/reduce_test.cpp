// Reduce*, ArgMax/ArgMin, TopK: shapes, values against hand-computed numbers,
// both opset forms, and the errors bad attributes and inputs give.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "op_test_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {


void check_values(const Tensor& t, const std::vector<double>& want, double eps = 1e-6) {
  const std::vector<double> got = t.to_f64();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
    }
  }
}

const Tensor k2x3 = Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6});

}  // namespace

TEST_CASE("ReduceSum: axes attribute (opset 11), keepdims, negative and default axes") {
  {
    ConstInputsNode t("ReduceSum", 11, k2x3);
    t.n->set_attr_ints("axes", {1});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 1});
    check_values(y, {6, 15});
  }
  {
    ConstInputsNode t("ReduceSum", 11, k2x3);
    t.n->set_attr_ints("axes", {-2});
    t.n->set_attr_int("keepdims", 0);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{3});
    check_values(y, {5, 7, 9});
  }
  {
    ConstInputsNode t("ReduceSum", 11, k2x3);  // no axes: every axis
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 1});
    check_values(y, {21});
  }
}

TEST_CASE("ReduceSum: axes input (opset 13), noop_with_empty_axes") {
  {
    ConstInputsNode t("ReduceSum", 13, k2x3, {i64({1}, {0})});
    t.n->set_attr_int("keepdims", 0);
    check_values(t.run1(), {5, 7, 9});
  }
  {
    ConstInputsNode t("ReduceSum", 13, k2x3);  // axes absent: every axis
    t.n->set_attr_int("keepdims", 0);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{});
    check_values(y, {21});
  }
  {
    ConstInputsNode t("ReduceSum", 13, k2x3, {i64({0}, {})});  // empty axes + noop: the input itself
    t.n->set_attr_int("noop_with_empty_axes", 1);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 3});
    check_values(y, {1, 2, 3, 4, 5, 6});
  }
  {
    ConstInputsNode t("ReduceSum", 13, k2x3);
    t.n->set_attr_ints("axes", {1});  // the attribute form is gone at 13
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceSum", 13, k2x3, {i64({1}, {1})}, 1, 1);  // axes computed at run time
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("ReduceSum accumulates floats in double") {
  // In float32, 16777216 + 1 + 1 stays 16777216.
  ConstInputsNode t("ReduceSum", 11, f32({3}, {16777216.0f, 1.0f, 1.0f}));
  CHECK(t.run1().to_f64()[0] == 16777218.0);
}

TEST_CASE("ReduceMean, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp") {
  auto reduce = [](const char* op, int opset, const Tensor& x, std::vector<int64_t> axes) {
    auto t = std::make_unique<ConstInputsNode>(op, opset, x);
    t->n->set_attr_ints("axes", std::move(axes));
    t->n->set_attr_int("keepdims", 0);
    return t->run1();
  };
  check_values(reduce("ReduceMean", 13, k2x3, {1}), {2, 5});
  check_values(reduce("ReduceProd", 13, k2x3, {0}), {4, 10, 18});
  check_values(reduce("ReduceL1", 13, f32({2}, {-3, 4}), {0}), {7});
  check_values(reduce("ReduceL2", 13, f32({2}, {-3, 4}), {0}), {5});
  check_values(reduce("ReduceSumSquare", 13, f32({2}, {-3, 4}), {0}), {25});
  check_values(reduce("ReduceLogSum", 13, k2x3, {1}), {std::log(6.0), std::log(15.0)});
  // Shifted by the maximum: exp(1000) alone would overflow.
  check_values(reduce("ReduceLogSumExp", 13, f32({2}, {1000, 1000}), {0}), {1000 + std::log(2.0)});
  check_values(reduce("ReduceLogSumExp", 13, f32({3}, {0, 1, 2}), {0}), {std::log(1 + std::exp(1.0) + std::exp(2.0))});
}

TEST_CASE("Reduce*: axes input form at opset 18") {
  ConstInputsNode t("ReduceMean", 18, k2x3, {i64({1}, {-1})});
  const Tensor y = t.run1();
  CHECK(y.shape() == Shape{2, 1});
  check_values(y, {2, 5});

  ConstInputsNode a("ReduceMax", 18, k2x3);
  a.n->set_attr_ints("axes", {0});  // attribute form is not accepted at 18
  CHECK_THROWS_AS(a.infer(), Error);

  // noop on an elementwise reduction: each element reduced alone
  ConstInputsNode s("ReduceSumSquare", 18, f32({2}, {-3, 2}), {i64({0}, {})});
  s.n->set_attr_int("noop_with_empty_axes", 1);
  check_values(s.run1(), {9, 4});
}

TEST_CASE("ReduceMax and ReduceMin on integers are exact") {
  const int64_t big = (int64_t{1} << 62) + 1;  // not representable in double
  ConstInputsNode mx("ReduceMax", 13, i64({3}, {big - 1, big, -5}));
  mx.n->set_attr_int("keepdims", 0);
  const Tensor y = mx.run1();
  CHECK(y.dtype() == DType::int64);
  CHECK(y.to_i64() == std::vector<int64_t>{big});

  ConstInputsNode mn("ReduceMin", 13, Tensor::from_i64(DType::int32, {2, 2}, {7, -2, 3, 9}));
  mn.n->set_attr_ints("axes", {1});
  const Tensor z = mn.run1();
  CHECK(z.dtype() == DType::int32);
  CHECK(z.to_i64() == std::vector<int64_t>{-2, 3});

  ConstInputsNode s("ReduceSum", 11, Tensor::from_i64(DType::uint8, {2}, {3, 4}));
  CHECK(s.run1().to_i64() == std::vector<int64_t>{7});
}

TEST_CASE("Reduce* over an empty axis") {
  const Tensor empty = Tensor::from_f32({2, 0}, {});
  auto reduce = [&](const char* op, const Tensor& x) {
    auto t = std::make_unique<ConstInputsNode>(op, 12, x);  // every Reduce* has the axes attribute at 12
    t->n->set_attr_ints("axes", {1});
    t->n->set_attr_int("keepdims", 0);
    return t->run1();
  };
  check_values(reduce("ReduceSum", empty), {0, 0});
  check_values(reduce("ReduceProd", empty), {1, 1});
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(reduce("ReduceMax", empty).to_f64() == std::vector<double>{-inf, -inf});
  CHECK(reduce("ReduceMin", empty).to_f64() == std::vector<double>{inf, inf});
  CHECK(reduce("ReduceMax", Tensor::from_i64(DType::int32, {2, 0}, {})).to_i64() ==
        std::vector<int64_t>{INT32_MIN, INT32_MIN});
  check_values(reduce("ReduceMean", empty), {std::nan(""), std::nan("")});
}

TEST_CASE("Reduce*: bad attributes and inputs are Errors") {
  {
    ConstInputsNode t("ReduceSum", 11, k2x3);
    t.n->set_attr_ints("axes", {2});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceSum", 11, k2x3);
    t.n->set_attr_ints("axes", {1, -1});  // the same axis twice
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceMean", 11, k2x3);
    t.n->set_attr_int("keepdims", 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceMean", 11, k2x3);
    t.n->set_attr_int("noop_with_empty_axes", 1);  // only the input form has it
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceSum", 13, k2x3, {i64({1}, {5})});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceSum", 11, f32({}, {1}));
    t.n->set_attr_ints("axes", {0});  // a scalar has no axis 0
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceMax", 18, f32({}, {1}), {i64({1}, {0})});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceMax", 13, Tensor::from_i64(DType::boolean, {2}, {0, 1}));
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ReduceMax", 20, Tensor::from_i64(DType::boolean, {2}, {0, 1}));  // bool from opset 20
    CHECK(t.run1().to_i64() == std::vector<int64_t>{1});
  }
}

TEST_CASE("ArgMax / ArgMin: axis, keepdims, select_last_index") {
  const Tensor x = f32({2, 3}, {2, 7, 7, 9, 1, 1});
  {
    ConstInputsNode t("ArgMax", 11, x);
    t.n->set_attr_int("axis", 1);
    const Tensor y = t.run1();
    CHECK(y.dtype() == DType::int64);
    CHECK(y.shape() == Shape{2, 1});
    CHECK(y.to_i64() == std::vector<int64_t>{1, 0});
  }
  {
    ConstInputsNode t("ArgMax", 12, x);
    t.n->set_attr_int("axis", -1);
    t.n->set_attr_int("keepdims", 0);
    t.n->set_attr_int("select_last_index", 1);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2});
    CHECK(y.to_i64() == std::vector<int64_t>{2, 0});
  }
  {
    ConstInputsNode t("ArgMin", 13, x);  // default axis 0
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 3});
    CHECK(y.to_i64() == std::vector<int64_t>{0, 1, 1});
  }
  {
    ConstInputsNode t("ArgMin", 13, x);
    t.n->set_attr_int("axis", 1);
    t.n->set_attr_int("select_last_index", 1);
    CHECK(t.run1().to_i64() == std::vector<int64_t>{0, 2});
  }
  {
    ConstInputsNode t("ArgMax", 11, x);
    t.n->set_attr_int("select_last_index", 1);  // only from opset 12
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ArgMax", 13, x);
    t.n->set_attr_int("axis", 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ArgMin", 13, f32({}, {1}));
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("ArgMin", 13, f32({2, 0}, {}));
    t.n->set_attr_int("axis", 1);
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("TopK: k attribute (opset 1), K input (10), largest/sorted (11), ties by lower index") {
  const Tensor x = f32({2, 4}, {1, 4, 3, 2, 8, 5, 8, 7});
  {
    ConstInputsNode t("TopK", 9, x, {}, 2);
    t.n->set_attr_int("k", 2);
    const auto y = t.run();
    CHECK(y[0].shape() == Shape{2, 2});
    check_values(y[0], {4, 3, 8, 8});
    CHECK(y[1].dtype() == DType::int64);
    CHECK(y[1].to_i64() == std::vector<int64_t>{1, 2, 0, 2});
  }
  {
    ConstInputsNode t("TopK", 10, x, {i64({1}, {3})}, 2);
    const auto y = t.run();
    check_values(y[0], {4, 3, 2, 8, 8, 7});
    CHECK(y[1].to_i64() == std::vector<int64_t>{1, 2, 3, 0, 2, 3});
  }
  {
    ConstInputsNode t("TopK", 11, x, {i64({1}, {2})}, 2);
    t.n->set_attr_int("largest", 0);
    const auto y = t.run();
    check_values(y[0], {1, 2, 5, 7});
    CHECK(y[1].to_i64() == std::vector<int64_t>{0, 3, 1, 3});
  }
  {
    ConstInputsNode t("TopK", 11, x, {i64({1}, {1})}, 2);
    t.n->set_attr_int("axis", 0);
    t.n->set_attr_int("sorted", 0);
    const auto y = t.run();
    CHECK(y[0].shape() == Shape{1, 4});
    check_values(y[0], {8, 5, 8, 7});
    CHECK(y[1].to_i64() == std::vector<int64_t>{1, 1, 1, 1});
  }
  {
    const int64_t big = (int64_t{1} << 60) + 1;
    ConstInputsNode t("TopK", 11, i64({3}, {big, big + 1, 0}), {i64({1}, {1})}, 2);
    const auto y = t.run();
    CHECK(y[0].to_i64() == std::vector<int64_t>{big + 1});  // values copied exactly
    CHECK(y[1].to_i64() == std::vector<int64_t>{1});
  }
}

TEST_CASE("TopK: bad k, axis and attributes are Errors") {
  const Tensor x = f32({2, 4}, {1, 4, 3, 2, 8, 5, 8, 7});
  {
    ConstInputsNode t("TopK", 11, x, {i64({1}, {5})}, 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("TopK", 11, x, {i64({2}, {1, 2})}, 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("TopK", 11, x, {i64({1}, {2})}, 2, 1);  // K not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("TopK", 9, x, {}, 2);  // k attribute missing
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("TopK", 10, x, {i64({1}, {2})}, 2);
    t.n->set_attr_int("largest", 0);  // only from opset 11
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("TopK", 11, x, {i64({1}, {2})}, 2);
    t.n->set_attr_int("axis", -3);
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("reduction facts") {
  Node n("ArgMax", "a", 13);
  CHECK(ops::lookup(n).precision == ops::Precision::never);
  CHECK(ops::lookup(n).kernels == std::vector<std::string>{"argminmax"});
  Node r("ReduceMean", "r", 13);
  CHECK(ops::lookup(r).precision == ops::Precision::fp32_compute);
  CHECK(ops::lookup(r).since == 1);
  Node r18("ReduceMean", "r", 18);
  CHECK(ops::lookup(r18).since == 18);
  Node s13("ReduceSum", "s", 13);
  CHECK(ops::lookup(s13).since == 13);
}

TEST_CASE("reduce_dims: the axes attribute and input forms, empty axes, noop_with_empty_axes, keepdims") {
  using V = std::vector<bool>;
  Node a("ReduceSum", "rs", 11);  // axes as an attribute
  ops::ReduceDims d = ops::reduce_dims(a, 3, nullptr);
  CHECK(d.reduced == V{true, true, true});  // no axes: every dim
  CHECK_FALSE(d.noop);
  CHECK(d.keepdims);
  a.set_attr_ints("axes", {-1, 0});
  a.set_attr_int("keepdims", 0);
  d = ops::reduce_dims(a, 3, nullptr);
  CHECK(d.reduced == V{true, false, true});
  CHECK_FALSE(d.keepdims);

  Node b("ReduceMax", "rm", 18);  // axes as an input
  const std::vector<int64_t> one{1}, none{};
  CHECK(ops::reduce_dims(b, 3, &one).reduced == V{false, true, false});
  CHECK(ops::reduce_dims(b, 3, &none).reduced == V{true, true, true});
  CHECK(ops::reduce_dims(b, 3, nullptr).reduced == V{true, true, true});
  b.set_attr_int("noop_with_empty_axes", 1);
  d = ops::reduce_dims(b, 3, &none);
  CHECK(d.noop);
  CHECK(d.reduced == V{false, false, false});
  CHECK(ops::reduce_dims(b, 3, &one).reduced == V{false, true, false});  // axes given: noop has no effect

  const std::vector<int64_t> repeated{0, -3}, out_of_range{3}, zero{0};
  CHECK_THROWS_WITH_AS(ops::reduce_dims(b, 3, &repeated), doctest::Contains("axes repeat an axis"), Error);
  CHECK_THROWS_WITH_AS(ops::reduce_dims(b, 3, &out_of_range), doctest::Contains("node 'rm'"), Error);
  CHECK_THROWS_WITH_AS(ops::reduce_dims(b, 0, &zero), doctest::Contains("of a scalar input"), Error);
}

TEST_CASE("reduce_dims: the axes input read as a constant of the graph") {
  Value x("x"), axes("axes"), computed("computed");
  x.set_type(DType::float32, {2, 3});
  axes.set_constant(i64({1}, {-1}));
  computed.set_type(DType::int64, {1});
  Node n("ReduceSum", "rs", 13);
  n.add_input(&x);
  CHECK(ops::reduce_dims(n, 2).reduced == std::vector<bool>{true, true});  // no axes input
  n.add_input(&axes);
  CHECK(ops::reduce_dims(n, 2).reduced == std::vector<bool>{false, true});
  n.set_input(1, &computed);
  CHECK_THROWS_WITH_AS(ops::reduce_dims(n, 2), doctest::Contains("must be a constant"), Error);
}

TEST_CASE("arg_reduce: axis, keepdims and select_last_index defaults; negative axes; errors") {
  Node n("ArgMax", "am", 13);
  ops::ArgReduce a = ops::arg_reduce(n, {2, 3});
  CHECK(a.axis == 0);
  CHECK(a.keepdims);
  CHECK_FALSE(a.select_last_index);
  n.set_attr_int("axis", -1);
  n.set_attr_int("keepdims", 0);
  n.set_attr_int("select_last_index", 1);
  a = ops::arg_reduce(n, {2, 3});
  CHECK(a.axis == 1);
  CHECK_FALSE(a.keepdims);
  CHECK(a.select_last_index);
  CHECK_THROWS_WITH_AS(ops::arg_reduce(n, {2, 0}), doctest::Contains("is empty: no ArgMax"), Error);
  CHECK_THROWS_WITH_AS(ops::arg_reduce(n, {}), doctest::Contains("is a scalar"), Error);
  n.set_attr_int("axis", 2);
  CHECK_THROWS_WITH_AS(ops::arg_reduce(n, {2, 3}), doctest::Contains("node 'am'"), Error);
}

TEST_CASE("topk_params: k from the attribute (opset 1) or the K input (10), axis, largest, sorted") {
  Node a("TopK", "tk", 1);
  a.set_attr_int("k", 2);
  ops::TopKParams p = ops::topk_params(a, {3, 4});
  CHECK(p.axis == 1);  // default -1
  CHECK(p.k == 2);
  CHECK(p.largest);
  CHECK(p.sorted);

  Value x("x"), k("K");
  x.set_type(DType::float32, {3, 4});
  k.set_constant(i64({1}, {3}));
  Node b("TopK", "tk11", 11);
  b.add_input(&x);
  b.add_input(&k);
  b.set_attr_int("axis", -2);
  b.set_attr_int("largest", 0);
  b.set_attr_int("sorted", 0);
  p = ops::topk_params(b, {3, 4});
  CHECK(p.axis == 0);
  CHECK(p.k == 3);
  CHECK_FALSE(p.largest);
  CHECK_FALSE(p.sorted);
  CHECK(ops::topk_params(b, {3, 4}, {0}).k == 0);

  CHECK_THROWS_WITH_AS(ops::topk_params(b, {3, 4}, {4}), doctest::Contains("k = 4 is out of range"), Error);
  CHECK_THROWS_WITH_AS(ops::topk_params(b, {3, 4}, {-1}), doctest::Contains("out of range"), Error);
  CHECK_THROWS_WITH_AS(ops::topk_params(b, {3, 4}, {1, 2}), doctest::Contains("exactly one value"), Error);
  CHECK_THROWS_WITH_AS(ops::topk_params(b, {}, {1}), doctest::Contains("is a scalar"), Error);
  b.set_attr_int("axis", 2);
  CHECK_THROWS_WITH_AS(ops::topk_params(b, {3, 4}, {1}), doctest::Contains("node 'tk11'"), Error);
}

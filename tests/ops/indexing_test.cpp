// Tests of compiler/ops/indexing.cpp and trilu_cumsum.cpp: GatherElements, GatherND,
// ScatterElements / Scatter, ScatterND, OneHot, NonZero (folded and bounded), Trilu, CumSum on
// small hand-made cases, and the errors bad attributes and shapes give (the message names the node).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "op_test_util.h"
#include "ops/indexing.h"
#include "ops/registry.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor iota(Shape s, double start = 0) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(start + static_cast<double>(i));
  return Tensor::from_f32(std::move(s), v);
}

std::vector<int64_t> ints(const Tensor& t) { return t.to_i64(); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GatherElements: along an axis, negative indices, indices shorter than data") {
  // data [[1, 2], [3, 4]], axis 1, indices [[0, 0], [1, 0]] -> [[1, 1], [4, 3]] (the spec's example)
  {
    OneNode t("GatherElements", 13, {f32({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {0, 0, 1, 0})});
    t.n->set_attr_int("axis", 1);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 2});
    CHECK(values(y) == std::vector<double>{1, 1, 4, 3});
  }
  {  // axis 0 (default), data 3x3, indices 2x3 with -1 (the last row)
    OneNode t("GatherElements", 11, {iota({3, 3}, 1), i64({2, 3}, {1, 2, 0, 2, 0, -1})});
    CHECK(values(t.run1()) == std::vector<double>{4, 8, 3, 7, 2, 9});
  }
  {  // an index out of range is an Error naming the node
    OneNode t("GatherElements", 13, {iota({2, 2}), i64({1, 2}, {0, 2})});
    const std::string e = error_of([&] { t.run(); });
    CHECK(e.find("node") != std::string::npos);
    CHECK(e.find("out of range") != std::string::npos);
  }
  {  // indices longer than data along another axis
    OneNode t("GatherElements", 13, {iota({2, 2}), i64({1, 3}, {0, 0, 0})});
    CHECK(error_of([&] { t.run(); }).find("may not be longer") != std::string::npos);
  }
}

TEST_CASE("GatherND: index tuples, slices, batch_dims") {
  {  // data [[[0,1],[2,3]],[[4,5],[6,7]]], indices [[0,1],[1,0]] -> [[2,3],[4,5]]
    OneNode t("GatherND", 12, {iota({2, 2, 2}), i64({2, 2}, {0, 1, 1, 0})});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 2});
    CHECK(values(y) == std::vector<double>{2, 3, 4, 5});
  }
  {  // batch_dims 1: indices [[1],[0]] pick row 1 of batch 0, row 0 of batch 1 -> [[2,3],[4,5]]
    OneNode t("GatherND", 12, {iota({2, 2, 2}), i64({2, 1}, {1, 0})});
    t.n->set_attr_int("batch_dims", 1);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 2});
    CHECK(values(y) == std::vector<double>{2, 3, 4, 5});
  }
  {  // full tuples (k = rank): one element each, negative indices count from the end
    OneNode t("GatherND", 13, {iota({2, 3}), i64({2, 2}, {-1, -1, 0, 1})});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2});
    CHECK(values(y) == std::vector<double>{5, 1});
  }
  {  // k larger than the rank
    OneNode t("GatherND", 13, {iota({2, 3}), i64({1, 3}, {0, 0, 0})});
    CHECK(error_of([&] { t.run(); }).find("indices' last dim is 3") != std::string::npos);
  }
}

TEST_CASE("ScatterElements and Scatter: axis, reductions in index order, duplicates") {
  {  // the spec's example: axis 1, data [[1,2,3,4,5]], indices [[1,3]], updates [[1.1,2.1]]
    OneNode t("ScatterElements", 13, {iota({1, 5}, 1), i64({1, 2}, {1, 3}), f32({1, 2}, {1.1f, 2.1f})});
    t.n->set_attr_int("axis", 1);
    CHECK(values(t.run1()) == values(f32({1, 5}, {1, 1.1f, 3, 2.1f, 5})));
  }
  {  // reduction add with a duplicate index: both updates land
    OneNode t("ScatterElements", 16, {iota({1, 5}, 1), i64({1, 2}, {1, 1}), f32({1, 2}, {1.5f, 2.5f})});
    t.n->set_attr_int("axis", 1);
    t.n->set_attr_string("reduction", "add");
    CHECK(values(t.run1()) == std::vector<double>{1, 6, 3, 4, 5});
  }
  {  // mul, max, min on integers (exact), negative indices
    for (const auto& c : std::vector<std::pair<std::string, std::vector<int64_t>>>{
             {"mul", {1, 2, 3, 4, 50}}, {"max", {1, 2, 3, 4, 10}}, {"min", {1, 2, 3, 4, 1}}}) {
      const std::string& red = c.first;  // (CAPTURE of a structured binding is C++20: clang refuses it)
      const std::vector<int64_t>& want = c.second;
      CAPTURE(red);
      OneNode t("ScatterElements", 18,
                {i64({5}, {1, 2, 3, 4, 5}), i64({2}, {-1, 4}), i64({2}, {10, 1})});
      t.n->set_attr_string("reduction", red);
      CHECK(ints(t.run1()) == want);
    }
  }
  {  // max before opset 18 is an Error naming the attribute
    OneNode t("ScatterElements", 16, {iota({3}), i64({1}, {0}), iota({1})});
    t.n->set_attr_string("reduction", "max");
    CHECK(error_of([&] { t.run(); }).find("max and min from opset 18") != std::string::npos);
  }
  {  // Scatter 9, the deprecated name, axis 0
    OneNode t("Scatter", 9, {f32({3, 3}, std::vector<float>(9, 0)), i64({2, 3}, {1, 0, 2, 0, 2, 1}),
                             f32({2, 3}, {1, 1.1f, 1.2f, 2, 2.1f, 2.2f})});
    CHECK(values(t.run1()) == values(f32({3, 3}, {2, 1.1f, 0, 1, 0, 2.2f, 0, 2.1f, 1.2f})));
  }
}

TEST_CASE("ScatterND: slices and elements, reductions applied in tuple order") {
  {  // the spec's example 1: data [1..8], indices [[4],[3],[1],[7]], updates [9,10,11,12]
    OneNode t("ScatterND", 11, {iota({8}, 1), i64({4, 1}, {4, 3, 1, 7}), f32({4}, {9, 10, 11, 12})});
    CHECK(values(t.run1()) == std::vector<double>{1, 11, 3, 10, 9, 6, 7, 12});
  }
  {  // slices of rows: data 3x2, indices [[2],[0]] write rows 2 and 0
    OneNode t("ScatterND", 13, {iota({3, 2}), i64({2, 1}, {2, 0}), f32({2, 2}, {7, 8, 9, 10})});
    CHECK(values(t.run1()) == std::vector<double>{9, 10, 2, 3, 7, 8});
  }
  {  // add with the same tuple twice
    OneNode t("ScatterND", 16, {iota({2, 2}), i64({2, 2}, {1, 1, 1, 1}), f32({2}, {1, 2})});
    t.n->set_attr_string("reduction", "add");
    CHECK(values(t.run1()) == std::vector<double>{0, 1, 2, 6});
  }
  {  // updates of the wrong shape
    OneNode t("ScatterND", 13, {iota({3, 2}), i64({2, 1}, {2, 0}), iota({2, 3})});
    CHECK(error_of([&] { t.run(); }).find("it must be 2x2") != std::string::npos);
  }
}

TEST_CASE("OneHot: depth at an axis, negative indices, off/on values") {
  {  // indices [0, -1, 5] (5 out of range: all off), depth 3, values [0, 1] -> 3x3
    ConstInputsNode t("OneHot", 11, i64({3}, {0, -1, 5}), {Tensor::scalar_i64(3), f32({2}, {0, 1})});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{3, 3});
    CHECK(values(y) == std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0});
  }
  {  // axis 0, float indices (truncated), values [-1, 7]: y[d, i]
    ConstInputsNode t("OneHot", 11, f32({2}, {1.7f, 0}), {f32({1}, {2}), f32({2}, {-1, 7})});
    t.n->set_attr_int("axis", 0);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 2});
    CHECK(values(y) == std::vector<double>{-1, 7, 7, -1});
  }
  {  // depth computed at run time: the shape cannot be known
    ConstInputsNode t("OneHot", 11, i64({2}, {0, 1}), {Tensor::scalar_i64(2), f32({2}, {0, 1})}, 1, 1);
    CHECK(error_of([&] { t.infer(); }).find("depth") != std::string::npos);
  }
}

TEST_CASE("NonZero: a constant input folds to [rank, count]; computed at run time, bounded at [rank, numel]") {
  const Tensor x = f32({2, 3}, {0, 1, 0, NAN, 0, -2});
  {
    Graph g;
    g.set_opset(13);
    Value* y = g.add_value("nz");
    g.add_node("NonZero", "nonzero", {g.add_constant("c", x)}, {y});
    g.add_output(y);
    ops::infer_graph(g);
    REQUIRE(y->is_constant());
    CHECK(y->shape() == Shape{2, 3});
    CHECK(ints(y->constant()) == std::vector<int64_t>{0, 1, 1, 1, 0, 2});
  }
  {
    OneNode t("NonZero", 13, {x});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 6});
    CHECK(ints(y) == std::vector<int64_t>{0, 1, 1, -1, -1, -1, 1, 0, 2, -1, -1, -1});
    CHECK(ops::nonzero_bounded(*t.n));
  }
  {  // every element non-zero: no padding column
    OneNode t("NonZero", 13, {i64({3}, {1, 2, 3})});
    CHECK(ints(t.run1()) == std::vector<int64_t>{0, 1, 2});
  }
}

TEST_CASE("Trilu: upper and lower from diagonal k, k computed at run time, batch dims") {
  const Tensor x = iota({2, 3, 4}, 1);
  {
    OneNode t("Trilu", 14, {x});
    const std::vector<double> y = values(t.run1());
    CHECK(std::vector<double>(y.begin(), y.begin() + 12) == std::vector<double>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  }
  {
    OneNode t("Trilu", 14, {x, Tensor::scalar_i64(-1)});
    t.n->set_attr_int("upper", 0);
    const std::vector<double> y = values(t.run1());
    CHECK(std::vector<double>(y.begin() + 12, y.end()) ==
          std::vector<double>{0, 0, 0, 0, 17, 0, 0, 0, 21, 22, 0, 0});
    CHECK_FALSE(ops::trilu_k(*t.n).has_value());  // a graph input: read at run time
  }
  {
    ConstInputsNode t("Trilu", 14, x, {Tensor::scalar_i64(2)});
    t.infer();
    CHECK(ops::trilu_k(*t.n) == 2);
  }
  {
    OneNode t("Trilu", 14, {iota({4})});
    CHECK(error_of([&] { t.run(); }).find("rank >= 2") != std::string::npos);
  }
}

TEST_CASE("CumSum: axis, exclusive, reverse; integers exact") {
  const Tensor x = iota({2, 3}, 1);  // [[1,2,3],[4,5,6]]
  auto run = [&](const Tensor& in, int64_t axis, bool exclusive, bool reverse) {
    ConstInputsNode t("CumSum", 14, in, {Tensor::scalar_i64(axis)});
    if (exclusive) t.n->set_attr_int("exclusive", 1);
    if (reverse) t.n->set_attr_int("reverse", 1);
    return values(t.run1());
  };
  CHECK(run(x, 1, false, false) == std::vector<double>{1, 3, 6, 4, 9, 15});
  CHECK(run(x, 0, false, false) == std::vector<double>{1, 2, 3, 5, 7, 9});
  CHECK(run(x, -1, true, false) == std::vector<double>{0, 1, 3, 0, 4, 9});
  CHECK(run(x, 1, false, true) == std::vector<double>{6, 5, 3, 15, 11, 6});
  CHECK(run(x, 1, true, true) == std::vector<double>{5, 3, 0, 11, 6, 0});
  CHECK(run(i64({3}, {INT64_MAX, 1, 1}), 0, false, false) ==
        values(i64({3}, {INT64_MAX, INT64_MIN, INT64_MIN + 1})));  // wraps like int64
  {  // the axis computed at run time
    ConstInputsNode t("CumSum", 14, x, {Tensor::scalar_i64(0)}, 1, 1);
    CHECK(error_of([&] { t.infer(); }).find("must be a constant") != std::string::npos);
  }
  {
    ConstInputsNode t("CumSum", 14, x, {Tensor::scalar_i64(2)});
    CHECK(error_of([&] { t.infer(); }).find("out of range") != std::string::npos);
  }
}

TEST_CASE("indexing ops: facts") {
  const auto& reg = ops::OpRegistry::instance();
  for (const char* op : {"GatherElements", "GatherND", "ScatterElements", "ScatterND", "Trilu"}) {
    CAPTURE(op);
    const ops::OpDef* d = reg.find(op, 18);
    REQUIRE(d);
    CHECK(d->precision == ops::Precision::fp16);
    REQUIRE(d->kernels.size() == 1);
  }
  CHECK(reg.find("NonZero", 13)->const_inputs == std::vector<int>{0});
  CHECK(reg.find("NonZero", 13)->precision == ops::Precision::never);
  CHECK(reg.find("OneHot", 11)->const_inputs == std::vector<int>{1});
  CHECK(reg.find("CumSum", 14)->const_inputs == std::vector<int>{1});
  CHECK(reg.find("CumSum", 14)->precision == ops::Precision::fp32_compute);
  CHECK(reg.find("Scatter", 9)->kernels == std::vector<std::string>{"scatter_elements"});
}

// Tile and Expand: shapes, values, exact copies of every element type, and
// the errors bad inputs give.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/graph.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;

namespace {

Tensor f32(Shape s, const std::vector<float>& v) { return Tensor::from_f32(std::move(s), v); }
Tensor i64(Shape s, const std::vector<int64_t>& v) { return Tensor::from_i64(DType::int64, std::move(s), v); }

// A graph of one `op` node. Input 0 is the graph input "x"; the others are
// constants (an undefined Tensor leaves that input out), except input
// `runtime_input`, which becomes a second graph input.
struct OneNode {
  Graph g;
  Node* n = nullptr;
  TensorMap feeds;

  OneNode(const std::string& op, int opset, const Tensor& x, const std::vector<Tensor>& rest = {}, int outputs = 1,
          int runtime_input = -1) {
    g.set_opset(opset);
    std::vector<Value*> ins{graph_input("x", x)};
    for (std::size_t i = 0; i < rest.size(); ++i) {
      const std::string name = "in" + std::to_string(i + 1);
      if (!rest[i].defined()) ins.push_back(nullptr);
      else if (static_cast<int>(i + 1) == runtime_input) ins.push_back(graph_input(name, rest[i]));
      else ins.push_back(g.add_constant(name, rest[i], true));
    }
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(g.add_value("y" + std::to_string(i)));
    n = g.add_node(op, op, ins, outs);
    for (Value* o : outs) g.add_output(o);
  }

  Value* graph_input(const std::string& name, const Tensor& t) {
    Value* v = g.add_value(name);
    v->set_type(t.dtype(), t.shape());
    g.add_input(v);
    feeds[name] = t;
    return v;
  }

  std::vector<Tensor> run() {
    ops::infer_graph(g);
    const TensorMap r = run_reference(g, feeds);
    std::vector<Tensor> out;
    for (const Value* o : g.outputs()) out.push_back(r.at(o->name()));
    return out;
  }
  Tensor run1() { return run().at(0); }
  void infer() { ops::infer_graph(g); }
};

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

}  // namespace

TEST_CASE("Tile repeats along each axis") {
  OneNode t("Tile", 13, f32({2, 2}, {1, 2, 3, 4}), {i64({2}, {2, 3})});
  const Tensor y = t.run1();
  CHECK(y.shape() == Shape{4, 6});
  check_values(y, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});

  OneNode z("Tile", 6, Tensor::from_i64(DType::boolean, {2}, {1, 0}), {i64({1}, {0})});
  const Tensor e = z.run1();
  CHECK(e.shape() == Shape{0});
  CHECK(e.dtype() == DType::boolean);

  const int64_t big = (int64_t{1} << 62) + 1;
  OneNode b("Tile", 13, i64({1}, {big}), {i64({1}, {2})});
  CHECK(b.run1().to_i64() == std::vector<int64_t>{big, big});
}

TEST_CASE("Tile: bad repeats are Errors") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  {
    OneNode t("Tile", 13, x, {i64({1}, {2})});  // one value for a 2-D input
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    OneNode t("Tile", 13, x, {i64({2}, {1, -1})});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    OneNode t("Tile", 13, x, {i64({2}, {1, 2})}, 1, 1);  // not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    OneNode t("Tile", 13, x, {i64({2}, {int64_t{1} << 40, int64_t{1} << 40})});  // overflowing shape
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    OneNode t("Tile", 13, x, {Tensor::from_i64(DType::int32, {2}, {1, 2})});  // repeats must be int64
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("Expand broadcasts both ways") {
  const Tensor x = f32({3, 1}, {1, 2, 3});
  {
    OneNode t("Expand", 8, x, {i64({3}, {2, 1, 4})});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 3, 4});
    check_values(y, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  }
  {
    OneNode t("Expand", 13, x, {i64({1}, {1})});  // a smaller shape keeps the input's dims
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{3, 1});
    check_values(y, {1, 2, 3});
  }
  {
    OneNode t("Expand", 13, x, {i64({2}, {2, 1})});  // 3 vs 2
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    OneNode t("Expand", 13, x, {i64({2}, {-1, 2})});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    OneNode t("Expand", 13, x, {i64({2}, {3, 2})}, 1, 1);  // not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

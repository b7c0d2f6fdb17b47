// passes/fold_scale: a constant scalar Mul / Div on a matrix product's operand, or on the result
// of a bare product, becomes the product's alpha; the reference output does not change.
#include <doctest/doctest.h>

#include <cmath>

#include "ops/fused.h"
#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

Value* node(Graph& g, const char* op, const char* name, const std::vector<Value*>& inputs) {
  Value* out = g.add_value(std::string(name) + "_out");
  g.add_node(op, name, inputs, {out});
  return out;
}

Value* weight(Graph& g, const char* name) {
  std::vector<double> v(20);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i));
  return g.add_constant(name, Tensor::from_f64(DType::float32, {4, 5}, v), true);
}

// Runs fold_scale with the verifier; the outputs must not change.
bool fold(Graph& g) {
  ops::infer_graph(g);
  const TensorMap in = random_inputs(g, 5);
  const TensorMap before = run_reference(g, in);
  PassOptions o;
  o.verify_each = true;
  const bool changed = run_graph_stage(g, o, "fold_scale");
  const TensorMap after = run_reference(g, in);
  for (const auto& entry : before) {
    const std::vector<double> x = entry.second.to_f64(), y = after.at(entry.first).to_f64();
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) <= 1e-5 * (1 + std::fabs(x[i])));
  }
  return changed;
}

}  // namespace

TEST_CASE("fold_scale: Div by a scalar on a MatMul's A becomes a FusedMatMul's alpha") {
  Graph g;
  g.set_opset(17);
  Value* s = node(g, "Div", "scale", {input(g, "x", {2, 3, 4}), g.add_constant("c", Tensor::from_f32({}, {8.0f}))});
  g.add_output(node(g, "MatMul", "matmul", {s, weight(g, "w")}));
  CHECK(fold(g));
  REQUIRE(g.nodes().size() == 1);
  const Node& f = *g.nodes()[0];
  CHECK(f.op() == "FusedMatMul");
  CHECK(f.domain() == ops::kModelcDomain);
  CHECK(f.attr_float("alpha", 1.0) == doctest::Approx(0.125));
  CHECK(f.input(0).name() == "x");
  CHECK(f.covers() == std::vector<std::string>{"matmul", "scale"});
}

TEST_CASE("fold_scale: Mul of a bare MatMul's result becomes its alpha; a scale read elsewhere stays") {
  Graph g;
  g.set_opset(17);
  Value* y = node(g, "MatMul", "matmul", {input(g, "x", {3, 4}), weight(g, "w")});
  Value* s = node(g, "Mul", "scale", {g.add_constant("c", Tensor::from_f32({}, {0.5f})), y});
  g.add_output(node(g, "Softmax", "softmax", {s}));
  Value* x2 = input(g, "x2", {3, 4});
  Value* s2 = node(g, "Mul", "scale2", {x2, g.add_constant("c2", Tensor::from_f32({}, {3.0f}))});
  g.add_output(node(g, "MatMul", "matmul2", {s2, weight(g, "w2")}));
  g.add_output(node(g, "Relu", "relu", {s2}));
  CHECK(fold(g));
  int scales = 0;
  for (const auto& n : g.nodes()) {
    if (n->op() == "Mul") ++scales;
    if (n->name() == "matmul") CHECK(n->attr_float("alpha", 1.0) == doctest::Approx(0.5));
    if (n->name() == "matmul2") CHECK(n->op() == "MatMul");
  }
  CHECK(scales == 1);  // scale2 is read by the Relu too
}

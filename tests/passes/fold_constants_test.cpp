// passes/fold_constants: nodes whose outputs ops::infer_graph computed at import are replaced by
// their constants (structure and results); what it must keep.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

TEST_CASE("fold_constants removes shape subgraphs; the result is unchanged") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {2, 3, 4});
  Value* shape = g.add_value("shape");
  Value* y = g.add_value("Y");
  g.add_node("Shape", "shape_of", {x}, {shape});
  Value* two = g.add_constant("axes", Tensor::from_i64(DType::int64, {2}, {-1, 12}));
  g.add_node("Reshape", "reshape", {x, two}, {y});
  Value* z = g.add_value("Z");
  g.add_node("Reshape", "reshape_back", {y, shape}, {z});
  g.add_output(z);
  ops::infer_graph(g);
  TensorMap in = random_inputs(g, 1);
  const auto before = run_reference(g, in).at("Z").to_f64();
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(g, o, "fold_constants"));
  CHECK(g.nodes_of("Shape").empty());
  CHECK(g.nodes().size() == 2);
  CHECK(g.find_value("shape")->is_constant());
  CHECK(run_reference(g, in).at("Z").to_f64() == before);
}

TEST_CASE("fold_constants folds a chain of constant nodes, keeps a constant graph output's producer") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {4});
  // c = Constant [1, 2, 3, 4]; d = c * c (constant); Y = X + d; C_out = Neg(c) is a graph output.
  Value* c = g.add_value("c");
  Node* k = g.add_node("Constant", "const", {}, {c});
  Attribute value;
  value.kind = Attribute::Kind::t;
  value.t = Tensor::from_f32({4}, {1, 2, 3, 4});
  k->set_attr("value", value);
  Value* d = g.add_value("d");
  g.add_node("Mul", "square", {c, c}, {d});
  Value* y = g.add_value("Y");
  g.add_node("Add", "add", {x, d}, {y});
  Value* neg = g.add_value("C_out");
  g.add_node("Neg", "neg", {c}, {neg});
  g.add_output(y);
  g.add_output(neg);
  ops::infer_graph(g);
  REQUIRE(d->is_constant());
  REQUIRE(neg->is_constant());
  TensorMap in{{"X", Tensor::from_f32({4}, {10, 20, 30, 40})}};
  const TensorMap before = run_reference(g, in);

  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(g, o, "fold_constants"));
  // The Constant and the Mul are gone; Add reads d as a producer-less constant. Neg writes a graph
  // output, so it stays (a graph output needs a kernel that writes the caller's buffer).
  CHECK(g.nodes_of("Constant").empty());
  CHECK(g.nodes_of("Mul").empty());
  CHECK(g.nodes_of("Add").size() == 1);
  CHECK(g.nodes_of("Neg").size() == 1);
  CHECK(d->producer() == nullptr);
  CHECK(d->is_constant());
  CHECK(&g.nodes_of("Add")[0]->input(1) == d);
  const TensorMap after = run_reference(g, in);
  CHECK(after.at("Y").to_f64() == before.at("Y").to_f64());
  CHECK(after.at("C_out").to_f64() == before.at("C_out").to_f64());
  // A second run finds nothing more.
  CHECK_FALSE(fold_constants(g, o));
}

TEST_CASE("fold_constants leaves a graph without constant nodes unchanged") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {2});
  Value* y = g.add_value("Y");
  g.add_node("Relu", "relu", {x}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  const std::string text = g.to_string();
  CHECK_FALSE(fold_constants(g, PassOptions{}));
  CHECK(g.to_string() == text);
}

// passes/simplify: the no-op nodes it removes and the ones it must keep (structure and results).
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

TEST_CASE("simplify removes Identity, Dropout and no-op Cast without changing results") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {2, 2});
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  Value* c = g.add_value("c");
  Value* y = g.add_value("Y");
  g.add_node("Identity", "id", {x}, {a});
  g.add_node("Relu", "relu", {a}, {b});
  Node* cast = g.add_node("Cast", "cast", {b}, {c});
  cast->set_attr_int("to", 1);
  g.add_node("Dropout", "drop", {c}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  TensorMap in{{"X", Tensor::from_f32({2, 2}, {-1, 2, -3, 4})}};
  const auto before = run_reference(g, in).at("Y").to_f64();

  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(g, o, "simplify"));
  REQUIRE(g.nodes().size() == 1);
  CHECK(g.nodes()[0]->op() == "Relu");
  CHECK(&g.nodes()[0]->input(0) == x);
  CHECK(g.outputs()[0]->name() == "Y");  // the graph output keeps its name
  CHECK(run_reference(g, in).at("Y").to_f64() == before);
  CHECK_FALSE(simplify(g, o));
}

TEST_CASE("simplify removes a Concat of one input") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {1, 3, 2, 2});
  Value *r = g.add_value("r"), *c = g.add_value("c"), *y = g.add_value("Y");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Concat", "concat", {r}, {c})->set_attr_int("axis", 1);
  g.add_node("Sigmoid", "sigmoid", {c}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  CHECK(simplify(g, PassOptions{}));
  REQUIRE(g.nodes().size() == 2);
  CHECK(&g.nodes()[1]->input(0) == &g.nodes()[0]->output(0));
}

TEST_CASE("simplify keeps an Identity from a graph input straight to a graph output") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {3});
  Value* y = g.add_value("Y");
  g.add_node("Identity", "id", {x}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  CHECK_FALSE(simplify(g, PassOptions{}));
  CHECK(g.nodes().size() == 1);
}

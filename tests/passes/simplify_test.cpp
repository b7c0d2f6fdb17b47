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

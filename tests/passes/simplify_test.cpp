#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "reference/interpreter.h"

using namespace modelc;

namespace {
Value* input(Graph& g, const char* name, Shape s) {
  Value* v = g.add_value(name);
  v->set_type(DType::float32, std::move(s));
  g.add_input(v);
  return v;
}
}  // namespace

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
  CHECK(run_pass(g, o, "simplify", simplify));
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
  CHECK(run_pass(g, o, "fold_constants", fold_constants));
  CHECK(g.nodes_of("Shape").empty());
  CHECK(g.nodes().size() == 2);
  CHECK(g.find_value("shape")->is_constant());
  CHECK(run_reference(g, in).at("Z").to_f64() == before);
}

TEST_CASE("pipeline rejects an unknown --disable-pass and honours a known one") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "X", {1});
  Value* y = g.add_value("Y");
  Value* a = g.add_value("a");
  g.add_node("Identity", "id", {x}, {a});
  g.add_node("Relu", "relu", {a}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  PassOptions o;
  o.disabled = {"no_such_pass"};
  CHECK_THROWS_AS(run_pipeline(g, o), Error);
  o.disabled = {"simplify"};
  run_pipeline(g, o);
  CHECK(g.nodes().size() == 2);
}

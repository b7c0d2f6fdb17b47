#include <doctest/doctest.h>

#include "ir/graph.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;

namespace {
// X -> Relu -> Y, the smallest complete graph.
std::unique_ptr<Graph> relu_graph() {
  auto g = std::make_unique<Graph>();
  g->set_opset(17);
  Value* x = g->add_value("X");
  x->set_type(DType::float32, {2, 3});
  g->add_input(x);
  Value* y = g->add_value("Y");
  g->add_node("Relu", "relu0", {x}, {y});
  g->add_output(y);
  return g;
}
}  // namespace

TEST_CASE("verifier accepts a well-formed graph and the printer shows it") {
  auto g = relu_graph();
  ops::infer_graph(*g);
  CHECK_NOTHROW(g->verify());
  const std::string text = g->to_string();
  CHECK(text.find("input  X: float32[2x3]") != std::string::npos);
  CHECK(text.find("Y: float32[2x3] = Relu(X)  # relu0") != std::string::npos);
  CHECK(text.find("output Y: float32[2x3]") != std::string::npos);
}

TEST_CASE("verifier rejects an undefined input, a missing type and out-of-order nodes") {
  SUBCASE("undefined input") {
    auto g = relu_graph();
    ops::infer_graph(*g);
    Value* dangling = g->add_value("nowhere");
    dangling->set_type(DType::float32, {2, 3});
    g->nodes()[0]->set_input(0, dangling);
    CHECK_THROWS_WITH_AS(g->verify(), doctest::Contains("'nowhere' is not defined"), Error);
  }
  SUBCASE("output without type") {
    auto g = relu_graph();  // not inferred
    CHECK_THROWS_WITH_AS(g->verify(), doctest::Contains("has no type"), Error);
  }
  SUBCASE("consumer before producer") {
    auto g = std::make_unique<Graph>();
    g->set_opset(17);
    Value* x = g->add_value("X");
    x->set_type(DType::float32, {4});
    g->add_input(x);
    Value* a = g->add_value("A");
    Value* b = g->add_value("B");
    Node* second = g->add_node("Relu", "second", {x}, {a});
    g->add_node("Relu", "first", {a}, {b}, second);  // reads A before it is produced
    g->add_output(b);
    a->set_type(DType::float32, {4});
    b->set_type(DType::float32, {4});
    CHECK_THROWS_WITH_AS(g->verify(), doctest::Contains("comes later"), Error);
  }
}

TEST_CASE("users stay in step with rewiring; dead nodes are removed") {
  auto g = relu_graph();
  Value* x = g->find_value("X");
  Value* y = g->find_value("Y");
  Value* z = g->add_value("Z");
  g->add_node("Relu", "unused", {x}, {z});
  CHECK(x->users().size() == 2);
  CHECK(g->remove_dead() == 1);
  CHECK(x->users().size() == 1);
  CHECK(g->find_value("Z") == nullptr);
  Value* y2 = g->add_value("Y");  // name taken: made unique
  CHECK(y2->name() == "Y_1");
  CHECK(y->producer()->name() == "relu0");
}

TEST_CASE("clone: the same graph, rewritten apart from the original") {
  auto g = relu_graph();
  Value* w = g->add_constant("W", Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6}), true);
  Value* s = g->add_value("S");
  Node* add = g->add_node("Add", "add", {g->find_value("Y"), w}, {s});
  g->add_output(s);
  ops::infer_graph(*g);
  add->set_attr_int("k", 3);
  add->set_covers({"a", "b"});
  const std::unique_ptr<Graph> c = g->clone();
  CHECK_NOTHROW(c->verify());
  CHECK(c->to_string(true) == g->to_string(true));
  Value* cy = c->find_value("Y");
  REQUIRE(cy);
  CHECK(cy != g->find_value("Y"));
  REQUIRE(cy->users().size() == 1);
  CHECK(cy->users()[0]->covers() == std::vector<std::string>{"a", "b"});
  CHECK(cy->users()[0]->attr_int("k", 0) == 3);
  CHECK(cy->is_graph_output());
  CHECK(c->find_value("W")->constant().raw() == w->constant().raw());  // data shared until written
  // Rewriting the copy leaves the original as it was.
  c->replace_all_uses(cy, c->find_value("X"));
  CHECK(c->add_node("Relu", "relu0", {c->find_value("X")}, {c->add_value("Z")})->name() == "relu0_1");
  CHECK(g->find_value("Y")->users().size() == 1);
  CHECK(&add->input(0) == g->find_value("Y"));
  CHECK(g->find_value("Z") == nullptr);
}

TEST_CASE("unsupported op and opset give an error naming the node") {
  auto g = std::make_unique<Graph>();
  g->set_opset(17);
  Value* x = g->add_value("X");
  x->set_type(DType::float32, {1});
  g->add_input(x);
  Value* y = g->add_value("Y");
  g->add_node("NoSuchOp", "n0", {x}, {y});
  g->add_output(y);
  CHECK_THROWS_WITH_AS(ops::infer_graph(*g), doctest::Contains("node 'n0' (NoSuchOp, opset 17)"), Error);
  auto u = ops::find_unsupported(*g);
  REQUIRE(u.size() == 1);
  CHECK(u[0].op == "NoSuchOp");

  auto g2 = relu_graph();
  g2->nodes()[0]->set_opset(5);
  CHECK_THROWS_WITH_AS(ops::infer_graph(*g2), doctest::Contains("no form of Relu is supported at opset 5"), Error);
  auto g3 = relu_graph();
  g3->nodes()[0]->set_attr_int("bogus", 1);
  CHECK_THROWS_WITH_AS(ops::infer_graph(*g3), doctest::Contains("attribute 'bogus'"), Error);
}

TEST_CASE("reference run checks inputs") {
  auto g = relu_graph();
  ops::infer_graph(*g);
  TensorMap in;
  in["X"] = Tensor::from_f32({2, 3}, {-1, 2, -3, 4, -5, 6});
  TensorMap out = run_reference(*g, in);
  CHECK(out.at("Y").to_f64() == std::vector<double>{0, 2, 0, 4, 0, 6});
  in["X"] = Tensor::from_f32({3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK_THROWS_WITH_AS(run_reference(*g, in), doctest::Contains("input 'X' expects float32[2x3]"), Error);
  CHECK_THROWS_WITH_AS(run_reference(*g, {}), doctest::Contains("was not given"), Error);
  TensorMap r1 = random_inputs(*g, 7), r2 = random_inputs(*g, 7);
  CHECK(r1.at("X").to_f64() == r2.at("X").to_f64());
}

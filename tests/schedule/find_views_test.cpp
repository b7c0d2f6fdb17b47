// The first schedule stages, each run alone on the Schedule the stages before it left:
// remove_dead, find_views, claim_outputs and list_kernels.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "tests/codegen/test_families.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::before;
using modelc::test::buffer_of;
using modelc::test::input;
using modelc::test::step_of;

namespace {

Value* shape_const(Graph& g, const char* name, std::vector<int64_t> dims) {
  const int64_t n = static_cast<int64_t>(dims.size());
  return g.add_constant(name, Tensor::from_i64(DType::int64, {n}, dims), true);
}

Value* weight(Graph& g, const char* name, Shape s) {
  return g.add_constant(name, Tensor::from_f64(DType::float32, s, std::vector<double>(static_cast<std::size_t>(num_elements(s)), 0.5)),
                        true);
}

LowerOptions options() {
  test::register_test_families();
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_75"};
  o.run_passes = false;  // the graph as built: the schedule stages alone
  o.passes.verify_each = true;
  return o;
}

// x -> Relu -> r -> Reshape -> v -> Flatten -> f -> Add(W) -> y, and a dead Neg -> Abs chain on x.
struct Chain {
  Graph g;
  Chain() {
    g.set_opset(17);
    Value* x = input(g, "x", {2, 3, 4});
    Value *r = g.add_value("r"), *v = g.add_value("v"), *f = g.add_value("f"), *y = g.add_value("y");
    g.add_node("Relu", "relu", {x}, {r});
    g.add_node("Reshape", "reshape", {r, shape_const(g, "shape", {6, 4})}, {v});
    g.add_node("Flatten", "flatten", {v}, {f});
    g.add_node("Add", "add", {f, weight(g, "W", {6, 4})}, {y});
    Value *n = g.add_value("n"), *a = g.add_value("a");
    g.add_node("Neg", "neg", {x}, {n});
    g.add_node("Abs", "abs", {n}, {a});
    g.add_output(y);
    ops::infer_graph(g);
  }
};

}  // namespace

TEST_CASE("remove_dead stage: the nodes no output needs leave the graph, through chains") {
  Chain c;
  const LowerOptions o = options();
  Schedule s = before(c.g, o, "remove_dead");
  CHECK(c.g.nodes().size() == 6);
  CHECK(run_schedule_stage(s, o, "remove_dead"));
  CHECK(c.g.nodes().size() == 4);
  CHECK(c.g.nodes_of("Neg").empty());
  CHECK(c.g.nodes_of("Abs").empty());
  CHECK_FALSE(run_schedule_stage(s, o, "remove_dead"));  // nothing left to remove
}

TEST_CASE("find_views stage: each view is a reshape step in its root's buffer, chains included") {
  Chain c;
  const LowerOptions o = options();
  Schedule s = before(c.g, o, "find_views");
  CHECK(s.buffers.empty());
  CHECK(run_schedule_stage(s, o, "find_views"));
  REQUIRE(s.buffers.size() == 1);
  const Buffer& b = buffer_of(s, "r");
  CHECK(b.value->name() == "r");
  CHECK(b.space == Space::arena);
  REQUIRE(b.views.size() == 2);
  const ViewStep* v = step_of(s, "v");
  REQUIRE(v);
  CHECK(v->kind == ViewStep::Kind::reshape);
  CHECK(v->from->name() == "r");
  CHECK(v->node->name() == "reshape");
  const ViewStep* f = step_of(s, "f");
  REQUIRE(f);
  CHECK(f->from->name() == "v");  // the chain, step by step
  CHECK(step_of(s, "r") == nullptr);
  CHECK(s.kernels.empty());  // none until list_kernels
}

TEST_CASE("find_views stage: a view of a model input is in the input's buffer; a used second output is refused") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4});
  Value *d = g.add_value("d"), *y = g.add_value("y");
  g.add_node("Identity", "id", {x}, {d});
  g.add_node("Relu", "relu", {d}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  const LowerOptions o = options();
  Schedule s = before(g, o, "find_views");
  CHECK(run_schedule_stage(s, o, "find_views"));
  const Buffer& b = buffer_of(s, "d");
  CHECK(b.value->name() == "x");
  CHECK(b.space == Space::input);
  CHECK(b.index == 0);
  CHECK(b.offset == 0);  // the caller's pointer: placed from the start

  Graph h;
  h.set_opset(17);
  Value* hx = input(h, "x", {4});
  Value *hy = h.add_value("y"), *mask = h.add_value("mask"), *z = h.add_value("z");
  h.add_node("Dropout", "drop", {hx}, {hy, mask});
  h.add_node("Not", "not", {mask}, {z});
  h.add_output(hy);
  h.add_output(z);
  ops::infer_graph(h);
  mask->clear_constant();  // as if its value were not known at compile time
  Schedule t = before(h, o, "find_views");
  CHECK_THROWS_WITH_AS(run_schedule_stage(t, o, "find_views"), doctest::Contains("'drop'"), Error);
}

TEST_CASE("claim_outputs stage: each output owns its root's buffer, or gets a copy kernel's") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4});
  Value *r = g.add_value("r"), *rv = g.add_value("rv");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Reshape", "reshape", {r, shape_const(g, "s", {2, 2})}, {rv});
  Value* c = weight(g, "C", {3});
  g.add_output(x);   // 0: a model input: copied
  g.add_output(r);   // 1: claims r's buffer
  g.add_output(rv);  // 2: a view of r, whose buffer output 1 owns: copied
  g.add_output(c);   // 3: a constant: copied
  ops::infer_graph(g);
  const LowerOptions o = options();
  Schedule s = before(g, o, "claim_outputs");
  CHECK(run_schedule_stage(s, o, "claim_outputs"));
  const Buffer& rb = buffer_of(s, "r");
  CHECK(rb.space == Space::output);
  CHECK(rb.index == 1);
  CHECK(rb.copy == nullptr);
  int copies = 0;
  for (const Buffer& b : s.buffers) {
    if (!b.copy) continue;
    ++copies;
    CHECK(b.space == Space::output);
    CHECK(b.copy->op() == "Identity");
    CHECK(b.value == &b.copy->output(0));
    CHECK(g.outputs()[static_cast<std::size_t>(b.index)] == b.value);  // the graph's output is the copy now
  }
  CHECK(copies == 3);
  CHECK(buffer_of(s, "x_copy").index == 0);
  CHECK(buffer_of(s, "rv_copy").index == 2);
  CHECK(buffer_of(s, "C_copy").index == 3);
}

TEST_CASE("list_kernels stage: the kernels in order with their families, sources and views") {
  Chain c;
  LowerOptions o = options();
  o.family_substitutes["elementwise"] = "test_elementwise";
  Schedule s = before(c.g, o, "list_kernels");
  CHECK(run_schedule_stage(s, o, "list_kernels"));
  REQUIRE(s.kernels.size() == 2);  // the views and the dead chain run none
  const Kernel& relu = s.kernels[0];
  const Kernel& add = s.kernels[1];
  CHECK(relu.id == "k0");
  CHECK(add.id == "k1");
  CHECK(relu.family_name() == "test_elementwise");
  CHECK(relu.source.node->name() == "relu");
  CHECK(add.source.inputs.at(0)->name() == "f");
  CHECK(add.nodes == std::vector<std::string>{"add"});
  // The Add reads f: a view of r's buffer with f's shape; W in the weights; y the caller's.
  const TensorView& f = add.inputs[0];
  CHECK(f.value == "f");
  CHECK(f.buffer == relu.outputs[0].buffer);
  CHECK(f.shape == Shape{6, 4});
  CHECK(f.strides == std::vector<int64_t>{4, 1});
  CHECK(f.buffer_offset == 0);
  CHECK(f.offset == -1);  // the arena is planned last
  CHECK(add.inputs[1].space == Space::weights);
  CHECK(add.inputs[1].offset == -1);
  CHECK(add.outputs[0].space == Space::output);
  CHECK(add.outputs[0].offset == 0);
  // A buffer for every value a kernel touches, and no other (the Reshape's shape is read by none).
  CHECK(s.buffers.size() == 4);
  CHECK(buffer_of(s, "r").bytes == 96);
  CHECK(buffer_of(s, "W").space == Space::weights);
  CHECK(buffer_of(s, "x").space == Space::input);
}

TEST_CASE("list_kernels stage: a family this build lacks is one error naming every node that needs one") {
  Chain c;
  LowerOptions o = options();
  o.family_substitutes["elementwise"] = "no_such_family";
  Schedule s = before(c.g, o, "list_kernels");
  CHECK_THROWS_WITH_AS(run_schedule_stage(s, o, "list_kernels"),
                       doctest::Contains("2 nodes need one: 'relu' (Relu: no_such_family), 'add' (Add: no_such_family)"),
                       Error);
}

// The schedule stages through lower(): views, output copies, weights placement, the arena, errors.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/memory_plan.h"
#include "tests/codegen/test_families.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

Value* weight(Graph& g, const char* name, Shape s, float base) {
  std::vector<float> d(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = base + 0.5f * static_cast<float>(i);
  return g.add_constant(name, Tensor::from_f32(s, d), true);
}

Value* shape_const(Graph& g, const char* name, std::vector<int64_t> dims) {
  const int64_t n = static_cast<int64_t>(dims.size());
  return g.add_constant(name, Tensor::from_i64(DType::int64, {n}, dims), true);
}

LowerOptions test_options() {
  test::register_test_families();
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_86", "sm_75"};
  o.family_substitutes["elementwise"] = "test_elementwise";
  o.passes.verify_each = true;
  return o;
}

}  // namespace

TEST_CASE("lower: views give no kernel and alias their input's buffer; weights and outputs") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {2, 3, 4});
  Value* r = g.add_value("r");
  Value* v = g.add_value("v");
  Value* y = g.add_value("y");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Reshape", "reshape", {r, shape_const(g, "shape", {6, 4})}, {v});
  g.add_node("Add", "add", {v, weight(g, "W", {6, 4}, -3)}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());

  REQUIRE(s.kernels.size() == 2);
  const Kernel& relu = s.kernels[0];
  const Kernel& add = s.kernels[1];
  CHECK(relu.id == "k0");
  CHECK(add.id == "k1");
  CHECK(relu.family_name() == "test_elementwise");
  CHECK(std::get<GridStrideTactic>(relu.tactic).block == 128);
  CHECK(relu.note == "test family (sm_75)");  // planned for the oldest arch
  CHECK(relu.nodes == std::vector<std::string>{"relu"});
  CHECK(relu.inputs[0].space == Space::input);
  CHECK(relu.inputs[0].index == 0);
  CHECK(relu.outputs[0].space == Space::arena);
  // The Add reads r through the view: same buffer, the view's shape.
  CHECK(add.inputs[0].space == Space::arena);
  CHECK(add.inputs[0].offset == relu.outputs[0].offset);
  CHECK(add.inputs[0].shape == Shape{6, 4});
  CHECK(add.inputs[0].strides == std::vector<int64_t>{4, 1});
  CHECK(add.inputs[0].value == "v");
  CHECK(add.inputs[1].space == Space::weights);
  CHECK(add.inputs[1].offset == 0);
  CHECK(add.outputs[0].space == Space::output);
  CHECK(add.outputs[0].index == 0);
  // Only W is in the blob (the Reshape's shape is read by no kernel).
  REQUIRE(s.weights.size() == 1);
  CHECK(s.weights[0].value == "W");
  CHECK(s.weights_bytes == 256);
  CHECK(s.arena_bytes == 256);
  CHECK(s.activation_bytes_total == 256);
  CHECK(s.inputs.size() == 1);
  CHECK(s.outputs[0].name == "y");
  CHECK(s.archs == std::vector<std::string>{"sm_86", "sm_75"});
}

TEST_CASE("lower: a view feeding a graph output makes the producer write the output buffer") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {2, 8});
  Value* r = g.add_value("r");
  Value* y = g.add_value("y");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Flatten", "flat", {r}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].outputs[0].space == Space::output);
  CHECK(s.kernels[0].outputs[0].shape == Shape{2, 8});
  CHECK(s.arena_bytes == 0);
}

// precision leaves a Cast to float16 of a value that became float16 when it writes a graph output
// (and --disable-pass simplify leaves every such Cast): it copies bits, so it is a view.
TEST_CASE("lower: a Cast or CastLike to the type its input has is a view, never a kernel") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {2, 8}, DType::float16);
  Value *r = g.add_value("r"), *c = g.add_value("c"), *y = g.add_value("y"), *z = g.add_value("z");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Cast", "cast", {r}, {c})->set_attr_int("to", static_cast<int64_t>(DType::float16));
  g.add_node("Sigmoid", "sigmoid", {c}, {y});
  g.add_node("CastLike", "cast_like", {y, x}, {z});
  g.add_output(z);
  ops::infer_graph(g);
  LowerOptions o = test_options();
  o.passes.disabled = {"simplify"};
  const Schedule s = lower(g, o);
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].op.type == "Relu");
  CHECK(s.kernels[1].op.type == "Sigmoid");
  CHECK(s.kernels[1].inputs[0].offset == s.kernels[0].outputs[0].offset);
  CHECK(s.kernels[1].outputs[0].space == Space::output);  // writes z through the CastLike view
}

TEST_CASE("lower: outputs that are inputs, constants, or share a buffer get copy kernels") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4});
  Value* r = g.add_value("r");
  Value* rv = g.add_value("rv");
  Value* xv = g.add_value("xv");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Reshape", "reshape", {r, shape_const(g, "s", {2, 2})}, {rv});
  g.add_node("Reshape", "reshape_x", {x, shape_const(g, "s2", {2, 2})}, {xv});
  Value* c = weight(g, "C", {3}, 1);
  g.add_output(x);   // 0: a graph input
  g.add_output(r);   // 1: claims r's buffer
  g.add_output(rv);  // 2: a view of r, whose buffer output 1 has: copy
  g.add_output(c);   // 3: a constant: copy from the weights
  g.add_output(xv);  // 4: a view of an input: copy
  g.add_output(r);   // 5: the same value twice: copy
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());
  // Output names stay the model's.
  REQUIRE(s.outputs.size() == 6);
  CHECK(s.outputs[0].name == "x");
  CHECK(s.outputs[2].name == "rv");
  CHECK(s.outputs[3].name == "C");
  int copies = 0;
  for (const Kernel& k : s.kernels) {
    if (k.op.type != "Identity") continue;
    ++copies;
    CHECK(k.family_name() == "test_elementwise");  // "elementwise", substituted in the test
    CHECK(k.outputs[0].space == Space::output);
  }
  CHECK(copies == 5);
  REQUIRE(s.kernels.size() == 6);
  CHECK(s.kernels[0].op.type == "Relu");
  CHECK(s.kernels[0].outputs[0].space == Space::output);
  CHECK(s.kernels[0].outputs[0].index == 1);
  for (const Kernel& k : s.kernels) {
    if (k.op.type != "Identity") continue;
    const int out = k.outputs[0].index;
    const TensorView& in = k.inputs[0];
    if (out == 0 || out == 4) CHECK(in.space == Space::input);
    if (out == 2 || out == 5) CHECK((in.space == Space::output && in.index == 1));
    if (out == 3) CHECK(in.space == Space::weights);
    if (out == 4) CHECK(in.shape == Shape{2, 2});
  }
  REQUIRE(s.weights.size() == 1);
  CHECK(s.weights[0].value == "C");
}

TEST_CASE("lower: weights in order of first use, 256-aligned, identical data stored once") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {100});
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  Value* y = g.add_value("y");
  g.add_node("Add", "add1", {x, weight(g, "B1", {100}, 1)}, {a});
  g.add_node("Mul", "mul", {a, weight(g, "B2", {100}, 2)}, {b});
  g.add_node("Sub", "sub", {b, weight(g, "B3", {100}, 1)}, {y});  // same bytes as B1
  g.add_output(y);
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());
  REQUIRE(s.weights.size() == 2);
  CHECK(s.weights[0].value == "B1");
  CHECK(s.weights[0].offset == 0);
  CHECK(s.weights[1].value == "B2");
  CHECK(s.weights[1].offset == 512);  // 400 bytes, aligned up
  CHECK(s.weights_bytes == 1024);
  CHECK(s.kernels[2].inputs[1].offset == 0);  // B3 reads B1's bytes
  CHECK(s.kernels[2].inputs[1].value == "B3");
}

TEST_CASE("lower: a chain reuses the arena") {
  Graph g;
  g.set_opset(17);
  Value* prev = input(g, "x", {1000});
  for (int i = 0; i < 6; ++i) {
    Value* v = g.add_value("v" + std::to_string(i));
    g.add_node("Relu", "relu" + std::to_string(i), {prev}, {v});
    prev = v;
  }
  g.add_output(prev);
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());
  REQUIRE(s.kernels.size() == 6);
  CHECK(s.activation_bytes_total == 5 * 4096);
  CHECK(s.arena_bytes == 2 * 4096);
  CHECK(s.kernels[1].inputs[0].offset == s.kernels[0].outputs[0].offset);
  CHECK(s.kernels[1].outputs[0].offset != s.kernels[1].inputs[0].offset);
}

TEST_CASE("lower: compile-time nodes and dead nodes give no kernel") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {2, 3});
  Value* shp = g.add_value("shp");
  Value* dead = g.add_value("dead");
  Value* y = g.add_value("y");
  g.add_node("Shape", "shape", {x}, {shp});  // constant: folded
  g.add_node("Relu", "unused", {x}, {dead});  // nobody reads it
  Value* dead2 = g.add_value("dead2");
  g.add_node("Relu", "unused2", {dead}, {dead2});  // ... nor this, so neither runs
  g.add_node("Relu", "relu", {x}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o = test_options();
  o.run_passes = false;  // as if fold_constants were disabled
  const Schedule s = lower(g, o);
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].nodes[0] == "relu");
}

TEST_CASE("lower: a used Dropout mask is a constant, copied from the weights") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4});
  Value* y = g.add_value("y");
  Value* mask = g.add_value("mask");
  g.add_node("Dropout", "drop", {x}, {y, mask});
  g.add_output(y);
  g.add_output(mask);
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());
  int mask_copies = 0;
  for (const Kernel& k : s.kernels) {
    if (k.outputs.size() == 1 && k.outputs[0].value == "mask_copy") {
      ++mask_copies;
      REQUIRE(k.inputs.size() == 1);
      CHECK(k.inputs[0].space == Space::weights);
      CHECK(k.outputs[0].space == Space::output);
    }
  }
  CHECK(mask_copies == 1);
}

TEST_CASE("lower: errors name the node") {
  SUBCASE("a family that is not built in") {
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "x", {4, 4});
    Value* y = g.add_value("y");
    g.add_node("Softmax", "sm", {x}, {y});
    g.add_output(y);
    ops::infer_graph(g);
    LowerOptions o = test_options();
    o.family_substitutes["softmax"] = "no_such_family";
    try {
      lower(g, o);
      FAIL("no error");
    } catch (const Error& e) {
      const std::string m = e.what();
      CHECK(m.find("'sm'") != std::string::npos);
      CHECK(m.find("Softmax") != std::string::npos);
      CHECK(m.find("no_such_family") != std::string::npos);
    }
  }
  SUBCASE("a compile-time op whose inputs are not constant") {
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "x", {2, 3});
    Value* shp = g.add_value("shp");
    g.add_node("Shape", "shape_node", {x}, {shp});
    g.add_output(shp);
    ops::infer_graph(g);
    shp->clear_constant();
    LowerOptions o = test_options();
    o.run_passes = false;
    try {
      lower(g, o);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("'shape_node'") != std::string::npos);
      CHECK(std::string(e.what()).find("compile time") != std::string::npos);
    }
  }
  SUBCASE("an arch modelc does not target") {
    CHECK_THROWS_AS(arch_number("sm_70"), Error);
    CHECK_THROWS_AS(arch_number("compute_80"), Error);
    CHECK_THROWS_AS(arch_number("sm_"), Error);
    CHECK(arch_number("sm_90") == 90);
    CHECK(target_for("sm_90").sm_count == 132);
  }
}

TEST_CASE("lower: a kernel of a fused node lists every ONNX node it covers") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {2, 4});
  Value* m = g.add_value("m");
  Value* a = g.add_value("a");
  Value* y = g.add_value("y");
  g.add_node("MatMul", "mm", {x, weight(g, "W", {4, 3}, 0.5f)}, {m});
  g.add_node("Add", "bias", {m, weight(g, "b", {3}, 1.0f)}, {a});
  g.add_node("Relu", "act", {a}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o = test_options();
  o.family_substitutes["gemm"] = "test_elementwise";  // planning only: nothing is emitted here
  o.passes.fuse_epilogue = true;
  const Schedule s = lower(g, o);
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].op.type == "FusedMatMul");
  CHECK(s.kernels[0].nodes == std::vector<std::string>{"mm", "bias", "act"});
}

TEST_CASE("lower: a model without inputs: its constant output is copied from the weights") {
  Graph g;
  g.set_opset(17);
  g.add_output(weight(g, "C", {3}, 2.0f));
  ops::infer_graph(g);
  const Schedule s = lower(g, test_options());
  CHECK(s.inputs.empty());
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].inputs[0].space == Space::weights);
  CHECK(s.kernels[0].outputs[0].space == Space::output);
  CHECK(s.arena_bytes == 0);
}

// The fold_boundary_casts stage (schedule/fold_casts.cpp) under --fp16: the precision pass's Casts at
// the model's boundaries fold into the elementwise / softmax / normalization kernels beside them
// (they read the FP32 input, or store the FP32 output, themselves); elsewhere they stay Cast
// kernels. The Schedule carries the precision report.
#include <doctest/doctest.h>

#include "codegen/family.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

LowerOptions fp16_options() {
  LowerOptions o;
  o.name = "t";
  o.passes.fp16 = true;
  o.passes.verify_each = true;
  return o;
}

bool has_family(const char* f) { return FamilyRegistry::instance().find(f) != nullptr; }

// x [4, 8] -> Relu -> Softmax -> y; returns x.
Value* relu_softmax(Graph& g) {
  g.set_opset(17);
  Value* x = input(g, "x", {4, 8});
  Value* r = g.add_value("r");
  Value* y = g.add_value("y");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Softmax", "softmax", {r}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  return x;
}

}  // namespace

TEST_CASE("lower --fp16: boundary Casts fold into the first and last elementwise/softmax kernels") {
  REQUIRE(has_family("elementwise"));
  REQUIRE(has_family("softmax"));
  Graph g;
  relu_softmax(g);
  const Schedule s = lower(g, fp16_options());
  REQUIRE(s.kernels.size() == 2);
  const Kernel& relu = s.kernels[0];
  const Kernel& softmax = s.kernels[1];
  CHECK(relu.op.type == "Relu");
  CHECK(relu.inputs[0].space == Space::input);
  CHECK(relu.inputs[0].dtype == DType::float32);
  CHECK(relu.outputs[0].dtype == DType::float16);
  CHECK(relu.note.find("boundary Cast 'x_fp16' folded in") != std::string::npos);
  CHECK(softmax.op.type == "Softmax");
  CHECK(softmax.inputs[0].dtype == DType::float16);
  CHECK(softmax.outputs[0].space == Space::output);
  CHECK(softmax.outputs[0].dtype == DType::float32);
  CHECK(softmax.nodes == std::vector<std::string>{"softmax"});  // ONNX nodes only
  CHECK(s.inputs[0].dtype == DType::float32);
  CHECK(s.outputs[0].dtype == DType::float32);
  REQUIRE(s.precision.has_value());
  CHECK(s.precision->fp16_nodes == 2);
}

TEST_CASE("lower --fp16: a Cast stays where a reader cannot convert, or without --fp16") {
  REQUIRE(has_family("elementwise"));
  REQUIRE(has_family("transpose"));
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4, 4});
  Value* r = g.add_value("r");
  Value* t = g.add_value("t");
  Value* y = g.add_value("y");
  g.add_node("Relu", "relu", {x}, {r});
  g.add_node("Transpose", "transpose", {x}, {t})->set_attr_ints("perm", {1, 0});
  g.add_node("Add", "add", {r, t}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  const Schedule s = lower(g, fp16_options());
  // x is read by Relu and Transpose (a copy of raw bits: one element type): its Cast stays.
  REQUIRE(s.kernels.size() == 4);
  CHECK(s.kernels[0].op.type == "Cast");
  CHECK(s.kernels[0].inputs[0].space == Space::input);
  CHECK(s.kernels[0].outputs[0].dtype == DType::float16);
  // The last kernel (Add) stores the FP32 output itself.
  CHECK(s.kernels[3].op.type == "Add");
  CHECK(s.kernels[3].outputs[0].space == Space::output);
  CHECK(s.kernels[3].outputs[0].dtype == DType::float32);
  CHECK(s.kernels[3].inputs[0].dtype == DType::float16);
}

TEST_CASE("lower --fp16: a reduction reads the FP32 input and writes the FP32 output itself") {
  REQUIRE(has_family("reduce"));
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4, 1000});
  Value* y = g.add_value("y");
  g.add_node("ReduceSum", "sum", {x}, {y})->set_attr_int("keepdims", 0);
  g.add_output(y);
  ops::infer_graph(g);
  const Schedule s = lower(g, fp16_options());
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].inputs[0].dtype == DType::float32);
  CHECK(s.kernels[0].outputs[0].dtype == DType::float32);  // a sum beyond 65504 stays finite
}

TEST_CASE("lower: no precision report and no folding without --fp16") {
  REQUIRE(has_family("elementwise"));
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4, 8});
  Value* h = g.add_value("h");
  Value* r = g.add_value("r");
  Value* y = g.add_value("y");
  g.add_node("Cast", "to_half", {x}, {h})->set_attr_int("to", static_cast<int64_t>(DType::float16));
  g.add_node("Relu", "relu", {h}, {r});
  g.add_node("Cast", "to_float", {r}, {y})->set_attr_int("to", static_cast<int64_t>(DType::float32));
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o;
  o.name = "t";
  const Schedule s = lower(g, o);
  CHECK_FALSE(s.precision.has_value());
  REQUIRE(s.kernels.size() == 3);  // the model's own Casts run: they round as the model says
  CHECK(s.kernels[0].op.type == "Cast");
  CHECK(s.kernels[2].op.type == "Cast");
}

TEST_CASE("fold_boundary_casts stage: the Casts leave the kernel list, their neighbours read and write across them") {
  Graph g;
  Value* x = relu_softmax(g);
  const LowerOptions o = fp16_options();
  Schedule s = lower_before(g, o, "fold_boundary_casts");
  REQUIRE(s.kernels.size() == 4);
  const std::string in_cast = s.kernels[0].op.name, out_cast = s.kernels[3].op.name;
  CHECK(s.kernels[0].op.type == "Cast");
  CHECK(s.kernels[3].op.type == "Cast");
  const std::size_t buffers = s.buffers.size();
  CHECK(run_schedule_stage(s, o, "fold_boundary_casts"));
  REQUIRE(s.kernels.size() == 2);
  const Kernel& relu = s.kernels[0];
  const Kernel& softmax = s.kernels[1];
  CHECK(relu.id == "k0");
  CHECK(relu.folded_casts == std::vector<std::string>{in_cast});
  CHECK(softmax.folded_casts == std::vector<std::string>{out_cast});
  // The Relu's source input is the model input itself (its view: the input, FP32); the Softmax's
  // source output the model output (FP32); the FP16 copies at the edges have no buffer any more.
  CHECK(relu.source.inputs[0] == x);
  CHECK(relu.inputs[0].space == Space::input);
  CHECK(relu.inputs[0].dtype == DType::float32);
  CHECK(softmax.source.outputs[0] == g.outputs()[0]);
  CHECK(softmax.outputs[0].space == Space::output);
  CHECK(softmax.outputs[0].dtype == DType::float32);
  CHECK(relu.outputs[0].dtype == DType::float16);
  CHECK(s.buffers.size() == buffers - 2);
  // The note is the tactics stage's, from the kernel's own field.
  CHECK(relu.note.empty());
}

// schedule stage fold_operand_views (schedule/operand_views.cpp): a Transpose or Slice read only by
// matrix products emits no kernel (the product reads strides and an offset of its input); a
// Transpose after a product is written through by it; otherwise it stays, its note says why.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;

namespace {

Value* weight(Graph& g, const char* name, Shape s) {
  return g.add_constant(name, Tensor::from_f64(DType::float32, s, std::vector<double>(num_elements(s), 0.5)), true);
}

Value* node(Graph& g, const char* op, const char* name, const std::vector<Value*>& inputs) {
  Value* out = g.add_value(std::string(name) + "_out");
  g.add_node(op, name, inputs, {out});
  return out;
}

Value* transpose(Graph& g, Value* x, std::vector<int64_t> perm, const char* name = "transpose") {
  Value* t = node(g, "Transpose", name, {x});
  g.nodes().back()->set_attr_ints("perm", std::move(perm));
  return t;
}

Schedule lower_with(Graph& g, bool fold) {
  ops::infer_graph(g);
  LowerOptions o;
  o.name = "t";
  o.passes.verify_each = true;
  if (!fold) o.passes.disabled.insert("fold_operand_views");
  return lower(g, o);
}

}  // namespace

TEST_CASE("fold_operand_views: a Transpose read by a MatMul is the product's strided A") {
  for (bool fold : {true, false}) {
    CAPTURE(fold);
    Graph g;
    g.set_opset(17);
    Value* t = transpose(g, input(g, "x", {3, 5}), {1, 0});
    g.add_output(node(g, "MatMul", "matmul", {t, weight(g, "w", {3, 4})}));
    const Schedule s = lower_with(g, fold);
    REQUIRE(s.kernels.size() == (fold ? 1u : 2u));
    const Kernel& mm = s.kernels.back();
    CHECK(mm.op.type == "MatMul");
    if (fold) {
      CHECK(mm.inputs[0].space == Space::input);
      CHECK(mm.inputs[0].shape == Shape{5, 3});
      CHECK(mm.inputs[0].strides == std::vector<int64_t>{1, 5});
      CHECK(mm.note.find("Transpose 'transpose' read as strides") != std::string::npos);
    } else {
      CHECK(mm.inputs[0].space == Space::arena);
    }
  }
}

TEST_CASE("fold_operand_views: a Slice then a Reshape read by a MatMul: an offset and split strides") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {4, 12});
  auto ints = [&](const char* name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return g.add_constant(name, Tensor::from_i64(DType::int64, {n}, v));
  };
  Value* sl = node(g, "Slice", "slice", {x, ints("starts", {4}), ints("ends", {8}), ints("axes", {1})});
  Value* r = node(g, "Reshape", "reshape", {sl, ints("shape", {4, 2, 2})});
  g.add_output(node(g, "MatMul", "matmul", {r, weight(g, "w", {2, 3})}));
  const Schedule s = lower_with(g, true);
  REQUIRE(s.kernels.size() == 1);
  const TensorView& a = s.kernels[0].inputs[0];
  CHECK(a.shape == Shape{4, 2, 2});
  CHECK(a.strides == std::vector<int64_t>{12, 2, 1});
  CHECK(a.offset == 4 * 4);  // 4 floats in
}

TEST_CASE("fold_operand_views: a MatMul writes through the Transpose after it") {
  Graph g;
  g.set_opset(17);
  Value* y = node(g, "MatMul", "matmul", {input(g, "x", {2, 3, 4}), weight(g, "w", {4, 5})});
  Value* t = transpose(g, y, {1, 0, 2});
  g.add_output(node(g, "Relu", "relu", {t}));
  const Schedule s = lower_with(g, true);
  REQUIRE(s.kernels.size() == 2);
  const Kernel& mm = s.kernels[0];
  CHECK(mm.outputs[0].shape == Shape{2, 3, 5});
  CHECK(mm.outputs[0].strides == std::vector<int64_t>{5, 10, 1});
  CHECK(mm.outputs[0].offset == s.kernels[1].inputs[0].offset);  // the Transpose's buffer, Relu reads
  CHECK(s.kernels[1].inputs[0].strides == std::vector<int64_t>{10, 5, 1});
  CHECK(mm.note.find("writes through Transpose 'transpose'") != std::string::npos);
}

TEST_CASE("fold_operand_views: a Transpose also read by a Relu stays, the note says why") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {3, 5});
  Value* t = transpose(g, x, {1, 0});
  g.add_output(node(g, "MatMul", "matmul", {t, weight(g, "w", {3, 4})}));
  g.add_output(node(g, "Relu", "relu", {t}));
  const Schedule s = lower_with(g, true);
  REQUIRE(s.kernels.size() == 3);
  CHECK(s.kernels[0].op.type == "Transpose");
  CHECK(s.kernels[0].note.find("not a view: its output is read by Relu 'relu' (not a matrix product)") !=
        std::string::npos);
}

TEST_CASE("fold_operand_views: a Transpose of unit dims is a view for any reader") {
  Graph g;
  g.set_opset(17);
  Value* t = transpose(g, input(g, "x", {1, 6, 4}), {1, 0, 2});
  g.add_output(node(g, "Relu", "relu", {t}));
  const Schedule s = lower_with(g, true);
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].inputs[0].space == Space::input);
  CHECK(s.kernels[0].inputs[0].strides == std::vector<int64_t>{4, 4, 1});  // dense
}

TEST_CASE("fold_operand_views stage: a view joins its input's buffer as a step; a write-through joins the Transpose's") {
  LowerOptions o;
  o.name = "t";
  o.passes.verify_each = true;
  SUBCASE("forward: the Transpose's output is a transpose step of the model input's buffer") {
    Graph g;
    g.set_opset(17);
    Value* t = transpose(g, input(g, "x", {3, 5}), {1, 0});
    g.add_output(node(g, "MatMul", "matmul", {t, weight(g, "w", {3, 4})}));
    ops::infer_graph(g);
    Schedule s = test::before(g, o, "fold_operand_views");
    REQUIRE(s.kernels.size() == 2);
    CHECK(run_schedule_stage(s, o, "fold_operand_views"));
    REQUIRE(s.kernels.size() == 1);
    const ViewStep* step = test::step_of(s, "transpose_out");
    REQUIRE(step);
    CHECK(step->kind == ViewStep::Kind::transpose);
    CHECK(step->from->name() == "x");
    CHECK(test::buffer_of(s, "transpose_out").space == Space::input);
    const Kernel& mm = s.kernels[0];
    CHECK(mm.id == "k0");
    CHECK(mm.operand_views == std::vector<std::string>{"Transpose 'transpose' read as strides"});
    CHECK(mm.inputs[0].value == "transpose_out");
    CHECK(mm.inputs[0].strides == std::vector<int64_t>{1, 5});
  }
  SUBCASE("backward: the product's output is written through into the Transpose's buffer") {
    Graph g;
    g.set_opset(17);
    Value* y = node(g, "MatMul", "matmul", {input(g, "x", {2, 3, 4}), weight(g, "w", {4, 5})});
    Value* t = transpose(g, y, {1, 0, 2});
    g.add_output(node(g, "Relu", "relu", {t}));
    ops::infer_graph(g);
    Schedule s = test::before(g, o, "fold_operand_views");
    CHECK(run_schedule_stage(s, o, "fold_operand_views"));
    REQUIRE(s.kernels.size() == 2);
    const ViewStep* step = test::step_of(s, "matmul_out");
    REQUIRE(step);
    CHECK(step->kind == ViewStep::Kind::write_through);
    CHECK(step->from->name() == "transpose_out");
    CHECK(test::buffer_of(s, "matmul_out").value->name() == "transpose_out");
    CHECK(s.kernels[0].operand_views == std::vector<std::string>{"writes through Transpose 'transpose'"});
    CHECK(s.kernels[0].outputs[0].buffer == s.kernels[1].inputs[0].buffer);
    CHECK(s.kernels[0].outputs[0].strides == std::vector<int64_t>{5, 10, 1});
  }
  SUBCASE("kept: the Transpose stays a kernel, the reason in its own field") {
    Graph g;
    g.set_opset(17);
    Value* t = transpose(g, input(g, "x", {3, 5}), {1, 0});
    g.add_output(node(g, "MatMul", "matmul", {t, weight(g, "w", {3, 4})}));
    g.add_output(node(g, "Relu", "relu", {t}));
    ops::infer_graph(g);
    Schedule s = test::before(g, o, "fold_operand_views");
    CHECK_FALSE(run_schedule_stage(s, o, "fold_operand_views"));
    REQUIRE(s.kernels.size() == 3);
    CHECK(s.kernels[0].kept_view.find("its output is read by Relu 'relu' (not a matrix product)") == 0);
    CHECK(test::step_of(s, "transpose_out") == nullptr);  // its own buffer still
  }
}

namespace {

// x [1, 8, 4, 4] -> Conv 1x1 (8) -> Transpose `to_last` -> LayerNormalization over C -> MatMul [8, 16]
// -> Transpose (0, 3, 1, 2) -> Conv 1x1 (8) -> y: a ConvNeXt-style block's permutes around its
// LayerNorm and product over channels.
void channels_last_block(Graph& g, std::vector<int64_t> to_last, int64_t hidden = 16) {
  g.set_opset(17);
  Value* c = node(g, "Conv", "conv", {input(g, "x", {1, 8, 4, 4}), weight(g, "w", {8, 8, 1, 1})});
  Value* t = transpose(g, c, std::move(to_last), "to_last");
  Value* ln = node(g, "LayerNormalization", "ln", {t, weight(g, "gamma", {8}), weight(g, "beta", {8})});
  g.nodes().back()->set_attr_int("axis", -1);
  Value* mm = node(g, "MatMul", "matmul", {ln, weight(g, "b", {8, hidden})});
  Value* back = transpose(g, mm, {0, 3, 1, 2}, "to_channels");
  g.add_output(node(g, "Conv", "conv2", {back, weight(g, "w2", {8, hidden, 1, 1})}));
}

}  // namespace

TEST_CASE("fold_operand_views: a channels-last move of an NHWC buffer (and back) is the same memory, for any reader") {
  Graph g;
  channels_last_block(g, {0, 2, 3, 1});
  const Schedule s = lower_with(g, true);
  for (const Kernel& k : s.kernels) CHECK(k.op.type != "Transpose");
  // The LayerNorm reads the conv's NHWC buffer as its dense [1, 4, 4, 8] rows; the product writes
  // a dense [1, 4, 4, 16] buffer, which the second conv reads as NHWC [1, 16, 4, 4].
  const Kernel& conv = test::kernel_of(s, "conv");
  const Kernel& ln = test::kernel_of(s, "ln");
  CHECK(ln.inputs[0].buffer == conv.outputs[0].buffer);
  CHECK(same_memory(ln.inputs[0].shape, ln.inputs[0].strides, {128, 32, 8, 1}));  // N's stride: any
  CHECK(same_memory(conv.outputs[0].shape, conv.outputs[0].strides, {128, 1, 32, 8}));  // N's stride: any
  const Kernel& mm = test::kernel_of(s, "matmul");
  const Kernel& conv2 = test::kernel_of(s, "conv2");
  CHECK(conv2.inputs[0].buffer == mm.outputs[0].buffer);
  CHECK(same_memory(conv2.inputs[0].shape, conv2.inputs[0].strides, {256, 1, 64, 16}));  // N's stride: any
  CHECK(same_memory(mm.outputs[0].shape, mm.outputs[0].strides, {256, 64, 16, 1}));  // N's stride: any
  const ViewStep* step = test::step_of(s, "to_last_out");
  REQUIRE(step);
  CHECK(step->kind == ViewStep::Kind::transpose);
  CHECK(step->from->name() == "conv_out");
  step = test::step_of(s, "to_channels_out");
  REQUIRE(step);
  CHECK(step->kind == ViewStep::Kind::transpose);
  CHECK(step->from->name() == "matmul_out");
}

TEST_CASE("fold_operand_views: a Transpose of an NHWC buffer that is not a channels-last move keeps its kernel, and says why") {
  Graph g;
  channels_last_block(g, {0, 3, 2, 1});  // W before H: another order than NHWC
  const Schedule s = lower_with(g, true);
  const Kernel& t = test::kernel_of(s, "to_last");
  CHECK(t.kept_view.find("not a channels-last move: perm (0, 3, 2, 1) reads its input (NHWC) in another order than "
                         "its output is stored (dense)") == 0);
  CHECK(t.note.find("not a view: not a channels-last move") != std::string::npos);
  // The one back to channels is still the same memory.
  for (const Kernel& k : s.kernels) CHECK(k.source.node->name() != "to_channels");
}

TEST_CASE("fold_operand_views: the move back into a buffer padded for a tensor-core conv keeps its kernel, and says why") {
  Graph g;
  channels_last_block(g, {0, 2, 3, 1}, 12);  // --fp16: conv2's X padded to a pitch of 16
  ops::infer_graph(g);
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_80"};
  o.passes.fp16 = true;
  o.passes.verify_each = true;
  const Schedule s = lower(g, o);
  CHECK(test::kernel_of(s, "to_channels").kept_view ==
        "a channels-last move (perm (0, 3, 1, 2)), but its input is stored dense and its output NHWC with channel "
        "pitch 16 (C 12): not the same memory");
  for (const Kernel& k : s.kernels) CHECK(k.source.node->name() != "to_last");  // C 8: still a view
}

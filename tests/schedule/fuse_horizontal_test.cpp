// schedule's fuse_horizontal stage: three sibling 1x1 convs on one input (one into a Concat, two
// "reduce" convs into 3x3 convs) run as one kernel whose outputs are their channel ranges, each
// written where it was planned (the Concat's slice, the reduce convs' own buffers), in both
// layouts, FP32 and FP16; siblings of another stride or kernel size stay separate; the stage is
// optional. Three sibling MatMuls on one A (bias, bias + Relu, nothing) are one product whose
// outputs are column ranges, two Gemms with transB likewise; a MatMul by a non-constant B and a
// Gemm of another K stay separate. (Through the host emulation: tests/e2e/codegen/horizontal_fusion.py.)
#include <doctest/doctest.h>

#include "ops/fused.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using namespace modelc::test;  // input, sine_weight, network_input, kernel_of, layout_options

namespace {

/// x [1, 16, 6, 6] -> conv_a 1x1 (8, relu) -> Concat; conv_r1 1x1 (12, relu) -> conv_b 3x3 (8) ->
/// Concat; conv_r2 1x1 (4, no bias, no relu) -> conv_c 3x3 (8) -> Concat (cat) -> conv_out 1x1 (8) -> y;
/// and two siblings that differ: conv_s (1x1, stride 2) -> ys, conv_k (3x3, pad 1) -> yk.
struct Module {
  Graph g;
  explicit Module(bool fp16) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {1, 16, 6, 6});
    Value* in = network_input(g, x, fp16);
    auto v = [&](const char* name) { return g.add_value(name); };
    Value *a = v("a"), *ar = v("ar"), *r1 = v("r1"), *r1r = v("r1r"), *r2 = v("r2"), *b = v("b"), *c = v("c"),
          *cat = v("cat"), *y = v("y"), *ys = v("ys"), *yk = v("yk");
    g.add_node("Conv", "conv_a", {in, sine_weight(g, "Wa", {8, 16, 1, 1}, t), sine_weight(g, "Ba", {8}, t)}, {a});
    g.add_node("Relu", "relu_a", {a}, {ar});
    g.add_node("Conv", "conv_r1", {in, sine_weight(g, "Wr1", {12, 16, 1, 1}, t), sine_weight(g, "Br1", {12}, t)}, {r1});
    g.add_node("Relu", "relu_r1", {r1}, {r1r});
    g.add_node("Conv", "conv_r2", {in, sine_weight(g, "Wr2", {4, 16, 1, 1}, t)}, {r2});
    g.add_node("Conv", "conv_b", {r1r, sine_weight(g, "Wb", {8, 12, 3, 3}, t)}, {b})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Conv", "conv_c", {r2, sine_weight(g, "Wc", {8, 4, 3, 3}, t)}, {c})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Concat", "concat", {ar, b, c}, {cat})->set_attr_int("axis", 1);
    g.add_node("Conv", "conv_out", {cat, sine_weight(g, "Wo", {8, 24, 1, 1}, t)}, {y});
    g.add_node("Conv", "conv_s", {in, sine_weight(g, "Ws", {8, 16, 1, 1}, t)}, {ys})->set_attr_ints("strides", {2, 2});
    g.add_node("Conv", "conv_k", {in, sine_weight(g, "Wk", {8, 16, 3, 3}, t)}, {yk})->set_attr_ints("pads", {1, 1, 1, 1});
    for (Value* o : {y, ys, yk}) g.add_output(o);
    ops::infer_graph(g);
  }
};

bool runs_kernel(const Schedule& s, const std::string& node) {
  for (const Kernel& k : s.kernels) {
    if (k.source.node && k.op.name == node) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("fuse_horizontal: three sibling 1x1 convs are one kernel writing each range where it is read") {
  for (LayoutMode mode : {LayoutMode::automatic, LayoutMode::nchw}) {
    for (bool fp16 : {false, true}) {
      CAPTURE(fp16);
      CAPTURE(layout_mode_name(mode));
      Module m(fp16);
      const Schedule s = lower(m.g, layout_options(mode, fp16));
      const Kernel& k = kernel_of(s, "conv_a");
      REQUIRE(k.ranges.size() == 3);
      CHECK(k.ranges[0].op.name == "conv_a");
      CHECK(k.ranges[1].op.name == "conv_r1");
      CHECK(k.ranges[2].op.name == "conv_r2");
      CHECK((k.ranges[0].begin == 0 && k.ranges[0].end == 8));
      CHECK((k.ranges[1].begin == 8 && k.ranges[1].end == 20));
      CHECK((k.ranges[2].begin == 20 && k.ranges[2].end == 24));
      CHECK(k.nodes == std::vector<std::string>{"conv_a", "relu_a", "conv_r1", "relu_r1", "conv_r2"});
      CHECK_FALSE(runs_kernel(s, "conv_r1"));
      CHECK_FALSE(runs_kernel(s, "conv_r2"));
      // One product of 24 output channels: the weights and biases concatenated (zeros for conv_r2's).
      REQUIRE(k.inputs.size() == 3);
      CHECK(k.inputs[1].shape == Shape{24, 16, 1, 1});
      CHECK(k.inputs[1].space == Space::weights);
      CHECK(k.inputs[2].shape == Shape{24});
      // Each range where its reader wants it: conv_a's in its slice of the Concat's output, the
      // reduce convs' in the buffers conv_b and conv_c read.
      REQUIRE(s.concats.size() == 1);
      CHECK(s.concats[0].elided);
      REQUIRE(k.outputs.size() == 3);
      CHECK(k.outputs[0].space == kernel_of(s, "conv_b").outputs[0].space);
      CHECK(k.outputs[0].offset == kernel_of(s, "conv_b").outputs[0].offset - 8 * k.outputs[0].strides[1] *
                                                                                    static_cast<int64_t>(fp16 ? 2 : 4));
      const TensorView& r1 = kernel_of(s, "conv_b").inputs[0];
      const TensorView& r2 = kernel_of(s, "conv_c").inputs[0];
      CHECK(k.outputs[1].space == r1.space);
      CHECK(k.outputs[1].offset == r1.offset);
      CHECK(k.outputs[1].strides == r1.strides);
      CHECK(k.outputs[2].offset == r2.offset);
      CHECK(k.outputs[2].strides == r2.strides);
      INFO(k.note);
      CHECK(k.note.find("horizontally fused: 'conv_a' channels [0, 8) -> 'ar', 'conv_r1' channels [8, 20) -> 'r1r', "
                        "'conv_r2' channels [20, 24) -> 'r2'; 'ar' writes its slice [0, 8) on axis 1 of 'cat'") !=
            std::string::npos);
      // The siblings of another stride or kernel size stay kernels of their own.
      CHECK(kernel_of(s, "conv_s").ranges.empty());
      CHECK(kernel_of(s, "conv_k").ranges.empty());

      Module plain(fp16);
      LowerOptions o = layout_options(mode, fp16);
      o.passes.disabled.insert("fuse_horizontal");
      const Schedule unfused = lower(plain.g, o);
      CHECK(unfused.kernels.size() == s.kernels.size() + 2);
      CHECK(kernel_of(unfused, "conv_r1").ranges.empty());
    }
  }
}

namespace {

/// x [8, 32] -> q: MatMul (Wq [32, 16]) + Add bias -> yq; k: MatMul (Wk [32, 24]) + Add bias + Relu
/// -> yk; v: MatMul (Wv [32, 8], no bias) -> yv; and siblings that stay apart: nc: MatMul by a
/// non-constant B (input b [32, 8]) -> yn; gt: Gemm transA (K 8, not 32) -> yt. And two Gemms with
/// transB and a C per column, one with a Sigmoid: g1 (W1 [12, 32], C [12]) -> y1, g2 (W2 [4, 32],
/// C [1, 4]) + Sigmoid -> y2.
struct Products {
  Graph g;
  explicit Products(bool fp16) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {8, 32});
    Value* in = network_input(g, x, fp16);
    Value* b = input(g, "b", {32, 8});
    Value* b_in = b;
    if (fp16) {
      b_in = g.add_value("b16");
      g.add_node("Cast", "cast_b", {b}, {b_in})->set_attr_int("to", 10);
    }
    auto v = [&](const char* name) { return g.add_value(name); };
    Value *q = v("q_out"), *yq = v("yq"), *k = v("k_out"), *kb = v("k_biased"), *yk = v("yk"), *yv = v("yv"),
          *yn = v("yn"), *yt = v("yt"), *y1 = v("y1"), *g2 = v("g2_out"), *y2 = v("y2");
    g.add_node("MatMul", "q", {in, sine_weight(g, "Wq", {32, 16}, t)}, {q});
    g.add_node("Add", "q_add", {q, sine_weight(g, "Bq", {16}, t)}, {yq});
    g.add_node("MatMul", "k", {in, sine_weight(g, "Wk", {32, 24}, t)}, {k});
    g.add_node("Add", "k_add", {k, sine_weight(g, "Bk", {24}, t)}, {kb});
    g.add_node("Relu", "k_relu", {kb}, {yk});
    g.add_node("MatMul", "v", {in, sine_weight(g, "Wv", {32, 8}, t)}, {yv});
    g.add_node("MatMul", "nc", {in, b_in}, {yn});
    g.add_node("Gemm", "gt", {in, sine_weight(g, "Wt", {8, 12}, t)}, {yt})->set_attr_int("transA", 1);
    g.add_node("Gemm", "g1", {in, sine_weight(g, "W1", {12, 32}, t), sine_weight(g, "C1", {12}, t)}, {y1})
        ->set_attr_int("transB", 1);
    g.add_node("Gemm", "g2", {in, sine_weight(g, "W2", {4, 32}, t), sine_weight(g, "C2", {1, 4}, t)}, {g2})
        ->set_attr_int("transB", 1);
    g.add_node("Sigmoid", "g2_sigmoid", {g2}, {y2});
    for (Value* o : {yq, yk, yv, yn, yt, y1, y2}) g.add_output(o);
    ops::infer_graph(g);
  }
};

}  // namespace

TEST_CASE("fuse_horizontal: sibling MatMuls (and Gemms) on one A are one product writing each column range") {
  for (bool fp16 : {false, true}) {
    CAPTURE(fp16);
    Products m(fp16);
    const Schedule s = lower(m.g, layout_options(LayoutMode::automatic, fp16));
    const Kernel& k = kernel_of(s, "q");
    REQUIRE(k.ranges.size() == 3);
    CHECK(k.ranges[0].op.name == "q");
    CHECK(k.ranges[1].op.name == "k");
    CHECK(k.ranges[2].op.name == "v");
    CHECK((k.ranges[0].begin == 0 && k.ranges[0].end == 16));
    CHECK((k.ranges[1].begin == 16 && k.ranges[1].end == 40));
    CHECK((k.ranges[2].begin == 40 && k.ranges[2].end == 48));
    CHECK(k.nodes == std::vector<std::string>{"q", "q_add", "k", "k_add", "k_relu", "v"});
    CHECK_FALSE(runs_kernel(s, "k"));
    CHECK_FALSE(runs_kernel(s, "v"));
    // One product A x [Wq | Wk | Wv]: B [32, 48], the biases side by side (zeros for v's).
    REQUIRE(k.inputs.size() == 3);
    CHECK(k.inputs[1].shape == Shape{32, 48});
    CHECK(k.inputs[1].space == Space::weights);
    CHECK(k.inputs[2].shape == Shape{48});
    // Each range to its own output, with its own epilogue: q's bias, k's bias and Relu, v's nothing.
    REQUIRE(k.outputs.size() == 3);
    CHECK(k.outputs[0].value == "yq");
    CHECK(k.outputs[1].value == "yk");
    CHECK(k.outputs[2].value == "yv");
    CHECK(k.outputs[1].shape == Shape{8, 24});
    CHECK(ops::activation_of_fused(*k.ranges[1].source).kind == ops::Activation::relu);
    CHECK(ops::activation_of_fused(*k.ranges[0].source).kind == ops::Activation::none);
    INFO(k.note);
    CHECK(k.note.find("horizontally fused: 'q' columns [0, 16) -> 'yq', 'k' columns [16, 40) -> 'yk', "
                      "'v' columns [40, 48) -> 'yv'") != std::string::npos);
    // Apart: a B that is not a constant, a Gemm reading A transposed (K 8).
    CHECK(kernel_of(s, "nc").ranges.empty());
    CHECK(kernel_of(s, "gt").ranges.empty());
    // The Gemms with transB: their B's stacked along N (B's rows), C [12] and C [1, 4] as one bias.
    const Kernel& g1 = kernel_of(s, "g1");
    REQUIRE(g1.ranges.size() == 2);
    CHECK(g1.ranges[1].op.name == "g2");
    CHECK((g1.ranges[1].begin == 12 && g1.ranges[1].end == 16));
    CHECK(g1.inputs[1].shape == Shape{16, 32});
    CHECK(g1.inputs[2].shape == Shape{16});
    CHECK(ops::activation_of_fused(*g1.ranges[1].source).kind == ops::Activation::sigmoid);

    Products plain(fp16);
    LowerOptions o = layout_options(LayoutMode::automatic, fp16);
    o.passes.disabled.insert("fuse_horizontal");
    const Schedule unfused = lower(plain.g, o);
    CHECK(unfused.kernels.size() == s.kernels.size() + 3);
    CHECK(kernel_of(unfused, "k").ranges.empty());
  }
}

TEST_CASE("fuse_horizontal stage: the first sibling's kernel takes the others' outputs, weights and nodes") {
  Module m(false);
  LowerOptions o = layout_options(LayoutMode::automatic, false);
  o.passes.verify_each = true;
  Schedule s = test::before(m.g, o, "fuse_horizontal");
  const std::size_t kernels = s.kernels.size();
  CHECK(runs_kernel(s, "conv_r1"));
  CHECK(run_schedule_stage(s, o, "fuse_horizontal"));
  CHECK(s.kernels.size() == kernels - 2);
  const Kernel& k = kernel_of(s, "conv_a");
  REQUIRE(k.ranges.size() == 3);
  CHECK(k.ranges[2].op.name == "conv_r2");
  // Its source: the concatenated weights and bias (new constants, W stored OHWI as conv_a's was),
  // and every range's output.
  REQUIRE(k.source.inputs.size() == 3);
  CHECK(k.source.inputs[1]->name() == "Wa_horizontal");
  CHECK(k.source.inputs[1]->is_constant());
  CHECK(k.source.inputs[2]->name() == "conv_a_horizontal_B");
  const Buffer& w = test::buffer_of(s, "Wa_horizontal");
  CHECK(w.space == Space::weights);
  REQUIRE(w.ohwi.has_value());
  CHECK(w.ohwi->pitch == 16);
  REQUIRE(k.source.outputs.size() == 3);
  CHECK(k.source.outputs[0]->name() == "ar");
  CHECK(k.source.outputs[1]->name() == "r1r");
  CHECK(k.source.outputs[2]->name() == "r2");
  CHECK(k.outputs[1].buffer == kernel_of(s, "conv_b").inputs[0].buffer);
  CHECK(k.outputs[0].buffer == test::buffer_index(s, "cat"));  // its Concat slice stays
  CHECK(k.nodes == std::vector<std::string>{"conv_a", "relu_a", "conv_r1", "relu_r1", "conv_r2"});
  // The siblings' own weights are read by no kernel now: their buffers are gone.
  for (const Buffer& b : s.buffers) CHECK(b.name != "Wr1");
}

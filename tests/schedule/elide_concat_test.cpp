// schedule's elide_concat stage: a Concat of conv and pool outputs runs no kernel, its producers
// writing their slices of its buffer (channels-last and NCHW, FP32 and FP16); a Concat with an
// input that cannot be a slice stays a kernel, and the report says which input and why.
// (The same network through the host emulation: models/tiny_inception.onnx, codegen_verify_*.)
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/report.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/layout.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;
using modelc::test::kernel_of;
using modelc::test::layout_options;
using modelc::test::network_input;
using modelc::test::sine_weight;

namespace {

/// x [N, 8, 6, 6] (cast to FP16 with `fp16`) -> conv a (1x1, `ca` channels) + relu, conv b (3x3 p1,
/// `cb` channels), MaxPool 3x3 s1 p1 of x (8 channels) -> Concat (axis 1) -> conv 1x1 (16) -> y.
struct Inception {
  Graph g;
  Value* x = nullptr;
  Inception(bool fp16, int64_t n = 1, int64_t ca = 16, int64_t cb = 8) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    x = input(g, "x", {n, 8, 6, 6});
    Value* in = network_input(g, x, fp16);
    Value *a = g.add_value("a"), *ar = g.add_value("ar"), *b = g.add_value("b"), *p = g.add_value("p"),
          *c = g.add_value("c"), *y = g.add_value("y");
    g.add_node("Conv", "conv_a", {in, sine_weight(g, "Wa", {ca, 8, 1, 1}, t), sine_weight(g, "Ba", {ca}, t)}, {a});
    g.add_node("Relu", "relu_a", {a}, {ar});
    g.add_node("Conv", "conv_b", {in, sine_weight(g, "Wb", {cb, 8, 3, 3}, t)}, {b})->set_attr_ints("pads", {1, 1, 1, 1});
    Node* pool = g.add_node("MaxPool", "pool", {in}, {p});
    pool->set_attr_ints("kernel_shape", {3, 3});
    pool->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Concat", "concat", {ar, b, p}, {c})->set_attr_int("axis", 1);
    g.add_node("Conv", "conv_out", {c, sine_weight(g, "Wo", {16, ca + cb + 8, 1, 1}, t)}, {y});
    g.add_output(y);
    ops::infer_graph(g);
  }
};

int concat_kernels(const Schedule& s) {
  int n = 0;
  for (const Kernel& k : s.kernels) n += k.family_name() == "concat";
  return n;
}

bool has_buffer(const Schedule& s, const std::string& value) {
  for (const LiveBuffer& b : s.arena_buffers) {
    if (b.name == value) return true;
  }
  return false;
}

// Each producer writes its slice of the Concat's buffer (which conv_out reads with `strides`), from
// a byte offset of `channel offset * channel_stride * element size`: with the buffer's strides, or
// (`dense_slices`) as a dense view of its own shape, the same memory.
void check_slices(const Schedule& s, const std::vector<int64_t>& strides, int64_t channel_stride, int64_t element,
                  bool dense_slices) {
  const TensorView& whole = kernel_of(s, "conv_out").inputs[0];
  CHECK(whole.value == "c");
  CHECK(whole.strides == strides);
  for (const auto& [node, c0] : {std::make_pair("conv_a", 0), std::make_pair("conv_b", 16), std::make_pair("pool", 24)}) {
    const std::string name = node;
    CAPTURE(name);
    const TensorView& y = kernel_of(s, name).outputs[0];
    CHECK(y.space == Space::arena);
    CHECK(y.offset == whole.offset + c0 * channel_stride * element);
    CHECK(kernel_of(s, name).note.find("of 'c' (Concat 'concat' elided)") != std::string::npos);
    if (dense_slices) {
      CHECK(y.dense());
    } else {
      CHECK(y.strides == strides);
    }
  }
  REQUIRE(s.concats.size() == 1);
  CHECK(s.concats[0].elided);
  REQUIRE(s.concats[0].inputs.size() == 3);
  CHECK(s.concats[0].inputs[1].offset == 16);
  CHECK(s.concats[0].inputs[2].offset == 24);
  // One buffer: the slices are the Concat's bytes, live from the first producer on.
  CHECK(has_buffer(s, "c"));
  CHECK_FALSE(has_buffer(s, "b"));
  CHECK_FALSE(has_buffer(s, "p"));
}

}  // namespace

TEST_CASE("elide_concat: two convs and a pool write their slices of the Concat's buffer, in both layouts") {
  for (LayoutMode mode : {LayoutMode::automatic, LayoutMode::nchw}) {
    for (bool fp16 : {false, true}) {
      CAPTURE(fp16);
      CAPTURE(layout_mode_name(mode));
      Inception net(fp16);
      const Schedule s = lower(net.g, layout_options(mode, fp16));
      CHECK(concat_kernels(s) == 0);
      const int64_t element = fp16 ? 2 : 4;
      if (mode == LayoutMode::nchw) {
        // Batch 1: each slice is a dense block (offset c0 * H * W), so every family writes it.
        check_slices(s, {1152, 36, 6, 1}, 36, element, true);
        continue;
      }
      // NHWC, pitch 32 (16 + 8 + 8 channels): a slice is offset c0 with the Concat's pixel pitch.
      check_slices(s, {1152, 1, 192, 32}, 1, element, false);
      CHECK(kernel_layout(kernel_of(s, "conv_b")).y_pitch == 32);
      CHECK(kernel_layout(kernel_of(s, "pool")).y_pitch == 32);
      if (fp16) {  // 16-byte aligned slices: the convolutions stay on tensor cores
        CHECK(kernel_of(s, "conv_a").engine == Engine::tensor_core);
        CHECK(kernel_of(s, "conv_b").engine == Engine::tensor_core);
      }
    }
  }
}

TEST_CASE("elide_concat: channels padded at the end of the Concat's pixels, its slices contiguous") {
  // 16 + 4 + 8 = 28 channels, padded to a pitch of 32 for conv_out's tensor cores; conv_b's 4
  // channels are not padded: the pool's slice starts at channel 20.
  Inception net(true, 1, 16, 4);
  const Schedule s = lower(net.g, layout_options(LayoutMode::automatic, true));
  CHECK(concat_kernels(s) == 0);
  const TensorView& whole = kernel_of(s, "conv_out").inputs[0];
  CHECK(whole.strides == std::vector<int64_t>{1152, 1, 192, 32});
  CHECK(kernel_of(s, "conv_out").engine == Engine::tensor_core);
  const TensorView& pool = kernel_of(s, "pool").outputs[0];
  CHECK(pool.offset == whole.offset + 20 * 2);
  CHECK(pool.strides == whole.strides);
  CHECK(kernel_of(s, "conv_b").outputs[0].offset == whole.offset + 16 * 2);
}

TEST_CASE("elide_concat: batch 2 slices are channels-last views, but strided in NCHW (kept)") {
  Inception nhwc(false, 2);
  const Schedule s = lower(nhwc.g, layout_options(LayoutMode::automatic, false));
  CHECK(concat_kernels(s) == 0);
  CHECK(kernel_of(s, "pool").outputs[0].strides == std::vector<int64_t>{1152, 1, 192, 32});

  Inception nchw(false, 2);
  const Schedule d = lower(nchw.g, layout_options(LayoutMode::nchw, false));
  CHECK(concat_kernels(d) == 1);
  REQUIRE(d.concats.size() == 1);
  CHECK_FALSE(d.concats[0].elided);
  CHECK(d.concats[0].inputs[1].reason.find("strided") != std::string::npos);
}

TEST_CASE("elide_concat: a tensor-core convolution's slice off a 16-byte boundary keeps the Concat") {
  // conv_a writes 4 channels: conv_b's slice starts at channel 4 (8 bytes in FP16).
  Inception net(true, 1, 4, 8);
  const Schedule s = lower(net.g, layout_options(LayoutMode::automatic, true));
  CHECK(concat_kernels(s) == 1);
  REQUIRE(s.concats.size() == 1);
  CHECK(s.concats[0].inputs[0].reason.empty());
  CHECK(s.concats[0].inputs[1].reason.find("not 16-byte aligned") != std::string::npos);
  CHECK(kernel_of(s, "conv_b").engine == Engine::tensor_core);
}

TEST_CASE("elide_concat: --disable-pass elide_concat keeps the Concat kernel") {
  Inception net(false);
  LowerOptions o = layout_options(LayoutMode::automatic, false);
  o.passes.disabled.insert("elide_concat");
  const Schedule s = lower(net.g, o);
  CHECK(concat_kernels(s) == 1);
  CHECK(s.concats.empty());
  CHECK(has_buffer(s, "b"));
}

TEST_CASE("elide_concat: a model input, or a value fed twice, keeps the Concat; report.json says why") {
  for (bool twice : {false, true}) {
    CAPTURE(twice);
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "x", {1, 4, 5, 5});
    Value *a = g.add_value("a"), *c = g.add_value("c"), *y = g.add_value("y");
    g.add_node("Conv", "conv", {x, sine_weight(g, "W", {4, 4, 1, 1}, DType::float32)}, {a});
    g.add_node("Concat", "concat", {twice ? a : x, a}, {c})->set_attr_int("axis", 1);
    g.add_node("Relu", "relu", {c}, {y});
    g.add_output(y);
    ops::infer_graph(g);
    const Schedule s = lower(g, layout_options(LayoutMode::automatic, false));
    CHECK(concat_kernels(s) == 1);
    const nlohmann::json j = nlohmann::json::parse(report_json(s, ReportInfo{}));
    REQUIRE(j.contains("concats"));
    REQUIRE(j["concats"].size() == 1);
    const nlohmann::json& r = j["concats"][0];
    CHECK(r["node"] == "concat");
    CHECK(r["elided"] == false);
    REQUIRE(r["inputs"].size() == 2);
    if (twice) {
      CHECK(r["inputs"][0]["kept_because"] == "feeds this Concat more than once");
      CHECK(r["inputs"][1]["kept_because"] == "feeds this Concat more than once");
    } else {
      CHECK(r["inputs"][0]["value"] == "x");
      CHECK(r["inputs"][0]["kept_because"] == "a model input");
      CHECK_FALSE(r["inputs"][1].contains("kept_because"));
      CHECK(r["inputs"][1]["offset"] == 4);
    }
    CHECK(report_markdown(s, ReportInfo{}).find("| concat | " + std::string(twice ? "a" : "x") + " |") !=
          std::string::npos);
  }
}

TEST_CASE("elide_concat stage: each input a slice step of the Concat's buffer, its producer writing there") {
  Inception net(false);
  LowerOptions o = layout_options(LayoutMode::automatic, false);
  o.passes.verify_each = true;
  Schedule s = test::before(net.g, o, "elide_concat");
  CHECK(concat_kernels(s) == 1);
  const std::size_t buffers = s.buffers.size();
  CHECK(run_schedule_stage(s, o, "elide_concat"));
  CHECK(concat_kernels(s) == 0);
  CHECK(s.buffers.size() == buffers - 3);  // ar, b and p are the Concat's bytes now
  const int c = test::buffer_index(s, "c");
  const Buffer& whole = s.buffers[static_cast<std::size_t>(c)];
  CHECK(whole.value->name() == "c");
  CHECK(whole.storage.channels_last);
  for (const auto& [value, node, start] :
       {std::make_tuple("ar", "conv_a", 0), std::make_tuple("b", "conv_b", 16), std::make_tuple("p", "pool", 24)}) {
    const char* const slice = value;  // CAPTURE's lambda cannot name a structured binding (C++17, clang)
    CAPTURE(slice);
    const ViewStep* step = test::step_of(s, value);
    REQUIRE(step);
    CHECK(step->kind == ViewStep::Kind::concat_slice);
    CHECK(step->from->name() == "c");
    CHECK(step->node->name() == "concat");
    CHECK(step->axis == 1);
    CHECK(step->start == start);
    // Its producer's output view: in the Concat's buffer, from the slice's first channel, at the
    // Concat's pitch.
    const TensorView& y = kernel_of(s, node).outputs[0];
    CHECK(y.buffer == c);
    CHECK(y.buffer_offset == start * 4);
    CHECK(y.strides == std::vector<int64_t>{36 * 32, 1, 6 * 32, 32});
  }
  REQUIRE(s.concats.size() == 1);
  CHECK(s.concats[0].elided);
}

namespace {

/// A skip connection (issue 30): x [1, 8, 6, 6] (FP16 with `fp16`) -> conv s (3x3 p1, 16) -> s,
/// read by conv n (1x1, 16 -> 8 channels; or, `residual`, conv n of x (8 -> 16) plus s, its fused
/// residual) and by Concat(u, s) where u = conv u (1x1, 16) of x; conv out (1x1) reads the Concat.
struct Skip {
  Graph g;
  Skip(bool fp16, bool residual = false) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {1, 8, 6, 6});
    Value* in = network_input(g, x, fp16);
    Value *s = g.add_value("s"), *u = g.add_value("u"), *c = g.add_value("c"), *y = g.add_value("y"),
          *n = g.add_value("n");
    g.add_node("Conv", "conv_s", {in, sine_weight(g, "Ws", {16, 8, 3, 3}, t)}, {s})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Conv", "conv_u", {in, sine_weight(g, "Wu", {16, 8, 1, 1}, t)}, {u});
    if (residual) {
      Value* a = g.add_value("a");
      g.add_node("Conv", "conv_n", {in, sine_weight(g, "Wn", {16, 8, 1, 1}, t)}, {a});
      g.add_node("Add", "add", {a, s}, {n});
    } else {
      g.add_node("Conv", "conv_n", {s, sine_weight(g, "Wn", {8, 16, 1, 1}, t)}, {n});
    }
    g.add_node("Concat", "concat", {u, s}, {c})->set_attr_int("axis", 1);
    g.add_node("Conv", "conv_out", {c, sine_weight(g, "Wo", {8, 32, 1, 1}, t)}, {y});
    g.add_output(y);
    g.add_output(n);
    ops::infer_graph(g);
  }
};

/// DenseNet's nested Concats: x [1, 8, 6, 6] -> MaxPool (3x3 s1 p1) x0 -> conv 1 (16) y1 ->
/// c2 = Concat(x0, y1) -> Relu r2 -> conv 2 (16) y2 -> c3 = Concat(x0, y1, y2) -> conv 3 (1x1, 8;
/// reads c3 as is) y3 -> c4 = Concat(x0, y1, y2, y3) -> Relu -> out. FP16 x (through a Cast).
/// `reduced`: c2 also read by ReduceMean over the channels (a family that reads dense operands
/// only) -> the output m.
struct DenseBlock {
  Graph g;
  explicit DenseBlock(bool reduced = false) {
    g.set_opset(17);
    const DType t = DType::float16;
    Value* in = network_input(g, input(g, "x", {1, 8, 6, 6}), true);
    Value *x0 = g.add_value("x0"), *y1 = g.add_value("y1"), *c2 = g.add_value("c2"), *r2 = g.add_value("r2"),
          *y2 = g.add_value("y2"), *c3 = g.add_value("c3"), *y3 = g.add_value("y3"), *c4 = g.add_value("c4"),
          *out = g.add_value("out");
    Node* pool = g.add_node("MaxPool", "pool", {in}, {x0});
    pool->set_attr_ints("kernel_shape", {3, 3});
    pool->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Conv", "conv1", {x0, sine_weight(g, "W1", {16, 8, 3, 3}, t)}, {y1})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Concat", "concat2", {x0, y1}, {c2})->set_attr_int("axis", 1);
    g.add_node("Relu", "relu2", {c2}, {r2});
    g.add_node("Conv", "conv2", {r2, sine_weight(g, "W2", {16, 24, 3, 3}, t)}, {y2})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Concat", "concat3", {x0, y1, y2}, {c3})->set_attr_int("axis", 1);
    g.add_node("Conv", "conv3", {c3, sine_weight(g, "W3", {8, 40, 1, 1}, t)}, {y3});
    g.add_node("Concat", "concat4", {x0, y1, y2, y3}, {c4})->set_attr_int("axis", 1);
    g.add_node("Relu", "relu4", {c4}, {out});
    g.add_output(out);
    if (reduced) {
      Value* m = g.add_value("m");
      g.add_node("ReduceMean", "reduce", {c2}, {m})->set_attr_ints("axes", {1});
      g.add_output(m);
    }
    ops::infer_graph(g);
  }
};

const ConcatElision& decision(const Schedule& s, const std::string& node) {
  for (const ConcatElision& c : s.concats) {
    if (c.name == node) return c;
  }
  FAIL("no decision for " << node);
  return s.concats.front();
}

}  // namespace

TEST_CASE("elide_concat: an input other kernels read is written once; a conv reads its slice in place") {
  Skip net(true);
  const Schedule s = lower(net.g, layout_options(LayoutMode::automatic, true));
  CHECK(concat_kernels(s) == 0);
  const ConcatElision& c = decision(s, "concat");
  CHECK(c.elided);
  for (const ConcatElision::Input& in : c.inputs) CHECK(in.reason.empty());
  // conv_n reads s where conv_s wrote it: channel 16 of c's 32-channel pixels.
  const TensorView& whole = kernel_of(s, "conv_out").inputs[0];
  const TensorView& x = kernel_of(s, "conv_n").inputs[0];
  CHECK(x.buffer == whole.buffer);
  CHECK(x.offset == whole.offset + 16 * 2);
  CHECK(x.strides == std::vector<int64_t>{36 * 32, 1, 6 * 32, 32});
  CHECK(kernel_of(s, "conv_s").outputs[0].offset == x.offset);
  CHECK_FALSE(has_buffer(s, "s"));
  // Its weight: K over the 16 channels (compact), not over the buffer's pitch of 32.
  const KernelLayout l = kernel_layout(kernel_of(s, "conv_n"));
  CHECK(l.x_pitch == 32);
  CHECK(l.w.compact);
  CHECK(l.w.pitch == 16);
  CHECK(l.w.row == 16);
  CHECK(kernel_of(s, "conv_n").engine == Engine::tensor_core);
}

TEST_CASE("elide_concat: a reader that cannot take the slice keeps the Concat, and says why") {
  SUBCASE("an FP32 convolution (SIMT: X at its channel count)") {
    Skip net(false);
    const Schedule s = lower(net.g, layout_options(LayoutMode::automatic, false));
    CHECK(concat_kernels(s) == 1);
    const ConcatElision& c = decision(s, "concat");
    CHECK_FALSE(c.elided);
    CHECK(c.inputs[0].reason.empty());
    CHECK(c.inputs[1].reason.find("also read by 'conv_n' (conv)") != std::string::npos);
    CHECK(c.inputs[1].reason.find("16-bit tensor-core operands") != std::string::npos);
  }
  SUBCASE("a convolution's fused residual (read exactly as its Y is stored)") {
    Skip net(true, true);
    const Schedule s = lower(net.g, layout_options(LayoutMode::automatic, true));
    CHECK(concat_kernels(s) == 1);
    const std::string why = decision(s, "concat").inputs[1].reason;
    CAPTURE(why);
    CHECK(why.find("only X can be read at a channel pitch") != std::string::npos);
  }
}

TEST_CASE("elide_concat: nested Concats, each a prefix of the next, share the widest one's buffer") {
  DenseBlock net;
  LowerOptions o = layout_options(LayoutMode::automatic, true);
  o.passes.verify_each = true;
  const Schedule s = lower(net.g, o);
  CHECK(concat_kernels(s) == 0);
  CHECK(decision(s, "concat4").elided);
  CHECK(decision(s, "concat4").prefix_of.empty());
  for (const char* prefix : {"concat2", "concat3"}) {
    CAPTURE(prefix);
    CHECK(decision(s, prefix).elided);
    CHECK(decision(s, prefix).prefix_of == "concat4");
  }
  // One buffer of 48 channels: x0 at 0, y1 at 8, y2 at 24, y3 at 40; c2 and c3 its first channels.
  const std::vector<int64_t> strides{36 * 48, 1, 6 * 48, 48};
  const TensorView& whole = kernel_of(s, "relu4").inputs[0];
  CHECK(whole.strides == strides);
  for (const auto& [node, c0] : {std::make_pair("pool", 0), std::make_pair("conv1", 8), std::make_pair("conv2", 24),
                                 std::make_pair("conv3", 40)}) {
    const std::string name = node;
    CAPTURE(name);
    const TensorView& y = kernel_of(s, name).outputs[0];
    CHECK(y.buffer == whole.buffer);
    CHECK(y.offset == whole.offset + c0 * 2);
    CHECK(y.strides == strides);
  }
  const TensorView& c2 = kernel_of(s, "relu2").inputs[0];
  CHECK(c2.value == "c2");
  CHECK(c2.shape == Shape{1, 24, 6, 6});
  CHECK(c2.offset == whole.offset);
  CHECK(c2.strides == strides);
  // conv3 reads c3 (40 channels) at the pitch of 48: K over its 40 channels.
  const TensorView& c3 = kernel_of(s, "conv3").inputs[0];
  CHECK(c3.offset == whole.offset);
  CHECK(c3.strides == strides);
  CHECK(kernel_layout(kernel_of(s, "conv3")).w.compact);
  CHECK(kernel_of(s, "conv3").engine == Engine::tensor_core);
  for (const char* gone : {"x0", "y1", "y2", "y3", "c2", "c3"}) CHECK_FALSE(has_buffer(s, gone));
  CHECK(has_buffer(s, "c4"));
  // The one buffer lives from the pool (its first writer) to relu4 (its last reader).
  for (const LiveBuffer& b : s.arena_buffers) {
    if (b.name != "c4") continue;
    CHECK(s.kernels[static_cast<std::size_t>(b.first)].source.node->name() == "pool");
    CHECK(s.kernels[static_cast<std::size_t>(b.last)].source.node->name() == "relu4");
  }
}

TEST_CASE("elide_concat: a prefix whose output a kernel cannot read in place stays a Concat kernel") {
  // concat2's output also read by a ReduceMean: concat2 copies (from the slices of concat4's
  // buffer), the rest elided.
  DenseBlock net(true);
  const Schedule s = lower(net.g, layout_options(LayoutMode::automatic, true));
  CHECK(concat_kernels(s) == 1);
  const ConcatElision& c2 = decision(s, "concat2");
  CAPTURE(c2.reason);
  CHECK_FALSE(c2.elided);
  CHECK(c2.reason.find("not a view of the first channels of Concat 'concat4'") != std::string::npos);
  CHECK(decision(s, "concat3").elided);
  CHECK(decision(s, "concat4").elided);
  const nlohmann::json j = nlohmann::json::parse(report_json(s, ReportInfo{}));
  CHECK(j["concats"][0]["node"] == "concat2");
  CHECK(j["concats"][0]["prefix_of"] == "concat4");
  CHECK(j["concats"][0]["kept_because"] == c2.reason);
  CHECK(report_markdown(s, ReportInfo{}).find("| concat2 | (all) | not a view") != std::string::npos);
}

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

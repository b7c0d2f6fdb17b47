// schedule/layout: which buffers lower() stores channels-last, the conversions it adds, channel
// padding for tensor-core-eligible convolutions, the OHWI weights, and the nchw option.
#include <doctest/doctest.h>

#include <cmath>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;
using modelc::test::kernel_of;
using modelc::test::sine_weight;

namespace {

Value* value(Graph& g, const char* name) { return g.add_value(name); }

/// x [1, C, 8, 8] -> Conv 3x3 p1 (8 channels) -> Relu -> MaxPool 2x2 s2 -> Conv 1x1 (16) ->
/// GlobalAveragePool -> Flatten -> Gemm (10). With `fp16`, x is cast to float16 first and the
/// weights are float16.
struct Net {
  Graph g;
  Net(int64_t C, bool fp16) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {1, C, 8, 8});
    Value* a = x;
    if (fp16) {
      a = value(g, "x16");
      Node* cast = g.add_node("Cast", "cast", {x}, {a});
      cast->set_attr_int("to", 10);
    }
    Value *c1 = value(g, "c1"), *r1 = value(g, "r1"), *p1 = value(g, "p1"), *c2 = value(g, "c2"),
          *gp = value(g, "gp"), *fl = value(g, "fl"), *y = value(g, "y");
    Node* conv1 =
        g.add_node("Conv", "conv1", {a, sine_weight(g, "W1", {8, C, 3, 3}, t), sine_weight(g, "B1", {8}, t)}, {c1});
    conv1->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Relu", "relu1", {c1}, {r1});
    Node* pool = g.add_node("MaxPool", "pool1", {r1}, {p1});
    pool->set_attr_ints("kernel_shape", {2, 2});
    pool->set_attr_ints("strides", {2, 2});
    g.add_node("Conv", "conv2", {p1, sine_weight(g, "W2", {16, 8, 1, 1}, t)}, {c2});
    g.add_node("GlobalAveragePool", "gap", {c2}, {gp});
    g.add_node("Flatten", "flatten", {gp}, {fl});
    Node* gemm =
        g.add_node("Gemm", "fc", {fl, sine_weight(g, "Wfc", {10, 16}, t), sine_weight(g, "Bfc", {10}, t)}, {y});
    gemm->set_attr_int("transB", 1);
    g.add_output(y);
    ops::infer_graph(g);
  }
};

LowerOptions options(LayoutMode mode = LayoutMode::automatic) {
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_75"};
  o.layout = mode;
  o.passes.fuse_epilogue = false;  // the Relu stays a kernel of its own: an elementwise neighbour
  return o;
}

int conversions(const Schedule& s) {
  int n = 0;
  for (const Kernel& k : s.kernels) n += k.note.find("layout conversion") != std::string::npos;
  return n;
}

const WeightEntry& weight_entry(const Schedule& s, const std::string& name) {
  for (const WeightEntry& w : s.weights) {
    if (w.value == name) return w;
  }
  FAIL("no weight " << name);
  return s.weights.front();
}

}  // namespace

TEST_CASE("layout: conv-relu-pool-conv-globalpool-flatten-gemm runs channels-last with one conversion") {
  Net net(3, false);
  const Schedule s = lower(net.g, options());
  // The model input is the caller's NCHW buffer: one conversion before conv1, nothing else.
  CHECK(conversions(s) == 1);
  REQUIRE(s.kernels.size() == 7);
  const Kernel& to_nhwc = s.kernels[0];
  CHECK(to_nhwc.family_name() == "elementwise");
  CHECK(to_nhwc.note.find("'x' is NCHW (a model input)") != std::string::npos);
  CHECK(to_nhwc.inputs[0].space == Space::input);
  CHECK(to_nhwc.inputs[0].strides == std::vector<int64_t>{192, 64, 8, 1});
  CHECK(to_nhwc.outputs[0].strides == std::vector<int64_t>{192, 1, 24, 3});

  const Kernel& conv1 = kernel_of(s, "conv1");
  CHECK(conv1.inputs[0].offset == to_nhwc.outputs[0].offset);
  CHECK(conv1.inputs[0].strides == std::vector<int64_t>{192, 1, 24, 3});
  CHECK(conv1.inputs[1].strides == std::vector<int64_t>{27, 1, 9, 3});  // OHWI
  CHECK(conv1.outputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  const Kernel& relu = kernel_of(s, "relu1");
  CHECK(relu.inputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  CHECK(relu.outputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  const Kernel& pool = kernel_of(s, "pool1");
  CHECK(pool.outputs[0].strides == std::vector<int64_t>{128, 1, 32, 8});
  CHECK(pool.note.find("NHWC") != std::string::npos);
  const Kernel& conv2 = kernel_of(s, "conv2");
  CHECK(conv2.outputs[0].strides == std::vector<int64_t>{256, 1, 64, 16});
  // [1, 16, 1, 1] is the same memory in both layouts: the Flatten view needs no conversion.
  const Kernel& gap = kernel_of(s, "gap");
  CHECK(gap.inputs[0].strides == std::vector<int64_t>{256, 1, 64, 16});
  const Kernel& fc = kernel_of(s, "fc");
  CHECK(fc.inputs[0].shape == Shape{1, 16});
  CHECK(fc.inputs[0].strides == std::vector<int64_t>{16, 1});
  CHECK(fc.inputs[0].offset == gap.outputs[0].offset);
  CHECK(fc.outputs[0].space == Space::output);
}

TEST_CASE("layout: a pool whose output is flattened with spatial extent converts after the pool") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {1, 4, 6, 6});
  Value *c = value(g, "c"), *p = value(g, "p"), *f = value(g, "f");
  Node* conv = g.add_node("Conv", "conv", {x, sine_weight(g, "W", {8, 4, 3, 3})}, {c});
  conv->set_attr_ints("pads", {1, 1, 1, 1});
  Node* pool = g.add_node("AveragePool", "pool", {c}, {p});
  pool->set_attr_ints("kernel_shape", {2, 2});
  pool->set_attr_ints("strides", {2, 2});
  g.add_node("Flatten", "flatten", {p}, {f});
  g.add_output(f);
  ops::infer_graph(g);
  const Schedule s = lower(g, options());
  CHECK(conversions(s) == 2);  // the input, and the pool's output (a model output through Flatten)
  const Kernel& last = s.kernels.back();
  CHECK(last.note.find("layout conversion: AveragePool 'pool' writes NHWC") != std::string::npos);
  CHECK(last.inputs[0].strides == std::vector<int64_t>{72, 1, 24, 8});
  CHECK(last.outputs[0].space == Space::output);
  CHECK(last.outputs[0].strides == std::vector<int64_t>{72, 9, 3, 1});
}

TEST_CASE("layout: under float16, a 3-channel input is padded to 8 channels by the Cast") {
  Net net(3, true);
  const Schedule s = lower(net.g, options());
  CHECK(conversions(s) == 0);  // the Cast writes the channels-last view directly
  const Kernel& cast = kernel_of(s, "cast");
  CHECK(cast.inputs[0].strides == std::vector<int64_t>{192, 64, 8, 1});
  CHECK(cast.outputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  const Kernel& conv1 = kernel_of(s, "conv1");
  CHECK(conv1.inputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  // Compact weights (3 channels, below kCompactKChannels): pitch 3, rows of 27 rounded up to 32.
  CHECK(conv1.inputs[1].strides == std::vector<int64_t>{32, 1, 9, 3});
  // The buffer holds whole padded pixels: 64 pixels x 8 channels x 2 bytes.
  const Kernel& relu = kernel_of(s, "relu1");
  CHECK(relu.outputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  // conv1's input has 8 * 64 * 2 bytes and conv1's output the same: they must not overlap.
  const int64_t a = conv1.inputs[0].offset, b = conv1.outputs[0].offset;
  CHECK((a + 1024 <= b || b + 1024 <= a));
  // The weight copy: [8][32], (tap, channel) pairs 0..26 of each row, 27..31 zero.
  const WeightEntry& w = weight_entry(s, "W1");
  CHECK(w.data.shape() == Shape{8, 32});
  CHECK(w.data.nbytes() == 8 * 32 * 2);
  const std::vector<double> d = w.data.to_f64();
  int nonzero_padding = 0, zero_data = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    nonzero_padding += i % 32 >= 27 && d[i] != 0.0;
    zero_data += i % 32 < 27 && d[i] == 0.0;
  }
  CHECK(nonzero_padding == 0);
  CHECK(zero_data == 0);  // sine weights: none is 0
  // Channel counts that are multiples of 8 are not padded.
  CHECK(kernel_of(s, "conv2").inputs[0].strides == std::vector<int64_t>{128, 1, 32, 8});
}

TEST_CASE("layout: OHWI weights equal the permuted original") {
  Net net(5, false);
  const Tensor original = net.g.find_value("W1")->constant();
  const Schedule s = lower(net.g, options());
  const WeightEntry& w = weight_entry(s, "W1");
  REQUIRE(w.data.shape() == Shape{8, 3, 3, 5});
  const std::vector<double> got = w.data.to_f64(), want = original.to_f64();
  int bad = 0;
  for (int64_t m = 0; m < 8; ++m)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) {
          bad += got[static_cast<std::size_t>(((m * 3 + kh) * 3 + kw) * 5 + c)] !=
                 want[static_cast<std::size_t>(((m * 5 + c) * 3 + kh) * 3 + kw)];
        }
  CHECK(bad == 0);
  // ohwi_weights with a pitch: the same values, zero beyond Cg.
  const Tensor padded = ohwi_weights(original, WeightStorage{8, 72});
  CHECK(padded.shape() == Shape{8, 3, 3, 8});
  const std::vector<double> p = padded.to_f64();
  CHECK(p[static_cast<std::size_t>(((2 * 3 + 1) * 3 + 2) * 8 + 4)] == want[static_cast<std::size_t>(((2 * 5 + 4) * 3 + 1) * 3 + 2)]);
  CHECK(p[static_cast<std::size_t>(((2 * 3 + 1) * 3 + 2) * 8 + 5)] == 0.0);
  // Compact: rows of 48, element (m, tap * 5 + c), the tail 45..47 zero; the view's strides agree.
  const Tensor compact = ohwi_weights(original, WeightStorage{5, 48, true});
  CHECK(compact.shape() == Shape{8, 48});
  const std::vector<int64_t> st = weight_strides(original.shape(), WeightStorage{5, 48, true});
  CHECK(st == std::vector<int64_t>{48, 1, 15, 5});
  const std::vector<double> q = compact.to_f64();
  int bad_compact = 0, nonzero_tail = 0;
  for (int64_t m = 0; m < 8; ++m) {
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 3; ++kw) {
          bad_compact += q[static_cast<std::size_t>(m * st[0] + c * st[1] + kh * st[2] + kw * st[3])] !=
                         want[static_cast<std::size_t>(((m * 5 + c) * 3 + kh) * 3 + kw)];
        }
    for (int64_t e = 45; e < 48; ++e) nonzero_tail += q[static_cast<std::size_t>(m * 48 + e)] != 0.0;
  }
  CHECK(bad_compact == 0);
  CHECK(nonzero_tail == 0);
  CHECK_THROWS_WITH(ohwi_weights(original, WeightStorage{5, 44, true}), doctest::Contains("internal"));
}

TEST_CASE("layout: the weight storage rule (conv_weight_storage)") {
  // One group on tensor cores below 8 channels: compact, rows rounded up to 8 elements.
  CHECK(conv_weight_storage({64, 3, 7, 7}, 3, 8, true) == WeightStorage{3, 152, true});
  CHECK(conv_weight_storage({16, 1, 1, 1}, 1, 8, true) == WeightStorage{1, 8, true});
  CHECK(conv_weight_storage({16, 2, 2, 2}, 2, 8, true) == WeightStorage{2, 8, true});  // already whole
  // 8 channels or more, or SIMT: padded to X's pitch.
  CHECK(conv_weight_storage({64, 12, 3, 3}, 12, 16, true) == WeightStorage{16, 144});
  CHECK(conv_weight_storage({64, 3, 7, 7}, 3, 3, false) == WeightStorage{3, 147});
  // Grouped: its own channel count.
  CHECK(conv_weight_storage({16, 4, 3, 3}, 16, 16, false) == WeightStorage{4, 36});
  // 8-bit operands (chunks of 16) below 16 channels, or at a pitch that is not whole chunks (a
  // one-pixel buffer keeps C): compact, rows rounded up to 16; at a pitch of whole chunks: padded.
  CHECK(conv_weight_storage({64, 12, 3, 3}, 12, 16, true, 16) == WeightStorage{12, 112, true});
  CHECK(conv_weight_storage({64, 21, 1, 1}, 21, 21, true, 16) == WeightStorage{21, 32, true});
  CHECK(conv_weight_storage({64, 21, 3, 3}, 21, 32, true, 16) == WeightStorage{32, 288});
  // FP16 at such a pitch stays padded at it (the SIMT form runs it: conv_fallback).
  CHECK(conv_weight_storage({64, 10, 1, 1}, 10, 10, true) == WeightStorage{10, 10});
}

TEST_CASE("layout: a one-pixel buffer keeps its channel count as its pitch (issue 30's squeeze-and-excite)") {
  // x [1, 8, 4, 4] fp16 -> Conv 3x3 (24) -> GlobalAveragePool -> Conv 1x1 (10) + Relu -> Conv 1x1
  // (24) -> Sigmoid -> Mul: the FCs' buffers [1, C, 1, 1] are channels-last views whose strides
  // cannot show a padded pitch; padding them stored f2's weights at 16 while f2 read X at 10.
  Graph g;
  g.set_opset(17);
  const DType t = DType::float16;
  Value* x = input(g, "x", {1, 8, 4, 4}, t);
  Value *c = value(g, "c"), *p = value(g, "p"), *q = value(g, "q"), *r = value(g, "r"), *e = value(g, "e"),
        *sg = value(g, "sg"), *y = value(g, "y");
  Node* conv = g.add_node("Conv", "c0", {x, sine_weight(g, "W0", {24, 8, 3, 3}, t)}, {c});
  conv->set_attr_ints("pads", {1, 1, 1, 1});
  g.add_node("GlobalAveragePool", "gap", {c}, {p});
  g.add_node("Conv", "f1", {p, sine_weight(g, "W1", {10, 24, 1, 1}, t), sine_weight(g, "B1", {10}, t)}, {q});
  g.add_node("Relu", "relu", {q}, {r});
  g.add_node("Conv", "f2", {r, sine_weight(g, "W2", {24, 10, 1, 1}, t), sine_weight(g, "B2", {24}, t)}, {e});
  g.add_node("Sigmoid", "sigmoid", {e}, {sg});
  g.add_node("Mul", "mul", {c, sg}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o = options();
  o.passes.fuse_epilogue = true;
  // The FCs as convolutions of their own (fuse_se_gate would run the gate as one se_gate kernel; an
  // SE block it refuses still has them).
  o.passes.disabled.insert("fuse_se_gate");
  const Schedule s = lower(g, o);
  const Kernel& f2 = kernel_of(s, "f2");
  // X (f1's output, one pixel) at pitch 10: dense and channels-last at once; W at pitch 10.
  const KernelLayout l = kernel_layout(f2);
  CHECK(l.x_pitch == 10);
  CHECK(f2.inputs[1].strides == std::vector<int64_t>{10, 1, 10, 10});
  // 10 channels at pitch 10: not whole 16-byte chunks, so the SIMT form runs it.
  CHECK(f2.engine == Engine::simt);
  CHECK(f2.fallback_reason == "channels 10 not padded to a multiple of 8");
  const Kernel& f1 = kernel_of(s, "f1");
  CHECK(kernel_layout(f1).x_pitch == 24);
  CHECK(kernel_layout(f1).y_pitch == 10);
  // The 3x3 conv's output (16 pixels of 24 channels) stays channels-last.
  CHECK(kernel_of(s, "c0").outputs[0].strides == std::vector<int64_t>{384, 1, 96, 24});
}

TEST_CASE("layout: the nchw option and graphs without convolutions keep every view dense") {
  Net net(3, false);
  const Schedule s = lower(net.g, options(LayoutMode::nchw));
  CHECK(conversions(s) == 0);
  for (const Kernel& k : s.kernels) {
    for (const TensorView& v : k.inputs) CHECK(v.dense());
    for (const TensorView& v : k.outputs) CHECK(v.dense());
  }
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {1, 4, 6, 6});
  Value *p = value(g, "p"), *r = value(g, "r");
  Node* pool = g.add_node("MaxPool", "pool", {x}, {p});
  pool->set_attr_ints("kernel_shape", {2, 2});
  g.add_node("Relu", "relu", {p}, {r});
  g.add_output(r);
  ops::infer_graph(g);
  const Schedule t = lower(g, options());
  REQUIRE(t.kernels.size() == 2);
  CHECK(t.kernels[0].outputs[0].dense());
  CHECK(parse_layout_mode("auto") == LayoutMode::automatic);
  CHECK(parse_layout_mode("nchw") == LayoutMode::nchw);
  CHECK_THROWS_WITH(parse_layout_mode("nhwc"), doctest::Contains("auto"));
}

TEST_CASE("layout: view strides through reshapes that only add or drop unit dims") {
  std::vector<int64_t> st;
  const Shape root{2, 16, 1, 1};
  REQUIRE(view_strides(root, channels_last_strides(root, 24), {2, 16}, &st));
  CHECK(st == std::vector<int64_t>{24, 1});
  CHECK_FALSE(view_strides({1, 4, 2, 2}, channels_last_strides({1, 4, 2, 2}, 4), {1, 16}, &st));
  REQUIRE(view_strides({1, 4, 2, 2}, strides_of({1, 4, 2, 2}), {1, 16}, &st));
  CHECK(st == std::vector<int64_t>{16, 1});
  CHECK(storage_elements({2, 3, 4, 4}, Storage{true, 8}) == 2 * 16 * 8);
}

TEST_CASE("layout: a FusedConv's residual has Y's strides; a residual stored NCHW is converted") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {1, 8, 6, 6});
  Value *c1 = value(g, "c1"), *r1 = value(g, "r1"), *c2 = value(g, "c2"), *s = value(g, "s"), *y = value(g, "y");
  Node* conv1 = g.add_node("Conv", "conv1", {x, sine_weight(g, "W1", {8, 8, 3, 3}), sine_weight(g, "B1", {8})}, {c1});
  conv1->set_attr_ints("pads", {1, 1, 1, 1});
  g.add_node("Relu", "relu1", {c1}, {r1});
  Node* conv2 = g.add_node("Conv", "conv2", {r1, sine_weight(g, "W2", {8, 8, 3, 3}), sine_weight(g, "B2", {8})}, {c2});
  conv2->set_attr_ints("pads", {1, 1, 1, 1});
  g.add_node("Add", "add", {c2, x}, {s});  // the residual is the model input: NCHW
  g.add_node("Relu", "relu2", {s}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o = options();
  o.passes.fuse_epilogue = true;
  const Schedule sch = lower(g, o);
  const Kernel* fused = nullptr;
  for (const Kernel& k : sch.kernels) {
    if (k.source.node && k.source.node->op() == "FusedConv" && k.inputs.size() > 3 && k.inputs[3].dtype != DType::undefined) fused = &k;
  }
  REQUIRE(fused != nullptr);
  CHECK(fused->inputs[3].strides == fused->outputs[0].strides);
  CHECK(fused->inputs[3].strides == std::vector<int64_t>{288, 1, 48, 8});
  // x is converted once (conv1's X and the residual share the copy); y is the caller's NCHW buffer.
  CHECK(conversions(sch) == 2);
  CHECK(sch.kernels.back().outputs[0].space == Space::output);
  CHECK(sch.kernels.back().outputs[0].dense());
  CHECK(kernel_layout(*fused).channels_last);
}

// inception_v3 at 80x80: Mixed_7c's Concat is [1, 2048, 1, 1], stored channels-last (its inputs are),
// and read by the global pool. Its strides differ from the dense ones only in unit dims, so the pool
// runs NCHW on the same memory (kernel_layout); require_dense compared the strides themselves and
// refused the view ("internal: kernel k.. (pool) got a strided view").
TEST_CASE("layout: a global pool reads a channels-last Concat without spatial extent as NCHW") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {1, 4, 3, 3});
  Value *a = value(g, "a"), *b = value(g, "b"), *cat = value(g, "cat"), *y = value(g, "y");
  g.add_node("Conv", "conv_a", {x, sine_weight(g, "Wa", {8, 4, 3, 3})}, {a});
  g.add_node("Conv", "conv_b", {x, sine_weight(g, "Wb", {8, 4, 3, 3})}, {b});
  g.add_node("Concat", "concat", {a, b}, {cat})->set_attr_int("axis", 1);
  g.add_node("GlobalAveragePool", "gap", {cat}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o = options();
  o.passes.disabled.insert("elide_concat");  // the Concat kernel writes the buffer (elided, the convs do)
  const Schedule s = lower(g, o);
  const Kernel& concat = kernel_of(s, "concat");
  CHECK(concat.outputs[0].strides == std::vector<int64_t>{16, 1, 16, 16});  // channels-last, pitch 16
  const Kernel& gap = kernel_of(s, "gap");
  REQUIRE(gap.inputs[0].strides == std::vector<int64_t>{16, 1, 16, 16});
  CHECK_FALSE(gap.inputs[0].dense());  // not the dense strides ...
  CHECK(dense_view(gap.inputs[0]));    // ... but the dense memory
  CHECK_FALSE(kernel_layout(gap).channels_last);
  CHECK_NOTHROW(linear::require_dense(gap));
  // A view strided in a dim of extent > 1 is still refused.
  Kernel strided = gap;
  strided.inputs[0].shape = {2, 16, 1, 1};
  strided.inputs[0].strides = {32, 1, 16, 16};
  CHECK_THROWS_WITH(linear::require_dense(strided), doctest::Contains("strided view of 'cat'"));
}

TEST_CASE("layout stage: storage on the buffers, a conversion kernel, OHWI weights, every view recomputed") {
  Net net(3, false);
  LowerOptions o = options();
  o.passes.verify_each = true;
  Schedule s = test::before(net.g, o, "layout");
  REQUIRE(s.kernels.size() == 6);
  for (const Buffer& b : s.buffers) {
    CHECK_FALSE(b.storage.channels_last);
    CHECK_FALSE(b.ohwi.has_value());
  }
  CHECK(kernel_of(s, "conv1").outputs[0].strides == std::vector<int64_t>{512, 64, 8, 1});  // dense so far
  CHECK(run_schedule_stage(s, o, "layout"));
  REQUIRE(s.kernels.size() == 7);
  // The conversion of the model input is a kernel of its own, saying why, before conv1.
  const Kernel& to_nhwc = s.kernels[0];
  CHECK(to_nhwc.id == "k0");
  CHECK(to_nhwc.family_name() == "elementwise");
  CHECK(to_nhwc.conversion.find("'x' is NCHW (a model input)") != std::string::npos);
  CHECK(to_nhwc.source.node->op() == "Identity");
  const Kernel& conv1 = kernel_of(s, "conv1");
  CHECK(conv1.channels_last);
  CHECK_FALSE(kernel_of(s, "relu1").channels_last);  // elementwise: follows, does not run, the layout
  CHECK(kernel_of(s, "pool1").channels_last);
  CHECK(conv1.source.inputs[0] == to_nhwc.source.outputs[0]);  // rewired to the converted value
  // The decisions are the buffers' fields, the views follow from them.
  const Buffer& c1 = test::buffer_of(s, "c1");
  CHECK(c1.storage.channels_last);
  CHECK(c1.storage.pitch == 8);
  CHECK(c1.bytes == 8 * 8 * 8 * 4);
  CHECK(conv1.outputs[0].strides == std::vector<int64_t>{512, 1, 64, 8});
  const Buffer& w1 = test::buffer_of(s, "W1");
  REQUIRE(w1.ohwi.has_value());
  CHECK(w1.ohwi->pitch == 3);
  CHECK(w1.ohwi->row == 27);
  CHECK(conv1.inputs[1].strides == std::vector<int64_t>{27, 1, 9, 3});
  CHECK_FALSE(test::buffer_of(s, "x").storage.channels_last);  // the caller's NCHW buffer
  CHECK(s.layout.find("1 layout conversions") != std::string::npos);
}

TEST_CASE("layout stage: --layout nchw decides nothing") {
  Net net(3, false);
  LowerOptions o = options(LayoutMode::nchw);
  Schedule s = test::before(net.g, o, "layout");
  CHECK_FALSE(run_schedule_stage(s, o, "layout"));
  CHECK(s.kernels.size() == 6);
  for (const Kernel& k : s.kernels) CHECK_FALSE(k.channels_last);
  CHECK(s.layout.empty());
}

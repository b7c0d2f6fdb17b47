// schedule's fuse_prologue stage: a BatchNormalization + Relu read only by a 1x1 conv, and a
// squeeze-and-excite Mul(x, gate [N, C, 1, 1]) read only by a 1x1 conv, run no kernel in FP16
// channels-last: the convs read their inputs and carry the prologue (Kernel::prologue, inputs 4..6:
// FP32 scale and shift computed from the BN's parameters, the gate's view); a BN + Relu read by a
// padded 3x3 conv stays a kernel with its reason, and so does everything in FP32, in the NCHW
// layout, and with the stage disabled. (Through the host emulation: tests/e2e/codegen/conv_blocks.py's
// dense and squeeze-and-excite blocks.) A BN + Relu read only by pools (a global average pool, a
// padded AveragePool) runs in the pools' loads, in FP16 NHWC, FP32 and NCHW; with a conv reader
// that cannot take it as well, it stays with that reader's reason. (The pool template with the
// prologue: tests/templates/pool_prologue_test.cpp; densenet121_64's norm5: e2e_tensor_cores_densenet121_64.)
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/layout.h"
#include "schedule/linear_plans.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using namespace modelc::test;  // input, sine_weight, network_input, kernel_of, layout_options

namespace {

/// x [1, 16, 6, 6] -> conv0 3x3 (32) -> a; a -> bn1 -> relu1 -> conv1 1x1 (16) -> y1;
/// a -> bn2 -> relu2 -> conv2 3x3 pad 1 (16) -> y2; a -> GlobalAveragePool -> fc 1x1 (32) -> Sigmoid
/// -> s; Mul(a, s) -> conv3 1x1 (16) -> y3.
struct Net {
  Graph g;
  explicit Net(bool fp16) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {1, 16, 6, 6});
    Value* in = network_input(g, x, fp16);
    auto v = [&](const char* name) { return g.add_value(name); };
    Value *a = v("a"), *b1 = v("b1"), *r1 = v("r1"), *y1 = v("y1"), *b2 = v("b2"), *r2 = v("r2"), *y2 = v("y2"),
          *p = v("p"), *f = v("f"), *s = v("s"), *m = v("m"), *y3 = v("y3");
    g.add_node("Conv", "conv0", {in, sine_weight(g, "W0", {32, 16, 3, 3}, t)}, {a})->set_attr_ints("pads", {1, 1, 1, 1});
    auto bn = [&](const std::string& n, Value* from, Value* to) {
      std::vector<double> gamma, beta, mean, var;
      for (int c = 0; c < 32; ++c) {
        gamma.push_back(1.0 + 0.01 * c);
        beta.push_back(0.1 * std::sin(c));
        mean.push_back(0.05 * std::cos(c));
        var.push_back(0.5 + 0.02 * c);
      }
      auto k = [&](const std::string& name, const std::vector<double>& d) {
        return g.add_constant(n + name, Tensor::from_f64(DType::float32, {32}, d), true);
      };
      g.add_node("BatchNormalization", n, {from, k("_g", gamma), k("_b", beta), k("_m", mean), k("_v", var)}, {to})
          ->set_attr_float("epsilon", 1e-3);
    };
    bn("bn1", a, b1);
    g.add_node("Relu", "relu1", {b1}, {r1});
    g.add_node("Conv", "conv1", {r1, sine_weight(g, "W1", {16, 32, 1, 1}, t)}, {y1});
    bn("bn2", a, b2);
    g.add_node("Relu", "relu2", {b2}, {r2});
    g.add_node("Conv", "conv2", {r2, sine_weight(g, "W2", {16, 32, 3, 3}, t)}, {y2})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("GlobalAveragePool", "gap", {a}, {p});
    g.add_node("Conv", "fc", {p, sine_weight(g, "Wf", {32, 32, 1, 1}, t)}, {f});
    g.add_node("Sigmoid", "gate", {f}, {s});
    g.add_node("Mul", "scale", {a, s}, {m});
    g.add_node("Conv", "conv3", {m, sine_weight(g, "W3", {16, 32, 1, 1}, t)}, {y3});
    for (Value* o : {y1, y2, y3}) g.add_output(o);
    ops::infer_graph(g);
  }
};

/// The kernel that covers node `node` (its main node or a node it took in).
const Kernel* covering(const Schedule& s, const std::string& node) {
  for (const Kernel& k : s.kernels) {
    if (std::find(k.nodes.begin(), k.nodes.end(), node) != k.nodes.end()) return &k;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("fuse_prologue: BN + Relu and the SE Mul before 1x1 convs run in the convs' operand load (FP16 NHWC)") {
  Net n(true);
  const Schedule s = lower(n.g, layout_options(LayoutMode::automatic, true));
  const Kernel& conv1 = kernel_of(s, "conv1");
  REQUIRE(covering(s, "bn1") == &conv1);
  CHECK(covering(s, "relu1") == &conv1);
  CHECK(conv1.prologue.affine);
  CHECK(conv1.prologue.relu);
  CHECK_FALSE(conv1.prologue.gate);
  CHECK(conv1.inputs[0].value == "a");
  REQUIRE(conv1.inputs.size() == 7);
  const TensorView &scale = conv1.inputs[kPrologueScaleInput], &shift = conv1.inputs[kPrologueShiftInput];
  CHECK(scale.dtype == DType::float32);
  CHECK(scale.shape == Shape{32});
  CHECK(scale.space == Space::weights);
  // scale = gamma / sqrt(var + eps), shift = beta - mean scale, from the BN's own parameters as
  // the precision pass stored them (FP16).
  const Tensor& sc = n.g.find_value(scale.value)->constant();
  const Tensor& sh = n.g.find_value(shift.value)->constant();
  auto f16 = [](double v) { return Tensor::from_f64(DType::float16, {1}, {v}).to_f64()[0]; };
  for (int c : {0, 7, 31}) {
    const double want = f16(1.0 + 0.01 * c) / std::sqrt(f16(0.5 + 0.02 * c) + 1e-3);
    CHECK(sc.to_f64()[static_cast<std::size_t>(c)] == doctest::Approx(want).epsilon(1e-6));
    CHECK(sh.to_f64()[static_cast<std::size_t>(c)] ==
          doctest::Approx(f16(0.1 * std::sin(c)) - f16(0.05 * std::cos(c)) * want).epsilon(1e-6));
  }
  CHECK(conv1.inputs[kPrologueGateInput].dtype == DType::undefined);
  CHECK(plan_of<linear::ConvPlan>(conv1).prologue.affine);
  CHECK(conv1.engine == Engine::tensor_core);
  CHECK(conv1.note.find("X loaded through the prologue relu(x * scale + shift)") != std::string::npos);

  // The SE Mul: conv3 reads a and the gate s.
  const Kernel& conv3 = kernel_of(s, "conv3");
  REQUIRE(covering(s, "scale") == &conv3);
  CHECK(conv3.prologue.gate);
  CHECK_FALSE(conv3.prologue.affine);
  CHECK(conv3.inputs[0].value == "a");
  CHECK(conv3.inputs[kPrologueGateInput].value == "s");
  CHECK(conv3.inputs[kPrologueScaleInput].dtype == DType::undefined);
  CHECK(plan_of<linear::ConvPlan>(conv3).gate_pitch == 32);

  // bn2's reader is a padded 3x3: it stays a kernel, and says why.
  const Kernel* bn2 = covering(s, "bn2");
  REQUIRE(bn2 != nullptr);
  CHECK(bn2->family_name() == "elementwise");
  CHECK(bn2->kept_prologue.find("not a 1x1 stride-1 unpadded convolution") != std::string::npos);
  CHECK(bn2->note.find("not a conv prologue") != std::string::npos);
}

TEST_CASE("fuse_prologue: FP32, the NCHW layout and a disabled stage keep the elementwise kernels") {
  {
    Net n(false);
    const Schedule s = lower(n.g, layout_options(LayoutMode::automatic, false));
    const Kernel* bn1 = covering(s, "bn1");
    REQUIRE(bn1 != nullptr);
    CHECK(bn1->family_name() == "elementwise");
    CHECK(bn1->kept_prologue.find("FP32 storage") != std::string::npos);
    CHECK_FALSE(kernel_of(s, "conv1").prologue.active());
    CHECK(covering(s, "scale")->family_name() == "elementwise");
  }
  {
    Net n(true);
    const Schedule s = lower(n.g, layout_options(LayoutMode::nchw, true));
    CHECK(covering(s, "bn1")->family_name() == "elementwise");
    CHECK(covering(s, "bn1")->kept_prologue == "NCHW layout");
  }
  {
    Net n(true);
    LowerOptions o = layout_options(LayoutMode::automatic, true);
    o.passes.disabled.insert("fuse_prologue");
    const Schedule s = lower(n.g, o);
    CHECK(covering(s, "bn1")->family_name() == "elementwise");
    CHECK(covering(s, "scale")->family_name() == "elementwise");
    CHECK_FALSE(kernel_of(s, "conv3").prologue.active());
  }
}

namespace {

/// A dense block whose Concats share one buffer (elide_concat): x [1, 16, 6, 6] -> conv0 1x1 (16)
/// -> a; bn1 + relu1 -> conv1 1x1 (16) -> y1; c2 = Concat(a, y1); bn2 + relu2 -> conv2 1x1 (16) -> y2;
/// c3 = Concat(c2, y2); bn3 + relu3 -> conv3 1x1 (8) -> out. a, c2 and c3 are prefixes of one
/// 48-channel buffer, so each BN's input is read at the pitch of 48, not at its own channel count.
struct DenseNet {
  Graph g;
  DenseNet() {
    g.set_opset(17);
    const DType t = DType::float16;
    Value* x = input(g, "x", {1, 16, 6, 6});
    Value* in = network_input(g, x, true);
    auto v = [&](const std::string& name) { return g.add_value(name); };
    auto bn_relu_conv = [&](const std::string& n, Value* from, int c, int out) {
      std::vector<double> gamma, beta, mean, var;
      for (int i = 0; i < c; ++i) {
        gamma.push_back(1.0 + 0.01 * i);
        beta.push_back(0.1 * std::sin(i));
        mean.push_back(0.05 * std::cos(i));
        var.push_back(0.5 + 0.02 * i);
      }
      auto k = [&](const std::string& name, const std::vector<double>& d) {
        return g.add_constant("bn" + n + name, Tensor::from_f64(DType::float32, {c}, d), true);
      };
      Value *b = v("b" + n), *r = v("r" + n), *y = v("y" + n);
      g.add_node("BatchNormalization", "bn" + n, {from, k("_g", gamma), k("_b", beta), k("_m", mean), k("_v", var)}, {b})
          ->set_attr_float("epsilon", 1e-3);
      g.add_node("Relu", "relu" + n, {b}, {r});
      g.add_node("Conv", "conv" + n, {r, sine_weight(g, "W" + n, {out, c, 1, 1}, t)}, {y});
      return y;
    };
    Value* a = v("a");
    g.add_node("Conv", "conv0", {in, sine_weight(g, "W0", {16, 16, 1, 1}, t)}, {a});
    Value* y1 = bn_relu_conv("1", a, 16, 16);
    Value* c2 = v("c2");
    g.add_node("Concat", "concat2", {a, y1}, {c2})->set_attr_int("axis", 1);
    Value* y2 = bn_relu_conv("2", c2, 32, 16);
    Value* c3 = v("c3");
    g.add_node("Concat", "concat3", {c2, y2}, {c3})->set_attr_int("axis", 1);
    g.add_output(bn_relu_conv("3", c3, 48, 8));
    ops::infer_graph(g);
  }
};

}  // namespace

TEST_CASE("fuse_prologue: a BN reading a prefix of a dense block's shared Concat buffer folds, the conv at that pitch") {
  DenseNet n;
  LowerOptions o = layout_options(LayoutMode::automatic, true);
  o.passes.verify_each = true;
  const Schedule s = lower(n.g, o);
  for (const Kernel& k : s.kernels) {
    CAPTURE(k.id);
    CHECK(k.family_name() != "concat");
  }
  // No BN kernel: each BN and Relu runs in its conv (the elementwise kernels left are the FP32
  // boundary's Casts).
  for (const char* n : {"1", "2", "3"}) {
    CAPTURE(n);
    CHECK(covering(s, std::string("bn") + n) == &kernel_of(s, std::string("conv") + n));
    CHECK(covering(s, std::string("relu") + n) == &kernel_of(s, std::string("conv") + n));
  }
  const std::vector<int64_t> pitch48{36 * 48, 1, 6 * 48, 48};
  for (const char* c : {"conv1", "conv2", "conv3"}) {
    CAPTURE(c);
    const Kernel& k = kernel_of(s, c);
    CHECK(k.prologue.affine);
    CHECK(k.prologue.relu);
    CHECK(k.engine == Engine::tensor_core);
    CHECK(k.inputs[0].strides == pitch48);
  }
  CHECK(kernel_of(s, "conv1").inputs[0].value == "a");
  CHECK(kernel_of(s, "conv2").inputs[0].value == "c2");
  // conv1 and conv2 read 16 and 32 channels at the pitch of 48: K over their channels, the weight
  // stored so (compact); conv3 reads all 48.
  CHECK(kernel_layout(kernel_of(s, "conv1")).w.compact);
  CHECK(kernel_layout(kernel_of(s, "conv2")).w.compact);
  CHECK_FALSE(kernel_layout(kernel_of(s, "conv3")).w.compact);
}

namespace {

/// BNs before pools (DenseNet's norm5 + ReLU before its global average pool): x [1, 16, 6, 6] ->
/// conv0 3x3 (16) -> a; bn1 + relu1 -> GlobalAveragePool gap1 -> p1; bn2 + relu2 -> AveragePool
/// 3x3 pads 1 count_include_pad pool2 -> p2; bn3 + relu3 -> GlobalAveragePool gap3 -> p3 and ->
/// conv3 3x3 pad 1 (8) -> y3.
struct PoolNet {
  Graph g;
  explicit PoolNet(bool fp16) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {1, 16, 6, 6});
    Value* in = network_input(g, x, fp16);
    auto v = [&](const std::string& name) { return g.add_value(name); };
    Value* a = v("a");
    g.add_node("Conv", "conv0", {in, sine_weight(g, "W0", {16, 16, 3, 3}, t)}, {a})->set_attr_ints("pads", {1, 1, 1, 1});
    auto bn_relu = [&](const std::string& n) {
      std::vector<double> gamma, beta, mean, var;
      for (int i = 0; i < 16; ++i) {
        gamma.push_back(1.0 + 0.01 * i);
        beta.push_back(0.1 * std::sin(i));
        mean.push_back(0.05 * std::cos(i));
        var.push_back(0.5 + 0.02 * i);
      }
      auto k = [&](const std::string& name, const std::vector<double>& d) {
        return g.add_constant("bn" + n + name, Tensor::from_f64(DType::float32, {16}, d), true);
      };
      Value *b = v("b" + n), *r = v("r" + n);
      g.add_node("BatchNormalization", "bn" + n, {a, k("_g", gamma), k("_b", beta), k("_m", mean), k("_v", var)}, {b})
          ->set_attr_float("epsilon", 1e-3);
      g.add_node("Relu", "relu" + n, {b}, {r});
      return r;
    };
    Value *p1 = v("p1"), *p2 = v("p2"), *p3 = v("p3"), *y3 = v("y3");
    g.add_node("GlobalAveragePool", "gap1", {bn_relu("1")}, {p1});
    Node* pool2 = g.add_node("AveragePool", "pool2", {bn_relu("2")}, {p2});
    pool2->set_attr_ints("kernel_shape", {3, 3});
    pool2->set_attr_ints("pads", {1, 1, 1, 1});
    pool2->set_attr_int("count_include_pad", 1);
    Value* r3 = bn_relu("3");
    g.add_node("GlobalAveragePool", "gap3", {r3}, {p3});
    g.add_node("Conv", "conv3", {r3, sine_weight(g, "W3", {8, 16, 3, 3}, t)}, {y3})->set_attr_ints("pads", {1, 1, 1, 1});
    for (Value* o : {p1, p2, p3, y3}) g.add_output(o);
    ops::infer_graph(g);
  }
};

}  // namespace

TEST_CASE("fuse_prologue: a BN + Relu read only by pools runs in the pools' loads (a padded window too); with a conv reader that cannot take it, it stays") {
  PoolNet n(true);
  LowerOptions o = layout_options(LayoutMode::automatic, true);
  o.passes.verify_each = true;
  const Schedule s = lower(n.g, o);
  for (const char* p : {"gap1", "pool2"}) {
    CAPTURE(p);
    const Kernel& k = kernel_of(s, p);
    const std::string i = std::string(p).substr(std::string(p).size() - 1);
    REQUIRE(covering(s, "bn" + i) == &k);
    CHECK(covering(s, "relu" + i) == &k);
    CHECK(k.family_name() == "pool");
    CHECK(k.prologue.affine);
    CHECK(k.prologue.relu);
    CHECK_FALSE(k.prologue.gate);
    CHECK(k.inputs[0].value == "a");
    CHECK(k.channels_last);
    REQUIRE(k.inputs.size() == 7);
    CHECK(k.inputs[kPrologueScaleInput].dtype == DType::float32);
    CHECK(k.inputs[kPrologueShiftInput].shape == Shape{16});
    CHECK(k.inputs[1].dtype == DType::undefined);
    CHECK(plan_of<linear::PoolPlan>(k).prologue.affine);
    CHECK(k.note.find("X loaded through the prologue relu(x * scale + shift)") != std::string::npos);
  }
  // The padded AveragePool takes it: the template never loads a padded tap, so the padding stays
  // the pool's zero, not relu(0 scale + shift).
  CHECK(plan_of<linear::PoolPlan>(kernel_of(s, "pool2")).include_pad);
  // bn3 is read by gap3 (fit) and by the padded 3x3 conv3 (not): it stays a kernel, with conv3's reason.
  const Kernel* bn3 = covering(s, "bn3");
  REQUIRE(bn3 != nullptr);
  CHECK(bn3->family_name() == "elementwise");
  CHECK(bn3->kept_prologue.find("'conv3' (Conv), not a 1x1 stride-1 unpadded convolution") != std::string::npos);
  CHECK_FALSE(kernel_of(s, "gap3").prologue.active());
  CHECK(kernel_of(s, "gap3").inputs[0].value == "r3");
}

TEST_CASE("fuse_prologue: a pool takes the prologue in FP32 and in the NCHW layout too") {
  {
    PoolNet n(false);
    const Schedule s = lower(n.g, layout_options(LayoutMode::automatic, false));
    CHECK(covering(s, "bn1") == &kernel_of(s, "gap1"));
    CHECK(covering(s, "bn2") == &kernel_of(s, "pool2"));
    CHECK(kernel_of(s, "gap1").inputs[0].dtype == DType::float32);
  }
  {
    PoolNet n(true);
    const Schedule s = lower(n.g, layout_options(LayoutMode::nchw, true));
    const Kernel& gap1 = kernel_of(s, "gap1");
    CHECK(covering(s, "bn1") == &gap1);
    CHECK_FALSE(gap1.channels_last);
    CHECK(gap1.inputs[0].value == "a");
    CHECK(covering(s, "bn3")->kept_prologue.find("'conv3'") != std::string::npos);
  }
}

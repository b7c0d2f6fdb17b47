// The plan_kernels stage (schedule/plan_kernels.cpp): each kernel's plan from its family, read from
// the node and the views once, before the tactics; what the printers, the cost model and the report
// read instead of the node. A plan asked for as the wrong type is an internal error naming the kernel.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "schedule/families.h"
#include "schedule/data_movement.h"
#include "schedule/elementwise.h"
#include "schedule/linear_plans.h"
#include "schedule/reduction.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;
using modelc::test::kernel_of;
using modelc::test::sine_weight;

namespace {

// x [1, 8, 6, 6] -> Conv 3x3 p1 s2 (8 -> 16, bias) + Relu (fused) -> [1, 16, 3, 3] -> MaxPool 2x2
// -> [1, 16, 2, 2] -> Transpose (0 2 3 1) -> Softmax (last axis) -> y; and x -> LeakyRelu(0.25) -> z.
struct Net {
  Graph g;
  Net() {
    g.set_opset(17);
    Value* x = input(g, "x", {1, 8, 6, 6});
    Value *c = g.add_value("c"), *r = g.add_value("r"), *p = g.add_value("p"), *t = g.add_value("t"),
          *y = g.add_value("y"), *z = g.add_value("z");
    Node* conv = g.add_node("Conv", "conv", {x, sine_weight(g, "W", {16, 8, 3, 3}), sine_weight(g, "B", {16})}, {c});
    conv->set_attr_ints("pads", {1, 1, 1, 1});
    conv->set_attr_ints("strides", {2, 2});
    g.add_node("Relu", "relu", {c}, {r});
    g.add_node("MaxPool", "pool", {r}, {p})->set_attr_ints("kernel_shape", {2, 2});
    g.add_node("Transpose", "transpose", {p}, {t})->set_attr_ints("perm", {0, 2, 3, 1});
    g.add_node("Softmax", "softmax", {t}, {y});
    g.add_node("LeakyRelu", "leaky", {x}, {z})->set_attr_float("alpha", 0.25f);
    g.add_output(y);
    g.add_output(z);
    ops::infer_graph(g);
  }
};

LowerOptions options() {
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_80"};
  o.layout = LayoutMode::nchw;
  o.passes.verify_each = true;
  return o;
}

const Kernel& kernel_running(const Schedule& s, const std::string& op) {
  for (const Kernel& k : s.kernels) {
    if (k.op.type == op) return k;
  }
  FAIL("no kernel runs " << op);
  return s.kernels.front();
}

}  // namespace

TEST_CASE("plan_kernels stage: each kernel's plan from its family, the node read once") {
  Net net;
  const LowerOptions o = options();
  Schedule s = test::before(net.g, o, "plan_kernels");
  for (const Kernel& k : s.kernels) CHECK_FALSE(static_cast<bool>(k.plan));
  CHECK(run_schedule_stage(s, o, "plan_kernels"));

  // The fused convolution: its geometry and its epilogue (the Relu the graph stages fused).
  const Kernel& conv = kernel_running(s, "FusedConv");
  const linear::ConvPlan& c = plan_of<linear::ConvPlan>(conv);
  CHECK(std::string(conv.plan->kind()) == "conv");
  CHECK(c.geometry.C == 8);
  CHECK(c.geometry.M == 16);
  CHECK(c.geometry.out[1] == 3);
  CHECK(c.geometry.stride[1] == 2);
  CHECK(c.epilogue.fused);
  CHECK(c.epilogue.act.kind == ops::Activation::relu);
  CHECK(c.dense);               // --layout nchw
  CHECK_FALSE(c.winograd);      // the tactics add it, and only for Winograd
  CHECK(conv.flops == 2 * 144 * 9 * 8 + 2 * 144);  // the node's: 2 per tap and channel, a bias add and a Relu per output
  CHECK(conv.epilogue == "bias + relu");

  const linear::PoolPlan& p = plan_of<linear::PoolPlan>(kernel_running(s, "MaxPool"));
  CHECK(p.max);
  CHECK_FALSE(p.global);
  CHECK(p.geometry.kernel[1] == 2);

  const TransposePlan& t = plan_of<TransposePlan>(kernel_running(s, "Transpose"));
  CHECK(t.perm == std::vector<int64_t>{0, 2, 3, 1});

  const reduction::SoftmaxPlan& sm = plan_of<reduction::SoftmaxPlan>(kernel_running(s, "Softmax"));
  CHECK(sm.split.rows() == 4);  // [1, 2, 2, 16]: 4 rows of 16

  const ElementwisePlan& e = plan_of<ElementwisePlan>(kernel_running(s, "LeakyRelu"));
  CHECK(e.op == "LeakyRelu");

  // The wrong type is an internal error naming the kernel's node, not a wrong read.
  try {
    (void)plan_of<linear::GemmPlan>(conv);
    FAIL("plan_of the wrong type did not throw");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("internal: the kernel's plan is conv") != std::string::npos);
    CHECK(err.where().node == "conv");
  }

  // --print-after shows each kernel's plan.
  CHECK(print_schedule(s).find("plan conv") != std::string::npos);
}

TEST_CASE("plan_kernels stage: a kernel without a plan is an error where a printer reads one") {
  Kernel k;
  k.id = "k9";
  k.family = &family_facts("conv");
  try {
    (void)plan_of<linear::ConvPlan>(k);
    FAIL("no error");
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find("kernel k9 (conv): internal: the kernel's plan is missing") != std::string::npos);
  }
}

TEST_CASE("plan_kernels stage: a dense convolution of one pixel keeps its OIHW weight (X [N, C, 1] reads as channels-last too)") {
  for (const bool fp16 : {false, true}) {
    CAPTURE(fp16);
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "x", {1, 4, 1});
    Value* y = g.add_value("y");
    g.add_node("Conv", "conv", {x, sine_weight(g, "W", {2, 4, 3})}, {y})->set_attr_ints("pads", {1, 1});
    g.add_output(y);
    ops::infer_graph(g);
    LowerOptions o = options();
    o.layout = LayoutMode::automatic;
    o.passes.fp16 = fp16;
    Schedule s = test::before(g, o, "plan_kernels");
    CHECK(run_schedule_stage(s, o, "plan_kernels"));
    const linear::ConvPlan& c = plan_of<linear::ConvPlan>(kernel_running(s, "Conv"));
    CHECK(c.dense);
    CHECK(c.w.row == 0);  // no OHWI storage read for it
    CHECK(c.depth.K == 0);
  }
}

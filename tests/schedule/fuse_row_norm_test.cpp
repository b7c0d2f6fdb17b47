// schedule's fuse_row_norm stage: a LayerNormalization over the last dim of a MatMul's output (the
// residual add already in the product's epilogue) runs in the product's launch (Kernel::row_norm:
// gamma and beta inputs 4 and 5, the normalized rows output 1, the panel tickets in the zeroed
// scratch), in FP16 on tensor cores and in FP32 on the SIMT tile; refusals keep the LayerNorm
// kernel with their reason (more than the last dim, a Mean output read, rows not whole chunks, too
// few rows, an elementwise producer, the stage disabled), and --arch sm_90a keeps such a product
// off the Hopper engine, saying why. (Through the host emulation: templates' panel_norm_test and
// the encoders' e2e tests.)
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/tactics.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using namespace modelc::test;  // input, sine_weight, network_input, kernel_of, layout_options

namespace {

/// x [1, rows, 64] -> MatMul (64 x n) -> Add bias -> Add x (when n == 64) -> LayerNormalization
/// (axis, Scale and B of the normalized dims) -> y; `mean_out` gives the norm a Mean output that is
/// a model output too.
struct Net {
  Graph g;
  Net(bool fp16, int64_t rows, int64_t n = 64, int64_t axis = -1, bool mean_out = false) {
    g.set_opset(17);
    const DType t = fp16 ? DType::float16 : DType::float32;
    Value* x = input(g, "x", {1, rows, 64});
    Value* in = network_input(g, x, fp16);
    auto v = [&](const char* name) { return g.add_value(name); };
    Value *mm = v("mm"), *b = v("b"), *h = v("h"), *y = v("y");
    g.add_node("MatMul", "mm", {in, sine_weight(g, "W", {64, n}, t)}, {mm});
    g.add_node("Add", "bias", {mm, sine_weight(g, "bias_v", {n}, t)}, {b});
    Value* sum = b;
    if (n == 64) {
      g.add_node("Add", "residual", {b, in}, {h});
      sum = h;
    }
    const Shape norm_shape = axis == -1 ? Shape{n} : Shape{rows, n};
    std::vector<Value*> outs = {y};
    if (mean_out) outs.push_back(v("mean"));
    Node* ln = g.add_node("LayerNormalization", "ln", {sum, sine_weight(g, "gamma", norm_shape, t),
                                                       sine_weight(g, "beta", norm_shape, t)},
                          outs);
    ln->set_attr_int("axis", axis);
    g.add_output(y);
    if (mean_out) g.add_output(outs[1]);
    ops::infer_graph(g);
  }
};

const Kernel* covering(const Schedule& s, const std::string& node) {
  for (const Kernel& k : s.kernels) {
    if (std::find(k.nodes.begin(), k.nodes.end(), node) != k.nodes.end()) return &k;
  }
  return nullptr;
}

LowerOptions options(bool fp16, const char* arch = "sm_80") {
  LowerOptions o = layout_options(LayoutMode::automatic, fp16);
  o.archs = {arch};
  return o;
}

}  // namespace

TEST_CASE("fuse_row_norm: a LayerNorm after a MatMul + bias + residual runs in the product's launch (FP16)") {
  Net n(true, 128);
  const Schedule s = lower(n.g, options(true));
  const Kernel& mm = kernel_of(s, "mm");
  REQUIRE(covering(s, "ln") == &mm);
  CHECK(covering(s, "residual") == &mm);
  CHECK(mm.row_norm.active);
  CHECK(mm.row_norm.nodes == std::vector<std::string>{"ln"});
  REQUIRE(mm.inputs.size() == kRowNormBetaInput + 1);
  CHECK(mm.inputs[kRowNormGammaInput].value == "gamma");
  CHECK(mm.inputs[kRowNormBetaInput].value == "beta");
  REQUIRE(mm.outputs.size() == 2);
  CHECK(mm.outputs[1].value == "y");
  CHECK(mm.outputs[1].dtype == DType::float16);
  CHECK((mm.engine == Engine::tensor_core || mm.engine == Engine::small_m));
  // One ticket per row panel, after a small-M split-K's own.
  const int64_t panels = linear::row_norm_panels(mm.tactic, 1, 128);
  CHECK(panels > 0);
  CHECK(mm.zeroed_bytes >= linear::row_norm_ticket_offset(mm.tactic, 1, 128, 64) + 4 * panels);
  CHECK(mm.zeroed.dtype == DType::uint32);
  CHECK(mm.note.find("then LayerNormalization ln over its rows") != std::string::npos);
  CHECK(std::none_of(s.kernels.begin(), s.kernels.end(), [](const Kernel& k) { return k.family_name() == "layernorm"; }));
}

TEST_CASE("fuse_row_norm: FP32 on the SIMT tile, tickets per panel of its rows") {
  Net n(false, 100);
  const Schedule s = lower(n.g, options(false));
  const Kernel& mm = kernel_of(s, "mm");
  REQUIRE(mm.row_norm.active);
  CHECK(mm.engine == Engine::simt);
  CHECK(mm.zeroed_bytes == 4 * linear::row_norm_panels(mm.tactic, 1, 100));
}

TEST_CASE("fuse_row_norm: --arch sm_90a keeps the product on mma.sync, saying why") {
  Net n(true, 256);
  const Schedule s = lower(n.g, options(true, "sm_90a"));
  const Kernel& mm = kernel_of(s, "mm");
  REQUIRE(mm.row_norm.active);
  CHECK(mm.engine != Engine::hopper);
  CHECK(mm.note.find("the LayerNorm in its tail needs row panels") != std::string::npos);
}

TEST_CASE("fuse_row_norm: refusals keep the LayerNorm kernel and say why") {
  auto kept = [](Net& n, bool fp16 = true) {
    const Schedule s = lower(n.g, options(fp16));
    const Kernel* ln = covering(s, "ln");
    REQUIRE(ln != nullptr);
    CHECK(ln->family_name() == "layernorm");
    CHECK_FALSE(kernel_of(s, "mm").row_norm.active);
    CHECK(ln->note.find("not in a product's launch: " + ln->kept_row_norm) != std::string::npos);
    return ln->kept_row_norm;
  };
  {
    Net n(true, 128, 64, /*axis*/ 1);
    CHECK(kept(n) == "it normalizes more than the last dim");
  }
  {
    Net n(true, 128, 64, -1, /*mean_out*/ true);
    CHECK(kept(n) == "its Mean / InvStdDev output is read");
  }
  {
    Net n(true, 128, /*n*/ 60);
    CHECK(kept(n) == "rows of 60 (not whole 16-byte chunks of 8)");
  }
  {
    Net n(true, 6);
    CHECK(kept(n) == "6 rows (at most 8: the GEMV, which has no row panels)");
  }
  {
    // The norm's input an elementwise kernel's output: x + x.
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "x", {1, 64, 64});
    Value *s2 = g.add_value("s2"), *y = g.add_value("y"), *z = g.add_value("z");
    g.add_node("Add", "twice", {x, x}, {s2});
    g.add_node("LayerNormalization", "ln", {s2, sine_weight(g, "gamma", {64})}, {y})->set_attr_int("axis", -1);
    g.add_node("MatMul", "mm", {y, sine_weight(g, "W", {64, 64})}, {z});
    g.add_output(z);
    ops::infer_graph(g);
    const Schedule s = lower(g, options(false));
    CHECK(covering(s, "ln")->kept_row_norm == "its input comes from a kernel of the elementwise family, not a matrix product");
  }
}

TEST_CASE("fuse_row_norm: disabled, the LayerNorm stays a kernel") {
  Net n(true, 128);
  LowerOptions o = options(true);
  o.passes.disabled.insert("fuse_row_norm");
  const Schedule s = lower(n.g, o);
  CHECK(covering(s, "ln")->family_name() == "layernorm");
  CHECK_FALSE(kernel_of(s, "mm").row_norm.active);
}

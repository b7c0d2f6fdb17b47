// The small-M tactic in the schedule (schedule/small_m.h, codegen/families/gemm.cpp): the gemm
// family's tactic takes templates/gemm_small_m.cuh for a small-M FP16 product where the cost model
// rates it faster than the tensor-core tile by more than kSmallMMargin (the M 128, N 1536,
// K 384 with bias and GELU), keeps tc::Gemm for a large M, and says why it cannot run it (sm_75,
// --fp16-accumulate, a horizontally fused product); its work (blocks, the K chain, the split-K
// reduction through L2 and its ticket hand-offs); the printer's instantiation (split-K: the
// partials and the tickets); the tactics and memory_plan stages giving the tickets a slice of the
// one zeroed buffer, live through the whole run. The emitted kernels run on the emulation in ctest
// codegen_small_m_verify (tests/codegen/check_small_m.py).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "linear_test_util.h"
#include "ops/shape_inference.h"
#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "schedule/memory_plan.h"
#include "schedule/small_m.h"
#include "schedule/tactics.h"
#include "templates/gemm_small_m.cuh"
#include "tests/codegen/launch_text.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace linear_test;

namespace {

/// The kernel of t's node with FP16 views (as --fp16 leaves them), planned.
modelc::Kernel fp16_gemm(OneNode& t) {
  modelc::Kernel k = t.kernel("gemm");
  for (auto* views : {&k.inputs, &k.outputs}) {
    for (modelc::TensorView& v : *views) {
      if (v.dtype == DType::float32) v.dtype = DType::float16;
    }
  }
  modelc::plan_kernel(k);
  return k;
}

std::vector<modelc::Target> targets(std::initializer_list<const char*> archs, bool fp16_accumulate = false) {
  return modelc::targets_for(std::vector<std::string>(archs.begin(), archs.end()), fp16_accumulate);
}

struct Ctx : modelc::EmitContext {
  std::string ptr(const modelc::TensorView& v, bool is_const) const override {
    return std::string(is_const ? "const:" : "") + v.value;
  }
  std::string ctype(DType t) const override { return t == DType::float16 ? "__half" : "float"; }
};

/// The product: FusedMatMul of [M, 384] x [384, 1536] with a bias and GELU.
OneNode bias_gelu(int64_t M) {
  OneNode t("FusedMatMul", 13, {random({M, 384}, 1), random({384, 1536}, 2), random({1536}, 3)});
  fuse(t, activation(modelc::ops::Activation::gelu));
  return t;
}

}  // namespace

TEST_CASE("small-M wiring: the issue's M 128, N 1536, K 384 with bias and GELU takes the small-M kernel on sm_80 and sm_90") {
  for (const char* arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    OneNode t = bias_gelu(128);
    modelc::Kernel k = fp16_gemm(t);
    const std::vector<modelc::Target> tg = targets({arch});
    modelc::choose_tactic(k, tg);
    INFO(k.note);
    REQUIRE(k.engine == modelc::Engine::small_m);
    CHECK(std::string(modelc::engine_name(k.engine)) == "small_m");
    REQUIRE(std::holds_alternative<modelc::SmallMTile>(k.tactic));
    const modelc::SmallMTile s = std::get<modelc::SmallMTile>(k.tactic);
    CHECK(k.note.find(s.name() + " (tensor cores) for sm_") != std::string::npos);
    CHECK(modelc::tactic_fields(k.tactic).at("small_m") == 1);
    CHECK(k.workspace_bytes == s.workspace_bytes(1, 128, 1536));
    CHECK(k.zeroed_bytes == s.ticket_bytes(1, 128, 1536));
    // Chosen by the estimate: more than kSmallMMargin below the tensor-core tile's.
    const modelc::TcTile tc = modelc::linear::choose_tc_tile({1, 128, 1536, 384, modelc::kernel_bytes(k)}, tg[0]);
    const double small_us = modelc::estimate_kernel(k, tg[0]).us;
    const double tc_us = modelc::estimate(modelc::tc_gemm_work(1, 128, 1536, 384, modelc::kernel_bytes(k), tc), tg[0]).us;
    CHECK(small_us < tc_us * (1 - modelc::linear::kSmallMMargin));
    MESSAGE(std::string(arch) << ": " << s.name() << " " << small_us << " us, against " << tc.name() << " " << tc_us << " us");

    const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("gemm")->emit(k, Ctx{});
    INFO(modelc::test::launch_text(e));
    REQUIRE(e.launches.size() == 1);
    const modelc::Launch& l = e.launches[0];
    CHECK(l.type.find("mc::smallm::Gemm<__half, __half, mc::gemm::Shape<1, 1, 1, 128, 1536, 384>") == 0);
    CHECK(l.type.find(fmt::format("mc::smallm::Tile<{}, {}, {}, {}, {}, {}, {}, {}>, mc::gemm::EpilogueFused<", s.bm, s.bn,
                                  s.bk, s.warps_m, s.warps_n, s.warps_k, s.stages, s.split_k)) != std::string::npos);
    CHECK(l.type.find("mc::gemm::Act::gelu") != std::string::npos);
    CHECK(l.comment.find(s.name()) != std::string::npos);
    CHECK(l.dynamic_smem == s.smem_bytes());
    CHECK(e.includes == std::vector<std::string>{"gemm_small_m.cuh"});
  }
}

TEST_CASE("small-M wiring: a large M keeps the tensor-core tile, without a word of small-M") {
  OneNode t = bias_gelu(4096);
  modelc::Kernel k = fp16_gemm(t);
  modelc::choose_tactic(k, targets({"sm_90"}));
  INFO(k.note);
  CHECK(k.engine == modelc::Engine::tensor_core);
  CHECK(std::holds_alternative<modelc::TcTile>(k.tactic));
  CHECK(k.zeroed_bytes == 0);
  CHECK(k.note.find("small-M") == std::string::npos);
  CHECK(modelc::linear::small_m_fallback(k, modelc::plan_of<modelc::linear::GemmPlan>(k).gemm, targets({"sm_90"})[0]) ==
        "M 4096 above 512 rows");
}

TEST_CASE("small-M wiring: what the small-M kernel cannot run keeps tc::Gemm with the reason") {
  SUBCASE("sm_75: no cp.async (nothing said: the kernel does not exist there)") {
    OneNode t = bias_gelu(128);
    modelc::Kernel k = fp16_gemm(t);
    const std::vector<modelc::Target> tg = targets({"sm_75"});
    modelc::choose_tactic(k, tg);
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("small-M") == std::string::npos);
    CHECK(modelc::linear::small_m_fallback(k, modelc::plan_of<modelc::linear::GemmPlan>(k).gemm, tg[0]) ==
          "sm_75 (the small-M kernel stages by cp.async: sm_80 and newer)");
  }
  SUBCASE("sm_75 and sm_90 in one binary: tc::Gemm on sm_75, the small-M kernel on sm_90") {
    OneNode t = bias_gelu(128);
    modelc::Kernel k = fp16_gemm(t);
    modelc::choose_tactic(k, targets({"sm_75", "sm_90"}));
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::tensor_core);  // the first (oldest) arch's
    CHECK(std::holds_alternative<modelc::TcTile>(k.tactic));
    REQUIRE(k.arch_tactic.count(90) == 1);
    CHECK(std::holds_alternative<modelc::SmallMTile>(k.arch_tactic.at(90)));
    const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("gemm")->emit(k, Ctx{});
    REQUIRE(e.launches.size() == 2);
    CHECK(e.launches[0].type.find("mc::tc::Gemm<") == 0);
    CHECK(e.launches[1].type.find("mc::smallm::Gemm<") == 0);
    CHECK(e.launches[1].min_sm == 90);
  }
  SUBCASE("--fp16-accumulate") {
    OneNode t = bias_gelu(128);
    modelc::Kernel k = fp16_gemm(t);
    modelc::choose_tactic(k, targets({"sm_90"}, true));
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("(not small-M: --fp16-accumulate (the small-M kernel accumulates in FP32))") != std::string::npos);
  }
  SUBCASE("a horizontally fused product (several outputs)") {
    OneNode t = bias_gelu(128);
    modelc::Kernel k = fp16_gemm(t);
    modelc::OutputRange a, b;
    a.source = b.source = t.n;
    a.end = b.begin = 768;
    b.end = 1536;
    k.ranges = {a, b};
    CHECK(modelc::linear::small_m_fallback(k, modelc::plan_of<modelc::linear::GemmPlan>(k).gemm, targets({"sm_90"})[0]) ==
          "a horizontally fused product (several outputs: no ranged epilogue)");
  }
}

TEST_CASE("small-M wiring: the work of a tile (blocks, K chain, split-K through L2 and its hand-offs)") {
  const modelc::SmallMTile s{32, 48, 64, 1, 1, 4, 3, 2};
  const modelc::KernelWork w = modelc::linear::small_m_gemm_work(1, 128, 1536, 384, 1e6, s);
  CHECK(w.engine == modelc::Engine::tensor_core);
  CHECK(w.blocks == 4 * 32 * 2);
  CHECK(w.threads == 128);
  CHECK(w.k_slices == 3);  // 6 slices of 64 over 2 splits
  CHECK(w.stages == 3);
  CHECK(w.handoffs == 1);
  CHECK(w.l2_bytes == doctest::Approx(2.0 * 1 * 128 * 32 * 48 * 4));
  CHECK(w.split_bytes == 0);  // no second launch
  CHECK(w.flops == doctest::Approx(2.0 * 128 * 1536 * 384));
  // The shared memory the template asks for (FP16, A and B both N-major: the x-fast stage is the larger).
  using G = mc::smallm::Gemm<__half, __half, mc::gemm::Shape<1, 1, 1, 128, 1536, 384>, mc::gemm::Strides<0, 0, 0, 384, 1>,
                             mc::gemm::Strides<0, 0, 0, 1536, 1>, mc::gemm::Strides<0, 0, 0, 1536, 1>,
                             mc::smallm::Tile<32, 48, 64, 1, 1, 4, 3, 2>, mc::gemm::EpilogueIdentity>;
  CHECK(s.smem_bytes() >= G::kSmemBytes);
  CHECK(s.workspace_bytes(1, 128, 1536) == G::kPartialFloats * 4);
  CHECK(s.ticket_bytes(1, 128, 1536) == G::kTickets * 4);
  // The hand-off chain and one launch, against the same tile without a split.
  const modelc::Target t = modelc::target_for("sm_90");
  const modelc::Estimate split = modelc::estimate(w, t);
  modelc::SmallMTile one = s;
  one.split_k = 1;
  const modelc::Estimate whole = modelc::estimate(modelc::linear::small_m_gemm_work(1, 128, 1536, 384, 1e6, one), t);
  CHECK(split.launch_us == whole.launch_us);
  CHECK(split.latency_us > whole.latency_us / 2);
}

TEST_CASE("small-M wiring: a split-K tile prints the partials and the tickets") {
  OneNode t = bias_gelu(128);
  modelc::Kernel k = fp16_gemm(t);
  modelc::choose_tactic(k, targets({"sm_90"}));
  const modelc::SmallMTile s{32, 48, 64, 1, 1, 4, 3, 2};
  k.tactic = s;
  k.arch_tactic.clear();
  k.workspace = modelc::TensorView{"ws", DType::float32, {s.workspace_bytes(1, 128, 1536) / 4}, {1}};
  k.zeroed = modelc::TensorView{"tickets", DType::uint32, {s.ticket_bytes(1, 128, 1536) / 4}, {1}};
  const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("gemm")->emit(k, Ctx{});
  INFO(modelc::test::launch_text(e));
  REQUIRE(e.launches.size() == 1);  // the reduction is the tiles' own blocks': no second launch
  const modelc::Launch& l = e.launches[0];
  CHECK(l.type.find("mc::smallm::Tile<32, 48, 64, 1, 1, 4, 3, 2>") != std::string::npos);
  bool partial = false, tickets = false;
  for (const modelc::LaunchParam& p : l.params) {
    partial = partial || (p.field == "partial" && p.value == "ws");
    tickets = tickets || (p.field == "tickets" && p.value == "tickets");
  }
  CHECK(partial);
  CHECK(tickets);
  CHECK(l.comment.find("each tile's 2 splits add their partial sums in order") != std::string::npos);
  k.zeroed = modelc::TensorView{"", DType::undefined, {}, {}};
  CHECK_THROWS_WITH(modelc::FamilyRegistry::instance().find("gemm")->emit(k, Ctx{}),
                    doctest::Contains("splits K without tickets"));
}

namespace {

// x [128, 3072] -> MatMul W [3072, 768] -> Relu -> y, FP16 on sm_80: the product takes the small-M
// kernel with split-K (the BERT-like encoder's second MLP product), so it needs tickets.
struct SplitNet {
  modelc::Graph g;
  SplitNet() {
    g.set_opset(17);
    modelc::Value* x = modelc::test::input(g, "x", {128, 3072});
    modelc::Value *p = g.add_value("p"), *y = g.add_value("y");
    g.add_node("MatMul", "mm", {x, modelc::test::sine_weight(g, "W", {3072, 768})}, {p});
    g.add_node("Relu", "relu", {p}, {y});
    g.add_output(y);
    modelc::ops::infer_graph(g);
  }
};

modelc::LowerOptions split_options() {
  modelc::LowerOptions o;
  o.name = "t";
  o.archs = {"sm_80"};
  o.passes.fp16 = true;
  o.passes.fuse_epilogue = false;
  o.passes.verify_each = true;
  return o;
}

}  // namespace

TEST_CASE("small-M wiring: split-K tickets in the one zeroed buffer, live through the whole run") {
  SplitNet net;
  const modelc::LowerOptions o = split_options();
  modelc::Schedule s = modelc::test::before(net.g, o, "memory_plan");
  const modelc::Kernel& mm = modelc::test::kernel_of(s, "mm");
  INFO(mm.note);
  REQUIRE(mm.engine == modelc::Engine::small_m);
  const modelc::SmallMTile t = std::get<modelc::SmallMTile>(mm.tactic);
  REQUIRE(t.split_k > 1);
  CHECK(mm.workspace_bytes == t.workspace_bytes(1, 128, 768));
  CHECK(mm.zeroed_bytes == t.ticket_bytes(1, 128, 768));
  REQUIRE(mm.zeroed.buffer >= 0);
  const modelc::Buffer& z = s.buffers[static_cast<std::size_t>(mm.zeroed.buffer)];
  CHECK(z.zeroed);
  CHECK(z.kernel == -1);
  CHECK(z.bytes >= mm.zeroed_bytes);
  CHECK(z.offset == -1);  // placed by the memory plan
  CHECK(mm.zeroed.dtype == DType::uint32);

  CHECK(modelc::run_schedule_stage(s, o, "memory_plan"));
  const modelc::Kernel& placed = modelc::test::kernel_of(s, "mm");
  const modelc::Buffer& zb = s.buffers[static_cast<std::size_t>(placed.zeroed.buffer)];
  CHECK(zb.offset >= 0);
  CHECK(placed.zeroed.offset == zb.offset + placed.zeroed.buffer_offset);
  CHECK(s.zeroed_offset == zb.offset);
  CHECK(s.zeroed_bytes == zb.bytes);
  CHECK(zb.first == 0);
  CHECK(zb.last == static_cast<int>(s.kernels.size()) - 1);
  // No other arena buffer shares its bytes (the plan's check over every live interval).
  std::string why;
  CHECK(modelc::check_memory_plan(s.arena_buffers, modelc::kBufferAlignment, &why));
  for (const modelc::Buffer& b : s.buffers) {
    if (&b == &zb || b.space != modelc::Space::arena || b.bytes == 0) continue;
    CAPTURE(b.name);
    CHECK((b.offset + b.bytes <= zb.offset || b.offset >= zb.offset + zb.bytes));
  }
}

// The Hopper engine in the schedule (--arch sm_90a; schedule/hopper.h, codegen/families/hopper.cpp):
// the gemm family's tactic takes it for FP16 / BF16 products its template takes and keeps mma.sync
// with the reason otherwise (other archs, a fat binary, --fp16-accumulate, A not K-major, rows TMA
// cannot address); the printer's instantiation and launch (tensor maps, __grid_constant__, the
// persistent grid); HopperTile's shared memory against the template's; the targets and the cost
// model's rate. The instantiations run on the emulation in ctest codegen_hopper_verify.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "linear_test_util.h"
#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "schedule/hopper.h"
#include "schedule/layout.h"
#include "schedule/tactics.h"
#include "templates/hopper_gemm.cuh"
#include "tests/codegen/launch_text.h"

using namespace linear_test;

namespace {

std::vector<modelc::Target> hopper_targets(std::initializer_list<const char*> archs, bool fp16_accumulate = false) {
  std::vector<std::string> a(archs.begin(), archs.end());
  return modelc::targets_for(a, fp16_accumulate);
}

/// The kernel of t's node in `family` with FP16 views (as --fp16 leaves them).
modelc::Kernel fp16_matmul(OneNode& t, const std::string& family = "gemm") {
  modelc::Kernel k = t.kernel(family);
  for (auto* views : {&k.inputs, &k.outputs}) {
    for (modelc::TensorView& v : *views) {
      if (v.dtype == DType::float32) v.dtype = DType::float16;
    }
  }
  return k;
}

/// A Conv kernel with FP16 NHWC views: X and Y at channel pitches cp and yp, W OHWI as the layout
/// stage stores it (taps of cp; compact for few channels).
modelc::Kernel fp16_nhwc_conv(OneNode& t, int64_t cp, int64_t yp) {
  modelc::Kernel k = fp16_matmul(t, "conv");
  make_channels_last(k.inputs[0], cp);
  modelc::TensorView& w = k.inputs[1];
  w.strides = modelc::weight_strides(w.shape, modelc::conv_weight_storage(w.shape, k.inputs[0].shape[1], cp, true));
  make_channels_last(k.outputs[0], yp);
  return k;
}

struct Ctx : modelc::EmitContext {
  std::string ptr(const modelc::TensorView& v, bool is_const) const override {
    return std::string(is_const ? "const:" : "") + v.value;
  }
  std::string ctype(DType t) const override { return t == DType::float16 ? "__half" : "float"; }
};

template <int BM, int BN, int S, int C>
using Probe = mc::hopper::Gemm<mc::tc::MmaF16<float>, __half, mc::gemm::Shape<1, 1, 1, 256, 256, 256>,
                               mc::gemm::Strides<0, 0, 0, 256, 1>, mc::gemm::Strides<0, 0, 0, 1, 256>,
                               mc::gemm::Strides<0, 0, 0, 256, 1>, mc::hopper::Tile<BM, BN, 64, S, mc::Swizzle::b128, C>,
                               mc::gemm::EpilogueIdentity>;

/// mma.sync: tc::Gemm, or the small-M kernel (schedule/small_m.h) where it takes these M 256 and
/// 128 products.
bool mma_sync(const modelc::Kernel& k) { return k.engine == modelc::Engine::tensor_core || k.engine == modelc::Engine::small_m; }

}  // namespace

TEST_CASE("hopper wiring: sm_90a alone gives the Hopper engine; other archs and fat binaries keep mma.sync") {
  CHECK(hopper_targets({"sm_90a"}).at(0).hopper);
  CHECK(hopper_targets({"sm_90a"}).at(0).hopper_tflops_128x128 > 0);
  CHECK_FALSE(hopper_targets({"sm_90"}).at(0).hopper);
  CHECK_FALSE(hopper_targets({"sm_90", "sm_90a"}).at(0).hopper);  // one plan serves both images
  CHECK_FALSE(hopper_targets({"sm_90a", "sm_90"}).at(0).hopper);
  CHECK_FALSE(modelc::target_for("sm_100a").hopper);  // no wgmma on sm_100

  OneNode t("MatMul", 13, {random({256, 128}, 1), random({128, 192}, 2)});
  SUBCASE("sm_90a: the Hopper engine, printed as hopper::Gemm with its tensor maps") {
    modelc::Kernel k = fp16_matmul(t);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}));
    INFO(k.note);
    REQUIRE(k.engine == modelc::Engine::hopper);
    CHECK(std::string(modelc::engine_name(k.engine)) == "hopper");
    REQUIRE(std::holds_alternative<modelc::HopperTile>(k.tactic));
    const modelc::HopperTile tile = std::get<modelc::HopperTile>(k.tactic);
    CHECK(k.arch_tactic.empty());
    CHECK(k.workspace_bytes == 0);
    CHECK(k.note.find("Hopper engine (wgmma + TMA), tile " + tile.name()) != std::string::npos);
    CHECK(modelc::tactic_fields(k.tactic).at("hopper") == 1);
    const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("gemm")->emit(k, Ctx{});
    INFO(modelc::test::launch_text(e));
    REQUIRE(e.launches.size() == 1);
    const modelc::Launch& l = e.launches[0];
    CHECK(l.type.find("mc::hopper::Gemm<mc::tc::MmaF16<float>, __half, mc::gemm::Shape<1, 1, 1, 256, 192, 128>") == 0);
    CHECK(l.type.find(fmt::format("mc::hopper::Tile<{}, {}, 64, {}, mc::Swizzle::b128, {}>, mc::gemm::EpilogueIdentity>",
                                  tile.bm, tile.bn, tile.stages, tile.consumers)) != std::string::npos);
    CHECK(l.tensor_maps == "const:" + k.inputs[0].value + ", const:" + k.inputs[1].value);
    for (const modelc::LaunchParam& p : l.params) CHECK((p.field != "A" && p.field != "B"));  // through the maps only
    REQUIRE(l.params.size() == 1);
    CHECK(l.params[0].field == "Y");
    CHECK(l.min_blocks == 1);
    CHECK(l.dynamic_smem == tile.smem_bytes());
    CHECK(e.includes == std::vector<std::string>{"hopper_gemm.cuh"});
  }
  SUBCASE("sm_90 and a fat binary with sm_90a: mma.sync, with the reason where sm_90a was asked for") {
    modelc::Kernel k = fp16_matmul(t);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90"}));
    CHECK(mma_sync(k));
    CHECK(k.note.find("Hopper") == std::string::npos);  // nothing said where it was not asked for
    modelc::choose_tactic(k, hopper_targets({"sm_80", "sm_90a"}));
    CHECK(mma_sync(k));
    CHECK(k.note.find("not the Hopper engine: the Hopper engine only for --arch sm_90a alone") != std::string::npos);
  }
  SUBCASE("--fp16-accumulate: mma.sync") {
    modelc::Kernel k = fp16_matmul(t);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}, true));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("not the Hopper engine: --fp16-accumulate") != std::string::npos);
  }
  SUBCASE("A read transposed (k not contiguous): mma.sync") {
    modelc::Kernel k = fp16_matmul(t);
    k.inputs[0].strides = {1, 256};  // A [256, 128] column-major
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}));
    CHECK(mma_sync(k));
    CHECK(k.note.find("not the Hopper engine: A not K-major") != std::string::npos);
  }
}

TEST_CASE("hopper wiring: rows TMA cannot address keep mma.sync; BF16 takes MmaBF16") {
  SUBCASE("K = 100: A's rows 200 bytes apart, not whole 16 bytes") {
    OneNode t("MatMul", 13, {random({128, 100}, 3), random({100, 128}, 4)});
    modelc::Kernel k = fp16_matmul(t);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}));
    INFO(k.note);
    CHECK(mma_sync(k));
    CHECK(k.note.find("not the Hopper engine: A's rows 100 elements apart") != std::string::npos);
  }
  SUBCASE("BF16") {
    OneNode t("MatMul", 13, {random({128, 64}, 5), random({64, 128}, 6)});
    modelc::Kernel k = t.kernel("gemm");
    for (auto* views : {&k.inputs, &k.outputs}) {
      for (modelc::TensorView& v : *views) v.dtype = DType::bfloat16;
    }
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}));
    REQUIRE(k.engine == modelc::Engine::hopper);
    struct BfCtx : Ctx {
      std::string ctype(DType) const override { return "mc::bf16"; }
    };
    const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("gemm")->emit(k, BfCtx{});
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::hopper::Gemm<mc::tc::MmaBF16, mc::bf16,") == 0);
  }
}

TEST_CASE("hopper wiring: HopperTile's shared memory is the template's; the cost model's Hopper rate") {
  CHECK(modelc::HopperTile{128, 256, 64, 3, 2}.smem_bytes() == Probe<128, 256, 3, 2>::kSmemBytes);
  CHECK(modelc::HopperTile{128, 128, 64, 4, 2}.smem_bytes() == Probe<128, 128, 4, 2>::kSmemBytes);
  CHECK(modelc::HopperTile{128, 64, 64, 4, 2}.smem_bytes() == Probe<128, 64, 4, 2>::kSmemBytes);
  CHECK(modelc::HopperTile{64, 128, 64, 4, 1}.smem_bytes() == Probe<64, 128, 4, 1>::kSmemBytes);
  CHECK(modelc::HopperTile{64, 64, 64, 4, 1}.smem_bytes() == Probe<64, 64, 4, 1>::kSmemBytes);
  CHECK(modelc::HopperTile{128, 128, 64, 4, 2}.threads() == Probe<128, 128, 4, 2>::kThreads);
  CHECK(modelc::HopperTile{64, 128, 64, 4, 1}.threads() == Probe<64, 128, 4, 1>::kThreads);

  // 4096^3 FP16: compute bound at the 128x256 tile's rate, 0.75 of the wgmma peak (target.cpp).
  const modelc::Target h = modelc::target_for("sm_90a");
  std::string why;
  const modelc::HopperTile tile = modelc::linear::choose_hopper_tile(1, 4096, 4096, 4096, 3.0 * 4096 * 4096 * 2, h, &why);
  INFO(why);
  CHECK(tile == modelc::HopperTile{128, 256, 64, 3, 2});
  const modelc::Estimate e = modelc::estimate(modelc::hopper_gemm_work(1, 4096, 4096, 4096, 3.0 * 4096 * 4096 * 2, tile), h);
  CHECK(e.bound == "compute");
  const double tflops = e.flops / e.compute_us * 1e-6;
  CHECK(tflops < 0.75 * h.tc_fp16_tflops);   // tiles round up over the SMs: below the main loop's rate
  CHECK(tflops > 0.60 * h.tc_fp16_tflops);
  // No Hopper engine on sm_90's target: an internal error, not a silent rate.
  CHECK_THROWS(modelc::estimate(modelc::hopper_gemm_work(1, 4096, 4096, 4096, 1e8, tile), modelc::target_for("sm_90")));
}

TEST_CASE("hopper wiring: NHWC convolutions on hopper::Conv with a pixel rectangle; compact K and 3-D keep mma.sync") {
  SUBCASE("3x3 s1 p1, 64 -> 64 channels on 14 x 14: the Hopper engine") {
    OneNode t("Conv", 13, {random({2, 64, 14, 14}, 1), random({64, 64, 3, 3}, 2), random({64}, 3)});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    modelc::Kernel k = fp16_nhwc_conv(t, 64, 64);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}));
    INFO(k.note);
    REQUIRE(k.engine == modelc::Engine::hopper);
    const modelc::HopperTile tile = std::get<modelc::HopperTile>(k.tactic);
    const modelc::linear::PixelRect r = modelc::linear::hopper_pixel_rect(
        modelc::plan_of<modelc::linear::ConvPlan>(k).geometry, tile.bm);
    CHECK(r.ph * r.pw == tile.bm);
    CHECK(k.note.find(fmt::format("{} x {} output pixels a tile", r.ph, r.pw)) != std::string::npos);
    const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("conv")->emit(k, Ctx{});
    INFO(modelc::test::launch_text(e));
    REQUIRE(e.launches.size() == 1);
    const modelc::Launch& l = e.launches[0];
    CHECK(l.type.find("mc::hopper::Conv<mc::tc::MmaF16<float>, __half, mc::conv::Shape<2, 64, 64, 1,") == 0);
    CHECK(l.type.find("/*X pitch*/ 64, /*Y pitch*/ 64, mc::hopper::Tile<") != std::string::npos);
    CHECK(l.type.find(fmt::format("/*pixels PH x PW*/ {}, {}>", r.ph, r.pw)) != std::string::npos);
    CHECK(l.type.find("mc::gemm::EpilogueBias<__half>") != std::string::npos);
    CHECK(l.tensor_maps == "const:" + k.inputs[0].value + ", const:" + k.inputs[1].value);
    for (const modelc::LaunchParam& p : l.params) CHECK((p.field != "X" && p.field != "W"));
    CHECK(l.dynamic_smem == tile.smem_bytes());
    CHECK(e.includes == std::vector<std::string>{"hopper_gemm.cuh"});
  }
  SUBCASE("7x7 s2 on C = 3 (compact K): mma.sync with the reason") {
    OneNode t("Conv", 13, {random({1, 3, 32, 32}, 4), random({64, 3, 7, 7}, 5), random({64}, 6)});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {3, 3, 3, 3});
    modelc::Kernel k = fp16_nhwc_conv(t, 8, 64);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, hopper_targets({"sm_90a"}));
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("not the Hopper engine: compact K") != std::string::npos);
  }
  SUBCASE("the pixel rectangle: fewest tiles, then the wider; TMA's 256 elements a box dim") {
    modelc::linear::ConvGeometry g;
    g.out = {1, 7, 7};
    modelc::linear::PixelRect r = modelc::linear::hopper_pixel_rect(g, 128);
    CHECK(r.ph * r.pw == 128);
    CHECK((r.ph == 8 && r.pw == 16));  // one tile, as 16 x 8 is: the wider
    g.out = {1, 56, 56};
    r = modelc::linear::hopper_pixel_rect(g, 128);
    CHECK((r.ph == 2 && r.pw == 64));  // 28 tiles from 64 x 2 to 2 x 64 (1 x 128, 128 x 1: 56): the widest
    g.out = {1, 1, 1000};
    g.stride = {1, 1, 4};
    r = modelc::linear::hopper_pixel_rect(g, 128);
    CHECK(r.pw * 4 <= 256);
    CHECK(r.pw == 64);
  }
}

TEST_CASE("hopper wiring: INT8 tiles (BK 128 bytes) and the INT8 rules") {
  using Quant = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::none, 0, true, true, false>;
  using S8 = mc::hopper::Gemm<mc::tc::MmaS8<int8_t>, int8_t, mc::gemm::Shape<1, 1, 1, 256, 256, 256>,
                              mc::gemm::Strides<0, 0, 0, 256, 1>, mc::gemm::Strides<0, 0, 0, 1, 256>,
                              mc::gemm::Strides<0, 0, 0, 256, 1>, mc::hopper::Tile<128, 256, 128, 3>, Quant>;
  CHECK(modelc::HopperTile{128, 256, 128, 3, 2, true}.smem_bytes() == S8::kSmemBytes);
  CHECK(modelc::HopperTile{128, 256, 128, 3, 2, true}.name() == "wgmma INT8 128x256x128 3 stages 2 consumers");
  CHECK(modelc::tactic_fields(modelc::Tactic{modelc::HopperTile{128, 256, 128, 3, 2, true}}).at("int8") == 1);

  const modelc::Target h = modelc::target_for("sm_90a");
  std::string why;
  const modelc::HopperTile t8 = modelc::linear::choose_hopper_tile(1, 4096, 4096, 4096, 3.0 * 4096 * 4096, h, &why, true);
  INFO(why);
  CHECK(t8.int8);
  CHECK(t8.bk == 128);
  // The INT8 rate: twice the operations a second of FP16's at each tile (0.65 x 2 against 0.75).
  const modelc::Estimate e8 = modelc::estimate(modelc::hopper_gemm_work(1, 4096, 4096, 4096, 3.0 * 4096 * 4096, t8), h);
  const modelc::HopperTile t16 = modelc::linear::choose_hopper_tile(1, 4096, 4096, 4096, 6.0 * 4096 * 4096, h, nullptr);
  const modelc::Estimate e16 = modelc::estimate(modelc::hopper_gemm_work(1, 4096, 4096, 4096, 6.0 * 4096 * 4096, t16), h);
  CHECK(e8.us < e16.us * 0.9);
  CHECK(e8.us > e16.us * 0.5);

  modelc::Kernel k;
  k.id = "k0";
  modelc::linear::Int8Gemm g;
  g.M = 64;
  g.N = 64;
  g.K = 64;
  g.a_row = 64;
  g.y_row = 64;
  CHECK(modelc::linear::hopper_int8_gemm_fallback(k, g, hopper_targets({"sm_90a"})).empty());
  CHECK(modelc::linear::hopper_int8_gemm_fallback(k, g, hopper_targets({"sm_86", "sm_90a"})).find("sm_90a alone") !=
        std::string::npos);
  g.K = g.a_row = 72;  // 72-byte rows: not whole 16 bytes
  CHECK(modelc::linear::hopper_int8_gemm_fallback(k, g, hopper_targets({"sm_90a"})).find("K 72") != std::string::npos);
}

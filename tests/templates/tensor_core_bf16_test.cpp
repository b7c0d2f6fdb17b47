// templates/tensor_core.cuh on BF16 operands (mc::bf16, mma.sync m16n8k16 .bf16 on the host emulation,
// exact per lane) against the FP32 reference run on BF16-rounded inputs: the GEMM (odd and aligned
// shapes, transposed operands, batched, both stagings, cp.async stages, split-K, bf16 and float
// outputs, a fused epilogue reading bf16 bias and residual, magnitudes beyond FP16's range) and the
// implicit-GEMM convolution (1x1, 3x3 s2 p1, the compact-K 7x7 on C = 3, split-K); the SIMT templates
// on bf16 storage (the sm_75 variant); and the gemm / conv families' tactics for BF16: tensor cores
// from sm_80, a SIMT variant for sm_75 (no BF16 MMA there), the SIMT engine when every --arch is
// below sm_80.
#include "codegen/families/linear.h"
#include "linear_test_util.h"
#include "tc_launch_util.h"
#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "schedule/layout.h"
#include "schedule/tactics.h"
#include "schedule/winograd.h"
#include "templates/conv.cuh"
#include "templates/tensor_core.cuh"
#include "tests/codegen/launch_text.h"

using namespace linear_test;
using tc_test::launch_product;
using mc::bf16;

namespace {

template <bool A>
using T64x64 = mc::tc::Tile<64, 64, 32, 2, 2, A>;
template <bool A>
using T32x64 = mc::tc::Tile<32, 64, 32, 1, 4, A>;
template <bool A>
using T128x64 = mc::tc::Tile<128, 64, 32, 2, 2, A>;

// BF16 outputs round once (2^-9 relative); float outputs are the FP32 sum of exact products.
constexpr double kRtol = 1e-2, kAtol = 1e-3;

Tensor brandom(Shape s, uint64_t seed, double scale = 1.0) {
  return random_in(DType::bfloat16, std::move(s), seed, scale);  // bfloat16 represents them exactly
}

std::vector<bf16> bf16s(const Tensor& t) {
  std::vector<bf16> r;
  for (double v : t.to_f64()) r.push_back(bf16(static_cast<float>(v)));
  return r;
}

template <class TY>
std::vector<TY> out_buffer(int64_t n) {
  return std::vector<TY>(static_cast<std::size_t>(n), TY(std::nanf("")));
}

template <class TY>
std::vector<float> to_floats(const std::vector<TY>& y) {
  std::vector<float> r;
  for (const TY& v : y) r.push_back(static_cast<float>(v));
  return r;
}

/// tc::Gemm<bf16, TY, float, ...> on the node's x0 (A) and x1 (B); Y as floats.
template <class TY, class Sh, class SA, class SB, class SY, class Tl, class Epi = mc::gemm::EpilogueIdentity>
std::vector<float> run_gemm(OneNode& t, int64_t y_size, const typename Epi::Params& epi = {}) {
  using K = mc::tc::Gemm<bf16, TY, float, Sh, SA, SB, SY, Tl, Epi>;
  const std::vector<bf16> a = bf16s(t.feeds.at("x0")), b = bf16s(t.feeds.at("x1"));
  std::vector<TY> y = out_buffer<TY>(y_size);
  launch_product<K>({a.data(), b.data(), y.data(), epi});
  return to_floats(y);
}

/// NCHW -> channels-last bf16 with channel pitch `pitch`, `fill` in the padded channels.
std::vector<bf16> pitched(const Tensor& t, int64_t pitch, float fill) {
  const Shape& s = t.shape();
  const int64_t N = s[0], C = s[1], P = t.numel() / (N * C);
  const std::vector<double> v = t.to_f64();
  std::vector<bf16> r(static_cast<std::size_t>(N * P * pitch), bf16(fill));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        r[static_cast<std::size_t>((n * P + p) * pitch + c)] = bf16(static_cast<float>(v[static_cast<std::size_t>((n * C + c) * P + p)]));
  return r;
}

/// Channels-last with pitch -> NCHW floats; a padded channel that was written is an error.
template <class TY>
std::vector<float> unpitched(const std::vector<TY>& y, const Shape& nchw, int64_t pitch) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(static_cast<std::size_t>(N * C * P));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t c = 0; c < C; ++c)
        r[static_cast<std::size_t>((n * C + c) * P + p)] = static_cast<float>(y[static_cast<std::size_t>((n * P + p) * pitch + c)]);
      for (int64_t c = C; c < pitch; ++c) CHECK(std::isnan(static_cast<float>(y[static_cast<std::size_t>((n * P + p) * pitch + c)])));
    }
  return r;
}

using BiasEpi = mc::gemm::EpilogueBias<bf16>;

/// tc::Conv<bf16, TY, float, Sh, Cp, Yp, Tl, BiasEpi, Compact> on the node's x0 (X), x1 (W), x2 (B).
template <class Sh, int Cp, int Yp, class Tl, class TY = bf16, bool Compact = false>
std::vector<float> run_conv(OneNode& t, const Tensor& want) {
  using K = mc::tc::Conv<bf16, TY, float, Sh, Cp, Yp, Tl, BiasEpi, Compact>;
  const std::vector<bf16> x = pitched(t.feeds.at("x0"), Cp, std::nanf(""));
  const std::vector<bf16> w =
      Compact ? bf16s(modelc::ohwi_weights(t.feeds.at("x1"), modelc::WeightStorage{Sh::kC, K::kKw, true}))
              : pitched(t.feeds.at("x1"), Cp, 0.0f);
  const std::vector<bf16> bias = bf16s(t.feeds.at("x2"));
  const int64_t pixels = want.numel() / want.shape()[1];
  std::vector<TY> y = out_buffer<TY>(pixels * Yp);
  launch_product<K>({x.data(), w.data(), y.data(), {bias.data()}});
  return unpitched(y, want.shape(), Yp);
}

}  // namespace

TEST_CASE("tensor-core gemm, BF16: odd shapes, transposed operands, both stagings, stages, split-K, outputs") {
  SUBCASE("odd shapes (element loads), bf16 and float outputs, both stagings") {
    const int64_t M = 37, N = 29, K = 19;
    OneNode t("MatMul", 13, {brandom({M, K}, 1), brandom({K, N}, 2)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    CHECK_FALSE(mc::tc::Gemm<bf16, bf16, float, Sh, SA, SB, SY, T32x64<true>, mc::gemm::EpilogueIdentity>::LA::kVector);
    check_close(run_gemm<bf16, Sh, SA, SB, SY, T32x64<true>>(t, M * N), want, kRtol, kAtol);
    check_close(run_gemm<bf16, Sh, SA, SB, SY, T64x64<false>>(t, M * N), want, kRtol, kAtol);
    check_close(run_gemm<float, Sh, SA, SB, SY, T32x64<false>>(t, M * N), want, 1e-4, 1e-5);
  }
  SUBCASE("aligned (16-byte loads), A transposed and B transposed (ldmatrix .trans)") {
    const int64_t M = 64, N = 48, K = 96;
    OneNode t("Gemm", 13, {brandom({K, M}, 3), brandom({N, K}, 4)});
    t.n->set_attr_int("transA", 1);
    t.n->set_attr_int("transB", 1);
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, 1, M>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, K>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    CHECK(mc::tc::Gemm<bf16, float, float, Sh, SA, SB, SY, T64x64<true>, mc::gemm::EpilogueIdentity>::LA::kVector);
    check_close(run_gemm<float, Sh, SA, SB, SY, T64x64<true>>(t, M * N), want, 1e-4, 1e-5);
    check_close(run_gemm<bf16, Sh, SA, SB, SY, T64x64<false>>(t, M * N), want, kRtol, kAtol);
  }
  SUBCASE("batched MatMul, 3 and 4 cp.async stages, split-K with a short last split") {
    const int64_t B = 3, M = 40, N = 24, K = 200;
    OneNode t("MatMul", 13, {brandom({B, M, K}, 5), brandom({B, K, N}, 6)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, B, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, M * K, K, 1>;
    using SB = mc::gemm::Strides<0, 0, K * N, N, 1>;
    using SY = mc::gemm::Strides<0, 0, M * N, N, 1>;
    check_close(run_gemm<bf16, Sh, SA, SB, SY, mc::tc::Tile<32, 32, 32, 1, 1, true, 3, 1>>(t, B * M * N), want, kRtol,
                kAtol);
    check_close(run_gemm<float, Sh, SA, SB, SY, mc::tc::Tile<64, 32, 32, 2, 1, true, 4, 3>>(t, B * M * N), want, 1e-4,
                1e-5);
    check_close(run_gemm<bf16, Sh, SA, SB, SY, mc::tc::Tile<32, 32, 64, 1, 1, false, 2, 2>>(t, B * M * N), want, kRtol,
                kAtol);
  }
  SUBCASE("magnitudes FP16 cannot hold (operands up to 3e4, sums up to 1e10): BF16 keeps FP32's range") {
    const int64_t M = 16, N = 24, K = 32;
    OneNode t("MatMul", 13, {brandom({M, K}, 7, 3e4), brandom({K, N}, 8, 3e4)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    const std::vector<double> w = want.to_f64();
    CHECK(*std::max_element(w.begin(), w.end()) > 65504.0 * 1000);
    check_close(run_gemm<bf16, Sh, SA, SB, SY, T32x64<true>>(t, M * N), want, kRtol, kAtol);
  }
}

TEST_CASE("tensor-core gemm, BF16: a fused epilogue reads bf16 bias and residual (gelu, residual after)") {
  constexpr int64_t M = 24, N = 40, K = 32;
  OneNode t("FusedMatMul", 13, {brandom({M, K}, 40), brandom({K, N}, 41), brandom({N}, 42), brandom({M, N}, 43)});
  fuse(t, activation(modelc::ops::Activation::gelu), "after_activation");
  const Tensor want = t.reference()[0];
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using Epi = mc::gemm::EpilogueFused<bf16, mc::gemm::Strides<0, 0, 0, 0, 1>, true, mc::gemm::Act::gelu,
                                      mc::gemm::Residual::after_activation>;
  const std::vector<bf16> bias = bf16s(t.feeds.at("x2")), residual = bf16s(t.feeds.at("x3"));
  const Epi::Params epi{1.0f, 1.0f, bias.data(), residual.data(), {0, 0, -INFINITY, INFINITY}};
  check_close(run_gemm<bf16, Sh, SA, SB, SY, T32x64<true>, Epi>(t, M * N, epi), want, kRtol, kAtol);
  check_close(run_gemm<float, Sh, SA, SB, SY, T64x64<false>, Epi>(t, M * N, epi), want, 1e-4, 1e-5);
}

TEST_CASE("tensor-core conv, BF16: 1x1 and 3x3 s2 p1 NHWC, the compact-K 7x7 on C = 3, split-K") {
  using mc::conv::Dims3;
  SUBCASE("1x1, pitches 16 -> 24, 16-byte loads, both stagings") {
    OneNode t("Conv", 13, {brandom({2, 16, 5, 5}, 60), brandom({24, 16, 1, 1}, 61), brandom({24}, 62)});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<2, 16, 24, 1, Dims3<1, 5, 5>, Dims3<1, 1, 1>, Dims3<1, 5, 5>, Dims3<1, 1, 1>,
                               Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
    check_close(run_conv<Sh, 16, 24, T32x64<true>>(t, want), want, kRtol, kAtol);
    check_close(run_conv<Sh, 16, 24, T64x64<false>, float>(t, want), want, 1e-4, 1e-5);
  }
  SUBCASE("3x3 stride 2 pad 1, C 12 in a pitch of 16 (NaN in the padding), split-K and 3 stages") {
    OneNode t("Conv", 13, {brandom({1, 12, 9, 9}, 63), brandom({20, 12, 3, 3}, 64), brandom({20}, 65)});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 12, 20, 1, Dims3<1, 9, 9>, Dims3<1, 3, 3>, Dims3<1, 5, 5>, Dims3<1, 2, 2>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_close(run_conv<Sh, 16, 24, T32x64<true>>(t, want), want, kRtol, kAtol);
    check_close(run_conv<Sh, 16, 24, mc::tc::Tile<32, 32, 32, 1, 1, true, 3, 2>, float>(t, want), want, 1e-4, 1e-5);
  }
  SUBCASE("7x7 stride 2 pad 3 on C = 3: compact K (K 147, W rows of 152)") {
    OneNode t("Conv", 13, {brandom({1, 3, 16, 16}, 66), brandom({16, 3, 7, 7}, 67), brandom({16}, 68)});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {3, 3, 3, 3});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 3, 16, 1, Dims3<1, 16, 16>, Dims3<1, 7, 7>, Dims3<1, 8, 8>, Dims3<1, 2, 2>,
                               Dims3<0, 3, 3>, Dims3<1, 1, 1>>;
    check_close(run_conv<Sh, 8, 16, T32x64<true>, bf16, true>(t, want), want, kRtol, kAtol);
    check_close(run_conv<Sh, 8, 16, T64x64<false>, float, true>(t, want), want, 1e-4, 1e-5);
  }
}

TEST_CASE("SIMT templates on bf16 storage (the sm_75 variant of a BF16 product): gemm and NHWC conv") {
  SUBCASE("gemm") {
    const int64_t M = 40, N = 24, K = 36;
    OneNode t("MatMul", 13, {brandom({M, K}, 70), brandom({K, N}, 71)});
    const Tensor want = t.reference()[0];
    using K_ = mc::gemm::Gemm<bf16, float, mc::gemm::Shape<1, 1, 1, M, N, K>, mc::gemm::Strides<0, 0, 0, K, 1>,
                              mc::gemm::Strides<0, 0, 0, N, 1>, mc::gemm::Strides<0, 0, 0, N, 1>,
                              mc::gemm::Tile<32, 32, 8, 4, 2>, mc::gemm::EpilogueIdentity>;
    const std::vector<bf16> a = bf16s(t.feeds.at("x0")), b = bf16s(t.feeds.at("x1"));
    std::vector<bf16> y = out_buffer<bf16>(M * N);
    launch<K_>({a.data(), b.data(), y.data(), {}});
    check_close(to_floats(y), want, kRtol, kAtol);
  }
  SUBCASE("conv, NHWC with pitches (X 16 for C 12, Y 24 for M 20)") {
    using mc::conv::Dims3;
    OneNode t("Conv", 13, {brandom({1, 12, 6, 6}, 72), brandom({20, 12, 3, 3}, 73), brandom({20}, 74)});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 12, 20, 1, Dims3<1, 6, 6>, Dims3<1, 3, 3>, Dims3<1, 6, 6>, Dims3<1, 1, 1>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    using K_ = mc::conv::Conv<bf16, float, Sh, mc::conv::Layout::nhwc, mc::gemm::Tile<32, 32, 8, 4, 2>, BiasEpi, 16, 24, 16>;
    const std::vector<bf16> x = pitched(t.feeds.at("x0"), 16, std::nanf("")), w = pitched(t.feeds.at("x1"), 16, 0.0f);
    const std::vector<bf16> b = bf16s(t.feeds.at("x2"));
    std::vector<bf16> y = out_buffer<bf16>(36 * 24);
    launch<K_>({x.data(), w.data(), y.data(), {b.data()}});
    check_close(unpitched(y, want.shape(), 24), want, kRtol, kAtol);
  }
}

// ---- the families: BF16 tensor cores from sm_80, SIMT on sm_75 -------------------------------------

namespace {

/// t's kernel with every float view in BF16; `cp`: X and Y channels-last with the pitches given, W
/// stored as the layout stage stores it.
modelc::Kernel bf16_kernel(OneNode& t, const std::string& family, int64_t cp = 0, int64_t yp = 0) {
  modelc::Kernel k = t.kernel(family);
  for (auto* views : {&k.inputs, &k.outputs}) {
    for (modelc::TensorView& v : *views) {
      if (v.dtype == DType::float32) v.dtype = DType::bfloat16;
    }
  }
  if (cp) {
    linear_test::make_channels_last(k.inputs[0], cp);
    modelc::TensorView& w = k.inputs[1];
    w.strides = modelc::weight_strides(w.shape, modelc::conv_weight_storage(w.shape, k.inputs[0].shape[1], cp, true));
    linear_test::make_channels_last(k.outputs[0], yp);
  }
  return k;
}

std::vector<modelc::Target> targets(std::initializer_list<const char*> archs) {
  std::vector<modelc::Target> r;
  for (const char* a : archs) r.push_back(modelc::target_for(a));
  return r;
}

struct Bf16Context : modelc::EmitContext {
  std::string ptr(const modelc::TensorView& v, bool is_const) const override {
    return std::string(is_const ? "const:" : "") + v.value;
  }
  std::string ctype(DType t) const override { return t == DType::bfloat16 ? "mc::bf16" : "float"; }
};

const modelc::KernelFamily& family(const std::string& name) {
  const modelc::KernelFamily* f = modelc::FamilyRegistry::instance().find(name);
  REQUIRE(f);
  return *f;
}

std::vector<modelc::Launch> variant(const modelc::KernelLaunches& e, int sm) {
  std::vector<modelc::Launch> r;
  for (const modelc::Launch& l : e.launches) {
    if (l.min_sm == sm) r.push_back(l);
  }
  return r;
}

}  // namespace

TEST_CASE("gemm family, BF16: tensor cores from sm_80, a SIMT variant for sm_75, SIMT when every arch is sm_75") {
  const auto& f = family("gemm");
  // M 1024: above the small-M kernel's rows (schedule/small_m.h), so sm_80 and newer run tc::Gemm.
  OneNode t("MatMul", 13, {random({1024, 128}, 1), random({128, 192}, 2)});
  SUBCASE("sm_75 and sm_90: the sm_75 variant is a SIMT tile, sm_90's the BF16 tensor-core GEMM") {
    modelc::Kernel k = bf16_kernel(t, "gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75", "sm_90"}));
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.fallback_reason.empty());
    REQUIRE(k.arch_tactic.size() == 2);
    CHECK(std::holds_alternative<modelc::TileConfig>(k.tactic));  // the oldest arch's
    CHECK(std::holds_alternative<modelc::TileConfig>(k.arch_tactic.at(75)));
    CHECK(std::holds_alternative<modelc::TcTile>(k.arch_tactic.at(90)));
    CHECK(k.note.find("sm_75: SIMT tile") != std::string::npos);
    CHECK(k.note.find("(no BF16 MMA below sm_80)") != std::string::npos);
    CHECK(k.note.find("tensor-core tile") != std::string::npos);
    if (k.workspace_bytes > 0) {
      k.workspace = modelc::TensorView{"ws", DType::float32, {k.workspace_bytes / 4}, {1}, modelc::Space::arena, 0, 1024};
    }
    const modelc::KernelLaunches e = f.emit(k, Bf16Context{});
    INFO(modelc::test::launch_text(e));
    const std::vector<modelc::Launch> v75 = variant(e, 75), v90 = variant(e, 90);
    REQUIRE(v75.size() == 1);
    CHECK(v75[0].type.find("mc::gemm::Gemm<mc::bf16, float, mc::gemm::Shape<1, 1, 1, 1024, 192, 128>") == 0);
    CHECK(v75[0].dynamic_smem == 0);
    CHECK(v75[0].comment.find("SIMT tile") != std::string::npos);
    REQUIRE(v90.size() >= 1);
    CHECK(v90[0].type.find("mc::tc::Gemm<mc::bf16, mc::bf16, float, mc::gemm::Shape<1, 1, 1, 1024, 192, 128>") == 0);
    CHECK(e.launches.size() == v75.size() + v90.size());
    // The cost model prices each variant by its own tactic.
    CHECK(modelc::estimate_kernel(k, modelc::target_for("sm_75")).us > 0);
    CHECK(modelc::estimate_kernel(k, modelc::target_for("sm_90")).us > 0);
  }
  SUBCASE("sm_80 alone: tensor cores, one instantiation") {
    modelc::Kernel k = bf16_kernel(t, "gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_80"}));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.arch_tactic.empty());
    if (k.workspace_bytes > 0) {
      k.workspace = modelc::TensorView{"ws", DType::float32, {k.workspace_bytes / 4}, {1}, modelc::Space::arena, 0, 1024};
    }
    const modelc::KernelLaunches e = f.emit(k, Bf16Context{});
    REQUIRE(!e.launches.empty());
    CHECK(e.launches[0].type.find("mc::tc::Gemm<mc::bf16, mc::bf16, float,") == 0);
  }
  SUBCASE("sm_75 alone: the SIMT engine, with the reason") {
    modelc::Kernel k = bf16_kernel(t, "gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75"}));
    CHECK(k.engine == modelc::Engine::simt);
    CHECK(k.fallback_reason == "BF16 storage on sm_75 (no BF16 MMA below sm_80)");
    CHECK(k.note.find("(SIMT: BF16 storage on sm_75") != std::string::npos);
    const modelc::KernelLaunches e = f.emit(k, Bf16Context{});
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::gemm::Gemm<mc::bf16, float,") == 0);
  }
  SUBCASE("a product of 4 rows: the GEMV on bf16") {
    OneNode g("MatMul", 13, {random({4, 128}, 3), random({128, 64}, 4)});
    modelc::Kernel k = bf16_kernel(g, "gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_80"}));
    CHECK(k.engine == modelc::Engine::gemv);
    const modelc::KernelLaunches e = f.emit(k, Bf16Context{});
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::gemv::Gemv<mc::bf16, float,") == 0);
  }
  SUBCASE("float16 A with bfloat16 B: no tensor cores, the reason names both") {
    modelc::Kernel k = bf16_kernel(t, "gemm");
    k.inputs[0].dtype = DType::float16;
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_80"}));
    CHECK(k.engine == modelc::Engine::simt);
    CHECK(k.fallback_reason == "float16 A and bfloat16 B");
  }
}

TEST_CASE("conv family, BF16: tensor cores from sm_80 (no Winograd), a SIMT NHWC variant for sm_75") {
  const auto& f = family("conv");
  OneNode t("Conv", 13, {random({1, 16, 8, 8}, 1), random({32, 16, 3, 3}, 2), random({32}, 3)});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  SUBCASE("sm_75 and sm_80") {
    modelc::Kernel k = bf16_kernel(t, "conv", 16, 32);
    std::vector<modelc::Target> ts = targets({"sm_75", "sm_80"});
    for (modelc::Target& x : ts) x.winograd = modelc::Target::Winograd::always;  // BF16 stays direct all the same
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, ts);
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::tensor_core);
    REQUIRE(k.arch_tactic.size() == 2);
    CHECK(std::holds_alternative<modelc::TileConfig>(k.arch_tactic.at(75)));
    CHECK(std::holds_alternative<modelc::TcTile>(k.arch_tactic.at(80)));
    CHECK(modelc::linear::winograd_unfit(k, modelc::linear::conv_geometry(k)) == "BF16 storage (the transforms stage FP16)");
    if (k.workspace_bytes > 0) {
      k.workspace = modelc::TensorView{"ws", DType::float32, {k.workspace_bytes / 4}, {1}, modelc::Space::arena, 0, 1024};
    }
    const modelc::KernelLaunches e = f.emit(k, Bf16Context{});
    INFO(modelc::test::launch_text(e));
    const std::vector<modelc::Launch> v75 = variant(e, 75), v80 = variant(e, 80);
    REQUIRE(v75.size() == 1);
    CHECK(v75[0].type.find("mc::conv::Conv<mc::bf16, float,") == 0);
    CHECK(v75[0].type.find("mc::conv::Layout::nhwc") != std::string::npos);
    CHECK(v75[0].type.find("/*pitches X Y W*/ 16, 32, 16>") != std::string::npos);
    REQUIRE(v80.size() >= 1);
    CHECK(v80[0].type.find("mc::tc::Conv<mc::bf16, mc::bf16, float, mc::conv::Shape<1, 16, 32, 1,") == 0);
  }
  SUBCASE("sm_75 alone: SIMT, with the reason") {
    modelc::Kernel k = bf16_kernel(t, "conv", 16, 32);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75"}));
    CHECK(k.engine == modelc::Engine::simt);
    CHECK(k.fallback_reason == "BF16 storage on sm_75 (no BF16 MMA below sm_80)");
  }
}

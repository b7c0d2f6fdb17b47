// templates/tensor_core.cuh on the host emulation (WMMA fragments, cp.async, exact __half) against
// the FP32 reference run on FP16-rounded inputs, at the FP16 tolerance (rtol 1e-2, atol
// 1e-3): the GEMM (odd and aligned shapes, transposed operands, batched / broadcast, every epilogue,
// both staging paths, FP32 and FP16 accumulation, float and __half output with the clamp) and the
// implicit-GEMM convolution over NHWC views with channel pitches (1x1, 3x3 s2 p1, 7x7 s2 p3 with
// C = 3 in a pitch of 8, dilation 2, 1-D and 3-D), and its compact-K form (C 1..7: K over the
// channels, W as ohwi_weights stores it compact; and 16 channels, a slice at a pitch of 40, on
// 16-byte loads); the Winograd F(2x2, 3x3) convolution
// (templates/winograd.cuh: its weights transform, its three launches, the tactic rule).
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "schedule/conv_tiled.h"
#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "schedule/tactics.h"
#include "linear_test_util.h"
#include "tc_launch_util.h"
#include "tests/codegen/launch_text.h"
#include "pipeline/pipeline.h"
#include "schedule/layout.h"
#include "schedule/winograd.h"
#include "templates/tensor_core.cuh"
#include "templates/winograd.cuh"

using namespace linear_test;
using tc_test::launch_product;
using modelc::linear::GemmLowering;

namespace {

template <bool A>
using T128x128 = mc::tc::Tile<128, 128, 32, 2, 4, A>;
template <bool A>
using T128x64 = mc::tc::Tile<128, 64, 32, 2, 2, A>;
template <bool A>
using T64x128 = mc::tc::Tile<64, 128, 32, 2, 2, A>;
template <bool A>
using T64x64 = mc::tc::Tile<64, 64, 32, 2, 2, A>;
template <bool A>
using T32x64 = mc::tc::Tile<32, 64, 32, 1, 4, A>;

constexpr double kRtol = 1e-2, kAtol = 1e-3;

Tensor hrandom(Shape s, uint64_t seed, double scale = 1.0) {
  return random_in(DType::float16, std::move(s), seed, scale);  // float16 represents them exactly
}

std::vector<__half> halves(const Tensor& t) {
  std::vector<__half> r;
  for (double v : t.to_f64()) r.push_back(__float2half(static_cast<float>(v)));
  return r;
}

template <class TY>
std::vector<TY> out_buffer(int64_t n) {
  if constexpr (std::is_same<TY, __half>::value) {
    return std::vector<TY>(static_cast<std::size_t>(n), __float2half(std::nanf("")));
  } else {
    return std::vector<TY>(static_cast<std::size_t>(n), std::nanf(""));
  }
}

template <class TY>
std::vector<float> to_floats(const std::vector<TY>& y) {
  std::vector<float> r;
  for (const TY& v : y) r.push_back(static_cast<float>(v));
  return r;
}

/// Runs tc::Gemm<__half, TY, Acc, ..., Tl, Epi> on the node's inputs x0 (A) and x1 (B); returns Y as floats.
template <class TY, class Acc, class Sh, class SA, class SB, class SY, class Tl, class Epi>
std::vector<float> run_gemm(OneNode& t, int64_t y_size, const typename Epi::Params& epi) {
  using K = mc::tc::Gemm<__half, TY, Acc, Sh, SA, SB, SY, Tl, Epi>;
  const std::vector<__half> a = halves(t.feeds.at("x0")), b = halves(t.feeds.at("x1"));
  std::vector<TY> y = out_buffer<TY>(y_size);
  launch_product<K>({a.data(), b.data(), y.data(), epi});
  return to_floats(y);
}

template <class S>
modelc::linear::MatrixStrides ms_of() {
  modelc::linear::MatrixStrides s;
  s.batch = {S::kS0, S::kS1, S::kS2};
  s.row = S::kRow;
  s.col = S::kCol;
  return s;
}

template <class Sh, class SA, class SB, class SY>
void check_lowering(const GemmLowering& g) {
  CHECK(g.batch == std::array<int64_t, 3>{Sh::kB0, Sh::kB1, Sh::kB2});
  CHECK(g.M == Sh::kM);
  CHECK(g.N == Sh::kN);
  CHECK(g.K == Sh::kK);
  CHECK(g.a == ms_of<SA>());
  CHECK(g.b == ms_of<SB>());
  CHECK(g.y == ms_of<SY>());
}

}  // namespace

TEST_CASE("tensor-core gemm: odd shapes (scalar loads), transA, Gemm's alpha / beta / C, every tile, both stagings") {
  const int64_t M = 37, N = 29, K = 19;
  OneNode t("Gemm", 13, {hrandom({K, M}, 1), hrandom({K, N}, 2), hrandom({N}, 3)});
  t.n->set_attr_int("transA", 1);
  t.n->set_attr_float("alpha", 0.5);
  t.n->set_attr_float("beta", 2.0);
  const Tensor want = t.reference()[0];
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, 0, 1, M>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SC = mc::gemm::Strides<0, 0, 0, 0, 1>;
  check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
  using Epi = mc::gemm::EpilogueLinear<float, SC, true>;
  const std::vector<float> c = floats(t.feeds.at("x2"));
  const Epi::Params epi{0.5f, 2.0f, c.data()};
  using G = mc::tc::Gemm<__half, float, float, Sh, SA, SB, SY, T64x64<false>, Epi>;
  CHECK_FALSE(G::LA::kVector);  // A's stride along m is 1 but k's (37) is not a multiple of 8
  CHECK_FALSE(G::LB::kVector);
  INFO("128x128 async");
  check_close(run_gemm<float, float, Sh, SA, SB, SY, T128x128<true>, Epi>(t, M * N, epi), want, kRtol, kAtol);
  INFO("128x64");
  check_close(run_gemm<float, float, Sh, SA, SB, SY, T128x64<false>, Epi>(t, M * N, epi), want, kRtol, kAtol);
  INFO("64x128 async");
  check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x128<true>, Epi>(t, M * N, epi), want, kRtol, kAtol);
  INFO("64x64");
  check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x64<false>, Epi>(t, M * N, epi), want, kRtol, kAtol);
  INFO("32x64 async");
  check_close(run_gemm<float, float, Sh, SA, SB, SY, T32x64<true>, Epi>(t, M * N, epi), want, kRtol, kAtol);
}

TEST_CASE("tensor-core gemm: aligned shapes (16-byte loads), A and B in either orientation, both stagings") {
  const int64_t M = 48, N = 40, K = 72;  // K spans three 32-deep slices, the last one partial
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using Id = mc::gemm::EpilogueIdentity;
  SUBCASE("A [M, K], B [K, N]: row-major A, row-major B") {
    OneNode t("MatMul", 13, {hrandom({M, K}, 10), hrandom({K, N}, 11)});
    const Tensor want = t.reference()[0];
    using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    using G = mc::tc::Gemm<__half, float, float, Sh, SA, SB, SY, T64x64<true>, Id>;
    CHECK(G::LA::kVector);
    CHECK(G::LB::kVector);
    CHECK(G::LA::kKFast);
    CHECK_FALSE(G::LB::kKFast);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x64<true>, Id>(t, M * N, {}), want, kRtol, kAtol);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x64<false>, Id>(t, M * N, {}), want, kRtol, kAtol);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T32x64<true>, Id>(t, M * N, {}), want, kRtol, kAtol);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T128x128<false>, Id>(t, M * N, {}), want, kRtol, kAtol);
  }
  SUBCASE("transA and transB: column-major fragments") {
    OneNode t("Gemm", 11, {hrandom({K, M}, 12), hrandom({N, K}, 13)});
    t.n->set_attr_int("transA", 1);
    t.n->set_attr_int("transB", 1);
    const Tensor want = t.reference()[0];
    using SA = mc::gemm::Strides<0, 0, 0, 1, M>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, K>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    using G = mc::tc::Gemm<__half, float, float, Sh, SA, SB, SY, T64x64<true>, Id>;
    CHECK(G::LA::kVector);
    CHECK(G::LB::kVector);
    CHECK_FALSE(G::LA::kKFast);
    CHECK(G::LB::kKFast);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x64<true>, Id>(t, M * N, {}), want, kRtol, kAtol);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x128<false>, Id>(t, M * N, {}), want, kRtol, kAtol);
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T128x64<true>, Id>(t, M * N, {}), want, kRtol, kAtol);
  }
}

TEST_CASE("tensor-core gemm: batched MatMul with broadcast batch dims, __half output, FP16 accumulation") {
  // [2, 3, 24, 40] x [3, 40, 16] -> [2, 3, 24, 16]: B broadcasts along the first batch dim.
  OneNode t("MatMul", 13, {hrandom({2, 3, 24, 40}, 20), hrandom({3, 40, 16}, 21)});
  const Tensor want = t.reference()[0];
  using Sh = mc::gemm::Shape<1, 2, 3, 24, 16, 40>;
  using SA = mc::gemm::Strides<0, 3 * 960, 960, 40, 1>;
  using SB = mc::gemm::Strides<0, 0, 640, 16, 1>;
  using SY = mc::gemm::Strides<0, 3 * 384, 384, 16, 1>;
  check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
  using Id = mc::gemm::EpilogueIdentity;
  const int64_t n = want.numel();
  check_close(run_gemm<float, float, Sh, SA, SB, SY, T32x64<true>, Id>(t, n, {}), want, kRtol, kAtol);
  check_close(run_gemm<__half, float, Sh, SA, SB, SY, T32x64<false>, Id>(t, n, {}), want, kRtol, kAtol);
  // FP16 accumulation (--fp16-accumulate): 40 products of |x| < 1 summed in half; the error grows
  // with K, so this case checks at a looser absolute tolerance.
  check_close(run_gemm<__half, __half, Sh, SA, SB, SY, T64x64<true>, Id>(t, n, {}), want, kRtol, 2e-2);
  check_close(run_gemm<float, __half, Sh, SA, SB, SY, T64x64<false>, Id>(t, n, {}), want, kRtol, 2e-2);
}

TEST_CASE("tensor-core gemm: Einsum forms") {
  // 'bik,bkj->bij' and 'ik,jk->ij' (B transposed by the equation).
  SUBCASE("batched") {
    OneNode t("Einsum", 12, {hrandom({3, 17, 24}, 30), hrandom({3, 24, 9}, 31)});
    t.n->set_attr_string("equation", "bik,bkj->bij");
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 3, 17, 9, 24>;
    using SA = mc::gemm::Strides<0, 0, 408, 24, 1>;
    using SB = mc::gemm::Strides<0, 0, 216, 9, 1>;
    using SY = mc::gemm::Strides<0, 0, 153, 9, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T32x64<true>, mc::gemm::EpilogueIdentity>(t, want.numel(), {}),
                want, kRtol, kAtol);
  }
  SUBCASE("B transposed") {
    OneNode t("Einsum", 12, {hrandom({20, 32}, 32), hrandom({24, 32}, 33)});
    t.n->set_attr_string("equation", "ik,jk->ij");
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, 20, 24, 32>;
    using SA = mc::gemm::Strides<0, 0, 0, 32, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, 32>;
    using SY = mc::gemm::Strides<0, 0, 0, 24, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<float, float, Sh, SA, SB, SY, T64x64<false>, mc::gemm::EpilogueIdentity>(t, want.numel(), {}),
                want, kRtol, kAtol);
  }
}

namespace {

/// FusedMatMul [M, K] x [K, N] + bias [N], activation A, residual R; __half bias and residual.
template <mc::gemm::Act A, mc::gemm::Residual R, class TY, class Tl>
void check_fused(modelc::ops::Activation kind, double alpha, double beta, std::optional<double> lo,
                 std::optional<double> hi, const std::string& position) {
  constexpr int64_t M = 24, N = 40, K = 32;
  std::vector<Tensor> ins = {hrandom({M, K}, 40), hrandom({K, N}, 41), hrandom({N}, 42)};
  if (R != mc::gemm::Residual::none) ins.push_back(hrandom({M, N}, 43));
  OneNode t("FusedMatMul", 13, ins);
  fuse(t, activation(kind, alpha, beta, lo, hi), position);
  OneNode* node = &t;
  const Tensor want = node->reference()[0];
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SBias = mc::gemm::Strides<0, 0, 0, 0, 1>;
  using Epi = mc::gemm::EpilogueFused<__half, SBias, true, A, R>;
  const std::vector<__half> bias = halves(node->feeds.at("x2"));
  std::vector<__half> residual;
  if (R != mc::gemm::Residual::none) residual = halves(node->feeds.at("x3"));
  const typename Epi::Params epi{1.0f, 1.0f, bias.data(), residual.empty() ? nullptr : residual.data(),
                                 {float(alpha), float(beta), lo ? float(*lo) : -INFINITY, hi ? float(*hi) : INFINITY}};
  INFO("activation " << modelc::ops::activation_name(kind) << ", residual '" << position << "'");
  check_close(run_gemm<TY, float, Sh, SA, SB, SY, Tl, Epi>(*node, M * N, epi), want, kRtol, kAtol);
}

}  // namespace

TEST_CASE("tensor-core gemm: every fused epilogue (bias, activations, residual before / after)") {
  using modelc::ops::Activation;
  using mc::gemm::Act;
  using mc::gemm::Residual;
  check_fused<Act::none, Residual::none, float, T32x64<true>>(Activation::none, 0, 0, {}, {}, "");
  check_fused<Act::relu, Residual::after_activation, __half, T64x64<false>>(Activation::relu, 0, 0, {}, {},
                                                                             "after_activation");
  check_fused<Act::clip, Residual::before_activation, float, T32x64<false>>(Activation::clip, 0, 0, 0.0, 0.5,
                                                                            "before_activation");
  check_fused<Act::leaky_relu, Residual::none, __half, T32x64<true>>(Activation::leaky_relu, 0.1, 0, {}, {}, "");
  check_fused<Act::silu, Residual::before_activation, float, T64x64<true>>(Activation::silu, 0, 0, {}, {},
                                                                           "before_activation");
  check_fused<Act::gelu, Residual::after_activation, float, T32x64<true>>(Activation::gelu, 0, 0, {}, {},
                                                                          "after_activation");
  check_fused<Act::sigmoid, Residual::none, __half, T32x64<false>>(Activation::sigmoid, 0, 0, {}, {}, "");
  check_fused<Act::hard_swish, Residual::after_activation, __half, T32x64<true>>(Activation::hard_swish, 1.0 / 6, 0.5,
                                                                                  {}, {}, "after_activation");
  check_fused<Act::tanh, Residual::none, float, T32x64<true>>(Activation::tanh, 0, 0, {}, {}, "");
}

TEST_CASE("tensor-core gemm: a __half output clamps finite values to +-65504 (cast with clamp)") {
  const int64_t M = 16, N = 24, K = 32;
  // |sums| up to 32 * 400 * 400: many beyond FP16's range; the FP32 values stay finite.
  OneNode t("MatMul", 13, {hrandom({M, K}, 50, 400.0), hrandom({K, N}, 51, 400.0)});
  const Tensor want = t.reference()[0];
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  const std::vector<float> got =
      run_gemm<__half, float, Sh, SA, SB, SY, T32x64<true>, mc::gemm::EpilogueIdentity>(t, M * N, {});
  const std::vector<double> w = want.to_f64();
  int clamped = 0, bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    REQUIRE(std::isfinite(got[i]));
    if (std::abs(w[i]) > 65504.0) {
      ++clamped;
      if (got[i] != (w[i] > 0 ? 65504.0f : -65504.0f)) ++bad;
    } else if (!(std::abs(got[i] - w[i]) <= kAtol + kRtol * std::abs(w[i]))) {
      ++bad;
    }
  }
  CHECK(clamped > 10);  // the case does exercise the clamp
  CHECK(bad == 0);
  // to_output itself: NaN and infinities stay, finite values clamp.
  CHECK(__half2float(mc::tc::to_output<__half>(1e6f)) == 65504.0f);
  CHECK(__half2float(mc::tc::to_output<__half>(-70000.0f)) == -65504.0f);
  CHECK(std::isinf(__half2float(mc::tc::to_output<__half>(INFINITY))));
  CHECK(std::isnan(__half2float(mc::tc::to_output<__half>(std::nanf("")))));
}

// ---- the implicit-GEMM convolution ------------------------------------------------------------

namespace {

using mc::conv::Dims3;

template <class D>
std::array<int64_t, 3> arr() {
  return {D::kD, D::kH, D::kW};
}

template <class Sh>
void check_geometry(const modelc::linear::ConvGeometry& g) {
  CHECK(g.N == Sh::kN);
  CHECK(g.C == Sh::kC);
  CHECK(g.M == Sh::kM);
  CHECK(g.G == 1);
  CHECK(g.in == arr<typename Sh::InDims>());
  CHECK(g.kernel == arr<typename Sh::KernelDims>());
  CHECK(g.out == arr<typename Sh::OutDims>());
  CHECK(g.stride == arr<typename Sh::StrideDims>());
  CHECK(g.pad == arr<typename Sh::PadDims>());
  CHECK(g.dilation == arr<typename Sh::DilationDims>());
}

/// NCHW (any spatial rank; for W: [M, C, k...]) -> channels-last with channel pitch `pitch`; the
/// padded channels hold `fill` (NaN for activations: readers must mask them; 0 for weights).
std::vector<__half> pitched(const Tensor& t, int64_t pitch, float fill) {
  const Shape& s = t.shape();
  const int64_t N = s[0], C = s[1], P = t.numel() / (N * C);
  const std::vector<double> v = t.to_f64();
  std::vector<__half> r(static_cast<std::size_t>(N * P * pitch), __float2half(fill));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        r[static_cast<std::size_t>((n * P + p) * pitch + c)] = __float2half(static_cast<float>(v[static_cast<std::size_t>((n * C + c) * P + p)]));
  return r;
}

/// Channels-last with pitch -> NCHW floats of `nchw`; a padded channel that was written is an error.
template <class TY>
std::vector<float> unpitched(const std::vector<TY>& y, const Shape& nchw, int64_t pitch) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(static_cast<std::size_t>(N * C * P));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t c = 0; c < C; ++c)
        r[static_cast<std::size_t>((n * C + c) * P + p)] = static_cast<float>(y[static_cast<std::size_t>((n * P + p) * pitch + c)]);
      for (int64_t c = C; c < pitch; ++c) {
        INFO("padded output channel " << c << " of pixel " << p << " was written");
        CHECK(std::isnan(static_cast<float>(y[static_cast<std::size_t>((n * P + p) * pitch + c)])));
      }
    }
  return r;
}

/// Runs tc::Conv<__half, TY, Acc, Sh, Cp, Yp, Tl, Epi, Compact> on the node's x0 (X), x1 (W); epi's
/// pointers come from `make_epi(bias, residual)` (pitched __half copies of x2 and x3 where the node
/// has them). Compact: W as the layout stage stores it (ohwi_weights, compact storage).
template <class Sh, int Cp, int Yp, class Tl, class Epi, class TY = float, class Acc = float, bool Compact = false,
          class MakeEpi>
std::vector<float> run_conv(OneNode& t, const Tensor& want, MakeEpi make_epi) {
  using K = mc::tc::Conv<__half, TY, Acc, Sh, Cp, Yp, Tl, Epi, Compact>;
  const std::vector<__half> x = pitched(t.feeds.at("x0"), Cp, std::nanf(""));
  const std::vector<__half> w =
      Compact ? halves(modelc::ohwi_weights(t.feeds.at("x1"), modelc::WeightStorage{Sh::kC, K::kKw, true}))
              : pitched(t.feeds.at("x1"), Cp, 0.0f);
  std::vector<__half> bias, residual;
  if (t.feeds.count("x2")) bias = halves(t.feeds.at("x2"));
  if (t.feeds.count("x3")) residual = pitched(t.feeds.at("x3"), Yp, std::nanf(""));
  const int64_t pixels = want.numel() / want.shape()[1];
  std::vector<TY> y = out_buffer<TY>(pixels * Yp);
  launch_product<K>(
      {x.data(), w.data(), y.data(), make_epi(bias.data(), residual.empty() ? nullptr : residual.data())});
  return unpitched(y, want.shape(), Yp);
}

using BiasEpi = mc::gemm::EpilogueBias<__half>;
auto bias_params = [](const __half* b, const __half*) { return BiasEpi::Params{b}; };
auto no_params = [](const __half*, const __half*) { return mc::gemm::EpilogueIdentity::Params{}; };
/// FusedConv's relu with a residual added before it (bias per channel).
using ReluResidualEpi = mc::gemm::EpilogueFused<__half, mc::gemm::Strides<0, 0, 0, 1, 0>, true, mc::gemm::Act::relu,
                                                mc::gemm::Residual::before_activation>;
auto relu_residual_params = [](const __half* b, const __half* r) {
  return ReluResidualEpi::Params{1.0f, 1.0f, b, r, {0, 0, -INFINITY, INFINITY}};
};

}  // namespace

TEST_CASE("tensor-core conv: 1x1, NHWC, 16-byte loads, both stagings, __half output") {
  OneNode t("Conv", 13, {hrandom({2, 16, 5, 5}, 60), hrandom({24, 16, 1, 1}, 61), hrandom({24}, 62)});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<2, 16, 24, 1, Dims3<1, 5, 5>, Dims3<1, 1, 1>, Dims3<1, 5, 5>, Dims3<1, 1, 1>,
                             Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  CHECK(mc::tc::Conv<__half, float, float, Sh, 16, 24, T32x64<true>, BiasEpi>::LA::kVector);
  check_close(run_conv<Sh, 16, 24, T32x64<true>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 16, 24, T64x64<false>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 16, 24, T64x64<true>, BiasEpi, __half>(t, want, bias_params), want, kRtol, kAtol);
  // An output pitch of 32: the channels 24..31 stay unwritten.
  check_close(run_conv<Sh, 16, 32, T128x64<false>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
}

TEST_CASE("tensor-core conv: 3x3 stride 2 pad 1, bias") {
  OneNode t("Conv", 13, {hrandom({2, 8, 9, 9}, 63), hrandom({16, 8, 3, 3}, 64), hrandom({16}, 65)});
  t.n->set_attr_ints("strides", {2, 2});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<2, 8, 16, 1, Dims3<1, 9, 9>, Dims3<1, 3, 3>, Dims3<1, 5, 5>, Dims3<1, 2, 2>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  check_close(run_conv<Sh, 8, 16, T32x64<true>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 8, 16, T64x64<false>, BiasEpi, float, __half>(t, want, bias_params), want, kRtol, 1e-2);
}

TEST_CASE("tensor-core conv: 7x7 stride 2 pad 3 with C = 3, in a pitch of 8 (NaN in the padding) and unpadded") {
  OneNode t("Conv", 13, {hrandom({1, 3, 13, 13}, 66), hrandom({16, 3, 7, 7}, 67), hrandom({16}, 68)});
  t.n->set_attr_ints("strides", {2, 2});
  t.n->set_attr_ints("pads", {3, 3, 3, 3});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<1, 3, 16, 1, Dims3<1, 13, 13>, Dims3<1, 7, 7>, Dims3<1, 7, 7>, Dims3<1, 2, 2>,
                             Dims3<0, 3, 3>, Dims3<1, 1, 1>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  CHECK(mc::tc::Conv<__half, float, float, Sh, 8, 16, T32x64<true>, BiasEpi>::LA::kVector);
  CHECK_FALSE(mc::tc::Conv<__half, float, float, Sh, 3, 16, T32x64<true>, BiasEpi>::LA::kVector);
  check_close(run_conv<Sh, 8, 16, T32x64<true>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 8, 16, T64x64<false>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 3, 16, T32x64<true>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
}

TEST_CASE("tensor-core conv: dilation 2, FusedConv with relu and a residual, odd channel counts") {
  // C 12 in a pitch of 16, M 20 in a pitch of 24: partial chunks in both.
  OneNode t("FusedConv", 13,
            {hrandom({1, 12, 9, 9}, 69), hrandom({20, 12, 3, 3}, 70), hrandom({20}, 71), hrandom({1, 20, 9, 9}, 72)});
  t.n->set_attr_ints("dilations", {2, 2});
  t.n->set_attr_ints("pads", {2, 2, 2, 2});
  fuse(t, activation(modelc::ops::Activation::relu), "before_activation");
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<1, 12, 20, 1, Dims3<1, 9, 9>, Dims3<1, 3, 3>, Dims3<1, 9, 9>, Dims3<1, 1, 1>,
                             Dims3<0, 2, 2>, Dims3<1, 2, 2>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  using Epi = ReluResidualEpi;
  const auto params = relu_residual_params;
  check_close(run_conv<Sh, 16, 24, T32x64<true>, Epi>(t, want, params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 16, 24, T64x64<false>, Epi, __half>(t, want, params), want, kRtol, kAtol);
}

TEST_CASE("tensor-core conv: 1-D and 3-D") {
  SUBCASE("1-D, k3 s1 p1, no bias") {
    OneNode t("Conv", 13, {hrandom({2, 8, 11}, 73), hrandom({8, 8, 3}, 74)});
    t.n->set_attr_ints("pads", {1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<2, 8, 8, 1, Dims3<1, 1, 11>, Dims3<1, 1, 3>, Dims3<1, 1, 11>, Dims3<1, 1, 1>,
                               Dims3<0, 0, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run_conv<Sh, 8, 8, T32x64<true>, mc::gemm::EpilogueIdentity>(t, want, no_params), want, kRtol, kAtol);
  }
  SUBCASE("3-D, k3x3x3 s2 p1, bias") {
    OneNode t("Conv", 13, {hrandom({1, 8, 4, 5, 5}, 75), hrandom({16, 8, 3, 3, 3}, 76), hrandom({16}, 77)});
    t.n->set_attr_ints("strides", {2, 2, 2});
    t.n->set_attr_ints("pads", {1, 1, 1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 8, 16, 1, Dims3<4, 5, 5>, Dims3<3, 3, 3>, Dims3<2, 3, 3>, Dims3<2, 2, 2>,
                               Dims3<1, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run_conv<Sh, 8, 16, T32x64<false>, BiasEpi>(t, want, bias_params), want, kRtol, kAtol);
  }
}

// ---- compact K: fewer than 8 input channels, K over (tap, channel) ------------------------------

namespace {

/// One compact-K case: Conv N x C x H x W (KH x KW, stride S, pad P, dilation Dl) -> M channels +
/// bias, X at a channel pitch of 8 with NaN in channels C..7 (never read), W compact (rows of
/// taps x C rounded up to 8), Y at pitch round_up(M, 8), run with tile Tl.
template <int N, int C, int M, int H, int W, int KH, int KW, int S, int P, int Dl, class Tl, class TY = float,
          class Acc = float>
void compact_conv_case(uint64_t seed, double atol = kAtol) {
  constexpr int OH = (H + 2 * P - Dl * (KH - 1) - 1) / S + 1, OW = (W + 2 * P - Dl * (KW - 1) - 1) / S + 1;
  constexpr int Yp = (M + 7) / 8 * 8;
  INFO("N " << N << " C " << C << " M " << M << " " << H << "x" << W << " k " << KH << "x" << KW << " s " << S << " p "
            << P << " d " << Dl << " stages " << Tl::kStages << " split " << Tl::kSplitK << " async " << Tl::kAsync);
  OneNode t("Conv", 13, {hrandom({N, C, H, W}, seed), hrandom({M, C, KH, KW}, seed + 1, 0.5), hrandom({M}, seed + 2)});
  t.n->set_attr_ints("strides", {S, S});
  t.n->set_attr_ints("pads", {P, P, P, P});
  t.n->set_attr_ints("dilations", {Dl, Dl});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<N, C, M, 1, Dims3<1, H, W>, Dims3<1, KH, KW>, Dims3<1, OH, OW>, Dims3<1, S, S>,
                             Dims3<0, P, P>, Dims3<1, Dl, Dl>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  using K = mc::tc::Conv<__half, TY, Acc, Sh, 8, Yp, Tl, BiasEpi, true>;
  static_assert(K::kK == KH * KW * C && K::kKw % 8 == 0 && K::kKw - K::kK < 8, "compact K and W's rows");
  static_assert(!K::LA::kVector && K::LB::kVector, "X element by element, W's rows in 16-byte chunks");
  check_close(run_conv<Sh, 8, Yp, Tl, BiasEpi, TY, Acc, true>(t, want, bias_params), want, kRtol, atol);
}

}  // namespace

TEST_CASE("tensor-core conv: compact K (C 1..7 at pitch 8, NaN in the padded channels), odd shapes, split-K") {
  using mc::tc::Tile;
  // resnet50's first conv, scaled down: 7x7 s2 p3 on 3 channels, K 147 in rows of 152.
  compact_conv_case<1, 3, 16, 13, 13, 7, 7, 2, 3, 1, T32x64<true>>(200);
  compact_conv_case<1, 3, 64, 17, 15, 7, 7, 2, 3, 1, Tile<64, 64, 32, 2, 2, true, 3, 2>, __half>(203);
  // 1 channel, 3x3 s1 p1 on an odd pixel count (2 x 9 x 7), M 20; K 9: one slice, its tail masked.
  compact_conv_case<2, 1, 20, 9, 7, 3, 3, 1, 1, 1, T64x64<true>>(206);
  // 2 channels, 1x1 stride 2 (K 2 in rows of 8), 3 images.
  compact_conv_case<3, 2, 8, 5, 5, 1, 1, 2, 0, 1, T32x64<false>>(209);
  // 5 channels, 5x5 s2 p2, register staging, FP16 accumulation.
  compact_conv_case<1, 5, 24, 11, 11, 5, 5, 2, 2, 1, T64x64<false>, float, __half>(212, 2e-2);
  // 7 channels, 3x3 dilation 2 pad 2, K 63 in slices of 16: 4 slices in 3 splits, 4 stages.
  compact_conv_case<1, 7, 40, 9, 9, 3, 3, 1, 2, 2, Tile<32, 32, 16, 1, 1, true, 4, 3>>(215);
  // 6 channels, 3x3 s1 p0, 4 channels of 4 and 2 splits, register staging with split-K, __half out.
  compact_conv_case<1, 6, 12, 8, 10, 3, 3, 1, 0, 1, Tile<32, 32, 32, 1, 1, false, 2, 2>, __half>(218);
  // 4 channels, 3x3 s2 p1 (K 36 in rows of 40), split-K with FP16 accumulation.
  compact_conv_case<2, 4, 16, 9, 9, 3, 3, 2, 1, 1, Tile<64, 32, 16, 2, 1, true, 2, 2>, float, __half>(221, 2e-2);
}

TEST_CASE("tensor-core conv: compact K over a channel slice (16 channels at pitch 40, NaN in the rest), 16-byte loads") {
  // X a slice of a wider Concat buffer (elide_concat): K over its 16 channels in whole chunks, read
  // at the buffer's pitch; the other 24 channels of each pixel (another slice's data) never read.
  OneNode t("Conv", 13, {hrandom({1, 16, 7, 6}, 230), hrandom({24, 16, 3, 3}, 231, 0.5), hrandom({24}, 232)});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<1, 16, 24, 1, Dims3<1, 7, 6>, Dims3<1, 3, 3>, Dims3<1, 7, 6>, Dims3<1, 1, 1>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  using K = mc::tc::Conv<__half, float, float, Sh, 40, 24, T32x64<true>, BiasEpi, true>;
  static_assert(K::kK == 9 * 16 && K::kKw == K::kK && K::LA::kVector, "compact K of whole chunks: 16-byte loads");
  check_close(run_conv<Sh, 40, 24, T32x64<true>, BiasEpi, float, float, true>(t, want, bias_params), want, kRtol, kAtol);
  check_close(run_conv<Sh, 40, 24, T64x64<false>, BiasEpi, float, float, true>(t, want, bias_params), want, kRtol, kAtol);
}

// ---- the SIMT convolution over the same NHWC views (the fallback's input) ------------------------

TEST_CASE("simt conv: NHWC views with channel pitches (X 8 for C 3 with NaN padding, Y 24 for M 20)") {
  OneNode t("Conv", 13, {hrandom({2, 3, 9, 9}, 80), hrandom({20, 3, 3, 3}, 81), hrandom({20}, 82)});
  t.n->set_attr_ints("strides", {2, 2});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<2, 3, 20, 1, Dims3<1, 9, 9>, Dims3<1, 3, 3>, Dims3<1, 5, 5>, Dims3<1, 2, 2>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  using K = mc::conv::Conv<float, float, Sh, mc::conv::Layout::nhwc, mc::gemm::Tile<32, 32, 8, 4, 2>,
                           mc::gemm::EpilogueBias<float>, 8, 24, 8>;
  auto to_float = [](const std::vector<__half>& h) {
    std::vector<float> r;
    for (const __half& v : h) r.push_back(__half2float(v));
    return r;
  };
  const std::vector<float> x = to_float(pitched(t.feeds.at("x0"), 8, std::nanf("")));
  const std::vector<float> w = to_float(pitched(t.feeds.at("x1"), 8, 0.0f));
  const std::vector<float> b = floats(t.feeds.at("x2"));
  std::vector<float> y(static_cast<std::size_t>(2 * 25 * 24), std::nanf(""));
  launch<K>({x.data(), w.data(), y.data(), {b.data()}});
  check_close(unpitched(y, want.shape(), 24), want);
  // Compact weights (W pitch 3, rows of 27 rounded up to 32; the tail NaN: never read as data).
  using KC = mc::conv::Conv<float, float, Sh, mc::conv::Layout::nhwc, mc::gemm::Tile<32, 32, 8, 4, 2>,
                            mc::gemm::EpilogueBias<float>, 8, 24, 3, 32>;
  std::vector<float> wc = floats(modelc::ohwi_weights(t.feeds.at("x1"), modelc::WeightStorage{3, 32, true}));
  for (std::size_t i = 0; i < wc.size(); ++i) {
    if (i % 32 >= 27) wc[i] = std::nanf("");
  }
  std::vector<float> yc(static_cast<std::size_t>(2 * 25 * 24), std::nanf(""));
  launch<KC>({x.data(), wc.data(), yc.data(), {b.data()}});
  check_close(unpitched(yc, want.shape(), 24), want);
}

// ---- the families: engine, fallback reason, tactics per arch, emitted code -----------------------

namespace {

/// t's kernel with every float view in FP16; `cp`: X, Y (and a residual) channels-last with the
/// pitches given, W stored as the layout stage stores it (conv_weight_storage).
modelc::Kernel fp16_kernel(OneNode& t, const std::string& family, int64_t cp = 0, int64_t yp = 0) {
  modelc::Kernel k = t.kernel(family);
  for (auto* views : {&k.inputs, &k.outputs}) {
    for (modelc::TensorView& v : *views) {
      if (v.dtype == DType::float32) v.dtype = DType::float16;
    }
  }
  if (cp) {
    linear_test::make_channels_last(k.inputs[0], cp);
    modelc::TensorView& w = k.inputs[1];
    w.strides = modelc::weight_strides(w.shape, modelc::conv_weight_storage(w.shape, k.inputs[0].shape[1], cp, true));
    linear_test::make_channels_last(k.outputs[0], yp);
    if (k.inputs.size() > 3 && k.inputs[3].dtype != DType::undefined) linear_test::make_channels_last(k.inputs[3], yp);
  }
  return k;
}

const modelc::KernelFamily& family(const std::string& name) {
  const modelc::KernelFamily* f = modelc::FamilyRegistry::instance().find(name);
  REQUIRE(f);
  return *f;
}

std::vector<modelc::Target> targets(std::initializer_list<const char*> archs) {
  std::vector<modelc::Target> r;
  for (const char* a : archs) r.push_back(modelc::target_for(a));
  return r;
}

/// What the tactics stage does after the tactic: a split-K kernel's workspace placed in the arena.
void place_workspace(modelc::Kernel& k) {
  if (k.workspace_bytes > 0) {
    k.workspace = modelc::TensorView{"ws", DType::float32, {k.workspace_bytes / 4}, {1}, modelc::Space::arena, 0, 1024};
  }
}

/// Launches of arch variant `sm`: the product, then its SplitKReduce when the tile splits K.
std::vector<modelc::Launch> variant(const modelc::KernelLaunches& e, int sm) {
  std::vector<modelc::Launch> r;
  for (const modelc::Launch& l : e.launches) {
    if (l.min_sm == sm) r.push_back(l);
  }
  return r;
}

struct HalfContext : modelc::EmitContext {
  std::string ptr(const modelc::TensorView& v, bool is_const) const override {
    return std::string(is_const ? "const:" : "") + v.value;
  }
  std::string ctype(DType t) const override { return t == DType::float16 ? "__half" : "float"; }
};

}  // namespace

TEST_CASE("gemm family: tensor cores for FP16, SIMT with the reason otherwise, a tactic per arch") {
  const auto& f = family("gemm");
  SUBCASE("FP16 MatMul on tensor cores; sm_75 register-staged, sm_90 cp.async, chosen at run time") {
    // M 1024: above the small-M kernel's rows (schedule/small_m.h): tc::Gemm on sm_90 too.
    OneNode t("MatMul", 13, {random({1024, 128}, 1), random({128, 192}, 2)});
    modelc::Kernel k = fp16_kernel(t, "gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75", "sm_90"}));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.fallback_reason.empty());
    CHECK_FALSE(modelc::linear::tc_tile_of(k, k.tactic).async);
    REQUIRE(k.arch_tactic.count(75) == 1);
    REQUIRE(k.arch_tactic.count(90) == 1);
    CHECK(k.arch_tactic.at(75) == k.tactic);
    CHECK(modelc::linear::tc_tile_of(k, k.arch_tactic.at(90)).async);
    INFO(k.note);
    CHECK(k.note.find("tensor-core tile") != std::string::npos);
    place_workspace(k);
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    INFO(modelc::test::launch_text(e));
    // An arch variant per planned arch; a variant that splits K adds its reduction, which reads the
    // workspace through the same params.
    const modelc::linear::TcTile t90 = modelc::linear::tc_tile_of(k, k.arch_tactic.at(90));
    const std::vector<modelc::Launch> v75 = variant(e, 75), v90 = variant(e, 90);
    REQUIRE(e.launches.size() == v75.size() + v90.size());
    REQUIRE(v75.size() == 1);
    CHECK(v75[0].type.find("mc::tc::Gemm<__half, __half, float, mc::gemm::Shape<1, 1, 1, 1024, 192, 128>") == 0);
    REQUIRE(v90.size() == (t90.split_k > 1 ? 2u : 1u));
    CHECK(v90[0].type.find("mc::tc::Gemm<__half, ") == 0);
    CHECK(v90[0].type != v75[0].type);
    CHECK(v90[0].dynamic_smem == t90.smem_bytes());
    if (t90.split_k > 1) {
      CHECK(v90[1].type == "mc::tc::SplitKReduce<" + v90[0].type + ">");
      CHECK(v90[1].params.back().field == "partial");
      CHECK(v90[1].params.back().value == "ws");  // the workspace view, through the context (HalfContext: its name)
      CHECK(k.workspace_bytes == int64_t{t90.split_k} * 256 * 192 * 4);
    }
  }
  SUBCASE("one arch: one instantiation; --fp16-accumulate gives a __half accumulator") {
    OneNode t("Gemm", 13, {random({64, 64}, 3), random({64, 64}, 4), random({64}, 5)});
    modelc::Kernel k = fp16_kernel(t, "gemm");
    std::vector<modelc::Target> ts = targets({"sm_86"});
    ts[0].fp16_accumulate = true;
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, ts);
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.arch_tactic.empty());
    CHECK(modelc::linear::tc_tile_of(k, k.tactic).fp16_accumulate);
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    REQUIRE(e.launches.size() == 1);
    const std::string& type = e.launches[0].type;
    INFO(type);
    CHECK(e.launches[0].min_sm == 0);
    CHECK(type.find("mc::tc::Gemm<__half, __half, __half,") == 0);
    CHECK(type.find("mc::gemm::EpilogueLinear<__half,") != std::string::npos);
    CHECK(type.find("mc::tc::Tile<") != std::string::npos);
    CHECK(modelc::linear::tc_tile_of(k, k.tactic).async);  // cp.async on sm_86
    CHECK(type.find(modelc::linear::tc_tile_text(modelc::linear::tc_tile_of(k, k.tactic)) + ", mc::gemm::EpilogueLinear") !=
          std::string::npos);
  }
  SUBCASE("fallbacks") {
    OneNode fp32("MatMul", 13, {random({64, 64}, 6), random({64, 64}, 7)});
    modelc::Kernel k = fp32.kernel("gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75"}));
    CHECK(k.engine == modelc::Engine::simt);
    CHECK(k.fallback_reason == "FP32 storage");
    CHECK(k.note.find("(SIMT: FP32 storage)") != std::string::npos);
    CHECK(f.emit(k, HalfContext{}).launches.at(0).type.find("mc::gemm::Gemm<") == 0);

    OneNode tiny("MatMul", 13, {random({16, 8}, 8), random({8, 4}, 9)});  // 16 rows: not a GEMV
    modelc::Kernel kt = fp16_kernel(tiny, "gemm");
    modelc::plan_kernel(kt);
    modelc::choose_tactic(kt, targets({"sm_75"}));
    CHECK(kt.engine == modelc::Engine::simt);
    CHECK(kt.fallback_reason == "tiny GEMM: 16x4x8");

    OneNode sum("Einsum", 12, {random({3, 4}, 10)});
    sum.n->set_attr_string("equation", "ij->i");
    modelc::Kernel ks = fp16_kernel(sum, "gemm");
    modelc::plan_kernel(ks);
    modelc::choose_tactic(ks, targets({"sm_75"}));
    CHECK(ks.engine == modelc::Engine::simt);
    CHECK(ks.fallback_reason == "one-operand Einsum (a strided sum)");
  }
}

TEST_CASE("conv family: tensor cores for FP16 NHWC groups = 1, SIMT with the reason otherwise") {
  const auto& f = family("conv");
  SUBCASE("7x7 s2 on C = 3 in a pitch of 8: tensor cores, compact K") {
    OneNode t("Conv", 13, {random({1, 3, 32, 32}, 1), random({64, 3, 7, 7}, 2), random({64}, 3)});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {3, 3, 3, 3});
    modelc::Kernel k = fp16_kernel(t, "conv", 8, 64);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75", "sm_80"}));
    CHECK(k.family_name() == "conv");
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.fallback_reason.empty());
    CHECK(k.arch_tactic.size() == 2);
    place_workspace(k);
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    REQUIRE(variant(e, 75).size() >= 1);
    REQUIRE(variant(e, 80).size() >= 1);
    CHECK(e.launches.size() == variant(e, 75).size() + variant(e, 80).size());
    const std::string& type = e.launches[0].type;
    INFO(type);
    CHECK(type.find("mc::tc::Conv<__half, __half, float, mc::conv::Shape<1, 3, 64, 1,") == 0);
    CHECK(type.find("/*X pitch*/ 8, /*Y pitch*/ 64") != std::string::npos);
    CHECK(type.find("mc::gemm::EpilogueBias<__half>, /*compact K*/ true>") != std::string::npos);
    CHECK(k.note.find("K 147 (compact: 49 taps x 3 channels, W rows of 152)") != std::string::npos);
    CHECK(e.launches[0].comment.find("K 147 (compact") != std::string::npos);
  }
  SUBCASE("16 channels: K over the pitch, no compact form") {
    OneNode t("Conv", 13, {random({1, 12, 8, 8}, 1), random({32, 12, 3, 3}, 2)});
    modelc::Kernel k = fp16_kernel(t, "conv", 16, 32);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_80"}));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("K 144 (9 taps x pitch 16)") != std::string::npos);
    place_workspace(k);
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    REQUIRE(e.launches.size() >= 1);
    CHECK(e.launches[0].type.find("compact") == std::string::npos);
  }
  SUBCASE("fallbacks, each with its reason") {
    OneNode t("Conv", 13, {random({1, 16, 8, 8}, 4), random({16, 16, 3, 3}, 5)});
    modelc::Kernel nchw = fp16_kernel(t, "conv");
    modelc::plan_kernel(nchw);
    modelc::choose_tactic(nchw, targets({"sm_75"}));
    CHECK(nchw.engine == modelc::Engine::simt);
    CHECK(nchw.fallback_reason == "NCHW layout");

    modelc::Kernel fp32 = t.kernel("conv");
    modelc::plan_kernel(fp32);
    modelc::choose_tactic(fp32, targets({"sm_75"}));
    CHECK(fp32.fallback_reason == "FP32 storage");

    OneNode c12("Conv", 13, {random({1, 12, 8, 8}, 6), random({16, 12, 3, 3}, 7)});
    modelc::Kernel unpadded = fp16_kernel(c12, "conv", 12, 16);
    modelc::plan_kernel(unpadded);
    modelc::choose_tactic(unpadded, targets({"sm_75"}));
    CHECK(unpadded.engine == modelc::Engine::simt);
    CHECK(unpadded.fallback_reason == "channels 12 not padded to a multiple of 8");
    // The SIMT fallback emits the NHWC template with the pitches.
    const modelc::KernelLaunches e = f.emit(unpadded, HalfContext{});
    REQUIRE(e.launches.size() == 1);
    INFO(e.launches[0].type);
    CHECK(e.launches[0].type.find("mc::conv::Layout::nhwc") != std::string::npos);
    CHECK(e.launches[0].type.find("/*pitches X Y W*/ 12, 16, 12>") != std::string::npos);

    // Compact weights on the SIMT fallback (here: X not 16-byte aligned): W's row pitch printed.
    OneNode c3("Conv", 13, {random({1, 3, 8, 8}, 6), random({16, 3, 3, 3}, 7)});
    modelc::Kernel misaligned = fp16_kernel(c3, "conv", 8, 16);
    misaligned.inputs[0].buffer_offset += 2;  // 2 bytes further into its buffer: not 16-byte aligned
    misaligned.inputs[0].offset += 2;
    modelc::plan_kernel(misaligned);
    modelc::choose_tactic(misaligned, targets({"sm_75"}));
    CHECK(misaligned.fallback_reason == "a buffer not 16-byte aligned");
    const modelc::KernelLaunches em = f.emit(misaligned, HalfContext{});
    REQUIRE(em.launches.size() == 1);
    INFO(em.launches[0].type);
    CHECK(em.launches[0].type.find("/*pitches X Y W*/ 8, 16, 3, /*W row*/ 32>") != std::string::npos);

    OneNode g("Conv", 13, {random({1, 16, 8, 8}, 8), random({16, 4, 3, 3}, 9)});
    g.n->set_attr_int("group", 4);
    modelc::Kernel grouped = fp16_kernel(g, "conv");
    modelc::plan_kernel(grouped);
    modelc::choose_tactic(grouped, targets({"sm_75"}));
    CHECK(grouped.engine == modelc::Engine::simt);
    CHECK(grouped.fallback_reason == "groups = 4; NCHW layout");

    OneNode dw("Conv", 13, {random({1, 16, 8, 8}, 10), random({16, 1, 3, 3}, 11)});
    dw.n->set_attr_int("group", 16);
    modelc::Kernel depthwise = fp16_kernel(dw, modelc::family_for(*dw.n));
    CHECK(depthwise.family_name() == "conv_depthwise");
    modelc::plan_kernel(depthwise);
    modelc::choose_tactic(depthwise, targets({"sm_75"}));
    CHECK(depthwise.engine == modelc::Engine::simt);
    CHECK(depthwise.fallback_reason == "depthwise (groups = C); not tiled: NCHW layout");

    modelc::Kernel dw32 = dw.kernel(modelc::family_for(*dw.n));
    modelc::plan_kernel(dw32);
    modelc::choose_tactic(dw32, targets({"sm_75"}));
    CHECK(dw32.engine == modelc::Engine::simt);
    CHECK(dw32.fallback_reason == "depthwise (groups = C)");

    OneNode dw2("Conv", 13, {random({1, 8, 8, 8}, 12), random({16, 1, 3, 3}, 13)});
    dw2.n->set_attr_int("group", 8);
    modelc::Kernel multiplier = fp16_kernel(dw2, modelc::family_for(*dw2.n), 8, 16);
    modelc::plan_kernel(multiplier);
    modelc::choose_tactic(multiplier, targets({"sm_80"}));
    CHECK(multiplier.engine == modelc::Engine::simt);
    CHECK(multiplier.fallback_reason == "depthwise (groups = 8); not tiled: channel multiplier 2");
  }
}

TEST_CASE("conv family: grouped FP16 / BF16 NHWC convolutions on tensor cores (tc::ConvGrouped)") {
  const auto& f = family("conv");
  SUBCASE("16 groups of 4 channels: two merged a super-group, sm_75 and sm_80 variants") {
    OneNode g("Conv", 13, {random({1, 64, 8, 8}, 8), random({64, 4, 3, 3}, 9), random({64}, 10)});
    g.n->set_attr_int("group", 16);
    g.n->set_attr_ints("pads", {1, 1, 1, 1});
    modelc::Kernel k = fp16_kernel(g, "conv", 64, 64);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75", "sm_80"}));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.fallback_reason.empty());
    INFO(k.note);
    CHECK(k.note.find("grouped implicit GEMM on tensor cores, M 64 (pixels) N 64 (channels) K 72 (9 taps x 8 channels") !=
          std::string::npos);
    CHECK(k.note.find("2 groups merged a super-group") != std::string::npos);
    REQUIRE(k.arch_tactic.size() == 2);
    CHECK_FALSE(modelc::linear::tc_tile_of(k, k.arch_tactic.at(75)).async);
    const modelc::linear::TcTile t80 = modelc::linear::tc_tile_of(k, k.arch_tactic.at(80));
    CHECK(t80.async);
    CHECK(t80.split_k == 1);
    // The work the cost model prices: useful FLOPs 2 x 64 pixels x 64 channels x 9 taps x 4.
    const modelc::KernelWork w = modelc::kernel_work(k, k.arch_tactic.at(80));
    CHECK(w.flops == doctest::Approx(2.0 * 64 * 64 * 9 * 4));
    CHECK(w.engine == modelc::Engine::tensor_core);
    CHECK(w.smem_bytes == modelc::linear::grouped_smem_bytes(modelc::linear::conv_geometry(k), t80, 64));
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    REQUIRE(e.launches.size() == 2);
    INFO(modelc::test::launch_text(e));
    CHECK(e.launches[0].min_sm == 75);
    CHECK(e.launches[1].min_sm == 80);
    CHECK(e.launches[1].type.find("mc::tc::ConvGrouped<__half, __half, mc::conv::Shape<1, 64, 64, 16,") == 0);
    CHECK(e.launches[1].type.find("/*X pitch*/ 64, /*Y pitch*/ 64, mc::tc::Tile<") != std::string::npos);
    CHECK(e.launches[1].type.find("mc::gemm::EpilogueBias<__half>>") != std::string::npos);
    CHECK(e.launches[1].dynamic_smem == w.smem_bytes);
    CHECK(e.launches[1].min_blocks == 1);
    CHECK(e.includes == std::vector<std::string>{"conv_grouped.cuh"});
  }
  SUBCASE("BF16 on sm_75 alone: the SIMT implicit GEMM, with the reason") {
    OneNode g("Conv", 13, {random({1, 16, 8, 8}, 8), random({16, 4, 3, 3}, 9)});
    g.n->set_attr_int("group", 4);
    modelc::Kernel k = fp16_kernel(g, "conv", 16, 16);
    for (auto* views : {&k.inputs, &k.outputs}) {
      for (modelc::TensorView& v : *views) {
        if (v.dtype == DType::float16) v.dtype = DType::bfloat16;
      }
    }
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, targets({"sm_75"}));
    CHECK(k.engine == modelc::Engine::simt);
    CHECK(k.fallback_reason == "groups = 4; BF16 storage on sm_75 (no BF16 MMA below sm_80)");
  }
}

TEST_CASE("conv_depthwise family: NHWC FP16 / BF16 on ConvDepthwiseTiled, the tile by the window") {
  const auto& f = family("conv_depthwise");
  auto depthwise = [](OneNode& t, int64_t c, int64_t pitch) {
    t.n->set_attr_int("group", c);
    modelc::Kernel k = fp16_kernel(t, modelc::family_for(*t.n), pitch, pitch);
    REQUIRE(k.family_name() == "conv_depthwise");
    modelc::plan_kernel(k);
    return k;
  };
  SUBCASE("7x7 on 56x56x96 (ConvNeXt): CV 2, FP32 sums, cp.async from sm_80") {
    OneNode t("Conv", 13, {random({1, 96, 56, 56}, 1), random({96, 1, 7, 7}, 2), random({96}, 3)});
    t.n->set_attr_ints("pads", {3, 3, 3, 3});
    modelc::Kernel k = depthwise(t, 96, 96);
    modelc::choose_tactic(k, targets({"sm_75", "sm_90"}));
    CHECK(k.engine == modelc::Engine::depthwise_tiled);
    CHECK(k.fallback_reason == "depthwise (groups = C)");
    REQUIRE(k.arch_tactic.size() == 2);
    const auto& d75 = std::get<modelc::DepthwiseTactic>(k.arch_tactic.at(75));
    const auto& d90 = std::get<modelc::DepthwiseTactic>(k.arch_tactic.at(90));
    CHECK(d90.cv == 2);
    CHECK(d90.rh == 2);
    CHECK(d90.rw == 4);
    CHECK(d90.async);
    CHECK_FALSE(d75.async);
    CHECK_FALSE(d90.fp16_accumulate);
    const modelc::KernelWork w = modelc::kernel_work(k, d90);
    CHECK(w.flops == doctest::Approx(2.0 * 96 * 56 * 56 * 49));
    CHECK(w.blocks == (56 + d90.th - 1) / d90.th * ((56 + d90.tw - 1) / d90.tw) * ((96 + d90.cb - 1) / d90.cb));
    CHECK(w.threads == d90.threads());
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    INFO(modelc::test::launch_text(e));
    REQUIRE(e.launches.size() == 2);
    CHECK(e.launches[1].min_sm == 90);
    CHECK(e.launches[1].type.find("mc::conv::ConvDepthwiseTiled<__half, float, mc::conv::Shape<1, 96, 96, 96,") == 0);
    CHECK(e.launches[1].type.find(fmt::format("mc::conv::DepthwiseTile<{}, {}, {}, 2, 2, 4, true>", d90.th, d90.tw,
                                              d90.cb)) != std::string::npos);
    CHECK(e.launches[1].type.find("/*X pitch*/ 96, /*Y pitch*/ 96>") != std::string::npos);
    CHECK(e.launches[1].dynamic_smem == modelc::linear::depthwise_smem_bytes(modelc::linear::conv_geometry(k), d90));
  }
  SUBCASE("3x3: CV 8; dilation 2: CV 4 (the register budget); --fp16-accumulate: HFMA2 sums") {
    OneNode t("Conv", 13, {random({1, 40, 12, 12}, 4), random({40, 1, 3, 3}, 5)});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    modelc::Kernel k = depthwise(t, 40, 40);
    modelc::choose_tactic(k, targets({"sm_80"}));
    CHECK(k.engine == modelc::Engine::depthwise_tiled);
    CHECK(std::get<modelc::DepthwiseTactic>(k.tactic).cv == 8);

    OneNode d("Conv", 13, {random({1, 40, 12, 12}, 4), random({40, 1, 3, 3}, 5)});
    d.n->set_attr_ints("pads", {2, 2, 2, 2});
    d.n->set_attr_ints("dilations", {2, 2});
    modelc::Kernel dk = depthwise(d, 40, 40);
    modelc::choose_tactic(dk, modelc::targets_for({"sm_80"}, true));
    const auto& dt = std::get<modelc::DepthwiseTactic>(dk.tactic);
    CHECK(dt.cv == 4);
    CHECK(dt.fp16_accumulate);
    const modelc::KernelLaunches e = f.emit(dk, HalfContext{});
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::conv::ConvDepthwiseTiled<__half, __half,") == 0);
  }
  SUBCASE("fallback: a window above 7x7") {
    OneNode t("Conv", 13, {random({1, 16, 12, 12}, 6), random({16, 1, 9, 9}, 7)});
    modelc::Kernel k = depthwise(t, 16, 16);
    modelc::choose_tactic(k, targets({"sm_80"}));
    CHECK(k.engine == modelc::Engine::simt);
    CHECK(k.fallback_reason == "depthwise (groups = C); not tiled: window 9x9 above 7x7");
  }
}

TEST_CASE("tensor-core tile choice: the cost model's, within the target's shared memory") {
  using modelc::linear::choose_tc_tile;
  const modelc::Target t90 = modelc::target_for("sm_90"), t75 = modelc::target_for("sm_75");
  const modelc::linear::TcProblem big_gemm{1, 4096, 4096, 4096, 3.0 * 4096 * 4096 * 2};
  // A big GEMM: the largest tile, cp.async staging on sm_90, through registers (2 stages) on sm_75.
  const modelc::linear::TcTile big = choose_tc_tile(big_gemm, t90);
  CHECK(big.bm == 128);
  CHECK(big.bn == 128);
  CHECK(big.async);
  CHECK(big.split_k == 1);
  const modelc::linear::TcTile big75 = choose_tc_tile(big_gemm, t75);
  CHECK_FALSE(big75.async);
  CHECK(big75.stages == 2);
  // Shared memory: 128x128x32 in two stages needs 40 KiB; with 32 KiB per block it is not a candidate.
  modelc::Target small = t90;
  small.smem_per_block = 32 * 1024;
  CHECK(modelc::linear::TcTile{128, 128, 32, 2, 4, false}.smem_bytes() == 40960);
  const modelc::linear::TcTile s = choose_tc_tile(big_gemm, small);
  CHECK(s.smem_bytes() <= 32 * 1024);
  // The template's own count matches the planner's.
  using G = mc::tc::Gemm<__half, __half, float, mc::gemm::Shape<1, 1, 1, 64, 64, 64>, mc::gemm::Strides<0, 0, 0, 64, 1>,
                         mc::gemm::Strides<0, 0, 0, 64, 1>, mc::gemm::Strides<0, 0, 0, 64, 1>,
                         T128x128<false>, mc::gemm::EpilogueIdentity>;
  CHECK(G::kSmemBytes <= modelc::linear::TcTile{128, 128, 32, 2, 4, false}.smem_bytes());
}

// ---- cp.async stages and split-K ---------------------------------------------------------------

namespace {

/// One GEMM case: Y = A x B + C (Gemm, C one value per column) on random data of a shape fixed at
/// compile time, run with tile Tl; checked against the reference.
template <int M, int N, int K, class Tl, class TY = __half, class Acc = float>
void gemm_case(uint64_t seed, double atol = kAtol) {
  INFO("M " << M << " N " << N << " K " << K << " stages " << Tl::kStages << " split " << Tl::kSplitK << " async "
            << Tl::kAsync);
  OneNode t("Gemm", 13, {hrandom({M, K}, seed), hrandom({K, N}, seed + 1), hrandom({N}, seed + 2)});
  const Tensor want = t.reference()[0];
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using Epi = mc::gemm::EpilogueLinear<__half, mc::gemm::Strides<0, 0, 0, 0, 1>, true>;
  const std::vector<__half> c = halves(t.feeds.at("x2"));
  check_close(run_gemm<TY, Acc, Sh, SA, SB, SY, Tl, Epi>(t, M * N, Epi::Params{1.0f, 1.0f, c.data()}), want, kRtol,
              atol);
}

}  // namespace

TEST_CASE("tensor-core gemm: 3 and 4 cp.async stages, split-K (empty splits, a short last split), odd shapes") {
  using mc::tc::Tile;
  // Vector loads, 13 K slices in 4 splits of 4 (the last 1), 4 stages.
  gemm_case<64, 40, 416, Tile<64, 64, 32, 2, 2, true, 4, 4>>(100);
  // Scalar loads (K odd), 3 stages, 3 splits.
  gemm_case<37, 29, 203, Tile<32, 32, 32, 1, 1, true, 3, 3>>(110);
  // One row (the FC layer at batch 1), 5 splits of 17 slices.
  gemm_case<1, 24, 520, Tile<32, 64, 32, 1, 2, true, 3, 5>>(120);
  // 2 slices in 4 splits: splits 2 and 3 have none and write zeros.
  gemm_case<96, 72, 40, Tile<64, 64, 32, 2, 2, true, 2, 4>>(130);
  // Register staging with split-K, BK 64; FP16 accumulation (a float output) at the looser
  // tolerance FP16 sums need.
  gemm_case<50, 48, 300, Tile<64, 32, 64, 2, 1, false, 2, 3>>(140);
  gemm_case<33, 40, 96, Tile<128, 128, 32, 2, 2, true, 3, 2>, float, __half>(150, 2e-2);
}

TEST_CASE("tensor-core conv: 3x3 on 7x7 pixels with split-K and 3 stages (layer4 at batch 1), bias and relu") {
  using mc::tc::Tile;
  OneNode t("Conv", 11, {hrandom({1, 64, 7, 7}, 160), hrandom({40, 64, 3, 3}, 161, 0.25), hrandom({40}, 162)});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<1, 64, 40, 1, Dims3<1, 7, 7>, Dims3<1, 3, 3>, Dims3<1, 7, 7>, Dims3<1, 1, 1>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  check_close(run_conv<Sh, 64, 40, Tile<64, 64, 32, 2, 2, true, 3, 4>, BiasEpi>(t, want, bias_params), want, kRtol,
              kAtol);
  check_close(run_conv<Sh, 64, 48, Tile<32, 32, 32, 1, 1, false, 2, 7>, BiasEpi, __half>(t, want, bias_params), want,
              kRtol, kAtol);
}

// ---- Winograd F(2x2, 3x3) (templates/winograd.cuh, schedule/winograd.h) -------------------------

namespace {

/// Winograd's tolerance: V and U are rounded to FP16 once each (relative 2^-11), so an output's
/// error follows the size of its terms rather than its own: absolute, scaled by the largest output.
constexpr double kWinogradAtolScale = 5e-3;

double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_f64()) m = std::max(m, std::abs(v));
  return m;
}

/// Runs the three launches of a Winograd convolution of shape Sh (X pitch Cp, Y pitch Yp) with GEMM
/// tile Tl on the node's x0 (X) and x1 (W): U as the compiler stores it (winograd_weights of the
/// OHWI weights at pitch Cp), V and M in NaN-filled buffers (an element a launch reads but the one
/// before did not write shows), NaN in X's padded channels; epi's pointers from `make_epi(bias,
/// residual)` as run_conv. Returns Y as NCHW floats.
template <class Sh, int Cp, int Yp, class Tl, class Epi, class TY = float, class Acc = float, class MakeEpi>
std::vector<float> run_winograd(OneNode& t, const Tensor& want, MakeEpi make_epi) {
  constexpr int Mp = (Sh::kM + 7) / 8 * 8;
  using In = mc::wino::InputTransform<Sh, Cp>;
  using Products = mc::wino::Gemms<Sh, Cp, Mp, Tl, Acc>;
  using Out = mc::wino::OutputTransform<Sh, Mp, mc::tc::Conv<__half, TY, Acc, Sh, Cp, Yp, Tl, Epi>>;
  constexpr int64_t tiles = mc::wino::Tiles<Sh>::kCount;
  const std::vector<__half> x = pitched(t.feeds.at("x0"), Cp, std::nanf(""));
  const Tensor ohwi = modelc::ohwi_weights(t.feeds.at("x1").cast(DType::float16), modelc::WeightStorage{Cp, 9 * Cp});
  const std::vector<__half> u = halves(modelc::linear::winograd_weights(ohwi));
  REQUIRE(u.size() == static_cast<std::size_t>(16 * Sh::kM * Cp));
  std::vector<__half> bias, residual;
  if (t.feeds.count("x2")) bias = halves(t.feeds.at("x2"));
  if (t.feeds.count("x3")) residual = pitched(t.feeds.at("x3"), Yp, std::nanf(""));
  std::vector<__half> v(static_cast<std::size_t>(16 * tiles * Cp), __float2half(std::nanf("")));
  std::vector<float> m(static_cast<std::size_t>(16 * tiles * Mp), std::nanf(""));
  std::vector<TY> y = out_buffer<TY>(want.numel() / want.shape()[1] * Yp);
  REQUIRE(mc::launch(mc::tc::kernel<In>, In::grid(), In::block(), 0, cudaStream_t{}, typename In::Params{x.data(), v.data()}) ==
          cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  launch_product<Products>({v.data(), u.data(), m.data()});
  typename Out::Params p{};
  p.Y = y.data();
  p.epilogue = make_epi(bias.data(), residual.empty() ? nullptr : residual.data());
  p.product = m.data();
  REQUIRE(mc::launch(mc::tc::kernel<Out>, Out::grid(), Out::block(), 0, cudaStream_t{}, p) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  return unpitched(y, want.shape(), Yp);
}

}  // namespace

TEST_CASE("winograd_weights: A^T [U . (B^T d B)] A is the 3x3 correlation of a 4x4 patch with the filter") {
  // An FP32 filter (U rounded to FP32 once: 1e-6 relative), against the direct sums in double: the
  // transform and its layout [16][M][pitch]; channel 2 of the pitch of 3 is padding (zero in, zero out).
  const int64_t M = 2, P = 3;
  Tensor w = random({M, 3, 3, P}, 7);
  std::vector<double> wv = w.to_f64();
  for (int64_t i = 2; i < static_cast<int64_t>(wv.size()); i += P) wv[static_cast<std::size_t>(i)] = 0;
  w = Tensor::from_f64(DType::float32, w.shape(), wv);
  const Tensor u = modelc::linear::winograd_weights(w);
  REQUIRE(u.shape() == Shape{16, M, P});
  REQUIRE(u.dtype() == DType::float32);
  const std::vector<double> uv = u.to_f64(), d = random({4, 4}, 8).to_f64();
  const double Bt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  const double At[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
  double v[4][4] = {};  // B^T d B
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int r = 0; r < 4; ++r)
        for (int s = 0; s < 4; ++s) v[i][j] += Bt[i][r] * d[static_cast<std::size_t>(r * 4 + s)] * Bt[j][s];
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < P; ++c) {
      for (int oh = 0; oh < 2; ++oh) {
        for (int ow = 0; ow < 2; ++ow) {
          double want = 0, got = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw)
              want += d[static_cast<std::size_t>((oh + kh) * 4 + ow + kw)] * wv[static_cast<std::size_t>(((m * 3 + kh) * 3 + kw) * P + c)];
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j)
              got += At[oh][i] * uv[static_cast<std::size_t>(((4 * i + j) * M + m) * P + c)] * v[i][j] * At[ow][j];
          INFO("m " << m << " c " << c << " output " << oh << "," << ow);
          CHECK(got == doctest::Approx(want).epsilon(1e-5).scale(1.0));
        }
      }
    }
  }
}

TEST_CASE("winograd conv: odd channel counts and pixels, pads 0 to 2 and asymmetric, every epilogue, both stagings") {
  using mc::tc::Tile;
  SUBCASE("C 12 in a pitch of 16, M 20 (Y pitch 24), 2 images of 9x7 (partial tiles), pad 1, bias") {
    OneNode t("Conv", 13, {hrandom({2, 12, 9, 7}, 200), hrandom({20, 12, 3, 3}, 201), hrandom({20}, 202)});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<2, 12, 20, 1, Dims3<1, 9, 7>, Dims3<1, 3, 3>, Dims3<1, 9, 7>, Dims3<1, 1, 1>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    const double atol = kWinogradAtolScale * max_abs(want);
    check_close(run_winograd<Sh, 16, 24, T64x64<true>, BiasEpi>(t, want, bias_params), want, kRtol, atol);
    check_close(run_winograd<Sh, 16, 24, T32x64<false>, BiasEpi, __half>(t, want, bias_params), want, kRtol, atol);
    check_close(run_winograd<Sh, 16, 24, Tile<32, 32, 32, 1, 1, true, 3>, BiasEpi>(t, want, bias_params), want, kRtol,
                atol);
  }
  SUBCASE("FusedConv: relu and a residual before it, 16 -> 16 channels, 6x5 with pad 2 (8x7 outputs)") {
    OneNode t("FusedConv", 13,
              {hrandom({1, 16, 6, 5}, 210), hrandom({16, 16, 3, 3}, 211), hrandom({16}, 212), hrandom({1, 16, 8, 7}, 213)});
    t.n->set_attr_ints("pads", {2, 2, 2, 2});
    fuse(t, activation(modelc::ops::Activation::relu), "before_activation");
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 16, 16, 1, Dims3<1, 6, 5>, Dims3<1, 3, 3>, Dims3<1, 8, 7>, Dims3<1, 1, 1>,
                               Dims3<0, 2, 2>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    using Epi = ReluResidualEpi;
    const auto params = relu_residual_params;
    const double atol = kWinogradAtolScale * max_abs(want);
    check_close(run_winograd<Sh, 16, 16, T64x128<true>, Epi>(t, want, params), want, kRtol, atol);
    check_close(run_winograd<Sh, 16, 16, T64x64<false>, Epi, __half>(t, want, params), want, kRtol, atol);
  }
  SUBCASE("no padding (6x6 -> 4x4), no bias, 8 channels; FP16 accumulation") {
    OneNode t("Conv", 13, {hrandom({1, 8, 6, 6}, 220), hrandom({8, 8, 3, 3}, 221)});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 8, 8, 1, Dims3<1, 6, 6>, Dims3<1, 3, 3>, Dims3<1, 4, 4>, Dims3<1, 1, 1>,
                               Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    const double atol = kWinogradAtolScale * max_abs(want);
    check_close(run_winograd<Sh, 8, 8, T32x64<true>, mc::gemm::EpilogueIdentity>(t, want, no_params), want, kRtol, atol);
    check_close(run_winograd<Sh, 8, 8, T32x64<true>, mc::gemm::EpilogueIdentity, float, __half>(t, want, no_params), want,
                2e-2, 2 * atol);
  }
  SUBCASE("asymmetric pads (top 1, left 0, bottom 0, right 1), C 24 -> M 40, 8x8 -> 7x7") {
    OneNode t("Conv", 13, {hrandom({1, 24, 8, 8}, 230), hrandom({40, 24, 3, 3}, 231, 0.5), hrandom({40}, 232)});
    t.n->set_attr_ints("pads", {1, 0, 0, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 24, 40, 1, Dims3<1, 8, 8>, Dims3<1, 3, 3>, Dims3<1, 7, 7>, Dims3<1, 1, 1>,
                               Dims3<0, 1, 0>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    const double atol = kWinogradAtolScale * max_abs(want);
    check_close(run_winograd<Sh, 24, 40, T128x64<true>, BiasEpi>(t, want, bias_params), want, kRtol, atol);
  }
}

TEST_CASE("conv family: Winograd for 3x3 stride-1 convolutions, --winograd always / never / auto by the cost model") {
  const auto& f = family("conv");
  OneNode t("Conv", 13, {random({1, 64, 16, 16}, 1), random({64, 64, 3, 3}, 2), random({64}, 3)});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  auto with = [](std::vector<modelc::Target> ts, modelc::Target::Winograd w) {
    for (modelc::Target& x : ts) x.winograd = w;
    return ts;
  };
  SUBCASE("always: three launches per arch variant, the workspace V and M") {
    modelc::Kernel k = fp16_kernel(t, "conv", 64, 64);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, with(targets({"sm_75", "sm_90"}), modelc::Target::Winograd::always));
    INFO(k.note);
    CHECK(k.engine == modelc::Engine::winograd);
    REQUIRE(std::holds_alternative<modelc::WinogradTactic>(k.tactic));
    CHECK(k.note.find("Winograd F(2x2,3x3) (--winograd always): 64 tiles of 2x2, 16 GEMMs of 64x64x64") != std::string::npos);
    const modelc::linear::WinogradPlan plan = modelc::linear::winograd_plan(k, modelc::linear::conv_geometry(k));
    CHECK(plan.tiles == 64);
    CHECK(plan.v_bytes == 16 * 64 * 64 * 2);
    CHECK(k.workspace_bytes == 16 * 64 * 64 * 2 + 16 * 64 * 64 * 4);
    CHECK(k.estimate.us > 0);
    CHECK(k.estimate.us == doctest::Approx(modelc::linear::winograd_estimate(
                                               k, std::get<modelc::WinogradTactic>(k.tactic).gemm, modelc::target_for("sm_75"))
                                               .us));
    place_workspace(k);
    const modelc::KernelLaunches e = f.emit(k, HalfContext{});
    INFO(modelc::test::launch_text(e));
    std::vector<std::vector<modelc::Launch>> variants;
    if (k.arch_tactic.empty()) {
      variants.push_back(variant(e, 0));
    } else {
      variants = {variant(e, 75), variant(e, 90)};
    }
    std::size_t n = 0;
    for (const auto& v : variants) {
      REQUIRE(v.size() == 3);
      n += v.size();
      CHECK(v[0].type.find("mc::wino::InputTransform<mc::conv::Shape<1, 64, 64, 1,") == 0);
      CHECK(v[1].type.find("mc::wino::Gemms<mc::conv::Shape<1, 64, 64, 1,") == 0);
      CHECK(v[1].dynamic_smem > 0);
      CHECK(v[1].min_blocks == 1);
      CHECK(v[2].type.find("mc::wino::OutputTransform<mc::conv::Shape<1, 64, 64, 1,") == 0);
      CHECK(v[2].type.find("mc::tc::Conv<__half, __half, float,") != std::string::npos);
      CHECK(v[2].type.find("mc::gemm::EpilogueBias<__half>") != std::string::npos);
      // V in the workspace's first bytes, M after it; the output transform reads M, not X or W.
      CHECK(v[0].params.at(1).field == "V");
      CHECK(v[1].params.at(0).value == "const:ws");
      CHECK(v[1].params.at(1).field == "B");
      CHECK(v[1].params.at(2).field == "Y");
      CHECK(v[2].params.back().field == "product");
      for (const modelc::LaunchParam& p : v[2].params) CHECK((p.field != "X" && p.field != "W"));
    }
    CHECK(e.launches.size() == n);
  }
  SUBCASE("never: the direct implicit GEMM, no word of Winograd") {
    modelc::Kernel k = fp16_kernel(t, "conv", 64, 64);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, with(targets({"sm_80"}), modelc::Target::Winograd::never));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("Winograd") == std::string::npos);
  }
  SUBCASE("auto: the estimates decide, and the note gives both") {
    modelc::Kernel k = fp16_kernel(t, "conv", 64, 64);
    const std::vector<modelc::Target> ts = targets({"sm_80"});
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, ts);
    INFO(k.note);
    // On an A100 the 16 products of 64 tiles move more bytes than the direct convolution saves FLOPs.
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(k.note.find("not Winograd F(2x2,3x3) (sm_80: ") != std::string::npos);
    // A 64x64 image on a part whose tensor cores are 30 times slower (the same bandwidth): the
    // FLOPs Winograd saves pay for its transforms.
    std::vector<modelc::Target> slow = ts;
    slow[0].tc_fp16_tflops /= 30;
    OneNode big("Conv", 13, {random({1, 64, 64, 64}, 10), random({64, 64, 3, 3}, 11)});
    big.n->set_attr_ints("pads", {1, 1, 1, 1});
    modelc::Kernel ks = fp16_kernel(big, "conv", 64, 64);
    modelc::plan_kernel(ks);
    modelc::choose_tactic(ks, slow);
    INFO(ks.note);
    CHECK(ks.engine == modelc::Engine::winograd);
    CHECK(ks.note.find("Winograd F(2x2,3x3): 1024 tiles of 2x2") != std::string::npos);
  }
  SUBCASE("what does not qualify: stride 2, a 1x1 filter, dilation") {
    OneNode s2("Conv", 13, {random({1, 16, 8, 8}, 4), random({16, 16, 3, 3}, 5)});
    s2.n->set_attr_ints("strides", {2, 2});
    modelc::Kernel k = fp16_kernel(s2, "conv", 16, 16);
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, with(targets({"sm_80"}), modelc::Target::Winograd::always));
    CHECK(k.engine == modelc::Engine::tensor_core);
    CHECK(modelc::linear::winograd_unfit(k, modelc::linear::conv_geometry(k)) == "stride 2");
    OneNode one("Conv", 13, {random({1, 16, 8, 8}, 6), random({16, 16, 1, 1}, 7)});
    modelc::Kernel k1 = fp16_kernel(one, "conv", 16, 16);
    CHECK(modelc::linear::winograd_unfit(k1, modelc::linear::conv_geometry(k1)) == "not a 2-D 3x3 filter");
    OneNode dil("Conv", 13, {random({1, 16, 8, 8}, 8), random({16, 16, 3, 3}, 9)});
    dil.n->set_attr_ints("dilations", {2, 2});
    modelc::Kernel kd = fp16_kernel(dil, "conv", 16, 16);
    CHECK(modelc::linear::winograd_unfit(kd, modelc::linear::conv_geometry(kd)) == "dilation");
  }
}

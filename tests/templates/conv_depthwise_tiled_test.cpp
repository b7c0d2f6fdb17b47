// templates/conv_depthwise.cuh's ConvDepthwiseTiled on the host emulation (its race check on, shared
// memory poisoned before every block): random data that the storage holds exactly (X's padded
// channels NaN, Y's padding checked untouched) against the reference interpreter, within the bound of
// the arithmetic (check_bound: the storage's rounding and the FP32 accumulator's, so a value from a
// wrong channel, pixel or tap fails); with FP16 accumulation (HFMA2) also bit for bit against a host
// model of the same __half fused multiply-adds in the kernel's order (kh, then kw). Each case draws
// its data from its own seed; the shapes cover 3x3, 5x5 and 7x7, stride 1 and 2, dilation 2, pads 0
// to 3, channel counts that are and are not multiples of 8 and of the block's channels, images that
// the tile does not divide, batch 2, every thread shape (CV 2, 4, 8; RH x RW), both stagings
// (cp.async and registers), __half and bf16, and the epilogues (bias, bias + hard-swish, bias +
// residual + relu). The sweep (more shapes and seeds) is `modelc_tests -tc='*depthwise tiled sweep*'
// --no-skip` (ctest template_conv_depthwise_tiled_long, label long).
#include "conv16_test_util.h"
#include "schedule/families.h"
#include "templates/conv_depthwise.cuh"

using namespace conv16_test;
using linear_test::activation;
using linear_test::fuse;
using mc::conv::Dims3;

namespace {

enum class Epi { bias, hard_swish, residual_relu };

template <class T, Epi E>
struct EpiOf {
  using type = mc::gemm::EpilogueBias<T>;
};
template <class T>
struct EpiOf<T, Epi::hard_swish> {
  using type = mc::gemm::EpilogueFused<T, mc::gemm::Strides<0, 0, 0, 1, 0>, true, mc::gemm::Act::hard_swish,
                                       mc::gemm::Residual::none>;
};
template <class T>
struct EpiOf<T, Epi::residual_relu> {
  using type = mc::gemm::EpilogueFused<T, mc::gemm::Strides<0, 0, 0, 1, 0>, true, mc::gemm::Act::relu,
                                       mc::gemm::Residual::before_activation>;
};

/// The FP16-accumulation kernel's arithmetic on the host: per output, __hfma over the taps in
/// (kh, kw) order from zero (the padding contributes nothing), then bias in float, rounded to __half.
std::vector<float> hfma_model(const Tensor& x, const Tensor& w, const Tensor& b, int K, int S, int D, int P, int OH,
                              int OW) {
  const Shape& xs = x.shape();
  const int N = static_cast<int>(xs[0]), C = static_cast<int>(xs[1]), H = static_cast<int>(xs[2]),
            W = static_cast<int>(xs[3]);
  const std::vector<double> xv = x.to_f64(), wv = w.to_f64(), bv = b.to_f64();
  std::vector<float> y(static_cast<std::size_t>(N * C * OH * OW));
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      for (int oh = 0; oh < OH; ++oh)
        for (int ow = 0; ow < OW; ++ow) {
          __half acc = __float2half(0.0f);
          for (int kh = 0; kh < K; ++kh)
            for (int kw = 0; kw < K; ++kw) {
              const int ih = oh * S - P + kh * D, iw = ow * S - P + kw * D;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              const double xe = xv[static_cast<std::size_t>(((n * C + c) * H + ih) * W + iw)];
              const double we = wv[static_cast<std::size_t>((c * K + kh) * K + kw)];
              acc = __hfma(__float2half(static_cast<float>(we)), __float2half(static_cast<float>(xe)), acc);
            }
          const float v = __half2float(acc) + static_cast<float>(bv[static_cast<std::size_t>(c)]);
          y[static_cast<std::size_t>(((n * C + c) * OH + oh) * OW + ow)] = __half2float(__float2half(v));
        }
  return y;
}

/// Runs ConvDepthwiseTiled<T, Acc, Sh, Tl, epilogue E, XP, YP> on random data from `seed` and checks it.
template <class T, class Acc, int N, int C, int H, int W, int K, int S, int D, int P, class Tl, Epi E, int XP = 0,
          int YP = 0>
void check_dw(uint64_t seed) {
  constexpr int kSpan = (K - 1) * D + 1, OH = (H + 2 * P - kSpan) / S + 1, OW = (W + 2 * P - kSpan) / S + 1;
  using Sh = mc::conv::Shape<N, C, C, C, Dims3<1, H, W>, Dims3<1, K, K>, Dims3<1, OH, OW>, Dims3<1, S, S>,
                             Dims3<0, P, P>, Dims3<1, D, D>>;
  using Kern = mc::conv::ConvDepthwiseTiled<T, Acc, Sh, Tl, typename EpiOf<T, E>::type, XP, YP>;
  constexpr int kXP = XP ? XP : C, kYP = YP ? YP : C;
  INFO("C " << C << " " << H << "x" << W << " batch " << N << ", " << K << "x" << K << " s" << S << " d" << D << " p"
            << P << ", tile " << Tl::kTH << "x" << Tl::kTW << "x" << Tl::kCB << " CV " << Tl::kCV << " RHxRW "
            << Tl::kRH << "x" << Tl::kRW << std::string(Tl::kAsync ? " cp.async" : "") << ", pitches " << kXP << " "
            << kYP
            << ", seed " << seed);
  const Tensor x = random_exact<T>({N, C, H, W}, seed), w = random_exact<T>({C, 1, K, K}, seed + 1, 0.5),
               b = random_exact<T>({C}, seed + 2, 0.5), r = random_exact<T>({N, C, OH, OW}, seed + 3);
  std::vector<Tensor> inputs = {x, w, b};
  if (E == Epi::residual_relu) inputs.push_back(r);
  OneNode t(E == Epi::bias ? "Conv" : "FusedConv", 11, inputs);
  set_conv_attrs(t, C, K, S, D, P);
  if (E == Epi::hard_swish) fuse(t, activation(modelc::ops::Activation::hard_swish, 1.0 / 6, 0.5));
  if (E == Epi::residual_relu) fuse(t, activation(modelc::ops::Activation::relu), "before_activation");
  const Tensor want = t.reference()[0];
  REQUIRE(want.shape() == Shape{N, C, OH, OW});
  CHECK(modelc::family_for(*t.n) == "conv_depthwise");
  OneNode a("Conv", 11, {magnitudes(x), magnitudes(w)});  // sum of |w x| per output
  set_conv_attrs(a, C, K, S, D, P);
  const Tensor sum_bound = a.reference()[0];

  const std::vector<T> xs = pitched<T>(x, kXP), ws = pitched<T>(w, 0), bs = pitched<T>(b, 0), rs = pitched<T>(r, kYP);
  std::vector<T> y(static_cast<std::size_t>(N * OH * OW * kYP), narrow_float::to_t<T>(kUntouched));
  typename Kern::Params p{xs.data(), ws.data(), y.data(), {}};
  if constexpr (E == Epi::bias) {
    p.epilogue.bias = bs.data();
  } else {
    p.epilogue.bias = bs.data();
    if constexpr (E == Epi::residual_relu) p.epilogue.residual = rs.data();
    if constexpr (E == Epi::hard_swish) p.epilogue.act = {1.0f / 6, 0.5f, -INFINITY, INFINITY};
  }
  linear_test::launch<Kern>(p);
  const std::vector<float> got = unpitched(y, want.shape(), kYP);
  if constexpr (std::is_same<Acc, float>::value) {
    // Products of 16-bit values are exact in FP32; the sum of K*K of them rounds at most K*K times.
    check_bound(got, want, sum_bound, storage_rounding<T>() * 1.001, 2.0 * K * K * std::ldexp(1.0, -24), 1e-6,
                "FP32 accumulation");
  } else {
    static_assert(E == Epi::bias, "the HFMA2 model is of the bias epilogue");
    const std::vector<float> model = hfma_model(x, w, b, K, S, D, P, OH, OW);
    int differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i) differ += !(got[i] == model[i]);
    CHECK_MESSAGE(differ == 0, differ << " outputs differ from the HFMA2 model");
    // And within FP16 accumulation's bound of the reference: one rounding per tap.
    check_bound(got, want, sum_bound, storage_rounding<T>() * 1.001, 2.0 * K * K * std::ldexp(1.0, -11), 1e-6,
                "FP16 accumulation");
  }
}

template <int TH, int TW, int CB, int CV, int RH, int RW, bool A>
using Tile = mc::conv::DepthwiseTile<TH, TW, CB, CV, RH, RW, A>;

}  // namespace

TEST_CASE("depthwise tiled: 3x3, 5x5, 7x7, strides, dilation, pitches, both stagings, every epilogue") {
  // ConvNeXt's 7x7 (C 96 over blocks of 32, an image the 8x8 tile does not divide), FP16 and BF16.
  check_dw<__half, float, 1, 96, 13, 11, 7, 1, 1, 3, Tile<8, 8, 32, 2, 2, 4, true>, Epi::residual_relu>(101);
  check_dw<mc::bf16, float, 1, 40, 9, 10, 7, 1, 1, 3, Tile<8, 8, 32, 2, 2, 4, false>, Epi::bias>(102);
  // FP16 accumulation, bit for bit against the HFMA2 model.
  check_dw<__half, __half, 1, 24, 9, 9, 7, 1, 1, 3, Tile<8, 8, 16, 2, 2, 4, true>, Epi::bias>(103);
  // MobileNet's 3x3, stride 2, hard-swish, CV 8, C 20 (not a multiple of 8) in padded pitches.
  check_dw<__half, float, 2, 20, 9, 8, 3, 2, 1, 1, Tile<4, 8, 32, 8, 1, 2, true>, Epi::hard_swish, 24, 32>(104);
  // 5x5 stride 2 (EfficientNet), CV 4, register staging, bf16; dilation 2 with pads 0.
  check_dw<mc::bf16, float, 1, 36, 11, 9, 5, 2, 1, 2, Tile<4, 8, 32, 4, 1, 2, false>, Epi::hard_swish>(105);
  check_dw<__half, float, 1, 16, 10, 9, 3, 1, 2, 0, Tile<4, 8, 16, 4, 2, 1, true>, Epi::bias>(106);
  // C 20 unpadded: X's pixels 40 bytes apart, loaded element by element (no 16-byte chunks).
  check_dw<__half, float, 1, 20, 7, 7, 3, 1, 1, 1, Tile<8, 8, 32, 4, 2, 2, true>, Epi::bias>(107);
}

TEST_CASE("depthwise tiled sweep: more shapes and seeds" * doctest::skip()) {
  for (uint64_t seed : {201u, 202u, 203u}) {
    check_dw<__half, float, 2, 96, 17, 15, 7, 1, 1, 3, Tile<8, 8, 32, 2, 2, 4, true>, Epi::residual_relu>(seed);
    check_dw<__half, float, 1, 72, 15, 15, 7, 2, 1, 3, Tile<4, 4, 64, 2, 1, 2, true>, Epi::bias>(seed + 10);
    check_dw<__half, __half, 1, 40, 12, 13, 7, 1, 1, 3, Tile<8, 8, 32, 2, 2, 4, false>, Epi::bias>(seed + 20);
    check_dw<__half, __half, 1, 16, 10, 10, 3, 2, 1, 1, Tile<4, 4, 16, 8, 1, 1, true>, Epi::bias>(seed + 30);
    check_dw<mc::bf16, float, 1, 12, 14, 14, 5, 1, 2, 4, Tile<8, 4, 16, 4, 2, 2, true>, Epi::hard_swish, 16, 16>(
        seed + 40);
    check_dw<mc::bf16, float, 2, 64, 7, 7, 3, 1, 1, 1, Tile<8, 8, 64, 8, 4, 2, false>, Epi::residual_relu>(seed + 50);
    check_dw<__half, float, 1, 8, 5, 6, 5, 1, 1, 2, Tile<8, 8, 8, 2, 1, 1, true>, Epi::hard_swish, 8, 16>(seed + 60);
    check_dw<__half, float, 1, 33, 9, 9, 3, 1, 3, 3, Tile<8, 8, 32, 4, 1, 4, true>, Epi::bias, 40, 40>(seed + 70);
  }
}

// templates/tensor_core.cuh's A-operand prologue (tc::ChannelPrologue through ChannelPrologueLoader:
// act(x scale[c] + shift[c]) and squeeze-and-excite's gate[n][c] applied to X as tc::Conv loads
// it) on the host emulation (ldmatrix and mma.sync with the PTX ISA's per-lane layouts, the race
// check on, shared memory poisoned before every block). The expected output is the reference
// interpreter's Conv on X transformed on the host the way the prologue defines it (std::fmaf, the
// ReLU, the gate, one rounding to T), so the comparison bound is the plain convolution's; a
// wrong channel's scale or shift, a missing ReLU, a wrong image's gate, or a transformed padding
// tap, padded channel or K tail (W's padded channels hold 1 here, so a nonzero A there shows)
// fails it, and each case also checks that those mistakes would have been caught (the mutated
// references lie outside the bound). Cases: cp.async stages (the land pass after the wait),
// register staging (the transform in registers), element loads of A (C not a whole number of
// chunks), the compact K form, a padded 3x3 (padding taps stay zero), batch 2 with the gate,
// __half and bf16.
#include <cmath>

#include "conv16_test_util.h"
#include "schedule/layout.h"
#include "templates/tensor_core.cuh"

using namespace conv16_test;
using mc::conv::Dims3;

namespace {

/// What the host reference does differently from the prologue (the mutants the check must catch).
enum class Mutant { none, neighbour_channel, no_relu, other_image };

/// X (NCHW, values exact in T) through the prologue as defined, or as a mutant computes it.
template <class T, bool Affine, bool Relu, bool Gate>
Tensor transformed(const Tensor& x, const std::vector<float>& scale, const std::vector<float>& shift,
                   const std::vector<float>& gate, Mutant m) {
  const Shape& s = x.shape();
  const int64_t N = s[0], C = s[1], P = num_elements(s) / (N * C);
  std::vector<double> v = x.to_f64();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) {
        double& e = v[static_cast<std::size_t>((n * C + c) * P + p)];
        const int64_t cc = m == Mutant::neighbour_channel ? (c + 1) % C : c;
        const int64_t nn = m == Mutant::other_image ? (n + 1) % N : n;
        float f = static_cast<float>(e);
        if (Affine) f = std::fmaf(f, scale[static_cast<std::size_t>(cc)], shift[static_cast<std::size_t>(cc)]);
        if (Relu && m != Mutant::no_relu) f = f > 0.0f ? f : 0.0f;
        if (Gate) f *= gate[static_cast<std::size_t>(nn * C + cc)];
        e = narrow_float::to_d(narrow_float::to_t<T>(f));
      }
  return Tensor::from_f64(DType::float32, s, v);
}

/// How many elements of got lie outside the bound around want (check_bound's, without CHECKs).
int outside(const std::vector<float>& got, const Tensor& want, const Tensor& sum_bound, double round, double acc_rel) {
  const std::vector<double> w = want.to_f64(), b = sum_bound.to_f64();
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    bad += !(std::abs(static_cast<double>(got[i]) - w[i]) <= round * std::abs(w[i]) + acc_rel * b[i] + 1e-6);
  }
  return bad;
}

/// Runs tc::Conv<T, T, float, Sh, Cp, M, Tl, EpilogueBias, Compact, ChannelPrologue<T, Affine, Relu,
/// Gate, C>> on random data from `seed` and checks it (the file comment says how).
template <class T, bool Affine, bool Relu, bool Gate, int N, int C, int M, int H, int W, int K, int P, class Tl,
          int XP = 0, bool Compact = false>
void check_prologue(uint64_t seed) {
  constexpr int OH = H + 2 * P - K + 1, OW = W + 2 * P - K + 1;
  constexpr int kXP = XP ? XP : C;
  using Sh = mc::conv::Shape<N, C, M, 1, Dims3<1, H, W>, Dims3<1, K, K>, Dims3<1, OH, OW>, Dims3<1, 1, 1>,
                             Dims3<0, P, P>, Dims3<1, 1, 1>>;
  using Pro = mc::tc::ChannelPrologue<T, Affine, Relu, Gate, C>;
  using Kern = mc::tc::Conv<T, T, float, Sh, kXP, M, Tl, mc::gemm::EpilogueBias<T>, Compact, Pro>;
  INFO("affine " << Affine << " relu " << Relu << " gate " << Gate << ", C " << C << " (pitch " << kXP << ") M " << M
                 << " " << H << "x" << W << " batch " << N << ", " << K << "x" << K << " p" << P << ", tile " << Tl::kBM
                 << "x" << Tl::kBN << "x" << Tl::kBK << std::string(Tl::kAsync ? " cp.async" : " registers")
                 << std::string(Compact ? ", compact K" : "") << ", seed " << seed);
  const Tensor x = random_exact<T>({N, C, H, W}, seed, 2.0), w = random_exact<T>({M, C, K, K}, seed + 1, 0.5),
               b = random_exact<T>({M}, seed + 2, 0.5);
  // Scales in [0.25, 1.75) and shifts in [-1, 1) that differ per channel; gates in [0, 1).
  std::vector<float> scale(C), shift(C), gate(static_cast<std::size_t>(N * C));
  const std::vector<double> rs = linear_test::random({C}, seed + 3).to_f64(),
                            rh = linear_test::random({C}, seed + 4).to_f64(),
                            rg = linear_test::random({N * C}, seed + 5).to_f64();
  for (int c = 0; c < C; ++c) {
    scale[static_cast<std::size_t>(c)] = static_cast<float>(1.0 + 0.75 * rs[static_cast<std::size_t>(c)]);
    shift[static_cast<std::size_t>(c)] = static_cast<float>(rh[static_cast<std::size_t>(c)]);
  }
  std::vector<T> gates;
  for (std::size_t i = 0; i < gate.size(); ++i) {
    gates.push_back(narrow_float::to_t<T>(0.5 + 0.5 * rg[i]));
    gate[i] = static_cast<float>(narrow_float::to_d(gates.back()));
  }
  auto reference = [&](const Tensor& xt) {
    OneNode t("Conv", 11, {xt, w, b});
    set_conv_attrs(t, 1, K, 1, 1, P);
    return t.reference()[0];
  };
  const Tensor xt = transformed<T, Affine, Relu, Gate>(x, scale, shift, gate, Mutant::none);
  const Tensor want = reference(xt);
  OneNode a("Conv", 11, {magnitudes(xt), magnitudes(w)});
  set_conv_attrs(a, 1, K, 1, 1, P);
  const Tensor sum_bound = a.reference()[0];

  // W as the layout stage stores it (OHWI at X's pitch, or compact rows), but its padded channels 1
  // instead of 0: A's padded channels must be zero, prologue or not.
  const int taps = K * K;
  constexpr int kRow = Compact ? (K * K * C + 7) / 8 * 8 : K * K * kXP;
  const Tensor ohwi = modelc::ohwi_weights(w, modelc::WeightStorage{Compact ? C : kXP, kRow});
  std::vector<T> ws = pitched<T>(ohwi, 0);
  if (!Compact) {
    for (int m = 0; m < M; ++m)
      for (int t = 0; t < taps; ++t)
        for (int c = C; c < kXP; ++c) ws[static_cast<std::size_t>(m * kRow + t * kXP + c)] = narrow_float::to_t<T>(1.0);
  }
  const std::vector<T> xs = pitched<T>(x, kXP), bs = pitched<T>(b, 0);
  std::vector<T> y(static_cast<std::size_t>(N * OH * OW * M), narrow_float::to_t<T>(kUntouched));
  typename Kern::Params p;
  p.X = xs.data();
  p.W = ws.data();
  p.Y = y.data();
  p.epilogue.bias = bs.data();
  p.prologue.scale = scale.data();
  p.prologue.shift = shift.data();
  p.prologue.gate = gates.data();
  REQUIRE(cudaFuncSetAttribute(mc::tc::kernel<Kern>, cudaFuncAttributeMaxDynamicSharedMemorySize, Kern::kSmemBytes) ==
          cudaSuccess);
  REQUIRE(mc::launch(mc::tc::kernel<Kern>, Kern::grid(), Kern::block(), Kern::kSmemBytes, cudaStream_t{}, p) ==
          cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<float> got = unpitched(y, want.shape(), M);
  const double round = storage_rounding<T>() * 1.001, acc = 2.0 * K * K * kXP * std::ldexp(1.0, -24);
  check_bound(got, want, sum_bound, round, acc);
  // The mistakes this check is there to catch would have failed it.
  const int outputs = static_cast<int>(got.size());
  if (Affine) {
    CHECK(outside(got, reference(transformed<T, Affine, Relu, Gate>(x, scale, shift, gate, Mutant::neighbour_channel)),
                  sum_bound, round, acc) > outputs / 2);
  }
  if (Relu) {
    CHECK(outside(got, reference(transformed<T, Affine, Relu, Gate>(x, scale, shift, gate, Mutant::no_relu)),
                  sum_bound, round, acc) > outputs / 2);
  }
  if (Gate && N > 1) {
    CHECK(outside(got, reference(transformed<T, Affine, Relu, Gate>(x, scale, shift, gate, Mutant::other_image)),
                  sum_bound, round, acc) > outputs / 2);
  }
  // A prologue applied to the padding taps too (X padded with zeros, then transformed) fails.
  if constexpr (P > 0 && Affine && !Gate) {
    constexpr int PH = H + 2 * P, PW = W + 2 * P;
    const std::vector<double> xv = x.to_f64();
    std::vector<double> pv(static_cast<std::size_t>(N * C * PH * PW), 0.0);
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c)
        for (int h = 0; h < H; ++h)
          for (int q = 0; q < W; ++q)
            pv[static_cast<std::size_t>(((n * C + c) * PH + h + P) * PW + q + P)] =
                xv[static_cast<std::size_t>(((n * C + c) * H + h) * W + q)];
    const Tensor padded = transformed<T, Affine, Relu, Gate>(Tensor::from_f64(DType::float32, {N, C, PH, PW}, pv),
                                                             scale, shift, gate, Mutant::none);
    OneNode t("Conv", 11, {padded, w, b});
    set_conv_attrs(t, 1, K, 1, 1, 0);
    // Only the border outputs read padding: most of them must fall outside.
    CHECK(outside(got, t.reference()[0], sum_bound, round, acc) > outputs / 4);
  }
}

template <int BM, int BN, int BK, int WM, int WN, bool A, int Stages = 2>
using Tile = mc::tc::Tile<BM, BN, BK, WM, WN, A, Stages>;

}  // namespace

TEST_CASE("tensor-core conv A-operand prologue: BN + ReLU and the SE gate, every staging") {
  // DenseNet's norm + relu before a 1x1 conv, padded pitch, 3 cp.async stages (the land pass).
  check_prologue<__half, true, true, false, 1, 40, 32, 6, 6, 1, 0, Tile<32, 32, 16, 1, 2, true, 3>, 48>(501);
  // The same through registers (sm_75's pipeline), batch 2.
  check_prologue<__half, true, true, false, 2, 24, 16, 5, 5, 1, 0, Tile<32, 16, 16, 1, 1, false>>(502);
  // Squeeze-and-excite's gate alone, batch 2 (the image's gate), bf16, cp.async.
  check_prologue<mc::bf16, false, false, true, 2, 32, 24, 4, 5, 1, 0, Tile<32, 32, 32, 2, 1, true, 2>>(503);
  // C 12 at pitch 12: element loads of A (through registers inside the cp.async pipeline).
  check_prologue<__half, true, true, true, 2, 12, 16, 5, 4, 1, 0, Tile<32, 16, 16, 1, 1, true, 2>>(504);
  // C 6: the compact K form (K = 6, the tail of the 16-deep slice zero).
  check_prologue<__half, true, false, false, 1, 6, 16, 6, 6, 1, 0, Tile<32, 16, 16, 1, 1, true, 2>, 0, true>(505);
  // A padded 3x3: the padding taps must stay zero (act(0 scale + shift) would not).
  check_prologue<__half, true, true, false, 1, 16, 16, 5, 5, 3, 1, Tile<32, 16, 16, 1, 1, true, 2>>(506);
}

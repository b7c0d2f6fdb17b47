// templates/conv_grouped.cuh (tc::ConvGrouped: grouped convolutions as one implicit GEMM on mma.sync)
// on the host emulation (ldmatrix and mma.sync with the PTX ISA's per-lane layouts, the race check
// on, shared memory poisoned before every block): random data that the storage holds exactly (X's
// padded channels NaN, Y's padding checked untouched), W as the layout stage stores a grouped weight
// (ohwi_weights at its own channel count), against the reference interpreter within the bound of
// the arithmetic (check_bound: the output's rounding and the FP32 accumulator's; a value from a
// wrong group, channel, pixel or tap fails). The cases: ResNeXt's 4 channels a group (Mg 4: groups
// merged in pairs, F 2), RegNetY's 24 (a block tile across super-groups: BN 32 over Ms 24), Mg 8
// over Cg 4 (element loads of A), Mg 12 (F 2, Cs 12), a group count F does not divide (the last
// super-group half empty), 128 channels a group (a long K), strides, dilation, 5x5, batch 2, padded
// pitches, __half and bf16, __half and float outputs, cp.async stages and register staging, the
// fused epilogue. The sweep (more shapes and seeds) is `modelc_tests -tc='*grouped tensor-core
// sweep*' --no-skip` (ctest template_conv_grouped_long, label long).
#include "conv16_test_util.h"
#include "schedule/layout.h"
#include "templates/conv_grouped.cuh"

using namespace conv16_test;
using linear_test::activation;
using linear_test::fuse;
using mc::conv::Dims3;

namespace {

template <class T>
struct Epilogues {
  using Bias = mc::gemm::EpilogueBias<T>;
  using ResidualRelu = mc::gemm::EpilogueFused<T, mc::gemm::Strides<0, 0, 0, 1, 0>, true, mc::gemm::Act::relu,
                                               mc::gemm::Residual::before_activation>;
};

/// Runs ConvGrouped<T, TY, Sh, Cp, Yp, Tl, Epi> (Epi: bias, or bias + residual + relu) on random data
/// from `seed` and checks it.
template <class T, class TY, int N, int C, int M, int G, int H, int W, int K, int S, int D, int P, class Tl,
          bool kResidual, int XP = 0, int YP = 0>
void check_grouped(uint64_t seed) {
  constexpr int kSpan = (K - 1) * D + 1, OH = (H + 2 * P - kSpan) / S + 1, OW = (W + 2 * P - kSpan) / S + 1;
  constexpr int kXP = XP ? XP : C, kYP = YP ? YP : M;
  using Sh = mc::conv::Shape<N, C, M, G, Dims3<1, H, W>, Dims3<1, K, K>, Dims3<1, OH, OW>, Dims3<1, S, S>,
                             Dims3<0, P, P>, Dims3<1, D, D>>;
  using Epi = std::conditional_t<kResidual, typename Epilogues<TY>::ResidualRelu, typename Epilogues<TY>::Bias>;
  using Kern = mc::tc::ConvGrouped<T, TY, Sh, kXP, kYP, Tl, Epi>;
  using SG = mc::tc::SuperGroups<Sh>;
  INFO("C " << C << " M " << M << " G " << G << " (F " << SG::kF << ", Cs " << SG::kCs << ", Ms " << SG::kMs
            << ") " << H << "x" << W << " batch " << N << ", " << K << "x" << K << " s" << S << " d" << D << " p" << P
            << ", tile " << Tl::kBM << "x" << Tl::kBN << "x" << Tl::kBK << std::string(Tl::kAsync ? " cp.async" : "")
            << ", pitches " << kXP << " " << kYP << ", seed " << seed);
  const Tensor x = random_exact<T>({N, C, H, W}, seed), w = random_exact<T>({M, C / G, K, K}, seed + 1, 0.5),
               b = random_exact<TY>({M}, seed + 2, 0.5), r = random_exact<TY>({N, M, OH, OW}, seed + 3);
  std::vector<Tensor> inputs = {x, w, b};
  if (kResidual) inputs.push_back(r);
  OneNode t(kResidual ? "FusedConv" : "Conv", 11, inputs);
  set_conv_attrs(t, G, K, S, D, P);
  if (kResidual) fuse(t, activation(modelc::ops::Activation::relu), "before_activation");
  const Tensor want = t.reference()[0];
  REQUIRE(want.shape() == Shape{N, M, OH, OW});
  OneNode a("Conv", 11, {magnitudes(x), magnitudes(w)});  // sum of |w x| per output
  set_conv_attrs(a, G, K, S, D, P);
  const Tensor sum_bound = a.reference()[0];

  // W as the layout stage stores a grouped convolution's weight: OHWI at its own channel count.
  const Tensor ohwi = modelc::ohwi_weights(w, modelc::WeightStorage{C / G, K * K * (C / G)});
  const std::vector<T> xs = pitched<T>(x, kXP), ws = pitched<T>(ohwi, 0);
  const std::vector<TY> bs = pitched<TY>(b, 0), rs = pitched<TY>(r, kYP);
  std::vector<TY> y(static_cast<std::size_t>(N * OH * OW * kYP), narrow_float::to_t<TY>(kUntouched));
  typename Kern::Params p{xs.data(), ws.data(), y.data(), {}};
  p.epilogue.bias = bs.data();
  if constexpr (kResidual) p.epilogue.residual = rs.data();
  REQUIRE(cudaFuncSetAttribute(mc::tc::kernel<Kern>, cudaFuncAttributeMaxDynamicSharedMemorySize, Kern::kSmemBytes) ==
          cudaSuccess);
  REQUIRE(mc::launch(mc::tc::kernel<Kern>, Kern::grid(), Kern::block(), Kern::kSmemBytes, cudaStream_t{}, p) ==
          cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::vector<float> got = unpitched(y, want.shape(), kYP);
  // Products of 16-bit values are exact in FP32; the sum of taps x Cs of them rounds at most that
  // often (the zeros of the merged super-groups add nothing).
  check_bound(got, want, sum_bound, storage_rounding<TY>() * 1.001, 2.0 * SG::kK * std::ldexp(1.0, -24), 1e-6);
}

template <int BM, int BN, int BK, int WM, int WN, bool A, int Stages = 2>
using Tile = mc::tc::Tile<BM, BN, BK, WM, WN, A, Stages>;

}  // namespace

TEST_CASE("grouped tensor-core conv: ResNeXt and RegNetY groups, merged groups, strides, pitches, both stagings") {
  // ResNeXt's 32x4d at a small width: 8 groups of 4 (F 2), the fused epilogue, 3 cp.async stages.
  check_grouped<__half, __half, 1, 32, 32, 8, 9, 9, 3, 1, 1, 1, Tile<64, 32, 32, 2, 1, true, 3>, true>(301);
  // RegNetY's group width 24, stride 2, bf16 through registers: BN 32 over super-groups of 24.
  check_grouped<mc::bf16, mc::bf16, 1, 48, 48, 2, 9, 8, 3, 2, 1, 1, Tile<32, 32, 32, 1, 2, false>, false>(302);
  // Cg 4, Mg 8 (element loads of A), padded pitches, float output.
  check_grouped<__half, float, 2, 16, 32, 4, 5, 6, 3, 1, 1, 1, Tile<32, 32, 16, 1, 2, true, 2>, false, 24, 40>(303);
  // Mg 12 (F 2, Cs 12) with G 3 (the last super-group half empty), 5x5 dilation 2.
  check_grouped<__half, __half, 1, 18, 36, 3, 9, 9, 5, 1, 2, 4, Tile<32, 32, 16, 1, 2, true, 2>, true>(304);
  // 128 channels a group: K 1152.
  check_grouped<__half, __half, 1, 256, 256, 2, 3, 3, 3, 1, 1, 1, Tile<32, 64, 64, 1, 2, true, 3>, false>(305);
}

TEST_CASE("grouped tensor-core sweep: more shapes and seeds" * doctest::skip()) {
  for (uint64_t seed : {401u, 402u, 403u}) {
    check_grouped<__half, __half, 2, 64, 64, 16, 7, 7, 3, 2, 1, 1, Tile<64, 64, 32, 2, 2, true, 3>, true>(seed);
    check_grouped<__half, __half, 1, 64, 64, 32, 6, 6, 3, 1, 1, 1, Tile<32, 64, 32, 1, 2, false>, false>(seed + 10);
    check_grouped<__half, float, 1, 48, 96, 6, 7, 5, 3, 1, 1, 1, Tile<64, 32, 32, 2, 1, true, 4>, false>(seed + 20);
    check_grouped<mc::bf16, mc::bf16, 1, 120, 120, 1, 5, 5, 3, 1, 1, 1, Tile<32, 64, 32, 1, 2, true, 2>, true>(
        seed + 30);
    check_grouped<mc::bf16, float, 1, 40, 40, 5, 8, 8, 1, 1, 1, 0, Tile<64, 32, 16, 2, 1, true, 3>, false, 48, 48>(
        seed + 40);
    check_grouped<__half, __half, 1, 28, 42, 7, 8, 7, 3, 2, 1, 1, Tile<32, 32, 16, 1, 2, true, 2>, false, 32, 48>(
        seed + 50);
    check_grouped<__half, __half, 1, 15, 15, 5, 6, 6, 3, 1, 1, 1, Tile<32, 32, 32, 1, 2, false>, true>(seed + 60);
    check_grouped<__half, __half, 1, 96, 96, 3, 5, 5, 5, 1, 1, 2, Tile<32, 32, 32, 1, 2, true, 3>, false>(seed + 70);
  }
}

// tests/templates/nvcc/conv_grouped.cu — templates/conv_grouped.cuh for nvcc (no run): ResNeXt's
// 3x3 grouped convolutions (32 groups of 4, 8 and 16 channels), RegNetY's group widths (24, 48),
// strides 1 and 2, F = 2 merging (Mg 4), element loads (Cg 4, Mg 8: Cs 4), __half and bf16, __half
// and float output, the fused epilogue (bias + relu + residual), cp.async stages and register
// staging. template_ptx_conv_grouped_<arch> (sm_80, sm_90) reads the PTX (ptx/check_mma_ptxas.sh):
// every kernel has ldmatrix and mma.sync m16n8k16, and ptxas -v reports no stack frame and no
// spills.
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/conv_grouped.cu
#include "conv_grouped.cuh"

namespace {

using namespace mc;
using conv::Dims3;

template <int C, int G, int H, int S, int M = C, int N = 1>
using G3 = conv::Shape<N, C, M, G, Dims3<1, H, H>, Dims3<1, 3, 3>, Dims3<1, (H - 1) / S + 1, (H - 1) / S + 1>,
                       Dims3<1, S, S>, Dims3<0, 1, 1>, Dims3<1, 1, 1>>;

template <class T>
using Bias = gemm::EpilogueBias<T>;
template <class T>
using BiasReluResidual =
    gemm::EpilogueFused<T, gemm::Strides<0, 0, 0, 1, 0>, true, gemm::Act::relu, gemm::Residual::before_activation>;

template <class T, class TY, class Sh, class Tl, class Epi, int Cp = Sh::kC, int Yp = Sh::kM>
using K = tc::ConvGrouped<T, TY, Sh, Cp, Yp, Tl, Epi>;

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::tc::kernel<__VA_ARGS__>(__VA_ARGS__::Params)

// ResNeXt-50 32x4d: 128 channels (Mg 4: F 2), 256 with stride 2, 512, in 32 groups; register staging.
MC_INSTANTIATE(K<__half, __half, G3<128, 32, 56, 1>, tc::Tile<64, 64, 32, 2, 2, true, 3>, BiasReluResidual<__half>>);
MC_INSTANTIATE(K<__half, __half, G3<256, 32, 56, 2>, tc::Tile<64, 64, 32, 2, 2, true, 3>, Bias<__half>>);
MC_INSTANTIATE(K<__half, float, G3<512, 32, 14, 1>, tc::Tile<64, 64, 32, 2, 2, false>, Bias<__half>>);
// RegNetY group widths 24 (stride 2) and 48 (bf16).
MC_INSTANTIATE(K<__half, __half, G3<144, 6, 28, 2>, tc::Tile<64, 64, 32, 2, 2, true, 3>, BiasReluResidual<__half>>);
MC_INSTANTIATE(K<bf16, bf16, G3<192, 4, 14, 1>, tc::Tile<64, 64, 32, 2, 2, true, 3>, Bias<bf16>>);
// Cg 4 with Mg 8 (element loads of A), padded pitches.
MC_INSTANTIATE(K<__half, __half, G3<16, 4, 14, 1, 32>, tc::Tile<64, 32, 16, 2, 1, true, 2>, Bias<__half>, 24, 40>);

// tests/templates/nvcc/conv_depthwise_tiled.cu — templates/conv_depthwise.cuh's ConvDepthwiseTiled for
// nvcc (no run): 3x3, 5x5 and 7x7 (ConvNeXt's 7x7 on 56x56x96 among them), stride 1 and 2,
// dilation 2, __half and mc::bf16 storage, FP32 and (__half) FP16 accumulation, the fused epilogues
// (bias, bias + hard-swish, bias + residual), padded pitches, cp.async and register staging.
// template_ptx_conv_depthwise_<arch> (sm_80, sm_90) reads the PTX (ptx/check_vector_loads.sh):
// every kernel moves X in 16-byte chunks (ld.global.v4, or cp.async of 16 bytes), and ptxas -v
// reports no stack frame and no spills. (The element loads of an X whose pitch is not a multiple
// of 8 run in conv_depthwise_tiled_test on the emulation.)
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/conv_depthwise_tiled.cu
#include "conv_depthwise.cuh"

namespace {

using namespace mc;
using conv::Dims3;

// A K x K depthwise convolution on H x H, pads (K / 2) Dl: the output is ceil(H / S) square.
template <int C, int H, int K, int S, int Dl = 1, int N = 1, int O = (H - 1) / S + 1>
using Dw = conv::Shape<N, C, C, C, Dims3<1, H, H>, Dims3<1, K, K>, Dims3<1, O, O>, Dims3<1, S, S>,
                       Dims3<0, (K / 2) * Dl, (K / 2) * Dl>, Dims3<1, Dl, Dl>>;

template <class T>
using Bias = gemm::EpilogueBias<T>;
template <class T>
using BiasHardSwish =
    gemm::EpilogueFused<T, gemm::Strides<0, 0, 0, 1, 0>, true, gemm::Act::hard_swish, gemm::Residual::none>;
template <class T>
using BiasResidual =
    gemm::EpilogueFused<T, gemm::Strides<0, 0, 0, 1, 0>, true, gemm::Act::none, gemm::Residual::after_activation>;

template <int TH, int TW, int CB, int CV, int RH, int RW, bool A>
using DwTile = conv::DepthwiseTile<TH, TW, CB, CV, RH, RW, A>;

template <class T, class Acc, class Sh, class Tl, class Epi, int XP = 0, int YP = 0>
using K = conv::ConvDepthwiseTiled<T, Acc, Sh, Tl, Epi, XP, YP>;

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::gemm::kernel<__VA_ARGS__>(__VA_ARGS__::Params)

// ConvNeXt's 7x7 (56x56x96, 28x28x192): FP32 and FP16 accumulation, both stagings, bf16.
MC_INSTANTIATE(K<__half, float, Dw<96, 56, 7, 1>, DwTile<8, 8, 32, 2, 2, 4, true>, BiasResidual<__half>>);
MC_INSTANTIATE(K<__half, __half, Dw<96, 56, 7, 1>, DwTile<8, 8, 32, 2, 2, 4, true>, Bias<__half>>);
MC_INSTANTIATE(K<bf16, float, Dw<192, 28, 7, 1>, DwTile<8, 8, 32, 2, 2, 4, false>, Bias<bf16>>);
// MobileNet / EfficientNet's 3x3 and 5x5 stride 2, hard-swish; dilation 2.
MC_INSTANTIATE(K<__half, float, Dw<144, 56, 3, 2>, DwTile<4, 8, 64, 8, 2, 2, true>, BiasHardSwish<__half>>);
MC_INSTANTIATE(K<bf16, float, Dw<240, 28, 5, 2>, DwTile<4, 8, 32, 4, 1, 2, false>, BiasHardSwish<bf16>>);
MC_INSTANTIATE(K<__half, float, Dw<64, 32, 3, 1, 2>, DwTile<8, 8, 32, 4, 2, 2, true>, Bias<__half>>);
// A padded pitch (C 20 in 24), batch 2.
MC_INSTANTIATE(K<__half, float, Dw<20, 14, 3, 1, 1, 2>, DwTile<8, 8, 32, 8, 2, 2, true>, Bias<__half>, 24, 24>);

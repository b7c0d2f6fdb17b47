// tests/templates/nvcc/tensor_core.cu — instantiates templates/tensor_core.cuh for nvcc (no run):
// every tile configuration the heuristic picks with both stagings, GEMM operands in every
// orientation (16-byte and scalar loads), FP32 and FP16 accumulators, float and __half outputs,
// the epilogues, and convolutions (1x1, 3x3 s2, 7x7 s2 on C = 3 in a pitch of 8, 3-D; 1x1 with the
// A-operand prologue).
// stages and split-K with their reductions. template_ptx_tensor_core reads its PTX: every kernel
// but the reductions must contain ldmatrix and mma.sync.
//   nvcc -std=c++17 -arch=sm_75 -I runtime_stub -I templates -c tests/templates/nvcc/tensor_core.cu
#include "tensor_core.cuh"

namespace {

using namespace mc;
using conv::Dims3;

template <bool A>
using T128x128 = tc::Tile<128, 128, 32, 2, 4, A>;
template <bool A>
using T128x64 = tc::Tile<128, 64, 32, 2, 2, A>;
template <bool A>
using T64x128 = tc::Tile<64, 128, 32, 2, 2, A>;
template <bool A>
using T64x64 = tc::Tile<64, 64, 32, 2, 2, A>;
template <bool A>
using T32x64 = tc::Tile<32, 64, 32, 1, 4, A>;

using GemmShape = gemm::Shape<1, 2, 3, 256, 192, 128>;
using SA = gemm::Strides<0, 98304, 32768, 128, 1>;
using SB = gemm::Strides<0, 0, 24576, 192, 1>;
using SY = gemm::Strides<0, 147456, 49152, 192, 1>;
using SAt = gemm::Strides<0, 98304, 32768, 1, 256>;  // transposed A
using SBt = gemm::Strides<0, 0, 24576, 1, 128>;     // transposed B
using OddShape = gemm::Shape<1, 1, 1, 37, 29, 19>;  // scalar loads
using OA = gemm::Strides<0, 0, 0, 19, 1>;
using OB = gemm::Strides<0, 0, 0, 29, 1>;
using OY = gemm::Strides<0, 0, 0, 29, 1>;
using Id = gemm::EpilogueIdentity;
using Linear = gemm::EpilogueLinear<__half, gemm::Strides<0, 0, 0, 0, 1>, true>;
using FusedGelu = gemm::EpilogueFused<__half, gemm::Strides<0, 0, 0, 0, 1>, true, gemm::Act::gelu,
                                      gemm::Residual::after_activation>;
using FusedRelu = gemm::EpilogueFused<__half, gemm::Strides<0, 0, 0, 1, 0>, true, gemm::Act::relu,
                                      gemm::Residual::before_activation>;
using Bias = gemm::EpilogueBias<__half>;

template <class Tl, class TY = __half, class Acc = float, class A = SA, class B = SB, class Epi = Id>
using G = tc::Gemm<__half, TY, Acc, GemmShape, A, B, SY, Tl, Epi>;

using Conv1x1 = conv::Shape<2, 64, 256, 1, Dims3<1, 56, 56>, Dims3<1, 1, 1>, Dims3<1, 56, 56>, Dims3<1, 1, 1>,
                            Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
using Conv3x3 = conv::Shape<2, 128, 128, 1, Dims3<1, 56, 56>, Dims3<1, 3, 3>, Dims3<1, 28, 28>, Dims3<1, 2, 2>,
                            Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using Conv7x7 = conv::Shape<1, 3, 64, 1, Dims3<1, 224, 224>, Dims3<1, 7, 7>, Dims3<1, 112, 112>, Dims3<1, 2, 2>,
                            Dims3<0, 3, 3>, Dims3<1, 1, 1>>;
using Conv3d = conv::Shape<1, 16, 32, 1, Dims3<8, 8, 8>, Dims3<3, 3, 3>, Dims3<4, 4, 4>, Dims3<2, 2, 2>,
                           Dims3<1, 1, 1>, Dims3<1, 1, 1>>;
template <class Sh, int Cp, int Yp, class Tl, class Epi = Bias, class TY = __half, class Acc = float>
using C = tc::Conv<__half, TY, Acc, Sh, Cp, Yp, Tl, Epi>;

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::tc::kernel<__VA_ARGS__>(__VA_ARGS__::Params)

MC_INSTANTIATE(G<T128x128<true>>);
MC_INSTANTIATE(G<T128x128<false>>);
MC_INSTANTIATE(G<T128x64<true>, float>);
MC_INSTANTIATE(G<T128x64<false>, __half, __half>);
MC_INSTANTIATE(G<T64x128<true>, __half, float, SAt, SBt>);
MC_INSTANTIATE(G<T64x128<false>, float, float, SAt, SB, Linear>);
MC_INSTANTIATE(G<T64x64<true>, __half, __half, SA, SBt, FusedGelu>);
MC_INSTANTIATE(G<T64x64<false>>);
MC_INSTANTIATE(G<T32x64<true>>);
MC_INSTANTIATE(G<T32x64<false>, float>);
MC_INSTANTIATE(tc::Gemm<__half, float, float, OddShape, OA, OB, OY, T64x64<true>, Id>);
MC_INSTANTIATE(tc::Gemm<__half, __half, float, OddShape, OA, OB, OY, T32x64<false>, Id>);
// Row tables (fold_row_maps): swin's qkv (A gathered) and output projection (A gathered, Y scattered
// with the residual at the written row), both stagings.
using SwinShape = gemm::Shape<1, 1, 1, 441, 96, 96>;
using RowsA = gemm::RowMapped<gemm::Strides<0, 0, 0, 96, 1>>;
using SwinB = gemm::Strides<0, 0, 0, 96, 1>;
using RowsY = gemm::RowMapped<gemm::Strides<0, 0, 0, 96, 1>>;
MC_INSTANTIATE(tc::Gemm<__half, __half, float, SwinShape, RowsA, SwinB, gemm::Strides<0, 0, 0, 96, 1>, T128x64<true>, Bias>);
MC_INSTANTIATE(tc::Gemm<__half, __half, float, SwinShape, RowsA, SwinB, RowsY, T64x64<true>, FusedGelu>);
MC_INSTANTIATE(tc::Gemm<__half, __half, float, SwinShape, RowsA, SwinB, RowsY, T64x64<false>, FusedGelu>);

MC_INSTANTIATE(C<Conv1x1, 64, 256, T128x128<true>>);
MC_INSTANTIATE(C<Conv1x1, 64, 256, T128x64<false>, FusedRelu>);
MC_INSTANTIATE(C<Conv3x3, 128, 128, T64x128<true>, FusedRelu>);
MC_INSTANTIATE(C<Conv3x3, 128, 128, T64x64<false>, Bias, __half, __half>);
MC_INSTANTIATE(C<Conv7x7, 8, 64, T128x64<true>>);
MC_INSTANTIATE(C<Conv7x7, 8, 64, T32x64<false>, Bias, float>);
MC_INSTANTIATE(C<Conv3d, 16, 32, T32x64<true>>);
// Compact K (K 147 over 3 channels, W rows of 152), as resnet50's first conv.
MC_INSTANTIATE(tc::Conv<__half, __half, float, Conv7x7, 8, 64, T128x64<true>, Bias, true>);
MC_INSTANTIATE(tc::Conv<__half, __half, float, Conv7x7, 8, 64, T32x64<false>, Bias, true>);

// cp.async stages and split-K (the product and its reduction), sm_75's register staging with a split.
using S4 = tc::Tile<64, 64, 32, 2, 2, true, 4, 4>;
using S3 = tc::Tile<128, 128, 32, 2, 2, true, 3, 1>;
using R2 = tc::Tile<64, 32, 64, 2, 1, false, 2, 3>;
MC_INSTANTIATE(G<S4, __half, float, SA, SB, FusedGelu>);
MC_INSTANTIATE(tc::SplitKReduce<G<S4, __half, float, SA, SB, FusedGelu>>);
MC_INSTANTIATE(G<S3>);
MC_INSTANTIATE(C<Conv3x3, 128, 128, S4, FusedRelu>);
MC_INSTANTIATE(tc::SplitKReduce<C<Conv3x3, 128, 128, S4, FusedRelu>>);
MC_INSTANTIATE(C<Conv3x3, 128, 128, R2>);
MC_INSTANTIATE(tc::SplitKReduce<C<Conv3x3, 128, 128, R2>>);

// The A-operand prologue (DenseNet's BN + ReLU, squeeze-and-excite's gate) on 1x1 convolutions:
// the land pass after the cp.async wait, register staging, split-K with its reduction.
using BnRelu = tc::ChannelPrologue<__half, true, true, false>;
using Gate = tc::ChannelPrologue<__half, false, false, true, 64>;
MC_INSTANTIATE(tc::Conv<__half, __half, float, Conv1x1, 64, 256, T128x64<true>, FusedRelu, false, BnRelu>);
MC_INSTANTIATE(tc::Conv<__half, __half, float, Conv1x1, 64, 256, T64x64<false>, Bias, false, BnRelu>);
MC_INSTANTIATE(tc::Conv<__half, __half, float, Conv1x1, 64, 256, S4, Bias, false, Gate>);
MC_INSTANTIATE(tc::SplitKReduce<tc::Conv<__half, __half, float, Conv1x1, 64, 256, S4, Bias, false, Gate>>);

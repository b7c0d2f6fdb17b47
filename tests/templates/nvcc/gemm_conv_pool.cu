// tests/templates/nvcc/gemm_conv_pool.cu — instantiates the gemm, conv, conv_depthwise,
// conv_transpose and pool templates for nvcc (no run): every tile configuration the gemm family's
// heuristic picks, both layouts, every epilogue. Check spills with -Xptxas -v: none expected.
//   nvcc -std=c++17 -arch=sm_75 -I runtime_stub -I templates -c tests/templates/nvcc/gemm_conv_pool.cu
#include "gemm.cuh"
#include "conv.cuh"
#include "conv_depthwise.cuh"
#include "conv_transpose.cuh"
#include "pool.cuh"

namespace {

using namespace mc;
using conv::Dims3;
using conv::Layout;

using T128x64 = gemm::Tile<128, 64, 8, 8, 8>;
using T64x128 = gemm::Tile<64, 128, 8, 8, 8>;
using T64x64 = gemm::Tile<64, 64, 8, 4, 8>;
using T32x32 = gemm::Tile<32, 32, 8, 4, 2>;
using TSkinnyM = gemm::Tile<16, 64, 16, 2, 4>;
using TSkinnyN = gemm::Tile<64, 16, 16, 4, 2>;

// Batched, broadcast, row-major A and B, Gemm-style C of shape [N].
using GemmShape = gemm::Shape<1, 2, 3, 100, 70, 50>;
using SA = gemm::Strides<0, 5000, 0, 50, 1>;
using SB = gemm::Strides<0, 0, 3500, 70, 1>;
using SY = gemm::Strides<0, 21000, 7000, 70, 1>;
using SAt = gemm::Strides<0, 5000, 0, 1, 100>;  // transposed A
using SBt = gemm::Strides<0, 0, 3500, 1, 50>;   // transposed B
using Linear = gemm::EpilogueLinear<float, gemm::Strides<0, 0, 0, 0, 1>, true>;
template <class Tl, class A = SA, class B = SB, class Epi = gemm::EpilogueIdentity>
using G = gemm::Gemm<float, float, GemmShape, A, B, SY, Tl, Epi>;

using ConvShape = conv::Shape<2, 64, 96, 1, Dims3<1, 28, 28>, Dims3<1, 3, 3>, Dims3<1, 28, 28>, Dims3<1, 1, 1>,
                              Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using Conv3d = conv::Shape<1, 8, 16, 2, Dims3<8, 8, 8>, Dims3<3, 3, 3>, Dims3<4, 4, 4>, Dims3<2, 2, 2>,
                           Dims3<1, 1, 1>, Dims3<1, 1, 1>>;
using Bias = gemm::EpilogueBias<float>;
using FusedRelu = gemm::EpilogueFused<float, gemm::Strides<0, 0, 0, 1, 0>, true, gemm::Act::relu,
                                      gemm::Residual::before_activation>;
using FusedGelu = gemm::EpilogueFused<float, gemm::Strides<0, 0, 0, 0, 1>, true, gemm::Act::gelu, gemm::Residual::none>;
template <class Tl, Layout L = Layout::nchw, class Sh = ConvShape>
using C = conv::Conv<float, float, Sh, L, Tl, Bias>;

using DwShape = conv::Shape<1, 32, 32, 32, Dims3<1, 56, 56>, Dims3<1, 3, 3>, Dims3<1, 28, 28>, Dims3<1, 2, 2>,
                            Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using TrShape = conv::Shape<1, 16, 8, 2, Dims3<1, 14, 14>, Dims3<1, 4, 4>, Dims3<1, 28, 28>, Dims3<1, 2, 2>,
                            Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using PoolShape = pool::Shape<1, 64, Dims3<1, 56, 56>, Dims3<1, 3, 3>, Dims3<1, 28, 28>, Dims3<1, 2, 2>,
                              Dims3<0, 1, 1>, Dims3<0, 1, 1>, Dims3<1, 1, 1>>;

using SumOut = gemm::StridedIndex<gemm::Ints<3, 5>, gemm::Ints<25, 6>>;
using SumIn = gemm::StridedIndex<gemm::Ints<>, gemm::Ints<>>;

}  // namespace

template __global__ void mc::gemm::kernel<G<T128x64, SA, SB, Linear>>(G<T128x64, SA, SB, Linear>::Params);
template __global__ void mc::gemm::kernel<G<T64x128>>(G<T64x128>::Params);
template __global__ void mc::gemm::kernel<G<T64x128, SA, SB, FusedGelu>>(G<T64x128, SA, SB, FusedGelu>::Params);
template __global__ void mc::gemm::kernel<G<T64x64, SAt, SBt>>(G<T64x64, SAt, SBt>::Params);
template __global__ void mc::gemm::kernel<G<T32x32>>(G<T32x32>::Params);
template __global__ void mc::gemm::kernel<G<TSkinnyM, SA, SBt>>(G<TSkinnyM, SA, SBt>::Params);
template __global__ void mc::gemm::kernel<G<TSkinnyN, SAt, SB>>(G<TSkinnyN, SAt, SB>::Params);
template __global__ void mc::gemm::kernel<gemm::StridedSum<float, float, SumOut, SumIn>>(
    gemm::StridedSum<float, float, SumOut, SumIn>::Params);

template __global__ void mc::gemm::kernel<C<T128x64>>(C<T128x64>::Params);
template __global__ void mc::gemm::kernel<C<T64x128>>(C<T64x128>::Params);
template __global__ void mc::gemm::kernel<conv::Conv<float, float, ConvShape, Layout::nchw, T128x64, FusedRelu>>(
    conv::Conv<float, float, ConvShape, Layout::nchw, T128x64, FusedRelu>::Params);
template __global__ void
mc::gemm::kernel<conv::ConvDepthwise<float, float, DwShape, Layout::nchw, gemm::EpilogueFused<float, gemm::Strides<0, 0, 0, 1, 0>, false, gemm::Act::hard_swish, gemm::Residual::none>>>(
    conv::ConvDepthwise<float, float, DwShape, Layout::nchw, gemm::EpilogueFused<float, gemm::Strides<0, 0, 0, 1, 0>, false, gemm::Act::hard_swish, gemm::Residual::none>>::Params);
template __global__ void mc::gemm::kernel<C<T64x64>>(C<T64x64>::Params);
template __global__ void mc::gemm::kernel<C<T32x32>>(C<T32x32>::Params);
template __global__ void mc::gemm::kernel<C<TSkinnyM>>(C<TSkinnyM>::Params);
template __global__ void mc::gemm::kernel<C<TSkinnyN>>(C<TSkinnyN>::Params);
template __global__ void mc::gemm::kernel<C<T128x64, Layout::nhwc>>(C<T128x64, Layout::nhwc>::Params);
template __global__ void mc::gemm::kernel<C<T64x64, Layout::nhwc, Conv3d>>(C<T64x64, Layout::nhwc, Conv3d>::Params);
// Compact weights on the SIMT fallback: X pitch 8, W pitch 3 in rows of 32 (27 rounded up).
using Conv3c = conv::Shape<1, 3, 16, 1, Dims3<1, 28, 28>, Dims3<1, 3, 3>, Dims3<1, 28, 28>, Dims3<1, 1, 1>,
                           Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using CompactW = conv::Conv<float, float, Conv3c, Layout::nhwc, T64x64, Bias, 8, 16, 3, 32>;
template __global__ void mc::gemm::kernel<CompactW>(CompactW::Params);

template __global__ void mc::gemm::kernel<conv::ConvDepthwise<float, float, DwShape, Layout::nchw, Bias>>(
    conv::ConvDepthwise<float, float, DwShape, Layout::nchw, Bias>::Params);
template __global__ void mc::gemm::kernel<conv::ConvDepthwise<float, float, DwShape, Layout::nhwc, Bias>>(
    conv::ConvDepthwise<float, float, DwShape, Layout::nhwc, Bias>::Params);
template __global__ void mc::gemm::kernel<conv::ConvTranspose<float, float, TrShape, Layout::nchw, Bias>>(
    conv::ConvTranspose<float, float, TrShape, Layout::nchw, Bias>::Params);

template __global__ void mc::gemm::kernel<pool::Pool<float, PoolShape, Layout::nchw, pool::Kind::max, true, false>>(
    pool::Pool<float, PoolShape, Layout::nchw, pool::Kind::max, true, false>::Params);
template __global__ void
mc::gemm::kernel<pool::Pool<float, PoolShape, Layout::nhwc, pool::Kind::average_include_pad, false, false>>(
    pool::Pool<float, PoolShape, Layout::nhwc, pool::Kind::average_include_pad, false, false>::Params);
template __global__ void mc::gemm::kernel<pool::GlobalPool<float, 1, 512, 49, Layout::nchw, false>>(
    pool::GlobalPool<float, 1, 512, 49, Layout::nchw, false>::Params);
template __global__ void mc::gemm::kernel<pool::GlobalPool<float, 1, 512, 49, Layout::nhwc, true>>(
    pool::GlobalPool<float, 1, 512, 49, Layout::nhwc, true>::Params);

// Half storage with FP32 accumulation compiles too (the next issue's SIMT fallback).
template __global__ void mc::gemm::kernel<gemm::Gemm<__half, float, GemmShape, SA, SB, SY, T64x64, gemm::EpilogueIdentity>>(
    gemm::Gemm<__half, float, GemmShape, SA, SB, SY, T64x64, gemm::EpilogueIdentity>::Params);
template __global__ void mc::gemm::kernel<conv::Conv<__half, float, ConvShape, Layout::nhwc, T64x64, gemm::EpilogueBias<__half>>>(
    conv::Conv<__half, float, ConvShape, Layout::nhwc, T64x64, gemm::EpilogueBias<__half>>::Params);
template __global__ void mc::gemm::kernel<pool::Pool<__half, PoolShape, Layout::nchw, pool::Kind::max, true, false>>(
    pool::Pool<__half, PoolShape, Layout::nchw, pool::Kind::max, true, false>::Params);
template __global__ void mc::gemm::kernel<pool::GlobalPool<__half, 1, 512, 49, Layout::nchw, false>>(
    pool::GlobalPool<__half, 1, 512, 49, Layout::nchw, false>::Params);

// Channels-last with padded channel pitches (compiler/schedule/layout.h), FP16 storage.
template __global__ void
mc::gemm::kernel<pool::Pool<__half, PoolShape, Layout::nhwc, pool::Kind::max, false, false, 128, 72, 64>>(
    pool::Pool<__half, PoolShape, Layout::nhwc, pool::Kind::max, false, false, 128, 72, 64>::Params);
template __global__ void mc::gemm::kernel<pool::GlobalPool<__half, 1, 512, 49, Layout::nhwc, false, 128, 520, 512>>(
    pool::GlobalPool<__half, 1, 512, 49, Layout::nhwc, false, 128, 520, 512>::Params);
// With an operand prologue (fuse_prologue: DenseNet's norm5 + ReLU in the global average pool, a
// squeeze-and-excite gate in a windowed pool).
using Norm5 = conv::ChannelPrologue<__half, true, true, false>;
template __global__ void mc::gemm::kernel<pool::GlobalPool<__half, 1, 512, 49, Layout::nhwc, false, 128, 520, 512, Norm5>>(
    pool::GlobalPool<__half, 1, 512, 49, Layout::nhwc, false, 128, 520, 512, Norm5>::Params);
using Gated = conv::ChannelPrologue<__half, false, false, true, 64>;
template __global__ void
mc::gemm::kernel<pool::Pool<__half, PoolShape, Layout::nchw, pool::Kind::average_include_pad, false, false, 128, 0, 0, Gated>>(
    pool::Pool<__half, PoolShape, Layout::nchw, pool::Kind::average_include_pad, false, false, 128, 0, 0, Gated>::Params);
template __global__ void
mc::gemm::kernel<conv::ConvDepthwise<__half, float, DwShape, Layout::nhwc, gemm::EpilogueBias<__half>, 128, 40, 48>>(
    conv::ConvDepthwise<__half, float, DwShape, Layout::nhwc, gemm::EpilogueBias<__half>, 128, 40, 48>::Params);

// tests/templates/sm90a/hopper_gemm.cu — instantiates templates/hopper_gemm.cuh for nvcc and sm_90a
// (no run): the Hopper engine's GEMMs (FP16 128x128x64 and 128x256x64, BF16 with an N-major B, INT8
// s8) and convolutions (FP16 3x3 s2, INT8 3x3) with fused epilogues. (docs/hopper.md's table also
// measured an INT8 u8 GEMM on one consumer and an FP16 3x3 s1 convolution; left out of the ctest for
// its time: ptxas takes about 4 s a kernel.)
// template_ptx_hopper reads its PTX (ptx/check_wgmma.sh): every kernel must issue wgmma.mma_async
// and cp.async.bulk.tensor, and ptxas -v must report no stack frame and no spills. Not in the
// nvcc/ glob: those files build for sm_75 and sm_90, where the sm_90a instructions trap.
//   nvcc -std=c++17 --gpu-architecture=compute_90a -ptx -I runtime_stub -I templates tests/templates/sm90a/hopper_gemm.cu
#include "hopper_gemm.cuh"

namespace {

using namespace mc;
using conv::Dims3;
using hopper::Tile;

using Bias = gemm::EpilogueFused<__half, gemm::Strides<0, 0, 0, 0, 1>, true, Act::gelu, gemm::Residual::after_activation>;
using BiasBf = gemm::EpilogueFused<bf16, gemm::Strides<0, 0, 0, 0, 1>, true, Act::none, gemm::Residual::none>;
using ConvEpi = gemm::EpilogueFused<__half, gemm::Strides<0, 0, 0, 1, 0>, true, Act::relu, gemm::Residual::before_activation>;
using Quant = tc8::Epilogue<int8_t, int8_t, Act::relu, 1, true, true, false>;
using QuantZp = tc8::Epilogue<int8_t, int8_t, Act::none, 0, true, true, true>;

// BERT-like: [4096 tokens x 768] x [768 x 3072] (weights [N][K]: K-major), and 4096^3.
using GemmFfn = hopper::Gemm<tc::MmaF16<float>, __half, gemm::Shape<1, 1, 1, 4096, 3072, 768>, gemm::Strides<0, 0, 0, 768, 1>,
                             gemm::Strides<0, 0, 0, 1, 768>, gemm::Strides<0, 0, 0, 3072, 1>, Tile<128, 128, 64, 4>, Bias>;
using Gemm4k = hopper::Gemm<tc::MmaF16<float>, __half, gemm::Shape<1, 1, 1, 4096, 4096, 4096>, gemm::Strides<0, 0, 0, 4096, 1>,
                            gemm::Strides<0, 0, 0, 1, 4096>, gemm::Strides<0, 0, 0, 4096, 1>, Tile<128, 256, 64, 3>,
                            gemm::EpilogueIdentity>;
// Attention-like batched product with an N-major B ([K][N]), BF16.
using GemmBf = hopper::Gemm<tc::MmaBF16, bf16, gemm::Shape<1, 1, 48, 128, 128, 64>, gemm::Strides<0, 0, 128 * 64, 64, 1>,
                            gemm::Strides<0, 0, 64 * 128, 128, 1>, gemm::Strides<0, 0, 128 * 128, 128, 1>, Tile<128, 128, 64, 4>,
                            BiasBf>;
using GemmS8 = hopper::Gemm<tc::MmaS8<int8_t>, int8_t, gemm::Shape<1, 1, 1, 1024, 1024, 1024>, gemm::Strides<0, 0, 0, 1024, 1>,
                            gemm::Strides<0, 0, 0, 1, 1024>, gemm::Strides<0, 0, 0, 1024, 1>, Tile<128, 128, 128, 4>, QuantZp>;

// resnet50 at batch 32: layer2's 3x3 (28 x 28 x 128), layer1's strided downsample-like 3x3 s2.
using Res3x3 = conv::Shape<32, 128, 128, 1, Dims3<1, 28, 28>, Dims3<1, 3, 3>, Dims3<1, 28, 28>, Dims3<1, 1, 1>, Dims3<0, 1, 1>,
                           Dims3<1, 1, 1>>;
using Res3x3s2 = conv::Shape<32, 256, 256, 1, Dims3<1, 28, 28>, Dims3<1, 3, 3>, Dims3<1, 14, 14>, Dims3<1, 2, 2>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using ConvF16s2 = hopper::Conv<tc::MmaF16<float>, __half, Res3x3s2, 256, 256, Tile<128, 128, 64, 4>, ConvEpi, 8, 16>;
using ConvS8 = hopper::Conv<tc::MmaS8<int8_t>, int8_t, Res3x3, 128, 128, Tile<128, 128, 128, 4>, Quant, 8, 16>;

template <class K>
void instantiate() {
  (void)&hopper::kernel<K>;
}

void all() {
  instantiate<GemmFfn>();
  instantiate<Gemm4k>();
  instantiate<GemmBf>();
  instantiate<GemmS8>();
  instantiate<ConvF16s2>();
  instantiate<ConvS8>();
}

}  // namespace

// A use of all() (otherwise unused, and its instantiations with it).
void (*hopper_gemm_instantiations)() = all;

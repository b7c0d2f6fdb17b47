// tests/templates/nvcc/tensor_core_int8.cu — instantiates templates/tensor_core_int8.cuh for nvcc (no
// run): convolutions (1x1, 3x3 s2, 7x7 s2 on C = 3 compact, 3-D) and GEMMs with int8 and uint8 A, both
// stagings, 2..4 stages, split-K with its reduction, every output type (int8, uint8 quantized; int32
// accumulators; float, __half), INT8 and FP16 residuals, zero points. template_ptx_tensor_core_int8
// reads its PTX: every kernel but the reductions must hold ldmatrix and mma.sync on .s8 operands.
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/tensor_core_int8.cu
#include "tensor_core_int8.cuh"

namespace {

using namespace mc;
using conv::Dims3;

template <bool A, int S = 2, int K = 1>
using T128x128 = tc::Tile<128, 128, 64, 2, 4, A, S, K>;
template <bool A, int S = 2, int K = 1>
using T128x64 = tc::Tile<128, 64, 64, 2, 2, A, S, K>;
template <bool A, int S = 2, int K = 1>
using T64x64 = tc::Tile<64, 64, 32, 2, 2, A, S, K>;
template <bool A, int S = 2, int K = 1>
using T32x32 = tc::Tile<32, 32, 128, 1, 1, A, S, K>;

using Conv1x1 = conv::Shape<1, 64, 256, 1, Dims3<1, 16, 16>, Dims3<1, 1, 1>, Dims3<1, 16, 16>, Dims3<1, 1, 1>,
                            Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
using Conv3x3s2 = conv::Shape<2, 40, 72, 1, Dims3<1, 15, 15>, Dims3<1, 3, 3>, Dims3<1, 8, 8>, Dims3<1, 2, 2>,
                              Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
using Conv7x7 = conv::Shape<1, 3, 64, 1, Dims3<1, 64, 64>, Dims3<1, 7, 7>, Dims3<1, 32, 32>, Dims3<1, 2, 2>,
                            Dims3<0, 3, 3>, Dims3<1, 1, 1>>;
using Conv3d = conv::Shape<1, 16, 32, 1, Dims3<4, 6, 6>, Dims3<3, 3, 3>, Dims3<4, 6, 6>, Dims3<1, 1, 1>,
                           Dims3<1, 1, 1>, Dims3<1, 1, 1>>;

// Epilogue<TY, TR, Act, residual, bias, per-channel, zero point>
using QuantRelu = tc8::Epilogue<int8_t, int8_t, Act::relu, 1, true, true, false>;
using QuantU8 = tc8::Epilogue<uint8_t, uint8_t, Act::none, 0, true, true, true>;
using Raw = tc8::Epilogue<int32_t, int32_t, Act::none, 0, false, false, true>;
using HalfRes = tc8::Epilogue<__half, __half, Act::silu, 2, true, true, false>;
using FloatOut = tc8::Epilogue<float, float, Act::none, 0, true, false, false>;

template <class K>
void instantiate() {
  (void)&tc::kernel<K>;
  if constexpr (K::Tl::kSplitK > 1) (void)&tc::kernel<tc8::SplitKReduce8<K>>;
}

void all() {
  instantiate<tc8::Conv<int8_t, int8_t, Conv1x1, 64, 256, T128x128<true, 3>, QuantRelu>>();
  instantiate<tc8::Conv<int8_t, int8_t, Conv1x1, 64, 256, T128x128<false>, QuantRelu>>();
  instantiate<tc8::Conv<uint8_t, uint8_t, Conv3x3s2, 48, 72, T64x64<true, 4>, QuantU8>>();
  instantiate<tc8::Conv<uint8_t, int32_t, Conv3x3s2, 48, 72, T64x64<true, 2, 3>, Raw>>();
  instantiate<tc8::Conv<int8_t, __half, Conv3x3s2, 48, 72, T64x64<false, 2, 2>, HalfRes>>();
  instantiate<tc8::Conv<int8_t, int8_t, Conv7x7, 3, 64, T128x64<true, 2>, QuantRelu, true>>();
  instantiate<tc8::Conv<int8_t, float, Conv3d, 16, 32, T32x32<true, 2>, FloatOut>>();
  instantiate<tc8::Gemm<int8_t, __half, 64, 1000, 2048, 2048, 1, 2048, 1000, T64x64<true, 3>, HalfRes>>();
  instantiate<tc8::Gemm<uint8_t, int32_t, 37, 29, 19, 19, 1, 19, 29, T32x32<false>, Raw>>();
  instantiate<tc8::Gemm<int8_t, int8_t, 256, 384, 768, 768, 1, 768, 384, T128x64<true, 4, 2>, QuantRelu>>();
}

}  // namespace

// A use of all() (otherwise unused, and its instantiations with it).
void (*tensor_core_int8_instantiations)() = all;

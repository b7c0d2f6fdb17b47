// tests/templates/nvcc/gemv.cu — instantiates templates/gemv.cuh for nvcc (no run): the FC layer at
// batch 1 (1 x 2048 x 1000, transB) in FP16 and FP32 with Gemm's epilogues, a K split, N-contiguous
// B, several rows, and the scalar forms (odd K and N). template_ptx_gemv reads its PTX: the FP16
// K-contiguous kernels must load B with 16-byte vector loads.
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/gemv.cu
#include "gemv.cuh"

namespace {

using namespace mc;

using Fc = gemm::Shape<1, 1, 1, 1, 1000, 2048>;
using FcA = gemm::Strides<0, 0, 0, 2048, 1>;
using FcB = gemm::Strides<0, 0, 0, 1, 2048>;  // transB: K-contiguous
using FcY = gemm::Strides<0, 0, 0, 1000, 1>;
using Rows8 = gemm::Shape<1, 1, 2, 8, 1000, 2048>;
using R8A = gemm::Strides<0, 0, 16384, 2048, 1>;
using R8B = gemm::Strides<0, 0, 0, 1000, 1>;  // N-contiguous, shared by the batch
using R8Y = gemm::Strides<0, 0, 8000, 1000, 1>;
using Odd = gemm::Shape<1, 1, 1, 3, 63, 1001>;
using OddA = gemm::Strides<0, 0, 0, 1001, 1>;
using OddB = gemm::Strides<0, 0, 0, 1, 1001>;
using OddY = gemm::Strides<0, 0, 0, 63, 1>;
template <class T>
using Linear = gemm::EpilogueLinear<T, gemm::Strides<0, 0, 0, 0, 1>, true>;
template <class T>
using FusedRelu = gemm::EpilogueFused<T, gemm::Strides<0, 0, 0, 0, 1>, true, gemm::Act::relu,
                                      gemm::Residual::before_activation>;
using Id = gemm::EpilogueIdentity;

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::gemm::kernel<__VA_ARGS__>(__VA_ARGS__::Params)
// FP16, K-contiguous (the PTX check's subject)
MC_INSTANTIATE(mc::gemv::Gemv<__half, float, Fc, FcA, FcB, FcY, mc::gemv::Config<4, 1>, Linear<__half>>);
MC_INSTANTIATE(mc::gemv::Gemv<__half, float, Fc, FcA, FcB, FcY, mc::gemv::Config<4, 4>, FusedRelu<__half>>);
// FP32, K-contiguous
MC_INSTANTIATE(mc::gemv::Gemv<float, float, Fc, FcA, FcB, FcY, mc::gemv::Config<4, 2>, Linear<float>>);
// N-contiguous, 8 rows, batched
MC_INSTANTIATE(mc::gemv::Gemv<__half, float, Rows8, R8A, R8B, R8Y, mc::gemv::Config<4, 4>, Id>);
MC_INSTANTIATE(mc::gemv::Gemv<float, float, Rows8, R8A, R8B, R8Y, mc::gemv::Config<4, 1>, Id>);
// scalar loads
MC_INSTANTIATE(mc::gemv::Gemv<__half, float, Odd, OddA, OddB, OddY, mc::gemv::Config<4, 2>, Id>);

// tests/templates/nvcc/residual_norm.cu — templates/residual_norm.cuh for nvcc (no run): the
// encoders' residual + bias + LayerNorm (hidden 384 and 768, FP16, with and without the pre-norm
// sum), a BF16 RMSNorm, FP32 in / FP16 out at hidden 1024 (a 64-thread group: the shared-memory
// reduction); and PanelNorm, the LayerNorm in a product's launch (fuse_row_norm), around BERT's
// small-M output projection (M 128, N 768, K 768, split 2) and a tc::Gemm of batch-32 rows (M 4096,
// N 768, K 3072, 128 x 128 tiles). template_ptx_residual_norm (sm_80) reads the PTX
// (ptx/check_vector_loads.sh): every kernel loads with 16-byte vectors, and ptxas -v reports no
// stack frame and no spills (the tail's row of 48 floats a thread beside the product's registers).
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/residual_norm.cu
#include "gemm_small_m.cuh"
#include "residual_norm.cuh"

namespace {

using namespace mc;
using namespace mc::resnorm;
template <int T, int G>
using Tl = reduction::Tiling<T, G, true>;
template <class T>
using BiasResidual = gemm::EpilogueFused<T, gemm::Strides<0, 0, 0, 0, 1>, true, gemm::Act::none, gemm::Residual::after_activation>;
using OutProj = smallm::Gemm<__half, __half, gemm::Shape<1, 1, 1, 128, 768, 768>, gemm::Strides<0, 0, 0, 768, 1>,
                             gemm::Strides<0, 0, 0, 768, 1>, gemm::Strides<0, 0, 0, 768, 1>,
                             smallm::Tile<32, 32, 64, 1, 1, 4, 6, 2>, BiasResidual<__half>>;
using FfnDown = tc::Gemm<__half, __half, float, gemm::Shape<1, 1, 1, 4096, 768, 3072>, gemm::Strides<0, 0, 0, 3072, 1>,
                         gemm::Strides<0, 0, 0, 768, 1>, gemm::Strides<0, 0, 0, 768, 1>,
                         tc::Tile<128, 128, 32, 2, 4, true, 3>, BiasResidual<__half>>;

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::resnorm::kernel<__VA_ARGS__>(__VA_ARGS__::Params)

MC_INSTANTIATE(ResidualNorm<128, 384, Rows<__half, 384>, Rows<__half, 384>, Cols<__half>, Cols<__half>, Cols<__half>,
                            Rows<__half, 384>, NoRows, Tl<128, 16>>);
MC_INSTANTIATE(ResidualNorm<4096, 768, Rows<__half, 768>, Rows<__half, 768>, Cols<__half>, Cols<__half>, Cols<__half>,
                            Rows<__half, 768>, Rows<__half, 768>, Tl<128, 32>>);
MC_INSTANTIATE(ResidualNorm<128, 768, Rows<bf16, 768>, Rows<bf16, 768>, NoCols, Cols<bf16>, NoCols, Rows<bf16, 768>,
                            NoRows, Tl<256, 32>, Norm::rms>);
MC_INSTANTIATE(ResidualNorm<512, 1024, Rows<float, 1024>, Rows<float, 1024>, Cols<float>, Cols<float>, Cols<float>,
                            Rows<__half, 1024>, NoRows, Tl<256, 64>>);
MC_INSTANTIATE(PanelNorm<OutProj, 768, Rows<__half, 768, true>, Cols<__half>, Cols<__half>, Rows<__half, 768>>);
MC_INSTANTIATE(PanelNorm<FfnDown, 768, Rows<__half, 768, true>, Cols<__half>, Cols<__half>, Rows<float, 768>>);

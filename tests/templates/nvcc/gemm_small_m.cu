// tests/templates/nvcc/gemm_small_m.cu — templates/gemm_small_m.cuh for nvcc (no run): the small-M
// tiles (K split across 2 or 4 warps of a block) on the issue's products at M 128 (hidden 384:
// QKV 384 x 1152, the FFN's 384 x 1536 with bias + GELU and 1536 x 384 with bias + residual), FP16
// and BF16, with and without split-K across blocks (the ticketed in-launch reduction); swin's
// windowed products with row tables (fold_row_maps: A gathered, Y scattered with the residual).
// template_ptx_gemm_small_m_<arch> (sm_80, sm_90) reads the PTX (ptx/check_mma_ptxas.sh): every
// kernel has ldmatrix and mma.sync m16n8k16 with FP32 accumulators; ptxas -v: no stack, no spills.
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/gemm_small_m.cu
#include "gemm_small_m.cuh"

namespace {

using namespace mc;
using gemm::Strides;

template <int M, int N, int K>
using Sh = gemm::Shape<1, 1, 1, M, N, K>;
template <class T, gemm::Act A, gemm::Residual R = gemm::Residual::none>
using Epi = gemm::EpilogueFused<T, Strides<0, 0, 0, 0, 1>, true, A, R>;
template <class T, int M, int N, int K, class Tl, class E>
using G = smallm::Gemm<T, T, Sh<M, N, K>, Strides<0, 0, 0, K, 1>, Strides<0, 0, 0, N, 1>, Strides<0, 0, 0, N, 1>, Tl, E>;
using Rows96 = gemm::RowMapped<Strides<0, 0, 0, 96, 1>>;

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::smallm::kernel<__VA_ARGS__>(__VA_ARGS__::Params)

// FFN up: 128 x 1536 x 384, bias + GELU: 32 x 48 tiles, 4 warps on K, all 6 slices in flight.
MC_INSTANTIATE(G<__half, 128, 1536, 384, smallm::Tile<32, 48, 64, 1, 1, 4, 6>, Epi<__half, gemm::Act::gelu>>);
MC_INSTANTIATE(G<bf16, 128, 1536, 384, smallm::Tile<32, 48, 64, 1, 1, 4, 6>, Epi<bf16, gemm::Act::gelu>>);
// QKV: 128 x 1152 x 384: 32 x 32 tiles, 2 x 2 warps on N and K.
MC_INSTANTIATE(G<__half, 128, 1152, 384, smallm::Tile<32, 32, 64, 1, 1, 4, 4>, Epi<__half, gemm::Act::none>>);
// FFN down: 128 x 384 x 1536 + residual: 64 x 32 tiles, 2 warps on M and 2 on K, split 4 in-launch.
MC_INSTANTIATE(G<__half, 128, 384, 1536, smallm::Tile<64, 32, 64, 2, 1, 2, 4, 4>,
                 Epi<__half, gemm::Act::none, gemm::Residual::after_activation>>);
// swin_t_64's qkv (441 windowed rows gathered from 256 tokens) and output projection (gathered and
// scattered back, the residual read at the written row, split 2 in-launch).
MC_INSTANTIATE(smallm::Gemm<__half, __half, Sh<441, 288, 96>, Rows96, Strides<0, 0, 0, 288, 1>,
                            Strides<0, 0, 0, 288, 1>, smallm::Tile<32, 48, 64, 1, 1, 4, 3>,
                            Epi<__half, gemm::Act::none>>);
MC_INSTANTIATE(smallm::Gemm<__half, __half, Sh<441, 96, 96>, Rows96, Strides<0, 0, 0, 96, 1>, Rows96,
                            smallm::Tile<32, 32, 64, 1, 1, 4, 2, 2>,
                            Epi<__half, gemm::Act::none, gemm::Residual::after_activation>>);

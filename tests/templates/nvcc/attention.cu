// tests/templates/nvcc/attention.cu — templates/attention.cuh for nvcc (no run): the tile shapes the
// wiring will choose from, head dims 32 / 40 / 64 / 96 / 128, FP16 and BF16 operands, packed QKV
// views in and heads-interleaved out, padding / relative / window biases and causal masks.
// template_ptx_attention_<arch> (sm_80, sm_90) reads the PTX (ptx/check_mma_ptxas.sh): every kernel
// loads with ldmatrix and multiplies with mma.sync m16n8k16 (FP32 accumulators), and ptxas -v
// reports no stack frame and no spills. template_nvcc_attention compiles it for sm_75 too (FP16:
// two m16n8k8 per m16n8k16, plain copies for cp.async; BF16 traps there and is never launched).
//   nvcc -std=c++17 -arch=sm_80 -I runtime_stub -I templates -c tests/templates/nvcc/attention.cu
#include "attention.cuh"

namespace {

using namespace mc;
using namespace mc::attn;

/// BERT-like: packed QKV [B, S, 3 H D] in, [B, S, H D] out.
template <int B, int S, int H, int D>
using Packed = View<int64_t{S} * 3 * H * D, D, 3 * H * D>;
template <int B, int S, int H, int D>
using Inter = View<int64_t{S} * H * D, D, H * D>;

template <class T, int B, int S, int H, int D, class Tl, class B0 = NoBias, class B1 = NoBias, class M = NotCausal>
using A = Attention<T, Shape<B, H, S, S, D>, Packed<B, S, H, D>, Packed<B, S, H, D>, Packed<B, S, H, D>,
                    Inter<B, S, H, D>, Tl, B0, B1, M>;

using Pad128 = Bias<__half, 32, 128, 0, 0, 1>;          // [B, 1, 1, S]
using Rel49 = Bias<__half, 1, 0, 49 * 49, 49, 1>;       // [1, H, 49, 49]
using Win49 = Bias<__half, 16, 49 * 49, 0, 49, 1>;      // [nW, 1, 49, 49]

}  // namespace

#define MC_INSTANTIATE(...) template __global__ void mc::attn::kernel<__VA_ARGS__>(__VA_ARGS__::Params)

// The 3-layer encoder (hidden 384, 6 heads of 64, seq 128) at batch 1, BERT-base (12 heads of 64)
// at batch 32 with its padding mask (32-row warps, Q from shared memory), in BF16 too.
MC_INSTANTIATE(A<__half, 1, 128, 6, 64, Tile<64, 64, 4, 2>>);
MC_INSTANTIATE(A<__half, 1, 128, 6, 64, Tile<16, 64, 1, 2>>);
MC_INSTANTIATE(A<__half, 32, 128, 12, 64, Tile<128, 64, 4, 2, false>, Pad128>);
MC_INSTANTIATE(A<bf16, 1, 128, 12, 64, Tile<64, 64, 4, 3>>);
// GPT-2 block: causal, 12 heads of 64.
MC_INSTANTIATE(A<__half, 1, 64, 12, 64, Tile<64, 32, 4, 2>, NoBias, NoBias, Causal<0>>);
// Windowed vision transformers: 49-token windows, heads of 32, relative bias + window mask.
MC_INSTANTIATE(A<__half, 64, 49, 3, 32, Tile<64, 64, 4, 2>, Rel49, Win49>);
// Head dims 40 (a multiple of 8) and 128 at 4096 tokens (causal; 32-row warps).
MC_INSTANTIATE(A<__half, 1, 77, 8, 40, Tile<64, 64, 4, 2>>);
MC_INSTANTIATE(A<__half, 1, 4096, 8, 128, Tile<64, 64, 4, 2>, NoBias, NoBias, Causal<0>>);
MC_INSTANTIATE(A<bf16, 1, 4096, 8, 128, Tile<128, 32, 4, 2, false>>);

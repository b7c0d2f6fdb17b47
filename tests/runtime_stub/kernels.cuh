// tests/runtime_stub/kernels.cuh — sample kernels written against runtime_stub/device.h only.
// The same source is run by the host emulation (host_emulation_test.cpp) and compiled by nvcc
// (kernels_nvcc.cu, for sm_75, sm_80 and sm_90), which is the proof that the two modes agree on
// the source language. They follow the rules of kernel templates: device.h primitives only,
// mc::dynamic_smem instead of extern __shared__, mc::launch instead of <<<>>>.
#pragma once

#include "device.h"

namespace samples {

/// Sum of a warp's values, all lanes get it (butterfly).
__device__ __forceinline__ float warp_sum_xor(float v) {
  MC_UNROLL
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// Block reduction: Y[blockIdx.x] = sum of X[blockIdx.x*blockDim.x + t]; blockDim.x a multiple of
/// 32, at most 1024. Shuffles down within warps, shared memory + __syncthreads across warps.
__global__ void block_sum(const float* X, float* Y, int n) {
  __shared__ float warp_sums[32];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? X[i] : 0.0f;
  MC_UNROLL
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (mc::lane_id() == 0) warp_sums[mc::warp_id()] = v;
  __syncthreads();
  if (mc::warp_id() == 0) {
    const int n_warps = blockDim.x / 32;
    float w = static_cast<int>(mc::lane_id()) < n_warps ? warp_sums[mc::lane_id()] : 0.0f;
    w = warp_sum_xor(w);
    if (mc::lane_id() == 0) Y[blockIdx.x] = w;
  }
}

/// C (M x N, row-major, Acc) = A (M x K, row-major, half) * B (K x N, col-major, half) [+ C if
/// accumulate]. One warp per 16x16 tile of C: grid (N/16, M/16), block 32. M, N, K multiples of 16.
template <class Acc>
__global__ void wmma_gemm(const half* A, const half* B, Acc* C, int M, int N, int K, bool accumulate) {
  using namespace nvcuda;
  const int tile_m = blockIdx.y * 16, tile_n = blockIdx.x * 16;
  if (tile_m >= M || tile_n >= N) return;  // whole warp leaves together
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> c;
  if (accumulate) {
    wmma::load_matrix_sync(c, C + tile_m * N + tile_n, N, wmma::mem_row_major);
  } else {
    wmma::fill_fragment(c, 0.0f);
  }
  for (int k = 0; k < K; k += 16) {
    wmma::load_matrix_sync(a, A + tile_m * K + k, K);
    wmma::load_matrix_sync(b, B + tile_n * K + k, K);
    wmma::mma_sync(c, a, b, c);
  }
  wmma::store_matrix_sync(C + tile_m * N + tile_n, c, N, wmma::mem_row_major);
}

/// Reverses each block's slice of X into Y through dynamic shared memory, loaded with cp.async
/// (16 bytes = 4 floats per thread): blockDim.x * 4 floats per block, n a multiple of that.
__global__ void reverse_blocks(const float* X, float* Y, int n) {
  float* tile = mc::dynamic_smem<float>();
  const int per_block = blockDim.x * 4;
  const int base = blockIdx.x * per_block;
  if (base >= n) return;  // whole block leaves together
  mc::cp_async_16(tile + threadIdx.x * 4, X + base + threadIdx.x * 4);
  mc::cp_async_commit();
  mc::cp_async_wait<0>();
  __syncthreads();
  for (int j = 0; j < 4; ++j) {
    const int local = threadIdx.x * 4 + j;
    Y[base + local] = tile[per_block - 1 - local];
  }
}

/// Y = max(alpha * X + beta, 0) on half2 pairs (n2 pairs), with __hfma2 and __hmax2.
__global__ void half2_axpb_relu(const half2* X, half2* Y, half2 alpha, half2 beta, int n2) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n2) return;
  const half2 zero = __float2half2_rn(0.0f);
  Y[i] = __hmax2(__hfma2(alpha, X[i], beta), zero);
}

/// A kernel template in the shape codegen emits: compile-time tile, Params by value, epilogue functor.
struct ScaleBias {
  float scale, bias;
  __device__ float operator()(float v) const { return v * scale + bias; }
};
template <int kThreads, class Epilogue>
struct RowSoftmaxSum {
  struct Params {
    const float* X;
    float* Y;
    int cols;
    Epilogue epi;
  };
  /// Y[row] = epi(sum_j exp(X[row, j])); one block per row, kThreads threads.
  static __device__ void run(const Params& p) {
    __shared__ float partial[kThreads / 32];
    float s = 0.0f;
    for (int j = threadIdx.x; j < p.cols; j += kThreads) s += __expf(p.X[blockIdx.x * p.cols + j]);
    s = warp_sum_xor(s);
    if (mc::lane_id() == 0) partial[mc::warp_id()] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      float t = 0.0f;
      for (int w = 0; w < kThreads / 32; ++w) t += partial[w];
      p.Y[blockIdx.x] = p.epi(t);
    }
  }
};
template <class K>
__global__ void __launch_bounds__(128) run_kernel(typename K::Params p) {
  K::run(p);
}

/// Counts, per block, the threads with a positive X using a ballot per warp and atomicAdd.
__global__ void count_positive(const float* X, int* count, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned ballot = __ballot_sync(0xffffffffu, i < n && X[i] > 0.0f);
  if (mc::lane_id() == 0) atomicAdd(count, __popc(ballot));
}

}  // namespace samples

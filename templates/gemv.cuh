// templates/gemv.cuh — matrix products with at most 8 rows (the FC layer at batch 1): memory bound on
// B, so every thread streams B with 16-byte loads and no MMA tile is wasted on absent rows.
//
// Y[b, m, n] = Epi(sum_k A[b, m, k] * B[b, k, n]) for M <= 8, with gemm.cuh's Shape, Strides and
// epilogues (EpilogueIdentity, EpilogueLinear, EpilogueFused; their per-element apply), FP32
// accumulation. A block of Config::kWarps warps stages the M rows of A in shared memory (all of K
// when M x K elements fit kChunkBytes, else chunk by chunk) and computes kColumnsPerBlock columns.
// Two forms, chosen at compile time from B's strides:
//   K-contiguous B (row stride 1, column stride not: a transB weight): one warp per column, its
//     lanes reading the column 16 bytes (V elements) at a time along K, a warp-shuffle reduction;
//   otherwise (N-contiguous B, or a strided view): each thread owns V consecutive columns, read
//     as one 16-byte load per k.
// Config::kKSplit warps share each column group and split K between them (interleaved); their
// partial sums are added through shared memory in split order, so the sums' order is fixed by the
// Config: deterministic, no atomics. 16-byte loads need B's strides and the pointer aligned to V
// elements; otherwise (odd K or N, an offset view) the same loops read element by element. Grid:
// (ceil(N / kColumnsPerBlock), batch).
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <stdint.h>

#include <type_traits>

#include "device.h"
#include "gemm.cuh"

namespace mc {
namespace gemv {

/// \brief A block of Warps warps, KSplit of them on each column group (splitting K).
template <int Warps, int KSplit>
struct Config {
  static_assert(Warps >= 1 && Warps <= 32 && KSplit >= 1 && Warps % KSplit == 0,
                "gemv::Config: KSplit must divide Warps (at most 32)");
  static constexpr int kWarps = Warps, kKSplit = KSplit, kThreads = 32 * Warps;
  static constexpr int kGroups = Warps / KSplit;  ///< column groups per block
};

/// \brief out[e] = p[e], e < 16 / sizeof(T), as one 16-byte load (p 16-byte aligned); Global: through
/// the read-only cache (B, never written by the kernel), else a shared-memory load.
template <bool Global, class T>
__device__ __forceinline__ void load16(const T* p, float (&out)[16 / sizeof(T)]) {
  union {
    uint4 v;
    T t[16 / sizeof(T)];
  } u;
  if constexpr (Global) {
    u.v = __ldg(reinterpret_cast<const uint4*>(p));
  } else {
    u.v = *reinterpret_cast<const uint4*>(p);
  }
  MC_UNROLL
  for (int e = 0; e < static_cast<int>(16 / sizeof(T)); ++e) out[e] = static_cast<float>(u.t[e]);
}

/// \brief Y = Epi(A x B) for M <= 8, batched: SA, SB, SY as in gemm::Gemm (A: rows m, columns k;
/// B: rows k, columns n; Y: rows m, columns n).
template <class T, class Acc, class Sh, class SA, class SB, class SY, class Cfg, class Epi>
struct Gemv {
  static_assert(Sh::kM >= 1 && Sh::kM <= 8, "Gemv: 1 to 8 rows");
  static_assert(std::is_same<Acc, float>::value, "Gemv: FP32 accumulation");
  static_assert(!gemm::HasRanges<Epi>::value, "Gemv: no horizontally fused outputs");
  static constexpr int M = Sh::kM, N = Sh::kN, K = Sh::kK;
  /// Elements per 16-byte load.
  static constexpr int V = static_cast<int>(16 / sizeof(T));
  static constexpr bool kKContiguous = SB::kRow == 1 && SB::kCol != 1;
  /// B's strides keep every 16-byte load aligned (the pointer is checked at run time).
  static constexpr bool kVectorB =
      SB::kS0 % V == 0 && SB::kS1 % V == 0 && SB::kS2 % V == 0 &&
      (kKContiguous ? SB::kCol % V == 0 : SB::kCol == 1 && SB::kRow % V == 0);
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kSmemBytes = 0;  // static shared memory only
  static constexpr int kColumnsPerBlock = kKContiguous ? Cfg::kGroups : Cfg::kGroups * 32 * V;
  /// A's rows in shared memory: all of K (rounded up to V) when it fits kChunkBytes, else chunks of
  /// a multiple of 32 V elements.
  static constexpr int kChunkBytes = 16384;
  static constexpr int kKPadded = K < V ? V : (K + V - 1) / V * V;
  static constexpr int kChunkLimit = kChunkBytes / (M * static_cast<int>(sizeof(T))) / (32 * V) * (32 * V);
  static constexpr int kChunk = kKPadded <= kChunkLimit ? kKPadded : kChunkLimit;
  /// A thread's sums: one per row (K-contiguous: the warp's column), else per row and owned column.
  static constexpr int kAcc = kKContiguous ? M : M * V;
  /// The threads of one K split (its warps across the column groups).
  static constexpr int kSplitThreads = 32 * Cfg::kGroups;

  struct Params {
    const T* A = nullptr;
    const T* B = nullptr;
    T* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3((N + kColumnsPerBlock - 1) / kColumnsPerBlock, Sh::kBatch); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    __shared__ __align__(16) T sa[M * kChunk];
    const int batch = static_cast<int>(blockIdx.y);
    const int tid = static_cast<int>(threadIdx.x), warp = tid / 32, lane = tid % 32;
    const int group = warp % Cfg::kGroups, split = warp / Cfg::kGroups;
    const int column = static_cast<int>(blockIdx.x) * Cfg::kGroups + group;  // K-contiguous: the warp's
    const int n0 = kKContiguous ? 0 : column * 32 * V + lane * V;  // otherwise: the thread's first column
    const T* a = p.A + SA::template batch_offset<Sh>(batch);
    const T* b = p.B + SB::template batch_offset<Sh>(batch);
    const bool vector = kVectorB && (reinterpret_cast<uintptr_t>(b) & 15u) == 0;
    float acc[kAcc];
    MC_UNROLL
    for (int i = 0; i < kAcc; ++i) acc[i] = 0.0f;

    for (int c0 = 0; c0 < K; c0 += kChunk) {
      const int len = K - c0 < kChunk ? K - c0 : kChunk;
      if (c0 > 0) __syncthreads();  // every warp is done with the previous chunk
      for (int i = tid; i < M * kChunk; i += kThreads) {
        const int m = i / kChunk, kk = i % kChunk;
        sa[i] = kk < len ? a[m * SA::kRow + (c0 + kk) * SA::kCol] : T(0.0f);
      }
      __syncthreads();
      if constexpr (kKContiguous) {
        if (column < N) accumulate_column(b + column * SB::kCol, sa, c0, len, vector, split, lane, acc);
      } else {
        if (n0 < N) accumulate_columns(b, sa, c0, len, vector, split, n0, acc);
      }
    }

    if constexpr (kKContiguous) {  // every lane ends with the warp's sums
      MC_UNROLL
      for (int m = 0; m < M; ++m) {
        MC_UNROLL
        for (int offset = 16; offset > 0; offset /= 2) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], offset);
      }
    }
    if constexpr (Cfg::kKSplit > 1) {
      // Split s's sums added to split 0's, s = 1, 2, ... in turn: a fixed order.
      __shared__ float partial[kAcc * kSplitThreads];
      const int t = group * 32 + lane;
      for (int s = 1; s < Cfg::kKSplit; ++s) {
        if (split == s) {
          MC_UNROLL
          for (int i = 0; i < kAcc; ++i) partial[i * kSplitThreads + t] = acc[i];
        }
        __syncthreads();
        if (split == 0) {
          MC_UNROLL
          for (int i = 0; i < kAcc; ++i) acc[i] += partial[i * kSplitThreads + t];
        }
        if (s + 1 < Cfg::kKSplit) __syncthreads();
      }
    }
    if (split != 0) return;

    const int64_t y_batch = SY::template batch_offset<Sh>(batch);
    if constexpr (kKContiguous) {
      MC_UNROLL
      for (int m = 0; m < M; ++m) {
        if (lane == m && column < N) store(p, acc[m], batch, m, column, y_batch);  // row m from lane m
      }
    } else {
      MC_UNROLL
      for (int m = 0; m < M; ++m) {
        MC_UNROLL
        for (int e = 0; e < V; ++e) {
          if (n0 + e < N) store(p, acc[m * V + e], batch, m, n0 + e, y_batch);
        }
      }
    }
  }

 private:
  __device__ __forceinline__ static void store(const Params& p, float v, int batch, int m, int n, int64_t y_batch) {
    const int64_t o = y_batch + m * SY::kRow + n * SY::kCol;
    p.Y[o] = static_cast<T>(Epi::template apply<Sh>(p.epilogue, v, gemm::Coord{batch, m, n, o}));
  }

  /// K-contiguous: acc[m] += A[m, k] * B[k, column] over this lane's k of the chunk: V at a time
  /// (vector loads) where aligned, the rest one by one.
  __device__ __forceinline__ static void accumulate_column(const T* col, const T* sa, int c0, int len, bool vector,
                                                           int split, int lane, float (&acc)[kAcc]) {
    constexpr int kStride = 32 * Cfg::kKSplit;
    int scalar_from = 0;
    if constexpr (kVectorB) {
      if (vector) {
        const int vecs = len / V;
        MC_UNROLL_N(4)
        for (int v = split * 32 + lane; v < vecs; v += kStride) {
          float bv[V];
          load16<true>(col + (c0 + v * V), bv);
          MC_UNROLL
          for (int m = 0; m < M; ++m) {
            float av[V];
            load16<false>(sa + m * kChunk + v * V, av);
            MC_UNROLL
            for (int e = 0; e < V; ++e) acc[m] += av[e] * bv[e];
          }
        }
        scalar_from = vecs * V;
      }
    }
    for (int kk = scalar_from + split * 32 + lane; kk < len; kk += kStride) {
      const float bv = static_cast<float>(col[(c0 + kk) * SB::kRow]);
      MC_UNROLL
      for (int m = 0; m < M; ++m) acc[m] += static_cast<float>(sa[m * kChunk + kk]) * bv;
    }
  }

  /// N-contiguous (or strided): acc[m * V + e] += A[m, k] * B[k, n0 + e] over this split's k of the
  /// chunk, B's V columns as one 16-byte load where aligned and inside N.
  __device__ __forceinline__ static void accumulate_columns(const T* b, const T* sa, int c0, int len, bool vector,
                                                            int split, int n0, float (&acc)[kAcc]) {
    const bool whole = vector && n0 + V <= N;
    MC_UNROLL_N(4)
    for (int kk = split; kk < len; kk += Cfg::kKSplit) {
      const T* row = b + (c0 + kk) * SB::kRow;
      float bv[V];
      if (kVectorB && whole) {
        load16<true>(row + n0, bv);
      } else {
        MC_UNROLL
        for (int e = 0; e < V; ++e) bv[e] = n0 + e < N ? static_cast<float>(row[(n0 + e) * SB::kCol]) : 0.0f;
      }
      MC_UNROLL
      for (int m = 0; m < M; ++m) {
        const float av = static_cast<float>(sa[m * kChunk + kk]);
        MC_UNROLL
        for (int e = 0; e < V; ++e) acc[m * V + e] += av * bv[e];
      }
    }
  }
};

}  // namespace gemv
}  // namespace mc

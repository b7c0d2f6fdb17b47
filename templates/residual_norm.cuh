// templates/residual_norm.cuh — the transformer's "add and norm" in one kernel: per row of a
// product's output X (M rows of N columns), h = X + bias + R (the residual), then LayerNorm,
// y = (h - mean(h)) / sqrt(var(h) + epsilon) * gamma + beta, or RMSNorm, y = h / sqrt(mean(h^2) +
// epsilon) * gamma (+ beta), written in Y's type (the next product's); optionally h itself too
// (Sum: the pre-norm value a later residual add reads, in its own type).
//
// Where it sits: after a product whose epilogue did not take the bias (or with Bias absent when it
// did), before the next product; it replaces Add (+ Add) + LayerNormalization, reading X and R once
// and writing Y once (three kernels and two round trips of the row through memory unfused).
//
// Work split (reduction::Tiling<kThreads, kGroup, true>): a group of kGroup consecutive threads
// owns a row (kThreads / kGroup rows a block); the row's N / 8 chunks of 8 elements go to the
// group's threads round-robin (chunk c = lane + i x kGroup: consecutive threads read consecutive 16
// bytes), each thread keeps its kPer chunks of h in registers (kPer x 8 floats), so every operand
// is read once. Loads and stores are 16-byte vectors (two for float): N and every row stride are
// multiples of 8 elements and the bases 16-byte aligned (static_assert / the caller's arena; the
// loads are gemm::load8's, which would fall back to element loads on an unaligned base).
// Reductions: warp shuffles within a group of up to 32, shared memory across the warps of a larger
// group (Tiling::all_reduce: a fixed order, deterministic).
//
// Numerics: h in FP32; LayerNorm's mean, then the mean of squared deviations from it over the
// cached h (two passes over registers: no E[h^2] - E[h]^2 cancellation), both relative to the row's
// first h (a row with a large common offset sums small differences), InvStdDev = 1 / sqrt(var +
// epsilon), as templates/normalization.cuh; RMSNorm's mean of squares likewise. Y rounds once (to
// __half: round to nearest even; bf16 likewise). The normalization uses h before Sum's rounding.
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <stdint.h>

#include <type_traits>

#include "gemm.cuh"
#include "reduce.cuh"

namespace mc {
namespace resnorm {

/// \brief A row operand of T: row m at element m x Ld (a multiple of 8), the columns contiguous.
/// Fresh: written earlier in the same launch by other blocks (PanelNorm's X, the product's output):
/// read at L2 (ld.global.cg), never through L1 or the read-only path, which need not see those writes.
template <class T, int64_t Ld, bool Fresh = false>
struct Rows {
  using Elem = T;
  static constexpr bool kPresent = true;
  static constexpr bool kFresh = Fresh;
  static constexpr int64_t kLd = Ld;
  static_assert(Ld % 8 == 0, "resnorm::Rows: the row stride must be a multiple of 8 elements (16-byte chunks)");
};
/// \brief An absent row operand (no residual; no Sum output).
struct NoRows {
  using Elem = float;
  static constexpr bool kPresent = false;
  static constexpr bool kFresh = false;
  static constexpr int64_t kLd = 0;
};
/// \brief A per-column vector of T ([N]: bias, gamma, beta).
template <class T>
struct Cols {
  using Elem = T;
  static constexpr bool kPresent = true;
};
/// \brief An absent per-column vector.
struct NoCols {
  using Elem = float;
  static constexpr bool kPresent = false;
};

enum class Norm { layer, rms };

/// \brief 8 floats rounded to T, stored at p (16-byte aligned) with 16-byte stores.
template <class T>
__device__ __forceinline__ void store8(T* p, const float (&v)[8]) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "resnorm: 16- or 32-bit elements");
  union {
    uint4 v[sizeof(T) / 2];
    T t[8];
  } u;
  MC_UNROLL
  for (int e = 0; e < 8; ++e) u.t[e] = reduction::Elem<T>::store(v[e]);
  MC_UNROLL
  for (int q = 0; q < static_cast<int>(sizeof(T) / 2); ++q) reinterpret_cast<uint4*>(p)[q] = u.v[q];
}

/// \brief out[e] = p[e] as float, e = 0..7, p 16-byte aligned: as gemm::load8 where Rw is not
/// fresh, else with 16-byte ld.global.cg loads.
template <class Rw>
__device__ __forceinline__ void load_row8(const typename Rw::Elem* p, float (&out)[8]) {
  using T = typename Rw::Elem;
  if constexpr (Rw::kFresh) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "resnorm: 16- or 32-bit elements");
    union {
      uint4 v[sizeof(T) / 2];
      T t[8];
    } u;
    MC_UNROLL
    for (int q = 0; q < static_cast<int>(sizeof(T) / 2); ++q) u.v[q] = __ldcg(reinterpret_cast<const uint4*>(p) + q);
    MC_UNROLL
    for (int e = 0; e < 8; ++e) out[e] = reduction::Elem<T>::load(u.t[e]);
  } else {
    gemm::load8(p, 1, out);
  }
}

/// \brief *p as float (fresh: ld.global.cg, as load_row8).
template <class Rw>
__device__ __forceinline__ float load_row1(const typename Rw::Elem* p) {
  using T = typename Rw::Elem;
  if constexpr (Rw::kFresh) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "resnorm: 16- or 32-bit elements");
    using Bits = typename std::conditional<sizeof(T) == 2, unsigned short, unsigned>::type;
    union {
      Bits b;
      T t;
    } u;
    u.b = __ldcg(reinterpret_cast<const Bits*>(p));
    return reduction::Elem<T>::load(u.t);
  } else {
    return reduction::Elem<T>::load(*p);
  }
}

/// \brief Y = norm(X + Bias + R) * Gamma + Beta over M rows of N columns (see the file comment).
/// X, Y: Rows; R, Sum: Rows or NoRows; Bias, Beta: Cols or NoCols; Gamma: Cols; Tl:
/// reduction::Tiling<threads, group, true>; Kind: Norm::layer or Norm::rms.
template <int M, int N, class X, class R, class Bias, class Gamma, class Beta, class Y, class Sum, class Tl,
          Norm Kind = Norm::layer>
struct ResidualNorm {
  static_assert(N % 8 == 0 && N > 0, "resnorm: N must be a positive multiple of 8");
  static_assert(Tl::kLanesContiguous, "resnorm: a row's threads are consecutive");
  static_assert(X::kPresent && Y::kPresent && Gamma::kPresent, "resnorm: X, Y and Gamma are required");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kChunks = N / 8;
  static constexpr int kPer = (kChunks + Tl::kGroup - 1) / Tl::kGroup;  ///< chunks a thread holds
  static_assert(kPer <= 8, "resnorm: at most 8 chunks (64 values) a thread: use a larger group");
  static constexpr int kBlocks = (M + Tl::kRowsPerBlock - 1) / Tl::kRowsPerBlock;
  static constexpr int kSmemBytes = 0;

  struct Params {
    const typename X::Elem* __restrict__ x = nullptr;
    const typename R::Elem* __restrict__ residual = nullptr;  ///< null when R is NoRows
    const typename Bias::Elem* __restrict__ bias = nullptr;   ///< null when Bias is NoCols
    const typename Gamma::Elem* __restrict__ gamma = nullptr;
    const typename Beta::Elem* __restrict__ beta = nullptr;   ///< null when Beta is NoCols
    typename Y::Elem* __restrict__ y = nullptr;
    typename Sum::Elem* __restrict__ sum = nullptr;           ///< null when Sum is NoRows
    float epsilon = 1e-5f;
  };

  static dim3 grid() { return dim3(static_cast<unsigned>(kBlocks)); }
  static dim3 block() { return dim3(kThreads); }

  struct Plus {
    __device__ float operator()(float a, float b) const { return a + b; }
  };

  /// The kernel: the block's rows (Tl::row()).
  __device__ static void run(const Params& p) {
    __shared__ float scratch[Tl::kScratch];
    norm_row(p, Tl::row(), Tl::row() < M, scratch);
  }

  /// Rows [first, end) by the whole block, kRowsPerBlock at a time (PanelNorm's tail); scratch:
  /// Tl::kScratch floats of shared memory. Every thread of the block calls it.
  __device__ static void norm_rows(const Params& p, int first, int end, float* scratch) {
    for (int r0 = first; r0 < end; r0 += Tl::kRowsPerBlock) {
      const int row = r0 + Tl::slot();
      norm_row(p, row, row < end, scratch);
    }
  }

  /// Row `row` by its group of threads (active false: the group only takes part in the block's
  /// reductions). Every thread of the block calls it.
  __device__ static void norm_row(const Params& p, int row, bool active, float* scratch) {
    const int lane = Tl::lane();
    // LayerNorm sums h - pivot, the pivot being the row's first h (as normalization.cuh): a row
    // with a large common offset then sums small, exactly computed differences.
    float pivot = 0.0f;
    if constexpr (Kind == Norm::layer) {
      if (active) {
        pivot = load_row1<X>(p.x + static_cast<int64_t>(row) * X::kLd);
        if constexpr (Bias::kPresent) pivot += reduction::Elem<typename Bias::Elem>::load(p.bias[0]);
        if constexpr (R::kPresent) pivot += reduction::Elem<typename R::Elem>::load(p.residual[static_cast<int64_t>(row) * R::kLd]);
      }
    }
    float h[kPer][8];  // h - pivot
    float total = 0.0f;
    MC_UNROLL
    for (int i = 0; i < kPer; ++i) {
      const int c = (lane + i * Tl::kGroup) * 8;
      if (active && (kChunks % Tl::kGroup == 0 || c < N)) {
        load_row8<X>(p.x + static_cast<int64_t>(row) * X::kLd + c, h[i]);
        if constexpr (Bias::kPresent) {
          float b[8];
          gemm::load8(p.bias + c, 1, b);
          MC_UNROLL
          for (int e = 0; e < 8; ++e) h[i][e] += b[e];
        }
        if constexpr (R::kPresent) {
          float r[8];
          gemm::load8(p.residual + static_cast<int64_t>(row) * R::kLd + c, 1, r);
          MC_UNROLL
          for (int e = 0; e < 8; ++e) h[i][e] += r[e];
        }
        if constexpr (Sum::kPresent) store8(p.sum + static_cast<int64_t>(row) * Sum::kLd + c, h[i]);
        MC_UNROLL
        for (int e = 0; e < 8; ++e) h[i][e] -= pivot;
      } else {
        MC_UNROLL
        for (int e = 0; e < 8; ++e) h[i][e] = 0.0f;
      }
      MC_UNROLL
      for (int e = 0; e < 8; ++e) total += Kind == Norm::layer ? h[i][e] : h[i][e] * h[i][e];
    }
    total = Tl::all_reduce(total, Plus(), scratch);
    float mean = 0.0f, inv_std;
    if constexpr (Kind == Norm::layer) {
      mean = total / static_cast<float>(N);
      float sq = 0.0f;
      MC_UNROLL
      for (int i = 0; i < kPer; ++i) {
        const int c = (lane + i * Tl::kGroup) * 8;
        if (active && (kChunks % Tl::kGroup == 0 || c < N)) {
          MC_UNROLL
          for (int e = 0; e < 8; ++e) sq += (h[i][e] - mean) * (h[i][e] - mean);
        }
      }
      sq = Tl::all_reduce(sq, Plus(), scratch);
      inv_std = 1.0f / sqrtf(sq / static_cast<float>(N) + p.epsilon);
    } else {
      inv_std = 1.0f / sqrtf(total / static_cast<float>(N) + p.epsilon);
    }
    if (!active) return;  // no barrier follows in this row
    MC_UNROLL
    for (int i = 0; i < kPer; ++i) {
      const int c = (lane + i * Tl::kGroup) * 8;
      if (kChunks % Tl::kGroup == 0 || c < N) {
        float gm[8], y[8];
        gemm::load8(p.gamma + c, 1, gm);
        MC_UNROLL
        for (int e = 0; e < 8; ++e) y[e] = (h[i][e] - mean) * inv_std * gm[e];
        if constexpr (Beta::kPresent) {
          float bt[8];
          gemm::load8(p.beta + c, 1, bt);
          MC_UNROLL
          for (int e = 0; e < 8; ++e) y[e] += bt[e];
        }
        store8(p.y + static_cast<int64_t>(row) * Y::kLd + c, y);
      }
    }
  }
};

// ---- the tail of a product: LayerNorm by the last block of each row panel ------------------------

/// \brief The smallest power-of-two group (at most Threads) in which each thread holds at most 8
/// chunks of 8 of a row of N; 0 when even Threads threads hold more.
constexpr int panel_group(int N, int Threads) {
  int g = 1;
  while (g < Threads && (N / 8 + g - 1) / g > 8) g *= 2;
  return (N / 8 + g - 1) / g > 8 ? 0 : g;
}

/// \brief Product K (tc::Gemm, smallm::Gemm or gemm::Gemm: grid (N tiles, M tiles, batch x
/// splits), K::Shape, K::kPanelRows = its tile's rows, K::kSplits), then Y = norm(K's output) *
/// Gamma + Beta over each of its rows, in one launch: the LayerNorm (RMSNorm) after a product whose
/// rows are the norm's rows (N = the product's N), without a kernel of its own.
///
/// Each block runs K, then arrives at its row panel's ticket (Params::tickets: one unsigned per
/// batch x M tile, zero before the first launch); the panel's last block (gridDim.x x splits
/// arrivals) normalizes the panel's rows — reading K's output back from L2 (X: Rows<TX, Ld, true>)
/// with every thread of the block, a group of panel_group(N, threads) threads per row as
/// ResidualNorm — and resets the ticket for the next launch. Release / acquire: every thread's
/// stores, __threadfence, the barrier, then the ticket's atomicAdd; the last block's __threadfence
/// after it, before its loads. No block waits on another (the last to arrive does the work), so
/// the grid needs no co-residency; the emulation runs blocks in order and the panel's last block
/// in that order normalizes it. The norm is ResidualNorm's (its numerics; the same bits as the
/// stand-alone kernel on the same X).
///
/// Rows: K's row m of batch b is row b x M + m of X and of Y (flat rows Ld apart: the schedule
/// takes only such outputs). Shared memory: K's dynamic bytes (the tail reuses them once K is
/// done) or, for a K of static shared memory only, the tail's own few bytes.
template <class K, int N, class X, class Gamma, class Beta, class Y, Norm Kind = Norm::layer>
struct PanelNorm {
  using Sh = typename K::Shape;
  static_assert(Sh::kN == N, "resnorm::PanelNorm: the norm's rows are the product's rows of N");
  static_assert(X::kFresh, "resnorm::PanelNorm: X is the product's output, written by other blocks: Rows<T, Ld, true>");
  static constexpr int kThreads = K::kThreads;
  static constexpr int kGroup = panel_group(N, kThreads);
  static_assert(kGroup > 0, "resnorm::PanelNorm: a row of N does not fit in the block's registers (8 chunks a thread)");
  using Tl = reduction::Tiling<kThreads, kGroup, true>;
  using Norm_ = ResidualNorm<Sh::kBatch * Sh::kM, N, X, NoRows, NoCols, Gamma, Beta, Y, NoRows, Tl, Kind>;
  static constexpr int kPanelRows = K::kPanelRows;
  static constexpr int kPanels = Sh::kBatch * ((Sh::kM + kPanelRows - 1) / kPanelRows);
  /// The tail's shared memory: its reduction scratch and the "last block" flag.
  static constexpr int kTailBytes = (Tl::kScratch + 1) * 4;
  static constexpr bool kTailInDynamic = K::kSmemBytes >= kTailBytes;
  static constexpr int kSmemBytes = K::kSmemBytes;

  struct Params {
    typename K::Params product{};
    typename Norm_::Params norm{};  ///< x: the product's Y; y, gamma, beta, epsilon
    unsigned* tickets = nullptr;    ///< kPanels, zero before the first launch; every launch leaves them zero
  };

  static dim3 grid() { return K::grid(); }
  static dim3 block() { return K::block(); }

  __device__ static void run(const Params& p) {
    K::run(p.product);
    float* scratch;
    if constexpr (kTailInDynamic) {
      scratch = dynamic_smem<float>();
    } else {
      __shared__ float own[Tl::kScratch + 1];
      scratch = own;
    }
    unsigned* last = reinterpret_cast<unsigned*>(scratch + Tl::kScratch);
    const int batch = static_cast<int>(blockIdx.z) / K::kSplits;
    const int panel = batch * static_cast<int>(gridDim.y) + static_cast<int>(blockIdx.y);
    __threadfence();  // this thread's stores of the panel before the ticket
    __syncthreads();  // every thread's (and K is done with the shared memory)
    if (threadIdx.x == 0) {
      const unsigned arrivals = gridDim.x * (gridDim.z / Sh::kBatch);
      const bool mine = atomicAdd(p.tickets + panel, 1u) + 1u == arrivals;
      if (mine) atomicExch(p.tickets + panel, 0u);  // ready for the next launch
      st_shared(last, mine ? 1u : 0u);
    }
    __syncthreads();
    if (ld_shared(last) == 0u) return;
    __threadfence();  // the other blocks' stores, published before their tickets, from here on
    const int first = batch * Sh::kM + static_cast<int>(blockIdx.y) * kPanelRows;
    const int end = batch * Sh::kM + (static_cast<int>(blockIdx.y) + 1) * kPanelRows < (batch + 1) * Sh::kM
                        ? batch * Sh::kM + (static_cast<int>(blockIdx.y) + 1) * kPanelRows
                        : (batch + 1) * Sh::kM;
    Norm_::norm_rows(p.norm, first, end, scratch);
  }
};

/// \brief The entry point of a ResidualNorm instantiation for the template tests.
template <class K>
__global__ void __launch_bounds__(K::kThreads) kernel(typename K::Params p) {
  K::run(p);
}

}  // namespace resnorm
}  // namespace mc

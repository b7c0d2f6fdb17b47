// templates/topk.cuh — TopK: the k largest (or smallest) elements of each row and their indices.
//
// The order is the reference's total order: the better value first, NaN after every number,
// equal values (and NaNs among themselves) by lower index. Output is always sorted (sorted = 0
// leaves the order unspecified, so sorted output is valid). Values are copied from X bit for bit;
// Indices are int64 positions along the axis. Rows and columns are reduce.cuh's index model (the
// columns are the TopK axis).
//
// One block per row. A row of up to kMaxSort elements is sorted in shared memory (bitonic, padded
// to a power of two); a longer row runs k rounds of a block-wide "best element after the previous
// pick" selection, which needs no memory beyond one value per thread (fine for small k, slow for
// k near a long row's length).
#pragma once

#include "reduce.cuh"

namespace mc {
namespace reduction {

/// The smallest power of two >= n (1 for n <= 1).
constexpr int pow2_at_least(int n) { return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2); }

/// \brief Values[row, j], Indices[row, j] for j < kK: the j-th element of X[row, :] in the order
/// above. X = Operand<T, rows, columns>, Values = Operand<T, rows, k>, Indices = Operand<int64_t,
/// rows, k>; either output may be Absent. Tile: one group per block (kGroup == kThreads, lanes
/// contiguous).
template <bool kLargest, int kK, class X, class Values, class Indices, class Tile>
struct TopK {
  using T = typename X::Elem;
  using V = ComputeOf<T>;
  static constexpr int kRows = X::Row::kSize;
  static constexpr int kCols = X::Col::kSize;
  static constexpr int kThreads = Tile::kThreads;
  static constexpr int kBlocks = kRows;
  static_assert(Tile::kGroup == Tile::kThreads && Tile::kLanesContiguous, "TopK: one row per block");
  static_assert(kK >= 1 && kK <= kCols, "TopK: k must be in [1, axis size]");
  static_assert((!Values::kPresent || Values::Row::kSize == kRows) && (!Indices::kPresent || Indices::Row::kSize == kRows),
                "TopK: outputs disagree on rows");

  /// Rows of up to kMaxSort elements are sorted in shared memory (48 KiB of static shared memory).
  static constexpr int kMaxSort = sizeof(V) == 8 ? 2048 : 4096;
  static constexpr int kSortSize = pow2_at_least(kCols);
  static constexpr bool kSort = kSortSize <= kMaxSort;

  static dim3 grid() { return dim3(kBlocks); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    const T* x = nullptr;         ///< input
    T* values = nullptr;          ///< null when Values is Absent
    int64_t* indices = nullptr;   ///< null when Indices is Absent
  };

  struct Entry {
    V value;
    int index;  ///< -1: none (after everything)
  };

  /// True when a comes before b in the order (entries with index -1 come after everything).
  __device__ __forceinline__ static bool before(V a, int ia, V b, int ib) {
    if (ib < 0) return ia >= 0;
    if (ia < 0) return false;
    const bool na = is_nan(a), nb = is_nan(b);
    if (na != nb) return nb;
    if (!na && a != b) return kLargest ? a > b : a < b;
    return ia < ib;
  }
  struct First {
    __device__ Entry operator()(Entry a, Entry b) const { return before(b.value, b.index, a.value, a.index) ? b : a; }
  };

  __device__ static void write(const Params& p, int row, int j, int index) {
    if constexpr (Values::kPresent) p.values[Values::offset(row, j)] = p.x[X::offset(row, index)];
    if constexpr (Indices::kPresent) p.indices[Indices::offset(row, j)] = index;
  }

  __device__ static void run(const Params& p) {
    const int row = static_cast<int>(blockIdx.x);
    const int t = static_cast<int>(threadIdx.x);
    const T* x = p.x + X::Row::offset(row);
    if constexpr (kSort) {
      __shared__ V keys[kSortSize];
      __shared__ int idx[kSortSize];
      for (int i = t; i < kSortSize; i += kThreads) {
        keys[i] = i < kCols ? Elem<T>::load(x[X::Col::offset(i)]) : V(0);
        idx[i] = i < kCols ? i : -1;
      }
      __syncthreads();
      // Bitonic sort into the order (best first).
      for (int size = 2; size <= kSortSize; size *= 2) {
        for (int stride = size / 2; stride > 0; stride /= 2) {
          for (int i = t; i < kSortSize; i += kThreads) {
            const int j = i ^ stride;
            if (j > i) {
              const bool ascending = (i & size) == 0;
              const bool swap = ascending ? before(keys[j], idx[j], keys[i], idx[i]) : before(keys[i], idx[i], keys[j], idx[j]);
              if (swap) {
                const V kv = keys[i];
                keys[i] = keys[j];
                keys[j] = kv;
                const int iv = idx[i];
                idx[i] = idx[j];
                idx[j] = iv;
              }
            }
          }
          __syncthreads();
        }
      }
      for (int j = t; j < kK; j += kThreads) write(p, row, j, idx[j]);
    } else {
      __shared__ Entry scratch[Tile::kScratch];
      Entry prev{};
      prev.index = -1;
      for (int j = 0; j < kK; ++j) {
        Entry best{};
        best.index = -1;
        for (int c = t; c < kCols; c += kThreads) {
          const V v = Elem<T>::load(x[X::Col::offset(c)]);
          if (j > 0 && !before(prev.value, prev.index, v, c)) continue;  // picked already
          if (before(v, c, best.value, best.index)) {
            best.value = v;
            best.index = c;
          }
        }
        best = Tile::all_reduce(best, First(), scratch);
        if (t == 0) write(p, row, j, best.index);
        prev = best;
      }
    }
  }
};

}  // namespace reduction
}  // namespace mc

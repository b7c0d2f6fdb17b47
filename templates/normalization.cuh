// templates/normalization.cuh — LayerNormalization and InstanceNormalization: normalize each row
// to zero mean and unit variance over its columns, then scale and shift.
//
// LayerNormalization: rows = the dims before `axis`, columns = the dims from `axis` on; Scale and
// B broadcast over X (their maps have stride 0 where they repeat), so they usually depend on the
// column only. InstanceNormalization: rows = (N, C), columns = the spatial dims; scale and B depend
// on the row's channel (row map strides (0, 1)). One template serves both because every operand
// has its own (row, column) map.
//
// Numerics: two passes in FP32, mean first, then the mean of squared deviations (population
// variance), as the reference computes it in double, both relative to the row's first element:
// robust for large rows with large values (hidden 1024, |x| ~ 1e4), where E[x^2] - E[x]^2 would
// cancel catastrophically and a plain FP32 sum of a large common offset would lose the deviations.
// InvStdDev = 1 / sqrt(var + epsilon). A row that fits in a few registers per thread
// (kCols / kGroup <= kMaxCached) is read from memory once.
#pragma once

#include "reduce.cuh"

namespace mc {
namespace reduction {

/// \brief Y = (X - mean) * InvStdDev * Scale + B per row; optional per-row Mean and InvStdDev
/// outputs (Operand<stash type, rows> or Absent). B may be Absent.
template <class X, class Scale, class Bias, class Y, class MeanOut, class InvStdOut, class Tile, int kMaxCached = 16>
struct Normalize {
  using T = typename X::Elem;
  static_assert(Elem<T>::kFloat, "Normalize: floating storage only");
  static constexpr int kRows = X::Row::kSize;
  static constexpr int kCols = X::Col::kSize;
  static constexpr int kThreads = Tile::kThreads;
  static constexpr int kBlocks = (kRows + Tile::kRowsPerBlock - 1) / Tile::kRowsPerBlock;
  static constexpr int kPerThread = (kCols + Tile::kGroup - 1) / Tile::kGroup;
  static constexpr bool kCached = kPerThread <= kMaxCached;
  static_assert(Y::Row::kSize == kRows && Y::Col::kSize == kCols, "Normalize: X and Y disagree on the shape");
  static dim3 grid() { return dim3(kBlocks); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    const T* x = nullptr;                             ///< input
    const typename Scale::Elem* scale = nullptr;
    const typename Bias::Elem* bias = nullptr;        ///< null when Bias is Absent
    typename Y::Elem* y = nullptr;                    ///< output
    typename MeanOut::Elem* mean = nullptr;           ///< null when MeanOut is Absent
    typename InvStdOut::Elem* inv_std_dev = nullptr;  ///< null when InvStdOut is Absent
    float epsilon;
  };

  struct Plus {
    __device__ float operator()(float a, float b) const { return a + b; }
  };

  __device__ static void run(const Params& p) {
    __shared__ float scratch[Tile::kScratch];
    const int row = Tile::row();
    const bool active = row < kRows;
    const int lane = Tile::lane();
    const T* x = p.x + (active ? X::Row::offset(row) : 0);

    // Everything is computed relative to the row's first element (the pivot): a row with a large
    // common offset (x ~ 1e4 + small deviations) then sums small numbers, and x - pivot is exact
    // when x and the pivot are close. mean = pivot + shifted_mean.
    const float pivot = active && kCols > 0 ? Elem<T>::load(x[0]) : 0.0f;
    float cache[kCached && kPerThread > 0 ? kPerThread : 1];
    float sum = 0.0f;
    if constexpr (kCached) {
      MC_UNROLL
      for (int i = 0; i < kPerThread; ++i) {
        const int c = lane + i * Tile::kGroup;
        cache[i] = active && c < kCols ? Elem<T>::load(x[X::Col::offset(c)]) - pivot : 0.0f;
        sum += cache[i];
      }
    } else if (active) {
      for (int c = lane; c < kCols; c += Tile::kGroup) sum += Elem<T>::load(x[X::Col::offset(c)]) - pivot;
    }
    const float shifted_mean = Tile::all_reduce(sum, Plus(), scratch) / static_cast<float>(kCols);

    float sq = 0.0f;
    if (active) {
      if constexpr (kCached) {
        MC_UNROLL
        for (int i = 0; i < kPerThread; ++i) {
          const float d = cache[i] - shifted_mean;
          if (lane + i * Tile::kGroup < kCols) sq += d * d;
        }
      } else {
        for (int c = lane; c < kCols; c += Tile::kGroup) {
          const float d = (Elem<T>::load(x[X::Col::offset(c)]) - pivot) - shifted_mean;
          sq += d * d;
        }
      }
    }
    const float var = Tile::all_reduce(sq, Plus(), scratch) / static_cast<float>(kCols);
    if (!active) return;  // no barrier follows
    const float inv_std = 1.0f / sqrtf(var + p.epsilon);

    // shifted: x - pivot
    auto out = [&](float shifted, int c) {
      float r = (shifted - shifted_mean) * inv_std * Elem<typename Scale::Elem>::load(p.scale[Scale::offset(row, c)]);
      if constexpr (Bias::kPresent) r += Elem<typename Bias::Elem>::load(p.bias[Bias::offset(row, c)]);
      p.y[Y::offset(row, c)] = Elem<typename Y::Elem>::store(r);
    };
    if constexpr (kCached) {
      MC_UNROLL
      for (int i = 0; i < kPerThread; ++i) {
        const int c = lane + i * Tile::kGroup;
        if (c < kCols) out(cache[i], c);
      }
    } else {
      for (int c = lane; c < kCols; c += Tile::kGroup) out(Elem<T>::load(x[X::Col::offset(c)]) - pivot, c);
    }
    const float mean = pivot + shifted_mean;
    if (lane == 0) {
      if constexpr (MeanOut::kPresent) p.mean[MeanOut::offset(row, 0)] = Elem<typename MeanOut::Elem>::store(mean);
      if constexpr (InvStdOut::kPresent) {
        p.inv_std_dev[InvStdOut::offset(row, 0)] = Elem<typename InvStdOut::Elem>::store(inv_std);
      }
    }
  }
};

}  // namespace reduction
}  // namespace mc

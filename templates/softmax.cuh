// templates/softmax.cuh — Softmax and LogSoftmax along the columns of each row.
//
// Rows and columns are reduce.cuh's index model: for opset >= 13 the columns are the one `axis`
// dim and the rows every other dim (strided when the axis is not the innermost); before opset 13
// the input is coerced to 2-D at `axis`, so the columns are all dims from `axis` on. Numerically
// stable, as the reference: m = max (NaN ignored), s = sum(exp(x - m)), then
// y = exp(x - m) / s, or for LogSoftmax y = x - m - log(s). FP32 compute for any storage type.
// When a row fits in a few registers per thread (kCols / kGroup <= kMaxCached) it is read once;
// otherwise the passes re-read it (from L1/L2).
#pragma once

#include "reduce.cuh"

namespace mc {
namespace reduction {

/// \brief Y[row, :] = softmax (kLog: log-softmax) of X[row, :]. X, Y = Operand<T, rows, columns>.
template <bool kLog, class X, class Y, class Tile, int kMaxCached = 16>
struct Softmax {
  using T = typename X::Elem;
  static_assert(Elem<T>::kFloat, "Softmax: floating storage only");
  static constexpr int kRows = X::Row::kSize;
  static constexpr int kCols = X::Col::kSize;
  static constexpr int kThreads = Tile::kThreads;
  static constexpr int kBlocks = (kRows + Tile::kRowsPerBlock - 1) / Tile::kRowsPerBlock;
  static constexpr int kPerThread = (kCols + Tile::kGroup - 1) / Tile::kGroup;
  static constexpr bool kCached = kPerThread <= kMaxCached;
  static_assert(Y::Row::kSize == kRows && Y::Col::kSize == kCols, "Softmax: X and Y disagree on the shape");
  static dim3 grid() { return dim3(kBlocks); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    const T* x = nullptr;           ///< input
    typename Y::Elem* y = nullptr;  ///< output
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
    typename Y::Elem* y = p.y + (active ? Y::Row::offset(row) : 0);

    float cache[kCached && kPerThread > 0 ? kPerThread : 1];
    float m = -INFINITY;
    if constexpr (kCached) {
      MC_UNROLL
      for (int i = 0; i < kPerThread; ++i) {
        const int c = lane + i * Tile::kGroup;
        cache[i] = active && c < kCols ? Elem<T>::load(x[X::Col::offset(c)]) : -INFINITY;
        m = MaxIgnoringNaN<float>()(m, cache[i]);
      }
    } else if (active) {
      for (int c = lane; c < kCols; c += Tile::kGroup) m = MaxIgnoringNaN<float>()(m, Elem<T>::load(x[X::Col::offset(c)]));
    }
    m = Tile::all_reduce(m, MaxIgnoringNaN<float>(), scratch);

    float s = 0.0f;
    if (active) {
      if constexpr (kCached) {
        MC_UNROLL
        for (int i = 0; i < kPerThread; ++i) {
          if (lane + i * Tile::kGroup < kCols) s += expf(cache[i] - m);
        }
      } else {
        for (int c = lane; c < kCols; c += Tile::kGroup) s += expf(Elem<T>::load(x[X::Col::offset(c)]) - m);
      }
    }
    s = Tile::all_reduce(s, Plus(), scratch);
    if (!active) return;  // no barrier follows

    const float log_s = kLog ? logf(s) : 0.0f;
    auto out = [&](float v) { return kLog ? v - m - log_s : expf(v - m) / s; };
    if constexpr (kCached) {
      MC_UNROLL
      for (int i = 0; i < kPerThread; ++i) {
        const int c = lane + i * Tile::kGroup;
        if (c < kCols) y[Y::Col::offset(c)] = Elem<typename Y::Elem>::store(out(cache[i]));
      }
    } else {
      for (int c = lane; c < kCols; c += Tile::kGroup) {
        y[Y::Col::offset(c)] = Elem<typename Y::Elem>::store(out(Elem<T>::load(x[X::Col::offset(c)])));
      }
    }
  }
};

}  // namespace reduction
}  // namespace mc

// examples/plugins/example_ops/row_median.cuh: com.example.RowMedian, a custom operator with a
// workspace (docs/PLUGINS.md).
//
//   y[r] = the lower median of row r of x (rows along the last axis): sorted(row)[(n - 1) / 2]
//
// One block per row. The block copies its row (as float) into its part of the workspace, which
// modelc allocates in the arena as the manifest asks (numel(x) * 4 bytes, uninitialized) because a
// row may be longer than shared memory holds, sorts it there with an odd-even transposition sort
// (n phases of compare-exchanges between neighbours, a barrier after each), and thread 0 writes
// the middle element. Rows are expected to hold no NaN (their order would be unspecified).
#pragma once

#include "plugin.cuh"

namespace example {

template <class X, class Y>
struct RowMedian {
  using T = typename X::Elem;
  static constexpr int64_t kCols = X::dim(X::kRank - 1);
  static constexpr int64_t kRows = X::kNumel / kCols;
  static_assert(Y::kNumel == kRows, "RowMedian: one output per row");

  static constexpr int kThreads = 128;

  struct Params {
    const T* x = nullptr;
    T* y = nullptr;
    void* workspace = nullptr;  // kRows x kCols floats
  };

  static dim3 grid() { return dim3(static_cast<unsigned>(kRows)); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    const int64_t row = blockIdx.x;
    const int t = static_cast<int>(threadIdx.x);
    float* w = static_cast<float*>(p.workspace) + row * kCols;
    for (int64_t c = t; c < kCols; c += kThreads) w[c] = mc::plugin::load(p.x[row * kCols + c]);
    __syncthreads();
    for (int64_t phase = 0; phase < kCols; ++phase) {
      for (int64_t i = 2 * t + (phase & 1); i + 1 < kCols; i += 2 * kThreads) {
        const float a = w[i], b = w[i + 1];
        if (b < a) {
          w[i] = b;
          w[i + 1] = a;
        }
      }
      __syncthreads();
    }
    if (t == 0) p.y[row] = mc::plugin::store<T>(w[(kCols - 1) / 2]);
  }
};

}  // namespace example

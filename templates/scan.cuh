// templates/scan.cuh — scans (namespace mc::scan; compiler/ops/trilu_cumsum.cpp and
// ops/indexing.cpp, the printers: codegen/families/scan.cpp): CumSum, the running sums along an
// axis, and NonZero, the coordinates of the non-zero elements (a stream compaction).
#pragma once

#include "tensor_index.cuh"

namespace mc::scan {

/// \brief CumSum over X = [Outer..., Len, Inner...]: one thread per line along the axis, summing
/// in order (kReverse: from the end) in the compute type (FP32 for float types, wrapping int64 for
/// integers), each running sum rounded once at its store; kExclusive stores the sum before the
/// element. The lines' (outer, inner) pairs are consecutive threads along Inner, so the loads of a
/// warp are coalesced where Inner is the contiguous dim.
template <class T, bool kExclusive, bool kReverse, class Outer, class XOuterStrides, class YOuterStrides, int64_t Len,
          int64_t XLenStride, int64_t YLenStride, class Inner, class XInnerStrides, class YInnerStrides>
struct CumSum {
  using Index = int64_t;
  using C = ix::compute_t<T>;
  static constexpr int64_t kLines = Outer::numel * Inner::numel;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(kLines)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
  };
  static __device__ __forceinline__ C add(C a, C b) {
    if constexpr (std::is_same_v<C, int64_t>) {
      return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    } else {
      return a + b;
    }
  }
  static __device__ void run(const Params& p) {
    for (Index l = ix::first_index<Index>(); l < kLines; l += ix::grid_stride<Index>()) {
      const int64_t o = l / Inner::numel, n = l % Inner::numel;
      const int64_t xb = ix::offset<Outer, XOuterStrides>(o) + ix::offset<Inner, XInnerStrides>(n);
      const int64_t yb = ix::offset<Outer, YOuterStrides>(o) + ix::offset<Inner, YInnerStrides>(n);
      C acc = C(0);
      for (int64_t t = 0; t < Len; ++t) {
        const int64_t j = kReverse ? Len - 1 - t : t;
        const C v = ix::load<T>(p.x, xb + j * XLenStride);
        if constexpr (kExclusive) {
          ix::store<T>(p.y, yb + j * YLenStride, acc);
          acc = add(acc, v);
        } else {
          acc = add(acc, v);
          ix::store<T>(p.y, yb + j * YLenStride, acc);
        }
      }
    }
  }
};

/// \brief NonZero with its static bound (compiler/ops/indexing.h nonzero_bounded): Y is int64
/// [rank, N], N = X's element count. Column c < count holds the coordinates of the c-th non-zero
/// element of X in row-major order; every later column holds -1. One block: each thread counts the
/// non-zero elements of its chunk of X (consecutive elements), the chunks' offsets are the prefix
/// sums of the counts (through shared memory), and each thread writes its chunk's coordinates from
/// its offset, so the order is the row-major one. NaN is non-zero, as in the reference.
template <class T, class Shape, class XStrides, int64_t YRowStride, int64_t YColStride>
struct NonZero {
  static constexpr int kThreads = ix::kBlock;
  static constexpr int64_t kN = Shape::numel;
  static constexpr int64_t kChunk = (kN + kThreads - 1) / kThreads;
  static dim3 grid() { return dim3(1); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    int64_t* y = nullptr;
    const void* x = nullptr;
  };
  static __device__ __forceinline__ bool nonzero(const Params& p, int64_t e) {
    return ix::load<T>(p.x, ix::offset<Shape, XStrides>(e)) != ix::compute_t<T>(0);
  }
  static __device__ void run(const Params& p) {
    __shared__ int64_t counts[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    const int64_t lo = t * kChunk, hi = lo + kChunk < kN ? lo + kChunk : kN;
    int64_t c = 0;
    for (int64_t e = lo; e < hi; ++e) c += nonzero(p, e) ? 1 : 0;
    mc::st_shared(&counts[t], c);
    __syncthreads();
    int64_t at = 0, total = 0;
    for (int u = 0; u < kThreads; ++u) {
      const int64_t cu = mc::ld_shared(&counts[u]);
      at += u < t ? cu : 0;
      total += cu;
    }
    for (int64_t e = lo; e < hi; ++e) {
      if (!nonzero(p, e)) continue;
      MC_UNROLL
      for (int d = 0; d < Shape::rank; ++d) {
        p.y[d * YRowStride + at * YColStride] = (e / ix::inner_size<Shape>(d)) % Shape::at(d);
      }
      ++at;
    }
    for (int64_t col = total + t; col < kN; col += kThreads) {
      MC_UNROLL
      for (int d = 0; d < Shape::rank; ++d) p.y[d * YRowStride + col * YColStride] = -1;
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) scan_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::scan

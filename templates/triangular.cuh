// templates/triangular.cuh — Trilu (namespace mc::tri; compiler/ops/trilu_cumsum.cpp, the printer:
// codegen/families/trilu.cpp): the upper or lower triangle of the last two dims, from diagonal k,
// copied as raw bits; every other element is 0 (all-zero bits: 0 of every type).
//
// k is known at emit time (Params::k) or read at run time from the node's 'k' input
// (Params::k_input, when not null): causal masks built from a shape have a constant k.
#pragma once

#include "tensor_index.cuh"

namespace mc::tri {

/// \brief y[..., i, j] = keep(i, j) ? x[..., i, j] : 0 over Shape (rank >= 2), keep = j - i >= k
/// (kUpper) or j - i <= k. T: raw bits of the element size.
template <class T, bool kUpper, class Shape, class YStrides, class XStrides>
struct Trilu {
  static_assert(Shape::rank >= 2, "Trilu: rank >= 2");
  using Index = ix::index_t<Shape, YStrides, XStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
    int64_t k = 0;                       ///< the diagonal offset, when known at emit time
    const int64_t* k_input = nullptr;    ///< else the 'k' input (one element)
  };
  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    const int64_t k = p.k_input ? p.k_input[0] : p.k;
    for (Index e = ix::first_index<Index>(); e < static_cast<Index>(Shape::numel); e += ix::grid_stride<Index>()) {
      const int64_t i = ix::coord<Shape, Shape::rank - 2>(e), j = ix::coord<Shape, Shape::rank - 1>(e);
      const bool keep = kUpper ? j - i >= k : j - i <= k;
      y[ix::offset<Shape, YStrides>(e)] = keep ? x[ix::offset<Shape, XStrides>(e)] : T(0);
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) trilu_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::tri

// templates/resize.cuh — Resize / Upsample (namespace mc::dm): nearest, N-linear and cubic
// interpolation through tap tables computed at emit time.
//
// The interpolation is separable: along each resized dim an output coordinate reads a few input
// coordinates with weights (1 tap for nearest, 2 for linear, 4 for cubic). Codegen computes those
// taps with the reference's own rules (compiler/ops/resize.cpp: coordinate transformation,
// nearest rounding, cubic coefficients, exclude_outside, extrapolation) and emits them as a
// constant table; the kernel only multiplies and adds. The sum nests like the reference's
// axis-by-axis evaluation (dim 0 innermost).
//
// Table layout: for each resized dim d, Extent_d x Taps_d entries starting at TableStart_d, entry
// (j, t) the t-th tap of output coordinate j. An index of -1 is an unused tap; an index of -2 in
// the first tap marks a coordinate outside the crop box (tf_crop_and_resize): the output element
// is then the extrapolation value.
#pragma once

#include "tensor_index.cuh"

namespace mc::dm {

/// \brief One interpolation tap: input coordinate and weight.
template <class W>
struct Tap {
  int32_t index;
  W weight;
};

/// \brief Y = resize(X). Table is a struct with `static __device__ const Tap<Acc>* taps()`. Acc
/// is the accumulation type (float for float data, double for integer data, so that integer
/// results truncate as the reference's do). Taps_d is 0 for a dim that is not resized (copied).
template <class T, class Acc, class Table, class YShape, class YStrides, class XStrides, class Taps, class TableStart>
struct Resize {
  static constexpr int R = YShape::rank;
  using Index = ix::index_t<YShape, YStrides>;
  using Offset = int64_t;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(YShape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
    Acc extrapolation = 0;  ///< the value outside the crop box (tf_crop_and_resize)
  };

  // Sum over the taps of dims 0..D at the source offset `base` of dims D+1.. (dim D outermost).
  template <int D>
  static __device__ __forceinline__ Acc sample(const void* x, const Index (&c)[R > 0 ? R : 1], Offset base) {
    if constexpr (D < 0) {
      return static_cast<Acc>(ix::load<T>(x, base));
    } else {
      constexpr Offset stride = XStrides::at(D);
      constexpr int taps = static_cast<int>(Taps::at(D));
      if constexpr (taps == 0) {
        return sample<D - 1>(x, c, base + static_cast<Offset>(c[D]) * stride);
      } else {
        const Tap<Acc>* t = Table::taps() + TableStart::at(D) + static_cast<Offset>(c[D]) * taps;
        Acc acc = 0;
        MC_UNROLL
        for (int k = 0; k < taps; ++k) {
          if (t[k].index >= 0)
            acc += t[k].weight * sample<D - 1>(x, c, base + static_cast<Offset>(t[k].index) * stride);
        }
        return acc;
      }
    }
  }

  template <int D>
  static __device__ __forceinline__ void coords(Index i, Index (&c)[R > 0 ? R : 1], bool& outside) {
    if constexpr (D < R) {
      c[D] = ix::coord<YShape, D>(i);
      if constexpr (Taps::at(D) > 0) {
        outside = outside || Table::taps()[TableStart::at(D) + static_cast<Offset>(c[D]) * Taps::at(D)].index == -2;
      }
      coords<D + 1>(i, c, outside);
    }
  }

  static __device__ void run(const Params& p) {
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(YShape::numel); i += ix::grid_stride<Index>()) {
      Index c[R > 0 ? R : 1] = {};
      bool outside = false;
      coords<0>(i, c, outside);
      const Acc v = outside ? p.extrapolation : sample<R - 1>(p.x, c, 0);
      ix::store<T>(p.y, ix::offset<YShape, YStrides>(i), v);
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) resize_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::dm

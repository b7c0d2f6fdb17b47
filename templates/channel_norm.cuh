// templates/channel_norm.cuh — LRN (namespace mc::norm): each element divided by a power of the
// sum of squares of its channel neighbours. GroupNormalization runs on normalization.cuh's
// Normalize (rows = (N, group), columns = the group's channels and the instance dims): see
// codegen/families/groupnorm.cpp.
//
// One thread per output element (grid-stride loop). X and Y are strided views of X's shape
// [N, C, D1, ...]: any layout, channels-last included, is read and written in place. The sum and
// the power are FP32 whatever the storage.
#pragma once

#include "tensor_index.cuh"

namespace mc::norm {

/// \brief y[n, c, d] = x[n, c, d] / (bias + alpha / size * sum_{j = c - Before}^{c + After} x[n, j, d]^2)^beta,
/// j clipped to [0, C). Shape is X's [N, C, D1, ...], XStrides / YStrides its strides in x and y; TX and
/// TY the stored types (a boundary Cast folds in).
template <class TX, class TY, class Shape, class XStrides, class YStrides, int Before, int After>
struct Lrn {
  static_assert(Shape::rank >= 2, "Lrn: the shape is [N, C, D1, ...]");
  static constexpr int64_t kC = Shape::at(1);
  static constexpr int64_t kXc = XStrides::at(1);
  using Index = ix::index_t<Shape, XStrides, YStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    const void* x = nullptr;
    void* y = nullptr;
    float alpha_over_size = 0;  ///< alpha / size
    float beta = 0.75f;
    float bias = 1.0f;
  };
  static __device__ void run(const Params& p) {
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(Shape::numel); i += ix::grid_stride<Index>()) {
      const Index c = ix::coord<Shape, 1>(i);
      const Index xo = ix::offset<Shape, XStrides>(i);
      const Index lo = c - Before < 0 ? 0 : c - Before;
      const Index hi = c + After > kC - 1 ? static_cast<Index>(kC - 1) : c + After;
      float sq = 0.0f;
      for (Index j = lo; j <= hi; ++j) {
        const float v = ix::load<TX>(p.x, xo + (j - c) * static_cast<Index>(kXc));
        sq += v * v;
      }
      const float x = ix::load<TX>(p.x, xo);
      const float d = p.bias + p.alpha_over_size * sq;
      ix::store<TY>(p.y, ix::offset<Shape, YStrides>(i), x / powf(d, p.beta));
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) lrn_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::norm

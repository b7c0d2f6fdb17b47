// templates/data_movement.cuh — copies that rearrange elements (namespace mc::dm): a strided copy
// (Transpose, Slice, Expand, Tile, DepthToSpace/SpaceToDepth, and Concat/Split one part per
// launch), Pad and Gather.
//
// Elements are moved as raw bits of their size (uint8_t, uint16_t, uint32_t, uint64_t), so every
// dtype is copied bit for bit. Codegen reduces each op to the index math here at emit time: a
// Transpose is a copy whose source strides are permuted, a Slice one with an offset pointer and
// stepped (possibly negative) strides, an Expand one with zero strides, a Tile one over a shape of
// twice the rank ([repeat, length] per dim), DepthToSpace one over six dims.
#pragma once

#include "tensor_index.cuh"

namespace mc::dm {

/// \brief y[i] = x[i] over Shape: element i at offset(i, YStrides) in y and offset(i, XStrides) in x.
template <class T, class Shape, class YStrides, class XStrides>
struct Copy {
  using Index = ix::index_t<Shape, YStrides, XStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
  };
  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(Shape::numel); i += ix::grid_stride<Index>()) {
      y[ix::offset<Shape, YStrides>(i)] = x[ix::offset<Shape, XStrides>(i)];
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) copy_kernel(const typename K::Params p) {
  K::run(p);
}

/// \brief A copy whose reads and writes are contiguous along different dims: x along dim P, y along
/// dim Q (Transpose of the inner dims, NCHW <-> NHWC). 32 x 32 tiles go through shared memory so
/// that both are coalesced; the other dims are a batch (Batch, with their strides in y and x).
/// A block of 256 threads (32 x 8) copies one tile at a time, looping over the tiles.
template <class T, class Batch, class YBatchStrides, class XBatchStrides, int64_t P, int64_t Q, int64_t YStrideP,
          int64_t YStrideQ, int64_t XStrideP, int64_t XStrideQ>
struct TiledCopy {
  static constexpr int kTile = 32;
  static constexpr int kRows = ix::kBlock / kTile;
  static constexpr int64_t tiles_p = (P + kTile - 1) / kTile, tiles_q = (Q + kTile - 1) / kTile;
  static constexpr int64_t tiles = Batch::numel * tiles_p * tiles_q;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(static_cast<unsigned>(tiles < ix::kMaxBlocks ? tiles : ix::kMaxBlocks)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
  };
  static __device__ void run(const Params& p) {
    __shared__ T tile[kTile][kTile + 1];  // +1: the column reads hit different banks
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    const int tx = static_cast<int>(threadIdx.x) % kTile, ty = static_cast<int>(threadIdx.x) / kTile;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      const int64_t p0 = t / tiles_q % tiles_p * kTile, q0 = t % tiles_q * kTile, b = t / (tiles_q * tiles_p);
      const int64_t xb = ix::offset<Batch, XBatchStrides>(b), yb = ix::offset<Batch, YBatchStrides>(b);
      for (int k = ty; k < kTile; k += kRows) {  // read along P: tile[q][p]
        if (p0 + tx < P && q0 + k < Q) tile[k][tx] = x[xb + (p0 + tx) * XStrideP + (q0 + k) * XStrideQ];
      }
      __syncthreads();
      for (int k = ty; k < kTile; k += kRows) {  // write along Q
        if (p0 + k < P && q0 + tx < Q) y[yb + (p0 + k) * YStrideP + (q0 + tx) * YStrideQ] = tile[tx][k];
      }
      __syncthreads();
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) tiled_copy_kernel(const typename K::Params p) {
  K::run(p);
}

// ---- Pad ---------------------------------------------------------------------------------------

enum class PadMode : int { constant = 0, edge = 1, reflect = 2, wrap = 3 };

/// \brief Pad (negative pads crop first; the modes then work on the kept range), as the reference:
/// along each dim d, output coordinate o maps to j = o - max(Begin_d, 0) in the kept range
/// [Lo_d, Lo_d + Kept_d) of the input; outside it, `constant` writes the fill value, `edge` repeats
/// the edge, `reflect` mirrors without repeating the edge, `wrap` repeats the range.
template <class T, PadMode Mode, class Shape, class YStrides, class XStrides, class Lo, class Kept, class Begin>
struct Pad {
  using Index = ix::index_t<Shape, YStrides, XStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
    const void* fill = nullptr;  ///< the fill value (constant mode) as a one-element tensor, or null for fill_bits
    T fill_bits = 0;             ///< the fill value's bits when it is known at emit time
  };

  /// Input coordinate of output coordinate o along dim D, or -1 for the fill value.
  template <int D>
  static __device__ __forceinline__ Index source(Index o) {
    constexpr Index lo = static_cast<Index>(Lo::at(D)), m = static_cast<Index>(Kept::at(D));
    constexpr Index begin = static_cast<Index>(Begin::at(D) > 0 ? Begin::at(D) : 0);
    const Index j = o - begin;
    if (j >= 0 && j < m) return lo + j;
    if constexpr (Mode == PadMode::constant) {
      return -1;
    } else if constexpr (Mode == PadMode::edge) {
      return lo + (j < 0 ? 0 : m - 1);
    } else if constexpr (Mode == PadMode::wrap) {
      return lo + ((j % m) + m) % m;
    } else {  // reflect: the pattern has period 2(m - 1)
      if constexpr (m == 1) {
        return lo;
      } else {
        constexpr Index period = 2 * (m - 1);
        Index r = ((j % period) + period) % period;
        if (r >= m) r = period - r;
        return lo + r;
      }
    }
  }

  /// Offset in x of output element i over dims D..rank-1 (accumulated in `at`); false for the fill.
  template <int D>
  static __device__ __forceinline__ bool source_offset(Index i, Index& at) {
    if constexpr (D == Shape::rank) {
      return true;
    } else {
      const Index s = source<D>(ix::coord<Shape, D>(i));
      if (s < 0) return false;
      at += s * static_cast<Index>(XStrides::at(D));
      return source_offset<D + 1>(i, at);
    }
  }

  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    const T fill = p.fill ? *static_cast<const T*>(p.fill) : p.fill_bits;
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(Shape::numel); i += ix::grid_stride<Index>()) {
      Index at = 0;
      y[ix::offset<Shape, YStrides>(i)] = source_offset<0>(i, at) ? x[at] : fill;
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) pad_kernel(const typename K::Params p) {
  K::run(p);
}

// ---- Gather ------------------------------------------------------------------------------------

/// \brief Gather along an axis: the output is [Outer..., Indices..., Inner...] and
/// y[o, k, n] = x[o, indices[k], n], where x is [Outer..., AxisLen, Inner...]. Negative indices
/// count from the end; an index out of range (an error in the reference) gives zeros here.
/// I is the indices' element type (int32_t or int64_t).
template <class T, class I, class Outer, class XOuterStrides, int64_t AxisLen, int64_t XAxisStride, class Inner,
          class XInnerStrides, class Indices, class IndicesStrides, class YShape, class YStrides>
struct Gather {
  using Index = ix::index_t<YShape, YStrides>;
  using Offset = int64_t;  // the source offset: x may be larger than y
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(YShape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  static_assert(Outer::numel * Indices::numel * Inner::numel == YShape::numel, "Gather: shapes disagree");
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
    const void* indices = nullptr;
  };
  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    const I* indices = static_cast<const I*>(p.indices);
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(YShape::numel); i += ix::grid_stride<Index>()) {
      const Offset n = static_cast<Offset>(i) % Inner::numel;
      const Offset k = static_cast<Offset>(i) / Inner::numel % Indices::numel;
      const Offset o = static_cast<Offset>(i) / (Inner::numel * Indices::numel);
      Offset at = static_cast<Offset>(indices[ix::offset<Indices, IndicesStrides>(k)]);
      if (at < 0) at += AxisLen;
      const bool valid = at >= 0 && at < AxisLen;
      const Offset src = ix::offset<Outer, XOuterStrides>(o) + at * XAxisStride + ix::offset<Inner, XInnerStrides>(n);
      y[ix::offset<YShape, YStrides>(i)] = valid ? x[src] : T(0);
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) gather_kernel(const typename K::Params p) {
  K::run(p);
}

}  // namespace mc::dm

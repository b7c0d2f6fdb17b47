// templates/gather_scatter.cuh — gathers and scatters by index tensors read at run time
// (namespace mc::gs): GatherElements, GatherND, ScatterElements, ScatterND and OneHot
// (compiler/ops/indexing.cpp; the printers: codegen/families/gather_scatter.cpp).
//
// Shapes and strides are compile-time Dims (tensor_index.cuh); every operand is a strided view, so
// a kernel reads its inputs where they lie. Indices are int32_t or int64_t (OneHot's may be any
// numeric type); a negative index counts from the end of its axis. An index out of range, an Error
// in the reference interpreter, reads zeros in a gather and is skipped by a scatter (a kernel
// cannot report it, and must not read or write out of bounds).
//
// A scatter is two launches: the data copied into Y (mc::dm::Copy), then the updates written into
// Y. Updates that may land on the same element are applied by one thread, in index order, so the
// result is deterministic and the reference's, whatever the reduction: a ScatterElements thread
// takes one line of updates along the axis (only those can collide), a ScatterND thread with a
// reduction one element of the slice over every index row (without a reduction every update is
// its own thread: ONNX leaves duplicate indices undefined there).
//
// Emitted use (gather_elements, axis 1, indices [2, 2] of data [2, 3]):
//   using m_k4_t = mc::gs::GatherElements<uint32_t, int64_t, mc::ix::Dims<2, 2>, mc::ix::Dims<2, 1>,
//                                         mc::ix::Dims<2, 1>, mc::ix::Dims<3, 0>, 3, 1>;
//   m_k4_t::Params p{};  p.y = ...;  p.x = ...;  p.indices = ...;
#pragma once

#include "tensor_index.cuh"

namespace mc::gs {

/// \brief An index into an axis of length `len`, negative ones counted from the end; -1 when out
/// of range.
template <class I>
__device__ __forceinline__ int64_t wrap_index(I raw, int64_t len) {
  int64_t at = static_cast<int64_t>(raw);
  if (at < 0) at += len;
  return at >= 0 && at < len ? at : -1;
}

/// \brief How a scatter combines an update u with the value in place y (the reduction names of
/// compiler/ops/indexing.h): Y's compute type (float, int64_t, bool; raw bits for none).
enum class Reduce { none, add, mul, max, min };

template <Reduce R, class C>
__device__ __forceinline__ C combine(C y, C u) {
  if constexpr (R == Reduce::none) {
    return u;
  } else if constexpr (std::is_same_v<C, int64_t>) {  // wrapping, as the reference
    const uint64_t a = static_cast<uint64_t>(y), b = static_cast<uint64_t>(u);
    if constexpr (R == Reduce::add) return static_cast<int64_t>(a + b);
    if constexpr (R == Reduce::mul) return static_cast<int64_t>(a * b);
    if constexpr (R == Reduce::max) return y < u ? u : y;
    if constexpr (R == Reduce::min) return u < y ? u : y;
  } else if constexpr (std::is_same_v<C, bool>) {
    if constexpr (R == Reduce::add || R == Reduce::max) return y || u;
    if constexpr (R == Reduce::mul || R == Reduce::min) return y && u;
  } else {
    if constexpr (R == Reduce::add) return y + u;
    if constexpr (R == Reduce::mul) return y * u;
    // NaN propagates (numpy's maximum / minimum, the reference's).
    if constexpr (R == Reduce::max) return (y != y || u != u) ? y + u : (y < u ? u : y);
    if constexpr (R == Reduce::min) return (y != y || u != u) ? y + u : (u < y ? u : y);
  }
}

// ---- GatherElements ------------------------------------------------------------------------------

/// \brief y[i] = x[i with its coordinate along the axis replaced by indices[i]] over Shape (the
/// indices' shape, Y's). XStrides are X's strides with 0 on the axis, which adds at * XAxisStride.
/// T: raw bits of the element size.
template <class T, class I, class Shape, class YStrides, class IStrides, class XStrides, int64_t AxisLen,
          int64_t XAxisStride>
struct GatherElements {
  using Index = ix::index_t<Shape, YStrides, IStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
    const void* indices = nullptr;
  };
  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    const I* indices = static_cast<const I*>(p.indices);
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(Shape::numel); i += ix::grid_stride<Index>()) {
      const int64_t at = wrap_index(indices[ix::offset<Shape, IStrides>(i)], AxisLen);
      const int64_t src = ix::offset<Shape, XStrides>(static_cast<int64_t>(i)) + at * XAxisStride;
      y[ix::offset<Shape, YStrides>(i)] = at >= 0 ? x[src] : T(0);
    }
  }
};

// ---- GatherND ------------------------------------------------------------------------------------

/// \brief GatherND: Y is [Rows..., Inner...] (Rows: indices' shape without its last dim, K). Row r
/// reads the slice of X at base(r) + sum_j wrap(indices[r, j], KDims[j]) * KXStrides[j], where
/// base(r) walks X's batch dims (RowXStrides: X's strides on the batch dims, 0 on the others).
template <class T, class Rows, class RowXStrides, class RowIStrides, int K, int64_t IKStride, class KDims,
          class KXStrides, class Inner, class InnerXStrides, class YShape, class YStrides>
struct GatherND {
  using Index = ix::index_t<YShape, YStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(YShape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  static_assert(Rows::numel * Inner::numel == YShape::numel, "GatherND: shapes disagree");
  struct Params {
    void* y = nullptr;
    const void* x = nullptr;
    const int64_t* indices = nullptr;
  };
  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* x = static_cast<const T*>(p.x);
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(YShape::numel); i += ix::grid_stride<Index>()) {
      const int64_t r = static_cast<int64_t>(i) / Inner::numel, s = static_cast<int64_t>(i) % Inner::numel;
      int64_t src = ix::offset<Rows, RowXStrides>(r);
      const int64_t ib = ix::offset<Rows, RowIStrides>(r);
      bool valid = true;
      MC_UNROLL
      for (int j = 0; j < K; ++j) {
        const int64_t at = wrap_index(p.indices[ib + j * IKStride], KDims::at(j));
        valid = valid && at >= 0;
        src += at * KXStrides::at(j);
      }
      y[ix::offset<YShape, YStrides>(i)] = valid ? x[src + ix::offset<Inner, InnerXStrides>(s)] : T(0);
    }
  }
};

template <class K>
__global__ void __launch_bounds__(K::kThreads) gather_scatter_kernel(const typename K::Params p) {
  K::run(p);
}

// ---- ScatterElements -----------------------------------------------------------------------------

/// \brief The second launch of ScatterElements (Y already holds the data): each thread takes one
/// line of the updates along the axis (Lines: the updates' shape without the axis; the strides of
/// U, I and Y over it) and applies its AxisLen updates in order: Y[line, wrap(indices[line, j])] =
/// R(Y[...], U[line, j]). T: the element type (raw bits for Reduce::none).
template <class T, class I, Reduce R, class Lines, class UStrides, class IStrides, class YStrides, int64_t AxisLen,
          int64_t UAxisStride, int64_t IAxisStride, int64_t YAxisLen, int64_t YAxisStride>
struct ScatterElements {
  using Index = int64_t;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(Lines::numel)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* updates = nullptr;
    const void* indices = nullptr;
  };
  static __device__ void run(const Params& p) {
    const I* indices = static_cast<const I*>(p.indices);
    for (Index l = ix::first_index<Index>(); l < Lines::numel; l += ix::grid_stride<Index>()) {
      const int64_t ub = ix::offset<Lines, UStrides>(l), ib = ix::offset<Lines, IStrides>(l);
      const int64_t yb = ix::offset<Lines, YStrides>(l);
      for (int64_t j = 0; j < AxisLen; ++j) {
        const int64_t at = wrap_index(indices[ib + j * IAxisStride], YAxisLen);
        if (at < 0) continue;
        const int64_t dst = yb + at * YAxisStride;
        ix::store<T>(p.y, dst, combine<R>(ix::load<T>(p.y, dst), ix::load<T>(p.updates, ub + j * UAxisStride)));
      }
    }
  }
};

// ---- ScatterND -----------------------------------------------------------------------------------

/// \brief The second launch of ScatterND (Y already holds the data): index row r (Rows: indices'
/// shape without its last dim, K) names the slice of Y at sum_j wrap(indices[r, j], KDims[j]) *
/// KYStrides[j]; the updates' element (r, s) goes to element s of that slice (Slice: Y's dims from
/// K on). Without a reduction a thread per (r, s); with one a thread per s, over every row in order.
template <class T, Reduce R, class Rows, class RowUStrides, class RowIStrides, int K, int64_t IKStride, class KDims,
          class KYStrides, class Slice, class SliceUStrides, class SliceYStrides>
struct ScatterND {
  using Index = int64_t;
  static constexpr bool kSerialRows = R != Reduce::none;
  static constexpr int64_t kWork = kSerialRows ? Slice::numel : Rows::numel * Slice::numel;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(kWork)); }
  static dim3 block() { return dim3(kThreads); }
  struct Params {
    void* y = nullptr;
    const void* updates = nullptr;
    const int64_t* indices = nullptr;
  };
  /// The offset in Y of row r's slice; -1 when an index is out of range.
  static __device__ __forceinline__ int64_t slice_of(const Params& p, int64_t r) {
    const int64_t ib = ix::offset<Rows, RowIStrides>(r);
    int64_t dst = 0;
    MC_UNROLL
    for (int j = 0; j < K; ++j) {
      const int64_t at = wrap_index(p.indices[ib + j * IKStride], KDims::at(j));
      if (at < 0) return -1;
      dst += at * KYStrides::at(j);
    }
    return dst;
  }
  static __device__ __forceinline__ void apply(const Params& p, int64_t r, int64_t s) {
    const int64_t base = slice_of(p, r);
    if (base < 0) return;
    const int64_t dst = base + ix::offset<Slice, SliceYStrides>(s);
    const int64_t src = ix::offset<Rows, RowUStrides>(r) + ix::offset<Slice, SliceUStrides>(s);
    ix::store<T>(p.y, dst, combine<R>(ix::load<T>(p.y, dst), ix::load<T>(p.updates, src)));
  }
  static __device__ void run(const Params& p) {
    for (Index w = ix::first_index<Index>(); w < kWork; w += ix::grid_stride<Index>()) {
      if constexpr (kSerialRows) {
        for (int64_t r = 0; r < Rows::numel; ++r) apply(p, r, w);
      } else {
        apply(p, w / Slice::numel, w % Slice::numel);
      }
    }
  }
};

// ---- OneHot --------------------------------------------------------------------------------------

/// \brief Y = [Outer..., Depth, Inner...] (indices: [Outer..., Inner...], IShape with IStrides):
/// y[o, d, n] = values[d == wrap(indices[o, n], Depth) ? 1 : 0]. I is the indices' element type
/// (any numeric type: a float index truncates toward zero); T raw bits of the values' type.
template <class T, class I, int64_t OuterN, int64_t Depth, int64_t InnerN, class IShape, class IStrides, class YShape,
          class YStrides, int64_t ValuesStride>
struct OneHot {
  using Index = ix::index_t<YShape, YStrides>;
  static constexpr int kThreads = ix::kBlock;
  static dim3 grid() { return dim3(ix::grid_for(YShape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  static_assert(OuterN * Depth * InnerN == YShape::numel && OuterN * InnerN == IShape::numel, "OneHot: shapes disagree");
  struct Params {
    void* y = nullptr;
    const void* indices = nullptr;
    const void* values = nullptr;
  };
  static __device__ void run(const Params& p) {
    T* y = static_cast<T*>(p.y);
    const T* values = static_cast<const T*>(p.values);
    const T off = values[0], on = values[ValuesStride];
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(YShape::numel); i += ix::grid_stride<Index>()) {
      const int64_t e = static_cast<int64_t>(i);
      const int64_t n = e % InnerN, d = e / InnerN % Depth, o = e / (InnerN * Depth);
      const int64_t k = ix::offset<IShape, IStrides>(o * InnerN + n);
      int64_t at = ix::convert<int64_t>(ix::load<I>(p.indices, k));
      if (at < 0) at += Depth;
      y[ix::offset<YShape, YStrides>(i)] = at == d ? on : off;
    }
  }
};

}  // namespace mc::gs

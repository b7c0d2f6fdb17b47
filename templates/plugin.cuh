// templates/plugin.cuh — what modelc gives a plugin's kernel (namespace mc::plugin;
// docs/PLUGINS.md): the tensor types it is instantiated with, element loads and stores, and
// launch-geometry helpers. A plugin header includes it first (`#include "plugin.cuh"`): the emitted
// folder finds it in kernels/, the reference run in modelc's templates/.
//
// modelc instantiates a plugin op's kernel template as
//   KERNEL<Tensor<T, dims...> for each input, Tensor<T, dims...> for each output, template_args...>
// and launches it like every template (codegen/launch.h): `Params` with one pointer per input
// (const T*) and output (T*) named as the manifest names them, one field per attribute, and
// `void* workspace` when the op asks for one; `kThreads`, `grid()`, `block()`, `run(const Params&)`.
// Every tensor is dense, C order (row-major), in the model's own layout.
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "device.h"

namespace mc {
namespace plugin {

/// \brief A dense tensor of element type T and compile-time dims (row-major).
template <class T, int64_t... Dims>
struct Tensor {
  using Elem = T;
  static constexpr int kRank = static_cast<int>(sizeof...(Dims));
  static constexpr int64_t kNumel = (int64_t{1} * ... * Dims);
  /// Dim d (0 <= d < kRank).
  __host__ __device__ static constexpr int64_t dim(int d) {
    constexpr int64_t v[] = {Dims..., 0};
    return v[d];
  }
  /// The element step of dim d: the product of the dims after it.
  __host__ __device__ static constexpr int64_t stride(int d) {
    int64_t s = 1;
    for (int k = d + 1; k < kRank; ++k) s *= dim(k);
    return s;
  }
  /// The element offset of an index (one per dim).
  template <class... I>
  __host__ __device__ static constexpr int64_t offset(I... index) {
    static_assert(sizeof...(I) == sizeof...(Dims), "mc::plugin::Tensor::offset: one index per dim");
    const int64_t idx[] = {static_cast<int64_t>(index)..., 0};
    int64_t o = 0;
    for (int d = 0; d < kRank; ++d) o = o * dim(d) + idx[d];
    return o;
  }
};

/// \brief The type a kernel computes an element type in: float for float and __half, else itself.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, __half>, float, T>;

/// An element as its compute type (a __half widens to float).
template <class T>
__device__ __forceinline__ Compute<T> load(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else {
    return v;
  }
}

/// A compute value stored as T (float -> __half rounds to nearest even).
template <class T, class V>
__device__ __forceinline__ T store(V v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

/// \brief Blocks of `threads` threads for `n` work items, one each, at most `max_blocks` (then a
/// grid-stride loop covers the rest); at least one.
__host__ __device__ constexpr unsigned blocks_for(int64_t n, int threads, int64_t max_blocks = 4096) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > max_blocks ? max_blocks : b));
}

/// This thread's index in the grid (x only) and the grid's thread count: a grid-stride loop is
///   for (int64_t i = thread_index(); i < n; i += thread_count())
__device__ __forceinline__ int64_t thread_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

/// \brief The element count of an array type (a Params field for a list attribute): what the
/// emitted code's static_assert checks against the node's list.
template <class A>
constexpr int64_t capacity() {
  static_assert(std::is_array_v<A>, "a list attribute's Params field must be an array, e.g. int64_t pads[8]");
  return static_cast<int64_t>(std::extent_v<A>);
}

}  // namespace plugin
}  // namespace mc

// examples/plugins/example_ops/scaled_softplus.cuh: com.example.ScaledSoftplus, an elementwise
// custom operator for modelc (docs/PLUGINS.md).
//
//   y = alpha * softplus(beta * x) / beta,   softplus(z) = log(1 + exp(z))
//
// softplus is computed as max(z, 0) + log1p(exp(-|z|)), which neither overflows for a large z nor
// loses the small values of a very negative one. float32 and float16 (computed in float).
#pragma once

#include "plugin.cuh"

namespace example {

/// X, Y: mc::plugin::Tensor<T, dims...> (the same dims: the manifest's shape rule says so).
template <class X, class Y>
struct ScaledSoftplus {
  using T = typename X::Elem;
  static_assert(X::kNumel == Y::kNumel, "ScaledSoftplus: y has x's shape");

  static constexpr int kThreads = 256;

  struct Params {
    const T* x = nullptr;  // the manifest's input "x"
    T* y = nullptr;        // its output "y"
    float alpha = 1.0f;    // its attributes
    float beta = 1.0f;
  };

  static dim3 grid() { return dim3(mc::plugin::blocks_for(Y::kNumel, kThreads)); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    for (int64_t i = mc::plugin::thread_index(); i < Y::kNumel; i += mc::plugin::thread_count()) {
      const float z = p.beta * mc::plugin::load(p.x[i]);
      const float softplus = fmaxf(z, 0.0f) + log1pf(expf(-fabsf(z)));
      p.y[i] = mc::plugin::store<T>(p.alpha * softplus / p.beta);
    }
  }
};

}  // namespace example

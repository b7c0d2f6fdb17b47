// tests/templates/narrow_float_test_util.h — what the tests of the 16-bit-float kernels share
// (attention_test, residual_norm_test, gemm_small_m_test): values of __half, mc::bf16 or float
// from and to double, and seeded random data rounded to the storage type (the references then read
// back exactly what the kernels read).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include "runtime_stub/device.h"

namespace narrow_float {

/// x rounded to T (__half, mc::bf16: to nearest even; float, double: a cast).
template <class T>
T to_t(double x) {
  if constexpr (std::is_same<T, __half>::value) {
    return __float2half(static_cast<float>(x));
  } else if constexpr (std::is_same<T, mc::bf16>::value) {
    return mc::bf16(static_cast<float>(x));
  } else {
    return static_cast<T>(x);
  }
}

/// The value of x (exact).
template <class T>
double to_d(T x) {
  return static_cast<double>(static_cast<float>(x));
}

/// n values uniform in [lo, hi) from rng, rounded to T.
template <class T>
std::vector<T> random_t(std::size_t n, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> r(n);
  for (T& x : r) x = to_t<T>(u(rng));
  return r;
}

/// The same from a generator seeded with `seed`, in [-scale, scale).
template <class T>
std::vector<T> random_t(std::size_t n, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  return random_t<T>(n, rng, -scale, scale);
}

/// The unit roundoff of storing in T: 2^-11 (FP16), 2^-8 (BF16), 0 (float, double: the tests treat
/// FP32 storage as exact).
template <class T>
double unit_roundoff() {
  return std::is_same<T, __half>::value ? 1.0 / 2048 : std::is_same<T, mc::bf16>::value ? 1.0 / 256 : 0.0;
}

}  // namespace narrow_float

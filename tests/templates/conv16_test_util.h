// tests/templates/conv16_test_util.h — what the tests of the 16-bit NHWC convolution templates
// (conv_depthwise_tiled_test, conv_grouped_test) share, on narrow_float_test_util.h's conversions:
// random data that the storage type holds exactly, NCHW tensors to channels-last buffers with a channel pitch (a fill value in the padded
// channels) and back (the padding checked untouched), and the check of a kernel's output against
// the reference within a bound derived from the arithmetic.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "linear_test_util.h"
#include "narrow_float_test_util.h"

namespace conv16_test {

using namespace modelc;
using linear_test::OneNode;

/// The storage dtype of T.
template <class T>
DType dtype_of() {
  if constexpr (std::is_same<T, __half>::value) return DType::float16;
  if constexpr (std::is_same<T, mc::bf16>::value) return DType::bfloat16;
  return DType::float32;
}

/// Random values in [-scale, scale) that T holds exactly, as a float32 tensor.
template <class T>
Tensor random_exact(Shape s, uint64_t seed, double scale = 1.0) {
  return linear_test::random_in(dtype_of<T>(), std::move(s), seed, scale);
}

/// NCHW tensor (N, C, spatial...) -> channels-last T with channel pitch `pitch`, `fill` in the padded
/// channels. A tensor of rank 1 or 2 (weights, bias) is converted as it is when pitch is 0.
template <class T>
std::vector<T> pitched(const Tensor& t, int64_t pitch, float fill = std::nanf("")) {
  const std::vector<double> v = t.to_f64();
  if (pitch == 0) {
    std::vector<T> r;
    for (double x : v) r.push_back(narrow_float::to_t<T>(static_cast<float>(x)));
    return r;
  }
  const Shape& s = t.shape();
  const int64_t N = s[0], C = s[1], P = num_elements(s) / (N * C);
  std::vector<T> r(static_cast<std::size_t>(N * P * pitch), narrow_float::to_t<T>(fill));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        r[static_cast<std::size_t>((n * P + p) * pitch + c)] =
            narrow_float::to_t<T>(static_cast<float>(v[static_cast<std::size_t>((n * C + c) * P + p)]));
  return r;
}

/// |t| element by element (the reference on |X| and |W| gives each output's sum of |w x|).
inline Tensor magnitudes(const Tensor& t) {
  std::vector<double> v = t.to_f64();
  for (double& x : v) x = std::abs(x);
  return Tensor::from_f64(DType::float32, t.shape(), v);
}

/// A 2-D Conv node's attributes: groups, a K x K window, stride S, dilation D, pads P on every side.
inline void set_conv_attrs(OneNode& t, int groups, int K, int S, int D, int P) {
  t.n->set_attr_int("group", groups);
  t.n->set_attr_ints("kernel_shape", {K, K});
  t.n->set_attr_ints("strides", {S, S});
  t.n->set_attr_ints("dilations", {D, D});
  t.n->set_attr_ints("pads", {P, P, P, P});
}

/// What an output buffer holds before the kernel runs: a value no output takes.
constexpr float kUntouched = 3072.0f;  // exact in __half and bf16

/// Channels-last T with pitch `pitch` -> NCHW floats; fails the test where a padded channel no
/// longer holds kUntouched (a kernel wrote past its channels).
template <class T>
std::vector<float> unpitched(const std::vector<T>& y, const Shape& nchw, int64_t pitch) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(static_cast<std::size_t>(N * C * P));
  int written = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < pitch; ++c) {
        const T& e = y[static_cast<std::size_t>((n * P + p) * pitch + c)];
        const float v = static_cast<float>(narrow_float::to_d(e));
        if (c < C) {
          r[static_cast<std::size_t>((n * C + c) * P + p)] = v;
        } else {
          written += v != kUntouched;
        }
      }
  CHECK_MESSAGE(written == 0, written << " padded channels of Y were written");
  return r;
}

/// got (the kernel's output, rounded to T) against want (the reference in double) element by
/// element: |got - want| <= round * |want| + sum_bound[i] * acc_rel + floor, where sum_bound is
/// the reference of the same product on |X| and |W| (the sum of the magnitudes of the terms, what
/// the accumulator's rounding error scales with), `round` the storage's rounding (half an ulp,
/// relative, plus the epilogue's float arithmetic), acc_rel the accumulator's error per unit of
/// magnitude. A NaN or an element in the wrong place fails.
inline void check_bound(const std::vector<float>& got, const Tensor& want, const Tensor& sum_bound, double round,
                        double acc_rel, double floor = 1e-6, const std::string& what = "") {
  const std::vector<double> w = want.to_f64(), b = sum_bound.to_f64();
  REQUIRE(got.size() == w.size());
  REQUIRE(b.size() == w.size());
  int bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double limit = round * std::abs(w[i]) + acc_rel * b[i] + floor;
    const double d = std::abs(static_cast<double>(got[i]) - w[i]);
    worst = std::max(worst, d / limit);
    if (!(d <= limit)) {
      if (++bad <= 5) {
        INFO(what << " element " << i << ": got " << got[i] << ", want " << w[i] << ", limit " << limit);
        CHECK(false);
      }
    }
  }
  INFO(what << ": worst error / limit " << worst);
  CHECK(bad == 0);
}

/// Half an ulp of T, relative (the rounding of a value stored as T; FP32 output: its own).
template <class T>
double storage_rounding() {
  return std::is_same<T, float>::value ? std::ldexp(1.0, -24) : narrow_float::unit_roundoff<T>();
}

}  // namespace conv16_test

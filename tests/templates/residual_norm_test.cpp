// templates/residual_norm.cuh on the host emulation: y = norm(x + bias + residual) * gamma + beta
// (LayerNorm and RMSNorm) against the same computed in double from the rounded inputs, over random
// row counts (odd ones), widths 64 / 200 / 384 / 768 / 1024, groups of 8, 16, 32 threads and of 64
// (a shared-memory reduction across warps), FP16 / BF16 / FP32 operands in mixed combinations,
// optional bias, residual, beta and pre-norm sum output, strided rows (gaps must stay untouched).
// Tolerance: Y's rounding (u |y|: 2^-11 FP16, 2^-8 BF16) plus 2^-17 (|y| + |gamma| + |beta|) for
// the FP32 sums and 2^-23 (|x| + |bias| + |r|) / std |gamma| for h's own FP32 rounding; the sum
// output: its rounding plus 2^-22 (|x| + |bias| + |r|).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "narrow_float_test_util.h"
#include "templates/residual_norm.cuh"

namespace {

using mc::resnorm::Cols;
using mc::resnorm::NoCols;
using mc::resnorm::NoRows;
using mc::resnorm::Norm;
using mc::resnorm::Rows;

using narrow_float::random_t;
using narrow_float::to_d;
using narrow_float::to_t;
template <class T>
double unit() {
  return narrow_float::unit_roundoff<T>();
}

/// Runs K = ResidualNorm<M, N, X, R, Bias, Gamma, Beta, Y, Sum, Tl, Kind> on random data against the
/// reference of RefKind; returns the number of wrong elements (Y and Sum) and of touched gaps.
template <int M, int N, class X, class R, class Bias, class Gamma, class Beta, class Y, class Sum, class Tl, Norm Kind,
          Norm RefKind = Kind>
int run_norm(uint64_t seed, double offset = 0.0) {
  using K = mc::resnorm::ResidualNorm<M, N, X, R, Bias, Gamma, Beta, Y, Sum, Tl, Kind>;
  std::mt19937_64 rng(seed);
  // x around `offset` (a large common offset tests the two-pass variance), the rest around 0.
  auto x = random_t<typename X::Elem>(static_cast<std::size_t>(M) * X::kLd, rng, offset - 2.0, offset + 2.0);
  auto r = random_t<typename R::Elem>(R::kPresent ? static_cast<std::size_t>(M) * R::kLd : 0, rng, -1.0, 1.0);
  auto bias = random_t<typename Bias::Elem>(Bias::kPresent ? N : 0, rng, -0.5, 0.5);
  auto gamma = random_t<typename Gamma::Elem>(N, rng, 0.5, 1.5);
  auto beta = random_t<typename Beta::Elem>(Beta::kPresent ? N : 0, rng, -0.5, 0.5);
  using TY = typename Y::Elem;
  using TS = typename Sum::Elem;
  std::vector<TY> y(static_cast<std::size_t>(M) * Y::kLd, to_t<TY>(NAN));
  std::vector<TS> sum(Sum::kPresent ? static_cast<std::size_t>(M) * Sum::kLd : 0, to_t<TS>(NAN));
  typename K::Params p{};
  p.x = x.data();
  if constexpr (R::kPresent) p.residual = r.data();
  if constexpr (Bias::kPresent) p.bias = bias.data();
  p.gamma = gamma.data();
  if constexpr (Beta::kPresent) p.beta = beta.data();
  p.y = y.data();
  if constexpr (Sum::kPresent) p.sum = sum.data();
  p.epsilon = 1e-5f;
  REQUIRE(mc::launch(mc::resnorm::kernel<K>, K::grid(), K::block(), 0, cudaStream_t{}, p) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);

  int bad = 0;
  std::string first;
  auto fail = [&](const std::string& what) {
    if (bad++ == 0) first = what;
  };
  std::vector<double> h(N), mag(N);  // mag: |x| + |bias| + |r|, what h's FP32 rounding scales with
  for (int m = 0; m < M; ++m) {
    double mean = 0.0;
    for (int c = 0; c < N; ++c) {
      const double xv = to_d(x[m * X::kLd + c]), bv = Bias::kPresent ? to_d(bias[c]) : 0.0;
      const double rv = R::kPresent ? to_d(r[m * R::kLd + c]) : 0.0;
      h[c] = xv + bv + rv;
      mag[c] = std::abs(xv) + std::abs(bv) + std::abs(rv);
      if constexpr (Sum::kPresent) {
        const double got = to_d(sum[m * Sum::kLd + c]);
        if (!(std::abs(got - h[c]) <= unit<TS>() * std::abs(h[c]) + std::ldexp(1.0, -22) * (std::abs(xv) + std::abs(bv) + std::abs(rv))))
          fail("sum row " + std::to_string(m) + " col " + std::to_string(c) + ": got " + std::to_string(got) + ", want " + std::to_string(h[c]));
      }
      mean += RefKind == Norm::layer ? h[c] : h[c] * h[c];
    }
    mean /= N;
    double inv;
    if (RefKind == Norm::layer) {
      double var = 0.0;
      for (int c = 0; c < N; ++c) var += (h[c] - mean) * (h[c] - mean);
      inv = 1.0 / std::sqrt(var / N + 1e-5);
    } else {
      inv = 1.0 / std::sqrt(mean + 1e-5);
      mean = 0.0;
    }
    for (int c = 0; c < N; ++c) {
      const double g = to_d(gamma[c]), b = Beta::kPresent ? to_d(beta[c]) : 0.0;
      const double want = (h[c] - mean) * inv * g + b;
      const double got = to_d(y[m * Y::kLd + c]);
      const double bound = unit<TY>() * std::abs(want) + std::ldexp(1.0, -17) * (std::abs(want) + std::abs(g) + std::abs(b)) +
                           std::ldexp(1.0, -23) * mag[c] * inv * std::abs(g);
      if (!(std::abs(got - want) <= bound))
        fail("y row " + std::to_string(m) + " col " + std::to_string(c) + ": got " + std::to_string(got) + ", want " + std::to_string(want));
    }
  }
  // Gaps between the rows (a row stride above N) must stay NaN.
  for (int m = 0; m < M; ++m) {
    for (int64_t c = N; c < Y::kLd; ++c)
      if (!std::isnan(to_d(y[m * Y::kLd + c]))) fail("y gap touched");
    if constexpr (Sum::kPresent) {
      for (int64_t c = N; c < Sum::kLd; ++c)
        if (!std::isnan(to_d(sum[m * Sum::kLd + c]))) fail("sum gap touched");
    }
  }
  if (bad) MESSAGE(bad << " wrong, the first: " << first);
  return bad;
}

template <int T, int G>
using Tl = mc::reduction::Tiling<T, G, true>;

}  // namespace

TEST_CASE("residual + bias + LayerNorm: FP16 in and out, the pre-norm sum written, widths 384 and 768 (the encoders')") {
  using H = __half;
  CHECK(run_norm<37, 384, Rows<H, 384>, Rows<H, 384>, Cols<H>, Cols<H>, Cols<H>, Rows<H, 384>, Rows<H, 384>, Tl<128, 16>,
                 Norm::layer>(1) == 0);
  CHECK(run_norm<5, 768, Rows<H, 768>, Rows<H, 768>, Cols<H>, Cols<float>, Cols<float>, Rows<H, 768>, NoRows, Tl<64, 32>,
                 Norm::layer>(2) == 0);
  // A large common offset: the two-pass variance over the cached row.
  CHECK(run_norm<9, 384, Rows<float, 384>, Rows<H, 384>, NoCols, Cols<float>, Cols<float>, Rows<H, 384>, NoRows,
                 Tl<128, 32>, Norm::layer>(3, 1000.0) == 0);
}

TEST_CASE("residual + LayerNorm: groups of 8 and of 64 (shared-memory reduction), strided rows, BF16 and mixed types") {
  using B = mc::bf16;
  CHECK(run_norm<13, 64, Rows<B, 72>, Rows<B, 64>, Cols<B>, Cols<B>, Cols<B>, Rows<B, 80>, Rows<float, 72>, Tl<64, 8>,
                 Norm::layer>(4) == 0);
  CHECK(run_norm<3, 1024, Rows<float, 1024>, Rows<float, 1032>, Cols<float>, Cols<float>, NoCols, Rows<B, 1024>, NoRows,
                 Tl<128, 64>, Norm::layer>(5) == 0);
  // 200 columns: 25 chunks over 16 threads (the last pass partial).
  CHECK(run_norm<11, 200, Rows<__half, 200>, NoRows, Cols<__half>, Cols<__half>, Cols<__half>, Rows<float, 200>,
                 Rows<__half, 208>, Tl<64, 16>, Norm::layer>(6) == 0);
}

TEST_CASE("residual + RMSNorm: FP16 and BF16, with and without bias and beta") {
  CHECK(run_norm<21, 384, Rows<__half, 384>, Rows<__half, 384>, NoCols, Cols<__half>, NoCols, Rows<__half, 384>,
                 Rows<__half, 384>, Tl<128, 16>, Norm::rms>(7) == 0);
  CHECK(run_norm<6, 512, Rows<mc::bf16, 512>, Rows<mc::bf16, 512>, Cols<mc::bf16>, Cols<float>, Cols<float>,
                 Rows<mc::bf16, 512>, NoRows, Tl<256, 64>, Norm::rms>(8) == 0);
}

TEST_CASE("residual + LayerNorm: the check catches a wrong normalization") {
  // The same data through the RMSNorm kernel against the LayerNorm reference (rows with a mean of
  // about 0.5), and through LayerNorm against RMSNorm's, must fail it.
  using H = __half;
  CHECK(run_norm<7, 64, Rows<H, 64>, NoRows, NoCols, Cols<H>, NoCols, Rows<H, 64>, NoRows, Tl<32, 8>, Norm::layer>(9, 0.5) ==
        0);
  CHECK(run_norm<7, 64, Rows<H, 64>, NoRows, NoCols, Cols<H>, NoCols, Rows<H, 64>, NoRows, Tl<32, 8>, Norm::rms,
                 Norm::layer>(9, 0.5) > 0);
  CHECK(run_norm<7, 64, Rows<H, 64>, NoRows, NoCols, Cols<H>, NoCols, Rows<H, 64>, NoRows, Tl<32, 8>, Norm::layer,
                 Norm::rms>(9, 0.5) > 0);
}

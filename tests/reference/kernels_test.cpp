// reference/kernels.h: convolutions, transposed convolutions and matrix products against loops
// written from their definitions (im2col, shifted-view and direct paths, groups, strides, dilations, pads, 1 to 3
// spatial dims), the float32 path within float32's rounding, the integer products exact, and every
// result the same to the bit for 1 thread and several.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/window.h"
#include "reference/kernels.h"
#include "reference/parallel.h"

using namespace modelc;

namespace {

struct Threads {
  explicit Threads(int n) { reference::set_threads(n); }
  ~Threads() { reference::set_threads(0); }
};

std::vector<double> randoms(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<double>(static_cast<float>(u(rng)));
  return v;
}

struct ConvCase {
  int spatial;
  int64_t N, C, M, G;
  std::array<int64_t, 3> in, kernel, stride, dilation, pad, pad_end;
};

ops::Window3 window(const ConvCase& c, bool transpose) {
  ops::Window3 q;
  q.N = c.N;
  q.C = c.C;
  q.M = c.M;
  q.G = c.G;
  q.spatial = c.spatial;
  q.in = c.in;
  q.kernel = c.kernel;
  q.stride = c.stride;
  q.dilation = c.dilation;
  q.pad = c.pad;
  q.pad_end = c.pad_end;
  for (int d = 0; d < 3; ++d) {
    const int64_t span = (q.kernel[d] - 1) * q.dilation[d] + 1;
    q.out[d] = transpose ? (q.in[d] - 1) * q.stride[d] + span - q.pad[d] - q.pad_end[d]
                         : (q.in[d] + q.pad[d] + q.pad_end[d] - span) / q.stride[d] + 1;
  }
  return q;
}

// Y[n, m, o] = b[m] + sum over (c, k) of W[m, c, k] * (X[n, g*Cg + c, o*s - p + k*d] - xz).
std::vector<double> naive_conv(const ops::Window3& q, const std::vector<double>& x, double xz,
                               const std::vector<double>& w, const std::vector<double>* b) {
  const int64_t Cg = q.Cg(), Mg = q.Mg();
  std::vector<double> y(static_cast<std::size_t>(q.N * q.M * q.out_size()));
  for (int64_t n = 0; n < q.N; ++n)
    for (int64_t m = 0; m < q.M; ++m)
      for (int64_t oz = 0; oz < q.out[0]; ++oz)
        for (int64_t oy = 0; oy < q.out[1]; ++oy)
          for (int64_t ox = 0; ox < q.out[2]; ++ox) {
            double acc = b ? (*b)[static_cast<std::size_t>(m)] : 0.0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kz = 0; kz < q.kernel[0]; ++kz)
                for (int64_t ky = 0; ky < q.kernel[1]; ++ky)
                  for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
                    const int64_t iz = oz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
                    const int64_t iy = oy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
                    const int64_t ix = ox * q.stride[2] - q.pad[2] + kx * q.dilation[2];
                    if (iz < 0 || iz >= q.in[0] || iy < 0 || iy >= q.in[1] || ix < 0 || ix >= q.in[2]) continue;
                    const int64_t ci = (m / Mg) * Cg + c;
                    acc += w[static_cast<std::size_t>((((m * Cg + c) * q.kernel[0] + kz) * q.kernel[1] + ky) * q.kernel[2] + kx)] *
                           (x[static_cast<std::size_t>((((n * q.C + ci) * q.in[0] + iz) * q.in[1] + iy) * q.in[2] + ix)] - xz);
                  }
            y[static_cast<std::size_t>((((n * q.M + m) * q.out[0] + oz) * q.out[1] + oy) * q.out[2] + ox)] = acc;
          }
  return y;
}

// Y[n, g*Mg + m, i*s - p + k*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, k], from b[m].
std::vector<double> naive_conv_transpose(const ops::Window3& q, const std::vector<double>& x,
                                         const std::vector<double>& w, const std::vector<double>* b) {
  const int64_t Cg = q.Cg(), Mg = q.Mg();
  std::vector<double> y(static_cast<std::size_t>(q.N * q.M * q.out_size()));
  for (int64_t n = 0; n < q.N; ++n)
    for (int64_t m = 0; m < q.M; ++m)
      for (int64_t o = 0; o < q.out_size(); ++o) y[static_cast<std::size_t>((n * q.M + m) * q.out_size() + o)] = b ? (*b)[static_cast<std::size_t>(m)] : 0.0;
  for (int64_t n = 0; n < q.N; ++n)
    for (int64_t ci = 0; ci < q.C; ++ci)
      for (int64_t m = 0; m < Mg; ++m)
        for (int64_t iz = 0; iz < q.in[0]; ++iz)
          for (int64_t iy = 0; iy < q.in[1]; ++iy)
            for (int64_t ix = 0; ix < q.in[2]; ++ix)
              for (int64_t kz = 0; kz < q.kernel[0]; ++kz)
                for (int64_t ky = 0; ky < q.kernel[1]; ++ky)
                  for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
                    const int64_t oz = iz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
                    const int64_t oy = iy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
                    const int64_t ox = ix * q.stride[2] - q.pad[2] + kx * q.dilation[2];
                    if (oz < 0 || oz >= q.out[0] || oy < 0 || oy >= q.out[1] || ox < 0 || ox >= q.out[2]) continue;
                    const int64_t mo = (ci / Cg) * Mg + m;
                    y[static_cast<std::size_t>((((n * q.M + mo) * q.out[0] + oz) * q.out[1] + oy) * q.out[2] + ox)] +=
                        x[static_cast<std::size_t>((((n * q.C + ci) * q.in[0] + iz) * q.in[1] + iy) * q.in[2] + ix)] *
                        w[static_cast<std::size_t>((((ci * Mg + m) * q.kernel[0] + kz) * q.kernel[1] + ky) * q.kernel[2] + kx)];
                  }
  return y;
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i])));
  CHECK(worst <= tol);
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

const ConvCase kCases[] = {
    // 2-D 3x3 pad 1 (im2col), 16 -> 24 channels
    {2, 2, 16, 24, 1, {1, 9, 11}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    // strided, dilated, asymmetric pads, groups of 4 input and 8 output channels
    {2, 1, 8, 16, 2, {1, 13, 10}, {1, 3, 2}, {1, 2, 3}, {1, 2, 1}, {0, 2, 0}, {0, 1, 2}},
    // depthwise (direct path): 12 channels, 5x5 stride 2
    {2, 2, 12, 12, 12, {1, 15, 14}, {1, 5, 5}, {1, 2, 2}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
    // few output channels per group (direct path), channel multiplier 2
    {2, 1, 6, 12, 6, {1, 7, 9}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    // pointwise (the in-place im2col), 40 -> 64, wide enough to cut in several tiles and blocks
    {2, 1, 40, 64, 1, {1, 37, 41}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}},
    // 1-D and 3-D
    {1, 2, 5, 7, 1, {1, 1, 19}, {1, 1, 4}, {1, 1, 2}, {1, 1, 1}, {0, 0, 3}, {0, 0, 1}},
    {3, 1, 4, 6, 2, {5, 6, 7}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0}, {0, 1, 1}},
    // stride 1 (the shifted-view path): dilated, asymmetric pads, groups; and 1-D
    {2, 1, 8, 16, 2, {1, 9, 10}, {1, 3, 3}, {1, 1, 1}, {1, 2, 1}, {0, 2, 0}, {0, 1, 2}},
    {2, 3, 5, 8, 1, {1, 70, 6}, {1, 2, 4}, {1, 1, 1}, {1, 1, 2}, {0, 0, 3}, {0, 1, 0}},
    {1, 1, 6, 9, 1, {1, 1, 23}, {1, 1, 5}, {1, 1, 1}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}},
    // rows wide enough for several bands of output rows
    {2, 1, 64, 32, 1, {1, 40, 300}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
    // a window wider than the input (whole rows of padding)
    {2, 1, 3, 9, 1, {1, 2, 3}, {1, 5, 5}, {1, 1, 1}, {1, 1, 1}, {0, 2, 2}, {0, 2, 2}},
};

}  // namespace

TEST_CASE("reference conv_forward: the definition, float64 and float32 paths, any thread count") {
  for (const ConvCase& c : kCases) {
    const ops::Window3 q = window(c, false);
    INFO("case " << q.str() << " N" << c.N << " C" << c.C << " M" << c.M);
    const std::vector<double> x = randoms(static_cast<std::size_t>(q.N * q.C * q.in_size()), 1);
    const std::vector<double> w = randoms(static_cast<std::size_t>(q.M * q.Cg() * q.k_size()), 2);
    const std::vector<double> b = randoms(static_cast<std::size_t>(q.M), 3);
    const std::vector<double> want = naive_conv(q, x, 0.0, w, &b);
    const std::size_t ny = want.size();
    std::vector<double> y1(ny), y4(ny);
    {
      Threads t(1);
      reference::conv_forward<double>(q, x.data(), 0.0, w.data(), b.data(), y1.data());
    }
    {
      Threads t(4);
      reference::conv_forward<double>(q, x.data(), 0.0, w.data(), b.data(), y4.data());
    }
    check_close(y1, want, 1e-13);
    CHECK(same_bits(y1, y4));
    // float32 data: X read as float, Y written as float (rounded once from the double sum).
    const std::vector<float> xf(x.begin(), x.end());
    std::vector<float> yf(ny);
    reference::conv_forward<double>(q, xf.data(), 0.0, w.data(), b.data(), yf.data());
    for (std::size_t i = 0; i < ny; ++i) CHECK(yf[i] == static_cast<float>(y1[i]));
    // The float32 path: within float32's rounding of the float64 result.
    const std::vector<float> wf(w.begin(), w.end()), bf(b.begin(), b.end());
    std::vector<float> s1(ny), s3(ny);
    {
      Threads t(1);
      reference::conv_forward<float>(q, xf.data(), 0.0f, wf.data(), bf.data(), s1.data());
    }
    {
      Threads t(3);
      reference::conv_forward<float>(q, xf.data(), 0.0f, wf.data(), bf.data(), s3.data());
    }
    CHECK(same_bits(s1, s3));
    check_close(std::vector<double>(s1.begin(), s1.end()), want, 1e-5);
  }
}

TEST_CASE("reference conv_forward: integer convolutions are exact, and wrap to int32") {
  const ConvCase c{2, 1, 7, 10, 1, {1, 9, 8}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}};
  const ops::Window3 q = window(c, false);
  std::mt19937_64 rng(5);
  std::vector<uint8_t> x(static_cast<std::size_t>(q.N * q.C * q.in_size()));
  for (uint8_t& v : x) v = static_cast<uint8_t>(rng() % 256);
  std::vector<double> w(static_cast<std::size_t>(q.M * q.Cg() * q.k_size()));
  for (double& v : w) v = static_cast<double>(static_cast<int>(rng() % 256) - 128 - 3);  // W minus its zero point 3
  const double xz = 131;
  std::vector<double> xd(x.begin(), x.end());
  const std::vector<double> want = naive_conv(q, xd, xz, w, nullptr);
  std::vector<int64_t> y(want.size());
  reference::conv_forward<double>(q, x.data(), xz, w.data(), nullptr, y.data());
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == static_cast<int64_t>(want[i]));
  // int8 X, and int32 accumulators.
  std::vector<int8_t> xs(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xs[i] = static_cast<int8_t>(static_cast<int>(x[i]) - 128);
  std::vector<double> xsd(xs.begin(), xs.end());
  const std::vector<double> want8 = naive_conv(q, xsd, -5.0, w, nullptr);
  std::vector<int32_t> y32(want8.size());
  reference::conv_forward<double>(q, xs.data(), -5.0, w.data(), nullptr, y32.data());
  for (std::size_t i = 0; i < y32.size(); ++i) CHECK(y32[i] == static_cast<int32_t>(want8[i]));
}

TEST_CASE("reference conv_transpose: the definition, any thread count") {
  const ConvCase cases[] = {
      {2, 2, 6, 8, 1, {1, 5, 4}, {1, 3, 3}, {1, 2, 2}, {1, 1, 1}, {0, 1, 0}, {0, 0, 1}},
      {2, 1, 8, 12, 4, {1, 6, 7}, {1, 2, 3}, {1, 1, 2}, {1, 2, 1}, {0, 0, 1}, {0, 1, 0}},
      {1, 1, 3, 5, 1, {1, 1, 9}, {1, 1, 4}, {1, 1, 3}, {1, 1, 1}, {0, 0, 2}, {0, 0, 2}},
      {3, 1, 4, 4, 2, {3, 4, 3}, {2, 2, 2}, {2, 1, 2}, {1, 1, 1}, {0, 1, 0}, {1, 0, 0}},
  };
  for (const ConvCase& c : cases) {
    const ops::Window3 q = window(c, true);
    INFO("case " << q.str());
    const std::vector<double> x = randoms(static_cast<std::size_t>(q.N * q.C * q.in_size()), 7);
    const std::vector<double> w = randoms(static_cast<std::size_t>(q.C * q.Mg() * q.k_size()), 8);
    const std::vector<double> b = randoms(static_cast<std::size_t>(q.M), 9);
    const std::vector<double> want = naive_conv_transpose(q, x, w, &b);
    std::vector<double> y1(want.size()), y4(want.size());
    {
      Threads t(1);
      reference::conv_transpose<double>(q, x.data(), w.data(), b.data(), y1.data());
    }
    {
      Threads t(4);
      reference::conv_transpose<double>(q, x.data(), w.data(), b.data(), y4.data());
    }
    check_close(y1, want, 1e-13);
    CHECK(same_bits(y1, y4));
  }
}

TEST_CASE("reference matmul: batches with broadcast, transposes, any thread count") {
  const int64_t M = 300, K = 70, N = 270;  // more than one row and column block
  const std::vector<double> a = randoms(static_cast<std::size_t>(2 * M * K), 11), b = randoms(static_cast<std::size_t>(K * N), 12);
  const int64_t ia[] = {0, 1, 1}, ib[] = {0, 0, 0};  // three batches: A's two (the second twice), B's one
  std::vector<double> want(static_cast<std::size_t>(3 * M * N), 0.0);
  for (int64_t t = 0; t < 3; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += a[static_cast<std::size_t>(ia[t] * M * K + i * K + k)] * b[static_cast<std::size_t>(k * N + j)];
        want[static_cast<std::size_t>((t * M + i) * N + j)] = s;
      }
  std::vector<double> y1(want.size()), y4(want.size());
  {
    Threads t(1);
    reference::matmul<double>(3, ia, ib, M, K, N, a.data(), false, b.data(), false, y1.data());
  }
  {
    Threads t(4);
    reference::matmul<double>(3, ia, ib, M, K, N, a.data(), false, b.data(), false, y4.data());
  }
  check_close(y1, want, 1e-13);
  CHECK(same_bits(y1, y4));
  // Both operands stored transposed: A^T [K x M] per batch, B^T [N x K].
  std::vector<double> at(a.size()), bt(b.size());
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) at[static_cast<std::size_t>(t * M * K + k * M + i)] = a[static_cast<std::size_t>(t * M * K + i * K + k)];
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) bt[static_cast<std::size_t>(j * K + k)] = b[static_cast<std::size_t>(k * N + j)];
  std::vector<double> yt(want.size());
  reference::matmul<double>(3, ia, ib, M, K, N, at.data(), true, bt.data(), true, yt.data());
  check_close(yt, want, 1e-13);
  // The float32 path.
  const std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
  std::vector<float> yf(want.size());
  reference::matmul<float>(3, ia, ib, M, K, N, af.data(), false, bf.data(), false, yf.data());
  check_close(std::vector<double>(yf.begin(), yf.end()), want, 1e-5);
}

TEST_CASE("reference accumulation: a scope sets the calling thread's, and restores it") {
  CHECK(reference::accumulation() == reference::Accumulation::f64);
  {
    const reference::AccumulationScope s(reference::Accumulation::f32);
    CHECK(reference::accumulation() == reference::Accumulation::f32);
    {
      const reference::AccumulationScope inner(reference::Accumulation::f64);
      CHECK(reference::accumulation() == reference::Accumulation::f64);
    }
    CHECK(reference::accumulation() == reference::Accumulation::f32);
  }
  CHECK(reference::accumulation() == reference::Accumulation::f64);
}

// templates/se_gate.cuh's mc::se::Gate on the host emulation (its shared-memory race check on):
// random data in the storage type against a model in double of the same gate (the mean over the
// pixels, FC1 + activation, FC2 + gate), within the storage type's rounding of Y plus a small
// FP32 floor, so a value from a wrong channel, pixel, image or weight fails (each channel's pixels
// sit around an offset of their own and the FCs' weights are of order one: the gates differ by
// much more than the tolerance). Y's padding (a pitch above C) is checked untouched, and a second
// run must give the same bits (no order that varies). The cases cover C and S below, at and above
// the block's threads and not multiples of 8 or 32, 1 to 300 pixels, batch 1 and 3, NHWC with and
// without a channel pitch and NCHW, __half, mc::bf16 and float, and the activations exporters use
// (ReLU, SiLU, HardSwish; Sigmoid and HardSigmoid gates).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "narrow_float_test_util.h"
#include "templates/se_gate.cuh"

namespace {

template <class K>
__global__ void se_gate_kernel(typename K::Params p) {
  K::run(p);
}

double act_d(mc::Act a, double x, const mc::ActParams& p) {
  switch (a) {
    case mc::Act::relu: return x > 0 ? x : 0;
    case mc::Act::silu: return x / (1 + std::exp(-x));
    case mc::Act::hard_swish: return x * std::fmax(0.0, std::fmin(1.0, p.alpha * x + p.beta));
    case mc::Act::sigmoid: return 1 / (1 + std::exp(-x));
    case mc::Act::hard_sigmoid: return std::fmax(0.0, std::fmin(1.0, p.alpha * x + p.beta));
    default: return x;
  }
}

constexpr float kUntouched = 3072.0f;  // exact in every storage type; no gate is above 1

/// Runs Gate<T, N, C, S, HW, ..., A, G, NT> with X NHWC at pitch XP (XP 0: NCHW) and Y at image
/// stride YP on data from `seed`, and checks it.
template <class T, int N, int C, int S, int HW, int XP, int YP, mc::Act A, mc::Act G, int NT>
void check_gate(uint64_t seed) {
  constexpr bool nhwc = XP > 0;
  constexpr long long kSN = nhwc ? static_cast<long long>(HW) * XP : static_cast<long long>(C) * HW;
  constexpr int kSC = nhwc ? 1 : HW, kSP = nhwc ? XP : 1;
  using K = mc::se::Gate<T, N, C, S, HW, kSN, kSC, kSP, YP, A, G, NT>;
  INFO("N " << N << " C " << C << " S " << S << " HW " << HW << (nhwc ? " NHWC pitch " : " NCHW") << XP << " Y pitch "
            << YP << " threads " << NT << " seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  // X: each channel around an offset of its own; the padded channels NaN (never read).
  std::vector<T> x(static_cast<std::size_t>(N * kSN), narrow_float::to_t<T>(std::nan("")));
  std::vector<double> xd(static_cast<std::size_t>(N * C * HW));
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      const double offset = 2.0 * u(rng);
      for (int i = 0; i < HW; ++i) {
        const T v = narrow_float::to_t<T>(offset + 0.5 * u(rng));
        x[static_cast<std::size_t>(n * kSN + static_cast<long long>(c) * kSC + static_cast<long long>(i) * kSP)] = v;
        xd[static_cast<std::size_t>((n * C + c) * HW + i)] = narrow_float::to_d(v);
      }
    }
  auto weights = [&](int count, double scale) {
    std::vector<T> w(static_cast<std::size_t>(count));
    for (T& e : w) e = narrow_float::to_t<T>(scale * u(rng));
    return w;
  };
  const std::vector<T> w1 = weights(S * C, 2.0 / std::sqrt(double(C))), b1 = weights(S, 0.5),
                       w2 = weights(C * S, 2.0 / std::sqrt(double(S))), b2 = weights(C, 0.5);
  mc::ActParams act, gate;
  if (A == mc::Act::hard_swish) act = {1.0f / 6, 0.5f, -INFINITY, INFINITY};
  if (G == mc::Act::hard_sigmoid) gate = {0.2f, 0.5f, -INFINITY, INFINITY};

  // The model in double.
  std::vector<double> want(static_cast<std::size_t>(N * C));
  for (int n = 0; n < N; ++n) {
    std::vector<double> p(C), h(S);
    for (int c = 0; c < C; ++c) {
      double s = 0;
      for (int i = 0; i < HW; ++i) s += xd[static_cast<std::size_t>((n * C + c) * HW + i)];
      p[c] = s / HW;
    }
    for (int j = 0; j < S; ++j) {
      double v = narrow_float::to_d(b1[j]);
      for (int c = 0; c < C; ++c) v += narrow_float::to_d(w1[static_cast<std::size_t>(j * C + c)]) * p[c];
      h[j] = act_d(A, v, act);
    }
    for (int c = 0; c < C; ++c) {
      double v = narrow_float::to_d(b2[c]);
      for (int j = 0; j < S; ++j) v += narrow_float::to_d(w2[static_cast<std::size_t>(c * S + j)]) * h[j];
      want[static_cast<std::size_t>(n * C + c)] = act_d(G, v, gate);
    }
  }

  auto run = [&]() {
    std::vector<T> y(static_cast<std::size_t>(N * YP), narrow_float::to_t<T>(kUntouched));
    typename K::Params prm;
    prm.X = x.data();
    prm.W1 = w1.data();
    prm.B1 = b1.data();
    prm.W2 = w2.data();
    prm.B2 = b2.data();
    prm.Y = y.data();
    prm.act = act;
    prm.gate = gate;
    REQUIRE(mc::launch(se_gate_kernel<K>, K::grid(), K::block(), 0, cudaStream_t{}, prm) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    return y;
  };
  const std::vector<T> y = run();
  int bad = 0, padding = 0;
  double worst = 0;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < YP; ++c) {
      const double got = narrow_float::to_d(y[static_cast<std::size_t>(n * YP + c)]);
      if (c >= C) {
        padding += got != kUntouched;
        continue;
      }
      const double w = want[static_cast<std::size_t>(n * C + c)];
      const double err = std::abs(got - w), tol = narrow_float::unit_roundoff<T>() * std::abs(w) + 2e-5;
      worst = std::max(worst, err / tol);
      if (!(err <= tol)) {
        if (bad < 5) MESSAGE("Y[" << n << ", " << c << "] = " << got << ", want " << w);
        ++bad;
      }
    }
  CHECK_MESSAGE(bad == 0, bad << " gates out of tolerance (worst " << worst << " x the tolerance)");
  CHECK_MESSAGE(padding == 0, padding << " padded channels of Y written");
  const std::vector<T> again = run();
  CHECK_MESSAGE(std::memcmp(again.data(), y.data(), y.size() * sizeof(T)) == 0, "a second run gives other bits");
}

}  // namespace

TEST_CASE("se gate: NHWC, pitches, channel tiles, activations, gates (emulation, race check)") {
  using mc::Act;
  // The repro widths: C 240 (one tile of 240 at 256 threads, not a multiple of 32), S 10.
  check_gate<__half, 1, 240, 10, 64, 240, 240, Act::relu, Act::sigmoid, 256>(1);
  // MBConv: SiLU, C 96 at 128 threads (one row of 96: threads 96..127 idle), batch 3, padded X and Y.
  check_gate<__half, 3, 96, 10, 144, 104, 104, Act::silu, Act::sigmoid, 128>(2);
  // MobileNetV3: HardSwish and HardSigmoid, BF16, C 20 (6 rows of 20 per 128 threads), 36 pixels.
  check_gate<mc::bf16, 1, 20, 20, 36, 24, 20, Act::hard_swish, Act::hard_sigmoid, 128>(3);
  // C above the block (300 channels in tiles of 128: 2 full, 1 of 44), S 37, one pixel.
  check_gate<__half, 2, 300, 37, 1, 304, 304, Act::relu, Act::sigmoid, 128>(4);
  // RegNetY: C 72, S 12, 9 pixels, BF16.
  check_gate<mc::bf16, 1, 72, 12, 9, 72, 72, Act::relu, Act::sigmoid, 128>(5);
  // One channel (the NHWC test of kChannelsInner's C > 1: the plane path), S 1.
  check_gate<__half, 2, 1, 1, 50, 1, 8, Act::relu, Act::sigmoid, 128>(6);
}

TEST_CASE("se gate: NCHW (FP32 and FP16), a warp a channel") {
  using mc::Act;
  check_gate<float, 2, 40, 10, 300, 0, 40, Act::relu, Act::sigmoid, 128>(11);
  check_gate<float, 1, 70, 9, 33, 0, 72, Act::silu, Act::hard_sigmoid, 256>(12);
  check_gate<__half, 1, 33, 5, 7, 0, 33, Act::hard_swish, Act::sigmoid, 128>(13);
}

// templates/gemm_small_m.cuh on the host emulation (exact mma.sync lanes, deferred cp.async, the
// race check): K split across a block's warps and split-K across blocks (the tiles' splits adding
// into their accumulators in split order, tickets back to zero after every launch), against the
// product computed in double from the same rounded inputs. Tolerance per element: Y's rounding
// (u |y|: 2^-11 FP16, 2^-8 BF16) plus 2^-20 x 1.2 x sum_k |a b| (FP32 accumulation in any order,
// through an epilogue whose slope is at most 1.2: GELU's). Cases: the product (M 128,
// N 1536, K 384, bias + GELU, FP16) on the tile meant for it; odd shapes (M 37, N 70, K 200) with
// 2-way warp split and 3-way block split, twice (the same bits, the tickets reset); BF16 with a
// transposed B, 2 x 1 x 2 warps and split 2; a split with no K slices (K 40 over 3 splits of 32).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "narrow_float_test_util.h"
#include "templates/gemm_small_m.cuh"

namespace {

using narrow_float::random_t;
using narrow_float::to_d;
using narrow_float::to_t;

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

/// Runs K (a smallm::Gemm) `runs` times on A (M x K at SA) and B (K x N at SB) with a bias of N
/// and, when `act_gelu`, GELU; checks Y (M x N, row-major) each time, the bits equal across runs
/// and the tickets zero after each. Returns the number of wrong elements of the first run.
template <class K, class T, int M, int N, int Kd, int64_t SAr, int64_t SAc, int64_t SBr, int64_t SBc>
int run_small_m(uint64_t seed, bool act_gelu, int runs = 1) {
  const std::vector<T> a = random_t<T>(static_cast<std::size_t>(M) * Kd, seed);
  const std::vector<T> b = random_t<T>(static_cast<std::size_t>(Kd) * N, seed + 1, 0.5);
  const std::vector<T> bias = random_t<T>(N, seed + 2);
  std::vector<T> y(static_cast<std::size_t>(M) * N, to_t<T>(NAN));
  std::vector<float> partial(static_cast<std::size_t>(K::kPartialFloats), NAN);
  std::vector<unsigned> tickets(static_cast<std::size_t>(K::kTickets), 0u);
  typename K::Params p{};
  p.A = a.data();
  p.B = b.data();
  p.Y = y.data();
  p.epilogue.bias = bias.data();
  p.partial = partial.empty() ? nullptr : partial.data();
  p.tickets = tickets.empty() ? nullptr : tickets.data();
  REQUIRE(cudaFuncSetAttribute(mc::smallm::kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes) ==
          cudaSuccess);
  const double u = narrow_float::unit_roundoff<T>();
  int bad = 0;
  std::vector<T> first;
  for (int run = 0; run < runs; ++run) {
    REQUIRE(mc::launch(mc::smallm::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    for (unsigned t : tickets) CHECK(t == 0u);
    if (run == 0) {
      first = y;
      std::string what;
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double acc = 0.0, mag = 0.0;
          for (int k = 0; k < Kd; ++k) {
            const double ab = to_d(a[m * SAr + k * SAc]) * to_d(b[k * SBr + n * SBc]);
            acc += ab;
            mag += std::abs(ab);
          }
          acc += to_d(bias[n]);
          const double want = act_gelu ? gelu(acc) : acc;
          const double got = to_d(y[static_cast<std::size_t>(m) * N + n]);
          const double bound = u * std::abs(want) + 1.2 * std::ldexp(1.0, -20) * (mag + std::abs(to_d(bias[n])));
          if (!(std::abs(got - want) <= bound) && bad++ == 0) {
            what = "m " + std::to_string(m) + " n " + std::to_string(n) + ": got " + std::to_string(got) + ", want " +
                   std::to_string(want);
          }
        }
      if (bad) MESSAGE(bad << " wrong, the first " << what);
    } else {
      CHECK(std::memcmp(first.data(), y.data(), y.size() * sizeof(T)) == 0);
    }
  }
  return bad;
}

using mc::gemm::Act;
using mc::gemm::Residual;
using mc::gemm::Shape;
using mc::gemm::Strides;

template <class T, Act A>
using BiasAct = mc::gemm::EpilogueFused<T, Strides<0, 0, 0, 0, 1>, true, A, Residual::none>;

}  // namespace

TEST_CASE("small-M product: the issue's M 128, N 1536, K 384 with bias and GELU (32 x 48 tiles, 4 warps splitting K)") {
  constexpr int M = 128, N = 1536, K = 384;
  using Tl = mc::smallm::Tile<32, 48, 64, 1, 1, 4, 6>;
  using G = mc::smallm::Gemm<__half, __half, Shape<1, 1, 1, M, N, K>, Strides<0, 0, 0, K, 1>, Strides<0, 0, 0, N, 1>,
                             Strides<0, 0, 0, N, 1>, Tl, BiasAct<__half, Act::gelu>>;
  static_assert(Tl::kThreads == 128 && Tl::kStepsPerWarp == 1, "one k16 step of each slice per warp");
  CHECK(G::grid().x * G::grid().y * G::grid().z == 128);  // one wave on 132 SMs
  CHECK(run_small_m<G, __half, M, N, K, K, 1, N, 1>(1, true) == 0);
}

TEST_CASE("small-M product: odd shapes, 2 warps on K, split-K 3 across blocks (twice: same bits, tickets reset)") {
  constexpr int M = 37, N = 70, K = 200;
  using Tl = mc::smallm::Tile<32, 32, 32, 1, 2, 2, 3, 3>;
  using G = mc::smallm::Gemm<__half, __half, Shape<1, 1, 1, M, N, K>, Strides<0, 0, 0, K, 1>, Strides<0, 0, 0, N, 1>,
                             Strides<0, 0, 0, N, 1>, Tl, BiasAct<__half, Act::none>>;
  CHECK(G::LA::kVector);        // K = 200: A's rows at multiples of 8 elements
  CHECK_FALSE(G::LB::kVector);  // N = 70: B's are not (element loads)
  CHECK(run_small_m<G, __half, M, N, K, K, 1, N, 1>(2, false, 2) == 0);
}

TEST_CASE("small-M product: BF16, B transposed (k-fast), 2 x 1 x 2 warps, split 2, GELU") {
  constexpr int M = 48, N = 64, K = 160;
  using Tl = mc::smallm::Tile<32, 32, 64, 2, 1, 2, 2, 2>;
  using G = mc::smallm::Gemm<mc::bf16, mc::bf16, Shape<1, 1, 1, M, N, K>, Strides<0, 0, 0, K, 1>, Strides<0, 0, 0, 1, K>,
                             Strides<0, 0, 0, N, 1>, Tl, BiasAct<mc::bf16, Act::gelu>>;
  CHECK(G::LB::kKFast);
  CHECK(run_small_m<G, mc::bf16, M, N, K, K, 1, 1, K>(3, true) == 0);
}

TEST_CASE("small-M product: a split with no K slices still passes its ticket on (K 40 in slices of 32, split 3)") {
  constexpr int M = 16, N = 32, K = 40;
  using Tl = mc::smallm::Tile<16, 32, 32, 1, 1, 2, 2, 3>;
  using G = mc::smallm::Gemm<__half, float, Shape<1, 1, 1, M, N, K>, Strides<0, 0, 0, K, 1>, Strides<0, 0, 0, N, 1>,
                             Strides<0, 0, 0, N, 1>, Tl, BiasAct<__half, Act::none>>;
  // Two slices over three splits: the third has none.
  const std::vector<__half> a = random_t<__half>(M * K, 4), b = random_t<__half>(K * N, 5), bias = random_t<__half>(N, 6);
  std::vector<float> y(M * N, NAN), partial(static_cast<std::size_t>(G::kPartialFloats), NAN);
  std::vector<unsigned> tickets(static_cast<std::size_t>(G::kTickets), 0u);
  G::Params p{};
  p.A = a.data();
  p.B = b.data();
  p.Y = y.data();
  p.epilogue.bias = bias.data();
  p.partial = partial.data();
  p.tickets = tickets.data();
  REQUIRE(mc::launch(mc::smallm::kernel<G>, G::grid(), G::block(), G::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double want = static_cast<double>(static_cast<float>(bias[n]));
      for (int k = 0; k < K; ++k) want += double(float(a[m * K + k])) * double(float(b[k * N + n]));
      CHECK(std::abs(y[m * N + n] - want) <= 1e-5 * (1 + std::abs(want)));
    }
  CHECK(tickets[0] == 0u);
  // A launch whose tickets were not reset is refused by the emulation (it would wait forever).
  tickets[0] = 2;
  CHECK_THROWS(mc::launch(mc::smallm::kernel<G>, G::grid(), G::block(), G::kSmemBytes, cudaStream_t{}, p));
}

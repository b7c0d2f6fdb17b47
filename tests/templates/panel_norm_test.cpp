// templates/residual_norm.cuh's PanelNorm on the host emulation: a product (tc::Gemm, smallm::Gemm
// with split-K, the SIMT gemm::Gemm) whose output rows the last block of each row panel normalizes
// in the same launch. Each case checks, against the same product and the same norm run as separate
// launches on the same data:
//  - the product's output, bit for bit (the tail leaves it as the product wrote it);
//  - the normalized rows, bit for bit against resnorm::ResidualNorm's stand-alone kernel over that
//    output with the same thread groups (the tail is that norm, on every row, once);
//  - the normalized rows against LayerNorm computed in double from the product's output (Y's
//    rounding plus the FP32 sums' 2^-17), so a norm wrong in both forms fails too;
//  - the tickets back at zero, and a second launch giving the same bits (a CUDA graph replays it).
// A planted fault must fail: a ticket left at 1 by a "previous launch" makes a panel's
// second-to-last block normalize rows another block has not written yet.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "narrow_float_test_util.h"
#include "templates/gemm_small_m.cuh"
#include "templates/residual_norm.cuh"

namespace {

using mc::gemm::Act;
using mc::gemm::Residual;
using mc::gemm::Shape;
using mc::gemm::Strides;
using mc::resnorm::Cols;
using mc::resnorm::NoCols;
using mc::resnorm::Norm;
using mc::resnorm::Rows;
using narrow_float::random_t;
using narrow_float::to_d;
using narrow_float::to_t;

/// A small-M product's split-K workspace (partials and tickets), where it has one.
template <class G, class = void>
struct SplitWorkspace : std::false_type {};
template <class G>
struct SplitWorkspace<G, decltype(void(G::kTickets))> : std::integral_constant<bool, (G::kTickets > 0)> {};

template <class T>
using BiasEpi = mc::gemm::EpilogueFused<T, Strides<0, 0, 0, 0, 1>, true, Act::none, Residual::none>;

/// How a case went: wrong elements of each check.
struct Outcome {
  int product = 0, tail = 0, reference = 0, tickets = 0, replay = 0;
  int total() const { return product + tail + reference + tickets + replay; }
};

template <class K>
void launch(const typename K::Params& p) {
  if (K::kSmemBytes > 48 * 1024) {
    REQUIRE(cudaFuncSetAttribute(mc::resnorm::kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes) ==
            cudaSuccess);
  }
  REQUIRE(mc::launch(mc::resnorm::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

/// Runs PanelNorm<G, N, Rows<TX, N, true>, Cols<TG>, Cols<TG> or NoCols, Rows<TY2, N>> on random
/// A (rows x Kd) and B (Kd x N) with a bias; `stale_ticket` >= 0 plants a ticket of 1 there first.
template <class G, class TAB, class TX, class TG, class TY2, bool HasBeta>
Outcome run_panel(uint64_t seed, int stale_ticket = -1) {
  using Sh = typename G::Shape;
  constexpr int N = Sh::kN, Kd = Sh::kK, Rows_ = Sh::kBatch * Sh::kM;
  using Beta = typename std::conditional<HasBeta, Cols<TG>, NoCols>::type;
  using P = mc::resnorm::PanelNorm<G, N, Rows<TX, N, true>, Cols<TG>, Beta, Rows<TY2, N>>;
  const std::vector<TAB> a = random_t<TAB>(static_cast<std::size_t>(Rows_) * Kd, seed);
  const std::vector<TAB> b = random_t<TAB>(static_cast<std::size_t>(Kd) * N, seed + 1, 0.5);
  const std::vector<TX> bias = random_t<TX>(N, seed + 2, 2.0);  // rows with a non-zero mean
  std::mt19937_64 rng(seed + 3);
  const std::vector<TG> gamma = random_t<TG>(N, rng, 0.5, 1.5), beta = random_t<TG>(N, rng, -0.5, 0.5);
  std::vector<TX> x(static_cast<std::size_t>(Rows_) * N, to_t<TX>(NAN)), x_alone = x;
  std::vector<TY2> y(static_cast<std::size_t>(Rows_) * N, to_t<TY2>(NAN)), y_alone = y;
  std::vector<unsigned> tickets(P::kPanels, 0u);
  if (stale_ticket >= 0) tickets.at(static_cast<std::size_t>(stale_ticket)) = 1u;
  std::vector<float> partial;
  std::vector<unsigned> split_tickets;

  auto product_params = [&](std::vector<TX>& out) {
    typename G::Params p{};
    p.A = a.data();
    p.B = b.data();
    p.Y = out.data();
    p.epilogue.bias = bias.data();
    if constexpr (SplitWorkspace<G>::value) {
      partial.assign(static_cast<std::size_t>(G::kPartialFloats), NAN);
      split_tickets.assign(static_cast<std::size_t>(G::kTickets), 0u);
      p.partial = partial.data();
      p.tickets = split_tickets.data();
    }
    return p;
  };
  typename P::Params p{};
  p.product = product_params(x);
  p.norm.x = x.data();
  p.norm.gamma = gamma.data();
  if constexpr (HasBeta) p.norm.beta = beta.data();
  p.norm.y = y.data();
  p.norm.epsilon = 1e-5f;
  p.tickets = tickets.data();
  launch<P>(p);

  // The same product alone, then the stand-alone norm over its output with the tail's groups.
  Outcome o;
  launch<G>(product_params(x_alone));
  using Alone = mc::resnorm::ResidualNorm<Rows_, N, Rows<TX, N>, mc::resnorm::NoRows, NoCols, Cols<TG>, Beta, Rows<TY2, N>,
                                          mc::resnorm::NoRows, typename P::Tl>;
  typename Alone::Params q{};
  q.x = x_alone.data();
  q.gamma = gamma.data();
  if constexpr (HasBeta) q.beta = beta.data();
  q.y = y_alone.data();
  q.epsilon = 1e-5f;
  launch<Alone>(q);
  o.product = std::memcmp(x.data(), x_alone.data(), x.size() * sizeof(TX)) == 0 ? 0 : 1;
  for (std::size_t i = 0; i < y.size(); ++i) {
    o.tail += std::memcmp(&y[i], &y_alone[i], sizeof(TY2)) == 0 ? 0 : 1;
  }
  for (unsigned t : tickets) o.tickets += t == 0u ? 0 : 1;

  // LayerNorm in double over the product's (rounded) output.
  for (int r = 0; r < Rows_; ++r) {
    double mean = 0.0, var = 0.0;
    for (int c = 0; c < N; ++c) mean += to_d(x_alone[static_cast<std::size_t>(r) * N + c]);
    mean /= N;
    for (int c = 0; c < N; ++c) {
      const double d = to_d(x_alone[static_cast<std::size_t>(r) * N + c]) - mean;
      var += d * d;
    }
    const double inv = 1.0 / std::sqrt(var / N + 1e-5);
    for (int c = 0; c < N; ++c) {
      const double g = to_d(gamma[c]), bt = HasBeta ? to_d(beta[c]) : 0.0;
      const double want = (to_d(x_alone[static_cast<std::size_t>(r) * N + c]) - mean) * inv * g + bt;
      const double got = to_d(y[static_cast<std::size_t>(r) * N + c]);
      const double bound = narrow_float::unit_roundoff<TY2>() * std::abs(want) +
                           std::ldexp(1.0, -17) * (std::abs(want) + std::abs(g) + std::abs(bt) + 1.0);
      if (!(std::abs(got - want) <= bound)) ++o.reference;
    }
  }

  // A replay: the same bits, the tickets zero again.
  if (stale_ticket < 0) {
    const std::vector<TY2> first = y;
    std::fill(y.begin(), y.end(), to_t<TY2>(NAN));
    p.product = product_params(x);
    launch<P>(p);
    o.replay = std::memcmp(first.data(), y.data(), y.size() * sizeof(TY2)) == 0 ? 0 : 1;
    for (unsigned t : tickets) o.replay += t == 0u ? 0 : 1;
  }
  if (o.total()) {
    MESSAGE("product " << o.product << ", tail " << o.tail << ", reference " << o.reference << ", tickets " << o.tickets
                       << ", replay " << o.replay);
  }
  return o;
}

}  // namespace

TEST_CASE("panel norm: small-M product M 128, N 768 (BERT's out-projection), K split over 4 warps and 2 blocks, FP16") {
  using G = mc::smallm::Gemm<__half, __half, Shape<1, 1, 1, 128, 768, 256>, Strides<0, 0, 0, 256, 1>,
                             Strides<0, 0, 0, 768, 1>, Strides<0, 0, 0, 768, 1>,
                             mc::smallm::Tile<32, 32, 64, 1, 1, 4, 2, 2>, BiasEpi<__half>>;
  CHECK(run_panel<G, __half, __half, __half, __half, true>(11).total() == 0);
}

TEST_CASE("panel norm: odd shapes (M 37 over 16-row panels, N 200: a partial last pass), split 3, FP32 output") {
  using G = mc::smallm::Gemm<__half, __half, Shape<1, 1, 1, 37, 200, 96>, Strides<0, 0, 0, 96, 1>,
                             Strides<0, 0, 0, 200, 1>, Strides<0, 0, 0, 200, 1>,
                             mc::smallm::Tile<16, 32, 32, 1, 1, 2, 2, 3>, BiasEpi<__half>>;
  CHECK(run_panel<G, __half, __half, float, float, false>(12).total() == 0);
}

TEST_CASE("panel norm: tc::Gemm 64 x 64 tiles, M 100, N 384, batch 2 (flat rows), BF16") {
  using G = mc::tc::Gemm<mc::bf16, mc::bf16, float, Shape<1, 1, 2, 100, 384, 128>, Strides<0, 0, 100 * 128, 128, 1>,
                         Strides<0, 0, 0, 384, 1>, Strides<0, 0, 100 * 384, 384, 1>,
                         mc::tc::Tile<64, 64, 32, 2, 2, true, 3>, BiasEpi<mc::bf16>>;
  CHECK(run_panel<G, mc::bf16, mc::bf16, mc::bf16, mc::bf16, true>(13).total() == 0);
}

TEST_CASE("panel norm: one-warp tc::Gemm tiles (32 threads) over rows of 1024") {
  using G = mc::tc::Gemm<__half, __half, float, Shape<1, 1, 1, 40, 1024, 64>, Strides<0, 0, 0, 64, 1>,
                         Strides<0, 0, 0, 1024, 1>, Strides<0, 0, 0, 1024, 1>, mc::tc::Tile<32, 32, 32, 1, 1, true, 2>,
                         BiasEpi<__half>>;
  static_assert(mc::resnorm::PanelNorm<G, 1024, Rows<__half, 1024, true>, Cols<__half>, NoCols,
                                       Rows<__half, 1024>>::kGroup == 16,
                "16 threads a row, 8 chunks each");
  CHECK(run_panel<G, __half, __half, __half, __half, false>(14).total() == 0);
}

TEST_CASE("panel norm: the SIMT product (FP32, static shared memory: the tail's own)") {
  using G = mc::gemm::Gemm<float, float, Shape<1, 1, 1, 45, 96, 64>, Strides<0, 0, 0, 64, 1>, Strides<0, 0, 0, 96, 1>,
                           Strides<0, 0, 0, 96, 1>, mc::gemm::Tile<32, 32, 8, 4, 4>, BiasEpi<float>>;
  static_assert(!mc::resnorm::PanelNorm<G, 96, Rows<float, 96, true>, Cols<float>, NoCols, Rows<float, 96>>::kTailInDynamic,
                "no dynamic shared memory to reuse");
  CHECK(run_panel<G, float, float, float, float, true>(15).total() == 0);
}

TEST_CASE("panel norm: a ticket not zero before the launch makes a panel normalize early (the check catches it)") {
  using G = mc::smallm::Gemm<__half, __half, Shape<1, 1, 1, 64, 128, 64>, Strides<0, 0, 0, 64, 1>,
                             Strides<0, 0, 0, 128, 1>, Strides<0, 0, 0, 128, 1>,
                             mc::smallm::Tile<32, 32, 32, 1, 1, 2, 2>, BiasEpi<__half>>;
  const Outcome o = run_panel<G, __half, __half, __half, __half, true>(16, /*stale_ticket*/ 1);
  CHECK(o.tail > 0);
  CHECK(o.tickets > 0);  // the panel's last block saw one arrival too many and never reset it
}

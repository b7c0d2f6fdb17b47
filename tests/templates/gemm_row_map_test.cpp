// The tensor-core products' row tables (gemm::RowMapped: the fold_row_maps stage) on the host
// emulation: tc::Gemm and smallm::Gemm reading A's rows through a_rows (random tables with zero rows, repeated rows
// and rows in any order) and writing Y's rows through y_rows (rows skipped, rows scattered) with a
// bias and a residual read at the scattered row, against a double reference of the same gather /
// scatter; both stagings (cp.async and registers), 16-byte and element loads, split-K (tc::Gemm's
// reduction launch, smallm::Gemm's in-launch ticketed adds, K across warps). A row the
// kernel writes but the table skips, or a wrong source row, fails the comparison (the unwritten
// rows must keep their NaN sentinel).
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <doctest/doctest.h>
#include "tc_launch_util.h"

namespace {

struct Problem {
  int src_rows, dst_rows, M, N, K;
  std::vector<int> a_rows, y_rows;
  std::vector<__half> a, b, bias, residual;
};

/// A table of M rows into `rows` source rows: about a fifth -1, the rest any row (repeats allowed).
std::vector<int> gather_table(int M, int rows, std::mt19937& rng) {
  std::vector<int> t(static_cast<std::size_t>(M));
  for (int& r : t) r = rng() % 5 == 0 ? -1 : static_cast<int>(rng() % static_cast<unsigned>(rows));
  return t;
}

/// An injective table of M rows into `rows` destination rows (rows >= M), about a fifth -1.
std::vector<int> scatter_table(int M, int rows, std::mt19937& rng) {
  std::vector<int> dst(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) dst[static_cast<std::size_t>(i)] = i;
  std::shuffle(dst.begin(), dst.end(), rng);
  std::vector<int> t(static_cast<std::size_t>(M));
  for (int m = 0; m < M; ++m) t[static_cast<std::size_t>(m)] = rng() % 5 == 0 ? -1 : dst[static_cast<std::size_t>(m)];
  return t;
}

std::vector<__half> random_halves(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<__half> r(n);
  for (__half& h : r) h = __float2half(u(rng));
  return r;
}

Problem make_problem(int src_rows, int dst_rows, int M, int N, int K, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p{src_rows, dst_rows, M, N, K, gather_table(M, src_rows, rng), scatter_table(M, dst_rows, rng), {}, {}, {}, {}};
  p.a = random_halves(static_cast<std::size_t>(src_rows) * K, rng);
  p.b = random_halves(static_cast<std::size_t>(K) * N, rng);
  p.bias = random_halves(static_cast<std::size_t>(N), rng);
  p.residual = random_halves(static_cast<std::size_t>(dst_rows) * N, rng);
  return p;
}

/// The reference: Y[y_rows[m]] = A[a_rows[m]] x B + bias + residual[y_rows[m]] (A's row 0 where
/// a_rows[m] < 0; nothing where y_rows[m] < 0); NaN elsewhere. scatter false: Y[m], no residual.
std::vector<double> reference(const Problem& p, bool scatter) {
  const int rows = scatter ? p.dst_rows : p.M;
  std::vector<double> y(static_cast<std::size_t>(rows) * p.N, std::nan(""));
  for (int m = 0; m < p.M; ++m) {
    const int src = p.a_rows[static_cast<std::size_t>(m)];
    const int dst = scatter ? p.y_rows[static_cast<std::size_t>(m)] : m;
    if (dst < 0) continue;
    for (int n = 0; n < p.N; ++n) {
      double s = 0;
      for (int k = 0; k < p.K && src >= 0; ++k) {
        s += static_cast<double>(__half2float(p.a[static_cast<std::size_t>(src) * p.K + k])) *
             static_cast<double>(__half2float(p.b[static_cast<std::size_t>(k) * p.N + n]));
      }
      s += static_cast<double>(__half2float(p.bias[static_cast<std::size_t>(n)]));
      if (scatter) s += static_cast<double>(__half2float(p.residual[static_cast<std::size_t>(dst) * p.N + n]));
      y[static_cast<std::size_t>(dst) * p.N + n] = s;
    }
  }
  return y;
}

/// The product of tile Tl: smallm::Gemm for a smallm::Tile, tc::Gemm otherwise.
template <class Tl>
struct IsSmallMTile : std::false_type {};
template <int... V>
struct IsSmallMTile<mc::smallm::Tile<V...>> : std::true_type {};
template <class Sh, class SA, class SB, class SY, class Tl, class Epi, bool = IsSmallMTile<Tl>::value>
struct ProductOf {
  using type = mc::tc::Gemm<__half, __half, float, Sh, SA, SB, SY, Tl, Epi>;
};
template <class Sh, class SA, class SB, class SY, class Tl, class Epi>
struct ProductOf<Sh, SA, SB, SY, Tl, Epi, true> {
  using type = mc::smallm::Gemm<__half, __half, Sh, SA, SB, SY, Tl, Epi>;
};

/// Runs the gathered (and, with Scatter, scattered + residual) product of tile Tl and compares.
template <int M, int N, int K, class Tl, bool Scatter>
void check(const Problem& p) {
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::RowMapped<mc::gemm::Strides<0, 0, 0, K, 1>>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SYd = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = typename std::conditional<Scatter, mc::gemm::RowMapped<SYd>, SYd>::type;
  using SBias = mc::gemm::Strides<0, 0, 0, 0, 1>;
  using Epi = mc::gemm::EpilogueFused<__half, SBias, true, mc::gemm::Act::none,
                                      Scatter ? mc::gemm::Residual::after_activation : mc::gemm::Residual::none>;
  using G = typename ProductOf<Sh, SA, SB, SY, Tl, Epi>::type;
  static_assert(G::kGatherA && G::kScatterY == Scatter, "row tables seen");
  const int rows = Scatter ? p.dst_rows : M;
  std::vector<__half> y(static_cast<std::size_t>(rows) * N, __float2half(std::nanf("")));
  typename G::Params params;
  params.A = p.a.data();
  params.B = p.b.data();
  params.Y = y.data();
  params.epilogue.bias = p.bias.data();
  if (Scatter) params.epilogue.residual = p.residual.data();
  params.a_rows = p.a_rows.data();
  params.y_rows = Scatter ? p.y_rows.data() : nullptr;
  tc_test::launch_product<G>(params);
  const std::vector<double> want = reference(p, Scatter);
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double got = static_cast<double>(__half2float(y[i]));
    const bool ok = std::isnan(want[i]) ? std::isnan(got) : std::abs(got - want[i]) <= 1e-3 + 1e-2 * std::abs(want[i]);
    if (!ok && ++bad <= 5) {
      INFO("element " << i << " (row " << i / N << "): got " << got << ", want " << want[i]);
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("tensor-core gemm row tables: gathered A with zero rows, scattered Y with skipped rows, residual at the row") {
  // The swin shape: 441 windowed rows of 96 channels from 256 tokens, back into 256 tokens.
  constexpr int M = 441, N = 96, K = 96;
  const Problem p = make_problem(256, 460, M, N, K, 7);
  SUBCASE("cp.async, 16-byte chunks, gather only") { check<M, N, K, mc::tc::Tile<64, 64, 32, 2, 2, true, 3>, false>(p); }
  SUBCASE("cp.async, gather and scatter + residual") { check<M, N, K, mc::tc::Tile<128, 64, 32, 2, 2, true, 4>, true>(p); }
  SUBCASE("registers (sm_75 staging), gather and scatter") { check<M, N, K, mc::tc::Tile<64, 64, 32, 2, 2, false>, true>(p); }
  SUBCASE("split-K: the reduction writes through the table") {
    check<M, N, K, mc::tc::Tile<64, 64, 32, 2, 2, true, 3, 2>, true>(p);
  }
}

TEST_CASE("tensor-core gemm row tables: odd K (element loads) and rows past the tile") {
  constexpr int M = 37, N = 24, K = 19;
  const Problem p = make_problem(11, 50, M, N, K, 11);
  check<M, N, K, mc::tc::Tile<32, 64, 32, 1, 4, true, 2>, true>(p);
  check<M, N, K, mc::tc::Tile<32, 64, 32, 1, 4, false>, false>(p);
}

TEST_CASE("small-M gemm row tables: K across warps and across blocks, through the tables") {
  // swin_t_64's windowed products: M 441 (9 windows of 49), C 96; the qkv product's N 288.
  constexpr int M = 441, N = 288, K = 96;
  const Problem p = make_problem(256, 460, M, N, K, 5);
  SUBCASE("4 warps on K, gather only") { check<M, N, K, mc::smallm::Tile<32, 48, 64, 1, 1, 4, 3>, false>(p); }
  SUBCASE("2 x 2 warps, 2 on K, gather and scatter + residual") {
    check<M, N, K, mc::smallm::Tile<64, 64, 64, 2, 2, 2, 3>, true>(p);
  }
  SUBCASE("split-K 2 across blocks: the last split writes through the table") {
    check<M, N, K, mc::smallm::Tile<32, 32, 64, 1, 1, 4, 2, 2>, true>(p);
  }
  SUBCASE("odd K (element loads), rows past the tile") {
    constexpr int M2 = 37, N2 = 24, K2 = 19;
    const Problem q = make_problem(11, 50, M2, N2, K2, 13);
    check<M2, N2, K2, mc::smallm::Tile<32, 32, 64, 1, 1, 4, 2>, true>(q);
  }
}

/// Elements of tile Tl's gathered product, run through a table whose first real row is moved by
/// one, that differ from the reference through the true table.
template <class Tl>
int wrong_table_differences() {
  constexpr int M = 64, N = 32, K = 32;
  Problem p = make_problem(40, 64, M, N, K, 3);
  Problem wrong = p;
  for (int& r : wrong.a_rows) {
    if (r >= 0) {
      r = (r + 1) % p.src_rows;
      break;
    }
  }
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::RowMapped<mc::gemm::Strides<0, 0, 0, K, 1>>;
  using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using Epi = mc::gemm::EpilogueFused<__half, mc::gemm::Strides<0, 0, 0, 0, 1>, true, mc::gemm::Act::none,
                                      mc::gemm::Residual::none>;
  using G = typename ProductOf<Sh, SA, SB, SY, Tl, Epi>::type;
  std::vector<__half> y(static_cast<std::size_t>(M) * N);
  typename G::Params params;
  params.A = p.a.data();
  params.B = p.b.data();
  params.Y = y.data();
  params.epilogue.bias = p.bias.data();
  params.a_rows = wrong.a_rows.data();
  tc_test::launch_product<G>(params);
  const std::vector<double> want = reference(p, false);
  int differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    differ += std::abs(static_cast<double>(__half2float(y[i])) - want[i]) > 1e-3 + 1e-2 * std::abs(want[i]);
  }
  return differ;
}

TEST_CASE("tensor-core gemm row tables: a wrong table fails the comparison") {
  // The tests above are not vacuous: a row read from the wrong source row shows.
  CHECK(wrong_table_differences<mc::tc::Tile<64, 32, 32, 2, 1, true, 2>>() > 0);
  CHECK(wrong_table_differences<mc::smallm::Tile<32, 32, 64, 1, 1, 4, 2>>() > 0);
}

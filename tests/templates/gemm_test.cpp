// templates/gemm.cuh on the host emulation against the reference interpreter: Gemm (transposes,
// alpha/beta, C broadcast), MatMul (batched, broadcast batch dims, 1-D operands), Einsum (batched
// matmul, inner product, one-operand sums / transposes / diagonals), every tile configuration, odd
// sizes. Each case also checks that the family's lowering (codegen/families/gemm.cpp) yields
// exactly the template arguments instantiated here, and the tile heuristic and the refusals.
#include "schedule/families.h"
#include "schedule/tactics.h"
#include "linear_test_util.h"
#include "tests/codegen/launch_text.h"

using namespace linear_test;
using modelc::linear::GemmLowering;
using modelc::linear::MatrixStrides;

namespace {

using T128x64 = mc::gemm::Tile<128, 64, 8, 8, 8>;
using T64x128 = mc::gemm::Tile<64, 128, 8, 8, 8>;
using T64x64 = mc::gemm::Tile<64, 64, 8, 4, 8>;
using T32x32 = mc::gemm::Tile<32, 32, 8, 4, 2>;
using TSkinnyM = mc::gemm::Tile<16, 64, 16, 2, 4>;
using TSkinnyN = mc::gemm::Tile<64, 16, 16, 4, 2>;

MatrixStrides ms(int64_t b0, int64_t b1, int64_t b2, int64_t row, int64_t col) {
  MatrixStrides s;
  s.batch = {b0, b1, b2};
  s.row = row;
  s.col = col;
  return s;
}

template <class S>
MatrixStrides ms_of() {
  return ms(S::kS0, S::kS1, S::kS2, S::kRow, S::kCol);
}

/// The lowering of `k` equals the template arguments of G (shape and A, B, Y strides).
template <class Sh, class SA, class SB, class SY>
void check_lowering(const GemmLowering& g) {
  CHECK(g.kind == GemmLowering::Kind::gemm);
  CHECK(g.batch == std::array<int64_t, 3>{Sh::kB0, Sh::kB1, Sh::kB2});
  CHECK(g.M == Sh::kM);
  CHECK(g.N == Sh::kN);
  CHECK(g.K == Sh::kK);
  CHECK(g.a == ms_of<SA>());
  CHECK(g.b == ms_of<SB>());
  CHECK(g.y == ms_of<SY>());
}

/// Runs Gemm<..., Tile, Epi> on A, B (and C) and returns Y.
template <class Sh, class SA, class SB, class SY, class Tl, class Epi>
std::vector<float> run_gemm(const Tensor& a, const Tensor& b, int64_t y_size, const typename Epi::Params& epi) {
  using K = mc::gemm::Gemm<float, float, Sh, SA, SB, SY, Tl, Epi>;
  const std::vector<float> av = floats(a), bv = floats(b);
  std::vector<float> y = output_buffer(y_size);
  launch<K>({av.data(), bv.data(), y.data(), epi});
  return y;
}

}  // namespace

TEST_CASE("gemm template: Gemm with transposes, alpha, beta and C broadcast, on every tile") {
  const int64_t M = 37, N = 29, K = 19;
  SUBCASE("transA, C of shape [N], alpha 0.5, beta 2") {
    OneNode t("Gemm", 13, {random({K, M}, 1), random({K, N}, 2), random({N}, 3)});
    t.n->set_attr_int("transA", 1);
    t.n->set_attr_float("alpha", 0.5);
    t.n->set_attr_float("beta", 2.0);
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, 1, M>;
    using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SC = mc::gemm::Strides<0, 0, 0, 0, 1>;
    const GemmLowering g = modelc::linear::lower_gemm(t.kernel("gemm"));
    check_lowering<Sh, SA, SB, SY>(g);
    CHECK(g.has_c);
    CHECK(g.c == ms_of<SC>());
    CHECK(g.alpha == 0.5);
    CHECK(g.beta == 2.0);
    using Epi = mc::gemm::EpilogueLinear<float, SC, true>;
    const std::vector<float> c = floats(t.feeds.at("x2"));
    const Epi::Params epi{0.5f, 2.0f, c.data()};
    check_close(run_gemm<Sh, SA, SB, SY, T128x64, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, T64x128, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, T64x64, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyN, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
  }
  SUBCASE("transB, C of shape [M, 1]") {
    OneNode t("Gemm", 13, {random({M, K}, 4), random({N, K}, 5), random({M, 1}, 6)});
    t.n->set_attr_int("transB", 1);
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, K>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SC = mc::gemm::Strides<0, 0, 0, 1, 0>;
    const GemmLowering g = modelc::linear::lower_gemm(t.kernel("gemm"));
    check_lowering<Sh, SA, SB, SY>(g);
    CHECK(g.c == ms_of<SC>());
    using Epi = mc::gemm::EpilogueLinear<float, SC, true>;
    const std::vector<float> c = floats(t.feeds.at("x2"));
    const Epi::Params epi{1.0f, 1.0f, c.data()};
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, T64x64, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
  }
  SUBCASE("transA and transB, full C, beta 0.25") {
    OneNode t("Gemm", 13, {random({K, M}, 7), random({N, K}, 8), random({M, N}, 9)});
    t.n->set_attr_int("transA", 1);
    t.n->set_attr_int("transB", 1);
    t.n->set_attr_float("beta", 0.25);
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, 1, M>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, K>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SC = mc::gemm::Strides<0, 0, 0, N, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    using Epi = mc::gemm::EpilogueLinear<float, SC, true>;
    const std::vector<float> c = floats(t.feeds.at("x2"));
    const Epi::Params epi{1.0f, 0.25f, c.data()};
    check_close(run_gemm<Sh, SA, SB, SY, T64x64, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyN, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);
  }
  SUBCASE("no C (opset 11), scalar C") {
    OneNode t("Gemm", 11, {random({M, K}, 10), random({K, N}, 11)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    const GemmLowering g = modelc::linear::lower_gemm(t.kernel("gemm"));
    check_lowering<Sh, SA, SB, SY>(g);
    CHECK_FALSE(g.has_c);
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, {}),
                want);

    OneNode s("Gemm", 13, {random({M, K}, 10), random({K, N}, 11), random({}, 12)});
    s.n->set_attr_float("alpha", -1.5);
    const Tensor want_s = s.reference()[0];
    const GemmLowering gs = modelc::linear::lower_gemm(s.kernel("gemm"));
    CHECK(gs.c == ms(0, 0, 0, 0, 0));
    using Epi = mc::gemm::EpilogueLinear<float, mc::gemm::Strides<0, 0, 0, 0, 0>, true>;
    const std::vector<float> c = floats(s.feeds.at("x2"));
    check_close(run_gemm<Sh, SA, SB, SY, T64x64, Epi>(s.feeds.at("x0"), s.feeds.at("x1"), M * N, {-1.5f, 1.0f, c.data()}),
                want_s);
  }
}

TEST_CASE("gemm template: MatMul batched with broadcast batch dims and 1-D operands") {
  SUBCASE("[2x1x5x7] x [3x7x6]") {
    OneNode t("MatMul", 13, {random({2, 1, 5, 7}, 20), random({3, 7, 6}, 21)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 2, 3, 5, 6, 7>;
    using SA = mc::gemm::Strides<0, 35, 0, 7, 1>;
    using SB = mc::gemm::Strides<0, 0, 42, 6, 1>;
    using SY = mc::gemm::Strides<0, 90, 30, 6, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 180, {}),
                want);
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 180, {}),
                want);
  }
  SUBCASE("[7] x [2x7x4]: a vector times a batch of matrices") {
    OneNode t("MatMul", 13, {random({7}, 22), random({2, 7, 4}, 23)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 2, 1, 4, 7>;
    using SA = mc::gemm::Strides<0, 0, 0, 0, 1>;
    using SB = mc::gemm::Strides<0, 0, 28, 4, 1>;
    using SY = mc::gemm::Strides<0, 0, 4, 0, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 8, {}),
                want);
  }
  SUBCASE("[3x5x7] x [7]: a batch of matrices times a vector") {
    OneNode t("MatMul", 13, {random({3, 5, 7}, 24), random({7}, 25)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 3, 5, 1, 7>;
    using SA = mc::gemm::Strides<0, 0, 35, 7, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, 0>;
    using SY = mc::gemm::Strides<0, 0, 5, 1, 0>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 15, {}),
                want);
  }
  SUBCASE("[2x3x33x17] x [2x3x17x40]: batch dims merge into one") {
    OneNode t("MatMul", 13, {random({2, 3, 33, 17}, 26), random({2, 3, 17, 40}, 27)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 6, 33, 40, 17>;
    using SA = mc::gemm::Strides<0, 0, 561, 17, 1>;
    using SB = mc::gemm::Strides<0, 0, 680, 40, 1>;
    using SY = mc::gemm::Strides<0, 0, 1320, 40, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 7920, {}),
                want);
  }
  SUBCASE("[1x4] x [4x1]: a dot product as 1x1") {
    OneNode t("MatMul", 13, {random({1, 4}, 28), random({4, 1}, 29)});
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, 1, 1, 4>;
    using SA = mc::gemm::Strides<0, 0, 0, 4, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, 1>;
    using SY = mc::gemm::Strides<0, 0, 0, 1, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 1, {}),
                want);
  }
}

TEST_CASE("gemm template: Einsum as a batched GEMM") {
  SUBCASE("'bij, bjk -> bik' (test_einsum_batch_matmul's equation)") {
    OneNode t("Einsum", 12, {random({5, 2, 3}, 30), random({5, 3, 4}, 31)});
    t.n->set_attr_string("equation", "bij, bjk -> bik");
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 5, 2, 4, 3>;
    using SA = mc::gemm::Strides<0, 0, 6, 3, 1>;
    using SB = mc::gemm::Strides<0, 0, 12, 4, 1>;
    using SY = mc::gemm::Strides<0, 0, 8, 4, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 40, {}),
                want);
  }
  SUBCASE("'i,i' (test_einsum_inner_prod's equation): a 1x1 GEMM") {
    OneNode t("Einsum", 12, {random({5}, 32), random({5}, 33)});
    t.n->set_attr_string("equation", "i,i");
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, 1, 1, 5>;
    using SA = mc::gemm::Strides<0, 0, 0, 0, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, 0>;
    using SY = mc::gemm::Strides<0, 0, 0, 0, 0>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 1, {}),
                want);
  }
  SUBCASE("'hik,hjk->hij' (attention scores: B transposed), several letters merged 'abik,abjk->abij'") {
    OneNode t("Einsum", 12, {random({2, 3, 9, 6}, 34), random({2, 3, 11, 6}, 35)});
    t.n->set_attr_string("equation", "abik,abjk->abij");
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 6, 9, 11, 6>;
    using SA = mc::gemm::Strides<0, 0, 54, 6, 1>;
    using SB = mc::gemm::Strides<0, 0, 66, 1, 6>;
    using SY = mc::gemm::Strides<0, 0, 99, 11, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 594, {}),
                want);
  }
  SUBCASE("'ij,kj' implicit output 'ik'; 'mk,kn->nm' (transposed output)") {
    OneNode t("Einsum", 12, {random({4, 3}, 36), random({5, 3}, 37)});
    t.n->set_attr_string("equation", "ij,kj");
    const Tensor want = t.reference()[0];
    using Sh = mc::gemm::Shape<1, 1, 1, 4, 5, 3>;
    using SA = mc::gemm::Strides<0, 0, 0, 3, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, 3>;
    using SY = mc::gemm::Strides<0, 0, 0, 5, 1>;
    check_lowering<Sh, SA, SB, SY>(modelc::linear::lower_gemm(t.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, mc::gemm::EpilogueIdentity>(t.feeds.at("x0"), t.feeds.at("x1"), 20, {}),
                want);

    OneNode u("Einsum", 12, {random({4, 3}, 38), random({3, 5}, 39)});
    u.n->set_attr_string("equation", "mk,kn->nm");
    const Tensor want_u = u.reference()[0];
    using SYt = mc::gemm::Strides<0, 0, 0, 1, 4>;
    using SBu = mc::gemm::Strides<0, 0, 0, 5, 1>;
    check_lowering<Sh, SA, SBu, SYt>(modelc::linear::lower_gemm(u.kernel("gemm")));
    check_close(run_gemm<Sh, SA, SBu, SYt, TSkinnyM, mc::gemm::EpilogueIdentity>(u.feeds.at("x0"), u.feeds.at("x1"), 20, {}),
                want_u);
  }
}

namespace {

template <int64_t... V>
std::vector<int64_t> ints(mc::gemm::Ints<V...>) {
  return {V...};
}

template <class OutDims, class OutStrides, class SumDims, class SumStrides>
void check_sum(OneNode& t) {
  const Tensor want = t.reference()[0];
  const GemmLowering g = modelc::linear::lower_gemm(t.kernel("gemm"));
  REQUIRE(g.kind == GemmLowering::Kind::strided_sum);
  CHECK(g.out_dims == ints(OutDims{}));
  CHECK(g.out_strides == ints(OutStrides{}));
  CHECK(g.sum_dims == ints(SumDims{}));
  CHECK(g.sum_strides == ints(SumStrides{}));
  using K = mc::gemm::StridedSum<float, float, mc::gemm::StridedIndex<OutDims, OutStrides>,
                                 mc::gemm::StridedIndex<SumDims, SumStrides>>;
  const std::vector<float> x = floats(t.feeds.at("x0"));
  std::vector<float> y = output_buffer(want.numel());
  launch<K>({x.data(), y.data()});
  check_close(y, want);
}

}  // namespace

TEST_CASE("gemm template: one-operand Einsum as a strided sum") {
  using mc::gemm::Ints;
  SUBCASE("'ij->i' (test_einsum_sum's equation)") {
    OneNode t("Einsum", 12, {random({3, 4}, 40)});
    t.n->set_attr_string("equation", "ij->i");
    check_sum<Ints<3>, Ints<4>, Ints<4>, Ints<1>>(t);
  }
  SUBCASE("'ij->ji' (test_einsum_transpose's equation)") {
    OneNode t("Einsum", 12, {random({3, 4}, 41)});
    t.n->set_attr_string("equation", "ij->ji");
    check_sum<Ints<4, 3>, Ints<1, 4>, Ints<>, Ints<>>(t);
  }
  SUBCASE("'bii->bi' (a batched diagonal) and 'ijk' implicit (identity) and 'ijk->' (total)") {
    OneNode t("Einsum", 12, {random({3, 5, 5}, 42)});
    t.n->set_attr_string("equation", "bii->bi");
    check_sum<Ints<3, 5>, Ints<25, 6>, Ints<>, Ints<>>(t);
    OneNode u("Einsum", 12, {random({2, 3, 4}, 43)});
    u.n->set_attr_string("equation", "ijk->");
    check_sum<Ints<>, Ints<>, Ints<2, 3, 4>, Ints<12, 4, 1>>(u);
  }
}

TEST_CASE("gemm family: refusals name the node and the equation") {
  auto message = [](OneNode& t) -> std::string {
    try {
      modelc::linear::lower_gemm(t.kernel("gemm"));
    } catch (const modelc::Error& e) {
      return e.what();
    }
    return "";
  };
  {
    OneNode t("Einsum", 12, {random({2, 3}, 50), random({3, 4}, 51), random({4, 5}, 52)});
    t.n->set_attr_string("equation", "ij,jk,kl->il");
    const std::string m = message(t);
    CHECK(m.find("'node'") != std::string::npos);
    CHECK(m.find("ij,jk,kl->il") != std::string::npos);
  }
  {
    OneNode t("Einsum", 12, {random({2, 3}, 53), random({3, 4}, 54)});
    t.n->set_attr_string("equation", "ij,jk->i");
    const std::string m = message(t);
    CHECK(m.find("ij,jk->i") != std::string::npos);
    CHECK(m.find("'k'") != std::string::npos);
  }
  {
    OneNode t("Einsum", 12, {random({3, 3}, 55), random({3, 4}, 56)});
    t.n->set_attr_string("equation", "ii,ij->j");
    CHECK(message(t).find("diagonal") != std::string::npos);
  }
  {
    // Row letters interleaved differently in A and Y cannot merge into one strided dim.
    OneNode t("Einsum", 12, {random({2, 3, 4}, 57), random({4, 5}, 58)});
    t.n->set_attr_string("equation", "abk,kn->ban");
    CHECK(message(t).find("abk,kn->ban") != std::string::npos);
  }
}

TEST_CASE("gemm family: the tile heuristic") {
  modelc::Target t;
  t.sm_count = 80;
  using modelc::linear::choose_tile;
  CHECK(choose_tile(1, 1, 1000, t).name() == "16x64x16 t2x4");
  CHECK(choose_tile(1, 1000, 1, t).name() == "64x16x16 t4x2");
  CHECK(choose_tile(1, 2048, 1024, t).name() == "128x64x8 t8x8");   // 16 x 16 = 256 blocks
  CHECK(choose_tile(1, 1024, 2048, t).name() == "64x128x8 t8x8");
  CHECK(choose_tile(1, 512, 640, t).name() == "64x64x8 t4x8");      // 4 x 5 = 20 big tiles, 80 of 64x64
  CHECK(choose_tile(1, 64, 200, t).name() == "32x32x8 t4x2");       // too small for a wave of 64x64
  CHECK(choose_tile(64, 64, 200, t).name() == "64x128x8 t8x8");     // the batch fills the GPU
  std::string why;
  choose_tile(1, 64, 200, t, &why);
  CHECK(why.find("32x32x8") != std::string::npos);

  // plan records the tactic and a note.
  OneNode m("MatMul", 13, {random({64, 32}, 60), random({32, 48}, 61)});
  modelc::Kernel k = m.kernel("gemm");
  modelc::plan_kernel(k);
  modelc::choose_tactic(k, {t});
  CHECK(modelc::linear::tile_of(k).bm == 32);
  CHECK(modelc::linear::tile_of(k).threads() == 128);
  CHECK(k.note.find("batch 1 M 64 N 48 K 32; SIMT tile 32x32x8") != std::string::npos);
}

TEST_CASE("gemm template: __half storage with FP32 accumulation (the next issue's SIMT fallback)") {
  const int64_t M = 21, N = 13, K = 35;
  OneNode t("MatMul", 13, {random({M, K}, 70).cast(DType::float16), random({K, N}, 71).cast(DType::float16)});
  const Tensor want = t.reference()[0];
  REQUIRE(want.dtype() == DType::float16);
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using K_ = mc::gemm::Gemm<__half, float, Sh, mc::gemm::Strides<0, 0, 0, K, 1>, mc::gemm::Strides<0, 0, 0, N, 1>,
                            mc::gemm::Strides<0, 0, 0, N, 1>, T32x32, mc::gemm::EpilogueIdentity>;
  const __half* a = reinterpret_cast<const __half*>(t.feeds.at("x0").raw());
  const __half* b = reinterpret_cast<const __half*>(t.feeds.at("x1").raw());
  std::vector<__half> y(static_cast<std::size_t>(M * N), __float2half(std::nanf("")));
  launch<K_>({a, b, y.data(), {}});
  std::vector<float> got;
  for (const __half& h : y) got.push_back(__half2float(h));
  // Both round the FP32/double sum to half once: they may differ by one half ulp.
  check_close(got, want, 1e-3, 1e-3);
}

TEST_CASE("gemm template: every fused activation matches the reference's") {
  using modelc::ops::Activation;
  using mc::gemm::Act;
  auto check = [](auto tag, Activation kind, double alpha = 0, double beta = 0, std::optional<double> lo = {},
                  std::optional<double> hi = {}) {
    constexpr Act A = decltype(tag)::value;
    modelc::ops::EpilogueActivation e;
    e.kind = kind;
    e.alpha = alpha;
    e.beta = beta;
    e.min = lo;
    e.max = hi;
    const mc::gemm::ActParams p{float(alpha), float(beta), lo ? float(*lo) : -INFINITY, hi ? float(*hi) : INFINITY};
    for (double x = -7.0; x <= 7.0; x += 0.0625) {
      const double want = modelc::ops::apply_activation(e, static_cast<float>(x));
      const double got = mc::gemm::activate<A>(static_cast<float>(x), p);
      INFO(std::string(modelc::ops::activation_name(kind)) << " at " << x << ": got " << got << ", want " << want);
      CHECK(std::abs(got - want) <= 1e-6 + 2e-6 * std::abs(want));
    }
  };
  check(std::integral_constant<Act, Act::none>{}, Activation::none);
  check(std::integral_constant<Act, Act::relu>{}, Activation::relu);
  check(std::integral_constant<Act, Act::clip>{}, Activation::clip, 0, 0, 0.0, 6.0);
  check(std::integral_constant<Act, Act::clip>{}, Activation::clip, 0, 0, std::nullopt, 1.5);
  check(std::integral_constant<Act, Act::leaky_relu>{}, Activation::leaky_relu, 0.1);
  check(std::integral_constant<Act, Act::sigmoid>{}, Activation::sigmoid);
  check(std::integral_constant<Act, Act::tanh>{}, Activation::tanh);
  check(std::integral_constant<Act, Act::hard_sigmoid>{}, Activation::hard_sigmoid, 0.2, 0.5);
  check(std::integral_constant<Act, Act::hard_swish>{}, Activation::hard_swish, 1.0 / 6, 0.5);
  check(std::integral_constant<Act, Act::silu>{}, Activation::silu);
  check(std::integral_constant<Act, Act::gelu>{}, Activation::gelu);
  check(std::integral_constant<Act, Act::gelu_tanh>{}, Activation::gelu_tanh);
}

TEST_CASE("gemm template: fused epilogues (FusedGemm, FusedMatMul) with bias, activation and residual") {
  using modelc::ops::Activation;
  SUBCASE("FusedGemm: transB, C [N], alpha 0.5, beta 2, gelu, residual after the activation") {
    const int64_t M = 19, N = 23, K = 11;
    OneNode t("FusedGemm", 13, {random({M, K}, 80), random({N, K}, 81), random({N}, 82), random({M, N}, 83)});
    t.n->set_attr_int("transB", 1);
    t.n->set_attr_float("alpha", 0.5);
    t.n->set_attr_float("beta", 2.0);
    fuse(t, activation(Activation::gelu), "after_activation");
    const Tensor want = t.reference()[0];
    modelc::Kernel k = t.kernel("gemm");
    const GemmLowering g = modelc::linear::lower_gemm(k);
    using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
    using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, K>;
    using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
    using SC = mc::gemm::Strides<0, 0, 0, 0, 1>;
    check_lowering<Sh, SA, SB, SY>(g);
    CHECK(g.c == ms_of<SC>());
    using Epi = mc::gemm::EpilogueFused<float, SC, true, mc::gemm::Act::gelu, mc::gemm::Residual::after_activation>;
    const std::vector<float> c = floats(t.feeds.at("x2")), r = floats(t.feeds.at("x3"));
    const Epi::Params epi{0.5f, 2.0f, c.data(), r.data(), {0, 0, -INFINITY, INFINITY}};
    check_close(run_gemm<Sh, SA, SB, SY, T32x32, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), M * N, epi), want);

    // The emitted code names the same epilogue.
    const modelc::KernelFamily* f = modelc::FamilyRegistry::instance().find("gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::Target{}});
    const modelc::KernelLaunches e = f->emit(k, NameContext{});
    const std::string text = modelc::test::launch_text(e);
    INFO(text);
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::gemm::EpilogueFused<float, mc::gemm::Strides<0, 0, 0, 0, 1>, true, "
                                  "mc::gemm::Act::gelu, mc::gemm::Residual::after_activation>") != std::string::npos);
    // The epilogue's fields by name, only those it reads (gelu has no parameters).
    CHECK(text.find("epilogue.alpha = 0.5f;\nepilogue.beta = 2.0f;\nepilogue.bias = const:x2;\n"
                    "epilogue.residual = const:x3;\n") != std::string::npos);
    CHECK(text.find("epilogue.act") == std::string::npos);
    CHECK(e.launches[0].comment.find("FusedGemm 'node'") != std::string::npos);
  }
  SUBCASE("FusedMatMul: batched, bias per column, clip to [0, 6] (relu6), residual before") {
    OneNode t("FusedMatMul", 13, {random({2, 3, 5, 7}, 84), random({7, 6}, 85), random({6}, 86), random({2, 3, 5, 6}, 87)});
    fuse(t, activation(Activation::clip, 0, 0, 0.0, 0.5), "before_activation");
    const Tensor want = t.reference()[0];
    modelc::Kernel k = t.kernel("gemm");
    const GemmLowering g = modelc::linear::lower_gemm(k);
    using Sh = mc::gemm::Shape<1, 1, 6, 5, 6, 7>;
    using SA = mc::gemm::Strides<0, 0, 35, 7, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 6, 1>;
    using SY = mc::gemm::Strides<0, 0, 30, 6, 1>;
    using SBias = mc::gemm::Strides<0, 0, 0, 0, 1>;
    check_lowering<Sh, SA, SB, SY>(g);
    CHECK(g.has_c);
    CHECK(g.c == ms_of<SBias>());
    using Epi = mc::gemm::EpilogueFused<float, SBias, true, mc::gemm::Act::clip, mc::gemm::Residual::before_activation>;
    const std::vector<float> b = floats(t.feeds.at("x2")), r = floats(t.feeds.at("x3"));
    const Epi::Params epi{1.0f, 1.0f, b.data(), r.data(), {0, 0, 0.0f, 0.5f}};
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), 180, epi), want);
  }
  SUBCASE("FusedMatMul with a vector B: the bias runs along the rows") {
    OneNode t("FusedMatMul", 13, {random({4, 7}, 88), random({7}, 89), random({4}, 90)});
    fuse(t, activation(Activation::sigmoid));
    const Tensor want = t.reference()[0];
    const GemmLowering g = modelc::linear::lower_gemm(t.kernel("gemm"));
    using Sh = mc::gemm::Shape<1, 1, 1, 4, 1, 7>;
    using SA = mc::gemm::Strides<0, 0, 0, 7, 1>;
    using SB = mc::gemm::Strides<0, 0, 0, 1, 0>;
    using SY = mc::gemm::Strides<0, 0, 0, 1, 0>;
    using SBias = mc::gemm::Strides<0, 0, 0, 1, 0>;
    check_lowering<Sh, SA, SB, SY>(g);
    CHECK(g.c == ms_of<SBias>());
    using Epi = mc::gemm::EpilogueFused<float, SBias, true, mc::gemm::Act::sigmoid, mc::gemm::Residual::none>;
    const std::vector<float> b = floats(t.feeds.at("x2"));
    const Epi::Params epi{1.0f, 1.0f, b.data(), nullptr, {0, 0, -INFINITY, INFINITY}};
    check_close(run_gemm<Sh, SA, SB, SY, TSkinnyM, Epi>(t.feeds.at("x0"), t.feeds.at("x1"), 4, epi), want);
  }
}

TEST_CASE("gemm template: integer MatMul accumulates exactly in int64") {
  std::mt19937_64 rng(90);
  std::uniform_int_distribution<int64_t> u(-1000, 1000);
  std::vector<int64_t> a(5 * 37), b(37 * 3);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  OneNode t("MatMul", 13, {Tensor::from_i64(DType::int32, {5, 37}, a), Tensor::from_i64(DType::int32, {37, 3}, b)});
  const Tensor want = t.reference()[0];
  CHECK(modelc::linear::acc_type(DType::int32) == "int64_t");
  using K = mc::gemm::Gemm<int32_t, int64_t, mc::gemm::Shape<1, 1, 1, 5, 3, 37>, mc::gemm::Strides<0, 0, 0, 37, 1>,
                           mc::gemm::Strides<0, 0, 0, 3, 1>, mc::gemm::Strides<0, 0, 0, 3, 1>, T32x32,
                           mc::gemm::EpilogueIdentity>;
  std::vector<int32_t> y(15, -1);
  launch<K>({t.feeds.at("x0").data<int32_t>(), t.feeds.at("x1").data<int32_t>(), y.data(), {}});
  CHECK(std::vector<int64_t>(y.begin(), y.end()) == want.to_i64());
}

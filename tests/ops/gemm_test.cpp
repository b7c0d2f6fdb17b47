// Gemm, MatMul, Einsum: shapes, hand-computed values, broadcasting, FLOPs, errors.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <random>

#include "op_test_util.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor iota(Shape s, float start = 0) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from_f32(std::move(s), v);
}

Tensor gemm(int opset, std::vector<Tensor> ins, const std::function<void(Node&)>& set = nullptr) {
  OneNode n("Gemm", opset, ins);
  if (set) set(*n.n);
  return n.run1();
}

Tensor einsum(const std::string& eq, std::vector<Tensor> ins) {
  OneNode n("Einsum", 12, ins);
  n.n->set_attr_string("equation", eq);
  return n.run1();
}

}  // namespace

TEST_CASE("Gemm: plain, transposes, alpha/beta, broadcast C") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  // A * B = [[4, 5], [10, 11]]
  CHECK(values(gemm(13, {a, b})) == std::vector<double>{4, 5, 10, 11});
  CHECK(values(gemm(13, {a, b, f32({2}, {1, 2})})) == std::vector<double>{5, 7, 11, 13});          // C [N]
  CHECK(values(gemm(13, {a, b, f32({2, 1}, {1, 2})})) == std::vector<double>{5, 6, 12, 13});       // C [M, 1]
  CHECK(values(gemm(13, {a, b, f32({}, {3})})) == std::vector<double>{7, 8, 13, 14});              // scalar C
  CHECK(values(gemm(7, {a, b, f32({2, 2}, {1, 1, 1, 1})}, [](Node& n) {
          n.set_attr_float("alpha", 0.5);
          n.set_attr_float("beta", 2.0);
        })) == std::vector<double>{4, 4.5, 7, 7.5});
  // transA / transB: the same product from the transposed operands.
  const Tensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});
  const Tensor bt = f32({2, 3}, {1, 0, 1, 0, 1, 1});
  const Tensor y = gemm(11, {at, bt}, [](Node& n) {
    n.set_attr_int("transA", 1);
    n.set_attr_int("transB", 1);
  });
  CHECK(y.shape() == Shape{2, 2});
  CHECK(values(y) == std::vector<double>{4, 5, 10, 11});
  // Opset 6: C must be M x N unless broadcast=1.
  CHECK_THROWS_AS(gemm(6, {a, b, f32({2}, {1, 2})}), Error);
  CHECK(values(gemm(6, {a, b, f32({2}, {1, 2})}, [](Node& n) { n.set_attr_int("broadcast", 1); })) ==
        std::vector<double>{5, 7, 11, 13});
}

TEST_CASE("Gemm errors and FLOPs") {
  const Tensor a = iota({2, 3}), b = iota({3, 4});
  CHECK_THROWS_AS(gemm(7, {a, b}), Error);                                  // C required before opset 11
  CHECK_THROWS_AS(gemm(13, {a, iota({4, 3})}), Error);                      // K mismatch
  CHECK_THROWS_AS(gemm(13, {iota({1, 2, 3}), b}), Error);                   // rank 3
  CHECK_THROWS_AS(gemm(13, {a, b, iota({3})}), Error);                      // C does not broadcast
  CHECK_THROWS_AS(gemm(13, {a, b, iota({2, 4, 1})}), Error);                // C rank 3
  CHECK_THROWS_AS(gemm(13, {a, b}, [](Node& n) { n.set_attr_int("transA", 2); }), Error);
  CHECK_THROWS_AS(gemm(13, {a, Tensor::from_i64(DType::int64, {3, 4}, std::vector<int64_t>(12, 1))}), Error);
  OneNode f("Gemm", 13, {a, b, iota({4})});
  CHECK(f.flops() == 2 * 2 * 4 * 3 + 2 * 4);
  const ops::OpDef& d = ops::lookup(*f.n);
  CHECK(d.fusion == ops::Fusion::producer);
  CHECK(d.precision == ops::Precision::fp16);
}

TEST_CASE("MatMul: numpy semantics for 1-D operands and batch broadcasting") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor v = f32({3}, {1, 0, -1});
  OneNode mv("MatMul", 13, {a, v});
  Tensor y = mv.run1();
  CHECK(y.shape() == Shape{2});
  CHECK(values(y) == std::vector<double>{-2, -2});

  OneNode vm("MatMul", 13, {f32({2}, {1, 1}), a});
  y = vm.run1();
  CHECK(y.shape() == Shape{3});
  CHECK(values(y) == std::vector<double>{5, 7, 9});

  OneNode vv("MatMul", 13, {v, v});
  y = vv.run1();
  CHECK(y.shape() == Shape{});
  CHECK(values(y) == std::vector<double>{2});

  // [2, 1, 2, 3] x [3, 3, 2] -> [2, 3, 2, 2]: A's batch dim 1 and B's missing one broadcast.
  const Tensor A = iota({2, 1, 2, 3});
  const Tensor B = iota({3, 3, 2});
  OneNode bm("MatMul", 13, {A, B});
  y = bm.run1();
  REQUIRE(y.shape() == Shape{2, 3, 2, 2});
  const std::vector<double> got = values(y);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t c = 0; c < 2; ++c) {
          double want = 0;
          for (int64_t k = 0; k < 3; ++k) want += A.f64_at((i * 2 + r) * 3 + k) * B.f64_at((j * 3 + k) * 2 + c);
          CHECK(got[((i * 3 + j) * 2 + r) * 2 + c] == want);
        }
  CHECK(bm.flops() == 2 * 2 * 2 * 3 * 6);

  // Integer matmul stays exact.
  OneNode im("MatMul", 13, {Tensor::from_i64(DType::int64, {1, 2}, {3, 4}), Tensor::from_i64(DType::int64, {2, 1}, {5, 6})});
  y = im.run1();
  CHECK(y.dtype() == DType::int64);
  CHECK(y.to_i64() == std::vector<int64_t>{39});
}

TEST_CASE("MatMul and Gemm match a direct product across the cache blocks (K > 128, N > 512)") {
  const int64_t M = 3, K = 131, N = 517;
  std::vector<float> av(M * K), bv(K * N);
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>((i * 7) % 11) - 5;
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>((i * 5) % 13) - 6;
  const Tensor a = f32({M, K}, av), b = f32({K, N}, bv);
  std::vector<double> want(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) want[i * N + j] += av[i * K + k] * static_cast<double>(bv[k * N + j]);
  OneNode mm("MatMul", 13, {a, b});
  CHECK(values(mm.run1()) == want);  // small integers: exact
  CHECK(values(gemm(13, {a, b})) == want);
}

TEST_CASE("MatMul errors") {
  auto mm = [](Shape a, Shape b) {
    OneNode n("MatMul", 13, {iota(a), iota(b)});
    n.run1();
  };
  CHECK_THROWS_AS(mm({2, 3}, {2, 3}), Error);
  CHECK_THROWS_AS(mm({2, 2, 3}, {3, 3, 4}), Error);  // batch 2 vs 3
  CHECK_THROWS_AS(mm({}, {3}), Error);
  CHECK_THROWS_AS(mm({3}, {4}), Error);
  OneNode t("MatMul", 13, {iota({2, 2}), Tensor::from_i64(DType::int64, {2, 2}, {1, 2, 3, 4})});
  CHECK_THROWS_AS(t.run1(), Error);  // mixed types
}

TEST_CASE("Einsum: matmul-like forms, transposes, reductions, diagonals") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3, 2}, {1, 0, 0, 1, 1, 1});
  CHECK(values(einsum("ij,jk->ik", {a, b})) == std::vector<double>{4, 5, 10, 11});
  CHECK(values(einsum("ij,jk", {a, b})) == std::vector<double>{4, 5, 10, 11});  // implicit output "ik"
  CHECK(values(einsum("ij, jk -> ik", {a, b})) == std::vector<double>{4, 5, 10, 11});
  Tensor y = einsum("ij->ji", {a});
  CHECK(y.shape() == Shape{3, 2});
  CHECK(values(y) == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(values(einsum("ba", {a})) == std::vector<double>{1, 4, 2, 5, 3, 6});  // implicit: alphabetical
  CHECK(values(einsum("ij->i", {a})) == std::vector<double>{6, 15});
  CHECK(values(einsum("ij->", {a})) == std::vector<double>{21});
  CHECK(values(einsum("i,i->", {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})})) == std::vector<double>{32});
  CHECK(values(einsum("i,j->ij", {f32({2}, {1, 2}), f32({2}, {3, 4})})) == std::vector<double>{3, 4, 6, 8});
  const Tensor sq = f32({2, 2}, {1, 2, 3, 4});
  CHECK(values(einsum("ii->i", {sq})) == std::vector<double>{1, 4});
  CHECK(values(einsum("ii", {sq})) == std::vector<double>{5});

  // Batched: bij,bjk->bik and the attention form bhid,bhjd->bhij.
  const Tensor p = iota({2, 2, 3}), q = iota({2, 3, 2});
  y = einsum("bij,bjk->bik", {p, q});
  REQUIRE(y.shape() == Shape{2, 2, 2});
  OneNode mm("MatMul", 13, {p, q});
  CHECK(values(y) == values(mm.run1()));
  const Tensor qh = iota({1, 2, 3, 4}), kh = iota({1, 2, 2, 4}, 1);
  y = einsum("bhid,bhjd->bhij", {qh, kh});
  REQUIRE(y.shape() == Shape{1, 2, 3, 2});
  const std::vector<double> got = values(y);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        double want = 0;
        for (int64_t d = 0; d < 4; ++d) want += qh.f64_at((h * 3 + i) * 4 + d) * kh.f64_at((h * 2 + j) * 4 + d);
        CHECK(got[(h * 3 + i) * 2 + j] == want);
      }
}

TEST_CASE("Einsum: an ellipsis stands for the dims no letter names, broadcast right-aligned") {
  // Batched matrix product over two leading dims, and the batch diagonal of ONNX's node test.
  const Tensor p = iota({2, 2, 2, 3}), q = iota({2, 2, 3, 2}, 1);
  Tensor y = einsum("...ij,...jk->...ik", {p, q});
  REQUIRE(y.shape() == Shape{2, 2, 2, 2});
  CHECK(values(y) == values(einsum("abij,abjk->abik", {p, q})));
  const Tensor d = iota({3, 4, 4});
  y = einsum("...ii ->...i", {d});
  REQUIRE(y.shape() == Shape{3, 4});
  CHECK(values(y) == values(einsum("bii->bi", {d})));
  // Fewer ellipsis dims in one operand: its dims are the last ones; an implicit output puts the
  // ellipsis first, then the letters that appear once.
  const Tensor v = iota({5, 3});
  y = einsum("...i,i", {v, iota({3})});
  REQUIRE(y.shape() == Shape{5});
  CHECK(values(y) == values(einsum("ai,i->a", {v, iota({3})})));
  y = einsum("i...->...", {iota({2, 3})});
  CHECK(values(y) == values(einsum("ia->a", {iota({2, 3})})));
  // An ellipsis in the inputs but not in an explicit output: its dims are summed.
  y = einsum("...i->i", {iota({2, 3})});
  CHECK(values(y) == values(einsum("ai->i", {iota({2, 3})})));
}

TEST_CASE("Einsum errors and FLOPs") {
  const Tensor a = iota({2, 3}), b = iota({3, 2});
  try {
    einsum("..i.j,jk->ik", {a, b});
    FAIL("no error for a stray '.'");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("not part of one ellipsis") != std::string::npos);
  }
  CHECK_THROWS_AS(einsum("...ijk->i", {a}), Error);       // 3 letters and an ellipsis for rank 2
  CHECK_THROWS_AS(einsum("ij,ij->ij", {a, b}), Error);    // i is 2 and 3
  CHECK_THROWS_AS(einsum("ij->ik", {a}), Error);          // k is in no operand
  CHECK_THROWS_AS(einsum("ij->ii", {a}), Error);          // repeated output letter
  CHECK_THROWS_AS(einsum("ijk->i", {a}), Error);          // 3 letters for rank 2
  CHECK_THROWS_AS(einsum("ij,jk->ik", {a}), Error);       // 2 terms, 1 input
  CHECK_THROWS_AS(einsum("i1->i", {a}), Error);           // not a letter
  OneNode none("Einsum", 12, {a});
  CHECK_THROWS_AS(none.run1(), Error);                    // no equation
  OneNode f("Einsum", 12, {a, b});
  f.n->set_attr_string("equation", "ij,jk->ik");
  CHECK(f.flops() == 2 * 2 * 3 * 2);
}

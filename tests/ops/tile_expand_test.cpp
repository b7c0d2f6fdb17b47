// Tile and Expand: shapes, values, exact copies of every element type, and
// the errors bad inputs give.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/graph.h"
#include "op_test_util.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {


void check_values(const Tensor& t, const std::vector<double>& want, double eps = 1e-6) {
  const std::vector<double> got = t.to_f64();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
    }
  }
}

}  // namespace

TEST_CASE("Tile repeats along each axis") {
  ConstInputsNode t("Tile", 13, f32({2, 2}, {1, 2, 3, 4}), {i64({2}, {2, 3})});
  const Tensor y = t.run1();
  CHECK(y.shape() == Shape{4, 6});
  check_values(y, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});

  ConstInputsNode z("Tile", 6, Tensor::from_i64(DType::boolean, {2}, {1, 0}), {i64({1}, {0})});
  const Tensor e = z.run1();
  CHECK(e.shape() == Shape{0});
  CHECK(e.dtype() == DType::boolean);

  const int64_t big = (int64_t{1} << 62) + 1;
  ConstInputsNode b("Tile", 13, i64({1}, {big}), {i64({1}, {2})});
  CHECK(b.run1().to_i64() == std::vector<int64_t>{big, big});
}

TEST_CASE("Tile: bad repeats are Errors") {
  const Tensor x = f32({2, 2}, {1, 2, 3, 4});
  {
    ConstInputsNode t("Tile", 13, x, {i64({1}, {2})});  // one value for a 2-D input
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Tile", 13, x, {i64({2}, {1, -1})});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Tile", 13, x, {i64({2}, {1, 2})}, 1, 1);  // not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Tile", 13, x, {i64({2}, {int64_t{1} << 40, int64_t{1} << 40})});  // overflowing shape
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Tile", 13, x, {Tensor::from_i64(DType::int32, {2}, {1, 2})});  // repeats must be int64
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("Expand broadcasts both ways") {
  const Tensor x = f32({3, 1}, {1, 2, 3});
  {
    ConstInputsNode t("Expand", 8, x, {i64({3}, {2, 1, 4})});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{2, 3, 4});
    check_values(y, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  }
  {
    ConstInputsNode t("Expand", 13, x, {i64({1}, {1})});  // a smaller shape keeps the input's dims
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{3, 1});
    check_values(y, {1, 2, 3});
  }
  {
    ConstInputsNode t("Expand", 13, x, {i64({2}, {2, 1})});  // 3 vs 2
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Expand", 13, x, {i64({2}, {-1, 2})});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Expand", 13, x, {i64({2}, {3, 2})}, 1, 1);  // not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

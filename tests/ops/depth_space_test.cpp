// DepthToSpace (DCR, CRD) and SpaceToDepth: element order, round trips, and
// the errors bad attributes and shapes give.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/graph.h"
#include "op_test_util.h"
#include "ops/depth_space.h"
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

Tensor iota(Shape s) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_f32(std::move(s), v);
}

}  // namespace

TEST_CASE("DepthToSpace: DCR (default) and CRD orders") {
  {
    ConstInputsNode t("DepthToSpace", 11, iota({1, 8, 1, 1}));
    t.n->set_attr_int("blocksize", 2);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 2, 2, 2});
    // DCR: out[c, i, j] = x[(i * 2 + j) * 2 + c]
    check_values(y, {0, 2, 4, 6, 1, 3, 5, 7});
  }
  {
    ConstInputsNode t("DepthToSpace", 13, iota({1, 8, 1, 1}));
    t.n->set_attr_int("blocksize", 2);
    t.n->set_attr_string("mode", "CRD");
    // CRD: out[c, i, j] = x[c * 4 + i * 2 + j]
    check_values(t.run1(), {0, 1, 2, 3, 4, 5, 6, 7});
  }
  {
    ConstInputsNode t("DepthToSpace", 1, iota({1, 4, 1, 2}));  // opset 1: DCR only
    t.n->set_attr_int("blocksize", 2);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 1, 2, 4});
    // x[c, 0, w] = 2c + w; out[0, i, 2w + j] = x[2i + j, 0, w]
    check_values(y, {0, 2, 1, 3, 4, 6, 5, 7});
  }
}

TEST_CASE("SpaceToDepth inverts DepthToSpace DCR") {
  const Tensor x = iota({2, 3, 4, 6});
  ConstInputsNode s("SpaceToDepth", 13, x);
  s.n->set_attr_int("blocksize", 2);
  const Tensor d = s.run1();
  CHECK(d.shape() == Shape{2, 12, 2, 3});
  // out[(i * 2 + j) * C + c, h, w] = x[c, 2h + i, 2w + j]: channel 3 is c=0, i=0, j=1
  CHECK(d.to_f64()[3 * 6] == 1.0);
  ConstInputsNode b("DepthToSpace", 13, d);
  b.n->set_attr_int("blocksize", 2);
  CHECK(b.run1().to_f64() == x.to_f64());
}

TEST_CASE("DepthToSpace / SpaceToDepth: bad attributes and shapes are Errors") {
  {
    ConstInputsNode t("DepthToSpace", 13, iota({1, 8, 1, 1}));  // blocksize missing
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("DepthToSpace", 13, iota({1, 8, 1, 1}));
    t.n->set_attr_int("blocksize", 0);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("DepthToSpace", 13, iota({1, 6, 1, 1}));  // 6 channels, block 2x2
    t.n->set_attr_int("blocksize", 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("DepthToSpace", 13, iota({8, 1, 1}));
    t.n->set_attr_int("blocksize", 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("DepthToSpace", 13, iota({1, 8, 1, 1}));
    t.n->set_attr_int("blocksize", 2);
    t.n->set_attr_string("mode", "RCD");
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("DepthToSpace", 9, iota({1, 8, 1, 1}));
    t.n->set_attr_int("blocksize", 2);
    t.n->set_attr_string("mode", "CRD");  // mode is opset 11
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("SpaceToDepth", 13, iota({1, 1, 3, 4}));  // height 3, block 2
    t.n->set_attr_int("blocksize", 2);
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("depth_space: blocksize required and positive, DCR by default, CRD from the mode") {
  Node d("DepthToSpace", "d2s", 13);
  CHECK_THROWS_WITH_AS(ops::depth_space(d), doctest::Contains("attribute 'blocksize' is required"), Error);
  d.set_attr_int("blocksize", 0);
  CHECK_THROWS_WITH_AS(ops::depth_space(d), doctest::Contains("node 'd2s'"), Error);
  d.set_attr_int("blocksize", 3);
  ops::DepthSpace ds = ops::depth_space(d);
  CHECK(ds.blocksize == 3);
  CHECK_FALSE(ds.crd);
  d.set_attr_string("mode", "CRD");
  CHECK(ops::depth_space(d).crd);
  d.set_attr_string("mode", "RCD");
  CHECK_THROWS_WITH_AS(ops::depth_space(d), doctest::Contains("expected DCR or CRD"), Error);
  Node s("SpaceToDepth", "s2d", 13);
  s.set_attr_int("blocksize", 2);
  CHECK_FALSE(ops::depth_space(s).crd);
}

// GroupNormalization (opset 18: scale and bias per group; 21: per channel) and LRN: values by hand,
// the relation to InstanceNormalization, the channel window, and the errors bad attributes and
// shapes give (naming the node).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "op_test_util.h"
#include "ops/channel_norm.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor ramp(Shape s, float scale = 1.0f, float start = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + scale * static_cast<float>((i * 7) % 11);
  return Tensor::from_f32(std::move(s), v);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double eps = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
  }
}

std::string error_of(OneNode& t) {
  try {
    t.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GroupNormalization: a group's channels and pixels share one mean and variance") {
  // N=1, C=4, L=2, two groups: group 0 = channels 0,1 = {1, 3, 5, 7}, group 1 = {0, 0, 2, 2}.
  const Tensor x = f32({1, 4, 2}, {1, 3, 5, 7, 0, 0, 2, 2});
  OneNode t("GroupNormalization", 18, {x, f32({2}, {2, 1}), f32({2}, {0, 10})});
  t.n->set_attr_int("num_groups", 2);
  t.n->set_attr_float("epsilon", 0.0);
  const Tensor y = t.run1();
  CHECK(y.shape() == x.shape());
  const double s0 = 1.0 / std::sqrt(5.0);  // group 0: mean 4, variance 5
  check_close(values(y), {2 * -3 * s0, 2 * -1 * s0, 2 * 1 * s0, 2 * 3 * s0, 10 - 1, 10 - 1, 10 + 1, 10 + 1});
}

TEST_CASE("GroupNormalization: opset 21 scales per channel; num_groups = C is InstanceNormalization") {
  const Tensor x = ramp({2, 3, 2, 2}, 0.5f, -1.0f);
  const Tensor scale = f32({3}, {1.5f, -2.0f, 0.25f}), bias = f32({3}, {0.5f, 0.0f, -1.0f});
  OneNode g("GroupNormalization", 21, {x, scale, bias});
  g.n->set_attr_int("num_groups", 3);
  g.n->set_attr_float("epsilon", 1e-3);
  OneNode inst("InstanceNormalization", 6, {x, scale, bias});
  inst.n->set_attr_float("epsilon", 1e-3);
  check_close(values(g.run1()), values(inst.run1()));
}

TEST_CASE("GroupNormalization: opset 21 with one group per two channels scales each channel") {
  const Tensor x = f32({1, 2, 2}, {1, 3, 5, 7});  // one group: mean 4, variance 5
  OneNode t("GroupNormalization", 21, {x, f32({2}, {1, 3}), f32({2}, {0, -1})});
  t.n->set_attr_int("num_groups", 1);
  t.n->set_attr_float("epsilon", 0.0);
  const double s = 1.0 / std::sqrt(5.0);
  check_close(values(t.run1()), {-3 * s, -1 * s, 3 * 1 * s - 1, 3 * 3 * s - 1});
}

TEST_CASE("GroupNormalization: errors name the node") {
  const Tensor x = ramp({1, 6, 3});
  const Tensor p2 = f32({2}, {1, 1}), p6 = f32({6}, {1, 1, 1, 1, 1, 1});
  {
    OneNode t("GroupNormalization", 18, {x, p2, p2});  // num_groups missing
    CHECK(error_of(t).find("'num_groups' is required") != std::string::npos);
    CHECK(error_of(t).find("node") != std::string::npos);
  }
  {
    OneNode t("GroupNormalization", 18, {x, f32({4}, {1, 1, 1, 1}), f32({4}, {1, 1, 1, 1})});
    t.n->set_attr_int("num_groups", 4);  // 6 channels
    CHECK(error_of(t).find("does not divide X's 6 channels") != std::string::npos);
  }
  {
    OneNode t("GroupNormalization", 18, {x, p6, p6});  // opset 18: per group
    t.n->set_attr_int("num_groups", 2);
    CHECK(error_of(t).find("one value per group") != std::string::npos);
  }
  {
    OneNode t("GroupNormalization", 21, {x, p2, p2});  // opset 21: per channel
    t.n->set_attr_int("num_groups", 2);
    CHECK(error_of(t).find("one value per channel") != std::string::npos);
  }
  {
    OneNode t("GroupNormalization", 21, {x, p6, p6});
    t.n->set_attr_int("num_groups", 2);
    t.n->set_attr_int("stash_type", 7);  // INT64
    CHECK(error_of(t).find("stash_type") != std::string::npos);
  }
  {
    OneNode t("GroupNormalization", 17, {x, p2, p2});  // no form before 18
    t.n->set_attr_int("num_groups", 2);
    CHECK_THROWS_AS(t.run(), Error);
  }
}

TEST_CASE("LRN: the window of channels [c - floor((size-1)/2), c + ceil((size-1)/2)], clipped") {
  // One pixel, C = 4, x = 1, 2, 3, 4; size 2: channels c and c + 1.
  const Tensor x = f32({1, 4, 1, 1}, {1, 2, 3, 4});
  OneNode t("LRN", 13, {x});
  t.n->set_attr_int("size", 2);
  t.n->set_attr_float("alpha", 2.0);  // alpha / size = 1
  t.n->set_attr_float("beta", 1.0);
  t.n->set_attr_float("bias", 1.0);
  check_close(values(t.run1()), {1.0 / (1 + 1 + 4), 2.0 / (1 + 4 + 9), 3.0 / (1 + 9 + 16), 4.0 / (1 + 16)});
}

TEST_CASE("LRN: defaults (alpha 1e-4, beta 0.75, bias 1) over a rank-3 input") {
  const Tensor x = ramp({2, 5, 3}, 3.0f, -10.0f);
  OneNode t("LRN", 1, {x});
  t.n->set_attr_int("size", 3);
  const std::vector<double> xv = values(x), yv = values(t.run1());
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 5; ++c) {
      for (int64_t s = 0; s < 3; ++s) {
        double sq = 0;
        for (int64_t j = std::max<int64_t>(0, c - 1); j <= std::min<int64_t>(4, c + 1); ++j) {
          const double v = xv[static_cast<std::size_t>((n * 5 + j) * 3 + s)];
          sq += v * v;
        }
        const std::size_t e = static_cast<std::size_t>((n * 5 + c) * 3 + s);
        CHECK(yv[e] == doctest::Approx(xv[e] / std::pow(1.0 + 1e-4 / 3 * sq, 0.75)).epsilon(1e-6));
      }
    }
  }
}

TEST_CASE("LRN: errors name the node") {
  {
    OneNode t("LRN", 13, {ramp({1, 3, 2})});  // size missing
    CHECK(error_of(t).find("'size' is required") != std::string::npos);
  }
  {
    OneNode t("LRN", 13, {ramp({1, 3, 2})});
    t.n->set_attr_int("size", 0);
    CHECK(error_of(t).find("'size' is 0") != std::string::npos);
  }
  {
    OneNode t("LRN", 13, {ramp({3, 2})});  // rank 2
    t.n->set_attr_int("size", 3);
    CHECK(error_of(t).find("rank 3 or more") != std::string::npos);
  }
  {
    OneNode t("LRN", 13, {Tensor::from_i64(DType::int64, {1, 2, 2}, {1, 2, 3, 4})});
    t.n->set_attr_int("size", 3);
    CHECK_THROWS_AS(t.run(), Error);
  }
}

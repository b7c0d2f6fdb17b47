// Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9): shapes, values
// against hand-computed numbers, every coordinate mode, and the errors bad
// attributes and inputs give.
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

const Tensor none;  // an omitted optional input

// 1x1x1xN, the last axis holding `v`.
Tensor row(const std::vector<float>& v) { return f32({1, 1, 1, static_cast<int64_t>(v.size())}, v); }
Tensor scales4(float h, float w) { return f32({4}, {1, 1, h, w}); }
Tensor sizes4(int64_t h, int64_t w) { return i64({4}, {1, 1, h, w}); }

}  // namespace

TEST_CASE("Upsample: scales attribute (opset 7) and input (9), nearest and linear") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  {
    ConstInputsNode t("Upsample", 7, x);
    t.n->set_attr_floats("scales", {1, 1, 2, 3});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 1, 4, 6});
    check_values(y, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  }
  {
    ConstInputsNode t("Upsample", 9, row({1, 3}), {f32({4}, {1, 1, 1, 2})});
    t.n->set_attr_string("mode", "linear");
    // asymmetric: x = j / 2, the last sample clamps to the edge
    check_values(t.run1(), {1, 2, 3, 3});
  }
  {
    ConstInputsNode t("Upsample", 9, x, {f32({4}, {1, 1, 0.5f, 1})});  // Upsample cannot shrink
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Upsample", 9, x, {f32({4}, {1, 1, 2, 2})});
    t.n->set_attr_string("mode", "cubic");
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Upsample", 7, x);  // scales attribute missing
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Upsample", 9, x, {f32({4}, {1, 1, 2, 2})}, 1, 1);  // scales not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("Resize opset 10: asymmetric, nearest rounds down when enlarging and up when shrinking") {
  {
    ConstInputsNode t("Resize", 10, f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), {scales4(0.6f, 0.6f)});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 1, 1, 2});
    check_values(y, {1, 3});
  }
  {
    ConstInputsNode t("Resize", 10, row({1, 2}), {scales4(1, 3)});
    check_values(t.run1(), {1, 1, 1, 2, 2, 2});
  }
  {
    ConstInputsNode t("Resize", 10, row({1, 2}), {scales4(1, 2)});
    t.n->set_attr_string("coordinate_transformation_mode", "half_pixel");  // not at opset 10
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("Resize opset 11/13: linear half_pixel (the default) is bilinear") {
  ConstInputsNode t("Resize", 13, f32({1, 1, 2, 2}, {1, 2, 3, 4}), {none, scales4(2, 2)});
  t.n->set_attr_string("mode", "linear");
  const Tensor y = t.run1();
  CHECK(y.shape() == Shape{1, 1, 4, 4});
  check_values(y, {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});

  // opset 11: roi and scales are inputs even when only sizes is used
  ConstInputsNode s("Resize", 11, f32({1, 1, 2, 2}, {1, 2, 3, 4}), {f32({0}, {}), f32({0}, {}), sizes4(4, 4)});
  s.n->set_attr_string("mode", "linear");
  check_values(s.run1(), {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
}

TEST_CASE("Resize: coordinate transformation modes") {
  auto linear = [](const Tensor& x, const Tensor& sizes, const char* mode) {
    auto t = std::make_unique<ConstInputsNode>("Resize", 13, x, std::vector<Tensor>{none, none, sizes});
    t->n->set_attr_string("mode", "linear");
    t->n->set_attr_string("coordinate_transformation_mode", mode);
    return t->run1();
  };
  const Tensor x = row({0, 10, 20});
  check_values(linear(x, sizes4(1, 5), "align_corners"), {0, 5, 10, 15, 20});
  // asymmetric: x = j * 3/5
  check_values(linear(x, sizes4(1, 5), "asymmetric"), {0, 6, 12, 18, 20});
  // half_pixel: x = (j + 0.5) * 3/5 - 0.5, clamped at both ends
  check_values(linear(x, sizes4(1, 5), "half_pixel"), {0, 4, 10, 16, 20});
  // pytorch_half_pixel differs from half_pixel only for a length-1 output: x = 0
  check_values(linear(x, sizes4(1, 1), "pytorch_half_pixel"), {0});
  check_values(linear(x, sizes4(1, 1), "half_pixel"), {10});
}

TEST_CASE("Resize: nearest modes") {
  auto nearest = [](const char* coord, const char* mode, int64_t w) {
    auto t = std::make_unique<ConstInputsNode>("Resize", 13, row({1, 2, 3, 4}), std::vector<Tensor>{none, none, sizes4(1, w)});
    t->n->set_attr_string("coordinate_transformation_mode", coord);
    t->n->set_attr_string("nearest_mode", mode);
    return t->run1();
  };
  // asymmetric with scale 8/4: x = j / 2 = 0, .5, 1, 1.5, ...
  check_values(nearest("asymmetric", "round_prefer_floor", 8), {1, 1, 2, 2, 3, 3, 4, 4});
  check_values(nearest("asymmetric", "round_prefer_ceil", 8), {1, 2, 2, 3, 3, 4, 4, 4});
  check_values(nearest("asymmetric", "floor", 8), {1, 1, 2, 2, 3, 3, 4, 4});
  check_values(nearest("asymmetric", "ceil", 8), {1, 2, 2, 3, 3, 4, 4, 4});
  // half_pixel with scale 2: x = j/2 - 0.25 = -0.25, 0.25, 0.75, ...
  check_values(nearest("half_pixel", "round_prefer_floor", 8), {1, 1, 2, 2, 3, 3, 4, 4});
  check_values(nearest("half_pixel", "floor", 8), {1, 1, 1, 2, 2, 3, 3, 4});

  // tf_half_pixel_for_nn exists at opset 11 only: x = (j + 0.5) / scale
  ConstInputsNode t("Resize", 11, f32({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}),
            {f32({0}, {}), f32({0}, {}), sizes4(3, 2)});
  t.n->set_attr_string("coordinate_transformation_mode", "tf_half_pixel_for_nn");
  check_values(t.run1(), {6, 8, 10, 12, 14, 16});
  ConstInputsNode u("Resize", 13, row({1, 2}), {none, none, sizes4(1, 4)});
  u.n->set_attr_string("coordinate_transformation_mode", "tf_half_pixel_for_nn");
  CHECK_THROWS_AS(u.infer(), Error);
}

TEST_CASE("Resize: tf_crop_and_resize samples the roi and extrapolates outside the input") {
  // width roi [0.5, 1.5] of 4 elements: x = 1.5, 3, 4.5 (outside)
  ConstInputsNode t("Resize", 13, row({1, 2, 3, 4}), {f32({8}, {0, 0, 0, 0.5f, 1, 1, 1, 1.5f}), none, sizes4(1, 3)});
  t.n->set_attr_string("mode", "linear");
  t.n->set_attr_string("coordinate_transformation_mode", "tf_crop_and_resize");
  t.n->set_attr_float("extrapolation_value", -1);
  check_values(t.run1(), {2.5, 4, -1});

  ConstInputsNode r("Resize", 13, row({1, 2, 3, 4}), {none, none, sizes4(1, 3)});
  r.n->set_attr_string("coordinate_transformation_mode", "tf_crop_and_resize");  // roi missing
  CHECK_THROWS_AS(r.infer(), Error);
}

TEST_CASE("Resize: cubic, with and without exclude_outside") {
  auto cubic = [](bool exclude) {
    auto t = std::make_unique<ConstInputsNode>("Resize", 13, row({0, 1, 2, 3}), std::vector<Tensor>{none, scales4(1, 2)});
    t->n->set_attr_string("mode", "cubic");
    t->n->set_attr_string("coordinate_transformation_mode", "asymmetric");
    t->n->set_attr_int("exclude_outside", exclude ? 1 : 0);
    return t->run1().to_f64();
  };
  // x = 0.5: weights W(1.5), W(0.5), W(0.5), W(1.5) = -0.09375, 0.59375, 0.59375, -0.09375
  // on elements -1 (clamped to 0), 0, 1, 2.
  const std::vector<double> y = cubic(false);
  REQUIRE(y.size() == 8);
  CHECK(y[0] == doctest::Approx(0));
  CHECK(y[1] == doctest::Approx(0.59375 - 2 * 0.09375));
  CHECK(y[3] == doctest::Approx(1.5));  // interior: cubic reproduces a ramp
  // exclude_outside drops element -1 and renormalises the rest
  const std::vector<double> e = cubic(true);
  CHECK(e[1] == doctest::Approx((0.59375 - 2 * 0.09375) / (1 + 0.09375)));  // the dropped weight was negative
  CHECK(e[3] == doctest::Approx(1.5));
}

TEST_CASE("Resize opset 18: axes and keep_aspect_ratio_policy") {
  const Tensor x = f32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  {
    ConstInputsNode t("Resize", 18, x, {none, f32({1}, {2})});
    t.n->set_attr_ints("axes", {-1});
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 1, 2, 8});
    check_values(y, {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8});
  }
  auto policy = [&](const char* p) {
    auto t = std::make_unique<ConstInputsNode>("Resize", 18, x, std::vector<Tensor>{none, none, i64({2}, {4, 4})});
    t->n->set_attr_ints("axes", {2, 3});
    t->n->set_attr_string("keep_aspect_ratio_policy", p);
    t->infer();
    return t->g.outputs()[0]->shape();
  };
  CHECK(policy("stretch") == Shape{1, 1, 4, 4});
  CHECK(policy("not_larger") == Shape{1, 1, 2, 4});   // scale min(2, 1) = 1
  CHECK(policy("not_smaller") == Shape{1, 1, 4, 8});  // scale max(2, 1) = 2
  {
    ConstInputsNode t("Resize", 18, x, {none, none, i64({2}, {3, 3})});
    t.n->set_attr_ints("axes", {2, 3});
    t.n->set_attr_string("keep_aspect_ratio_policy", "not_larger");  // scale 0.75: 1.5 -> 2, 3
    t.infer();
    CHECK(t.g.outputs()[0]->shape() == Shape{1, 1, 2, 3});
  }
  {
    ConstInputsNode t("Resize", 18, x, {none, f32({1}, {2})});
    t.n->set_attr_ints("axes", {3, -1});  // the same axis twice
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 18, x, {none, f32({2}, {2, 2})});
    t.n->set_attr_ints("axes", {3});  // scales has 2 values for 1 axis
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 18, x, {none, scales4(2, 2)});
    t.n->set_attr_string("mode", "linear");
    t.n->set_attr_int("antialias", 1);
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 18, x, {none, scales4(2, 2)});
    t.n->set_attr_string("keep_aspect_ratio_policy", "fit");
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("Resize opset 19: half_pixel_symmetric") {
  // 4 -> 2.4 (2 outputs): offset 2 * (1 - 2/2.4) = 1/3; x = 1/3 + (j + 0.5)/0.6 - 0.5
  ConstInputsNode t("Resize", 19, row({1, 2, 3, 4}), {none, scales4(1, 0.6f)});
  t.n->set_attr_string("mode", "linear");
  t.n->set_attr_string("coordinate_transformation_mode", "half_pixel_symmetric");
  check_values(t.run1(), {1 + 2.0 / 3, 3 + 1.0 / 3}, 1e-5);

  ConstInputsNode u("Resize", 18, row({1, 2, 3, 4}), {none, scales4(1, 0.6f)});
  u.n->set_attr_string("coordinate_transformation_mode", "half_pixel_symmetric");  // 19 and later
  CHECK_THROWS_AS(u.infer(), Error);
}

TEST_CASE("Resize: integer data, identity and bad inputs") {
  {
    ConstInputsNode t("Resize", 13, Tensor::from_i64(DType::uint8, {1, 1, 1, 2}, {7, 200}), {none, scales4(1, 2)});
    const Tensor y = t.run1();
    CHECK(y.dtype() == DType::uint8);
    CHECK(y.to_i64() == std::vector<int64_t>{7, 7, 200, 200});
  }
  {
    ConstInputsNode t("Resize", 13, row({1, 2, 3}), {none, scales4(1, 1)});
    t.n->set_attr_string("mode", "cubic");
    check_values(t.run1(), {1, 2, 3});
  }
  const Tensor x = row({1, 2});
  {
    ConstInputsNode t("Resize", 13, x, {none, scales4(1, 2), sizes4(1, 4)});  // both given
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x);  // neither given
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, f32({3}, {1, 1, 2})});  // one value short
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, scales4(1, -2)});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, none, sizes4(1, -1)});
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, none, i64({4}, {1 << 20, 1 << 20, 1 << 20, 4})});  // too large
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, none, sizes4(1, 4)}, 1, 3);  // sizes not constant
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, scales4(1, 2)});
    t.n->set_attr_string("mode", "bicubic");
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, scales4(1, 2)});
    t.n->set_attr_string("nearest_mode", "round");
    CHECK_THROWS_AS(t.infer(), Error);
  }
  {
    ConstInputsNode t("Resize", 13, x, {none, scales4(1, 2)});
    t.n->set_attr_int("antialias", 1);  // not an attribute before 18
    CHECK_THROWS_AS(t.infer(), Error);
  }
}

TEST_CASE("Resize facts") {
  Node n("Resize", "r", 13);
  CHECK(ops::lookup(n).layout == ops::Layout::channels);
  CHECK(ops::lookup(n).kernels == std::vector<std::string>{"resize"});
  Node u("Upsample", "u", 9);
  CHECK(ops::lookup(u).since == 9);
}

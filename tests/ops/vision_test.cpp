// GridSample, RoiAlign, NonMaxSuppression: values by hand, the static bound of NonMaxSuppression and
// its -1 rows, and the errors bad attributes and inputs give (naming the node).
#include <doctest/doctest.h>

#include <string>

#include "op_test_util.h"
#include "ops/vision.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

std::string error_of(ConstInputsNode& t) {
  try {
    t.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GridSample: the corners and the centre of a 2x2 image, each mode") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  // align_corners 1: (-1, -1) is pixel (0, 0), (1, 1) pixel (1, 1), (0, 0) the middle.
  const Tensor g = f32({1, 1, 3, 2}, {-1, -1, 1, 1, 0, 0});
  {
    ConstInputsNode t("GridSample", 16, x, {g}, 1, 1);
    t.n->set_attr_int("align_corners", 1);
    CHECK(values(t.run1()) == std::vector<double>{1, 4, 2.5});
  }
  {
    ConstInputsNode t("GridSample", 16, x, {g}, 1, 1);
    t.n->set_attr_int("align_corners", 1);
    t.n->set_attr_string("mode", "nearest");  // (0.5, 0.5) rounds half to even: pixel (0, 0)
    CHECK(values(t.run1()) == std::vector<double>{1, 4, 1});
  }
  {
    // align_corners 0: (-1, -1) is the corner of pixel (0, 0), half of it outside: zeros padding.
    ConstInputsNode t("GridSample", 16, x, {g}, 1, 1);
    const std::vector<double> v = values(t.run1());
    CHECK(v[0] == doctest::Approx(0.25));
    CHECK(v[2] == doctest::Approx(2.5));
  }
  {
    ConstInputsNode t("GridSample", 20, x, {g}, 1, 1);
    t.n->set_attr_string("mode", "cubic");
    t.n->set_attr_string("padding_mode", "border");
    t.n->set_attr_int("align_corners", 1);
    const std::vector<double> v = values(t.run1());
    CHECK(v[0] == doctest::Approx(1));
    CHECK(v[1] == doctest::Approx(4));
  }
}

TEST_CASE("GridSample: attribute and shape errors name the node") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4}), g = f32({1, 1, 1, 2}, {0, 0});
  {
    ConstInputsNode t("GridSample", 16, x, {g}, 1, 1);
    t.n->set_attr_string("mode", "linear");  // opset 20's name
    CHECK(error_of(t).find("expected bilinear, nearest or bicubic") != std::string::npos);
  }
  {
    ConstInputsNode t("GridSample", 16, x, {g}, 1, 1);
    t.n->set_attr_string("padding_mode", "wrap");
    CHECK(error_of(t).find("'padding_mode' is 'wrap'") != std::string::npos);
  }
  {
    ConstInputsNode t("GridSample", 20, f32({1, 1, 1, 2, 2}, {1, 2, 3, 4}), {f32({1, 1, 1, 1, 3}, {0, 0, 0})}, 1, 1);
    CHECK(error_of(t).find("volumetric") != std::string::npos);
  }
}

TEST_CASE("RoiAlign: the average of a constant region; max mode; a batch index out of range") {
  std::vector<float> plane(2 * 16);
  for (std::size_t i = 0; i < 16; ++i) plane[i] = 3.0f, plane[16 + i] = static_cast<float>(i);
  const Tensor x = f32({1, 2, 4, 4}, plane);
  const Tensor rois = f32({1, 4}, {0.5f, 0.5f, 3.5f, 3.5f});
  const Tensor batch = i64({1}, {0});
  {
    ConstInputsNode t("RoiAlign", 16, x, {rois, batch}, 1, 1);
    t.n->set_attr_int("output_height", 2);
    t.n->set_attr_int("output_width", 2);
    const Tensor y = t.run1();
    CHECK(y.shape() == Shape{1, 2, 2, 2});
    const std::vector<double> v = values(y);
    for (int k = 0; k < 4; ++k) CHECK(v[static_cast<std::size_t>(k)] == doctest::Approx(3.0));  // channel 0 is constant
    // Channel 1 is a linear ramp 4y + x: the average of bilinear samples is the ramp at the bin's
    // centre. half_pixel: the roi is [0, 3] in pixel coordinates, bins of 1.5.
    CHECK(v[4] == doctest::Approx(4 * 0.75 + 0.75));
    CHECK(v[7] == doctest::Approx(4 * 2.25 + 2.25));
  }
  {
    ConstInputsNode t("RoiAlign", 16, x, {rois, batch}, 1, 1);
    t.n->set_attr_string("mode", "max");
    t.n->set_attr_int("sampling_ratio", 1);
    // One sample at the centre (1.5, 1.5): the largest weighted corner is 0.25 * x[2][2] = 2.5.
    CHECK(values(t.run1())[1] == doctest::Approx(0.25 * 10));
  }
  {
    ConstInputsNode t("RoiAlign", 16, x, {rois, i64({1}, {3})}, 1, 1);
    CHECK(error_of(t).find("batch_indices[0] is 3") != std::string::npos);
  }
  {
    ConstInputsNode t("RoiAlign", 16, x, {rois, batch}, 1, 1);
    t.n->set_attr_string("coordinate_transformation_mode", "asymmetric");
    CHECK(error_of(t).find("coordinate_transformation_mode") != std::string::npos);
  }
}

TEST_CASE("NonMaxSuppression: greedy per class, the static bound, -1 past the selected boxes") {
  // Three boxes of one class: 1 overlaps 0 (IoU 0.82), 2 is apart. Two classes, scores differ.
  const Tensor boxes = f32({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
  const Tensor scores = f32({1, 2, 3}, {0.9f, 0.8f, 0.7f, 0.1f, 0.2f, 0.3f});
  const Tensor max_out = i64({1}, {2}), iou = f32({1}, {0.5f}), score_min = f32({1}, {0.15f});
  ConstInputsNode t("NonMaxSuppression", 11, boxes, {scores, max_out, iou, score_min}, 1, 1);
  const Tensor y = t.run1();
  CHECK(y.dtype() == DType::int64);
  CHECK(y.shape() == Shape{4, 3});  // 1 batch x 2 classes x min(2, 3)
  // Class 0: box 0, then 2 (1 suppressed). Class 1 (score > 0.15): box 2, then 1 (IoU with 2 is 0).
  CHECK(y.to_i64() == std::vector<int64_t>{0, 0, 0, 0, 0, 2, 0, 1, 2, 0, 1, 1});
  ConstInputsNode u("NonMaxSuppression", 11, boxes, {scores, i64({1}, {3}), f32({1}, {0.5f}), f32({1}, {0.75f})}, 1, 1);
  // Only box 0 of class 0 scores above 0.75: one row, then 5 rows of -1.
  const std::vector<int64_t> v = u.run1().to_i64();
  REQUIRE(v.size() == 18);
  CHECK(std::vector<int64_t>(v.begin(), v.begin() + 3) == std::vector<int64_t>{0, 0, 0});
  for (std::size_t i = 3; i < v.size(); ++i) CHECK(v[i] == -1);
}

TEST_CASE("NonMaxSuppression: max_output_boxes_per_class decides the shape, so it must be constant") {
  const Tensor boxes = f32({1, 1, 4}, {0, 0, 1, 1}), scores = f32({1, 1, 1}, {1});
  ConstInputsNode t("NonMaxSuppression", 11, boxes, {scores, i64({1}, {2})}, 1, 2);  // a graph input
  CHECK(error_of(t).find("max_output_boxes_per_class") != std::string::npos);
  ConstInputsNode none("NonMaxSuppression", 11, boxes, {scores});  // absent: no box, an empty output
  CHECK(none.run1().shape() == Shape{0, 3});
}

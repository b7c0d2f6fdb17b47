// compiler/ops/vision.h — GridSample, RoiAlign and NonMaxSuppression: their attributes and the
// sampling and suppression rules the reference (ops/vision.cpp) and the vision families
// (templates/vision.cuh, codegen/families/vision.cpp) share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

// ---- GridSample ---------------------------------------------------------------------------------

/// \brief A GridSample node (opset 16: bilinear / nearest / bicubic; opset 20: linear / nearest /
/// cubic, the same three on a 4-D X).
struct GridSample {
  enum class Mode { linear, nearest, cubic };
  enum class Padding { zeros, border, reflection };
  Mode mode = Mode::linear;
  Padding padding = Padding::zeros;
  bool align_corners = false;
  std::string mode_name() const;     ///< "bilinear", "nearest", "bicubic"
  std::string padding_name() const;  ///< "zeros", "border", "reflection"
};
/// The attributes; Error naming the node for an unknown mode or padding_mode.
GridSample grid_sample(const Node& n);

/// \brief The sampling rules of GridSample (PyTorch's grid_sampler_2d, which the ONNX spec and its
/// test data follow), in double; templates/vision.cuh computes the same in float.
namespace grid {
/// A normalized coordinate in [-1, 1] as a pixel coordinate of an axis of `size` pixels.
double unnormalize(double g, int64_t size, bool align_corners);
/// A pixel coordinate moved inside the axis by the padding mode (border: clipped; reflection:
/// reflected at the borders (the pixel edges without align_corners) and clipped; zeros: unchanged).
double pad_coordinate(double x, int64_t size, GridSample::Padding padding, bool align_corners);
/// The cubic convolution weights (A = -0.75) of the 4 taps floor(x) - 1 .. floor(x) + 2 at t = x - floor(x).
void cubic_weights(double t, double w[4]);
}  // namespace grid

// ---- RoiAlign -----------------------------------------------------------------------------------

/// \brief A RoiAlign node (opset 10: the legacy coordinates, 'output_half_pixel'; opset 16: the
/// 'coordinate_transformation_mode' attribute, half_pixel by default).
struct RoiAlign {
  bool max_mode = false;        ///< 'mode' max (else avg)
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;   ///< 0: adaptive, ceil(roi size / output size) per roi
  double spatial_scale = 1.0;
  bool half_pixel = false;      ///< coordinates shifted by -0.5 (and no minimum roi size of 1)
};
RoiAlign roi_align(const Node& n);

// ---- NonMaxSuppression --------------------------------------------------------------------------

/// \brief A NonMaxSuppression node. selected_indices has a static bound of rows (a static
/// compiler's fixed maximum output count): num_batches x num_classes x min(max_output_boxes_per_class,
/// spatial_dimension); the selected boxes come first, in ONNX's order (batch, class, then
/// decreasing score), and the rows past them hold -1 (kNmsPadding): the count of selected boxes is
/// the number of rows before the first -1.
struct Nms {
  bool center_point_box = false;  ///< boxes as [x_center, y_center, width, height] (else [y1, x1, y2, x2])
  int64_t batches = 0, classes = 0, boxes = 0;
  int64_t max_per_class = 0;  ///< min(max_output_boxes_per_class, boxes); 0 without the input
  int64_t bound() const { return batches * classes * max_per_class; }
};
/// The node's meaning; max_output_boxes_per_class (input 2) must be a constant (it decides the
/// output's static shape): Error naming the node otherwise.
Nms nms(const Node& n);
/// The value of selected_indices' padding rows.
constexpr int64_t kNmsPadding = -1;

/// \brief The corners of a box as NonMaxSuppression reads them: x1 <= x2, y1 <= y2.
struct NmsBox {
  float x1, y1, x2, y2;
};
NmsBox nms_box(const float* b, bool center_point_box);
/// True when the boxes' intersection over union is above `threshold` (float arithmetic, as the
/// kernel's; a box of zero area suppresses nothing).
bool nms_suppresses(const NmsBox& a, const NmsBox& b, float threshold);

}  // namespace modelc::ops

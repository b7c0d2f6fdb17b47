// compiler/ops/vision.cpp — GridSample (opsets 16, 20), RoiAlign (10, 16) and NonMaxSuppression
// (10, 11): attributes, shape rules, reference evaluation.
//
// FP16: none of the three has a precision policy, so they stay FP32 under --fp16 (Casts around
// them): they compute coordinates (a sampling position, a box corner, an overlap against a
// threshold), which FP16's 11 bits would move by up to W / 2048 pixels — torchvision's autocast
// runs roi_align and nms in FP32 for the same reason.
// Layout: GridSample and RoiAlign read X through its strides (their families take any layout);
// NonMaxSuppression's inputs are not images.
#include "ops/vision.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/common.h"

namespace modelc::ops {
namespace {

void require_floats(const Node& n, std::initializer_list<int> inputs) {
  for (int i : inputs) {
    if (n.has_input(i) && n.input(i).has_type()) require_dtype(n, i, {DType::float32, DType::float16, DType::bfloat16});
  }
}

void require_rank(const Node& n, int i, int64_t rank, const char* what, const char* form) {
  const Value& v = n.input(i);
  if (v.rank() != rank) {
    throw n.error(std::string(what) + " ('" + v.name() + "') has shape " + shape_str(v.shape()) + ", expected " + form);
  }
}

// ---- GridSample ---------------------------------------------------------------------------------

void infer_grid_sample(Node& n) {
  grid_sample(n);
  const Shape& x = n.input(0).shape();
  const Shape& g = n.input(1).shape();
  if (x.size() != 4) {
    throw n.error("input X ('" + n.input(0).name() + "') has shape " + shape_str(x) +
                      ", expected [N, C, H, W] (modelc samples 2-D images)",
                  x.size() == 5 ? "volumetric (5-D) GridSample is not supported" : "");
  }
  if (g.size() != 4 || g[0] != x[0] || g[3] != 2) {
    throw n.error("input grid ('" + n.input(1).name() + "') has shape " + shape_str(g) + ", expected [" +
                  std::to_string(x[0]) + ", H_out, W_out, 2]");
  }
  n.output(0).set_type(n.input(0).dtype(), {x[0], x[1], g[1], g[2]});
}

// x[n, c, at y, at x] or 0 outside.
struct Plane {
  const double* p;
  int64_t h, w;
  double at(int64_t y, int64_t x) const { return y >= 0 && y < h && x >= 0 && x < w ? p[y * w + x] : 0.0; }
};

Tensor eval_grid_sample(const Node& n, const TensorRefs& in) {
  const GridSample s = grid_sample(n);
  const Shape& xs = in[0]->shape();
  const Shape& gs = in[1]->shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], Ho = gs[1], Wo = gs[2];
  const std::vector<double> x = in[0]->to_f64(), g = in[1]->to_f64();
  std::vector<double> y(static_cast<std::size_t>(N * C * Ho * Wo));
  for (int64_t b = 0; b < N; ++b) {
    for (int64_t c = 0; c < C; ++c) {
      const Plane plane{x.data() + (b * C + c) * H * W, H, W};
      for (int64_t i = 0; i < Ho; ++i) {
        for (int64_t j = 0; j < Wo; ++j) {
          const double* gp = g.data() + ((b * Ho + i) * Wo + j) * 2;
          double px = grid::unnormalize(gp[0], W, s.align_corners), py = grid::unnormalize(gp[1], H, s.align_corners);
          double v = 0.0;
          if (s.mode == GridSample::Mode::cubic) {
            const double fx = std::floor(px), fy = std::floor(py);
            double wx[4], wy[4];
            grid::cubic_weights(px - fx, wx);
            grid::cubic_weights(py - fy, wy);
            for (int r = 0; r < 4; ++r) {
              for (int q = 0; q < 4; ++q) {
                // Each tap moved inside by the padding mode, then read (0 outside: zeros).
                const double tx = grid::pad_coordinate(fx - 1 + q, W, s.padding, s.align_corners);
                const double ty = grid::pad_coordinate(fy - 1 + r, H, s.padding, s.align_corners);
                v += wy[r] * wx[q] * plane.at(static_cast<int64_t>(ty), static_cast<int64_t>(tx));
              }
            }
          } else {
            px = grid::pad_coordinate(px, W, s.padding, s.align_corners);
            py = grid::pad_coordinate(py, H, s.padding, s.align_corners);
            if (s.mode == GridSample::Mode::nearest) {
              v = plane.at(static_cast<int64_t>(std::nearbyint(py)), static_cast<int64_t>(std::nearbyint(px)));
            } else {
              const double fx = std::floor(px), fy = std::floor(py), tx = px - fx, ty = py - fy;
              const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
              v = (1 - ty) * ((1 - tx) * plane.at(y0, x0) + tx * plane.at(y0, x0 + 1)) +
                  ty * ((1 - tx) * plane.at(y0 + 1, x0) + tx * plane.at(y0 + 1, x0 + 1));
            }
          }
          y[static_cast<std::size_t>(((b * C + c) * Ho + i) * Wo + j)] = v;
        }
      }
    }
  }
  return Tensor::from_f64(in[0]->dtype(), {N, C, Ho, Wo}, y);
}

// ---- RoiAlign -----------------------------------------------------------------------------------

void infer_roi_align(Node& n) {
  const RoiAlign r = roi_align(n);
  require_rank(n, 0, 4, "input X", "[N, C, H, W]");
  require_rank(n, 1, 2, "input rois", "[num_rois, 4]");
  const Shape& rois = n.input(1).shape();
  if (rois[1] != 4) throw n.error("input rois has shape " + shape_str(rois) + ", expected [num_rois, 4]");
  const Shape& bi = n.input(2).shape();
  if (bi != Shape{rois[0]}) {
    throw n.error("input batch_indices has shape " + shape_str(bi) + ", expected [" + std::to_string(rois[0]) + "]");
  }
  n.output(0).set_type(n.input(0).dtype(), {rois[0], n.input(0).shape()[1], r.output_height, r.output_width});
}

// Bilinear interpolation as RoiAlign defines it (ONNX Runtime's and torchvision's): a sample
// beyond one pixel outside the image is 0; one just outside is clamped to the border.
double roi_bilinear(const double* plane, int64_t H, int64_t W, double y, double x) {
  if (y < -1.0 || y > static_cast<double>(H) || x < -1.0 || x > static_cast<double>(W)) return 0.0;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
  int64_t y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= H - 1) y = static_cast<double>(y0 = y1 = H - 1);
  if (x0 >= W - 1) x = static_cast<double>(x0 = x1 = W - 1);
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0), hy = 1 - ly, hx = 1 - lx;
  return hy * hx * plane[y0 * W + x0] + hy * lx * plane[y0 * W + x1] + ly * hx * plane[y1 * W + x0] +
         ly * lx * plane[y1 * W + x1];
}

// The max mode takes, per sample, the largest of the four weighted corners (ONNX Runtime's rule;
// a sample outside gives 0).
double roi_max_sample(const double* plane, int64_t H, int64_t W, double y, double x) {
  if (y < -1.0 || y > static_cast<double>(H) || x < -1.0 || x > static_cast<double>(W)) return 0.0;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
  int64_t y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= H - 1) y = static_cast<double>(y0 = y1 = H - 1);
  if (x0 >= W - 1) x = static_cast<double>(x0 = x1 = W - 1);
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0), hy = 1 - ly, hx = 1 - lx;
  return std::max({hy * hx * plane[y0 * W + x0], hy * lx * plane[y0 * W + x1], ly * hx * plane[y1 * W + x0],
                   ly * lx * plane[y1 * W + x1]});
}

Tensor eval_roi_align(const Node& n, const TensorRefs& in) {
  const RoiAlign r = roi_align(n);
  const Shape& xs = in[0]->shape();
  const int64_t C = xs[1], H = xs[2], W = xs[3], R = in[1]->shape()[0], PH = r.output_height, PW = r.output_width;
  const std::vector<double> x = in[0]->to_f64(), rois = in[1]->to_f64();
  const std::vector<int64_t> batch = in[2]->to_i64();
  std::vector<double> y(static_cast<std::size_t>(R * C * PH * PW));
  const double offset = r.half_pixel ? 0.5 : 0.0;
  for (int64_t k = 0; k < R; ++k) {
    const int64_t b = batch[static_cast<std::size_t>(k)];
    if (b < 0 || b >= xs[0]) {
      throw Error("batch_indices[" + std::to_string(k) + "] is " + std::to_string(b) + ", outside [0, " +
                  std::to_string(xs[0]) + ")");
    }
    const double* roi = rois.data() + k * 4;
    const double x1 = roi[0] * r.spatial_scale - offset, y1 = roi[1] * r.spatial_scale - offset;
    double rw = roi[2] * r.spatial_scale - offset - x1, rh = roi[3] * r.spatial_scale - offset - y1;
    if (!r.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(PH), bw = rw / static_cast<double>(PW);
    const int64_t gh = r.sampling_ratio > 0 ? r.sampling_ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(PH)));
    const int64_t gw = r.sampling_ratio > 0 ? r.sampling_ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(PW)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t c = 0; c < C; ++c) {
      const double* plane = x.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph) {
        for (int64_t pw = 0; pw < PW; ++pw) {
          double acc = 0.0;
          bool first = true;
          for (int64_t iy = 0; iy < gh; ++iy) {
            const double sy = y1 + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const double sx = x1 + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
              if (r.max_mode) {
                const double v = roi_max_sample(plane, H, W, sy, sx);
                acc = first ? v : std::max(acc, v);
                first = false;
              } else {
                acc += roi_bilinear(plane, H, W, sy, sx);
              }
            }
          }
          y[static_cast<std::size_t>(((k * C + c) * PH + ph) * PW + pw)] = r.max_mode ? acc : acc / count;
        }
      }
    }
  }
  return Tensor::from_f64(in[0]->dtype(), {R, C, PH, PW}, y);
}

// ---- NonMaxSuppression --------------------------------------------------------------------------

void infer_nms(Node& n) {
  const Nms s = nms(n);
  n.output(0).set_type(DType::int64, {s.bound(), 3});
}

Tensor eval_nms(const Node& n, const TensorRefs& in) {
  const Nms s = nms(n);
  // Float arithmetic, as the kernel's: the suppressions compare against a threshold.
  auto floats = [](const Tensor* t) {
    const std::vector<double> d = t->to_f64();
    return std::vector<float>(d.begin(), d.end());
  };
  const std::vector<float> boxes = floats(in[0]), scores = floats(in[1]);
  const float iou = in.size() > 3 && in[3] ? static_cast<float>(in[3]->to_f64().at(0)) : 0.0f;
  const bool has_score = in.size() > 4 && in[4];
  const float score_min = has_score ? static_cast<float>(in[4]->to_f64().at(0)) : 0.0f;
  std::vector<int64_t> out;
  for (int64_t b = 0; b < s.batches; ++b) {
    for (int64_t c = 0; c < s.classes; ++c) {
      const float* sc = scores.data() + (b * s.classes + c) * s.boxes;
      std::vector<int64_t> order;
      for (int64_t i = 0; i < s.boxes; ++i) {
        if (!has_score || sc[i] > score_min) order.push_back(i);
      }
      // Decreasing score, the lower index first among equal scores.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t z) { return sc[a] > sc[z]; });
      std::vector<NmsBox> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= s.max_per_class) break;
        const NmsBox box = nms_box(boxes.data() + (b * s.boxes + i) * 4, s.center_point_box);
        if (std::any_of(kept.begin(), kept.end(), [&](const NmsBox& k) { return nms_suppresses(k, box, iou); })) continue;
        kept.push_back(box);
        out.insert(out.end(), {b, c, i});
      }
    }
  }
  out.resize(static_cast<std::size_t>(s.bound() * 3), kNmsPadding);
  return Tensor::from_i64(DType::int64, {s.bound(), 3}, out);
}

}  // namespace

// ---- GridSample rules -----------------------------------------------------------------------------

std::string GridSample::mode_name() const {
  return mode == Mode::linear ? "bilinear" : mode == Mode::nearest ? "nearest" : "bicubic";
}
std::string GridSample::padding_name() const {
  return padding == Padding::zeros ? "zeros" : padding == Padding::border ? "border" : "reflection";
}

GridSample grid_sample(const Node& n) {
  GridSample s;
  const bool v20 = n.opset() >= 20;
  const std::string mode = n.attr_string("mode", v20 ? "linear" : "bilinear");
  if (mode == (v20 ? "linear" : "bilinear")) {
    s.mode = GridSample::Mode::linear;
  } else if (mode == "nearest") {
    s.mode = GridSample::Mode::nearest;
  } else if (mode == (v20 ? "cubic" : "bicubic")) {
    s.mode = GridSample::Mode::cubic;
  } else {
    throw n.error("attribute 'mode' is '" + mode + "', expected " +
                  (v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic") + " (opset " +
                  std::to_string(n.opset()) + ")");
  }
  const std::string pad = n.attr_string("padding_mode", "zeros");
  if (pad == "zeros") {
    s.padding = GridSample::Padding::zeros;
  } else if (pad == "border") {
    s.padding = GridSample::Padding::border;
  } else if (pad == "reflection") {
    s.padding = GridSample::Padding::reflection;
  } else {
    throw n.error("attribute 'padding_mode' is '" + pad + "', expected zeros, border or reflection");
  }
  s.align_corners = n.attr_int("align_corners", 0) != 0;
  return s;
}

namespace grid {

double unnormalize(double g, int64_t size, bool align_corners) {
  const auto s = static_cast<double>(size);
  return align_corners ? (g + 1) / 2 * (s - 1) : ((g + 1) * s - 1) / 2;
}

namespace {
double clip(double x, int64_t size) { return std::min(static_cast<double>(size - 1), std::max(x, 0.0)); }
// Reflected into [twice_low / 2, twice_high / 2].
double reflect(double x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0.0;
  const double lo = static_cast<double>(twice_low) / 2, span = static_cast<double>(twice_high - twice_low) / 2;
  x = std::fabs(x - lo);
  const double extra = std::fmod(x, span);
  const auto flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + lo : span - extra + lo;
}
}  // namespace

double pad_coordinate(double x, int64_t size, GridSample::Padding padding, bool align_corners) {
  switch (padding) {
    case GridSample::Padding::zeros: return x;
    case GridSample::Padding::border: return clip(x, size);
    case GridSample::Padding::reflection:
      return clip(align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1), size);
  }
  return x;
}

void cubic_weights(double t, double w[4]) {
  constexpr double A = -0.75;
  auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

}  // namespace grid

// ---- RoiAlign / NonMaxSuppression rules ---------------------------------------------------------

RoiAlign roi_align(const Node& n) {
  RoiAlign r;
  const std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") throw n.error("attribute 'mode' is '" + mode + "', expected avg or max");
  r.max_mode = mode == "max";
  r.output_height = n.attr_int("output_height", 1);
  r.output_width = n.attr_int("output_width", 1);
  if (r.output_height < 1 || r.output_width < 1) {
    throw n.error("attributes 'output_height' and 'output_width' are " + std::to_string(r.output_height) + " and " +
                  std::to_string(r.output_width) + ", expected 1 or more");
  }
  r.sampling_ratio = n.attr_int("sampling_ratio", 0);
  if (r.sampling_ratio < 0) throw n.error("attribute 'sampling_ratio' is negative");
  r.spatial_scale = n.attr_float("spatial_scale", 1.0);
  const std::string ct = n.attr_string("coordinate_transformation_mode", n.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (ct != "half_pixel" && ct != "output_half_pixel") {
    throw n.error("attribute 'coordinate_transformation_mode' is '" + ct + "', expected half_pixel or output_half_pixel");
  }
  r.half_pixel = ct == "half_pixel";
  return r;
}

Nms nms(const Node& n) {
  Nms s;
  s.center_point_box = n.attr_int("center_point_box", 0) != 0;
  const int64_t cpb = n.attr_int("center_point_box", 0);
  if (cpb != 0 && cpb != 1) throw n.error("attribute 'center_point_box' is " + std::to_string(cpb) + ", expected 0 or 1");
  const Shape& b = n.input(0).shape();
  const Shape& sc = n.input(1).shape();
  if (b.size() != 3 || b[2] != 4) {
    throw n.error("input boxes ('" + n.input(0).name() + "') has shape " + shape_str(b) +
                  ", expected [num_batches, spatial_dimension, 4]");
  }
  if (sc.size() != 3 || sc[0] != b[0] || sc[2] != b[1]) {
    throw n.error("input scores ('" + n.input(1).name() + "') has shape " + shape_str(sc) + ", expected [" +
                  std::to_string(b[0]) + ", num_classes, " + std::to_string(b[1]) + "]");
  }
  s.batches = b[0];
  s.classes = sc[1];
  s.boxes = b[1];
  if (const auto m = const_ints(n, 2, "max_output_boxes_per_class")) {
    if (m->size() != 1) throw n.error("input max_output_boxes_per_class must hold one value");
    s.max_per_class = std::clamp<int64_t>((*m)[0], 0, s.boxes);
  }
  for (int i : {3, 4}) {
    if (n.has_input(i) && n.input(i).numel() != 1) {
      throw n.error(std::string(i == 3 ? "input iou_threshold" : "input score_threshold") + " must hold one value");
    }
  }
  return s;
}

NmsBox nms_box(const float* b, bool center_point_box) {
  if (center_point_box) {
    const float hw = b[2] / 2.0f, hh = b[3] / 2.0f;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

bool nms_suppresses(const NmsBox& a, const NmsBox& b, float threshold) {
  const float ix1 = std::max(a.x1, b.x1), iy1 = std::max(a.y1, b.y1);
  const float ix2 = std::min(a.x2, b.x2), iy2 = std::min(a.y2, b.y2);
  if (ix2 <= ix1 || iy2 <= iy1) return false;
  const float inter = (ix2 - ix1) * (iy2 - iy1);
  const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1), area_b = (b.x2 - b.x1) * (b.y2 - b.y1);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) return false;
  return inter / uni > threshold;
}

MODELC_REGISTER_OP(GridSample)
    .since(16)
    .attrs({"align_corners", "mode", "padding_mode"})
    .inputs(2, 2)
    .validate([](const Node& n) {
      grid_sample(n);
      require_floats(n, {0, 1});
    })
    .infer(infer_grid_sample)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_grid_sample(n, in)}; })
    .layout(Layout::channels)
    .kernel("grid_sample")
    .family("vision")
    .flops(flops_per_output(16))
    .doc("samples X [N, C, H, W] at the grid's normalized points: bilinear, nearest or bicubic; zeros, border or "
         "reflection padding; align_corners");
MODELC_REGISTER_OP(GridSample)
    .since(20)
    .attrs({"align_corners", "mode", "padding_mode"})
    .inputs(2, 2)
    .validate([](const Node& n) {
      grid_sample(n);
      require_floats(n, {0, 1});
    })
    .infer(infer_grid_sample)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_grid_sample(n, in)}; })
    .layout(Layout::channels)
    .kernel("grid_sample")
    .family("vision")
    .flops(flops_per_output(16))
    .doc("samples X [N, C, H, W] at the grid's normalized points: linear, nearest or cubic (opset 16: bilinear, "
         "nearest, bicubic); zeros, border or reflection padding; align_corners; 2-D (4-D X) only");

MODELC_REGISTER_OP(RoiAlign)
    .since(10)
    .attrs({"mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"})
    .inputs(3, 3)
    .validate([](const Node& n) {
      roi_align(n);
      require_floats(n, {0, 1});
      if (n.input(2).has_type()) require_dtype(n, 2, {DType::int64});
    })
    .infer(infer_roi_align)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_roi_align(n, in)}; })
    .layout(Layout::channels)
    .kernel("roi_align")
    .family("vision")
    .flops(flops_per_output(8))
    .doc("average (or max) of bilinear samples over each region of interest's bins (legacy coordinates)");
MODELC_REGISTER_OP(RoiAlign)
    .since(16)
    .attrs({"coordinate_transformation_mode", "mode", "output_height", "output_width", "sampling_ratio", "spatial_scale"})
    .inputs(3, 3)
    .validate([](const Node& n) {
      roi_align(n);
      require_floats(n, {0, 1});
      if (n.input(2).has_type()) require_dtype(n, 2, {DType::int64});
    })
    .infer(infer_roi_align)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_roi_align(n, in)}; })
    .layout(Layout::channels)
    .kernel("roi_align")
    .family("vision")
    .flops(flops_per_output(8))
    .doc("average (or max) of bilinear samples over each region of interest's bins; half_pixel coordinates by "
         "default (opset 10: output_half_pixel)");

MODELC_REGISTER_OP(NonMaxSuppression)
    .since(10)
    .attrs({"center_point_box"})
    .inputs(2, 5)
    .validate([](const Node& n) {
      require_floats(n, {0, 1, 3, 4});
      if (n.has_input(2) && n.input(2).has_type()) require_dtype(n, 2, {DType::int64});
    })
    .infer(infer_nms)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_nms(n, in)}; })
    .const_inputs({2})
    .bounded_output(0, 0, kNmsPadding)
    .kernel("nms")
    .family("vision")
    .doc("greedy non-maximum suppression per batch and class; a static bound of batches x classes x "
         "max_output_boxes_per_class rows, the rows past the selected boxes -1");

}  // namespace modelc::ops

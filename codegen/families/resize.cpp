// codegen/families/resize.cpp — the "resize" family: Resize (opsets 10, 11, 13, 18, 19) and
// Upsample (7, 9) through tap tables (templates/resize.cuh).
//
// The taps are computed here with the reference's rules, line for line (compiler/ops/resize.cpp:
// the scales/sizes plan, keep_aspect_ratio_policy, coordinate_transformation_mode, nearest_mode,
// the cubic coefficients, exclude_outside, tf_crop_and_resize's extrapolation), so the kernel reads
// the same input elements with the same weights. The dims the reference leaves unchanged (an
// identity mapping) are copied, as it skips them.
#include <cmath>

#include "codegen/families/data_movement.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

enum class Interp { nearest, linear, cubic };

struct Settings {
  Interp mode = Interp::nearest;
  std::string mode_name = "nearest";
  std::string coord = "asymmetric";
  std::string nearest_mode = "legacy";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  std::vector<int64_t> axes;
  std::string policy = "stretch";
};

// Upsample and Resize-10 use asymmetric coordinates and ORT's legacy nearest rule.
bool is_upsample(const Node& n) { return n.op() == "Upsample"; }
bool is_legacy(const Node& n) { return is_upsample(n) || n.opset() < 11; }

Settings read_settings(const Node& n) {
  Settings s;
  s.mode_name = n.attr_string("mode", "nearest");
  s.mode = s.mode_name == "linear" ? Interp::linear : s.mode_name == "cubic" ? Interp::cubic : Interp::nearest;
  if (s.mode_name != "nearest" && s.mode_name != "linear" && s.mode_name != "cubic") {
    throw n.error("attribute 'mode' is '" + s.mode_name + "', which has no resize kernel");
  }
  if (is_legacy(n)) return s;
  s.coord = n.attr_string("coordinate_transformation_mode", "half_pixel");
  s.nearest_mode = n.attr_string("nearest_mode", "round_prefer_floor");
  s.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
  s.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  s.extrapolation = n.attr_float("extrapolation_value", 0.0);
  if (n.opset() >= 18) {
    s.axes = n.attr_ints("axes");
    s.policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  }
  return s;
}

struct Plan {
  Shape out;
  std::vector<double> scale, resized, roi_start, roi_end;
};

std::vector<double> floats_of_input(const Node& n, int i, const char* what) {
  if (!n.has_input(i)) return {};
  if (!n.input(i).is_constant()) throw n.error(std::string("input '") + what + "' must be a constant");
  return n.input(i).constant().to_f64();
}

Plan make_plan(const Node& n, const Settings& s, const Shape& in) {
  const auto rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  for (int64_t a : s.axes) axes.push_back(a < 0 ? a + rank : a);
  if (s.axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (is_upsample(n) && n.opset() < 9) {
    scales = n.attr_floats("scales");
  } else {
    scales = floats_of_input(n, n.opset() >= 11 && !is_upsample(n) ? 2 : 1, "scales");
    if (n.opset() >= 11 && !is_upsample(n) && n.has_input(3)) {
      if (!n.input(3).is_constant()) throw n.error("input 'sizes' must be a constant");
      sizes = n.input(3).constant().to_i64();
    }
  }
  Plan p;
  p.out = in;
  p.scale.assign(in.size(), 1.0);
  p.resized.assign(in.size(), 0.0);
  for (std::size_t d = 0; d < in.size(); ++d) p.resized[d] = static_cast<double>(in[d]);
  p.roi_start.assign(in.size(), 0.0);
  p.roi_end.assign(in.size(), 1.0);
  if (!scales.empty()) {
    if (scales.size() != axes.size()) throw n.error("'scales' has the wrong number of values");
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const auto d = static_cast<std::size_t>(axes[i]);
      const float prod = static_cast<float>(in[d]) * static_cast<float>(scales[i]);  // float, as ONNX's shape rule
      p.out[d] = static_cast<int64_t>(std::floor(prod));
      p.scale[d] = scales[i];
      p.resized[d] = static_cast<double>(in[d]) * scales[i];
    }
    return p;
  }
  if (sizes.size() != axes.size()) throw n.error("neither 'scales' nor 'sizes' gives the output shape");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const auto d = static_cast<std::size_t>(axes[i]);
    p.out[d] = sizes[i];
    p.scale[d] = in[d] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in[d]);
    p.resized[d] = static_cast<double>(sizes[i]);
  }
  if (s.policy != "stretch" && !axes.empty()) {
    double common = p.scale[static_cast<std::size_t>(axes[0])];
    for (int64_t a : axes) {
      const double sc = p.scale[static_cast<std::size_t>(a)];
      common = s.policy == "not_larger" ? std::min(common, sc) : std::max(common, sc);
    }
    for (int64_t a : axes) {
      const auto d = static_cast<std::size_t>(a);
      p.scale[d] = common;
      p.resized[d] = common * static_cast<double>(in[d]);
      p.out[d] = static_cast<int64_t>(std::floor(p.resized[d] + 0.5));
    }
  }
  return p;
}

struct Taps {
  bool extrapolate = false;
  std::vector<std::pair<int64_t, double>> w;
};

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

double source_coord(const std::string& mode, double j, int64_t len, int64_t out, double resized, double scale,
                    double start, double end) {
  const double L = static_cast<double>(len), O = static_cast<double>(out);
  if (mode == "half_pixel") return (j + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    const double adjustment = O / resized;
    const double offset = L / 2 * (1 - adjustment);
    return offset + (j + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel") return out > 1 ? (j + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resized == 1 ? 0.0 : j * (L - 1) / (resized - 1);
  if (mode == "tf_half_pixel_for_nn") return (j + 0.5) / scale;
  if (mode == "tf_crop_and_resize") {
    return resized == 1 ? 0.5 * (start + end) * (L - 1) : start * (L - 1) + j * (end - start) * (L - 1) / (resized - 1);
  }
  return j / scale;  // asymmetric
}

int64_t clamp_index(int64_t i, int64_t len) { return i < 0 ? 0 : (i >= len ? len - 1 : i); }

int64_t nearest_index(const std::string& mode, double x, double scale) {
  const double fl = std::floor(x);
  const double frac = x - fl;
  if (mode == "legacy") return static_cast<int64_t>(scale < 1 ? std::ceil(x) : fl);
  if (mode == "floor") return static_cast<int64_t>(fl);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(frac < 0.5 ? fl : fl + 1);
  return static_cast<int64_t>(frac <= 0.5 ? fl : fl + 1);  // round_prefer_floor
}

std::vector<Taps> axis_taps(const Settings& s, int64_t len, int64_t out, double resized, double scale, double start,
                            double end) {
  std::vector<Taps> taps(static_cast<std::size_t>(out));
  for (int64_t j = 0; j < out; ++j) {
    Taps& t = taps[static_cast<std::size_t>(j)];
    const double x = source_coord(s.coord, static_cast<double>(j), len, out, resized, scale, start, end);
    if (s.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(len - 1))) {
      t.extrapolate = true;
      continue;
    }
    if (!std::isfinite(x)) {
      t.extrapolate = true;
      continue;
    }
    if (s.mode == Interp::nearest) {
      t.w.push_back({clamp_index(nearest_index(s.nearest_mode, x, scale), len), 1.0});
      continue;
    }
    const double fl = std::floor(x);
    const double r = x - fl;
    const auto base = static_cast<int64_t>(fl);
    if (s.mode == Interp::linear) {
      if (r != 1.0) t.w.push_back({clamp_index(base, len), 1.0 - r});
      if (r != 0.0) t.w.push_back({clamp_index(base + 1, len), r});
      continue;
    }
    double sum = 0;
    for (int64_t k = -1; k <= 2; ++k) {
      const int64_t idx = base + k;
      double w = cubic_weight(static_cast<double>(k) - r, s.cubic_a);
      if (s.exclude_outside && (idx < 0 || idx >= len)) w = 0;
      if (w != 0) t.w.push_back({clamp_index(idx, len), w});
      sum += w;
    }
    if (s.exclude_outside && sum != 0) {
      for (auto& tap : t.w) tap.second /= sum;
    }
  }
  return taps;
}

bool is_identity(const std::vector<Taps>& taps, int64_t len) {
  if (static_cast<int64_t>(taps.size()) != len) return false;
  for (std::size_t j = 0; j < taps.size(); ++j) {
    const Taps& t = taps[j];
    if (t.extrapolate || t.w.size() != 1 || t.w[0].first != static_cast<int64_t>(j) || t.w[0].second != 1.0) {
      return false;
    }
  }
  return true;
}

}  // namespace

ResizePlan resize_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const Settings s = read_settings(n);
  Plan p = make_plan(n, s, x.shape);
  if (p.out != y.shape)
    throw n.error("internal: the resize plan disagrees with the output shape " + shape_str(y.shape));
  if (s.coord == "tf_crop_and_resize") {
    std::vector<int64_t> axes;
    for (int64_t a : s.axes) axes.push_back(a < 0 ? a + static_cast<int64_t>(x.shape.size()) : a);
    if (s.axes.empty()) {
      for (std::size_t d = 0; d < x.shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    }
    const std::vector<double> roi = floats_of_input(n, 1, "roi");
    if (roi.size() != 2 * axes.size()) throw n.error("input 'roi' has the wrong number of values");
    for (std::size_t i = 0; i < axes.size(); ++i) {
      p.roi_start[static_cast<std::size_t>(axes[i])] = roi[i];
      p.roi_end[static_cast<std::size_t>(axes[i])] = roi[axes.size() + i];
    }
  }
  ResizePlan r;
  r.extrapolation = s.extrapolation;
  r.summary = s.mode_name + ", " + s.coord + (s.mode == Interp::nearest ? ", " + s.nearest_mode : "");
  const int64_t width = s.mode == Interp::nearest ? 1 : s.mode == Interp::linear ? 2 : 4;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t len = x.shape[d], out = p.out[d];
    const std::vector<Taps> taps = axis_taps(s, len, out, p.resized[d], p.scale[d], p.roi_start[d], p.roi_end[d]);
    if (is_identity(taps, len)) {
      r.taps.push_back(0);
      r.start.push_back(0);
      continue;
    }
    r.taps.push_back(width);
    r.start.push_back(static_cast<int64_t>(r.table.size()));
    for (const Taps& t : taps) {
      for (int64_t k = 0; k < width; ++k) {
        if (t.extrapolate) {
          r.table.push_back({k == 0 ? -2 : -1, 0.0});
        } else if (k < static_cast<int64_t>(t.w.size())) {
          r.table.push_back(
              {static_cast<int32_t>(t.w[static_cast<std::size_t>(k)].first), t.w[static_cast<std::size_t>(k)].second});
        } else {
          r.table.push_back({-1, 0.0});
        }
      }
    }
  }
  return r;
}

namespace {

Emitted emit_resize(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const ResizePlan p = resize_plan(*k.node, x, y);
  const std::string comment = node_str(k) + ": " + view_str(x) + " -> " + view_str(y) + ", " + p.summary;
  if (y.numel() == 0) return {"", "// " + node_str(k) + ": the output is empty, nothing to write\n"};
  // Integer data accumulates in double so that the result truncates as the reference's does.
  const bool exact = !is_float(x.dtype);
  const std::string acc = exact ? "double" : "float";
  const std::string table = k.id + "_resize_taps";
  std::string decl;
  if (!p.table.empty()) {
    decl = "// " + comment + ": interpolation taps (input index, weight) per output coordinate\n";
    decl += "__device__ const mc::dm::Tap<" + acc + "> " + table + "[] = {";
    for (std::size_t i = 0; i < p.table.size(); ++i) {
      decl += std::string(i % 8 == 0 ? "\n    " : " ") + "{" + std::to_string(p.table[i].first) + ", " +
              (exact ? double_literal(p.table[i].second) : float_literal(p.table[i].second)) + "},";
    }
    decl += "\n};\n";
    decl += "struct " + table + "_table {\n  static __device__ const mc::dm::Tap<" + acc + ">* taps() { return " +
            table + "; }\n};\n";
  } else {
    decl = "struct " + table + "_table {  // " + comment +
           ": no dim is resampled\n  static __device__ const mc::dm::Tap<" + acc +
           ">* taps() { return nullptr; }\n};\n";
  }
  std::string s = "{  // " + p.summary + (exact ? ", accumulated in double (integer data)" : "") + "\n";
  s += "  using K = mc::dm::Resize<" + elem_type(x.dtype) + ", " + acc + ", " + table + "_table, " + dims(y.shape) +
       ",\n      " + dims(y.strides) + ", " + dims(x.strides) + ", " + dims(p.taps) + ", " + dims(p.start) + ">;\n";
  s += "  const K::Params p{" + ctx.ptr(y, false) + ", " + ctx.ptr(x, true) + ", " +
       (exact ? double_literal(p.extrapolation) : float_literal(p.extrapolation)) + "};\n";
  s += "  MC_LAUNCH(mc::dm::resize_kernel<K>, K::grid, K::block, 0, p);\n";
  return {decl, s + "}\n"};
}

void plan_resize(Kernel& k, const Target&) {
  k.note = "tap tables computed at emit time; FP32 accumulation (float64 for integer data)";
}

}  // namespace

MODELC_REGISTER_FAMILY(resize_family)
(KernelFamily{"resize", {"tensor_index.cuh", "resize.cuh"}, plan_resize, emit_resize});

}  // namespace modelc::codegen

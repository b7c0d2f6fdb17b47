// compiler/ops/resize.cpp — Resize (opsets 10, 11, 13, 18, 19) and Upsample (7, 9).
//
// Every form reduces to one plan: an output shape and, per axis, the scale and
// region of interest that map an output coordinate back to the input. The
// interpolation is separable (nearest, N-linear and cubic are products of 1-D
// kernels), so the reference resamples one axis at a time, skipping the axes
// whose mapping is the identity.
#include <cmath>

#include "ops/resize.h"

#include "ops/common.h"
#include "reference/parallel.h"

namespace modelc::ops {
namespace {

enum class Form { upsample7, upsample9, resize10, resize11, resize13, resize18, resize19 };
enum class Interp { nearest, linear, cubic };

bool is_upsample(Form f) { return f == Form::upsample7 || f == Form::upsample9; }
// Upsample and Resize-10: asymmetric coordinates, ORT's legacy nearest rule.
bool is_legacy(Form f) { return is_upsample(f) || f == Form::resize10; }
bool has_axes(Form f) { return f == Form::resize18 || f == Form::resize19; }

/// The attributes of a node, checked (names the attribute and value at fault).
struct Settings {
  Interp mode = Interp::nearest;
  std::string coord = "asymmetric";
  std::string nearest_mode = "legacy";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  std::vector<int64_t> axes;  // as given (not yet normalised); empty: every axis
  std::string policy = "stretch";
};

std::string one_of(const Node& n, const std::string& attr, const std::string& def,
                   std::initializer_list<const char*> allowed) {
  const std::string v = n.attr_string(attr, def);
  std::string names;
  for (const char* a : allowed) {
    if (v == a) return v;
    names += std::string(names.empty() ? "" : ", ") + a;
  }
  throw n.error("attribute '" + attr + "' is '" + v + "', which " + n.op() + " (opset " +
                    std::to_string(n.opset()) + ") does not support; expected one of: " + names,
                "re-export the model with a supported " + attr);
}

Settings read_settings(const Node& n, Form f) {
  Settings s;
  const std::string mode = is_legacy(f) ? one_of(n, "mode", "nearest", {"nearest", "linear"})
                                        : one_of(n, "mode", "nearest", {"nearest", "linear", "cubic"});
  s.mode = mode == "nearest" ? Interp::nearest : mode == "linear" ? Interp::linear : Interp::cubic;
  if (is_legacy(f)) return s;
  switch (f) {
    case Form::resize11:
      s.coord = one_of(n, "coordinate_transformation_mode", "half_pixel",
                       {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                        "tf_crop_and_resize"});
      break;
    case Form::resize19:
      s.coord = one_of(n, "coordinate_transformation_mode", "half_pixel",
                       {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                        "tf_crop_and_resize"});
      break;
    default:
      s.coord = one_of(n, "coordinate_transformation_mode", "half_pixel",
                       {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"});
  }
  s.nearest_mode =
      one_of(n, "nearest_mode", "round_prefer_floor", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  s.cubic_a = n.attr_float("cubic_coeff_a", -0.75);
  const int64_t excl = n.attr_int("exclude_outside", 0);
  if (excl != 0 && excl != 1) throw n.error("attribute 'exclude_outside' is " + std::to_string(excl) + ", expected 0 or 1");
  s.exclude_outside = excl != 0;
  s.extrapolation = n.attr_float("extrapolation_value", 0.0);
  if (has_axes(f)) {
    const int64_t aa = n.attr_int("antialias", 0);
    if (aa != 0 && aa != 1) throw n.error("attribute 'antialias' is " + std::to_string(aa) + ", expected 0 or 1");
    if (aa == 1 && s.mode != Interp::nearest) {
      throw n.error("attribute 'antialias' = 1 is not supported (mode '" + mode + "')",
                    "re-export the model with antialias=0");
    }
    s.axes = n.attr_ints("axes");
    s.policy = one_of(n, "keep_aspect_ratio_policy", "stretch", {"stretch", "not_larger", "not_smaller"});
  }
  return s;
}

void validate_resize(const Node& n, Form f) {
  if (f == Form::upsample7 && !n.has_attr("scales")) throw n.error("attribute 'scales' is required");
  read_settings(n, f);
  if (n.has_input(0) && n.input(0).has_type()) {
    require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16, DType::int8, DType::uint8, DType::int32,
                         DType::int64});
  }
}

// normalize_axes lets axis 0 through on a scalar (rank 0); a scalar has no
// axes to name, so that is an Error here.
std::vector<int64_t> checked_axes(const Node& n, const std::vector<int64_t>& axes, int64_t rank) {
  if (rank == 0 && !axes.empty()) {
    throw n.error("'axes' names axis " + std::to_string(axes[0]) + " of a scalar input, which has none");
  }
  return normalize_axes(n, axes, rank);
}

/// Output shape and, per axis, the scale and ROI of the coordinate transform.
/// `resized` is the unrounded output length (in * scale; exactly the size when
/// 'sizes' gives it), which some coordinate modes divide by.
struct Plan {
  Shape out;
  std::vector<double> scale;
  std::vector<double> resized;
  std::vector<double> roi_start, roi_end;
};

// The axes scales/sizes/roi refer to: `axes` (opset 18+) or every axis.
std::vector<int64_t> target_axes(const Node& n, const Settings& s, int64_t rank) {
  if (s.axes.empty()) {
    std::vector<int64_t> all(static_cast<std::size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) all[static_cast<std::size_t>(d)] = d;
    return all;
  }
  return checked_axes(n, s.axes, rank);
}

// Refuses outputs whose element count would overflow the shape math.
void check_output_size(const Node& n, const Shape& out) {
  constexpr int64_t kMaxElements = int64_t{1} << 48;
  int64_t total = 1;
  for (int64_t d : out) {
    if (d != 0 && total > kMaxElements / d) throw n.error("the output shape " + shape_str(out) + " is too large");
    total *= d;
  }
}

// `scales`/`sizes`: the data of those inputs (empty = not given).
Plan make_plan(const Node& n, Form f, const Settings& s, const Shape& in, const std::vector<double>& scales,
               const std::vector<int64_t>& sizes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  const std::vector<int64_t> axes = target_axes(n, s, rank);
  const std::string scales_name = f == Form::upsample7 ? "attribute 'scales'" : "input 'scales'";
  if (!scales.empty() && !sizes.empty()) {
    throw n.error("both 'scales' and 'sizes' are given; exactly one of them may be non-empty");
  }
  if (scales.empty() && sizes.empty()) {
    throw n.error(f >= Form::resize11 ? "neither 'scales' nor 'sizes' is given (or both are empty)"
                                      : scales_name + " is empty");
  }
  Plan p;
  p.out = in;
  p.scale.assign(in.size(), 1.0);
  p.resized.assign(in.size(), 0.0);
  for (std::size_t d = 0; d < in.size(); ++d) p.resized[d] = static_cast<double>(in[d]);
  p.roi_start.assign(in.size(), 0.0);
  p.roi_end.assign(in.size(), 1.0);
  const std::size_t want = axes.size();
  if (!scales.empty()) {
    if (scales.size() != want) {
      throw n.error(scales_name + " has " + std::to_string(scales.size()) + " values, expected " +
                    std::to_string(want) + (s.axes.empty() ? " (the input's rank)" : " (one per axis in 'axes')"));
    }
    for (std::size_t i = 0; i < want; ++i) {
      const double sc = scales[i];
      if (!(sc > 0) || !std::isfinite(sc) || (is_upsample(f) && sc < 1)) {
        throw n.error(scales_name + " holds " + std::to_string(sc) + ", expected a finite value " +
                      (is_upsample(f) ? ">= 1" : "> 0"));
      }
      const std::size_t d = static_cast<std::size_t>(axes[i]);
      // float arithmetic, as ONNX's shape inference computes it
      const float prod = static_cast<float>(in[d]) * static_cast<float>(sc);
      if (!(prod < 9.0e15f)) throw n.error(scales_name + " value " + std::to_string(sc) + " gives an output too large");
      p.out[d] = static_cast<int64_t>(std::floor(prod));
      p.scale[d] = sc;
      p.resized[d] = static_cast<double>(in[d]) * sc;
    }
    check_output_size(n, p.out);
    return p;
  }
  if (sizes.size() != want) {
    throw n.error("input 'sizes' has " + std::to_string(sizes.size()) + " values, expected " + std::to_string(want) +
                  (s.axes.empty() ? " (the input's rank)" : " (one per axis in 'axes')"));
  }
  for (std::size_t i = 0; i < want; ++i) {
    const std::size_t d = static_cast<std::size_t>(axes[i]);
    if (sizes[i] < 0) throw n.error("input 'sizes' holds " + std::to_string(sizes[i]) + ", expected >= 0");
    if (in[d] == 0 && sizes[i] != 0) {
      throw n.error("axis " + std::to_string(d) + " of the input is empty and cannot be resized to " +
                    std::to_string(sizes[i]));
    }
    p.out[d] = sizes[i];
    p.scale[d] = in[d] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in[d]);
    p.resized[d] = static_cast<double>(sizes[i]);
  }
  if (s.policy != "stretch" && want > 0) {
    // One scale for every listed axis: the smallest (not_larger) or largest (not_smaller).
    double common = p.scale[static_cast<std::size_t>(axes[0])];
    for (int64_t a : axes) {
      const double sc = p.scale[static_cast<std::size_t>(a)];
      common = s.policy == "not_larger" ? std::min(common, sc) : std::max(common, sc);
    }
    for (int64_t a : axes) {
      const std::size_t d = static_cast<std::size_t>(a);
      p.scale[d] = common;
      p.resized[d] = common * static_cast<double>(in[d]);
      p.out[d] = static_cast<int64_t>(std::floor(p.resized[d] + 0.5));  // round half up
    }
  }
  check_output_size(n, p.out);
  return p;
}

std::vector<int64_t> or_empty(std::optional<std::vector<int64_t>> v) { return v ? *v : std::vector<int64_t>{}; }
std::vector<double> or_empty(std::optional<std::vector<double>> v) { return v ? *v : std::vector<double>{}; }

// Inputs per form: Upsample-9/Resize-10 (X, scales); Resize-11+ (X, roi, scales, sizes).
int scales_input(Form f) { return f >= Form::resize11 ? 2 : 1; }

Plan plan_at_infer(const Node& n, Form f, const Settings& s) {
  const Shape& in = n.input(0).shape();
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (f == Form::upsample7) {
    scales = n.attr_floats("scales");
  } else {
    scales = or_empty(const_floats(n, scales_input(f), "scales"));
    if (f >= Form::resize11) sizes = or_empty(const_ints(n, 3, "sizes"));
  }
  return make_plan(n, f, s, in, scales, sizes);
}

void infer_resize(Node& n, Form f) {
  const Settings s = read_settings(n, f);
  const Plan p = plan_at_infer(n, f, s);
  if (s.coord == "tf_crop_and_resize") {
    const int64_t want = 2 * static_cast<int64_t>(target_axes(n, s, n.input(0).rank()).size());
    if (!n.has_input(1) || n.input(1).numel() != want) {
      throw n.error("coordinate_transformation_mode 'tf_crop_and_resize' needs input 'roi' with " +
                    std::to_string(want) + " values" +
                    (n.has_input(1) ? ", it has " + std::to_string(n.input(1).numel()) : ", it is absent"));
    }
  }
  n.output(0).set_type(n.input(0).dtype(), p.out);
}

// ---- evaluation ---------------------------------------------------------------

using Taps = ResizeTaps;

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

// Input coordinate of output coordinate j along an axis of `len` input and
// `out` output elements (ONNX's coordinate_transformation_mode).
// align_corners and tf_crop_and_resize divide by the unrounded resized length,
// as ONNX's reference implementation does: with scale 0.6 on 4 elements that
// is 2.4, not the 2 output elements.
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
  if (mode == "legacy") return static_cast<int64_t>(scale < 1 ? std::ceil(x) : fl);  // ORT's Upsample rule
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
      t.extrapolate = true;  // a degenerate ROI: nothing sensible to sample
      continue;
    }
    if (s.mode == Interp::nearest) {
      t.w.push_back({clamp_index(nearest_index(s.nearest_mode, x, scale), len), 1.0});
      continue;
    }
    const double fl = std::floor(x);
    const double r = x - fl;
    const int64_t base = static_cast<int64_t>(fl);
    if (s.mode == Interp::linear) {
      // Zero weights are dropped so an infinite neighbour does not turn the result into NaN.
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
      for (auto& [idx, w] : t.w) w /= sum;
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

ResizeSampling sampling(const Node& n, Form f, const Shape& x_shape, const TensorRefs& in) {
  const Settings s = read_settings(n, f);
  auto input = [&](int i) -> const Tensor* { return static_cast<int>(in.size()) > i ? in[i] : nullptr; };
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (f == Form::upsample7) {
    scales = n.attr_floats("scales");
  } else {
    if (const Tensor* t = input(scales_input(f))) scales = t->to_f64();
    if (f >= Form::resize11) sizes = ints_of(input(3));
  }
  Plan p = make_plan(n, f, s, x_shape, scales, sizes);
  if (s.coord == "tf_crop_and_resize") {
    const std::vector<int64_t> axes = target_axes(n, s, static_cast<int64_t>(x_shape.size()));
    const Tensor* roi_t = input(1);
    const std::vector<double> roi = roi_t ? roi_t->to_f64() : std::vector<double>{};
    if (roi.size() != 2 * axes.size()) {
      throw n.error("input 'roi' has " + std::to_string(roi.size()) + " values, expected " +
                    std::to_string(2 * axes.size()));
    }
    for (std::size_t i = 0; i < axes.size(); ++i) {
      p.roi_start[static_cast<std::size_t>(axes[i])] = roi[i];
      p.roi_end[static_cast<std::size_t>(axes[i])] = roi[axes.size() + i];
    }
  }

  ResizeSampling r;
  r.out = p.out;
  r.extrapolation = s.extrapolation;
  r.width = s.mode == Interp::nearest ? 1 : s.mode == Interp::linear ? 2 : 4;
  r.mode = s.mode == Interp::nearest ? "nearest" : s.mode == Interp::linear ? "linear" : "cubic";
  r.coord = s.coord;
  r.nearest_mode = s.nearest_mode;
  for (std::size_t d = 0; d < x_shape.size(); ++d) {
    std::vector<Taps> taps = axis_taps(s, x_shape[d], p.out[d], p.resized[d], p.scale[d], p.roi_start[d], p.roi_end[d]);
    r.axes.push_back(is_identity(taps, x_shape[d]) ? std::vector<Taps>{} : std::move(taps));
  }
  return r;
}

std::vector<Tensor> eval_resize(const Node& n, const TensorRefs& in, Form f) {
  const Tensor& x = *in[0];
  const ResizeSampling r = sampling(n, f, x.shape(), in);
  std::vector<double> cur = x.to_f64();
  Shape shape = x.shape();
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const int64_t len = shape[d], out = r.out[d];
    const std::vector<Taps>& taps = r.axes[d];
    if (taps.empty()) continue;
    int64_t outer = 1, inner = 1;
    for (std::size_t k = 0; k < d; ++k) outer *= shape[k];
    for (std::size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    std::vector<double> next(static_cast<std::size_t>(outer * out * inner));
    // Threads over the outer index (reference/parallel.h): each writes its own rows.
    const reference::Split pieces(outer, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, out * inner)));
    reference::parallel_for(
        pieces.pieces,
        [&](int64_t p) {
          for (int64_t o = pieces.begin(p); o < pieces.end(p); ++o) {
            for (int64_t j = 0; j < out; ++j) {
              const Taps& t = taps[static_cast<std::size_t>(j)];
              double* dst = next.data() + (o * out + j) * inner;
              if (t.extrapolate) {
                for (int64_t i = 0; i < inner; ++i) dst[i] = r.extrapolation;
                continue;
              }
              for (int64_t i = 0; i < inner; ++i) dst[i] = 0.0;
              for (const auto& [idx, w] : t.w) {
                const double* src = cur.data() + (o * len + idx) * inner;
                for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
              }
            }
          }
        },
        outer * out * inner * static_cast<int64_t>(r.width));
    cur = std::move(next);
    shape[d] = out;
  }
  return {Tensor::from_f64(x.dtype(), r.out, cur)};
}

// Two FLOPs per tap per output element: 2^k taps for N-linear over k resized
// axes, 4^k for cubic, none for nearest (a copy).
int64_t resize_flops(const Node& n, Form f) {
  const Settings s = read_settings(n, f);
  if (s.mode == Interp::nearest) return 0;
  int64_t taps = 1;
  const Shape& in = n.input(0).shape();
  const Shape& out = n.output(0).shape();
  for (std::size_t d = 0; d < in.size() && d < out.size(); ++d) {
    if (in[d] != out[d]) taps *= s.mode == Interp::linear ? 2 : 4;
  }
  return 2 * taps * n.output(0).numel();
}

const std::vector<std::string> kResize11Attrs = {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                                                 "extrapolation_value", "mode", "nearest_mode"};
const std::vector<std::string> kResize18Attrs = {"antialias", "axes", "coordinate_transformation_mode",
                                                 "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                                                 "keep_aspect_ratio_policy", "mode", "nearest_mode"};

Form form_of(const Node& n) {
  if (n.op() == "Upsample") return n.opset() < 9 ? Form::upsample7 : Form::upsample9;
  if (n.opset() < 11) return Form::resize10;
  if (n.opset() < 13) return Form::resize11;
  if (n.opset() < 18) return Form::resize13;
  return n.opset() < 19 ? Form::resize18 : Form::resize19;
}

}  // namespace

ResizeSampling resize_sampling(const Node& n, const Shape& x_shape, const TensorRefs& in) {
  return sampling(n, form_of(n), x_shape, in);
}

// Every form shares the same rules; only which inputs and attributes it has differ.
#define MODELC_REGISTER_RESIZE(NAME, SINCE, FORM, ATTRS, MIN_IN, MAX_IN, DOC)                 \
  MODELC_REGISTER_OP(NAME)                                                                    \
      .since(SINCE)                                                                           \
      .attrs(ATTRS)                                                                           \
      .inputs(MIN_IN, MAX_IN)                                                                 \
      .const_inputs((FORM) == Form::upsample7 ? std::vector<int>{}                             \
                    : (MAX_IN) == 2           ? std::vector<int>{1}                            \
                                              : std::vector<int>{1, 2, 3})                     \
      .validate([](const Node& n) { validate_resize(n, FORM); })                              \
      .infer([](Node& n) { infer_resize(n, FORM); })                                          \
      .eval([](const Node& n, const TensorRefs& in) { return eval_resize(n, in, FORM); })     \
      .precision(Precision::fp32_compute) /* float data interpolates in float (resize.cuh) */ \
      .layout(Layout::channels)                                                               \
      .kernel("resize")                                                                       \
      .family("data")                                                                         \
      .flops([](const Node& n) { return resize_flops(n, FORM); })                             \
      .doc(DOC)

MODELC_REGISTER_RESIZE(Upsample, 7, Form::upsample7, (std::vector<std::string>{"mode", "scales"}), 1, 1,
                       "nearest or linear upsampling by the 'scales' attribute (asymmetric coordinates)");
MODELC_REGISTER_RESIZE(Upsample, 9, Form::upsample9, (std::vector<std::string>{"mode"}), 2, 2,
                       "nearest or linear upsampling by the 'scales' input (asymmetric coordinates)");
MODELC_REGISTER_RESIZE(Resize, 10, Form::resize10, (std::vector<std::string>{"mode"}), 2, 2,
                       "nearest or linear resize by 'scales' (asymmetric coordinates)");
MODELC_REGISTER_RESIZE(Resize, 11, Form::resize11, kResize11Attrs, 1, 4,
                       "nearest, linear or cubic resize by 'scales' or 'sizes', with roi and coordinate modes");
MODELC_REGISTER_RESIZE(Resize, 13, Form::resize13, kResize11Attrs, 1, 4,
                       "nearest, linear or cubic resize by 'scales' or 'sizes', with roi and coordinate modes");
MODELC_REGISTER_RESIZE(Resize, 18, Form::resize18, kResize18Attrs, 1, 4,
                       "resize over 'axes', with keep_aspect_ratio_policy (antialias unsupported)");
MODELC_REGISTER_RESIZE(Resize, 19, Form::resize19, kResize18Attrs, 1, 4,
                       "resize over 'axes', with half_pixel_symmetric (antialias unsupported)");

#undef MODELC_REGISTER_RESIZE

}  // namespace modelc::ops

// compiler/ops/window.cpp — see window.h.
#include "ops/window.h"

#include <algorithm>

#include "ops/common.h"

namespace modelc::ops {
namespace {

constexpr int64_t kMaxSpatial = 3;

// Checks X and W ranks, group, kernel_shape; fills N, C, group, in, k, stride, dil.
WindowGeometry common_geometry(const Node& n, const Shape& x, const Shape& w) {
  if (x.size() < 3) {
    throw n.error("input X ('" + n.input(0).name() + "') has shape " + shape_str(x) +
                  ", expected N x C x D1 x ... (rank 3 or more)");
  }
  if (static_cast<int64_t>(x.size()) - 2 > kMaxSpatial) {
    throw n.error(n.op() + " over " + std::to_string(x.size() - 2) + " spatial dims is not supported (1 to 3 are)");
  }
  if (w.size() != x.size()) {
    throw n.error("weight W ('" + n.input(1).name() + "') has shape " + shape_str(w) + ", expected rank " +
                  std::to_string(x.size()) + " like X (" + shape_str(x) + ")");
  }
  WindowGeometry g;
  const std::size_t ns = x.size() - 2;
  g.N = x[0];
  g.C = x[1];
  g.group = n.attr_int("group", 1);
  if (g.group < 1) throw n.error("attribute 'group' is " + std::to_string(g.group) + ", expected 1 or more");
  if (g.C % g.group != 0) {
    throw n.error("input channels (" + std::to_string(g.C) + ") are not divisible by group (" +
                  std::to_string(g.group) + ")");
  }
  g.in.assign(x.begin() + 2, x.end());
  g.kernel.assign(w.begin() + 2, w.end());
  if (n.has_attr("kernel_shape")) {
    const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
    if (ks != g.kernel) {
      throw n.error("attribute 'kernel_shape' is " + n.attr("kernel_shape")->str() + ", W ('" + n.input(1).name() +
                    "') has shape " + shape_str(w));
    }
  }
  for (int64_t d : g.kernel) {
    if (d < 1) throw n.error("weight W ('" + n.input(1).name() + "') has an empty kernel: " + shape_str(w));
  }
  g.stride = spatial_attr(n, "strides", ns, 1);
  g.dilation = spatial_attr(n, "dilations", ns, 1);
  for (std::size_t i = 0; i < ns; ++i) {
    if (g.stride[i] < 1) throw n.error("attribute 'strides' has value " + std::to_string(g.stride[i]) + ", expected >= 1");
    if (g.dilation[i] < 1) throw n.error("attribute 'dilations' has value " + std::to_string(g.dilation[i]) + ", expected >= 1");
  }
  return g;
}


// Explicit pads: absent means zeros; otherwise 2 * spatial values >= 0.
void explicit_pads(const Node& n, WindowGeometry& g) {
  const std::size_t ns = g.in.size();
  std::vector<int64_t> pads(2 * ns, 0);
  if (n.has_attr("pads")) {
    pads = n.attr_ints("pads");
    if (pads.size() != 2 * ns) {
      throw n.error("attribute 'pads' has " + std::to_string(pads.size()) + " values, expected " +
                    std::to_string(2 * ns) + " (begin and end for each of the " + std::to_string(ns) +
                    " spatial dims)");
    }
    for (int64_t p : pads) {
      if (p < 0) throw n.error("attribute 'pads' has value " + std::to_string(p) + ", expected >= 0");
    }
  }
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(ns));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(ns), pads.end());
}


void require_positive_output(const Node& n, const WindowGeometry& g) {
  for (std::size_t i = 0; i < g.out.size(); ++i) {
    if (g.out[i] < 1) {
      throw n.error("output spatial dim " + std::to_string(i) + " would be " + std::to_string(g.out[i]) +
                    " (input " + std::to_string(g.in[i]) + ", kernel " + std::to_string(g.kernel[i]) + ", stride " +
                    std::to_string(g.stride[i]) + ", dilation " + std::to_string(g.dilation[i]) + ", pads " +
                    std::to_string(g.pad_begin[i]) + "+" + std::to_string(g.pad_end[i]) + ")");
    }
  }
}


void check_bias(const Node& n, int64_t M) {
  if (!n.has_input(2)) return;
  const Shape& b = n.input(2).shape();
  if (b != Shape{M}) {
    throw n.error("bias B ('" + n.input(2).name() + "') has shape " + shape_str(b) + ", expected [" +
                  std::to_string(M) + "] (one value per output channel)");
  }
}

// auto_pad SAME_UPPER / SAME_LOWER along spatial dim i: ceil(in / stride) windows, the padding they
// need split evenly, the odd one at the end (SAME_UPPER) or at the beginning (SAME_LOWER).
void same_padding(AutoPad ap, WindowGeometry& g, std::size_t i) {
  const int64_t ek = (g.kernel[i] - 1) * g.dilation[i] + 1;  // effective (dilated) window extent
  g.out[i] = ceil_div(g.in[i], g.stride[i]);
  const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.stride[i] + ek - g.in[i]);
  g.pad_begin[i] = ap == AutoPad::same_upper ? total / 2 : total - total / 2;
  g.pad_end[i] = total - g.pad_begin[i];
}

}  // namespace

void require_spatial_input(const Node& n, int64_t min_rank) {
  const Value& x = n.input(0);
  if (x.rank() < min_rank) {
    throw n.error("input X ('" + x.name() + "') has shape " + shape_str(x.shape()) + ", expected N x C x D1 x ... (rank " +
                  std::to_string(min_rank) + " or more)");
  }
}

AutoPad parse_auto_pad(const Node& n) {
  const std::string s = n.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::notset;
  if (s == "SAME_UPPER") return AutoPad::same_upper;
  if (s == "SAME_LOWER") return AutoPad::same_lower;
  if (s == "VALID") return AutoPad::valid;
  throw n.error("attribute 'auto_pad' is '" + s + "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

std::string Window3::str() const {
  auto part = [&](const std::array<int64_t, 3>& a) {
    std::string s;
    for (int i = 3 - spatial; i < 3; ++i) s += (s.empty() ? "" : "x") + std::to_string(a[static_cast<std::size_t>(i)]);
    return s;
  };
  std::string pads = part(pad);
  if (pad_end != pad) pads += "/" + part(pad_end);
  return "k" + part(kernel) + " s" + part(stride) + " p" + pads + " d" + part(dilation) +
         (G > 1 ? " g" + std::to_string(G) : "");
}

Shape WindowGeometry::output_shape() const {
  Shape s{N, M};
  s.insert(s.end(), out.begin(), out.end());
  return s;
}

Window3 WindowGeometry::padded3() const {
  Window3 r;
  r.N = N;
  r.C = C;
  r.M = M;
  r.G = group;
  r.spatial = static_cast<int>(in.size());
  const std::size_t off = 3 - in.size();
  for (std::size_t i = 0; i < in.size(); ++i) {
    r.in[off + i] = in[i];
    r.kernel[off + i] = kernel[i];
    r.out[off + i] = out[i];
    r.stride[off + i] = stride[i];
    r.dilation[off + i] = dilation[i];
    r.pad[off + i] = pad_begin[i];
    r.pad_end[off + i] = pad_end[i];
  }
  return r;
}

WindowGeometry conv_geometry(const Node& n) {
  const Shape& x = n.input(0).shape();
  const Shape& w = n.input(1).shape();
  WindowGeometry g = common_geometry(n, x, w);
  g.M = w[0];
  if (g.M % g.group != 0) {
    throw n.error("output channels (W dim 0 = " + std::to_string(g.M) + ") are not divisible by group (" +
                  std::to_string(g.group) + ")");
  }
  if (w[1] * g.group != g.C) {
    throw n.error("weight W ('" + n.input(1).name() + "') has shape " + shape_str(w) + ": dim 1 times group (" +
                  std::to_string(g.group) + ") must equal the input channels of X (" + std::to_string(g.C) + ")");
  }
  const std::size_t ns = g.in.size();
  const AutoPad ap = parse_auto_pad(n);
  explicit_pads(n, g);
  g.out.resize(ns);
  for (std::size_t i = 0; i < ns; ++i) {
    if (ap == AutoPad::same_upper || ap == AutoPad::same_lower) {
      same_padding(ap, g, i);
    } else {
      if (ap == AutoPad::valid) g.pad_begin[i] = g.pad_end[i] = 0;
      const int64_t ek = (g.kernel[i] - 1) * g.dilation[i] + 1;  // effective (dilated) kernel extent
      const int64_t span = g.in[i] + g.pad_begin[i] + g.pad_end[i] - ek;
      g.out[i] = span < 0 ? 0 : span / g.stride[i] + 1;
    }
  }
  require_positive_output(n, g);
  check_bias(n, g.M);
  return g;
}

WindowGeometry conv_transpose_geometry(const Node& n) {
  const Shape& x = n.input(0).shape();
  const Shape& w = n.input(1).shape();
  WindowGeometry g = common_geometry(n, x, w);
  if (w[0] != g.C) {
    throw n.error("weight W ('" + n.input(1).name() + "') has shape " + shape_str(w) +
                  ": dim 0 must equal the input channels of X (" + std::to_string(g.C) + ")");
  }
  g.M = w[1] * g.group;
  const std::size_t ns = g.in.size();
  const AutoPad ap = parse_auto_pad(n);
  const std::vector<int64_t> out_pad = spatial_attr(n, "output_padding", ns, 0);
  for (int64_t p : out_pad) {
    if (p < 0) throw n.error("attribute 'output_padding' has value " + std::to_string(p) + ", expected >= 0");
  }
  explicit_pads(n, g);
  // output_shape may list the spatial dims only, or N and C too.
  std::vector<int64_t> out_shape;
  if (n.has_attr("output_shape")) {
    out_shape = n.attr_ints("output_shape");
    if (out_shape.size() == ns + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
    if (out_shape.size() != ns) {
      throw n.error("attribute 'output_shape' has " + std::to_string(n.attr_ints("output_shape").size()) +
                    " values, expected " + std::to_string(ns) + " (the spatial dims)");
    }
  } else if (ap == AutoPad::same_upper || ap == AutoPad::same_lower) {
    for (std::size_t i = 0; i < ns; ++i) out_shape.push_back(g.in[i] * g.stride[i]);
  }
  g.out.resize(ns);
  for (std::size_t i = 0; i < ns; ++i) {
    const int64_t full = g.stride[i] * (g.in[i] - 1) + out_pad[i] + (g.kernel[i] - 1) * g.dilation[i] + 1;
    if (!out_shape.empty()) {
      // The spec: pads are generated from output_shape (explicit pads are ignored).
      // Floor division keeps the split right when the total is negative.
      const int64_t total = full - out_shape[i];
      const int64_t half = floor_div(total, 2);
      g.pad_begin[i] = ap == AutoPad::same_upper ? half : total - half;
      g.pad_end[i] = total - g.pad_begin[i];
      g.out[i] = out_shape[i];
    } else {
      if (ap == AutoPad::valid) g.pad_begin[i] = g.pad_end[i] = 0;
      g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
    }
  }
  require_positive_output(n, g);
  check_bias(n, g.M);
  return g;
}

WindowGeometry pool_geometry(const Node& n) {
  require_spatial_input(n, 3);
  const Shape& x = n.input(0).shape();
  const std::size_t ns = x.size() - 2;
  if (static_cast<int64_t>(ns) > kMaxSpatial) {
    throw n.error(n.op() + " over " + std::to_string(ns) + " spatial dims is not supported (1 to 3 are)");
  }
  WindowGeometry g;
  g.N = x[0];
  g.C = x[1];
  g.M = g.C;
  g.in.assign(x.begin() + 2, x.end());
  if (!n.has_attr("kernel_shape")) throw n.error("attribute 'kernel_shape' is missing (it is required)");
  g.kernel = spatial_attr(n, "kernel_shape", ns, 1);
  g.stride = spatial_attr(n, "strides", ns, 1);
  g.dilation = spatial_attr(n, "dilations", ns, 1);
  for (std::size_t i = 0; i < ns; ++i) {
    if (g.kernel[i] < 1 || g.stride[i] < 1 || g.dilation[i] < 1) {
      throw n.error("attributes kernel_shape, strides and dilations must be >= 1, got kernel_shape " +
                    n.attr("kernel_shape")->str());
    }
  }
  explicit_pads(n, g);
  const AutoPad ap = parse_auto_pad(n);
  const bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  g.out.resize(ns);
  for (std::size_t i = 0; i < ns; ++i) {
    if (ap == AutoPad::same_upper || ap == AutoPad::same_lower) {
      same_padding(ap, g, i);
      continue;
    }
    const int64_t ek = (g.kernel[i] - 1) * g.dilation[i] + 1;  // effective (dilated) window extent
    const int64_t s = g.stride[i];
    if (ap == AutoPad::valid) g.pad_begin[i] = g.pad_end[i] = 0;
    const int64_t span = g.in[i] + g.pad_begin[i] + g.pad_end[i] - ek;
    if (span < 0) {
      throw n.error("the pooling window (" + std::to_string(ek) + " along spatial dim " + std::to_string(i) +
                    ") is larger than the padded input (" + std::to_string(g.in[i] + g.pad_begin[i] + g.pad_end[i]) +
                    ")");
    }
    g.out[i] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // ceil_mode: the last window must start inside the input or the left
    // padding; one that would start in the right padding is dropped.
    if (ceil_mode && (g.out[i] - 1) * s >= g.in[i] + g.pad_begin[i]) --g.out[i];
  }
  return g;
}

}  // namespace modelc::ops

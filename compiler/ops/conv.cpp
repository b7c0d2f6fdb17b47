// compiler/ops/conv.cpp — Conv and ConvTranspose (1 to 3 spatial dims).
//
// Both share one geometry rule (per spatial dim: input size, kernel, stride,
// dilation, begin/end padding, output size) computed from the attributes and
// the input shapes; shape inference, FLOPs and the reference evaluation all
// read it, so they cannot disagree.
#include <algorithm>
#include <array>

#include "ops/common.h"

namespace modelc::ops {
namespace {

enum class AutoPad { notset, same_upper, same_lower, valid };

AutoPad parse_auto_pad(const Node& n) {
  const std::string s = n.attr_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::notset;
  if (s == "SAME_UPPER") return AutoPad::same_upper;
  if (s == "SAME_LOWER") return AutoPad::same_lower;
  if (s == "VALID") return AutoPad::valid;
  throw n.error("attribute 'auto_pad' is '" + s + "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

// Integer division rounding toward -inf / +inf (b > 0); pads can make the
// numerators negative.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

constexpr int64_t kMaxSpatial = 3;

void require_float_input(const Node& n, int i) {
  if (n.has_input(i) && n.input(i).has_type()) {
    require_dtype(n, i, {DType::float32, DType::float16, DType::bfloat16});
  }
}

// Attribute checks that need no input shape.
void check_conv_attrs(const Node& n) {
  parse_auto_pad(n);
  if (n.attr_int("group", 1) < 1) {
    throw n.error("attribute 'group' is " + std::to_string(n.attr_int("group", 1)) + ", expected 1 or more");
  }
  for (const char* name : {"strides", "dilations", "kernel_shape"}) {
    for (int64_t v : n.attr_ints(name)) {
      if (v < 1) throw n.error(std::string("attribute '") + name + "' has value " + std::to_string(v) + ", expected >= 1");
    }
  }
  for (const char* name : {"pads", "output_padding"}) {
    for (int64_t v : n.attr_ints(name)) {
      if (v < 0) throw n.error(std::string("attribute '") + name + "' has value " + std::to_string(v) + ", expected >= 0");
    }
  }
  require_float_input(n, 0);
  require_float_input(n, 1);
  require_float_input(n, 2);
  for (int i = 1; i <= 2; ++i) {
    if (n.has_input(0) && n.has_input(i) && n.input(0).has_type() && n.input(i).has_type() &&
        n.input(i).dtype() != n.input(0).dtype()) {
      throw n.error("input " + std::to_string(i) + " ('" + n.input(i).name() + "') is " +
                    dtype_name(n.input(i).dtype()) + ", input X is " + dtype_name(n.input(0).dtype()));
    }
  }
}

/// Per spatial dim geometry of a convolution (or its transpose).
struct ConvGeom {
  int64_t N = 0, C = 0, M = 0, group = 1;  // batch, input channels, output channels
  std::vector<int64_t> in, k, out, stride, dil, pad_begin, pad_end;
  int64_t spatial() const { return static_cast<int64_t>(in.size()); }
  int64_t kernel_size() const { return num_elements(k); }
};

// Checks X and W ranks, group, kernel_shape; fills N, C, group, in, k, stride, dil.
ConvGeom common_geometry(const Node& n, const Shape& x, const Shape& w) {
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
  ConvGeom g;
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
  g.k.assign(w.begin() + 2, w.end());
  if (n.has_attr("kernel_shape")) {
    const std::vector<int64_t> ks = n.attr_ints("kernel_shape");
    if (ks != g.k) {
      throw n.error("attribute 'kernel_shape' is " + n.attr("kernel_shape")->str() + ", W ('" + n.input(1).name() +
                    "') has shape " + shape_str(w));
    }
  }
  for (int64_t d : g.k) {
    if (d < 1) throw n.error("weight W ('" + n.input(1).name() + "') has an empty kernel: " + shape_str(w));
  }
  g.stride = spatial_attr(n, "strides", ns, 1);
  g.dil = spatial_attr(n, "dilations", ns, 1);
  for (std::size_t i = 0; i < ns; ++i) {
    if (g.stride[i] < 1) throw n.error("attribute 'strides' has value " + std::to_string(g.stride[i]) + ", expected >= 1");
    if (g.dil[i] < 1) throw n.error("attribute 'dilations' has value " + std::to_string(g.dil[i]) + ", expected >= 1");
  }
  return g;
}

// Explicit pads: absent means zeros; otherwise 2 * spatial values >= 0.
void explicit_pads(const Node& n, ConvGeom& g) {
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

void require_positive_output(const Node& n, const ConvGeom& g) {
  for (std::size_t i = 0; i < g.out.size(); ++i) {
    if (g.out[i] < 1) {
      throw n.error("output spatial dim " + std::to_string(i) + " would be " + std::to_string(g.out[i]) +
                    " (input " + std::to_string(g.in[i]) + ", kernel " + std::to_string(g.k[i]) + ", stride " +
                    std::to_string(g.stride[i]) + ", dilation " + std::to_string(g.dil[i]) + ", pads " +
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

ConvGeom conv_geometry(const Node& n) {
  const Shape& x = n.input(0).shape();
  const Shape& w = n.input(1).shape();
  ConvGeom g = common_geometry(n, x, w);
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
    const int64_t ek = (g.k[i] - 1) * g.dil[i] + 1;  // effective (dilated) kernel extent
    if (ap == AutoPad::same_upper || ap == AutoPad::same_lower) {
      g.out[i] = ceil_div(g.in[i], g.stride[i]);
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.stride[i] + ek - g.in[i]);
      g.pad_begin[i] = ap == AutoPad::same_upper ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else {
      if (ap == AutoPad::valid) g.pad_begin[i] = g.pad_end[i] = 0;
      const int64_t span = g.in[i] + g.pad_begin[i] + g.pad_end[i] - ek;
      g.out[i] = span < 0 ? 0 : span / g.stride[i] + 1;
    }
  }
  require_positive_output(n, g);
  check_bias(n, g.M);
  return g;
}

ConvGeom conv_transpose_geometry(const Node& n) {
  const Shape& x = n.input(0).shape();
  const Shape& w = n.input(1).shape();
  ConvGeom g = common_geometry(n, x, w);
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
    const int64_t full = g.stride[i] * (g.in[i] - 1) + out_pad[i] + (g.k[i] - 1) * g.dil[i] + 1;
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

Shape output_shape(const ConvGeom& g) {
  Shape s{g.N, g.M};
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

// The geometry padded to 3 spatial dims (leading dims of size 1), so one loop
// nest serves 1-D, 2-D and 3-D.
struct Geom3 {
  std::array<int64_t, 3> in{1, 1, 1}, k{1, 1, 1}, out{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, p{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};

Geom3 to_geom3(const ConvGeom& g) {
  Geom3 r;
  const std::size_t off = 3 - g.in.size();
  for (std::size_t i = 0; i < g.in.size(); ++i) {
    r.in[off + i] = g.in[i];
    r.k[off + i] = g.k[i];
    r.out[off + i] = g.out[i];
    r.s[off + i] = g.stride[i];
    r.d[off + i] = g.dil[i];
    r.p[off + i] = g.pad_begin[i];
  }
  return r;
}

std::vector<double> bias_of(const TensorRefs& in, int64_t M) {
  return in.size() > 2 && in[2] ? in[2]->to_f64() : std::vector<double>(static_cast<std::size_t>(M), 0.0);
}

// Y[n, m, o] = B[m] + sum over (c, kernel) of W[m, c, k] * X[n, g*Cg + c, o*s - p + k*d].
// Per output channel, the loops run over (c, kd, kh, kw) and then over output
// rows, with the innermost loop streaming along the output row: the input row
// is read with the stride, the output row contiguously.
Tensor eval_conv(const Node& n, const TensorRefs& in) {
  const ConvGeom g = conv_geometry(n);
  const Geom3 q = to_geom3(g);
  const std::vector<double> x = in[0]->to_f64();
  const std::vector<double> w = in[1]->to_f64();
  const std::vector<double> b = bias_of(in, g.M);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  std::vector<double> y(static_cast<std::size_t>(g.N * g.M * out_sz));
  // Valid output x range per kernel column: ix = ox*s - p + kx*d in [0, in).
  std::vector<int64_t> ox_lo(static_cast<std::size_t>(q.k[2])), ox_hi(static_cast<std::size_t>(q.k[2]));
  for (int64_t kx = 0; kx < q.k[2]; ++kx) {
    const int64_t shift = kx * q.d[2] - q.p[2];
    ox_lo[kx] = std::max<int64_t>(0, ceil_div(-shift, q.s[2]));
    ox_hi[kx] = std::min<int64_t>(q.out[2], floor_div(q.in[2] - 1 - shift, q.s[2]) + 1);
  }
  for (int64_t nb = 0; nb < g.N; ++nb) {
    for (int64_t m = 0; m < g.M; ++m) {
      const int64_t grp = m / Mg;
      double* yp = y.data() + (nb * g.M + m) * out_sz;
      std::fill(yp, yp + out_sz, b[m]);
      for (int64_t c = 0; c < Cg; ++c) {
        const double* xp = x.data() + (nb * g.C + grp * Cg + c) * in_sz;
        const double* wp = w.data() + (m * Cg + c) * k_sz;
        for (int64_t kz = 0; kz < q.k[0]; ++kz) {
          for (int64_t ky = 0; ky < q.k[1]; ++ky) {
            for (int64_t kx = 0; kx < q.k[2]; ++kx) {
              const double wv = wp[(kz * q.k[1] + ky) * q.k[2] + kx];
              const int64_t lo = ox_lo[kx], hi = ox_hi[kx];
              if (lo >= hi) continue;
              const int64_t shift_x = kx * q.d[2] - q.p[2];
              for (int64_t oz = 0; oz < q.out[0]; ++oz) {
                const int64_t iz = oz * q.s[0] - q.p[0] + kz * q.d[0];
                if (iz < 0 || iz >= q.in[0]) continue;
                for (int64_t oy = 0; oy < q.out[1]; ++oy) {
                  const int64_t iy = oy * q.s[1] - q.p[1] + ky * q.d[1];
                  if (iy < 0 || iy >= q.in[1]) continue;
                  // First valid element of each row; lo * s + shift_x >= 0 by construction.
                  const double* __restrict xr = xp + (iz * q.in[1] + iy) * q.in[2] + lo * q.s[2] + shift_x;
                  double* __restrict yr = yp + (oz * q.out[1] + oy) * q.out[2] + lo;
                  const int64_t len = hi - lo;
                  if (q.s[2] == 1) {
                    for (int64_t j = 0; j < len; ++j) yr[j] += wv * xr[j];
                  } else {
                    const int64_t sx = q.s[2];
                    for (int64_t j = 0; j < len; ++j) yr[j] += wv * xr[j * sx];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return Tensor::from_f64(in[0]->dtype(), output_shape(g), y);
}

// Y[n, g*Mg + m, i*s - p + k*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, k]: the
// scatter form; the innermost loop streams along an input row.
Tensor eval_conv_transpose(const Node& n, const TensorRefs& in) {
  const ConvGeom g = conv_transpose_geometry(n);
  const Geom3 q = to_geom3(g);
  const std::vector<double> x = in[0]->to_f64();
  const std::vector<double> w = in[1]->to_f64();
  const std::vector<double> b = bias_of(in, g.M);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  std::vector<double> y(static_cast<std::size_t>(g.N * g.M * out_sz));
  // Valid input x range per kernel column: ox = ix*s - p + kx*d in [0, out).
  std::vector<int64_t> ix_lo(static_cast<std::size_t>(q.k[2])), ix_hi(static_cast<std::size_t>(q.k[2]));
  for (int64_t kx = 0; kx < q.k[2]; ++kx) {
    const int64_t shift = kx * q.d[2] - q.p[2];
    ix_lo[kx] = std::max<int64_t>(0, ceil_div(-shift, q.s[2]));
    ix_hi[kx] = std::min<int64_t>(q.in[2], floor_div(q.out[2] - 1 - shift, q.s[2]) + 1);
  }
  for (int64_t nb = 0; nb < g.N; ++nb) {
    for (int64_t m = 0; m < g.M; ++m) {
      double* yp = y.data() + (nb * g.M + m) * out_sz;
      std::fill(yp, yp + out_sz, b[m]);
    }
    for (int64_t grp = 0; grp < g.group; ++grp) {
      for (int64_t c = 0; c < Cg; ++c) {
        const int64_t ci = grp * Cg + c;
        const double* xp = x.data() + (nb * g.C + ci) * in_sz;
        for (int64_t m = 0; m < Mg; ++m) {
          double* yp = y.data() + (nb * g.M + grp * Mg + m) * out_sz;
          const double* wp = w.data() + (ci * Mg + m) * k_sz;
          for (int64_t kz = 0; kz < q.k[0]; ++kz) {
            for (int64_t ky = 0; ky < q.k[1]; ++ky) {
              for (int64_t kx = 0; kx < q.k[2]; ++kx) {
                const double wv = wp[(kz * q.k[1] + ky) * q.k[2] + kx];
                const int64_t lo = ix_lo[kx], hi = ix_hi[kx];
                if (lo >= hi) continue;
                const int64_t shift_x = kx * q.d[2] - q.p[2];
                for (int64_t iz = 0; iz < q.in[0]; ++iz) {
                  const int64_t oz = iz * q.s[0] - q.p[0] + kz * q.d[0];
                  if (oz < 0 || oz >= q.out[0]) continue;
                  for (int64_t iy = 0; iy < q.in[1]; ++iy) {
                    const int64_t oy = iy * q.s[1] - q.p[1] + ky * q.d[1];
                    if (oy < 0 || oy >= q.out[1]) continue;
                    const double* __restrict xr = xp + (iz * q.in[1] + iy) * q.in[2] + lo;
                    double* __restrict yr = yp + (oz * q.out[1] + oy) * q.out[2] + lo * q.s[2] + shift_x;
                    const int64_t sx = q.s[2], len = hi - lo;
                    for (int64_t j = 0; j < len; ++j) yr[j * sx] += wv * xr[j];
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return Tensor::from_f64(in[0]->dtype(), output_shape(g), y);
}

int64_t bias_flops(const Node& n, const ConvGeom& g) {
  return n.has_input(2) ? g.N * g.M * num_elements(g.out) : 0;
}

}  // namespace

MODELC_REGISTER_OP(Conv)
    .since(1)
    .attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    .inputs(2, 3)
    .validate(check_conv_attrs)
    .infer([](Node& n) {
      const ConvGeom g = conv_geometry(n);
      n.output(0).set_type(n.input(0).dtype(), output_shape(g));
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_conv(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .layout(Layout::channels)
    .kernel("conv")
    .kernel("conv_depthwise")
    .family("conv")
    .flops([](const Node& n) {
      const ConvGeom g = conv_geometry(n);
      return 2 * g.N * g.M * num_elements(g.out) * (g.C / g.group) * g.kernel_size() + bias_flops(n, g);
    })
    .doc("N-d convolution (1 to 3 spatial dims) with groups, dilations, strides, pads and auto_pad");

MODELC_REGISTER_OP(ConvTranspose)
    .since(1)
    .attrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"})
    .inputs(2, 3)
    .validate(check_conv_attrs)
    .infer([](Node& n) {
      const ConvGeom g = conv_transpose_geometry(n);
      n.output(0).set_type(n.input(0).dtype(), output_shape(g));
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_conv_transpose(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .layout(Layout::channels)
    .kernel("conv_transpose")
    .family("conv")
    .flops([](const Node& n) {
      const ConvGeom g = conv_transpose_geometry(n);
      return 2 * g.N * g.C * num_elements(g.in) * (g.M / g.group) * g.kernel_size() + bias_flops(n, g);
    })
    .doc("transposed (fractionally strided) convolution, 1 to 3 spatial dims, with output_padding/output_shape");

}  // namespace modelc::ops

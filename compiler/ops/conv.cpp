// compiler/ops/conv.cpp — Conv and ConvTranspose (1 to 3 spatial dims).
//
// Both read one geometry rule (ops/window.h: per spatial dim input size, kernel,
// stride, dilation, begin/end padding, output size) computed from the attributes
// and the input shapes; shape inference, FLOPs, the reference evaluation, the
// schedule and the code generator all read it, so they cannot disagree.
#include <algorithm>
#include <array>

#include "ops/common.h"
#include "ops/window.h"

namespace modelc::ops {
namespace {

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

std::vector<double> bias_of(const TensorRefs& in, int64_t M) {
  return in.size() > 2 && in[2] ? in[2]->to_f64() : std::vector<double>(static_cast<std::size_t>(M), 0.0);
}

// Y[n, m, o] = B[m] + sum over (c, kernel) of W[m, c, k] * X[n, g*Cg + c, o*s - p + k*d].
// Per output channel, the loops run over (c, kd, kh, kw) and then over output
// rows, with the innermost loop streaming along the output row: the input row
// is read with the stride, the output row contiguously.
Tensor eval_conv(const Node& n, const TensorRefs& in) {
  const WindowGeometry g = conv_geometry(n);
  const Window3 q = g.padded3();
  const std::vector<double> x = in[0]->to_f64();
  const std::vector<double> w = in[1]->to_f64();
  const std::vector<double> b = bias_of(in, g.M);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  std::vector<double> y(static_cast<std::size_t>(g.N * g.M * out_sz));
  // Valid output x range per kernel column: ix = ox*s - p + kx*d in [0, in).
  std::vector<int64_t> ox_lo(static_cast<std::size_t>(q.kernel[2])), ox_hi(static_cast<std::size_t>(q.kernel[2]));
  for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
    const int64_t shift = kx * q.dilation[2] - q.pad[2];
    ox_lo[kx] = std::max<int64_t>(0, ceil_div(-shift, q.stride[2]));
    ox_hi[kx] = std::min<int64_t>(q.out[2], floor_div(q.in[2] - 1 - shift, q.stride[2]) + 1);
  }
  for (int64_t nb = 0; nb < g.N; ++nb) {
    for (int64_t m = 0; m < g.M; ++m) {
      const int64_t grp = m / Mg;
      double* yp = y.data() + (nb * g.M + m) * out_sz;
      std::fill(yp, yp + out_sz, b[m]);
      for (int64_t c = 0; c < Cg; ++c) {
        const double* xp = x.data() + (nb * g.C + grp * Cg + c) * in_sz;
        const double* wp = w.data() + (m * Cg + c) * k_sz;
        for (int64_t kz = 0; kz < q.kernel[0]; ++kz) {
          for (int64_t ky = 0; ky < q.kernel[1]; ++ky) {
            for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
              const double wv = wp[(kz * q.kernel[1] + ky) * q.kernel[2] + kx];
              const int64_t lo = ox_lo[kx], hi = ox_hi[kx];
              if (lo >= hi) continue;
              const int64_t shift_x = kx * q.dilation[2] - q.pad[2];
              for (int64_t oz = 0; oz < q.out[0]; ++oz) {
                const int64_t iz = oz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
                if (iz < 0 || iz >= q.in[0]) continue;
                for (int64_t oy = 0; oy < q.out[1]; ++oy) {
                  const int64_t iy = oy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
                  if (iy < 0 || iy >= q.in[1]) continue;
                  // First valid element of each row; lo * s + shift_x >= 0 by construction.
                  const double* __restrict xr = xp + (iz * q.in[1] + iy) * q.in[2] + lo * q.stride[2] + shift_x;
                  double* __restrict yr = yp + (oz * q.out[1] + oy) * q.out[2] + lo;
                  const int64_t len = hi - lo;
                  if (q.stride[2] == 1) {
                    for (int64_t j = 0; j < len; ++j) yr[j] += wv * xr[j];
                  } else {
                    const int64_t sx = q.stride[2];
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
  return Tensor::from_f64(in[0]->dtype(), g.output_shape(), y);
}

// Y[n, g*Mg + m, i*s - p + k*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, k]: the
// scatter form; the innermost loop streams along an input row.
Tensor eval_conv_transpose(const Node& n, const TensorRefs& in) {
  const WindowGeometry g = conv_transpose_geometry(n);
  const Window3 q = g.padded3();
  const std::vector<double> x = in[0]->to_f64();
  const std::vector<double> w = in[1]->to_f64();
  const std::vector<double> b = bias_of(in, g.M);
  const int64_t Cg = g.C / g.group, Mg = g.M / g.group;
  const int64_t in_sz = q.in_size(), out_sz = q.out_size(), k_sz = q.k_size();
  std::vector<double> y(static_cast<std::size_t>(g.N * g.M * out_sz));
  // Valid input x range per kernel column: ox = ix*s - p + kx*d in [0, out).
  std::vector<int64_t> ix_lo(static_cast<std::size_t>(q.kernel[2])), ix_hi(static_cast<std::size_t>(q.kernel[2]));
  for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
    const int64_t shift = kx * q.dilation[2] - q.pad[2];
    ix_lo[kx] = std::max<int64_t>(0, ceil_div(-shift, q.stride[2]));
    ix_hi[kx] = std::min<int64_t>(q.in[2], floor_div(q.out[2] - 1 - shift, q.stride[2]) + 1);
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
          for (int64_t kz = 0; kz < q.kernel[0]; ++kz) {
            for (int64_t ky = 0; ky < q.kernel[1]; ++ky) {
              for (int64_t kx = 0; kx < q.kernel[2]; ++kx) {
                const double wv = wp[(kz * q.kernel[1] + ky) * q.kernel[2] + kx];
                const int64_t lo = ix_lo[kx], hi = ix_hi[kx];
                if (lo >= hi) continue;
                const int64_t shift_x = kx * q.dilation[2] - q.pad[2];
                for (int64_t iz = 0; iz < q.in[0]; ++iz) {
                  const int64_t oz = iz * q.stride[0] - q.pad[0] + kz * q.dilation[0];
                  if (oz < 0 || oz >= q.out[0]) continue;
                  for (int64_t iy = 0; iy < q.in[1]; ++iy) {
                    const int64_t oy = iy * q.stride[1] - q.pad[1] + ky * q.dilation[1];
                    if (oy < 0 || oy >= q.out[1]) continue;
                    const double* __restrict xr = xp + (iz * q.in[1] + iy) * q.in[2] + lo;
                    double* __restrict yr = yp + (oz * q.out[1] + oy) * q.out[2] + lo * q.stride[2] + shift_x;
                    const int64_t sx = q.stride[2], len = hi - lo;
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
  return Tensor::from_f64(in[0]->dtype(), g.output_shape(), y);
}

int64_t bias_flops(const Node& n, const WindowGeometry& g) {
  return n.has_input(2) ? g.N * g.M * num_elements(g.out) : 0;
}

}  // namespace

MODELC_REGISTER_OP(Conv)
    .since(1)
    .attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    .inputs(2, 3)
    .validate(check_conv_attrs)
    .infer([](Node& n) {
      const WindowGeometry g = conv_geometry(n);
      n.output(0).set_type(n.input(0).dtype(), g.output_shape());
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_conv(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .layout(Layout::channels, LayoutRoles{/*weight*/ 1, /*residual*/ -1})
    .kernel("conv_depthwise")
    .kernel("conv")
    .family("conv")
    .flops([](const Node& n) {
      const WindowGeometry g = conv_geometry(n);
      return 2 * g.N * g.M * num_elements(g.out) * (g.C / g.group) * g.kernel_size() + bias_flops(n, g);
    })
    .doc("N-d convolution (1 to 3 spatial dims) with groups, dilations, strides, pads and auto_pad");

MODELC_REGISTER_OP(ConvTranspose)
    .since(1)
    .attrs({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"})
    .inputs(2, 3)
    .validate(check_conv_attrs)
    .infer([](Node& n) {
      const WindowGeometry g = conv_transpose_geometry(n);
      n.output(0).set_type(n.input(0).dtype(), g.output_shape());
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_conv_transpose(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .layout(Layout::channels)
    .kernel("conv_transpose")
    .family("conv")
    .flops([](const Node& n) {
      const WindowGeometry g = conv_transpose_geometry(n);
      return 2 * g.N * g.C * num_elements(g.in) * (g.M / g.group) * g.kernel_size() + bias_flops(n, g);
    })
    .doc("transposed (fractionally strided) convolution, 1 to 3 spatial dims, with output_padding/output_shape");

}  // namespace modelc::ops

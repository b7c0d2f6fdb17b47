// compiler/ops/conv.cpp — Conv and ConvTranspose (1 to 3 spatial dims).
//
// Both read one geometry rule (ops/window.h: per spatial dim input size, kernel,
// stride, dilation, begin/end padding, output size) computed from the attributes
// and the input shapes; shape inference, FLOPs, the reference evaluation, the
// schedule and the code generator all read it, so they cannot disagree.
#include <algorithm>
#include <array>
#include <type_traits>

#include "ops/common.h"
#include "ops/window.h"
#include "reference/kernels.h"

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

/// The reference's operands of a convolution: X as float32 data or doubles, W and the bias as
/// the compute type S, Y written as float32 when it is float32 (no double copy of X or Y).
template <class S>
std::vector<S> values_as(const Tensor& t) {
  if constexpr (std::is_same_v<S, float>) {
    if (t.dtype() == DType::float32) return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
    const std::vector<double> d = t.to_f64();
    return std::vector<float>(d.begin(), d.end());
  } else {
    return t.to_f64();
  }
}

// Conv and ConvTranspose through reference/kernels.h: im2col (or direct, for few output channels
// per group) over BLAS, threads over channels and positions. The float32 path
// (reference::Accumulation::f32: the precision simulations) takes float32 X and Y; everything else
// accumulates in double.
template <bool Transpose>
Tensor eval_window_product(const WindowGeometry& g, const TensorRefs& in) {
  const Window3 q = g.padded3();
  const Tensor& X = *in[0];
  const bool has_bias = in.size() > 2 && in[2];
  auto run = [&](auto s_tag, const auto* x, auto* y) {
    using S = decltype(s_tag);
    const std::vector<S> w = values_as<S>(*in[1]);
    const std::vector<S> b = has_bias ? values_as<S>(*in[2]) : std::vector<S>();
    if constexpr (Transpose) {
      reference::conv_transpose<S>(q, x, w.data(), has_bias ? b.data() : nullptr, y);
    } else {
      reference::conv_forward<S>(q, x, S(0), w.data(), has_bias ? b.data() : nullptr, y);
    }
  };
  if (X.dtype() == DType::float32) {
    Tensor y(DType::float32, g.output_shape());
    if (reference::accumulation() == reference::Accumulation::f32) {
      run(float{}, X.data<float>(), y.mutable_data<float>());
    } else {
      run(double{}, X.data<float>(), y.mutable_data<float>());
    }
    return y;
  }
  const std::vector<double> x = X.to_f64();
  std::vector<double> y(static_cast<std::size_t>(num_elements(g.output_shape())));
  run(double{}, x.data(), y.data());
  return Tensor::from_f64(X.dtype(), g.output_shape(), y);
}

// Y[n, m, o] = B[m] + sum over (c, kernel) of W[m, c, k] * X[n, g*Cg + c, o*s - p + k*d].
Tensor eval_conv(const Node& n, const TensorRefs& in) { return eval_window_product<false>(conv_geometry(n), in); }

// Y[n, g*Mg + m, i*s - p + k*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, k]: the scatter form.
Tensor eval_conv_transpose(const Node& n, const TensorRefs& in) {
  return eval_window_product<true>(conv_transpose_geometry(n), in);
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

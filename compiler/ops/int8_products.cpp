// compiler/ops/int8_products.cpp — modelc's INT8 products QConv and QMatMul (domain "modelc"):
// INT8 (or UINT8) activations times INT8 weights, INT32 accumulation, and the requantizing epilogue
// of ops/quantize.h, which the reference computes in float32 in the kernels' order so that an
// emulated program matches it to the bit (activations aside: apply_activation is double).
//
// Made by passes (never read from a model file): passes/quantize_explicit.cpp from a Q/DQ model's
// patterns and from QLinearConv / ConvInteger / QLinearMatMul / MatMulInteger with constant weights,
// passes/precision.cpp (--int8) from calibrated Conv / Gemm / MatMul; fuse_epilogue then adds the
// activation and residual (they are their own fused forms), fold_quantize the quantized output.
#include <algorithm>
#include <cmath>

#include "ops/common.h"
#include "ops/quantize.h"
#include "reference/kernels.h"

namespace modelc::ops {

namespace {

bool is_qconv(const Node& n) { return n.op() == "QConv"; }

DType attr_type(const Node& n) {
  const int64_t code = n.attr_int("to", static_cast<int64_t>(DType::float32));
  const DType t = dtype_from_onnx(static_cast<int>(code));
  if (t != DType::int8 && t != DType::uint8 && t != DType::int32 && t != DType::float32 && t != DType::float16) {
    throw n.error("attribute 'to' is " + std::to_string(code) +
                  ", expected int8, uint8 (quantized), int32 (the accumulators), float32 or float16");
  }
  return t;
}

/// The number of output channels (QConv: W's dim 0; QMatMul: B's dim 0).
int64_t out_channels(const Node& n) { return n.input(1).rank() > 0 ? n.input(1).shape()[0] : 1; }

/// Output shape: conv_geometry's, or A's with the last dim N.
Shape out_shape(const Node& n) {
  if (is_qconv(n)) return conv_geometry(n).output_shape();
  Shape s = n.input(0).shape();
  s.back() = n.input(1).shape()[0];
  return s;
}

void validate_int8_product(const Node& n) {
  const Int8Epilogue e = int8_epilogue(n);
  if (!n.has_input(0) || !n.has_input(1)) return;
  const Value& x = n.input(0);
  const Value& w = n.input(1);
  if (!is_int8_type(x.dtype())) {
    throw n.error("input 0 ('" + x.name() + "') is " + dtype_name(x.dtype()) + ", expected int8 or uint8");
  }
  if (w.dtype() != DType::int8) throw n.error("input 1 ('" + w.name() + "') is " + dtype_name(w.dtype()) + ", expected int8");
  if (!w.is_constant()) throw n.error("input 1 ('" + w.name() + "', the weights) must be constant");
  if (is_qconv(n)) {
    if (n.attr_int("group", 1) != 1) throw n.error("attribute 'group' is " + std::to_string(n.attr_int("group", 1)) + ": QConv runs one group");
    conv_geometry(n);
  } else {
    if (x.rank() < 2 || w.rank() != 2 || x.shape().back() != w.shape()[1]) {
      throw n.error("QMatMul multiplies A [..., M, K] by B stored [N, K]: A is " + shape_str(x.shape()) + ", B " +
                    shape_str(w.shape()));
    }
  }
  const int64_t M = out_channels(n);
  if (n.has_input(kQBiasInput)) {
    const Value& b = n.input(kQBiasInput);
    if (b.dtype() != DType::float32 || b.shape() != Shape{M}) {
      throw n.error("input 2 (the bias, '" + b.name() + "') is " + b.type_str() + ", expected float32[" + std::to_string(M) + "]");
    }
  }
  if (n.has_input(kQWeightScaleInput)) {
    const Value& s = n.input(kQWeightScaleInput);
    if (s.dtype() != DType::float32 || (s.numel() != 1 && s.shape() != Shape{M}) || !s.is_constant()) {
      throw n.error("input 4 (w_scale, '" + s.name() + "') is " + s.type_str() + ", expected a constant float32[1] or [" +
                    std::to_string(M) + "]");
    }
  } else if (!e.raw()) {
    throw n.error("input 4 (w_scale) is absent: only the raw accumulators (to = int32) need no scale");
  }
  if (n.has_input(kQZeroPointInput)) {
    const Value& z = n.input(kQZeroPointInput);
    if (z.dtype() != x.dtype() || z.numel() != 1) {
      throw n.error("input 5 (x_zero_point, '" + z.name() + "') is " + z.type_str() + ", expected one " +
                    dtype_name(x.dtype()) + " value");
    }
  }
  if (n.has_input(kQWeightSumInput)) {
    const Value& s = n.input(kQWeightSumInput);
    if (s.dtype() != DType::int32 || s.shape() != Shape{M} || !s.is_constant()) {
      throw n.error("input 6 (w_sum, '" + s.name() + "') is " + s.type_str() + ", expected a constant int32[" + std::to_string(M) + "]");
    }
  }
  if ((e.runtime_zero_point || e.x_zero_point != 0) && !n.has_input(kQWeightSumInput)) {
    throw n.error("a zero point of X needs input 6 (w_sum) for its correction");
  }
  if (n.has_input(kQResidualInput)) {
    const Value& r = n.input(kQResidualInput);
    if (!x.shape().empty() && r.shape() != out_shape(n)) {
      throw n.error("input 3 (the residual, '" + r.name() + "') has shape " + shape_str(r.shape()) + ", the result " +
                    shape_str(out_shape(n)));
    }
    if (!is_int8_type(r.dtype()) && r.dtype() != DType::float32 && r.dtype() != DType::float16) {
      throw n.error("input 3 (the residual, '" + r.name() + "') is " + dtype_name(r.dtype()) +
                    ", expected int8 / uint8 (with residual_scale) or float");
    }
    if (is_float(r.dtype()) && is_float(e.out) && r.dtype() != e.out) {
      throw n.error("input 3 (the residual, '" + r.name() + "') is " + dtype_name(r.dtype()) + ", the result " +
                    dtype_name(e.out) + ": a float residual has the result's type");
    }
  }
  if (e.raw() && (n.has_input(kQBiasInput) || n.has_input(kQResidualInput) || e.act.kind != Activation::none)) {
    throw n.error("the raw accumulators (to = int32) take no bias, residual or activation");
  }
}

void infer_int8_product(Node& n) { n.output(0).set_type(attr_type(n), out_shape(n)); }

/// Y = epilogue(acc) for every output element; `channel(i)`: element i's output channel.
template <class Channel>
Tensor int8_output(const Node& n, const TensorRefs& in, const std::vector<int64_t>& acc, const Shape& shape,
                   Channel channel) {
  const Int8Epilogue e = int8_epilogue(n);
  const int64_t M = out_channels(n);
  if (e.raw()) return Tensor::from_i64(DType::int32, shape, acc);
  const std::vector<float> alpha = int8_alpha(n, *in[kQWeightScaleInput], M);
  std::vector<double> bias(static_cast<std::size_t>(M), 0.0);
  if (in.size() > kQBiasInput && in[kQBiasInput]) bias = in[kQBiasInput]->to_f64();
  std::vector<double> r;
  const bool int_r = in.size() > kQResidualInput && in[kQResidualInput] && is_int8_type(in[kQResidualInput]->dtype());
  if (e.residual != 0) r = in.at(kQResidualInput)->to_f64();
  std::vector<double> y(acc.size());
  std::vector<int64_t> q(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const std::size_t m = static_cast<std::size_t>(channel(static_cast<int64_t>(i)));
    float v = static_cast<float>(acc[i]) * alpha[m];
    v += static_cast<float>(bias[m]);
    float rv = 0.0f;
    if (e.residual != 0) {
      rv = int_r ? static_cast<float>(static_cast<int64_t>(r[i]) - e.residual_zero_point) * static_cast<float>(e.residual_scale)
                 : static_cast<float>(r[i]);
    }
    if (e.residual == 1) v += rv;
    if (e.act.kind != Activation::none) v = static_cast<float>(apply_activation(e.act, static_cast<double>(v)));
    if (e.residual == 2) v += rv;
    if (e.quantized()) {
      q[i] = quantize_value(v, static_cast<float>(e.y_scale), e.y_zero_point, e.out);
    } else if (e.out == DType::float16 && std::isfinite(v)) {
      y[i] = std::min(65504.0, std::max(-65504.0, static_cast<double>(v)));  // the kernels' cast with clamp
    } else {
      y[i] = v;
    }
  }
  return e.quantized() ? Tensor::from_i64(e.out, shape, q) : Tensor::from_f64(e.out, shape, y);
}

int64_t zero_point_of(const Int8Epilogue& e, const TensorRefs& in) {
  return in.size() > kQZeroPointInput && in[kQZeroPointInput] ? in[kQZeroPointInput]->i64_at(0) : e.x_zero_point;
}

/// The kernels subtract zx * w_sum[m]: a given w_sum must be W's.
void check_w_sum(const Node& n, const TensorRefs& in, const std::vector<int64_t>& w, int64_t M) {
  if (in.size() <= kQWeightSumInput || !in[kQWeightSumInput]) return;
  const std::vector<int64_t> s = in[kQWeightSumInput]->to_i64();
  const int64_t K = static_cast<int64_t>(w.size()) / M;
  for (int64_t m = 0; m < M; ++m) {
    int64_t sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += w[static_cast<std::size_t>(m * K + k)];
    if (sum != s[static_cast<std::size_t>(m)]) {
      throw n.error("input 6 (w_sum) is " + std::to_string(s[static_cast<std::size_t>(m)]) + " for channel " +
                    std::to_string(m) + ", the weights sum to " + std::to_string(sum));
    }
  }
}

std::vector<Tensor> eval_qconv(const Node& n, const TensorRefs& in) {
  const Int8Epilogue e = int8_epilogue(n);
  const WindowGeometry g = conv_geometry(n);
  const std::vector<int64_t> w = in[1]->to_i64();
  check_w_sum(n, in, w, g.M);
  std::vector<int64_t> acc(static_cast<std::size_t>(num_elements(g.output_shape())));
  conv_integer(g, *in[0], zero_point_of(e, in), w, {0}, acc.data());
  const int64_t out_sz = num_elements(g.out), M = g.M;
  return {int8_output(n, in, acc, g.output_shape(), [&](int64_t i) { return (i / out_sz) % M; })};
}

std::vector<Tensor> eval_qmatmul(const Node& n, const TensorRefs& in) {
  const Int8Epilogue e = int8_epilogue(n);
  const Tensor& A = *in[0];
  const Tensor& B = *in[1];
  const int64_t N = B.shape()[0], K = B.shape()[1];
  const std::vector<int64_t> w = B.to_i64();
  check_w_sum(n, in, w, N);
  // B stored [N, K]: the product with B^T, every leading dim of A a row.
  const std::vector<int64_t> a = A.to_i64();
  const int64_t rows = A.numel() / std::max<int64_t>(1, K);
  const int64_t az = zero_point_of(e, in);
  // In double through reference/kernels.h: 8-bit operands, so every sum is exact.
  std::vector<double> ad(a.size()), wd(w.begin(), w.end());
  for (std::size_t i = 0; i < a.size(); ++i) ad[i] = static_cast<double>(a[i] - az);
  std::vector<double> y(static_cast<std::size_t>(rows * N));
  const int64_t first = 0;
  reference::matmul<double>(1, &first, &first, rows, K, N, ad.data(), false, wd.data(), true, y.data());
  const std::vector<int64_t> acc(y.begin(), y.end());
  return {int8_output(n, in, acc, out_shape(n), [&](int64_t i) { return i % N; })};
}

std::vector<std::string> product_attrs(std::vector<std::string> own) {
  for (const char* a : {"to", "x_scale", "x_zero_point", "y_scale", "y_zero_point", "residual_scale",
                        "residual_zero_point", "activation", "activation_alpha", "activation_beta", "activation_min",
                        "activation_max", "residual_position"}) {
    own.push_back(a);
  }
  return own;
}

}  // namespace

Int8Epilogue int8_epilogue(const Node& n) {
  Int8Epilogue e;
  e.out = attr_type(n);
  e.x_scale = n.attr_float("x_scale", 1.0);
  if (!e.raw() && !n.has_attr("x_scale")) throw n.error("attribute 'x_scale' is required unless to = int32");
  if (!(e.x_scale > 0) || !std::isfinite(e.x_scale)) throw n.error("attribute 'x_scale' must be positive and finite");
  e.x_zero_point = n.attr_int("x_zero_point", 0);
  e.runtime_zero_point = n.has_input(kQZeroPointInput);
  if (e.quantized()) {
    if (!n.has_attr("y_scale")) throw n.error("attribute 'y_scale' is required for a quantized output (to = " +
                                              std::string(dtype_name(e.out)) + ")");
    e.y_scale = n.attr_float("y_scale", 1.0);
    if (!(e.y_scale > 0) || !std::isfinite(e.y_scale)) throw n.error("attribute 'y_scale' must be positive and finite");
    e.y_zero_point = n.attr_int("y_zero_point", 0);
    if (e.y_zero_point < quant_min(e.out) || e.y_zero_point > quant_max(e.out)) {
      throw n.error("attribute 'y_zero_point' is " + std::to_string(e.y_zero_point) + ", outside " + dtype_name(e.out));
    }
  } else if (n.has_attr("y_scale") || n.has_attr("y_zero_point")) {
    throw n.error("attribute 'y_scale' applies to a quantized output only (to = int8 or uint8)");
  }
  const int64_t xlo = n.has_input(0) && is_int8_type(n.input(0).dtype()) ? quant_min(n.input(0).dtype()) : -128;
  const int64_t xhi = n.has_input(0) && is_int8_type(n.input(0).dtype()) ? quant_max(n.input(0).dtype()) : 255;
  if (e.x_zero_point < xlo || e.x_zero_point > xhi) {
    throw n.error("attribute 'x_zero_point' is " + std::to_string(e.x_zero_point) + ", outside the type of X");
  }
  e.act = activation_of_fused(n);
  const bool has_r = n.has_input(kQResidualInput);
  if (n.has_attr("residual_position")) {
    const std::string p = n.attr_string("residual_position", "");
    if (p != "before_activation" && p != "after_activation") {
      throw n.error("attribute 'residual_position' is '" + p + "', expected 'before_activation' or 'after_activation'");
    }
    if (!has_r) throw n.error("attribute 'residual_position' is set but input 3 (the residual) is absent");
    e.residual = p == "before_activation" ? 1 : 2;
  } else if (has_r) {
    throw n.error("input 3 (the residual) is given without attribute 'residual_position'");
  }
  if (has_r && is_int8_type(n.input(kQResidualInput).dtype())) {
    if (!n.has_attr("residual_scale")) throw n.error("an " + std::string(dtype_name(n.input(kQResidualInput).dtype())) +
                                                     " residual needs attribute 'residual_scale'");
    e.residual_scale = n.attr_float("residual_scale", 1.0);
    e.residual_zero_point = n.attr_int("residual_zero_point", 0);
  } else if (n.has_attr("residual_scale") || n.has_attr("residual_zero_point")) {
    throw n.error("attribute 'residual_scale' applies to an int8 / uint8 residual only");
  }
  return e;
}

std::vector<float> int8_alpha(const Node& n, const Tensor& w_scale, int64_t M) {
  const Int8Epilogue e = int8_epilogue(n);
  const std::vector<double> s = w_scale.to_f64();
  std::vector<float> a(static_cast<std::size_t>(M));
  // float32 x float32, as the kernels multiply p.x_scale by w_scale[m].
  for (int64_t m = 0; m < M; ++m) {
    a[static_cast<std::size_t>(m)] = static_cast<float>(e.x_scale) * static_cast<float>(s.size() == 1 ? s[0] : s[static_cast<std::size_t>(m)]);
  }
  return a;
}

WindowGeometry qconv_geometry(const Node& n) { return conv_geometry(n); }

MODELC_REGISTER_OP(QConv)
    .domain(kModelcDomain)
    .since(1)
    .attrs(product_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}))
    .inputs(2, 7)
    .validate(validate_int8_product)
    .infer(infer_int8_product)
    .eval(eval_qconv)
    .precision(Precision::fp16)
    .const_inputs({kQBiasInput, kQWeightScaleInput, kQWeightSumInput})
    .fusion(Fusion::producer)
    .layout(Layout::channels, LayoutRoles{/*weight*/ 1, /*residual*/ kQResidualInput})
    .kernel("conv_int8")
    .family("conv")
    .flops([](const Node& n) {
      const WindowGeometry g = conv_geometry(n);
      return 2 * g.N * g.M * num_elements(g.out) * g.C * g.kernel_size();
    })
    .doc("INT8 convolution (one group): INT32 accumulation, requantizing epilogue (scales, bias, activation, "
         "residual, saturation); made by the INT8 passes");

MODELC_REGISTER_OP(QMatMul)
    .domain(kModelcDomain)
    .since(1)
    .attrs(product_attrs({}))
    .inputs(2, 7)
    .validate(validate_int8_product)
    .infer(infer_int8_product)
    .eval(eval_qmatmul)
    .precision(Precision::fp16)
    .const_inputs({kQBiasInput, kQWeightScaleInput, kQWeightSumInput})
    .fusion(Fusion::producer)
    .kernel("gemm_int8")
    .family("gemm")
    .flops([](const Node& n) {
      const int64_t N = n.input(1).shape()[0], K = n.input(1).shape()[1];
      return 2 * (n.input(0).numel() / std::max<int64_t>(1, K)) * N * K;
    })
    .doc("INT8 matrix product A x B^T (B constant, stored [N, K]): INT32 accumulation, requantizing epilogue; made "
         "by the INT8 passes");

}  // namespace modelc::ops

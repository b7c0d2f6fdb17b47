// compiler/ops/quantize.cpp — the ONNX quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger (see quantize.h for
// the rounding rules).
//
// Their kernels: Q / DQ / DynamicQuantizeLinear run on the quantize family (templates/quantize.cuh,
// elementwise); the integer products on the qlinear family (direct, one thread per output, every
// operand read at run time). passes/quantize_explicit.cpp turns the products whose weights are
// constant (and the DequantizeLinear -> Conv / Gemm / MatMul patterns of Q/DQ models) into modelc's
// INT8 tensor-core products (QConv, QMatMul).
#include "ops/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "ops/common.h"
#include "reference/kernels.h"

namespace modelc::ops {

int64_t quant_min(DType t) {
  switch (t) {
    case DType::int8: return -128;
    case DType::uint8: return 0;
    case DType::int32: return std::numeric_limits<int32_t>::min();
    default: return 0;
  }
}

int64_t quant_max(DType t) {
  switch (t) {
    case DType::int8: return 127;
    case DType::uint8: return 255;
    case DType::int32: return std::numeric_limits<int32_t>::max();
    default: return 0;
  }
}

int64_t saturate_round(double v, DType t) {
  if (std::isnan(v)) return 0;
  const double lo = static_cast<double>(quant_min(t)), hi = static_cast<double>(quant_max(t));
  const double r = std::nearbyint(v);  // the default rounding mode: to nearest, ties to even
  return static_cast<int64_t>(std::min(hi, std::max(lo, r)));
}

int64_t quantize_value(float x, float scale, int64_t zero_point, DType t) {
  const float q = x / scale;  // float32, as numpy and the kernels divide
  if (std::isnan(q)) return saturate_round(static_cast<double>(zero_point), t);
  return saturate_round(static_cast<double>(std::nearbyint(q)) + static_cast<double>(zero_point), t);
}

QuantAxis quant_axis(const Node& n, const Shape& x, const Shape& scale) {
  QuantAxis a;
  const int64_t count = num_elements(scale);
  if (scale.size() > 1) {
    throw n.error("the scale ('" + n.input(1).name() + "') has shape " + shape_str(scale) +
                  ", expected a scalar or a 1-D tensor (one scale per index of 'axis')");
  }
  if (count == 1) return a;  // a scalar, or one value: per tensor
  if (n.opset() < 13) {
    throw n.error("the scale has " + std::to_string(count) + " values: per-axis quantization needs opset 13",
                  "use a scalar scale, or opset 13 and 'axis'");
  }
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) throw n.error("per-axis quantization of a scalar");
  a.axis = normalize_axis(n, n.attr_int("axis", 1), rank);
  a.count = x[static_cast<std::size_t>(a.axis)];
  if (count != a.count) {
    throw n.error("the scale ('" + n.input(1).name() + "') has " + std::to_string(count) + " values, dim " +
                  std::to_string(a.axis) + " of the input has " + std::to_string(a.count));
  }
  return a;
}

std::optional<QuantScale> constant_quant_scale(const Node& n) {
  if (!n.has_input(1) || !n.input(1).is_constant() || n.input(1).numel() != 1) return std::nullopt;
  QuantScale q;
  q.scale = n.input(1).constant().f64_at(0);
  if (n.has_input(2)) {
    if (!n.input(2).is_constant() || n.input(2).numel() != 1) return std::nullopt;
    q.zero_point = n.input(2).constant().i64_at(0);
    q.type = n.input(2).dtype();
  } else {
    q.type = n.op() == "DequantizeLinear" && n.has_input(0) ? n.input(0).dtype() : DType::uint8;
  }
  return q;
}

namespace {

// ---- QuantizeLinear / DequantizeLinear --------------------------------------------------------

/// The per-element index into a per-axis parameter (0 per tensor).
std::vector<int64_t> param_index(const Shape& x, const QuantAxis& a) {
  const int64_t count = num_elements(x);
  std::vector<int64_t> r(static_cast<std::size_t>(count), 0);
  if (a.axis < 0) return r;
  int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(a.axis) + 1; d < x.size(); ++d) inner *= x[d];
  for (int64_t i = 0; i < count; ++i) r[static_cast<std::size_t>(i)] = (i / inner) % a.count;
  return r;
}

void check_zero_point(const Node& n, const Shape& scale) {
  if (!n.has_input(2) || !n.input(2).has_type()) return;
  if (n.input(2).shape() != scale && !(num_elements(n.input(2).shape()) == 1 && num_elements(scale) == 1)) {
    throw n.error("the zero point ('" + n.input(2).name() + "') has shape " + shape_str(n.input(2).shape()) +
                  ", the scale " + shape_str(scale) + ": they must match");
  }
}

void validate_quantize(const Node& n) {
  if (!n.has_input(0) || !n.has_input(1) || !n.input(0).has_type()) return;
  // float16 input: the internal form the INT8 precision pass makes (opset 19 allows it too).
  require_dtype(n, 0, {DType::float32, DType::float16, DType::int32});
  require_dtype(n, 1, {DType::float32});
  if (n.has_input(2) && n.input(2).has_type()) require_dtype(n, 2, {DType::int8, DType::uint8});
  quant_axis(n, n.input(0).shape(), n.input(1).shape());
  check_zero_point(n, n.input(1).shape());
}

void infer_quantize(Node& n) {
  n.output(0).set_type(n.has_input(2) ? n.input(2).dtype() : DType::uint8, n.input(0).shape());
}

std::vector<Tensor> eval_quantize(const Node& n, const TensorRefs& in) {
  const Tensor& X = *in[0];
  const QuantAxis a = quant_axis(n, X.shape(), in[1]->shape());
  const DType t = n.output(0).dtype();
  const std::vector<double> x = X.to_f64(), s = in[1]->to_f64();
  const std::vector<int64_t> z = in.size() > 2 && in[2] ? in[2]->to_i64() : std::vector<int64_t>(s.size(), 0);
  const std::vector<int64_t> p = param_index(X.shape(), a);
  std::vector<int64_t> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t j = static_cast<std::size_t>(p[i]);
    y[i] = quantize_value(static_cast<float>(x[i]), static_cast<float>(s[j]), z[j], t);
  }
  return {Tensor::from_i64(t, X.shape(), y)};
}

void validate_dequantize(const Node& n) {
  if (!n.has_input(0) || !n.has_input(1) || !n.input(0).has_type()) return;
  require_dtype(n, 0, {DType::int8, DType::uint8, DType::int32});
  require_dtype(n, 1, {DType::float32});
  if (n.has_input(2) && n.input(2).has_type()) {
    if (n.input(2).dtype() != n.input(0).dtype()) {
      throw n.error("the zero point ('" + n.input(2).name() + "') is " + dtype_name(n.input(2).dtype()) + ", x is " +
                    dtype_name(n.input(0).dtype()) + ": they must be the same type");
    }
  }
  quant_axis(n, n.input(0).shape(), n.input(1).shape());
  check_zero_point(n, n.input(1).shape());
}

std::vector<Tensor> eval_dequantize(const Node& n, const TensorRefs& in) {
  const Tensor& X = *in[0];
  const QuantAxis a = quant_axis(n, X.shape(), in[1]->shape());
  const std::vector<int64_t> x = X.to_i64();
  const std::vector<double> s = in[1]->to_f64();
  const std::vector<int64_t> z = in.size() > 2 && in[2] ? in[2]->to_i64() : std::vector<int64_t>(s.size(), 0);
  if (X.dtype() == DType::int32) {
    for (int64_t zp : z) {
      if (zp != 0) throw n.error("an int32 input takes no zero point other than 0");
    }
  }
  const std::vector<int64_t> p = param_index(X.shape(), a);
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t j = static_cast<std::size_t>(p[i]);
    // (x - zp) is exact in float32 for 8-bit types; one float32 product (as the kernel).
    y[i] = static_cast<float>(x[i] - z[j]) * static_cast<float>(s[j]);
  }
  return {Tensor::from_f32(X.shape(), y)};
}

// ---- DynamicQuantizeLinear --------------------------------------------------------------------

std::vector<Tensor> eval_dynamic_quantize(const Node&, const TensorRefs& in) {
  const Tensor& X = *in[0];
  const std::vector<double> x = X.to_f64();
  // min / max including 0 (so that 0 is exact), in float32 as the kernel.
  float lo = 0.0f, hi = 0.0f;
  for (double v : x) {
    const float f = static_cast<float>(v);
    if (f < lo) lo = f;
    if (f > hi) hi = f;
  }
  const float scale = (hi - lo) / 255.0f;
  int64_t zp = 0;
  if (scale != 0.0f) zp = saturate_round(static_cast<double>(std::nearbyint((0.0f - lo) / scale)), DType::uint8);
  std::vector<int64_t> y(x.size(), zp);
  if (scale != 0.0f) {
    for (std::size_t i = 0; i < x.size(); ++i) y[i] = quantize_value(static_cast<float>(x[i]), scale, zp, DType::uint8);
  }
  return {Tensor::from_i64(DType::uint8, X.shape(), y), Tensor::from_f32({}, {scale}),
          Tensor::from_i64(DType::uint8, {}, {zp})};
}

// ---- the integer products ---------------------------------------------------------------------

}  // namespace

namespace {
/// A stand-alone Conv-like copy of an integer convolution (its op, opset and convolution
/// attributes; X and W typed like inputs x_in and w_in): conv_geometry reads it.
struct ConvCopy {
  std::vector<std::unique_ptr<Value>> values;
  std::unique_ptr<Node> node;
};

ConvCopy conv_copy(const Node& n, int x_in, int w_in) {
  ConvCopy c;
  c.node = std::make_unique<Node>(n.op(), n.name(), n.opset());
  for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}) {
    if (const Attribute* at = n.attr(a)) c.node->set_attr(a, *at);
  }
  for (int i : {x_in, w_in}) {
    auto v = std::make_unique<Value>(n.input(i).name());
    v->set_type(n.input(i).dtype(), n.input(i).shape());
    c.node->add_input(v.get());
    c.values.push_back(std::move(v));
  }
  return c;
}
}  // namespace

WindowGeometry integer_conv_geometry(const Node& n, int x_in, int w_in) {
  ConvCopy c = conv_copy(n, x_in, w_in);
  return conv_geometry(*c.node);
}

template <class Acc>
void conv_integer(const WindowGeometry& g, const Tensor& x, int64_t xz, const std::vector<int64_t>& w,
                  const std::vector<int64_t>& wz, Acc* acc) {
  // The weights minus their zero points as the [M, Cg * k] matrix of the float64 path: every
  // operand an integer below 2^9 in magnitude, every sum exact in double.
  const Window3 q = g.padded3();
  const int64_t per = q.Cg() * q.k_size();
  std::vector<double> wd(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    const int64_t m = per > 0 ? static_cast<int64_t>(i) / per : 0;
    wd[i] = static_cast<double>(w[i] - (wz.size() == 1 ? wz[0] : wz[static_cast<std::size_t>(m)]));
  }
  if (x.dtype() == DType::uint8) {
    reference::conv_forward<double>(q, x.data<uint8_t>(), static_cast<double>(xz), wd.data(), nullptr, acc);
  } else if (x.dtype() == DType::int8) {
    reference::conv_forward<double>(q, x.data<int8_t>(), static_cast<double>(xz), wd.data(), nullptr, acc);
  } else {
    throw Error("internal: an integer convolution's X is " + std::string(dtype_name(x.dtype())) + ", not int8 or uint8");
  }
}

template void conv_integer<int64_t>(const WindowGeometry&, const Tensor&, int64_t, const std::vector<int64_t>&,
                                    const std::vector<int64_t>&, int64_t*);
template void conv_integer<int32_t>(const WindowGeometry&, const Tensor&, int64_t, const std::vector<int64_t>&,
                                    const std::vector<int64_t>&, int32_t*);

IntMatMulDims int_matmul_dims(const Node& n, const Shape& a, const Shape& b, const std::string& an,
                              const std::string& bn) {
  if (a.empty() || b.empty()) throw n.error("input " + (a.empty() ? an : bn) + " is a scalar, " + n.op() + " needs rank 1 or more");
  IntMatMulDims d;
  Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
  Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
  d.M = a2[a2.size() - 2];
  d.K = a2.back();
  d.N = b2.back();
  if (b2[b2.size() - 2] != d.K) {
    throw n.error("inputs " + an + " " + shape_str(a) + " and " + bn + " " + shape_str(b) + " do not multiply: K " +
                  std::to_string(d.K) + " against " + std::to_string(b2[b2.size() - 2]));
  }
  d.batch_a.assign(a2.begin(), a2.end() - 2);
  d.batch_b.assign(b2.begin(), b2.end() - 2);
  d.batch = broadcast_shapes(n, d.batch_a, d.batch_b);
  d.out = d.batch;
  if (a.size() > 1) d.out.push_back(d.M);
  if (b.size() > 1) d.out.push_back(d.N);
  return d;
}

std::vector<int64_t> matmul_integer(const IntMatMulDims& d, const std::vector<int64_t>& a, int64_t az,
                                    const std::vector<int64_t>& b, const std::vector<int64_t>& bz) {
  const std::vector<int64_t> ia = broadcast_index(d.batch_a, d.batch), ib = broadcast_index(d.batch_b, d.batch);
  const int64_t batches = num_elements(d.batch);
  // The operands minus their zero points in double: 8-bit integers, so every sum is exact.
  std::vector<double> ad(a.size()), bd(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ad[i] = static_cast<double>(a[i] - az);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const std::size_t j = d.N > 0 ? i % static_cast<std::size_t>(d.N) : 0;
    bd[i] = static_cast<double>(b[i] - (bz.size() == 1 ? bz[0] : bz[j]));
  }
  std::vector<double> y(static_cast<std::size_t>(batches * d.M * d.N));
  reference::matmul<double>(batches, ia.data(), ib.data(), d.M, d.K, d.N, ad.data(), false, bd.data(), false, y.data());
  return std::vector<int64_t>(y.begin(), y.end());
}

namespace {

/// A zero point input: absent (0), one value, or (`per` > 0) one value per output channel.
void check_int_zero_point(const Node& n, int i, DType like, int64_t per, const char* what) {
  if (!n.has_input(i) || !n.input(i).has_type()) return;
  const Value& z = n.input(i);
  if (z.dtype() != like) {
    throw n.error(std::string(what) + " ('" + z.name() + "') is " + dtype_name(z.dtype()) + ", its operand is " +
                  dtype_name(like));
  }
  const int64_t count = z.numel();
  if (count != 1 && (per <= 0 || count != per || z.rank() != 1)) {
    throw n.error(std::string(what) + " ('" + z.name() + "') has shape " + shape_str(z.shape()) +
                  ", expected one value" + (per > 0 ? " or one per output channel (" + std::to_string(per) + ")" : ""));
  }
}

void check_scale(const Node& n, int i, int64_t per, const char* what) {
  if (!n.has_input(i) || !n.input(i).has_type()) return;
  require_dtype(n, i, {DType::float32});
  const int64_t count = n.input(i).numel();
  if (count != 1 && (per <= 0 || count != per || n.input(i).rank() != 1)) {
    throw n.error(std::string(what) + " ('" + n.input(i).name() + "') has shape " + shape_str(n.input(i).shape()) +
                  ", expected one value" + (per > 0 ? " or one per output channel (" + std::to_string(per) + ")" : ""));
  }
}

int64_t scalar_i(const TensorRefs& in, std::size_t i) { return in.size() > i && in[i] ? in[i]->i64_at(0) : 0; }
std::vector<int64_t> ints_or_zero(const TensorRefs& in, std::size_t i) {
  return in.size() > i && in[i] ? in[i]->to_i64() : std::vector<int64_t>{0};
}

// ConvInteger(x, w, x_zero_point, w_zero_point) -> int32.
void validate_conv_integer(const Node& n) {
  if (!n.has_input(0) || !n.has_input(1) || !n.input(0).has_type() || !n.input(1).has_type()) return;
  require_dtype(n, 0, {DType::int8, DType::uint8});
  require_dtype(n, 1, {DType::int8, DType::uint8});
  const WindowGeometry g = integer_conv_geometry(n, 0, 1);
  check_int_zero_point(n, 2, n.input(0).dtype(), 0, "x_zero_point");
  check_int_zero_point(n, 3, n.input(1).dtype(), g.M, "w_zero_point");
}

std::vector<Tensor> eval_conv_integer(const Node& n, const TensorRefs& in) {
  const WindowGeometry g = integer_conv_geometry(n, 0, 1);
  Tensor y(DType::int32, g.output_shape());
  conv_integer(g, *in[0], scalar_i(in, 2), in[1]->to_i64(), ints_or_zero(in, 3), y.mutable_data<int32_t>());
  return {y};
}

// QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B).
void validate_qlinear_conv(const Node& n) {
  for (int i : {0, 3}) {
    if (!n.has_input(i) || !n.input(i).has_type()) return;
  }
  require_dtype(n, 0, {DType::int8, DType::uint8});
  require_dtype(n, 3, {DType::int8, DType::uint8});
  const WindowGeometry g = integer_conv_geometry(n, 0, 3);
  check_scale(n, 1, 0, "x_scale");
  check_int_zero_point(n, 2, n.input(0).dtype(), 0, "x_zero_point");
  check_scale(n, 4, g.M, "w_scale");
  check_int_zero_point(n, 5, n.input(3).dtype(), g.M, "w_zero_point");
  check_scale(n, 6, 0, "y_scale");
  if (n.has_input(7) && n.input(7).has_type()) require_dtype(n, 7, {DType::int8, DType::uint8});
  check_int_zero_point(n, 7, n.has_input(7) ? n.input(7).dtype() : DType::uint8, 0, "y_zero_point");
  if (n.has_input(8) && n.input(8).has_type()) {
    require_dtype(n, 8, {DType::int32});
    if (n.input(8).shape() != Shape{g.M}) {
      throw n.error("bias B ('" + n.input(8).name() + "') has shape " + shape_str(n.input(8).shape()) + ", expected [" +
                    std::to_string(g.M) + "]");
    }
  }
}

/// y = saturate(round(acc * (a_scale * b_scale[j] / y_scale)) + y_zp) (in double: ONNX's formula).
std::vector<int64_t> requantize(const std::vector<int64_t>& acc, int64_t inner, int64_t channels, bool channel_outer,
                                double a_scale, const std::vector<double>& b_scale, double y_scale, int64_t y_zp,
                                DType t) {
  std::vector<int64_t> y(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) {
    const int64_t ch = channel_outer ? (static_cast<int64_t>(i) / inner) % channels : static_cast<int64_t>(i) % channels;
    const double bs = b_scale.size() == 1 ? b_scale[0] : b_scale[static_cast<std::size_t>(ch)];
    y[i] = saturate_round(std::nearbyint(static_cast<double>(acc[i]) * (a_scale * bs / y_scale)) + static_cast<double>(y_zp), t);
  }
  return y;
}

std::vector<Tensor> eval_qlinear_conv(const Node& n, const TensorRefs& in) {
  const WindowGeometry g = integer_conv_geometry(n, 0, 3);
  std::vector<int64_t> acc(static_cast<std::size_t>(num_elements(g.output_shape())));
  conv_integer(g, *in[0], scalar_i(in, 2), in[3]->to_i64(), ints_or_zero(in, 5), acc.data());
  const int64_t out_sz = g.padded3().out_size();
  if (in.size() > 8 && in[8]) {
    const std::vector<int64_t> b = in[8]->to_i64();
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] += b[static_cast<std::size_t>((static_cast<int64_t>(i) / out_sz) % g.M)];
  }
  const DType t = n.output(0).dtype();
  const std::vector<int64_t> y = requantize(acc, out_sz, g.M, true, in[1]->f64_at(0), in[4]->to_f64(), in[6]->f64_at(0),
                                            scalar_i(in, 7), t);
  return {Tensor::from_i64(t, g.output_shape(), y)};
}

// MatMulInteger(A, B, a_zero_point, b_zero_point) -> int32.
void validate_matmul_integer(const Node& n) {
  if (!n.has_input(0) || !n.has_input(1) || !n.input(0).has_type() || !n.input(1).has_type()) return;
  require_dtype(n, 0, {DType::int8, DType::uint8});
  require_dtype(n, 1, {DType::int8, DType::uint8});
  const IntMatMulDims d = int_matmul_dims(n, n.input(0).shape(), n.input(1).shape(), "A", "B");
  check_int_zero_point(n, 2, n.input(0).dtype(), 0, "a_zero_point");
  check_int_zero_point(n, 3, n.input(1).dtype(), d.N, "b_zero_point");
}

std::vector<Tensor> eval_matmul_integer(const Node& n, const TensorRefs& in) {
  const IntMatMulDims d = int_matmul_dims(n, in[0]->shape(), in[1]->shape(), "A", "B");
  const std::vector<int64_t> y = matmul_integer(d, in[0]->to_i64(), scalar_i(in, 2), in[1]->to_i64(), ints_or_zero(in, 3));
  return {Tensor::from_i64(DType::int32, d.out, y)};
}

// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
void validate_qlinear_matmul(const Node& n) {
  for (int i : {0, 3}) {
    if (!n.has_input(i) || !n.input(i).has_type()) return;
  }
  require_dtype(n, 0, {DType::int8, DType::uint8});
  require_dtype(n, 3, {DType::int8, DType::uint8});
  const IntMatMulDims d = int_matmul_dims(n, n.input(0).shape(), n.input(3).shape(), "a", "b");
  check_scale(n, 1, 0, "a_scale");
  check_int_zero_point(n, 2, n.input(0).dtype(), 0, "a_zero_point");
  check_scale(n, 4, d.N, "b_scale");
  check_int_zero_point(n, 5, n.input(3).dtype(), d.N, "b_zero_point");
  check_scale(n, 6, 0, "y_scale");
  require_dtype(n, 7, {DType::int8, DType::uint8});
  check_int_zero_point(n, 7, n.input(7).dtype(), 0, "y_zero_point");
}

std::vector<Tensor> eval_qlinear_matmul(const Node& n, const TensorRefs& in) {
  const IntMatMulDims d = int_matmul_dims(n, in[0]->shape(), in[3]->shape(), "a", "b");
  const std::vector<int64_t> acc = matmul_integer(d, in[0]->to_i64(), scalar_i(in, 2), in[3]->to_i64(), ints_or_zero(in, 5));
  const DType t = n.output(0).dtype();
  const std::vector<int64_t> y =
      requantize(acc, 1, d.N, false, in[1]->f64_at(0), in[4]->to_f64(), in[6]->f64_at(0), scalar_i(in, 7), t);
  return {Tensor::from_i64(t, d.out, y)};
}

}  // namespace

// The scales and zero points (inputs 1, 2) are parameters: --fp16 never converts them.
MODELC_REGISTER_OP(QuantizeLinear)
    .since(10)
    .inputs(2, 3)
    .validate(validate_quantize)
    .infer(infer_quantize)
    .eval(eval_quantize)
    .precision(Precision::fp16)
    .const_inputs({1, 2})
    .layout(Layout::agnostic)
    .kernel("quantize")
    .family("quantize")
    .flops(flops_per_output(2))
    .doc("y = saturate(round(x / y_scale) + y_zero_point), per tensor (uint8 / int8)");

MODELC_REGISTER_OP(QuantizeLinear)
    .since(13)
    .attrs({"axis"})
    .inputs(2, 3)
    .validate(validate_quantize)
    .infer(infer_quantize)
    .eval(eval_quantize)
    .precision(Precision::fp16)
    .const_inputs({1, 2})
    .layout(Layout::agnostic)
    .kernel("quantize")
    .family("quantize")
    .flops(flops_per_output(2))
    .doc("y = saturate(round(x / y_scale) + y_zero_point), per tensor or per axis (uint8 / int8)");

MODELC_REGISTER_OP(DequantizeLinear)
    .since(10)
    .inputs(2, 3)
    .validate(validate_dequantize)
    .infer([](Node& n) { n.output(0).set_type(DType::float32, n.input(0).shape()); })
    .eval(eval_dequantize)
    .layout(Layout::agnostic)
    .kernel("quantize")
    .family("quantize")
    .flops(flops_per_output(2))
    .doc("y = (x - x_zero_point) * x_scale, per tensor (int8 / uint8 / int32 -> float32)");

MODELC_REGISTER_OP(DequantizeLinear)
    .since(13)
    .attrs({"axis"})
    .inputs(2, 3)
    .validate(validate_dequantize)
    .infer([](Node& n) { n.output(0).set_type(DType::float32, n.input(0).shape()); })
    .eval(eval_dequantize)
    .layout(Layout::agnostic)
    .kernel("quantize")
    .family("quantize")
    .flops(flops_per_output(2))
    .doc("y = (x - x_zero_point) * x_scale, per tensor or per axis (int8 / uint8 / int32 -> float32)");

MODELC_REGISTER_OP(DynamicQuantizeLinear)
    .since(11)
    .inputs(1, 1)
    .outputs(3, 3)
    .validate([](const Node& n) {
      if (n.has_input(0) && n.input(0).has_type()) require_dtype(n, 0, {DType::float32});
    })
    .infer([](Node& n) {
      n.output(0).set_type(DType::uint8, n.input(0).shape());
      if (n.has_output(1)) n.output(1).set_type(DType::float32, {});
      if (n.has_output(2)) n.output(2).set_type(DType::uint8, {});
    })
    .eval(eval_dynamic_quantize)
    .kernel("quantize")
    .family("quantize")
    .flops(flops_per_output(4))
    .doc("uint8 quantization with the scale and zero point of the data's range (which includes 0)");

MODELC_REGISTER_OP(ConvInteger)
    .since(10)
    .attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    .inputs(2, 4)
    .validate(validate_conv_integer)
    .infer([](Node& n) { n.output(0).set_type(DType::int32, integer_conv_geometry(n, 0, 1).output_shape()); })
    .eval(eval_conv_integer)
    .kernel("qlinear")
    .family("conv")
    .flops([](const Node& n) {
      const WindowGeometry g = integer_conv_geometry(n, 0, 1);
      return 2 * g.N * g.M * num_elements(g.out) * (g.C / g.group) * g.kernel_size();
    })
    .doc("integer convolution with zero points, int32 accumulators");

MODELC_REGISTER_OP(QLinearConv)
    .since(10)
    .attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    .inputs(8, 9)
    .validate(validate_qlinear_conv)
    .infer([](Node& n) {
      n.output(0).set_type(n.input(7).dtype(), integer_conv_geometry(n, 0, 3).output_shape());
    })
    .eval(eval_qlinear_conv)
    .kernel("qlinear")
    .family("conv")
    .flops([](const Node& n) {
      const WindowGeometry g = integer_conv_geometry(n, 0, 3);
      return 2 * g.N * g.M * num_elements(g.out) * (g.C / g.group) * g.kernel_size();
    })
    .doc("quantized convolution: y = saturate(round(conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale / y_scale) + y_zp)");

MODELC_REGISTER_OP(MatMulInteger)
    .since(10)
    .inputs(2, 4)
    .validate(validate_matmul_integer)
    .infer([](Node& n) {
      n.output(0).set_type(DType::int32, int_matmul_dims(n, n.input(0).shape(), n.input(1).shape(), "A", "B").out);
    })
    .eval(eval_matmul_integer)
    .kernel("qlinear")
    .family("gemm")
    .flops([](const Node& n) {
      const IntMatMulDims d = int_matmul_dims(n, n.input(0).shape(), n.input(1).shape(), "A", "B");
      return 2 * d.M * d.N * d.K * num_elements(d.batch);
    })
    .doc("numpy matmul of integers with zero points, int32 accumulators");

MODELC_REGISTER_OP(QLinearMatMul)
    .since(10)
    .inputs(8, 8)
    .validate(validate_qlinear_matmul)
    .infer([](Node& n) {
      n.output(0).set_type(n.input(7).dtype(), int_matmul_dims(n, n.input(0).shape(), n.input(3).shape(), "a", "b").out);
    })
    .eval(eval_qlinear_matmul)
    .kernel("qlinear")
    .family("gemm")
    .flops([](const Node& n) {
      const IntMatMulDims d = int_matmul_dims(n, n.input(0).shape(), n.input(3).shape(), "a", "b");
      return 2 * d.M * d.N * d.K * num_elements(d.batch);
    })
    .doc("quantized numpy matmul: y = saturate(round(matmul(a - a_zp, b - b_zp) * a_scale * b_scale / y_scale) + y_zp)");

}  // namespace modelc::ops

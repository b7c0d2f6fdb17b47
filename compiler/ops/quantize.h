// compiler/ops/quantize.h — the meaning of quantization, written once: the ONNX ops
// (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, QLinearConv, QLinearMatMul,
// ConvInteger, MatMulInteger; ops/quantize.cpp) and modelc's INT8 products (QConv, QMatMul, domain
// "modelc"; ops/int8_products.cpp), read by the reference, the passes that make INT8 programs
// (passes/quantize_*.cpp, passes/precision.cpp), the schedule and the printers.
//
// Rounding: to nearest, ties to even (ONNX's "round"), then saturation to the type's range.
// QuantizeLinear and DynamicQuantizeLinear divide in float32 (as ONNX's numpy reference does, and
// as the kernels do), so the reference and the generated code agree bit for bit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/fused.h"
#include "ops/window.h"

namespace modelc::ops {

/// Smallest and largest value of an integer quantized type (int8, uint8, int32).
int64_t quant_min(DType t);
int64_t quant_max(DType t);
/// True for the 8-bit types a tensor core multiplies (int8, uint8).
inline bool is_int8_type(DType t) { return t == DType::int8 || t == DType::uint8; }

/// \brief round-half-even(v) saturated to t's range (an integer quantized type). NaN gives 0.
int64_t saturate_round(double v, DType t);
/// \brief QuantizeLinear of one value: saturate(round(x / scale) + zero_point), the division in
/// float32.
int64_t quantize_value(float x, float scale, int64_t zero_point, DType t);

/// \brief The quantization parameters a QuantizeLinear / DequantizeLinear node reads: per tensor
/// (one scale) or per axis (one scale per index of `axis`), from its inputs 1 (scale) and 2 (zero
/// point, optional). `type`: the quantized type (QuantizeLinear's output; DequantizeLinear's input).
struct QuantAxis {
  int64_t axis = -1;  ///< -1: per tensor
  int64_t count = 1;  ///< scales (1 per tensor)
};
/// The form a Q / DQ node's scale takes for input x of rank `rank`: per tensor when the scale is a
/// scalar or has one element, per axis along 'axis' (opset 13; default 1) when it is 1-D. Error
/// naming the node when its length does not match x's dim.
QuantAxis quant_axis(const Node& n, const Shape& x, const Shape& scale);

/// \brief Per-tensor quantization: a real value is scale * (q - zero_point).
struct QuantScale {
  double scale = 1.0;
  int64_t zero_point = 0;
  DType type = DType::int8;
};

/// \brief The constant per-tensor parameters of a QuantizeLinear / DequantizeLinear node (scale and
/// zero point constant, one element each); nullopt otherwise.
std::optional<QuantScale> constant_quant_scale(const Node& n);

// ---- integer products (the reference's loops) ---------------------------------------------------

/// The convolution geometry of an integer convolution whose X is input x_in and W input w_in
/// (ConvInteger 0, 1; QLinearConv 0, 3): conv_geometry on a copy with the node's attributes.
WindowGeometry integer_conv_geometry(const Node& n, int x_in, int w_in);
/// acc[n, m, o] = sum over (c, k) of (X - xz) * (W - wz[m]) (wz: one value or one per output
/// channel), zero in the padding, for X int8 or uint8; written to `acc` (N x M x out elements) as
/// int64, or as int32 wrapping like ONNX's accumulators. Exact: reference/kernels.h's float64 path.
template <class Acc>
void conv_integer(const WindowGeometry& g, const Tensor& x, int64_t xz, const std::vector<int64_t>& w,
                  const std::vector<int64_t>& wz, Acc* acc);
/// numpy matmul dims of two operands (1-D promoted, batch dims broadcast).
struct IntMatMulDims {
  int64_t M = 1, K = 1, N = 1;
  Shape batch_a, batch_b, batch, out;
};
IntMatMulDims int_matmul_dims(const Node& n, const Shape& a, const Shape& b, const std::string& an,
                              const std::string& bn);
/// acc[t, m, j] = sum over k of (A - az) * (B - bz[j]) in int64 (B [.., K, N]; bz one value or one
/// per column), for 8-bit A and B (exact through reference/kernels.h's float64 path).
std::vector<int64_t> matmul_integer(const IntMatMulDims& d, const std::vector<int64_t>& a, int64_t az,
                                    const std::vector<int64_t>& b, const std::vector<int64_t>& bz);

// ---- modelc's INT8 products (QConv, QMatMul) ---------------------------------------------------
//
// QConv: Y = epilogue(sum over k of (X - x_zero_point) * W) with X int8 / uint8 [N, C, spatial...]
// (channels-last in the kernels), W int8 [M, C, k...] constant, groups 1 (ops::conv_geometry's
// attributes). QMatMul: Y[..., m, n] = epilogue(sum over k of (A[..., m, k] - a zero point) *
// B[n, k]), B int8 [N, K] constant (stored transposed: rows of K, as tensor cores read it).
//
// Inputs: 0 X / A, 1 W / B, 2 bias (float32 [M] or [N], optional), 3 residual R (optional),
//         4 w_scale (float32, one value or one per output channel; required unless the output is
//         the raw accumulators), 5 x_zero_point (int8 / uint8 scalar, optional: read at run time,
//         overrides the attribute), 6 w_sum (int32 [M], optional: sum over k of W[m, k], which the
//         kernel's zero-point correction subtracts; must be present when a zero point may be
//         non-zero; the reference recomputes it and refuses one that differs).
// Attributes: 'to' (the output type: int8 / uint8 = quantized with y_scale, y_zero_point; int32 =
//         the raw accumulators; float32 / float16 = real values; default float32), x_scale,
//         x_zero_point (default 0), y_scale, y_zero_point (default 0), residual_scale,
//         residual_zero_point (an int8 / uint8 residual), the epilogue attributes of ops/fused.h
//         (activation*, residual_position), and QConv's convolution attributes.
// The epilogue, in float32 and in this order (the kernels' order; the reference computes the same):
//   v = float(acc - zx * w_sum[m]) * float(x_scale * w_scale[m]);  v += bias[m];
//   r = R, or float(R - residual_zero_point) * residual_scale;
//   v = act(v [+ r if before]) [+ r if after];
//   Y = v (rounded to float16 with clamp for a float16 output), or
//       saturate(round(v / y_scale) + y_zero_point) for a quantized output.

constexpr int kQBiasInput = 2;
constexpr int kQResidualInput = 3;
constexpr int kQWeightScaleInput = 4;
constexpr int kQZeroPointInput = 5;
constexpr int kQWeightSumInput = 6;

/// \brief Everything the epilogue of a QConv / QMatMul node needs besides its operands.
struct Int8Epilogue {
  DType out = DType::float32;          ///< 'to'
  bool raw() const { return out == DType::int32; }
  bool quantized() const { return is_int8_type(out); }
  double x_scale = 1.0;
  int64_t x_zero_point = 0;
  bool runtime_zero_point = false;     ///< input 5 given
  double y_scale = 1.0;
  int64_t y_zero_point = 0;
  double residual_scale = 1.0;         ///< an int8 / uint8 residual
  int64_t residual_zero_point = 0;
  EpilogueActivation act;
  int residual = 0;                    ///< 0 none, 1 before the activation, 2 after
};
/// Reads and checks a QConv / QMatMul node's epilogue; Error naming the node and attribute.
Int8Epilogue int8_epilogue(const Node& n);
/// The per-output-channel alpha = float(x_scale * w_scale[m]) of the epilogue (M values).
std::vector<float> int8_alpha(const Node& n, const Tensor& w_scale, int64_t M);

/// \brief The geometry of a QConv node (its convolution attributes, X, W), as conv_geometry.
WindowGeometry qconv_geometry(const Node& n);

}  // namespace modelc::ops

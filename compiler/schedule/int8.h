// compiler/schedule/int8.h — the schedule's view of the INT8 kernels: modelc.QConv (conv_int8
// family) and modelc.QMatMul (gemm_int8) on integer tensor cores (templates/tensor_core_int8.cuh),
// the ONNX integer products on the direct SIMT kernels (qlinear), and QuantizeLinear /
// DequantizeLinear / DynamicQuantizeLinear (quantize; templates/quantize.cuh): their shapes and
// their tactic rules (schedule/families.cpp lists them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/quantize.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::linear {

/// \brief A QMatMul kernel as tc8::Gemm sees it: Y[m, n] = sum over k of A[m, k] B[n, k], every
/// leading dim of A a row; A's and Y's row strides (their views are dense: K and N).
struct Int8Gemm {
  int64_t M = 1, N = 1, K = 1;
  int64_t a_row = 0, y_row = 0;
};
/// The product of a gemm_int8 kernel; an internal Error naming the kernel when A or Y is not dense.
Int8Gemm int8_gemm(const Kernel& k);

/// conv_int8: the INT8 implicit GEMM on tensor cores (channels-last X at a pitch of 16 or compact K,
/// W OHWI int8); the tile, stages and split-K by the cost model at the INT8 rate.
void conv_int8_tactic(Kernel& k, const std::vector<Target>& targets);
/// gemm_int8: the INT8 GEMM on tensor cores, likewise.
void gemm_int8_tactic(Kernel& k, const std::vector<Target>& targets);
/// \brief qlinear's plan: an integer convolution's geometry (ConvInteger, QLinearConv:
/// ops::integer_conv_geometry, padded to 3 spatial dims), else the integer product's dims
/// (MatMulInteger, QLinearMatMul: ops::int_matmul_dims of the node's A and B).
struct QLinearPlan {
  std::optional<ops::Window3> conv;
  ops::IntMatMulDims matmul;
};
QLinearPlan qlinear_plan(const Kernel& k);
/// qlinear: one thread per output (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul whose
/// weights are not constant or that the INT8 kernels do not take), engine SIMT with the reason.
void qlinear_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::linear

namespace modelc {

/// quantize: a grid-stride loop (QuantizeLinear, DequantizeLinear); DynamicQuantizeLinear: a
/// one-block range reduction, then the grid-stride quantization.
void quantize_tactic(Kernel& k, const std::vector<Target>& targets);
/// quantize's plan: QuantizeLinear's / DequantizeLinear's axis of the scale and zero point
/// (ops::quant_axis, from the node's shapes); per tensor (the default) for DynamicQuantizeLinear.
ops::QuantAxis quantize_plan(const Kernel& k);

}  // namespace modelc

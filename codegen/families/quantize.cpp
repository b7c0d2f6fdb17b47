// codegen/families/quantize.cpp — the quantize family (QuantizeLinear, DequantizeLinear:
// mc::ew::Elementwise with mc::ew::Quantize / Dequantize, the scale and zero point as operands
// broadcast per tensor or along the axis; DynamicQuantizeLinear: mc::q::Range, then
// mc::q::DynamicQuantize) and the qlinear family (ConvInteger, QLinearConv, MatMulInteger,
// QLinearMatMul on mc::q::DirectConv / DirectMatMul), templates/quantize.cuh. The schedule decided
// everything (schedule/int8.h); the ops' meaning is ops/quantize.h.
#include <fmt/format.h>

#include "codegen/families/elementwise_util.h"
#include "codegen/families/linear.h"
#include "ops/quantize.h"
#include "schedule/int8.h"
#include "schedule/linear.h"
#include "support/error.h"

namespace modelc::codegen {

namespace {

/// The strides of a Q / DQ parameter (scale, zero point) over the output shape: all 0 per tensor,
/// the parameter's own stride on the axis per axis.
Strides param_strides(const TensorView& p, const Shape& out, const ops::QuantAxis& a) {
  Strides s(out.size(), 0);
  if (a.axis >= 0 && !p.strides.empty()) s[static_cast<std::size_t>(a.axis)] = p.strides.back();
  return s;
}

KernelLaunches emit_quantize(const Kernel& k, const EmitContext& ctx) {
  const std::string& op_type = k.op.type;
  if (k.outputs.empty() || k.inputs.empty()) throw kernel_error(k, "quantize kernel without input or output");
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to compute");
  Shape shape = y.shape;
  if (op_type == "DynamicQuantizeLinear") {
    if (k.workspace.dtype == DType::undefined) throw kernel_error(k, "DynamicQuantizeLinear without its workspace");
    Strides xs = x.strides, ys = y.strides;
    collapse(shape, {&xs, &ys});
    TensorView scale = k.workspace, zp = k.workspace;
    scale.dtype = DType::float32;
    scale.shape = {1};
    zp.dtype = DType::uint8;
    zp.shape = {1};
    zp.offset += 4;
    const std::string tx = elem_type(x.dtype);
    Launch range;
    range.comment = "DynamicQuantizeLinear '" + k.op.name + "': the range of x " + view_str(x) + " (with 0), its scale and zero point";
    range.type = fmt::format("mc::q::Range<{}, {},\n      {}>", tx, dims(shape), dims(xs));
    range.params = {{"x", ctx.ptr(x, true)}, {"scale", ctx.ptr(scale, false)}, {"zero_point", ctx.ptr(zp, false)}};
    if (k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined) range.params.push_back({"scale_out", ctx.ptr(k.outputs[1], false)});
    if (k.outputs.size() > 2 && k.outputs[2].dtype != DType::undefined) {
      range.params.push_back({"zero_point_out", ctx.ptr(k.outputs[2], false)});
    }
    Launch q;
    q.comment = "y = saturate(round(x / scale) + zero point) over " + shape_str(y.shape) + " into uint8";
    q.type = fmt::format("mc::q::DynamicQuantize<{}, {},\n      {}, {}>", tx, dims(shape), dims(xs), dims(ys));
    q.params = {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}, {"scale", ctx.ptr(scale, true)}, {"zero_point", ctx.ptr(zp, true)}};
    KernelLaunches r;
    r.launches = {range, q};
    return r;
  }
  const bool quantize = op_type == "QuantizeLinear";
  const ops::QuantAxis& a = plan_of<ops::QuantAxis>(k);
  const bool zp = k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined;
  Strides ys = y.strides, xs = x.strides, ss = param_strides(k.inputs[1], shape, a);
  Strides zs = zp ? param_strides(k.inputs[2], shape, a) : Strides{};
  std::vector<Strides*> all{&ys, &xs, &ss};
  if (zp) all.push_back(&zs);
  collapse(shape, all);
  std::string op;
  if (quantize) {
    const DType t = y.dtype;
    op = fmt::format("mc::ew::Quantize<{}, {}, {}>", ops::quant_min(t), ops::quant_max(t), zp ? "true" : "false");
  } else {
    op = fmt::format("mc::ew::Dequantize<{}>", zp ? "true" : "false");
  }
  Launch l;
  l.comment = std::string(quantize ? "y = saturate(round(x / scale) + zero point)" : "y = (x - zero point) * scale") +
              (a.axis >= 0 ? fmt::format(", per axis {}", a.axis) : ", per tensor") + " over " + shape_str(y.shape) +
              ", " + dtype_name(x.dtype) + " -> " + dtype_name(y.dtype);
  l.type = "mc::ew::Elementwise<" + op + ", " + dims(shape) + ",\n      mc::ew::Operand<" + elem_type(y.dtype) + ", " +
           dims(ys) + ">,\n      mc::ew::Operand<" + elem_type(x.dtype) + ", " + dims(xs) + ">,\n      mc::ew::Operand<" +
           elem_type(k.inputs[1].dtype) + ", " + dims(ss) + ">";
  if (zp) l.type += ",\n      mc::ew::Operand<" + elem_type(k.inputs[2].dtype) + ", " + dims(zs) + ">";
  l.type += ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x[0]", ctx.ptr(x, true)}, {"x[1]", ctx.ptr(k.inputs[1], true)}};
  if (zp) l.params.push_back({"x[2]", ctx.ptr(k.inputs[2], true)});
  return single_launch(std::move(l));
}

std::string optional_ptr(const Kernel& k, const EmitContext& ctx, int i) {
  return i < static_cast<int>(k.inputs.size()) && k.inputs[static_cast<std::size_t>(i)].dtype != DType::undefined
             ? ctx.ptr(k.inputs[static_cast<std::size_t>(i)], true)
             : "";
}

KernelLaunches emit_qlinear(const Kernel& k, const EmitContext& ctx) {
  const linear::QLinearPlan& plan = plan_of<linear::QLinearPlan>(k);
  const std::string& op_type = k.op.type;
  const TensorView& y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to compute");
  for (const TensorView& v : k.inputs) {
    if (v.dtype != DType::undefined && !v.dense()) throw kernel_error(k, "the direct integer kernels take dense operands");
  }
  if (!y.dense()) throw kernel_error(k, "the direct integer kernels write a dense output");
  const bool qlinear = op_type == "QLinearConv" || op_type == "QLinearMatMul";
  const int wi = qlinear ? 3 : 1, wz = qlinear ? 5 : 3;
  std::vector<LaunchParam> p;
  auto add = [&](const char* field, int i) {
    const std::string v = optional_ptr(k, ctx, i);
    if (!v.empty()) p.push_back({field, v});
  };
  add("x", 0);
  add("x_zero_point", 2);
  add("w", wi);
  add("w_zero_point", wz);
  p.push_back({"y", ctx.ptr(y, false)});
  if (qlinear) {
    add("x_scale", 1);
    add("w_scale", 4);
    add("y_scale", 6);
    add("y_zero_point", 7);
  }
  const std::string tx = elem_type(k.inputs[0].dtype), tw = elem_type(k.inputs[static_cast<std::size_t>(wi)].dtype);
  const std::string ty = elem_type(y.dtype);
  const int64_t channels = plan.conv ? y.shape.at(1) : y.shape.back();
  const bool per = (k.inputs.size() > static_cast<std::size_t>(wz) && k.inputs[static_cast<std::size_t>(wz)].numel() > 1) ||
                   (qlinear && k.inputs[4].numel() > 1);
  if (per && channels <= 1) throw kernel_error(k, "per-channel parameters of a single channel");
  std::string type, comment;
  if (plan.conv) {
    const linear::ConvGeometry& g = *plan.conv;
    const bool bias = qlinear && k.inputs.size() > 8 && k.inputs[8].dtype != DType::undefined;
    if (bias) p.push_back({"bias", ctx.ptr(k.inputs[8], true)});
    type = fmt::format("mc::q::DirectConv<{}, {}, {}, {},\n    {}, {}, {}>", tx, tw, ty, linear::conv_shape(g),
                       qlinear ? "true" : "false", per ? "true" : "false", bias ? "true" : "false");
    comment = fmt::format("{} '{}' {} * W{} -> {} {}, direct, one thread per output (exact integer sums)", op_type, k.op.name,
                          linear::shape_text(k.inputs[0].shape), linear::shape_text(k.inputs[static_cast<std::size_t>(wi)].shape),
                          linear::shape_text(y.shape), g.str());
  } else {
    const ops::IntMatMulDims& d = plan.matmul;
    if (d.batch.size() > 3) throw kernel_error(k, "more than 3 batch dims");
    // Batch dims right-aligned into 3; each operand's batch strides (0 where it broadcasts).
    std::array<int64_t, 3> batch{1, 1, 1}, sa{0, 0, 0}, sb{0, 0, 0};
    auto batch_strides = [&](const Shape& own, int64_t matrix, std::array<int64_t, 3>& s) {
      int64_t step = matrix;
      for (std::size_t i = own.size(); i-- > 0;) {
        const std::size_t slot = 3 - (own.size() - i);
        s[slot] = own[i] == 1 ? 0 : step;
        step *= own[i];
      }
    };
    for (std::size_t i = 0; i < d.batch.size(); ++i) batch[3 - d.batch.size() + i] = d.batch[i];
    batch_strides(d.batch_a, d.M * d.K, sa);
    batch_strides(d.batch_b, d.K * d.N, sb);
    type = fmt::format(
        "mc::q::DirectMatMul<{}, {}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n    mc::gemm::Strides<{}, {}, {}, {}, 1>, "
        "mc::gemm::Strides<{}, {}, {}, {}, 1>, {}, {}>",
        tx, tw, ty, batch[0], batch[1], batch[2], d.M, d.N, d.K, sa[0], sa[1], sa[2], d.K, sb[0], sb[1], sb[2], d.N,
        qlinear ? "true" : "false", per ? "true" : "false");
    comment = fmt::format("{} '{}' {} x {} -> {}, direct, one thread per output (exact integer sums)", op_type, k.op.name,
                          linear::shape_text(k.inputs[0].shape), linear::shape_text(k.inputs[static_cast<std::size_t>(wi)].shape),
                          linear::shape_text(y.shape));
  }
  return single_launch(Launch{comment, type, p});
}

}  // namespace

MODELC_REGISTER_FAMILY(quantize_family)
({"quantize", {"tensor_index.cuh", "elementwise.cuh", "gemm.cuh", "conv.cuh", "quantize.cuh"}, emit_quantize});
MODELC_REGISTER_FAMILY(qlinear_family)
({"qlinear", {"tensor_index.cuh", "elementwise.cuh", "gemm.cuh", "conv.cuh", "quantize.cuh"}, emit_qlinear});

}  // namespace modelc::codegen

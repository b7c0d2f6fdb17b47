// codegen/families/int8.cpp — the conv_int8 and gemm_int8 families: modelc.QConv and QMatMul on
// integer tensor cores (templates/tensor_core_int8.cuh: mc::tc8::Conv / Gemm, their requantizing
// mc::tc8::Epilogue, SplitKReduce8 after a split-K product). Tile, stages, split-K and the arch
// variants are the tactics stage's (schedule/int8.h); the geometry, scales and epilogue the plan's
// (schedule/linear_plans.h).
#include <fmt/format.h>

#include "codegen/families/elementwise_util.h"
#include "codegen/families/linear.h"
#include "codegen/literals.h"
#include "ops/quantize.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

bool present(const Kernel& k, int i) {
  return i < static_cast<int>(k.inputs.size()) && k.inputs[static_cast<std::size_t>(i)].dtype != DType::undefined;
}

/// The mc::tc8::Epilogue e of k (its plan's); its Params fields go to *params, a comment fragment to *what.
std::string int8_epilogue(const Kernel& k, const EmitContext& ctx, const ops::Int8Epilogue& e,
                          std::vector<LaunchParam>* params, std::string* what) {
  const TensorView& y = k.outputs.at(0);
  const bool bias = present(k, ops::kQBiasInput), residual = present(k, ops::kQResidualInput);
  const bool per_channel = present(k, ops::kQWeightScaleInput) && k.inputs[ops::kQWeightScaleInput].numel() > 1;
  const bool zero_point = e.runtime_zero_point || e.x_zero_point != 0;
  if (residual) {
    const TensorView& r = k.inputs[ops::kQResidualInput];
    if (r.shape != y.shape || r.strides != y.strides) {
      throw Error("internal: kernel " + k.id + ": the residual '" + r.value + "' is laid out unlike the output");
    }
  }
  const std::string ty = ctx.ctype(y.dtype);
  const std::string tr = residual ? ctx.ctype(k.inputs[ops::kQResidualInput].dtype) : ty;
  if (!e.raw()) {
    params->push_back({"epilogue.x_scale", float_literal(static_cast<float>(e.x_scale))});
    params->push_back({"epilogue.w_scale", ctx.ptr(k.inputs[ops::kQWeightScaleInput], true)});
  }
  if (bias) params->push_back({"epilogue.bias", ctx.ptr(k.inputs[ops::kQBiasInput], true)});
  if (residual) {
    params->push_back({"epilogue.residual", ctx.ptr(k.inputs[ops::kQResidualInput], true)});
    if (ops::is_int8_type(k.inputs[ops::kQResidualInput].dtype)) {
      params->push_back({"epilogue.residual_scale", float_literal(static_cast<float>(e.residual_scale))});
      if (e.residual_zero_point != 0) params->push_back({"epilogue.residual_zero_point", int_literal(e.residual_zero_point)});
    }
  }
  if (e.quantized()) {
    params->push_back({"epilogue.y_scale", float_literal(static_cast<float>(e.y_scale))});
    if (e.y_zero_point != 0) params->push_back({"epilogue.y_zero_point", int_literal(e.y_zero_point)});
  }
  activation_params(e.act, "epilogue.act", params);
  if (zero_point) {
    params->push_back({"epilogue.w_sum", ctx.ptr(k.inputs.at(ops::kQWeightSumInput), true)});
    if (e.runtime_zero_point) {
      params->push_back({"epilogue.x_zero_point_ptr", ctx.ptr(k.inputs[ops::kQZeroPointInput], true)});
    } else {
      params->push_back({"epilogue.x_zero_point", int_literal(e.x_zero_point)});
    }
  }
  const std::string act_name = ops::activation_name(e.act.kind);
  *what = std::string(bias ? " + bias" : "") + (e.act.kind != ops::Activation::none ? " + " + act_name : "") +
          (residual ? std::string(" + residual") + (ops::is_int8_type(k.inputs[ops::kQResidualInput].dtype) ? " (INT8)" : "") : "");
  *what += e.quantized() ? fmt::format(", quantized to {} (scale {:.4g})", dtype_name(e.out), e.y_scale)
                         : e.raw() ? ", the INT32 accumulators" : std::string(", ") + dtype_name(e.out);
  return fmt::format("mc::tc8::Epilogue<{}, {}, mc::Act::{}, {}, {}, {}, {}>", ty, tr, act_name, e.residual,
                     bias ? "true" : "false", per_channel ? "true" : "false", zero_point ? "true" : "false");
}

/// The launches of an INT8 tensor-core kernel per arch variant (tc_launches, with the INT32
/// workspace of a split-K tile and mc::tc8::SplitKReduce8).
KernelLaunches int8_launches(const Kernel& k, const EmitContext& ctx, const std::string& comment,
                             const std::function<std::string(const TcTile&)>& decl, const std::vector<LaunchParam>& params) {
  if (k.outputs.empty() || k.outputs[0].numel() == 0) return nothing_to_run(comment + ": empty output, nothing to run");
  KernelLaunches r;
  for (const auto& [sm, tactic] : arch_variants(k)) {
    const TcTile t = tc_tile_of(k, tactic);
    if (!t.int8) throw Error("internal: INT8 kernel " + k.id + " with a tile that is not INT8");
    const std::string type = decl(t);
    const std::string on = sm > 0 ? " (sm_" + std::to_string(sm) + ")" : "";
    std::vector<LaunchParam> p = params;
    if (t.split_k > 1) {
      if (k.workspace.dtype == DType::undefined) throw Error("internal: kernel " + k.id + " splits K without a workspace");
      TensorView w = k.workspace;
      w.dtype = DType::int32;
      p.push_back({"partial", ctx.ptr(w, false)});
    }
    r.launches.push_back(Launch{comment + ", tile " + t.name() + on, type, p, sm, t.smem_bytes(), 1});
    if (t.split_k > 1) {
      r.launches.push_back(Launch{fmt::format("the {} INT32 partial sums of {} added, then the epilogue{}", t.split_k, k.id, on),
                                  "mc::tc8::SplitKReduce8<" + type + ">", p, sm, 0});
    }
  }
  return r;
}

KernelLaunches emit_conv_int8(const Kernel& k, const EmitContext& ctx) {
  const Int8ConvPlan& plan = plan_of<Int8ConvPlan>(k);
  const ConvGeometry& g = plan.geometry;
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  std::vector<LaunchParam> params = {{"X", ctx.ptr(x, true)}, {"W", ctx.ptr(k.inputs.at(1), true)}, {"Y", ctx.ptr(y, false)}};
  std::string what;
  const std::string epilogue = int8_epilogue(k, ctx, plan.epilogue, &params, &what);
  const int64_t cp = plan.x_pitch, yp = plan.y_pitch;
  const TcConvDepth& d = plan.depth;
  const std::string ta = ctx.ctype(x.dtype), ty = ctx.ctype(y.dtype);
  if (k.engine == Engine::hopper) {
    const std::string comment = fmt::format("QConv '{}' {} {} * W{} int8 -> {} {}{}, NHWC (pitch {} -> {}), INT8 implicit GEMM",
                                            k.op.name, shape_text(x.shape), dtype_name(x.dtype), shape_text(k.inputs[1].shape),
                                            shape_text(y.shape), g.str(), what, cp, yp);
    return hopper_int8_conv_launches(k, ctx, plan, epilogue, params, comment);
  }
  auto decl = [&](const TcTile& t) {
    return fmt::format("mc::tc8::Conv<{}, {}, {},\n    /*X pitch*/ {}, /*Y pitch*/ {}, {}, {}{}>", ta, ty, conv_shape(g), cp, yp,
                       tc_tile_text(t), epilogue, d.compact ? ", /*compact K*/ true" : "");
  };
  const std::string comment = fmt::format(
      "QConv '{}' {} {} * W{} int8 -> {} {}{}, NHWC (pitch {} -> {}), INT8 implicit GEMM on tensor cores{}", k.op.name,
      shape_text(x.shape), dtype_name(x.dtype), shape_text(k.inputs[1].shape), shape_text(y.shape), g.str(), what, cp, yp,
      d.compact ? fmt::format(", K {} (compact: {} taps x {} channels, W rows of {})", d.K, d.taps, g.C, d.row) : "");
  return int8_launches(k, ctx, comment, decl, params);
}

KernelLaunches emit_gemm_int8(const Kernel& k, const EmitContext& ctx) {
  const Int8GemmPlan& plan = plan_of<Int8GemmPlan>(k);
  const Int8Gemm& g = plan.gemm;
  const TensorView &a = k.inputs.at(0), &y = k.outputs.at(0);
  std::vector<LaunchParam> params = {{"A", ctx.ptr(a, true)}, {"B", ctx.ptr(k.inputs.at(1), true)}, {"Y", ctx.ptr(y, false)}};
  std::string what;
  const std::string epilogue = int8_epilogue(k, ctx, plan.epilogue, &params, &what);
  const std::string ta = ctx.ctype(a.dtype), ty = ctx.ctype(y.dtype);
  if (k.engine == Engine::hopper) {
    const std::string comment = fmt::format("QMatMul '{}' {} {} x B[{}x{}] int8 -> {}{}, INT8 GEMM", k.op.name, shape_text(a.shape),
                                            dtype_name(a.dtype), g.N, g.K, shape_text(y.shape), what);
    return hopper_int8_gemm_launches(k, ctx, g, epilogue, params, comment);
  }
  auto decl = [&](const TcTile& t) {
    return fmt::format("mc::tc8::Gemm<{}, {}, /*M N K*/ {}, {}, {},\n    /*A strides*/ {}, 1, /*B row*/ {}, /*Y row*/ {}, {}, {}>",
                       ta, ty, g.M, g.N, g.K, g.a_row, g.K, g.y_row, tc_tile_text(t), epilogue);
  };
  const std::string comment = fmt::format("QMatMul '{}' {} {} x B[{}x{}] int8 -> {}{}, INT8 GEMM on tensor cores", k.op.name,
                                          shape_text(a.shape), dtype_name(a.dtype), g.N, g.K, shape_text(y.shape), what);
  return int8_launches(k, ctx, comment, decl, params);
}

}  // namespace

MODELC_REGISTER_FAMILY(conv_int8_family)
({"conv_int8", {"gemm.cuh", "conv.cuh", "tensor_core.cuh", "tensor_core_int8.cuh"}, emit_conv_int8});
MODELC_REGISTER_FAMILY(gemm_int8_family)
({"gemm_int8", {"gemm.cuh", "conv.cuh", "tensor_core.cuh", "tensor_core_int8.cuh"}, emit_gemm_int8});

}  // namespace modelc::linear

// codegen/families/conv_depthwise.cpp — the conv_depthwise family: a Conv with one input channel
// per group (templates/conv_depthwise.cuh): ConvDepthwiseTiled (Engine::depthwise_tiled: NHWC
// FP16 / BF16, an input tile in shared memory), else ConvDepthwise, direct, one thread per output
// element. The lowering picks this family before conv for such nodes (schedule/families.cpp).
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "schedule/conv_tiled.h"
#include "support/error.h"

namespace modelc::linear {
namespace {

/// ConvDepthwiseTiled (schedule/conv_tiled.h): one launch per arch variant, its dynamic shared
/// memory the input tile (the template's kSmemBytes, as the schedule computes it).
KernelLaunches tiled_launches(const Kernel& k, const DirectConvPlan& plan, const std::string& T,
                              const std::string& epilogue, const std::string& what,
                              const std::vector<LaunchParam>& params) {
  const KernelLayout& l = plan.layout;
  const ConvGeometry& g = plan.geometry;
  const TensorView& vy = k.outputs[0];
  const std::string comment = fmt::format("{} '{}' {} * W{} -> {} {}{}, depthwise, NHWC (pitch {} -> {}), tiled", k.op.type,
                                          k.op.name, shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape),
                                          shape_text(vy.shape), g.str(), what, l.x_pitch, l.y_pitch);
  if (vy.numel() == 0) return nothing_to_run(comment + ": empty output, nothing to run");
  KernelLaunches r;
  for (const auto& [sm, tactic] : arch_variants(k)) {
    const DepthwiseTactic* t = std::get_if<DepthwiseTactic>(&tactic);
    if (!t) throw Error("internal: kernel " + k.id + " (conv_depthwise, tiled) has no depthwise tile");
    const std::string type = fmt::format(
        "mc::conv::ConvDepthwiseTiled<{}, {}, {},\n    mc::conv::DepthwiseTile<{}, {}, {}, {}, {}, {}, {}>, {},\n"
        "    /*X pitch*/ {}, /*Y pitch*/ {}>",
        T, t->fp16_accumulate ? "__half" : "float", conv_shape(g), t->th, t->tw, t->cb, t->cv, t->rh, t->rw,
        t->async ? "true" : "false", epilogue, l.x_pitch, l.y_pitch);
    r.launches.push_back(Launch{comment + ", tile " + t->name() + (sm > 0 ? " (sm_" + std::to_string(sm) + ")" : ""),
                                type, params, sm, depthwise_smem_bytes(g, *t)});
  }
  return r;
}

KernelLaunches emit_depthwise(const Kernel& k, const EmitContext& ctx) {
  const DirectConvPlan& plan = plan_of<DirectConvPlan>(k);
  const KernelLayout& l = plan.layout;
  const ConvGeometry& g = plan.geometry;
  const TensorView& vy = k.outputs[0];
  const std::string T = ctx.ctype(vy.dtype);
  std::vector<LaunchParam> params = {
      {"X", ctx.ptr(k.inputs[0], true)}, {"W", ctx.ptr(k.inputs[1], true)}, {"Y", ctx.ptr(vy, false)}};
  std::string what;
  const std::string epilogue = bias_epilogue(k, ctx, plan.epilogue, T, &params, &what);
  if (k.engine == Engine::depthwise_tiled) return tiled_launches(k, plan, T, epilogue, what, params);
  const std::string comment =
      fmt::format("{} '{}' {} * W{} -> {} {}{}, depthwise direct{}", k.op.type, k.op.name,
                  shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape), shape_text(vy.shape), g.str(), what,
                  l.channels_last ? ", NHWC" : "");
  // nhwc: the channel pitches (0: the channel count).
  const std::string pitches =
      l.channels_last ? fmt::format(", 128, {}, {}", l.x_pitch == g.C ? 0 : l.x_pitch, l.y_pitch == g.M ? 0 : l.y_pitch)
                      : "";
  const std::string type =
      fmt::format("mc::conv::ConvDepthwise<{}, {}, {},\n    mc::conv::Layout::{}, {}{}>", T, acc_type(vy.dtype),
                  conv_shape(g), l.channels_last ? "nhwc" : "nchw", epilogue, pitches);
  return linear_launch(k, comment, type, std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(conv_depthwise_family)({"conv_depthwise", {"conv_depthwise.cuh"}, emit_depthwise});

}  // namespace modelc::linear

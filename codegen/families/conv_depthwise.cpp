// codegen/families/conv_depthwise.cpp — the conv_depthwise family: a Conv with one input channel
// per group (templates/conv_depthwise.cuh), direct, one thread per output element. The lowering
// picks this family before conv for such nodes (schedule/families.cpp).
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "support/error.h"

namespace modelc::linear {
namespace {

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

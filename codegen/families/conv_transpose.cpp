// codegen/families/conv_transpose.cpp — the conv_transpose family: ConvTranspose in gather form
// (templates/conv_transpose.cuh), one thread per output element; pads resolved from output_shape,
// output_padding and auto_pad by conv_transpose_geometry.
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "support/error.h"

namespace modelc::linear {
namespace {

KernelLaunches emit_transpose(const Kernel& k, const EmitContext& ctx) {
  const DirectConvPlan& plan = plan_of<DirectConvPlan>(k);  // dense NCHW (checked by the plan)
  const ConvGeometry& g = plan.geometry;
  const TensorView& vy = k.outputs[0];
  const std::string T = ctx.ctype(vy.dtype);
  std::vector<LaunchParam> params = {
      {"X", ctx.ptr(k.inputs[0], true)}, {"W", ctx.ptr(k.inputs[1], true)}, {"Y", ctx.ptr(vy, false)}};
  std::string what;
  const std::string epilogue = bias_epilogue(k, ctx, plan.epilogue, T, &params, &what);
  const std::string comment = fmt::format("ConvTranspose '{}' {} * W{} -> {} {}{}, gather form", k.op.name,
                                          shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape),
                                          shape_text(vy.shape), g.str(), what);
  const std::string type = fmt::format("mc::conv::ConvTranspose<{}, {}, {},\n    mc::conv::Layout::nchw, {}>", T,
                                       acc_type(vy.dtype), conv_shape(g), epilogue);
  return linear_launch(k, comment, type, std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(conv_transpose_family)({"conv_transpose", {"conv_transpose.cuh"}, emit_transpose});

}  // namespace modelc::linear

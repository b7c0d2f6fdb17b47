// codegen/families/pool.cpp — the pool family (templates/pool.cuh): MaxPool (with Indices and
// storage_order), AveragePool (count_include_pad, ceil_mode), dilations, GlobalAveragePool and
// GlobalMaxPool. Windows over 1 to 3 spatial dims; pads from pool_geometry (auto_pad, ceil_mode).
// An operand prologue (fuse_prologue: a BN + ReLU or an SE gate in front) goes to the template as
// mc::conv::ChannelPrologue, its scale, shift and gate as params.
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "support/error.h"

namespace modelc::linear {
namespace {

KernelLaunches emit_pool(const Kernel& k, const EmitContext& ctx) {
  const PoolPlan& plan = plan_of<PoolPlan>(k);
  const KernelLayout& l = plan.layout;
  const std::string layout = l.channels_last ? "mc::conv::Layout::nhwc" : "mc::conv::Layout::nchw";
  // Channel pitches (nhwc; 0: the channel count).
  const std::string pitches =
      l.channels_last ? fmt::format("{}, {}", l.x_pitch == k.inputs[0].shape[1] ? 0 : l.x_pitch,
                                    l.y_pitch == k.outputs[0].shape[1] ? 0 : l.y_pitch)
                      : "0, 0";
  const TensorView &vx = k.inputs[0], &vy = k.outputs[0];
  const std::string T = ctx.ctype(vy.dtype);
  std::vector<LaunchParam> params = {{"X", ctx.ptr(vx, true)}, {"Y", ctx.ptr(vy, false)}};
  // The operand prologue (fuse_prologue): mc::conv::ChannelPrologue and its operands, inputs 4..6;
  // the template's trailing parameter, so the threads and pitches are spelled out before it.
  std::string prologue, prologue_text;
  if (plan.prologue.active()) {
    prologue = fmt::format(", mc::conv::ChannelPrologue<{}, /*affine*/ {}, /*relu*/ {}, /*gate*/ {}, /*gate pitch*/ {}>",
                           T, plan.prologue.affine, plan.prologue.relu, plan.prologue.gate, plan.gate_pitch);
    prologue_text = ", X through " + plan.prologue.text();
    if (plan.prologue.affine) {
      params.push_back({"prologue.scale", ctx.ptr(k.inputs.at(kPrologueScaleInput), true)});
      params.push_back({"prologue.shift", ctx.ptr(k.inputs.at(kPrologueShiftInput), true)});
    }
    if (plan.prologue.gate) params.push_back({"prologue.gate", ctx.ptr(k.inputs.at(kPrologueGateInput), true)});
  }
  const std::string tail = l.channels_last || !prologue.empty() ? ", 128, " + pitches + prologue : "";
  if (plan.global) {
    int64_t inner = 1;
    for (std::size_t i = 2; i < vx.shape.size(); ++i) inner *= vx.shape[i];
    const std::string comment = fmt::format("{} '{}' {} -> {}{}{}", k.op.type, k.op.name, shape_text(vx.shape),
                                            shape_text(vy.shape), l.channels_last ? ", NHWC" : "", prologue_text);
    const std::string type = fmt::format("mc::pool::GlobalPool<{}, {}, {}, {}, {}, {}{}>", T, vx.shape[0], vx.shape[1],
                                         inner, layout, plan.max ? "true" : "false", tail);
    return linear_launch(k, comment, type, std::move(params));
  }
  const ConvGeometry& g = plan.geometry;
  const bool indices = plan.max && k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined;
  if (indices && l.channels_last) throw Error("internal: kernel " + k.id + ": MaxPool Indices in the NHWC layout");
  const std::string kind = plan.max           ? "mc::pool::Kind::max"
                           : plan.include_pad ? "mc::pool::Kind::average_include_pad"
                                              : "mc::pool::Kind::average_exclude_pad";
  const std::string comment =
      fmt::format("{} '{}' {} -> {} {}{}{}{}", k.op.type, k.op.name, shape_text(vx.shape), shape_text(vy.shape),
                  g.str(), indices ? " + Indices" : "", l.channels_last ? ", NHWC" : "", prologue_text);
  const std::string type = fmt::format(
      "mc::pool::Pool<{}, mc::pool::Shape<{}, {},\n"
      "    /*in*/ {}, /*kernel*/ {}, /*out*/ {},\n"
      "    /*stride*/ {}, /*pad*/ {}, /*pad end*/ {}, /*dilation*/ {}>,\n"
      "    {}, {}, {}, {}{}>",
      T, g.N, g.C, dims3(g.in), dims3(g.kernel), dims3(g.out), dims3(g.stride), dims3(g.pad), dims3(g.pad_end),
      dims3(g.dilation), layout, kind, indices ? "true" : "false", plan.column_major ? "true" : "false", tail);
  if (indices) params.push_back({"indices", ctx.ptr(k.outputs[1], false)});
  return linear_launch(k, comment, type, std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(pool_family)({"pool", {"pool.cuh"}, emit_pool});

}  // namespace modelc::linear

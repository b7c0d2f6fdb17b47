// codegen/families/conv.cpp — the conv family: Conv as a tiled implicit GEMM (templates/conv.cuh),
// on tensor cores (templates/tensor_core.cuh) where the tactics stage chose them; plus the
// spelling of the window geometry the conv_transpose, conv_depthwise and pool families share.
// Geometry and tactic are the schedule's (schedule/linear.h, schedule/tactics.h).
#include <fmt/format.h>

#include <algorithm>

#include "codegen/families/linear.h"
#include "schedule/conv_tiled.h"
#include "support/error.h"

namespace modelc::linear {

std::string dims3(const std::array<int64_t, 3>& d) {
  return fmt::format("mc::conv::Dims3<{}, {}, {}>", d[0], d[1], d[2]);
}

std::string conv_shape(const ConvGeometry& g) {
  return fmt::format(
      "mc::conv::Shape<{}, {}, {}, {},\n"
      "    /*in*/ {}, /*kernel*/ {}, /*out*/ {},\n"
      "    /*stride*/ {}, /*pad*/ {}, /*dilation*/ {}>",
      g.N, g.C, g.M, g.G, dims3(g.in), dims3(g.kernel), dims3(g.out), dims3(g.stride), dims3(g.pad),
      dims3(g.dilation));
}
std::string bias_epilogue(const Kernel& k, const EmitContext& ctx, const LinearEpilogue& e, const std::string& T,
                          std::vector<LaunchParam>* params, std::string* what) {
  const bool has_bias = k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined;
  if (e.fused) {
    MatrixStrides per_channel;
    per_channel.row = 1;
    return fused_epilogue(k, ctx, e, T, per_channel, has_bias, 1.0, 1.0, params, what);
  }
  *what = has_bias ? " + bias" : "";
  if (has_bias) {
    params->push_back({"epilogue.bias", ctx.ptr(k.inputs[2], true)});
    return "mc::gemm::EpilogueBias<" + T + ">";
  }
  return "mc::gemm::EpilogueIdentity";
}

namespace {
/// The channel pitches of an NHWC convolution (X, Y, W) and W's row pitch, or all 0 when every view
/// is dense NCHW.
struct Pitches {
  int64_t x = 0, y = 0, w = 0, w_row = 0;
};

Pitches conv_pitches(const ConvPlan& c) {
  // A horizontally fused convolution's outputs are its ranges' (their own strides): Y's pitch is 0.
  if (c.dense) return {};
  return {c.x_pitch, c.y_pitch, c.w.pitch, c.w.row};
}

/// Where each range of a horizontally fused convolution stores: its output [N, C, spatial...] as the
/// image, innermost pixel and channel strides; the spatial dims must continue one another (a pixel
/// index runs over them as one).
std::vector<RangeStrides> range_strides(const Kernel& k) {
  std::vector<RangeStrides> r;
  for (const TensorView& y : k.outputs) {
    const std::vector<int64_t>& st = y.strides;
    for (std::size_t d = 2; d + 1 < st.size(); ++d) {
      if (st[d] != st[d + 1] * y.shape[d + 1] && y.shape[d] > 1) {
        throw Error("internal: kernel " + k.id + ": output '" + y.value + "' has spatial dims that do not continue");
      }
    }
    r.push_back({st[0], st.size() > 2 ? st.back() : 1, st[1]});
  }
  return r;
}

/// The element type a convolution's epilogue operands (bias, residual) are read as.
std::string conv_epilogue_type(const Kernel& k, const EmitContext& ctx) {
  for (std::size_t i = 2; i < k.inputs.size() && i < 4; ++i) {  // bias, residual (then the prologue's)
    if (k.inputs[i].dtype != DType::undefined) return ctx.ctype(k.inputs[i].dtype);
  }
  return ctx.ctype(k.outputs[0].dtype);
}

/// A Winograd convolution (schedule/winograd.h): per arch variant the input transform into the
/// workspace's V, the 16 GEMMs into its M, the output transform through the direct tensor-core
/// convolution's epilogue and store (`direct`: its type for a tile).
KernelLaunches winograd_launches(const Kernel& k, const EmitContext& ctx, const ConvPlan& c, const std::string& comment,
                                 const std::function<std::string(const TcTile&)>& direct,
                                 const std::vector<LaunchParam>& params) {
  if (k.outputs[0].numel() == 0) return nothing_to_run(comment + ": empty output, nothing to run");
  if (k.workspace.dtype == DType::undefined) throw Error("internal: Winograd kernel " + k.id + " has no workspace");
  if (!c.winograd) throw Error("internal: Winograd kernel " + k.id + " has no Winograd plan");
  const ConvGeometry& g = c.geometry;
  const WinogradPlan& plan = *c.winograd;
  TensorView v = k.workspace, m = k.workspace;
  v.dtype = DType::float16;
  v.shape = {16 * plan.tiles * plan.x_pitch};
  m.offset += plan.m_offset;
  m.shape = {16 * plan.tiles * plan.m_pitch};
  std::vector<LaunchParam> out_params;  // the direct convolution's, less its X and W
  for (const LaunchParam& p : params) {
    if (p.field != "X" && p.field != "W") out_params.push_back(p);
  }
  out_params.push_back({"product", ctx.ptr(m, true)});
  const std::string shape = conv_shape(g);
  KernelLaunches r;
  for (const auto& [sm, tactic] : arch_variants(k)) {
    const TcTile t = std::get<WinogradTactic>(tactic).gemm;
    const std::string on = sm > 0 ? " (sm_" + std::to_string(sm) + ")" : "";
    r.launches.push_back(Launch{fmt::format("{}: Winograd input transform, V = B^T d B of {} tiles{}", comment, plan.tiles, on),
                                fmt::format("mc::wino::InputTransform<{},\n    /*X pitch*/ {}>", shape, plan.x_pitch),
                                {{"X", ctx.ptr(k.inputs[0], true)}, {"V", ctx.ptr(v, false)}}, sm});
    r.launches.push_back(Launch{fmt::format("the 16 Winograd GEMMs of {}, M = V U, tile {}{}", k.id, t.name(), on),
                                fmt::format("mc::wino::Gemms<{},\n    /*X pitch*/ {}, /*M pitch*/ {}, {}, {}>", shape,
                                            plan.x_pitch, plan.m_pitch, tc_tile_text(t), t.fp16_accumulate ? "__half" : "float"),
                                {{"A", ctx.ptr(v, true)}, {"B", ctx.ptr(k.inputs[1], true)}, {"Y", ctx.ptr(m, false)}},
                                sm, t.smem_bytes(), 1});
    r.launches.push_back(Launch{fmt::format("the Winograd output transform of {}, Y = A^T M A, and the epilogue{}", k.id, on),
                                fmt::format("mc::wino::OutputTransform<{},\n    /*M pitch*/ {}, {}>", shape, plan.m_pitch,
                                            direct(t)),
                                out_params, sm});
  }
  return r;
}

/// A grouped convolution on tensor cores (tc::ConvGrouped, schedule/conv_tiled.h): one launch per
/// arch variant, its dynamic shared memory the template's kSmemBytes as the schedule computes it;
/// a SIMT variant (BF16 below sm_80) as the SIMT engine prints it.
KernelLaunches grouped_launches(const Kernel& k, const EmitContext& ctx, const ConvPlan& c, const std::string& epilogue,
                                const std::string& what, const std::vector<LaunchParam>& params,
                                const std::string& simt_comment, const std::function<std::string(const TileConfig&)>& simt_decl) {
  const ConvGeometry& g = c.geometry;
  const TensorView& vy = k.outputs[0];
  const GroupedShape s = grouped_shape(g);
  const std::string comment =
      fmt::format("{} '{}' {} * W{} -> {} {}{}, NHWC (pitch {} -> {}), grouped implicit GEMM on tensor cores, K {} "
                  "({} taps x {} channels a super-group of {} groups)",
                  k.op.type, k.op.name, shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape), shape_text(vy.shape),
                  g.str(), what, c.x_pitch, c.y_pitch, s.K, s.taps, s.Cs, s.F);
  if (k.outputs[0].numel() == 0) return nothing_to_run(comment + ": empty output, nothing to run");
  KernelLaunches r;
  r.includes = {"conv_grouped.cuh"};  // only where a grouped convolution runs: other models' files unchanged
  for (const auto& [sm, tactic] : arch_variants(k)) {
    const std::string on = sm > 0 ? " (sm_" + std::to_string(sm) + ")" : "";
    if (const TileConfig* simt = std::get_if<TileConfig>(&tactic)) {
      r.launches.push_back(Launch{simt_comment + ", SIMT tile " + simt->name() + on, simt_decl(*simt), params, sm});
      continue;
    }
    const TcTile t = tc_tile_of(k, tactic);
    const std::string type = fmt::format("mc::tc::ConvGrouped<{}, {}, {},\n    /*X pitch*/ {}, /*Y pitch*/ {}, {}, {}>",
                                         tc_operand_type(k, k.inputs[0].dtype), ctx.ctype(vy.dtype), conv_shape(g),
                                         c.x_pitch, c.y_pitch, tc_tile_text(t), epilogue);
    r.launches.push_back(Launch{comment + ", tile " + t.name() + on, type, params, sm, grouped_smem_bytes(g, t, c.x_pitch), 1});
  }
  return r;
}

KernelLaunches emit_conv(const Kernel& k, const EmitContext& ctx) {
  const ConvPlan& c = plan_of<ConvPlan>(k);
  const ConvGeometry& g = c.geometry;
  const TensorView& vy = k.outputs[0];
  const bool ranged = !k.ranges.empty();  // horizontally fused: the epilogue's outputs, no Y
  std::vector<LaunchParam> params = {{"X", ctx.ptr(k.inputs[0], true)}, {"W", ctx.ptr(k.inputs[1], true)}};
  if (!ranged) params.push_back({"Y", ctx.ptr(vy, false)});
  std::string what;
  const std::string epilogue =
      ranged ? ranged_epilogue(k, ctx, c.epilogue, conv_epilogue_type(k, ctx), ctx.ctype(vy.dtype), "row", range_strides(k), 1.0,
                               1.0, &params, &what)
             : bias_epilogue(k, ctx, c.epilogue, conv_epilogue_type(k, ctx), &params, &what);
  const std::string shape_y = ranged ? fmt::format("{} outputs", k.ranges.size()) : shape_text(vy.shape);
  // The SIMT template for a tile, with its comment (the SIMT engine, or a tensor-core kernel's SIMT
  // variant for an arch without tensor cores for its operands: BF16 below sm_80).
  auto simt_comment = [&](const std::string& how) {
    const Pitches p = conv_pitches(c);
    return fmt::format("{} '{}' {} * W{} -> {} {}{}, {}implicit GEMM{}", k.op.type, k.op.name,
                       shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape), shape_y, g.str(), what,
                       p.x != 0 ? fmt::format("NHWC (pitch {} -> {}), ", p.x, ranged ? "ranges" : std::to_string(p.y)) : "",
                       how);
  };
  auto simt_type = [&](const TileConfig& tile) {
    const Pitches p = conv_pitches(c);
    const bool nhwc = p.x != 0;
    // W's row pitch only where its rows are not whole taps (compact weights): other text unchanged.
    const int64_t taps = g.kernel[0] * g.kernel[1] * g.kernel[2];
    const std::string w_row = nhwc && p.w_row != taps * p.w ? fmt::format(", /*W row*/ {}", p.w_row) : "";
    const std::string pitches = nhwc ? fmt::format(", /*pitches X Y W*/ {}, {}, {}{}", p.x, p.y, p.w, w_row) : "";
    return fmt::format("mc::conv::Conv<{}, {}, {},\n    mc::conv::Layout::{}, mc::gemm::Tile<{}, {}, {}, {}, {}>, {}{}>",
                       ctx.ctype(vy.dtype), acc_type(vy.dtype), conv_shape(g), nhwc ? "nhwc" : "nchw", tile.bm, tile.bn,
                       tile.bk, tile.tm, tile.tn, epilogue, pitches);
  };
  if (c.prologue.active() && (k.engine != Engine::tensor_core || g.G > 1)) {
    throw Error("internal: kernel " + k.id + " has an operand prologue but does not run tc::Conv");
  }
  if (k.engine == Engine::hopper) {
    const std::string comment =
        fmt::format("{} '{}' {} * W{} -> {} {}{}, NHWC (pitch {} -> {}), implicit GEMM", k.op.type, k.op.name,
                    shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape), shape_y, g.str(), what, c.x_pitch, c.y_pitch);
    return hopper_conv_launches(k, ctx, c, epilogue, params, comment);
  }
  if (k.engine == Engine::tensor_core && g.G > 1) return grouped_launches(k, ctx, c, epilogue, what, params, simt_comment(""), simt_type);
  if (k.engine == Engine::tensor_core || k.engine == Engine::winograd) {
    // Ranged: the Y pitch is unused (each range has its own strides); M keeps the template's check.
    const int64_t cp = c.x_pitch, yp = ranged ? g.M : c.y_pitch;
    // A Winograd kernel's W is the transformed U ([16, M, pitch]): never the compact form (winograd_unfit).
    const TcConvDepth d = k.engine == Engine::winograd ? TcConvDepth{} : c.depth;
    const std::string TY = ctx.ctype(vy.dtype), TXW = tc_operand_type(k, k.inputs[0].dtype);
    // The operand prologue (fuse_prologue): tc::ChannelPrologue and its operands, inputs 4..6.
    std::string prologue, prologue_text;
    if (c.prologue.active()) {
      prologue = fmt::format(",\n    mc::tc::ChannelPrologue<{}, /*affine*/ {}, /*relu*/ {}, /*gate*/ {}, /*gate pitch*/ {}>", TXW,
                             c.prologue.affine, c.prologue.relu, c.prologue.gate, c.gate_pitch);
      prologue_text = ", X through " + c.prologue.text();
      if (c.prologue.affine) {
        params.push_back({"prologue.scale", ctx.ptr(k.inputs.at(kPrologueScaleInput), true)});
        params.push_back({"prologue.shift", ctx.ptr(k.inputs.at(kPrologueShiftInput), true)});
      }
      if (c.prologue.gate) params.push_back({"prologue.gate", ctx.ptr(k.inputs.at(kPrologueGateInput), true)});
    }
    auto decl = [&](const TcTile& t) {
      const std::string TAcc = t.fp16_accumulate ? "__half" : "float";
      const std::string compact = d.compact ? ", /*compact K*/ true" : prologue.empty() ? "" : ", /*compact K*/ false";
      return fmt::format("mc::tc::Conv<{}, {}, {}, {},\n    /*X pitch*/ {}, /*Y pitch*/ {}, {}, {}{}{}>", TXW, TY, TAcc,
                         conv_shape(g), cp, yp, tc_tile_text(t), epilogue, compact, prologue);
    };
    const std::string comment = fmt::format(
        "{} '{}' {} * W{} -> {} {}{}, NHWC (pitch {} -> {}), {} on tensor cores{}{}", k.op.type, k.op.name,
        shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape), shape_y, g.str(), what, cp,
        ranged ? "ranges" : std::to_string(yp), k.engine == Engine::winograd ? "Winograd F(2x2,3x3)" : "implicit GEMM",
        d.compact ? fmt::format(", K {} (compact: {} taps x {} channels, W rows of {})", d.K, d.taps, g.C, d.row) : "",
        prologue_text);
    if (k.engine == Engine::winograd) return winograd_launches(k, ctx, c, comment, decl, params);
    return tc_launches(k, ctx, comment, decl, params, simt_comment(""), simt_type);
  }
  const TileConfig tile = tile_of(k);
  return linear_launch(k, simt_comment(", SIMT tile " + tile.name()), simt_type(tile), std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(conv_family)({"conv", {"gemm.cuh", "conv.cuh", "tensor_core.cuh", "winograd.cuh"}, emit_conv});

}  // namespace modelc::linear

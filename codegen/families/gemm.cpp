// codegen/families/gemm.cpp — the gemm family: Gemm, MatMul and Einsum as one batched strided
// GEMM (templates/gemm.cuh, templates/tensor_core.cuh; at most 8 rows: templates/gemv.cuh),
// one-operand Einsum as a strided sum; plus the printing helpers the conv and pool families share
// (codegen/families/linear.h). The GEMM lowering and the tactic are the schedule's
// (schedule/linear.h, schedule/tactics.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "codegen/families/linear.h"
#include "schedule/tactics.h"
#include "ops/fused.h"
#include "support/error.h"

namespace modelc::linear {

// ---- shared helpers ----------------------------------------------------------------------------

std::string strides_text(const MatrixStrides& s) {
  return fmt::format("mc::gemm::Strides<{}, {}, {}, {}, {}>", s.batch[0], s.batch[1], s.batch[2], s.row, s.col);
}

std::string y_text(const GemmLowering& g) {
  return g.range_y.empty() ? strides_text(g.y) : "/*none: the ranges'*/ " + strides_text(g.y);
}

std::string acc_type(DType t) {
  switch (t) {
    case DType::float32:
    case DType::float16:
    case DType::bfloat16: return "float";
    case DType::float64: return "double";
    default: return "int64_t";  // every integer type: exact, wrapping mod 2^64 (uint64 too)
  }
}

namespace {

bool empty_output(const Kernel& k) { return k.outputs.empty() || k.outputs[0].numel() == 0; }

}  // namespace

KernelLaunches linear_launch(const Kernel& k, const std::string& comment, const std::string& type,
                             std::vector<LaunchParam> params) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  return single_launch(Launch{comment, type, std::move(params)});
}

std::string fused_epilogue(const Kernel& k, const EmitContext& ctx, const LinearEpilogue& e, const std::string& T,
                           const MatrixStrides& bias, bool has_bias, double alpha, double beta,
                           std::vector<LaunchParam>* params, std::string* what) {
  const ops::EpilogueActivation& act = e.act;
  const bool has_residual = k.inputs.size() > ops::kFusedResidualInput &&
                            k.inputs[ops::kFusedResidualInput].dtype != DType::undefined;
  std::string residual = "mc::gemm::Residual::none";
  if (has_residual) {
    const TensorView& r = k.inputs[ops::kFusedResidualInput];
    const TensorView& y = k.outputs.at(0);
    // A scattered Y (fold_row_maps): the residual is dense with the rows the table writes, read at
    // the element's offset there (the stage checked it); otherwise laid out as Y.
    if (k.row_maps.scatter_y ? !r.dense() : (r.shape != y.shape || r.strides != y.strides)) {
      throw Error("internal: kernel " + k.id + ": the residual '" + r.value + "' is laid out unlike the output");
    }
    residual = "mc::gemm::Residual::" + e.residual_position;  // checked by the plan
  }
  const std::string act_name = ops::activation_name(act.kind);
  *what = std::string(has_bias ? " + bias" : "") + (act.kind != ops::Activation::none ? " + " + act_name : "") +
          (has_residual ? " + residual (" + e.residual_position + ")" : "");
  // The fields that differ from the defaults (alpha = beta = 1, no bias or residual, a neutral
  // activation): what this epilogue reads.
  if (alpha != 1.0) params->push_back({"epilogue.alpha", float_literal(alpha)});
  if (has_bias && beta != 1.0) params->push_back({"epilogue.beta", float_literal(beta)});
  if (has_bias) params->push_back({"epilogue.bias", ctx.ptr(k.inputs[ops::kFusedBiasInput], true)});
  if (has_residual) params->push_back({"epilogue.residual", ctx.ptr(k.inputs[ops::kFusedResidualInput], true)});
  activation_params(act, "epilogue.act", params);
  return fmt::format("mc::gemm::EpilogueFused<{}, {}, {}, mc::gemm::Act::{}, {}>", T, strides_text(bias),
                     has_bias ? "true" : "false", act_name, residual);
}

std::string ranged_epilogue(const Kernel& k, const EmitContext& ctx, const LinearEpilogue& e, const std::string& T,
                            const std::string& TY, const std::string& axis, const std::vector<RangeStrides>& strides, double alpha,
                            double beta, std::vector<LaunchParam>* params, std::string* what) {
  const bool has_bias = k.inputs.size() > ops::kFusedBiasInput && k.inputs[ops::kFusedBiasInput].dtype != DType::undefined;
  // The fields that differ from the defaults (alpha = beta = 1, no bias).
  if (alpha != 1.0) params->push_back({"epilogue.alpha", float_literal(alpha)});
  if (has_bias && beta != 1.0) params->push_back({"epilogue.beta", float_literal(beta)});
  if (has_bias) params->push_back({"epilogue.bias", ctx.ptr(k.inputs[ops::kFusedBiasInput], true)});
  const int64_t total = k.ranges.back().end;
  const char* names = axis == "row" ? "image, pixel, channel strides" : "batch, row, column strides";
  std::string ranges;
  *what = has_bias ? " + bias" : "";
  for (std::size_t i = 0; i < k.ranges.size(); ++i) {
    const OutputRange& r = k.ranges[i];
    const TensorView& y = k.outputs.at(i);
    const RangeStrides& s = strides.at(i);
    const ops::EpilogueActivation& act = e.ranges.at(i);
    const bool vector = s.channel == 1 && s.inner % 8 == 0 && s.outer % 8 == 0 && y.offset % 16 == 0 &&
                        r.begin % 8 == 0 && (r.end % 8 == 0 || r.end == total);
    ranges += fmt::format(",\n    mc::gemm::Range<{}, {}, mc::gemm::Act::{}, /*{}*/ {}, {}, {}, {}>", r.begin, r.end,
                          ops::activation_name(act.kind), names, s.outer, s.inner, s.channel,
                          vector ? "/*vector*/ true" : "false");
    params->push_back({fmt::format("epilogue.y[{}]", i), ctx.ptr(y, false)});
    activation_params(act, fmt::format("epilogue.act[{}]", i), params);
    *what += fmt::format("{} [{}, {}){} -> '{}'", i ? "," : "; ranges", r.begin, r.end,
                         act.kind != ops::Activation::none ? std::string(" ") + ops::activation_name(act.kind) : "",
                         y.value);
  }
  return fmt::format("mc::gemm::EpilogueRanges<{}, {}, {}, mc::gemm::ChannelAxis::{}{}>", T, TY,
                     has_bias ? "true" : "false", axis, ranges);
}

std::vector<std::pair<int, Tactic>> arch_variants(const Kernel& k) {
  if (k.arch_tactic.empty()) return {{0, k.tactic}};
  return {k.arch_tactic.begin(), k.arch_tactic.end()};
}

std::string tc_operand_type(const Kernel& k, DType t) {
  if (t == DType::float16) return "__half";
  if (t == DType::bfloat16) return "mc::bf16";
  throw Error("internal: kernel " + k.id + " runs on tensor cores with " + dtype_name(t) + " operands");
}

KernelLaunches tc_launches(const Kernel& k, const EmitContext& ctx, const std::string& comment,
                           const std::function<std::string(const TcTile&)>& decl, const std::vector<LaunchParam>& params,
                           const std::string& simt_comment, const std::function<std::string(const TileConfig&)>& simt_decl,
                           const std::function<std::string(const SmallMTile&)>& small_m_decl) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  // One variant per arch whose tactic differs (one for all when none does); a split-K variant is
  // two launches: the product's partial sums into the workspace, then SplitKReduce.
  KernelLaunches r;
  for (const auto& [sm, tactic] : arch_variants(k)) {
    const std::string on = sm > 0 ? " (sm_" + std::to_string(sm) + ")" : "";
    if (const TileConfig* simt = std::get_if<TileConfig>(&tactic)) {
      if (!simt_decl) throw Error("internal: kernel " + k.id + " has a SIMT variant and no SIMT template");
      r.launches.push_back(Launch{simt_comment + ", SIMT tile " + simt->name() + on, simt_decl(*simt), params, sm});
      continue;
    }
    if (const SmallMTile* sm_tile = std::get_if<SmallMTile>(&tactic)) {
      if (!small_m_decl) throw Error("internal: kernel " + k.id + " has a small-M variant and no small-M template");
      // Split-K: the partial sums in the workspace, the tickets in the zeroed scratch (one launch;
      // the tiles' splits add in split order and the last runs the epilogue).
      std::vector<LaunchParam> p = params;
      std::string split;
      if (sm_tile->split_k > 1) {
        if (k.workspace.dtype != DType::float32) throw Error("internal: kernel " + k.id + " splits K without a workspace");
        if (k.zeroed.dtype != DType::uint32) throw Error("internal: kernel " + k.id + " splits K without tickets");
        p.push_back({"partial", ctx.ptr(k.workspace, false)});
        p.push_back({"tickets", ctx.ptr(k.zeroed, false)});
        split = fmt::format("; each tile's {} splits add their partial sums in order, the last runs the epilogue",
                            sm_tile->split_k);
      }
      r.launches.push_back(
          Launch{comment + ", " + sm_tile->name() + on + split, small_m_decl(*sm_tile), p, sm, sm_tile->smem_bytes(), 1});
      if (std::find(r.includes.begin(), r.includes.end(), "gemm_small_m.cuh") == r.includes.end()) {
        r.includes.push_back("gemm_small_m.cuh");
      }
      continue;
    }
    const TcTile t = tc_tile_of(k, tactic);
    const std::string type = decl(t);
    std::vector<LaunchParam> p = params;
    if (t.split_k > 1) {
      if (k.workspace.dtype != DType::float32) throw Error("internal: kernel " + k.id + " splits K without a workspace");
      p.push_back({"partial", ctx.ptr(k.workspace, false)});
    }
    Launch main{comment + ", tile " + t.name() + on, type, p, sm, t.smem_bytes(), 1};
    r.launches.push_back(main);
    if (t.split_k > 1) {
      r.launches.push_back(Launch{fmt::format("the {} partial sums of {} added in order, then the epilogue{}", t.split_k,
                                              k.id, on),
                                  "mc::tc::SplitKReduce<" + type + ">", p, sm, 0});
    }
  }
  return r;
}

std::string tc_tile_text(const TcTile& t) {
  return fmt::format("mc::tc::Tile<{}, {}, {}, {}, {}, {}, {}, {}>", t.bm, t.bn, t.bk, t.warps_m, t.warps_n,
                     t.async ? "true" : "false", t.stages, t.split_k);
}

// ---- the family --------------------------------------------------------------------------------

namespace {

std::string ints_text(const std::vector<int64_t>& v) { return fmt::format("mc::gemm::Ints<{}>", fmt::join(v, ", ")); }


/// The element type the epilogue's operands (C / bias, residual) are read as: theirs, else Y's.
std::string epilogue_type(const Kernel& k, const EmitContext& ctx) {
  for (std::size_t i = 2; i < k.inputs.size() && i <= static_cast<std::size_t>(ops::kFusedResidualInput); ++i) {
    if (k.inputs[i].dtype != DType::undefined) return ctx.ctype(k.inputs[i].dtype);
  }
  return ctx.ctype(k.outputs[0].dtype);
}

KernelLaunches emit_product(const Kernel& k, const EmitContext& ctx);

/// The row pitch of a view of dense rows over its last dim (fuse_row_norm took only such views).
int64_t row_pitch(const Kernel& k, const TensorView& v) {
  const std::size_t r = v.shape.size();
  if (r == 0 || v.strides.back() != 1) throw Error("internal: kernel " + k.id + ": '" + v.value + "' is not rows");
  return r >= 2 ? v.strides[r - 2] : v.shape[0];
}

/// A product with a row norm (Kernel::row_norm, schedule/fuse_row_norm.cpp): each of its launches
/// wrapped in mc::resnorm::PanelNorm (templates/residual_norm.cuh): the product's params under
/// `product.`, the norm's under `norm.` (X its output 0, Y output 1), the panel tickets after the
/// product's own in the zeroed scratch (row_norm_ticket_offset).
KernelLaunches with_row_norm(const Kernel& k, const EmitContext& ctx, const GemmLowering& g, KernelLaunches r) {
  const TensorView &x = k.outputs.at(0), &y = k.outputs.at(1), &gamma = k.inputs.at(kRowNormGammaInput);
  const bool has_beta = k.inputs.size() > kRowNormBetaInput && k.inputs[kRowNormBetaInput].dtype != DType::undefined;
  const int64_t N = x.shape.back(), ld_x = row_pitch(k, x), ld_y = row_pitch(k, y);
  if (g.N != N || g.y.row != ld_x || g.y.col != 1) {
    throw Error("internal: kernel " + k.id + ": the row norm's rows are not the product's (N " + std::to_string(g.N) +
                ", Y rows " + std::to_string(g.y.row) + " apart)");
  }
  if (k.zeroed.dtype != DType::uint32) throw Error("internal: kernel " + k.id + " has a row norm without tickets");
  const std::string norm = fmt::format(
      "{}, mc::resnorm::Rows<{}, {}, /*fresh*/ true>, mc::resnorm::Cols<{}>, {}, mc::resnorm::Rows<{}, {}>", N,
      ctx.ctype(x.dtype), ld_x, ctx.ctype(gamma.dtype),
      has_beta ? "mc::resnorm::Cols<" + ctx.ctype(k.inputs[kRowNormBetaInput].dtype) + ">" : "mc::resnorm::NoCols",
      ctx.ctype(y.dtype), ld_y);
  for (Launch& l : r.launches) {
    const Tactic& tactic = l.min_sm > 0 ? k.arch_tactic.at(l.min_sm) : k.tactic;
    const int64_t panels = row_norm_panels(tactic, g.batch_count(), g.M);
    if (panels == 0) throw Error("internal: kernel " + k.id + " has a row norm on a tactic without row panels");
    l.type = "mc::resnorm::PanelNorm<" + l.type + ",\n    " + norm + ">";
    for (LaunchParam& p : l.params) p.field = "product." + p.field;
    l.params.push_back({"norm.x", ctx.ptr(x, true)});
    l.params.push_back({"norm.gamma", ctx.ptr(gamma, true)});
    if (has_beta) l.params.push_back({"norm.beta", ctx.ptr(k.inputs[kRowNormBetaInput], true)});
    l.params.push_back({"norm.y", ctx.ptr(y, false)});
    if (k.row_norm.epsilon != 1e-5f) l.params.push_back({"norm.epsilon", float_literal(k.row_norm.epsilon)});
    l.params.push_back({"tickets", fmt::format("{} + {}", ctx.ptr(k.zeroed, false),
                                               row_norm_ticket_offset(tactic, g.batch_count(), g.M, g.N) / 4)});
    l.comment += fmt::format("; then LayerNormalization {} over its {} rows of {} by the last block of each of its {} "
                             "row panels",
                             fmt::join(k.row_norm.nodes, ", "), x.numel() / N, N, panels);
  }
  if (std::find(r.includes.begin(), r.includes.end(), "residual_norm.cuh") == r.includes.end()) {
    r.includes.push_back("residual_norm.cuh");
  }
  return r;
}

KernelLaunches emit_gemm(const Kernel& k, const EmitContext& ctx) {
  KernelLaunches r = emit_product(k, ctx);
  if (!k.row_norm.active) return r;
  return with_row_norm(k, ctx, plan_of<GemmPlan>(k).gemm, std::move(r));
}

KernelLaunches emit_product(const Kernel& k, const EmitContext& ctx) {
  const GemmPlan& plan = plan_of<GemmPlan>(k);
  const GemmLowering& g = plan.gemm;
  const TensorView& vy = k.outputs[0];
  // The small-M engine is tensor cores too (its arch variants may be tc::Gemm tiles).
  const bool tc = k.engine == Engine::tensor_core || k.engine == Engine::small_m;
  // The tensor-core epilogues (mma.sync's and the Hopper engine's) read C / bias and residual as theirs.
  const std::string T = tc || k.engine == Engine::hopper ? epilogue_type(k, ctx) : ctx.ctype(vy.dtype), Acc = acc_type(vy.dtype);
  if (g.kind == GemmLowering::Kind::strided_sum) {
    const std::string type = fmt::format(
        "mc::gemm::StridedSum<{}, {}, mc::gemm::StridedIndex<{}, {}>,\n    mc::gemm::StridedIndex<{}, {}>>", T, Acc,
        ints_text(g.out_dims), ints_text(g.out_strides), ints_text(g.sum_dims), ints_text(g.sum_strides));
    return linear_launch(k, fmt::format("{} '{}' {}, strided sum", k.op.type, k.op.name, g.what), type,
                         {{"X", ctx.ptr(k.inputs[0], true)}, {"Y", ctx.ptr(vy, false)}});
  }
  const bool ranged = !k.ranges.empty();  // horizontally fused: the epilogue's outputs, no Y
  std::vector<LaunchParam> params = {{"A", ctx.ptr(k.inputs[g.a_input], true)}, {"B", ctx.ptr(k.inputs[g.b_input], true)}};
  if (!ranged) params.push_back({"Y", ctx.ptr(vy, false)});
  // fold_row_maps: A's rows gathered, Y's scattered through int32 tables (tc::Gemm and smallm::Gemm).
  const RowMaps& rm = k.row_maps;
  if (rm.active() && !tc) {
    throw Error("internal: kernel " + k.id + " has row tables but runs on the " + engine_name(k.engine) + " engine");
  }
  if (rm.gather_a) params.push_back({"a_rows", ctx.ptr(k.inputs.at(kRowTableAInput), true)});
  if (rm.scatter_y) params.push_back({"y_rows", ctx.ptr(k.inputs.at(kRowTableYInput), true)});
  const std::string a_strides = rm.gather_a ? "mc::gemm::RowMapped<" + strides_text(g.a) + ">" : strides_text(g.a);
  const std::string y_strides = rm.scatter_y ? "mc::gemm::RowMapped<" + strides_text(g.y) + ">" : y_text(g);
  std::string epilogue, fused;
  if (ranged) {
    std::vector<RangeStrides> strides;  // one batch dim at most (lower_gemm): the innermost
    for (const MatrixStrides& y : g.range_y) strides.push_back({y.batch[2], y.row, y.col});
    epilogue = ranged_epilogue(k, ctx, plan.epilogue, epilogue_type(k, ctx), ctx.ctype(vy.dtype), "column", strides, g.alpha, g.beta,
                               &params, &fused);
  } else if (plan.epilogue.fused) {
    epilogue = fused_epilogue(k, ctx, plan.epilogue, T, g.c, g.has_c, g.alpha, g.beta, &params, &fused);
  } else if (g.has_c || g.alpha != 1.0) {
    epilogue = fmt::format("mc::gemm::EpilogueLinear<{}, {}, {}>", T, strides_text(g.c), g.has_c ? "true" : "false");
    // The fields that differ from the defaults (alpha = beta = 1, no C).
    if (g.alpha != 1.0) params.push_back({"epilogue.alpha", float_literal(g.alpha)});
    if (g.has_c && g.beta != 1.0) params.push_back({"epilogue.beta", float_literal(g.beta)});
    if (g.has_c) params.push_back({"epilogue.C", ctx.ptr(k.inputs[g.c_input], true)});
  } else {
    epilogue = "mc::gemm::EpilogueIdentity";
  }
  // The SIMT template's instantiation for a tile (the SIMT engine, or a tensor-core kernel's SIMT
  // variant for an arch without tensor cores for its operands).
  auto simt_type = [&](const TileConfig& tile) {
    return fmt::format(
        "mc::gemm::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
        "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
        "    mc::gemm::Tile<{}, {}, {}, {}, {}>, {}>",
        ctx.ctype(vy.dtype), Acc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a),
        strides_text(g.b), y_text(g), tile.bm, tile.bn, tile.bk, tile.tm, tile.tn, epilogue);
  };
  if (k.engine == Engine::hopper) {
    const std::string what = fmt::format("{} '{}' {}{}", k.op.type, k.op.name, g.what, fused);
    return hopper_gemm_launches(k, ctx, g, epilogue, params, what);
  }
  if (tc) {
    const std::string TY = ctx.ctype(vy.dtype), TAB = tc_operand_type(k, k.inputs[g.a_input].dtype);
    auto decl = [&](const TcTile& t) {
      const std::string TAcc = t.fp16_accumulate ? "__half" : "float";
      return fmt::format(
          "mc::tc::Gemm<{}, {}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
          "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
          "    {}, {}>",
          TAB, TY, TAcc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, a_strides, strides_text(g.b),
          y_strides, tc_tile_text(t), epilogue);
    };
    // The small-M kernel's instantiation (templates/gemm_small_m.cuh): tc::Gemm's shape, strides and
    // epilogue, its own tile.
    auto small_m_decl = [&](const SmallMTile& t) {
      return fmt::format(
          "mc::smallm::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
          "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
          "    mc::smallm::Tile<{}, {}, {}, {}, {}, {}, {}, {}>, {}>",
          TAB, TY, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, a_strides, strides_text(g.b), y_strides,
          t.bm, t.bn, t.bk, t.warps_m, t.warps_n, t.warps_k, t.stages, t.split_k, epilogue);
    };
    const std::string what = fmt::format("{} '{}' {}{}", k.op.type, k.op.name, g.what, fused);
    return tc_launches(k, ctx, what + ", tensor cores", decl, params, what, simt_type, small_m_decl);
  }
  if (k.engine == Engine::gemv) {
    const GemvTactic t = gemv_of(k);
    const std::string type = fmt::format(
        "mc::gemv::Gemv<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
        "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
        "    mc::gemv::Config<{}, {}>, {}>",
        T, Acc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a), strides_text(g.b),
        strides_text(g.y), t.warps, t.k_split, epilogue);
    return linear_launch(k, fmt::format("{} '{}' {}{}, GEMV {} warps K split {}", k.op.type, k.op.name, g.what, fused,
                                        t.warps, t.k_split),
                         type, std::move(params));
  }
  const TileConfig tile = tile_of(k);
  return linear_launch(k, fmt::format("{} '{}' {}{}, SIMT tile {}", k.op.type, k.op.name, g.what, fused, tile.name()),
                       simt_type(tile), std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(gemm_family)({"gemm", {"gemm.cuh", "conv.cuh", "tensor_core.cuh", "gemv.cuh"}, emit_gemm});

}  // namespace modelc::linear

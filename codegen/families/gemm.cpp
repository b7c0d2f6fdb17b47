// codegen/families/gemm.cpp — the gemm family: Gemm, MatMul and Einsum as one batched strided
// GEMM (templates/gemm.cuh, templates/tensor_core.cuh), one-operand Einsum as a strided sum; plus
// the printing helpers the conv and pool families share (codegen/families/linear.h). The GEMM
// lowering and the tactic are the schedule's (schedule/linear.h, schedule/tactics.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "codegen/families/linear.h"
#include "ops/fused.h"
#include "support/error.h"

namespace modelc::linear {

// ---- shared helpers ----------------------------------------------------------------------------

static std::string strides_text(const MatrixStrides& s) {
  return fmt::format("mc::gemm::Strides<{}, {}, {}, {}, {}>", s.batch[0], s.batch[1], s.batch[2], s.row, s.col);
}

std::string acc_type(DType t) {
  switch (t) {
    case DType::float32:
    case DType::float16:
    case DType::bfloat16: return "float";
    default: return "int64_t";
  }
}

std::string comment_safe(std::string s) {
  // A node name is any string: a newline would end the // comment, a trailing backslash continue it.
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') c = '_';
  }
  return s;
}

Emitted emit_instance(const Kernel& k, const std::string& comment_text, const std::string& type,
                      const std::string& decl, const std::vector<std::string>& params) {
  const std::string comment = comment_safe(comment_text);
  Emitted e;
  if (k.outputs.empty() || k.outputs[0].numel() == 0) {
    e.launch = "// " + comment + ": empty output, nothing to run\n";
    return e;
  }
  e.declarations = fmt::format("// {}\nusing {} = {};\n", comment, type, decl);
  // The emitter puts its own comment (node, types, buffers, tactic, note) above the launch.
  e.launch = fmt::format("MC_LAUNCH(mc::gemm::kernel<{0}>, {0}::grid(), {0}::block(), 0, {0}::Params{{{1}}});\n", type,
                         fmt::join(params, ", "));
  return e;
}

std::string fused_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, const MatrixStrides& bias,
                           bool has_bias, double alpha, double beta, std::string* params, std::string* what) {
  const Node& n = *k.node;
  const ops::EpilogueActivation act = ops::activation_of_fused(n);
  const bool has_residual = k.inputs.size() > ops::kFusedResidualInput &&
                            k.inputs[ops::kFusedResidualInput].dtype != DType::undefined;
  std::string residual = "mc::gemm::Residual::none";
  if (has_residual) {
    const TensorView& r = k.inputs[ops::kFusedResidualInput];
    const TensorView& y = k.outputs.at(0);
    if (r.shape != y.shape || r.strides != y.strides) {
      throw Error("internal: kernel " + k.id + ": the residual '" + r.value + "' is laid out unlike the output");
    }
    const std::string pos = n.attr_string("residual_position", "");
    if (pos != "before_activation" && pos != "after_activation") {
      throw n.error("attribute 'residual_position' is '" + pos + "', expected before_activation or after_activation");
    }
    residual = "mc::gemm::Residual::" + pos;
  }
  const std::string act_name = ops::activation_name(act.kind);
  *what = std::string(has_bias ? " + bias" : "") + (act.kind != ops::Activation::none ? " + " + act_name : "") +
          (has_residual ? " + residual (" + n.attr_string("residual_position", "") + ")" : "");
  *params = fmt::format("{{{}, {}, {}, {}, {{{}, {}, {}, {}}}}}", float_literal(alpha), float_literal(beta),
                        has_bias ? ctx.ptr(k.inputs[ops::kFusedBiasInput], true) : "nullptr",
                        has_residual ? ctx.ptr(k.inputs[ops::kFusedResidualInput], true) : "nullptr",
                        float_literal(act.alpha), float_literal(act.beta),
                        act.min ? float_literal(*act.min) : "-INFINITY", act.max ? float_literal(*act.max) : "INFINITY");
  return fmt::format("mc::gemm::EpilogueFused<{}, {}, {}, mc::gemm::Act::{}, {}>", T, strides_text(bias),
                     has_bias ? "true" : "false", act_name, residual);
}

Emitted emit_tc_instance(const Kernel& k, const std::string& comment_text, const std::string& type,
                         const std::function<std::string(const TcTile&)>& decl, const std::vector<std::string>& params) {
  const std::string comment = comment_safe(comment_text);
  Emitted e;
  if (k.outputs.empty() || k.outputs[0].numel() == 0) {
    e.launch = "// " + comment + ": empty output, nothing to run\n";
    return e;
  }
  auto launch = [&](const std::string& t) {
    return fmt::format("MC_LAUNCH(mc::tc::kernel<{0}>, {0}::grid(), {0}::block(), 0, {0}::Params{{{1}}});\n", t,
                       fmt::join(params, ", "));
  };
  if (k.arch_tactic.empty()) {
    e.declarations = fmt::format("// {}\nusing {} = {};\n", comment, type, decl(tc_tile_of(k, k.tactic)));
    e.launch = launch(type);
    return e;
  }
  // One instantiation per arch (identical ones share their text through the emitter's dedup only
  // when the names match, so each arch names its own).
  e.declarations = "// " + comment + "\n";
  std::vector<std::pair<int, std::string>> arms;  // (sm, type), ascending
  for (const auto& [sm, tactic] : k.arch_tactic) {
    const std::string t = fmt::format("{}_sm{}", type, sm);
    e.declarations += fmt::format("using {} = {};\n", t, decl(tc_tile_of(k, tactic)));
    arms.emplace_back(sm, t);
  }
  // The newest planned arch not above the device's; the oldest below all of them.
  for (std::size_t i = arms.size(); i-- > 0;) {
    if (i > 0) {
      e.launch += fmt::format("{}if (mc_bindings.sm >= {}) {{\n{}", i + 1 == arms.size() ? "" : "} else ", arms[i].first,
                              launch(arms[i].second));
    } else {
      e.launch += "} else {\n" + launch(arms[i].second) + "}\n";
    }
  }
  return e;
}

// ---- the family --------------------------------------------------------------------------------

namespace {

std::string ints_text(const std::vector<int64_t>& v) { return fmt::format("mc::gemm::Ints<{}>", fmt::join(v, ", ")); }

/// The element type the epilogue's operands (C / bias, residual) are read as: theirs, else Y's.
std::string epilogue_type(const Kernel& k, const EmitContext& ctx) {
  for (std::size_t i = 2; i < k.inputs.size(); ++i) {
    if (k.inputs[i].dtype != DType::undefined) return ctx.ctype(k.inputs[i].dtype);
  }
  return ctx.ctype(k.outputs[0].dtype);
}

Emitted emit_gemm(const Kernel& k, const EmitContext& ctx) {
  const GemmLowering g = lower_gemm(k);
  const Node& n = *k.node;
  const TensorView& vy = k.outputs[0];
  const bool tc = k.engine == "tensor_core";
  const std::string T = tc ? epilogue_type(k, ctx) : ctx.ctype(vy.dtype), Acc = acc_type(vy.dtype);
  if (g.kind == GemmLowering::Kind::strided_sum) {
    const std::string decl = fmt::format(
        "mc::gemm::StridedSum<{}, {}, mc::gemm::StridedIndex<{}, {}>,\n    mc::gemm::StridedIndex<{}, {}>>", T, Acc,
        ints_text(g.out_dims), ints_text(g.out_strides), ints_text(g.sum_dims), ints_text(g.sum_strides));
    return emit_instance(k, fmt::format("{}: {} '{}' {}, strided sum", k.id, n.op(), n.name(), g.what), k.id + "_sum",
                         decl, {ctx.ptr(k.inputs[0], true), ctx.ptr(vy, false)});
  }
  std::string epilogue, epi_params = "{}", fused;
  if (is_fused(n)) {
    epilogue = fused_epilogue(k, ctx, T, g.c, g.has_c, g.alpha, g.beta, &epi_params, &fused);
  } else if (g.has_c || g.alpha != 1.0) {
    epilogue = fmt::format("mc::gemm::EpilogueLinear<{}, {}, {}>", T, strides_text(g.c), g.has_c ? "true" : "false");
    epi_params = fmt::format("{{{}, {}, {}}}", float_literal(g.alpha), float_literal(g.beta),
                             g.has_c ? ctx.ptr(k.inputs[g.c_input], true) : "nullptr");
  } else {
    epilogue = "mc::gemm::EpilogueIdentity";
  }
  if (tc) {
    const std::string TY = ctx.ctype(vy.dtype);
    auto decl = [&](const TcTile& t) {
      const std::string TAcc = t.fp16_accumulate ? "__half" : "float";
      return fmt::format(
          "mc::tc::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
          "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
          "    mc::tc::Tile<{}, {}, {}, {}, {}, {}>, {}>",
          TY, TAcc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a), strides_text(g.b),
          strides_text(g.y), t.bm, t.bn, t.bk, t.warps_m, t.warps_n, t.async ? "true" : "false", epilogue);
    };
    return emit_tc_instance(
        k, fmt::format("{}: {} '{}' {}{}, tensor cores, tile {}", k.id, n.op(), n.name(), g.what, fused,
                       tc_tile_of(k, k.tactic).name()),
        k.id + "_tc", decl,
        {ctx.ptr(k.inputs[g.a_input], true), ctx.ptr(k.inputs[g.b_input], true), ctx.ptr(vy, false), epi_params});
  }
  const TileConfig tile = tile_of(k);
  const std::string decl = fmt::format(
      "mc::gemm::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
      "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
      "    mc::gemm::Tile<{}, {}, {}, {}, {}>, {}>",
      T, Acc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a), strides_text(g.b),
      strides_text(g.y), tile.bm, tile.bn, tile.bk, tile.tm, tile.tn, epilogue);
  return emit_instance(k, fmt::format("{}: {} '{}' {}{}, SIMT tile {}", k.id, n.op(), n.name(), g.what, fused, tile.name()),
                       k.id + "_gemm", decl,
                       {ctx.ptr(k.inputs[g.a_input], true), ctx.ptr(k.inputs[g.b_input], true), ctx.ptr(vy, false),
                        epi_params});
}

}  // namespace

MODELC_REGISTER_FAMILY(gemm_family)({"gemm", {"gemm.cuh", "conv.cuh", "tensor_core.cuh"}, emit_gemm});

}  // namespace modelc::linear

// compiler/schedule/tactics_int8.cpp — the tactic rules of the INT8 families (see schedule/int8.h).
#include <fmt/format.h>

#include <algorithm>

#include "ops/quantize.h"
#include "ops/registry.h"
#include "schedule/cost_model.h"
#include "schedule/hopper.h"
#include "schedule/int8.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "schedule/linear_plans.h"
#include "schedule/tactics.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

[[noreturn]] void internal(const Kernel& k, const std::string& what) {
  throw Error("internal: INT8 kernel " + k.id + " (" + k.family_name() + (k.source.node ? " '" + k.source.node->name() + "'" : "") + "): " + what);
}

std::string int8_note(const Kernel& k) {
  const ops::Int8Epilogue e = ops::int8_epilogue(*k.source.node);
  std::string s = fmt::format("x_scale {:.4g}", e.x_scale);
  if (e.runtime_zero_point) s += ", X's zero point read at run time";
  if (e.x_zero_point != 0) s += fmt::format(", zero point {}", e.x_zero_point);
  if (e.quantized()) {
    s += fmt::format("; output {} y_scale {:.4g}", dtype_name(e.out), e.y_scale);
  } else if (e.raw()) {
    s += "; output the INT32 accumulators";
  } else {
    s += fmt::format("; output {}", dtype_name(e.out));
  }
  return s;
}

}  // namespace

Int8Gemm int8_gemm(const Kernel& k) {
  if (k.inputs.size() < 2 || k.outputs.empty()) internal(k, "no A, B or Y view");
  const TensorView &a = k.inputs[0], &b = k.inputs[1], &y = k.outputs[0];
  Int8Gemm g;
  if (b.shape.size() != 2) internal(k, "B is not [N, K]");
  g.N = b.shape[0];
  g.K = b.shape[1];
  g.M = g.K > 0 ? a.numel() / g.K : 0;
  if (!a.dense() || !y.dense()) internal(k, "A and Y must be dense (every leading dim of A a row)");
  g.a_row = g.K;
  g.y_row = g.N;
  return g;
}

void conv_int8_tactic(Kernel& k, const std::vector<Target>& targets) {
  const Int8ConvPlan& plan = plan_of<Int8ConvPlan>(k);
  const ConvGeometry& g = plan.geometry;
  check_size(k);
  k.arch_tactic.clear();
  const TensorView &x = k.inputs[0], &y = k.outputs[0];
  if (g.G != 1) internal(k, "groups = " + std::to_string(g.G));
  const int64_t cp = channels_last_pitch(x);
  if (cp == 0 || channels_last_pitch(y) == 0) internal(k, "X and Y must be channels-last (the layout stage makes them)");
  const TcConvDepth& d = plan.depth;
  if (!d.compact && cp % 16 != 0) internal(k, fmt::format("X's channel pitch {} is not a multiple of 16", cp));
  if (!aligned16(x) || !aligned16(k.inputs[1]) || !aligned16(y)) internal(k, "a buffer not 16-byte aligned");
  k.fallback_reason.clear();
  // --arch sm_90a: the Hopper engine's s8 wgmma where hopper::Conv takes the convolution.
  std::string not_hopper;
  if (std::any_of(targets.begin(), targets.end(), [](const Target& t) { return t.hopper; })) {
    not_hopper = hopper_int8_conv_fallback(k, plan, targets);
    if (not_hopper.empty()) {
      std::string why;
      k.tactic = choose_hopper_conv_tile(g, plan.x_pitch, kernel_bytes(k), targets.front(), &why, true);
      k.engine = Engine::hopper;
      k.tuning_signature.clear();
      k.tune_candidates.clear();
      k.workspace_bytes = 0;
      k.note = fmt::format("{}: INT8 implicit GEMM (wgmma s8), M {} (pixels) N {} (channels) K {} ({} taps x pitch {}); {}; {}",
                           g.str(), g.N * g.out_pixels(), g.M, plan.depth.K, plan.depth.taps, plan.x_pitch, int8_note(k), why);
      return;
    }
  }
  k.engine = Engine::tensor_core;
  const int64_t pixels = g.N * g.out_pixels();
  TcProblem p{1, pixels, g.M, d.K, kernel_bytes(k)};
  p.int8 = true;
  const std::string why = plan_tc_archs(k, targets, p, DType::int8, {});  // int8: tensor cores on every target
  const std::string depth = d.compact ? fmt::format("compact: {} taps x {} channels, W rows of {}", d.taps, g.C, d.row)
                                      : fmt::format("{} taps x pitch {}", d.taps, d.pitch);
  k.note = fmt::format("{}: INT8 implicit GEMM on tensor cores (mma.sync s8), M {} (pixels) N {} (channels) K {} ({}); {}; {}",
                       g.str(), pixels, g.M, d.K, depth, int8_note(k), why);
  if (!not_hopper.empty()) k.note += " (mma.sync, not the Hopper engine: " + not_hopper + ")";
}

void gemm_int8_tactic(Kernel& k, const std::vector<Target>& targets) {
  const Int8Gemm& g = plan_of<Int8GemmPlan>(k).gemm;
  check_size(k);
  k.arch_tactic.clear();
  if (!aligned16(k.inputs[0]) || !aligned16(k.inputs[1]) || !aligned16(k.outputs[0])) internal(k, "a buffer not 16-byte aligned");
  k.fallback_reason.clear();
  // --arch sm_90a: the Hopper engine's s8 wgmma where hopper::Gemm takes the product.
  std::string not_hopper;
  if (std::any_of(targets.begin(), targets.end(), [](const Target& t) { return t.hopper; })) {
    not_hopper = hopper_int8_gemm_fallback(k, g, targets);
    if (not_hopper.empty()) {
      std::string why;
      k.tactic = choose_hopper_tile(1, g.M, g.N, g.K, kernel_bytes(k), targets.front(), &why, true);
      k.engine = Engine::hopper;
      k.tuning_signature.clear();
      k.tune_candidates.clear();
      k.workspace_bytes = 0;
      k.note = fmt::format("INT8 GEMM (wgmma s8), M {} N {} K {} (B stored [N, K]); {}; {}", g.M, g.N, g.K, int8_note(k), why);
      return;
    }
  }
  k.engine = Engine::tensor_core;
  TcProblem p{1, g.M, g.N, g.K, kernel_bytes(k)};
  p.int8 = true;
  const std::string why = plan_tc_archs(k, targets, p, DType::int8, {});  // int8: tensor cores on every target
  for (const auto& [sm, tactic] : k.arch_tactic) check_grid(k, TileConfig{tc_tile_of(k, tactic).bm, 64, 8, 4, 8}, g.M);
  check_grid(k, TileConfig{tc_tile_of(k, k.tactic).bm, 64, 8, 4, 8}, g.M);
  k.note = fmt::format("INT8 GEMM on tensor cores (mma.sync s8), M {} N {} K {} (B stored [N, K]); {}; {}", g.M, g.N, g.K,
                       int8_note(k), why);
  if (!not_hopper.empty()) k.note += " (mma.sync, not the Hopper engine: " + not_hopper + ")";
}

QLinearPlan qlinear_plan(const Kernel& k) {
  if (!k.source.node) internal(k, "no node");
  const Node& n = *k.source.node;
  const bool qlinear = n.op() == "QLinearConv" || n.op() == "QLinearMatMul";
  const int wi = qlinear ? 3 : 1;
  QLinearPlan p;
  if (n.op() == "QLinearConv" || n.op() == "ConvInteger") {
    p.conv = ops::integer_conv_geometry(n, 0, wi).padded3();
  } else {
    p.matmul = ops::int_matmul_dims(n, n.input(0).shape(), n.input(wi).shape(), "A", "B");
  }
  return p;
}

void qlinear_tactic(Kernel& k, const std::vector<Target>&) {
  check_size(k);
  k.arch_tactic.clear();
  k.tactic = DirectTactic{128};
  k.engine = Engine::simt;
  const Node& n = *k.source.node;
  const bool conv = n.op() == "QLinearConv" || n.op() == "ConvInteger";
  const int w = n.op() == "QLinearConv" || n.op() == "QLinearMatMul" ? 3 : 1;
  if (!n.has_input(w) || !n.input(w).is_constant()) {
    k.fallback_reason = "weights read at run time";
  } else if (conv && n.attr_int("group", 1) != 1) {
    k.fallback_reason = fmt::format("groups = {}", n.attr_int("group", 1));
  } else {
    k.fallback_reason = "not an INT8 tensor-core form (a zero point read at run time where a scale is, W minus its "
                        "zero point beyond int8, or a B that is not 2-D)";
  }
  k.note = n.op() + ": direct, one thread per output, exact integer accumulation (SIMT: " + k.fallback_reason + ")";
}

}  // namespace modelc::linear

namespace modelc {

ops::QuantAxis quantize_plan(const Kernel& k) {
  if (!k.source.node) throw Error("internal: quantize kernel " + k.id + " has no node");
  const Node& n = *k.source.node;
  if (n.op() == "DynamicQuantizeLinear") return {};
  return ops::quant_axis(n, n.input(0).shape(), n.input(1).shape());
}

void quantize_tactic(Kernel& k, const std::vector<Target>&) {
  if (k.outputs.empty()) return;
  const int64_t n = k.outputs[0].numel();
  k.tactic = GridStrideTactic{256, n <= 0 ? 0 : std::min<int64_t>((n + 255) / 256, 4096)};
  const std::string& op = k.source.node ? k.source.node->op() : "";
  if (op == "DynamicQuantizeLinear") {
    k.workspace_bytes = 16;  // the scale (float) and zero point (uint8) the second launch reads
    k.note = "two launches: the range of x (one block: min and max, with 0), its scale and zero point; then the "
             "quantization, grid-stride";
  } else if (op == "DequantizeLinear") {
    k.note = "y = (x - zero point) * scale, grid-stride";
  } else {
    k.note = "y = saturate(round(x / scale) + zero point), the division in FP32, grid-stride";
  }
}

}  // namespace modelc

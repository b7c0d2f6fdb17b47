// compiler/schedule/conv_tiled.cpp — ConvDepthwiseTiled and tc::ConvGrouped as the schedule sees
// them: eligibility, tactics, work (schedule/conv_tiled.h; docs/CONV_KERNELS.md).
#include "schedule/conv_tiled.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "schedule/linear_plans.h"
#include "schedule/tactics.h"

namespace modelc::linear {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool half_storage(DType t) { return t == DType::float16 || t == DType::bfloat16; }

/// Estimates within 2% of each other are ties (as choose_tc_tile's): the earlier candidate, the
/// larger tile, keeps them.
constexpr double kTie = 0.02;

// ---- ConvDepthwiseTiled ---------------------------------------------------------------------------

/// The register budget of a thread's weights, sums and input row, CV (KH KW + RH RW + row pixels):
/// the template's measured instantiations (ptxas 13, sm_80 / sm_90: 7x7 CV 2 r2x4 126-127, 5x5 CV 4
/// r1x2 122, 3x3 CV 8 r2x2 128, stride 2 included) are at most 144 by this count, and none spills.
constexpr int64_t kDepthwiseRegisterBudget = 144;

int64_t input_span(int64_t outputs, int64_t stride, int64_t kernel, int64_t dilation) {
  return (outputs - 1) * stride + (kernel - 1) * dilation + 1;
}

int64_t depthwise_registers(const ConvGeometry& g, int cv, int rh, int rw) {
  const int64_t cols = input_span(rw, g.stride[2], g.kernel[2], g.dilation[2]);
  (void)rh;  // the rows are walked one at a time: one row's pixels in registers
  return cv * (g.kernel[1] * g.kernel[2] + static_cast<int64_t>(rh) * rw + cols);
}

}  // namespace

std::string depthwise_tiled_fallback(const Kernel& k) {
  const DirectConvPlan& p = plan_of<DirectConvPlan>(k);
  const ConvGeometry& g = p.geometry;
  const TensorView &x = k.inputs[0], &w = k.inputs[1], &y = k.outputs[0];
  if (!half_storage(x.dtype) || w.dtype != x.dtype || y.dtype != x.dtype) {
    return x.dtype == DType::float32 ? "FP32 storage"
                                     : fmt::format("{} X, {} W, {} Y", dtype_name(x.dtype), dtype_name(w.dtype),
                                                   dtype_name(y.dtype));
  }
  if (!p.layout.channels_last) return "NCHW layout";
  if (g.M != g.C) return fmt::format("channel multiplier {}", g.M / g.C);
  if (g.in[0] != 1 || g.kernel[0] != 1) return "3-D";
  if (g.kernel[1] > 7 || g.kernel[2] > 7) return fmt::format("window {}x{} above 7x7", g.kernel[1], g.kernel[2]);
  // W [C][KH][KW] (ONNX's [C][1][KH][KW], the same memory as OHWI with one channel a group).
  const std::size_t r = w.strides.size();
  const bool w_rows = r >= 3 && w.strides[r - 1] == 1 && w.strides[0] == g.k_size() && (r == 3 || w.strides[2] == g.kernel[2]);
  if (!w_rows) return "W not [C][KH][KW]";
  if (!aligned16(x)) return "X not 16-byte aligned";
  if (!y.aligned(4)) return "Y's offset not a multiple of 2 channels";
  if (g.C > 65535 * 8 || g.N > 65535) return "grid: channels or batch above its limits";
  if (depthwise_registers(g, 2, 1, 1) > kDepthwiseRegisterBudget) {
    return fmt::format("window {}x{} dilation {} over the register budget", g.kernel[1], g.kernel[2], g.dilation[2]);
  }
  return "";
}

int64_t depthwise_smem_bytes(const ConvGeometry& g, const DepthwiseTactic& t) {
  return input_span(t.th, g.stride[1], g.kernel[1], g.dilation[1]) *
         input_span(t.tw, g.stride[2], g.kernel[2], g.dilation[2]) * (t.cb + 8) * 2;
}

void depthwise_tiled_work(KernelWork& w, const Kernel& k, const DepthwiseTactic& t) {
  const ConvGeometry& g = plan_of<DirectConvPlan>(k).geometry;
  const int64_t th = ceil_div(g.out[1], t.th), tw = ceil_div(g.out[2], t.tw), cb = ceil_div(g.C, t.cb);
  const double taps = static_cast<double>(g.kernel[1] * g.kernel[2]);
  w.engine = Engine::simt;
  w.flops = 2.0 * static_cast<double>(g.N * g.C * g.out[1] * g.out[2]) * taps;
  // The whole tiles and channel blocks run; HFMA2 issues two channels an instruction.
  w.executed_flops =
      2.0 * static_cast<double>(g.N * th * t.th * tw * t.tw * cb * t.cb) * taps / (t.fp16_accumulate ? 2.0 : 1.0);
  w.blocks = th * tw * cb * g.N;
  w.threads = t.threads();
  w.smem_bytes = static_cast<int>(depthwise_smem_bytes(g, t));
  w.regs_per_thread = static_cast<int>(std::clamp<int64_t>(depthwise_registers(g, t.cv, t.rh, t.rw), 32, 255));
  // Each block's input tile with its halo, from L2 into shared memory.
  w.l2_bytes = static_cast<double>(w.blocks) * static_cast<double>(w.smem_bytes) * t.cb / (t.cb + 8);
}

void plan_depthwise_tiled(Kernel& k, const std::vector<Target>& targets) {
  const ConvGeometry& g = plan_of<DirectConvPlan>(k).geometry;
  const int64_t window = std::max(g.kernel[1], g.kernel[2]);
  // CV by the window (the weights' registers): 8 channels (16-byte shared reads) for 3x3, 4 for
  // 5x5, 2 for 7x7; then fewer channels, then fewer outputs a thread, where the count exceeds the
  // budget (stride, dilation). CV must divide Y's alignment (its vector stores).
  int cv = window <= 3 ? 8 : window <= 5 ? 4 : 2;
  int rh = window <= 3 ? 2 : window <= 5 ? 1 : 2, rw = window <= 5 ? 2 : 4;
  while (cv > 2 && !k.outputs[0].aligned(2 * cv)) cv /= 2;
  while (depthwise_registers(g, cv, rh, rw) > kDepthwiseRegisterBudget) {
    if (cv > 2) {
      cv /= 2;
    } else if (rw > 1) {
      rw /= 2;
    } else {
      rh = 1;
    }
  }
  std::map<int, Tactic> per;
  std::string first_why;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    std::optional<DepthwiseTactic> best;
    Estimate best_e;
    // Larger tiles first (ties keep them): 8x8 then 4x8 pixels, 64 then 32 channels.
    for (const auto& [th, tw] : {std::pair{8, 8}, std::pair{4, 8}}) {
      for (int cb : {64, 32}) {
        DepthwiseTactic d{th, tw, cb, cv, rh, rw, t.sm >= 80,
                          t.fp16_accumulate && k.inputs[0].dtype == DType::float16};
        if (th % rh != 0 || tw % rw != 0 || d.threads() % 32 != 0 || d.threads() > 256) continue;
        if (depthwise_smem_bytes(g, d) > t.smem_per_block) continue;
        const Estimate e = estimate(kernel_work(k, d), t);
        if (!best || e.us < best_e.us * (1 - kTie)) {
          best = d;
          best_e = e;
        }
      }
    }
    if (!best) throw k.error(fmt::format("internal: no tiled depthwise tile fits {} bytes of shared memory", t.smem_per_block));
    per[t.sm] = *best;
    if (i == 0) {
      k.tactic = *best;
      first_why = fmt::format("tile {} ({} threads, {} B shared) for sm_{} ({}): estimate {}", best->name(),
                              best->threads(), depthwise_smem_bytes(g, *best), t.sm, t.part, estimate_text(best_e));
    } else if (per[t.sm] != k.tactic) {
      first_why += fmt::format("; sm_{}: {}", t.sm, best->name());
    }
  }
  k.arch_tactic.clear();
  for (const auto& [sm, tactic] : per) {
    if (tactic != k.tactic) k.arch_tactic = per;
  }
  k.note = fmt::format("{}: depthwise, NHWC input tile with its halo in shared memory, weights in registers; {}",
                       g.str(), first_why);
}

// ---- tc::ConvGrouped ------------------------------------------------------------------------------

GroupedShape grouped_shape(const ConvGeometry& g) {
  GroupedShape s;
  const int64_t mg = g.Mg();
  const int64_t gcd8 = mg % 8 == 0 ? 8 : mg % 4 == 0 ? 4 : mg % 2 == 0 ? 2 : 1;
  s.F = 8 / gcd8;
  s.Cs = s.F * g.Cg();
  s.Ms = s.F * mg;
  s.count = ceil_div(g.G, s.F);
  s.taps = g.k_size();
  s.K = s.taps * s.Cs;
  return s;
}

std::string grouped_fallback(const Kernel& k, const ConvGeometry& g) {
  if (g.Cg() < 2) return "one input channel a group";
  if (!k.ranges.empty()) return "horizontally fused";
  const ConvPlan& c = plan_of<ConvPlan>(k);
  if (c.dense || c.x_pitch == 0 || c.y_pitch == 0) return "NCHW layout";
  const int64_t taps = g.k_size();
  if (c.w.pitch != g.Cg() || c.w.row != taps * g.Cg()) {
    return fmt::format("W not stored [M][taps][{}]", g.Cg());
  }
  if (!aligned16(k.inputs[0]) || !aligned16(k.inputs[1]) || !aligned16(k.outputs[0])) return "a buffer not 16-byte aligned";
  if (mixed_epilogue_types(k)) return "bias and residual of different types";
  if (g.N * g.out_pixels() > int64_t{1} << 31) return "over 2^31 output pixels";
  return "";
}

int64_t grouped_smem_bytes(const ConvGeometry& g, const TcTile& t, int64_t x_pitch) {
  const GroupedShape s = grouped_shape(g);
  int64_t touched = 1;  // ConvGrouped::groups_touched
  for (int64_t n0 = 0; n0 < g.M; n0 += t.bn) {
    const int64_t last = std::min(n0 + t.bn, g.M) - 1;
    touched = std::max(touched, last / s.Ms - n0 / s.Ms + 1);
  }
  const bool async = t.async && s.Cs % 8 == 0 && x_pitch % 8 == 0;
  const int64_t stage = (touched * t.bm + t.bn) * (t.bk + 8) * 2;
  const int64_t scratch = int64_t{t.warps_m} * t.warps_n * 16 * (t.bn / t.warps_n + 4) * 4;
  return std::max((async ? t.stages : 1) * stage, scratch);
}

void grouped_work(KernelWork& w, const ConvGeometry& g, const TcTile& t, int64_t x_pitch) {
  const GroupedShape s = grouped_shape(g);
  const int64_t pixels = g.N * g.out_pixels();
  w = tc_gemm_work(1, pixels, g.M, s.K, w.bytes, t);  // executed: the tiles over one super-group's depth
  w.flops = 2.0 * static_cast<double>(pixels * g.M * g.Cg() * s.taps);
  w.smem_bytes = static_cast<int>(grouped_smem_bytes(g, t, x_pitch));
}

void plan_grouped(Kernel& k, const ConvGeometry& g, int64_t x_pitch, const std::vector<Target>& targets,
                  const std::function<TileConfig(const Target&, std::string*)>& simt) {
  const GroupedShape s = grouped_shape(g);
  const int64_t pixels = g.N * g.out_pixels();
  const DType storage = k.inputs[0].dtype;
  // The block tiles weighed, larger first (ties keep the earlier): {BM, BN, warps_m, warps_n}.
  constexpr int kShapes[][4] = {{128, 64, 2, 2}, {64, 64, 2, 2}, {64, 32, 2, 1}, {32, 64, 1, 2}, {32, 32, 1, 2}};
  std::map<int, Tactic> per;
  std::string why;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    std::string line;
    if (!tensor_cores_on(t, storage)) {
      std::string simt_why;
      per[t.sm] = simt(t, &simt_why);
      line = fmt::format("sm_{}: {} (no BF16 MMA below sm_{})", t.sm, simt_why, kBf16TensorCoreMinSm);
    } else {
      std::optional<TcTile> best;
      Estimate best_e;
      for (const auto& shape : kShapes) {
        for (int bk : {32, 16, 64}) {
          if (bk == 64 && s.K < 128) continue;
          for (int stages = 2; stages <= (t.sm >= 80 ? 3 : 2); ++stages) {
            TcTile tile{shape[0], shape[1], bk, shape[2], shape[3], t.sm >= 80, false};
            tile.stages = stages;
            if (ceil_div(pixels, tile.bm) > int64_t{1} << 31 || ceil_div(g.M, tile.bn) > 65535) continue;
            if (grouped_smem_bytes(g, tile, x_pitch) > t.smem_per_block) continue;
            KernelWork w;
            w.bytes = kernel_bytes(k);
            grouped_work(w, g, tile, x_pitch);
            const Estimate e = estimate(w, t);
            if (!best || e.us < best_e.us * (1 - kTie)) {
              best = tile;
              best_e = e;
            }
          }
        }
      }
      if (!best) throw k.error(fmt::format("internal: no grouped tensor-core tile fits {} bytes", t.smem_per_block));
      per[t.sm] = *best;
      line = fmt::format("tile {} for sm_{} ({}): estimate {}", best->name(), t.sm, t.part, estimate_text(best_e));
    }
    if (i == 0) {
      k.tactic = per[t.sm];
      why = line;
    } else if (per[t.sm] != k.tactic) {
      why += "; " + line;
    }
  }
  k.arch_tactic.clear();
  for (const auto& [sm, tactic] : per) {
    if (tactic != k.tactic) k.arch_tactic = per;
  }
  k.engine = Engine::tensor_core;
  k.workspace_bytes = 0;
  k.tune_candidates.clear();
  k.tuning_signature.clear();
  const std::string merged =
      s.F > 1 ? fmt::format(", {} groups merged a super-group ({}/{} of the MMA's work useful)", s.F, 1, s.F) : "";
  k.note = fmt::format("{}: grouped implicit GEMM on tensor cores, M {} (pixels) N {} (channels) K {} ({} taps x {} "
                       "channels a super-group{}); {}",
                       g.str(), pixels, g.M, s.K, s.taps, s.Cs, merged, why);
}

}  // namespace modelc::linear

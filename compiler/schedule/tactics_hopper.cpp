// compiler/schedule/tactics_hopper.cpp — the Hopper engine's tactic rules (schedule/hopper.h).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "schedule/cost_model.h"
#include "schedule/hopper.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tiles choose_hopper_tile weighs, largest first (the tie order): {BM, BN, stages, consumers},
// BK one 128-byte swizzled row a stage (64 FP16 / BF16 elements, 128 INT8). BN is one wgmma's N:
// 64, 128 and 256 are among the shapes the nvcc build has the asm for (scripts/gen_wgmma_ptx.py
// SHAPES). Shared memory (HopperTile::smem_bytes, FP16 and INT8 alike): 179 KB, 163 KB, 131 KB,
// 114 KB, 82 KB.
constexpr int kHopperTiles[][4] = {{128, 256, 3, 2}, {128, 128, 4, 2}, {128, 64, 4, 2}, {64, 128, 4, 1}, {64, 64, 4, 1}};
constexpr int kHopperBk = 64, kHopperBkInt8 = 128;

/// Estimates within 2% of each other are ties (tactics_linear.cpp kEstimateTie: the model does not
/// resolve finer): the larger tile keeps them.
constexpr double kEstimateTie = 0.02;

/// The one stride an operand's batch dims flatten to (hopper::GemmProblem::batch_stride) when they
/// do (its flat()), else nullopt.
std::optional<int64_t> flat_batch_stride(const GemmLowering& g, const MatrixStrides& s) {
  const int64_t b0 = g.batch[0], b1 = g.batch[1], b2 = g.batch[2];
  const int64_t s0 = s.batch[0], s1 = s.batch[1], s2 = s.batch[2];
  const bool flat = (b1 == 1 || b2 == 1 || s1 == s2 * b2) && (b0 == 1 || (b1 == 1 && b2 == 1) || s0 == (b1 > 1 ? s1 * b1 : s2 * b2));
  if (!flat) return std::nullopt;
  return b2 > 1 ? s2 : b1 > 1 ? s1 : s0;
}

/// TMA's rule for a tensor map's byte stride (a row or a batch of 2-byte elements): a multiple of
/// 16 bytes below 2^40.
bool tma_stride(int64_t elements) { return elements >= 0 && (elements * 2) % 16 == 0 && elements * 2 < (int64_t{1} << 40); }

/// The targets' rule of every Hopper kernel: sm_90a alone ("" when it holds).
std::string targets_rule(const std::vector<Target>& targets) {
  if (targets.size() != 1 || !targets.front().hopper) {
    return "the Hopper engine only for --arch sm_90a alone (one plan serves every image of a fat binary)";
  }
  return "";
}

/// The rules hopper::Conv adds for a convolution of geometry g: 2-D, W stored in taps of X's pitch
/// cp (rows of taps x cp), X a whole NHWC tensor at cp, strides up to 8, Y's pitch yp >= M.
std::string conv_rules(const Kernel& k, const ConvGeometry& g, int64_t cp, int64_t w_pitch, int64_t w_row, int64_t yp,
                       int64_t elements16) {
  if (g.kernel[0] != 1 || g.in[0] != 1 || g.out[0] != 1) return "a 3-D convolution";
  const int64_t taps = g.k_size();
  if (cp <= 0 || cp % elements16 != 0) return fmt::format("X's channel pitch {} is not whole 16 bytes (TMA)", cp);
  if (w_pitch != cp || w_row != taps * cp) {
    return fmt::format("W stored in taps of {} (rows of {}), not of X's pitch {}", w_pitch, w_row, cp);
  }
  const TensorView &x = k.inputs[0], &w = k.inputs[1];
  if (x.strides.empty() || x.strides[0] != g.in[1] * g.in[2] * cp) return "X is a part of a wider NHWC buffer (TMA maps it whole)";
  if (w.strides.empty() || w.strides[0] != taps * cp) return "W's rows are not its taps x pitch";
  if (g.stride[1] > 8 || g.stride[2] > 8) return "a stride above 8 (TMA's traversal steps)";
  if (yp < g.M) return fmt::format("Y's channel pitch {} below its {} channels", yp, g.M);
  return "";
}

}  // namespace

std::string hopper_gemm_fallback(const Kernel& k, const GemmLowering& g, const std::vector<Target>& targets) {
  if (std::string r = targets_rule(targets); !r.empty()) return r;
  if (targets.front().fp16_accumulate) return "--fp16-accumulate (the Hopper engine accumulates in FP32)";
  if (k.row_maps.active()) return "rows through a table (fold_row_maps; TMA moves whole boxes)";
  if (g.a.col != 1) return fmt::format("A not K-major (column stride {}): TMA loads A's k contiguous", g.a.col);
  const bool k_major_b = g.b.row == 1, n_major_b = !k_major_b && g.b.col == 1;
  if (!k_major_b && !n_major_b) return fmt::format("B neither K-major nor N-major (strides {}, {})", g.b.row, g.b.col);
  const std::optional<int64_t> ba = flat_batch_stride(g, g.a), bb = flat_batch_stride(g, g.b);
  if (!ba || !bb) return "batch dims that do not flatten to one stride (a TMA map has one batch dim)";
  // Each operand's map: its contiguous dim, then rows (A: M rows of K; B: N rows of K, or K rows of
  // N), then the batch; strides of whole 16 bytes, a row at least as long as its dim.
  const int64_t a_row = g.a.row, b_row = k_major_b ? g.b.col : g.b.row, b_len = k_major_b ? g.K : g.N;
  if (!tma_stride(a_row) || (g.M > 1 && a_row < g.K)) {
    return fmt::format("A's rows {} elements apart (TMA: whole 16 bytes, at least K = {})", a_row, g.K);
  }
  if (!tma_stride(b_row) || ((k_major_b ? g.N : g.K) > 1 && b_row < b_len)) {
    return fmt::format("B's rows {} elements apart (TMA: whole 16 bytes, at least {})", b_row, b_len);
  }
  if (g.batch_count() > 1 && ((*ba != 0 && !tma_stride(*ba)) || (*bb != 0 && !tma_stride(*bb)))) {
    return "a batch stride that is not whole 16 bytes (TMA)";
  }
  if (g.batch_count() * ceil_div(g.M, 64) * ceil_div(g.N, 64) > int64_t{1} << 30) return "more tiles than an int counts";
  (void)k;
  return "";
}

HopperTile choose_hopper_tile(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const Target& t,
                              std::string* why, bool int8) {
  std::optional<HopperTile> best;
  Estimate best_e;
  for (const auto& c : kHopperTiles) {
    const HopperTile tile{c[0], c[1], int8 ? kHopperBkInt8 : kHopperBk, c[2], c[3], int8};
    if (tile.smem_bytes() > t.smem_per_block) continue;
    const Estimate e = estimate(hopper_gemm_work(batch, M, N, K, bytes, tile), t);
    if (!best || e.us < best_e.us * (1 - kEstimateTie)) {
      best = tile;
      best_e = e;
    }
  }
  if (!best) throw Error("internal: no Hopper engine tile fits in " + std::to_string(t.smem_per_block) + " bytes");
  const int64_t tiles = batch * ceil_div(M, best->bm) * ceil_div(N, best->bn);
  if (why) {
    const int64_t blocks = std::min<int64_t>(tiles, t.sm_count);
    *why = fmt::format("Hopper engine (wgmma + TMA), tile {} for sm_90a ({}): {} tile{} on a persistent grid of {} block{}; "
                       "estimate {}",
                       best->name(), t.part, tiles, tiles == 1 ? "" : "s", blocks, blocks == 1 ? "" : "s",
                       estimate_text(best_e));
  }
  return *best;
}

// ---- convolution ------------------------------------------------------------------------------

std::string hopper_conv_fallback(const Kernel& k, const ConvPlan& c, const std::vector<Target>& targets) {
  if (std::string r = targets_rule(targets); !r.empty()) return r;
  if (targets.front().fp16_accumulate) return "--fp16-accumulate (the Hopper engine accumulates in FP32)";
  if (!k.ranges.empty()) return "a horizontally fused convolution (several outputs)";
  if (c.prologue.active()) return "an operand prologue (" + c.prologue.text() + ": tc::Conv's)";
  if (c.depth.compact) return fmt::format("compact K ({} channels: taps x channels, not taps of the pitch)", c.geometry.C);
  return conv_rules(k, c.geometry, c.x_pitch, c.w.pitch, c.w.row, c.y_pitch, 8);
}

std::string hopper_int8_gemm_fallback(const Kernel& k, const Int8Gemm& g, const std::vector<Target>& targets) {
  (void)k;
  if (std::string r = targets_rule(targets); !r.empty()) return r;
  if (g.K % 16 != 0 || g.a_row % 16 != 0) {
    return fmt::format("K {} (A's rows {} bytes apart, B's {}): TMA's rows are whole 16 bytes", g.K, g.a_row, g.K);
  }
  return "";
}

std::string hopper_int8_conv_fallback(const Kernel& k, const Int8ConvPlan& c, const std::vector<Target>& targets) {
  if (std::string r = targets_rule(targets); !r.empty()) return r;
  if (c.depth.compact) return fmt::format("compact K ({} channels: taps x channels, not taps of the pitch)", c.geometry.C);
  if (c.epilogue.x_zero_point != 0 || c.epilogue.runtime_zero_point) {
    return "X's zero point (TMA pads with 0, not the zero point)";
  }
  return conv_rules(k, c.geometry, c.x_pitch, c.depth.pitch, c.depth.row, c.y_pitch, 16);
}

PixelRect hopper_pixel_rect(const ConvGeometry& g, int bm) {
  PixelRect best{bm, 1};
  int64_t best_tiles = -1;
  for (int pw = 1; pw <= bm; pw *= 2) {
    const int ph = bm / pw;
    if (pw * g.stride[2] > 256 || ph * g.stride[1] > 256) continue;
    const int64_t tiles = ceil_div(g.out[1], ph) * ceil_div(g.out[2], pw);
    if (best_tiles < 0 || tiles <= best_tiles) {  // ties: the wider rectangle (longer TMA rows)
      best = PixelRect{ph, pw};
      best_tiles = tiles;
    }
  }
  return best;
}

KernelWork hopper_conv_work(const ConvGeometry& g, int64_t pitch, double bytes, const HopperTile& t) {
  const PixelRect r = hopper_pixel_rect(g, t.bm);
  const int64_t rows = g.N * ceil_div(g.out[1], r.ph) * ceil_div(g.out[2], r.pw) * t.bm;
  const int64_t depth = g.k_size() * ceil_div(pitch, t.bk) * t.bk;
  KernelWork w = hopper_gemm_work(1, rows, g.M, depth, bytes, t);
  w.flops = 2.0 * static_cast<double>(g.N * g.out_pixels() * g.M * g.Cg() * g.k_size());
  return w;
}

HopperTile choose_hopper_conv_tile(const ConvGeometry& g, int64_t pitch, double bytes, const Target& t, std::string* why,
                                   bool int8) {
  std::optional<HopperTile> best;
  Estimate best_e;
  for (const auto& c : kHopperTiles) {
    const HopperTile tile{c[0], c[1], int8 ? kHopperBkInt8 : kHopperBk, c[2], c[3], int8};
    if (tile.smem_bytes() > t.smem_per_block) continue;
    const Estimate e = estimate(hopper_conv_work(g, pitch, bytes, tile), t);
    if (!best || e.us < best_e.us * (1 - kEstimateTie)) {
      best = tile;
      best_e = e;
    }
  }
  if (!best) throw Error("internal: no Hopper engine tile fits in " + std::to_string(t.smem_per_block) + " bytes");
  if (why) {
    const PixelRect r = hopper_pixel_rect(g, best->bm);
    const int64_t tiles = g.N * ceil_div(g.out[1], r.ph) * ceil_div(g.out[2], r.pw) * ceil_div(g.M, best->bn);
    const int64_t blocks = std::min<int64_t>(tiles, t.sm_count);
    *why = fmt::format("Hopper engine (wgmma + TMA), tile {}, {} x {} output pixels a tile, for sm_90a ({}): {} tile{} on a "
                       "persistent grid of {} block{}; estimate {}",
                       best->name(), r.ph, r.pw, t.part, tiles, tiles == 1 ? "" : "s", blocks, blocks == 1 ? "" : "s",
                       estimate_text(best_e));
  }
  return *best;
}

}  // namespace modelc::linear

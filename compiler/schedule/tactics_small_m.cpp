// compiler/schedule/tactics_small_m.cpp — the small-M tactic rules (schedule/small_m.h).
#include <fmt/format.h>

#include <algorithm>

#include "schedule/small_m.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The candidates of choose_small_m_tile, in its tie order: tiles {BM, BN}, warp grids {warps_m,
// warps_n}, warps_k, split 1 first; one slice depth (64: up to 4 k16 steps to share among a slice's
// warps).
constexpr int kSmallMTiles[][2] = {{32, 32}, {32, 48}, {32, 64}, {16, 32}, {16, 64}, {32, 96},
                                   {32, 128}, {64, 32}, {64, 64}, {64, 128}};
constexpr int kSmallMWarps[][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}};
// warps_k: the most first. Where the estimates tie (the model prices neither a warp's ldmatrix issue
// nor its share of the barriers), a block of a warp per sub-partition is the kernel's design, and
// one-warp tiles are what measured slow at M 128 (netC's 32 x 32 tiles, ../shared/measurements).
constexpr int kSmallMWarpsK[] = {4, 2, 1};
constexpr int kSmallMBk = 64;
constexpr int kSmallMMaxStages = 6, kSmallMMaxSplit = 4;
/// Estimates within 2% are ties (tactics_linear.cpp kEstimateTie).
constexpr double kEstimateTie = 0.02;

}  // namespace

std::string small_m_fallback(const Kernel& k, const GemmLowering& g, const Target& t) {
  if (t.sm < 80) return fmt::format("sm_{} (the small-M kernel stages by cp.async: sm_80 and newer)", t.sm);
  if (t.fp16_accumulate) return "--fp16-accumulate (the small-M kernel accumulates in FP32)";
  if (g.kind != GemmLowering::Kind::gemm) return "not a matrix product";
  if (!k.ranges.empty()) return "a horizontally fused product (several outputs: no ranged epilogue)";
  if (g.M > kSmallMMaxRows) return fmt::format("M {} above {} rows", g.M, kSmallMMaxRows);
  if (g.N < 16 || g.K < 16) return fmt::format("N {} or K {} below 16", g.N, g.K);
  if (g.batch_count() * ceil_div(g.M, 16) * ceil_div(g.N, 32) > int64_t{1} << 30) return "more tiles than an int counts";
  if (g.batch_count() * kSmallMMaxSplit > 65535) return fmt::format("batch {} over the grid's z limit", g.batch_count());
  return "";
}

KernelWork small_m_gemm_work(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const SmallMTile& t) {
  KernelWork w;
  w.engine = Engine::tensor_core;
  const int64_t tiles = batch * ceil_div(M, t.bm) * ceil_div(N, t.bn);
  const int64_t slices = ceil_div(K, t.bk);
  w.flops = 2.0 * static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  w.executed_flops = 2.0 * static_cast<double>(tiles) * t.bm * t.bn * static_cast<double>(slices * t.bk);
  w.bytes = bytes;
  w.blocks = tiles * t.split_k;
  w.threads = t.threads();
  w.smem_bytes = t.smem_bytes();
  w.regs_per_thread = tc_registers(TcTile{t.bm, t.bn, t.bk, t.warps_m, t.warps_n});
  w.k_slices = ceil_div(slices, t.split_k);
  w.stages = t.stages;
  // Each warp's MMAs of a slice: its (BM / warps_m) x (BN / warps_n) outputs over BK / warps_k.
  w.warp_flops_per_slice = 2.0 * (t.bm / t.warps_m) * (t.bn / t.warps_n) * (t.bk / t.warps_k);
  if (t.split_k > 1) {
    w.l2_bytes = 2.0 * static_cast<double>(t.split_k - 1) * static_cast<double>(tiles) * t.bm * t.bn * 4;
    w.handoffs = t.split_k - 1;
  }
  return w;
}

std::optional<SmallMTile> choose_small_m_tile(const TcProblem& p, const Target& t, Estimate* e) {
  std::optional<SmallMTile> best;
  Estimate best_e;
  const int64_t slices = ceil_div(p.K, kSmallMBk);
  for (const auto& tile : kSmallMTiles) {
    for (const auto& warps : kSmallMWarps) {
      if (tile[0] % (16 * warps[0]) != 0 || tile[1] % (16 * warps[1]) != 0) continue;
      for (int wk : kSmallMWarpsK) {
        for (int split = 1; split <= kSmallMMaxSplit; ++split) {
          const int64_t per = ceil_div(slices, split);
          if (split > 1 && (!p.split_k || (split - 1) * per >= slices)) continue;  // every split a slice
          SmallMTile c{tile[0], tile[1], kSmallMBk, warps[0], warps[1], wk,
                       static_cast<int>(std::clamp<int64_t>(per + 1, 2, kSmallMMaxStages)), split};
          while (c.smem_bytes() > t.smem_per_block && c.stages > 2) --c.stages;
          if (c.smem_bytes() > t.smem_per_block) continue;
          const Estimate ce = estimate(small_m_gemm_work(p.batch, p.M, p.N, p.K, p.bytes, c), t);
          if (split > 1 && ce.waves > 1.0) continue;  // the splits of a tile must be resident together
          if (!best || ce.us < best_e.us * (1 - kEstimateTie)) {
            best = c;
            best_e = ce;
          }
        }
      }
    }
  }
  if (best && e) *e = best_e;
  return best;
}

SmallMTile small_m_tile_of(const Kernel& k, const Tactic& tactic) {
  if (const SmallMTile* t = std::get_if<SmallMTile>(&tactic)) return *t;
  throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no small-M tile");
}

}  // namespace modelc::linear

// compiler/schedule/tactics_linear.cpp — the tactic rules of the GEMM-shaped families (gemm,
// conv) and of the direct convolutions and pools (conv_depthwise, conv_transpose, pool).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "schedule/conv_tiled.h"
#include "schedule/cost_model.h"
#include "schedule/hopper.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "schedule/linear_plans.h"
#include "schedule/small_m.h"
#include "schedule/tactics.h"
#include "schedule/winograd.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The configurations choose_tile picks from (all 128 threads).
constexpr TileConfig kTile128x64{128, 64, 8, 8, 8};
constexpr TileConfig kTile64x128{64, 128, 8, 8, 8};
constexpr TileConfig kTile64x64{64, 64, 8, 4, 8};
constexpr TileConfig kTile32x32{32, 32, 8, 4, 2};
constexpr TileConfig kTileSkinnyM{16, 64, 16, 2, 4};
constexpr TileConfig kTileSkinnyN{64, 16, 16, 4, 2};

// The tensor-core block tiles choose_tc_tile enumerates, largest first (ties keep the earlier):
// {BM, BN, warps_m, warps_n}, each warp's tile a multiple of 16 x 16.
constexpr int kTcShapes[][4] = {{128, 128, 2, 2}, {128, 128, 2, 4}, {128, 64, 2, 2}, {64, 128, 2, 2},
                                {64, 64, 2, 2},   {64, 32, 2, 1},   {32, 64, 1, 2},  {32, 32, 1, 1}};

/// Estimates within 2% of each other are ties: the model does not resolve finer (it prices no L2
/// or shared-memory traffic, where a larger tile's reuse pays), so the larger tile keeps them.
constexpr double kEstimateTie = 0.02;

}  // namespace

// ---- SIMT tiles -----------------------------------------------------------------------------------

TileConfig choose_tile(int64_t batch, int64_t M, int64_t N, const Target& target, std::string* why) {
  auto blocks = [&](const TileConfig& t) { return batch * ceil_div(M, t.bm) * ceil_div(N, t.bn); };
  auto say = [&](const TileConfig& t, const std::string& reason) {
    if (why) *why = fmt::format("SIMT tile {} ({} blocks of {} threads): {}", t.name(), blocks(t), t.threads(), reason);
    return t;
  };
  if (M <= 16) return say(kTileSkinnyM, "M <= 16, a skinny-row tile");
  if (N <= 16) return say(kTileSkinnyN, "N <= 16, a skinny-column tile");
  const TileConfig big = M >= N ? kTile128x64 : kTile64x128;
  const int64_t sms = std::max(1, target.sm_count);
  for (const TileConfig& t : {big, kTile64x64}) {
    if (blocks(t) >= sms) {
      return say(t, fmt::format("the largest tile with at least one block per SM ({} SMs)", sms));
    }
  }
  return say(kTile32x32, fmt::format("no larger tile gives one block per SM ({} SMs)", sms));
}

void check_grid(const Kernel& k, const TileConfig& t, int64_t M) {
  if (ceil_div(M, t.bm) > 65535) {
    refuse_node(k, fmt::format("{} rows make {} row tiles of {}, over the grid's y limit (65535)", M, ceil_div(M, t.bm), t.bm));
  }
}

TileConfig tile_of(const Kernel& k) {
  if (const TileConfig* t = std::get_if<TileConfig>(&k.tactic)) return *t;
  throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no SIMT tile");
}

// ---- tensor-core tiles ----------------------------------------------------------------------------

namespace {

// Every tile choose_tc_tile weighs for p on target, in its tie order (larger tile, fewer stages,
// split 1), with its estimate: fn(tile, estimate).
template <class F>
void for_each_tc_tile(const TcProblem& p, const Target& target, F&& fn) {
  const int max_stages = target.sm >= 80 ? 4 : 2;
  for (const auto& shape : kTcShapes) {
    for (int bk : {32, 64, 128}) {
      if (p.int8 ? (bk == 64 && p.K < 128) || (bk == 128 && p.K < 512) : (bk == 64 && p.K < kDeepSliceMinK) || bk == 128) {
        continue;
      }
      const int64_t slices = ceil_div(p.K, bk);
      for (int stages = 2; stages <= max_stages; ++stages) {
        for (int64_t split = 1; split == 1 || (p.split_k && split_leaves_two_slices(slices, split)); ++split) {
          if (p.batch * split > 65535) break;  // grid z
          TcTile t{shape[0], shape[1], bk, shape[2], shape[3], target.sm >= 80, target.fp16_accumulate && !p.int8};
          t.int8 = p.int8;
          t.stages = stages;
          t.split_k = static_cast<int>(split);
          if (t.smem_bytes() > target.smem_per_block) continue;
          fn(t, estimate(tc_gemm_work(p.batch, p.M, p.N, p.K, p.bytes, t), target));
        }
      }
    }
  }
}

// A chain of K slices on a few SMs is what fills no GPU at batch 1: a candidate with a block for
// every SM comes first (0), then one that splits K (1), then the rest (2), each class by estimated
// time, even where the model finds split-K's partials and second launch not worth it.
int tc_rank(const TcTile& t, const Estimate& e, const Target& target) {
  return e.blocks >= target.sm_count ? 0 : t.split_k > 1 ? 1 : 2;
}

}  // namespace

TcTile choose_tc_tile(const TcProblem& p, const Target& target, std::string* why, const TunedKernel* tuned) {
  auto rank = [&](const TcTile& t, const Estimate& e) { return tc_rank(t, e, target); };
  std::optional<TcTile> best, fastest, measured;
  Estimate best_e, fastest_e, measured_e;
  for_each_tc_tile(p, target, [&](const TcTile& t, const Estimate& e) {
    if (tuned && !measured && t.name() == tuned->tactic) {
      measured = t;
      measured_e = e;
    }
    // Better by more than the model's resolution only: the enumeration order is the tie order.
    if (!fastest || e.us < fastest_e.us * (1 - kEstimateTie)) {
      fastest = t;
      fastest_e = e;
    }
    const int r = rank(t, e), best_r = best ? rank(*best, best_e) : 3;
    if (r < best_r || (r == best_r && e.us < best_e.us * (1 - kEstimateTie))) {
      best = t;
      best_e = e;
    }
  });
  if (!best) throw Error("internal: no tensor-core tile fits in " + std::to_string(target.smem_per_block) + " bytes");
  if (tuned && measured) {
    if (why) {
      const double chosen_us = tuned->us_of(measured->name()), estimated_us = tuned->us_of(best->name());
      *why = fmt::format("tensor-core tile {} for sm_{}: tuned, {:.2f} us measured on {} ({}); ", measured->name(),
                         target.sm, chosen_us, target.tuning ? target.tuning->device.name : std::string("?"),
                         target.tuning ? target.tuning->file : std::string("?"));
      if (*measured == *best) {
        *why += "the estimate's choice too";
      } else if (estimated_us > 0) {
        *why += fmt::format("the estimate's choice, {}, measured {:.2f} us ({:.2f}x the tuned time)", best->name(),
                            estimated_us, estimated_us / chosen_us);
      } else {
        *why += fmt::format("the estimate's choice, {}, was not measured", best->name());
      }
      *why += fmt::format("; estimate {}", estimate_text(measured_e));
    }
    return *measured;
  }
  if (why) {
    *why = fmt::format("tensor-core tile {} for sm_{} ({}): estimate {}", best->name(), target.sm, target.part,
                       estimate_text(best_e));
    if (rank(*best, best_e) == 2) {
      *why += fmt::format("; fewer blocks than SMs ({}) and no split-K: K {} leaves fewer than 2 slices of {} per split",
                          target.sm_count, p.K, best->bk);
    } else if (*best != *fastest) {
      *why += fmt::format(" (filling the SMs; the fastest estimate, {:.2f} us, leaves SMs idle)", fastest_e.us);
    }
    if (tuned) {
      *why += fmt::format("; the tuning cache's tactic, {}, is not a candidate here", tuned->tactic);
    }
  }
  return *best;
}

std::vector<TcCandidate> tc_candidates(const TcProblem& p, const Target& target, int n) {
  Target plain = target;
  plain.tuning = nullptr;
  const TcTile chosen = choose_tc_tile(p, plain);
  // The choice, then the others of each rank class by estimate (stable: ties keep the tie order),
  // taken from the classes in turn, so the candidates span what the model ranks apart (SM-filling
  // tiles, split-K, the rest) rather than a run of near-ties of one class.
  std::vector<TcCandidate> first;
  std::vector<TcCandidate> classes[3];
  for_each_tc_tile(p, target, [&](const TcTile& t, const Estimate& e) {
    if (ceil_div(p.M, t.bm) > 65535) return;  // grid y (check_tc_grids)
    const TcCandidate c{t, e, t.workspace_bytes(p.batch, p.M, p.N)};
    if (t == chosen) {
      first.push_back(c);
    } else {
      classes[tc_rank(t, e, target)].push_back(c);
    }
  });
  for (auto& cls : classes) {
    std::stable_sort(cls.begin(), cls.end(),
                     [](const TcCandidate& a, const TcCandidate& b) { return a.estimate.us < b.estimate.us; });
  }
  std::vector<TcCandidate> r = first;
  std::size_t at[3] = {0, 0, 0};
  for (bool more = true; more && static_cast<int>(r.size()) < n;) {
    more = false;
    for (int c = 0; c < 3 && static_cast<int>(r.size()) < n; ++c) {
      if (at[c] < classes[c].size()) {
        r.push_back(classes[c][at[c]++]);
        more = true;
      }
    }
  }
  return r;
}

std::string tuning_signature(const Kernel& k, const TcProblem& p) {
  const DType storage = k.inputs.empty() ? DType::undefined : k.inputs[0].dtype;
  const bool conv = k.family_name().rfind("conv", 0) == 0;
  return fmt::format("{} {}{} batch {} M {} N {} K {}{}", k.family_name(), dtype_name(storage),
                     conv ? (k.channels_last ? " nhwc" : " nchw") : "", p.batch, p.M, p.N, p.K,
                     p.split_k ? "" : " no split-K");
}

bool split_leaves_two_slices(int64_t slices, int64_t split) {
  const int64_t per = ceil_div(slices, split);
  return split >= 1 && per >= 2 && slices - (split - 1) * per >= 2;
}

TcTile tc_tile_of(const Kernel& k, const Tactic& tactic) {
  if (const TcTile* t = std::get_if<TcTile>(&tactic)) return *t;
  throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no tensor-core tile");
}

bool tensor_cores_on(const Target& t, DType storage) {
  return storage != DType::bfloat16 || t.sm >= kBf16TensorCoreMinSm;
}

namespace {

/// Target t's small-M tile for product g of kernel k where it applies and its estimate beats the
/// tensor-core tile `tc` (estimate tc_e) by more than kSmallMMargin; *why gains the outcome.
std::optional<SmallMTile> small_m_instead(const Kernel& k, const GemmLowering& g, const TcProblem& p, const Target& t,
                                          const TcTile& tc, const Estimate& tc_e, std::string* why) {
  // Nothing said where the kernel does not exist (below sm_80: the notes of those compiles stay
  // as they were) or the shape is not its (above kSmallMMaxRows rows: every large product's note).
  if (t.sm < 80) return std::nullopt;
  const std::string no = small_m_fallback(k, g, t);
  if (!no.empty()) {
    if (g.M <= kSmallMMaxRows) *why += " (not small-M: " + no + ")";
    return std::nullopt;
  }
  // Small-M's split-K adds the partial sums in its own launch (tickets, no reduction launch after
  // it), so a row norm's tail, which rules out tc::Gemm's split-K (p.split_k), leaves it free.
  TcProblem sp = p;
  sp.split_k = p.split_k || k.row_norm.active;
  Estimate e;
  const std::optional<SmallMTile> s = choose_small_m_tile(sp, t, &e);
  if (!s) {
    *why += fmt::format(" (not small-M: no tile fits in {} bytes of shared memory)", t.smem_per_block);
    return std::nullopt;
  }
  if (e.us >= tc_e.us * (1 - kSmallMMargin)) {
    *why += fmt::format(" (not small-M: its best, {}, {:.2f} us, is not {:.0f}% below)", s->name(), e.us,
                        kSmallMMargin * 100);
    return std::nullopt;
  }
  const int64_t tiles = p.batch * ceil_div(p.M, s->bm) * ceil_div(p.N, s->bn);
  *why = fmt::format("{} (tensor cores) for sm_{} ({}): {} tile{} x {} split{} of {} warps{}; estimate {}; "
                     "the tensor-core tile {}: {:.2f} us",
                     s->name(), t.sm, t.part, tiles, tiles == 1 ? "" : "s", s->split_k, s->split_k == 1 ? "" : "s",
                     s->threads() / 32, s->warps_k > 1 ? fmt::format(", K across {} warps a tile", s->warps_k) : "",
                     estimate_text(e), tc.name(), tc_e.us);
  return s;
}

}  // namespace

std::string plan_tc_archs(Kernel& k, const std::vector<Target>& targets, const TcProblem& p, DType storage,
                          const SimtVariant& simt, const GemmLowering* small_m) {
  std::string first_why;
  k.arch_tactic.clear();
  k.tuning_signature = tuning_signature(k, p);
  std::map<int, Tactic> per;
  std::string others;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::string why;
    if (tensor_cores_on(targets[i], storage)) {
      const TuningCache* cache = targets[i].tuning;
      const TunedKernel* tuned = cache && cache->device.sm == targets[i].sm ? cache->find(k.tuning_signature) : nullptr;
      const TcTile tc = choose_tc_tile(p, targets[i], &why, tuned);
      per[targets[i].sm] = tc;
      // A kernel the tuning cache measured keeps its measured tile (the tuner times tc::Gemm tiles).
      const bool measured = tuned && tuned->tactic == tc.name();
      if (small_m && !measured) {
        const Estimate tc_e = estimate(tc_gemm_work(p.batch, p.M, p.N, p.K, p.bytes, tc), targets[i]);
        if (const std::optional<SmallMTile> s = small_m_instead(k, *small_m, p, targets[i], tc, tc_e, &why)) {
          per[targets[i].sm] = *s;
        }
      }
    } else {
      std::string simt_why;
      per[targets[i].sm] = simt(targets[i], &simt_why);
      why = fmt::format("sm_{}: {} (no BF16 MMA below sm_{})", targets[i].sm, simt_why, kBf16TensorCoreMinSm);
    }
    if (i == 0) {
      first_why = why;
      k.tactic = per[targets[i].sm];
      k.tune_candidates.clear();
      if (targets[i].tune_candidates > 0 && tensor_cores_on(targets[i], storage)) {
        k.tune_candidates = tc_candidates(p, targets[i], targets[i].tune_candidates);
      }
    } else if (per[targets[i].sm] != k.tactic) {
      others += "; " + why;
    }
  }
  bool differ = false;
  for (const auto& [sm, tactic] : per) differ = differ || tactic != k.tactic;
  if (differ) k.arch_tactic = per;
  // The split-K partial sums and the small-M tickets (then a row norm's panel tickets): the most
  // any arch's tactic needs.
  k.workspace_bytes = 0;
  k.zeroed_bytes = 0;
  for (const auto& [sm, tactic] : per) {
    if (const TcTile* t = std::get_if<TcTile>(&tactic)) {
      k.workspace_bytes = std::max(k.workspace_bytes, t->workspace_bytes(p.batch, p.M, p.N));
    } else if (const SmallMTile* s = std::get_if<SmallMTile>(&tactic)) {
      k.workspace_bytes = std::max(k.workspace_bytes, s->workspace_bytes(p.batch, p.M, p.N));
      k.zeroed_bytes = std::max(k.zeroed_bytes, s->ticket_bytes(p.batch, p.M, p.N));
    }
    if (k.row_norm.active) {
      k.zeroed_bytes = std::max(k.zeroed_bytes, row_norm_ticket_offset(tactic, p.batch, p.M, p.N) +
                                                    4 * row_norm_panels(tactic, p.batch, p.M));
    }
  }
  return first_why + others;
}

int64_t row_norm_panels(const Tactic& t, int64_t batch, int64_t M) {
  int64_t rows = 0;
  if (const TcTile* tc = std::get_if<TcTile>(&t)) rows = tc->bm;
  if (const SmallMTile* s = std::get_if<SmallMTile>(&t)) rows = s->bm;
  if (const TileConfig* simt = std::get_if<TileConfig>(&t)) rows = simt->bm;
  return rows > 0 ? batch * ceil_div(M, rows) : 0;
}

int64_t row_norm_ticket_offset(const Tactic& t, int64_t batch, int64_t M, int64_t N) {
  const SmallMTile* s = std::get_if<SmallMTile>(&t);
  return s ? (s->ticket_bytes(batch, M, N) + 15) / 16 * 16 : 0;
}

// ---- GEMV ------------------------------------------------------------------------------------------

GemvTactic choose_gemv(int64_t batch, int64_t N, int64_t group_columns, const Target& target, std::string* why) {
  const int64_t sms = std::max(1, target.sm_count);
  auto blocks = [&](const GemvTactic& t) { return batch * ceil_div(N, t.columns); };
  GemvTactic t;
  for (int split = 1; split <= kGemvWarps; split *= 2) {
    t = GemvTactic{kGemvWarps, split, static_cast<int>(kGemvWarps / split * group_columns)};
    if (blocks(t) >= sms) break;
  }
  if (why) {
    *why = fmt::format("GEMV, {} warps, K split {}, {} columns per block: {} blocks {} {} SMs", t.warps, t.k_split,
                       t.columns, blocks(t), blocks(t) >= sms ? "for" : "(the most it gives) for", sms);
  }
  return t;
}

GemvTactic gemv_of(const Kernel& k) {
  if (const GemvTactic* t = std::get_if<GemvTactic>(&k.tactic)) return *t;
  throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no GEMV tactic");
}

// ---- gemm -----------------------------------------------------------------------------------------

namespace {

/// The 16-bit float storage of tensor-core operands that share it: float16 or bfloat16; else
/// undefined (FP32, integers, or two types).
DType tc_storage(DType a, DType b) {
  return a == b && (a == DType::float16 || a == DType::bfloat16) ? a : DType::undefined;
}

/// BF16 operands where no target has BF16 tensor cores (every --arch below sm_80): the reason the
/// kernel is SIMT; "" otherwise.
std::string bf16_without_tensor_cores(DType storage, const std::vector<Target>& targets) {
  if (std::any_of(targets.begin(), targets.end(), [&](const Target& t) { return tensor_cores_on(t, storage); })) return "";
  return fmt::format("BF16 storage on sm_{} (no BF16 MMA below sm_{})", targets.front().sm, kBf16TensorCoreMinSm);
}

/// The check_grid of each tensor-core variant of k (its block rows; the SIMT variants checked theirs).
void check_tc_grids(const Kernel& k, int64_t rows) {
  auto check = [&](const Tactic& tactic) {
    if (const TcTile* t = std::get_if<TcTile>(&tactic)) check_grid(k, TileConfig{t->bm, 64, 8, 4, 8}, rows);
  };
  for (const auto& [sm, tactic] : k.arch_tactic) check(tactic);
  check(k.tactic);
}

/// Why a GEMM cannot run on the tensor-core template ("" when it can). Documented thresholds:
/// float16 A and B (FP16 storage) or bfloat16 A and B (BF16 storage; tensor cores from sm_80), at
/// least kTinyGemmMacs multiply-adds per product, 16-byte aligned operands (every output of a
/// horizontally fused product), one element type for the epilogue's operands (C / bias and residual).
std::string gemm_fallback(const Kernel& k, const GemmLowering& g) {
  if (g.kind == GemmLowering::Kind::strided_sum) return "one-operand Einsum (a strided sum)";
  const DType ta = k.inputs[g.a_input].dtype, tb = k.inputs[g.b_input].dtype, ty = k.outputs[0].dtype;
  for (DType t : {ta, tb, ty}) {
    if (!is_float(t)) return "integer data";
    if (t == DType::float64) return "FP64 storage";
  }
  if (ta == DType::float32 || tb == DType::float32) return "FP32 storage";
  if (tc_storage(ta, tb) == DType::undefined) return fmt::format("{} A and {} B", dtype_name(ta), dtype_name(tb));
  if (g.M * g.N * g.K < kTinyGemmMacs) return fmt::format("tiny GEMM: {}x{}x{}", g.M, g.N, g.K);
  if (!aligned16(k.inputs[g.a_input]) || !aligned16(k.inputs[g.b_input]) ||
      !std::all_of(k.outputs.begin(), k.outputs.end(), aligned16)) {
    return "an operand not 16-byte aligned";
  }
  return mixed_epilogue_types(k) ? "bias and residual of different types" : "";
}

std::string equation_prefix(const Kernel& k) {
  return producer_op(*k.source.node) == "Einsum" ? "equation '" + k.source.node->attr_string("equation", "") + "': " : "";
}

/// True when the GEMV template runs the product: a matrix product (not a strided sum, not
/// horizontally fused) of at most kGemvMaxRows rows whose operands and output share one element
/// type, float, float16 or bfloat16 (gemv::Gemv's T), with a batch within the grid's y limit.
bool gemv_runs(const Kernel& k, const GemmLowering& g) {
  if (g.kind != GemmLowering::Kind::gemm || !k.ranges.empty() || g.M > kGemvMaxRows || g.batch_count() > 65535 ||
      k.row_maps.active()) {
    return false;
  }
  const DType t = k.outputs[0].dtype;
  if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return false;
  return std::all_of(k.inputs.begin(), k.inputs.end(),
                     [&](const TensorView& v) { return v.dtype == DType::undefined || v.dtype == t; });
}

/// The GEMV tactic and the note: the choice, its estimate on the first target and, where the
/// product qualifies for tensor cores, theirs.
void gemv_gemm(Kernel& k, const GemmLowering& g, const std::vector<Target>& targets) {
  const bool k_contiguous = g.b.row == 1 && g.b.col != 1;  // gemv::Gemv::kKContiguous
  const int64_t group_columns = k_contiguous ? 1 : 32 * (16 / dtype_size(k.outputs[0].dtype));
  std::string why;
  k.tactic = choose_gemv(g.batch_count(), g.N, group_columns, targets.front(), &why);
  k.engine = Engine::gemv;
  const Estimate e = estimate(kernel_work(k, k.tactic), targets.front());
  std::string instead;
  // The first target with tensor cores for the operands (BF16: from sm_80).
  const DType storage = tc_storage(k.inputs[g.a_input].dtype, k.inputs[g.b_input].dtype);
  const auto on = std::find_if(targets.begin(), targets.end(), [&](const Target& t) { return tensor_cores_on(t, storage); });
  if (k.fallback_reason.empty() && on != targets.end()) {
    const TcTile tc = choose_tc_tile({g.batch_count(), g.M, g.N, g.K, kernel_bytes(k)}, *on);
    instead = fmt::format("; the tensor-core tactic it replaces{}: {}, {:.2f} us (M {} in tiles of {} rows)",
                          on == targets.begin() ? "" : fmt::format(" on sm_{}", on->sm), tc.name(),
                          estimate(tc_gemm_work(g.batch_count(), g.M, g.N, g.K, kernel_bytes(k), tc), *on).us, g.M,
                          tc.bm);
  }
  k.fallback_reason = fmt::format("at most {} rows: GEMV", kGemvMaxRows);
  k.note = fmt::format("{}batch {} M {} N {} K {}; at most {} rows, memory bound on B ({}): {}; estimate for sm_{} ({}): {}{}",
                       equation_prefix(k), g.batch_count(), g.M, g.N, g.K, kGemvMaxRows,
                       k_contiguous ? "K-contiguous, a warp per column" : "a thread per 16 bytes of a row of B", why,
                       targets.front().sm, targets.front().part, estimate_text(e), instead);
}

void simt_gemm(Kernel& k, const GemmLowering& g, const Target& t) {
  if (g.kind == GemmLowering::Kind::strided_sum) {
    k.tactic = DirectTactic{128};
    k.note = "equation '" + k.source.node->attr_string("equation", "") + "': a strided sum, one thread per output element";
    return;
  }
  std::string why;
  const TileConfig tile = choose_tile(g.batch_count(), g.M, g.N, t, &why);
  check_grid(k, tile, g.M);
  k.tactic = tile;
  k.note = fmt::format("{}batch {} M {} N {} K {}; {}", equation_prefix(k), g.batch_count(), g.M, g.N, g.K, why);
}

}  // namespace

void gemm_tactic(Kernel& k, const std::vector<Target>& targets) {
  const GemmLowering g = plan_of<GemmPlan>(k).gemm;
  k.fallback_reason = gemm_fallback(k, g);
  const DType storage = g.kind == GemmLowering::Kind::gemm ? tc_storage(k.inputs[g.a_input].dtype, k.inputs[g.b_input].dtype)
                                                           : DType::undefined;
  if (k.fallback_reason.empty()) k.fallback_reason = bf16_without_tensor_cores(storage, targets);
  k.arch_tactic.clear();
  if (k.row_maps.active() && !k.fallback_reason.empty()) {
    throw k.error("internal: its rows go through a table (fold_row_maps) but it cannot run on tensor cores: " +
                  k.fallback_reason);
  }
  // A row norm (fuse_row_norm) runs in the tail of a tiled product: no GEMV, no Hopper engine.
  if (gemv_runs(k, g) && !k.row_norm.active) {
    gemv_gemm(k, g, targets);
    return;
  }
  if (k.fallback_reason.empty()) {
    // --arch sm_90a: the Hopper engine where its templates take the product (schedule/hopper.h),
    // else mma.sync with the reason.
    std::string not_hopper;
    if (std::any_of(targets.begin(), targets.end(), [](const Target& t) { return t.hopper; })) {
      not_hopper = k.row_norm.active ? "the LayerNorm in its tail needs row panels (the Hopper engine's persistent "
                                       "tiles have none)"
                                     : hopper_gemm_fallback(k, g, targets);
      if (not_hopper.empty()) {
        std::string why;
        k.tactic = choose_hopper_tile(g.batch_count(), g.M, g.N, g.K, kernel_bytes(k), targets.front(), &why);
        k.engine = Engine::hopper;
        k.tuning_signature.clear();
        k.tune_candidates.clear();
        k.workspace_bytes = 0;
        k.zeroed_bytes = 0;
        k.note = fmt::format("{}batch {} M {} N {} K {}; {}", equation_prefix(k), g.batch_count(), g.M, g.N, g.K, why);
        return;
      }
    }
    k.engine = Engine::tensor_core;
    // No split-K for tc::Gemm under a row norm: its reduction is a second launch, after the tail.
    const std::string why = plan_tc_archs(k, targets,
                                          {g.batch_count(), g.M, g.N, g.K, kernel_bytes(k), !k.row_norm.active},
                                          storage,
                                          [&](const Target& t, std::string* w) {
                                            const TileConfig tile = choose_tile(g.batch_count(), g.M, g.N, t, w);
                                            check_grid(k, tile, g.M);
                                            return tile;
                                          },
                                          &g);
    if (std::holds_alternative<SmallMTile>(k.tactic)) k.engine = Engine::small_m;
    check_tc_grids(k, g.M);
    k.note = fmt::format("{}batch {} M {} N {} K {}; {}", equation_prefix(k), g.batch_count(), g.M, g.N, g.K, why);
    if (!not_hopper.empty()) k.note += " (mma.sync, not the Hopper engine: " + not_hopper + ")";
    return;
  }
  k.engine = Engine::simt;
  simt_gemm(k, g, targets.front());
  if (k.row_norm.active) k.zeroed_bytes = 4 * row_norm_panels(k.tactic, g.batch_count(), g.M);
  k.note += " (SIMT: " + k.fallback_reason + ")";
}

// ---- conv -----------------------------------------------------------------------------------------

namespace {

/// Why a convolution cannot run on the tensor-core template ("" when it can): float16 (bfloat16) X
/// and W, groups = 1, channels-last views (schedule/layout.h) with W stored as the layout stage stores it
/// (kernel_weight_storage: OHWI at X's channel pitch, which must be a multiple of 8 for 16-byte
/// chunks of channels; or compact, K over the channels, for fewer than kCompactKChannels), 16-byte
/// aligned buffers.
std::string conv_fallback(const Kernel& k, const ConvGeometry& g) {
  const TensorView &x = k.inputs[0], &w = k.inputs[1], &y = k.outputs[0];  // the ranges' outputs share y's dtype
  for (DType t : {x.dtype, w.dtype, y.dtype}) {
    if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return "integer data";
  }
  if (x.dtype == DType::float32 || w.dtype == DType::float32) return "FP32 storage";
  if (tc_storage(x.dtype, w.dtype) == DType::undefined) return fmt::format("{} X and {} W", dtype_name(x.dtype), dtype_name(w.dtype));
  if (g.G > 1) return fmt::format("groups = {}", g.G);
  const int64_t cp = channels_last_pitch(x);
  // A horizontally fused convolution writes several outputs (k.ranges): each must qualify.
  const bool outputs_nhwc = std::all_of(k.outputs.begin(), k.outputs.end(),
                                        [](const TensorView& o) { return channels_last_pitch(o) != 0; });
  // Dense X, W and Y run NCHW, as the conv printer reads them (codegen conv_pitches), even where their
  // strides are channels-last too (X [N, C, 1]: one pixel); their W is OIHW, not OHWI.
  const bool dense = x.dense() && w.dense() && (!k.ranges.empty() || y.dense());
  if (dense || cp == 0 || !outputs_nhwc) return "NCHW layout";
  if (!plan_of<ConvPlan>(k).depth.compact && cp % 8 != 0) return fmt::format("channels {} not padded to a multiple of 8", g.C);
  if (!aligned16(x) || !aligned16(w) || !std::all_of(k.outputs.begin(), k.outputs.end(), aligned16)) {
    return "a buffer not 16-byte aligned";
  }
  return mixed_epilogue_types(k) ? "bias and residual of different types" : "";
}

/// The SIMT tile of a convolution on target t, its reason in *why.
TileConfig simt_conv_tile(const Kernel& k, const ConvGeometry& g, const Target& t, std::string* why) {
  if (g.G > 65535) throw k.source.node->error(fmt::format("{} groups exceed the grid's z limit (65535)", g.G));
  const TileConfig tile = choose_tile(g.G, g.Mg(), g.N * g.out_pixels(), t, why);
  check_grid(k, tile, g.Mg());
  return tile;
}

void simt_conv(Kernel& k, const ConvGeometry& g, const Target& t) {
  std::string why;
  k.tactic = simt_conv_tile(k, g, t, &why);
  k.note = fmt::format("{}: implicit GEMM, M {} (channels per group) N {} (pixels) K {}; {}", g.str(), g.Mg(),
                       g.N * g.out_pixels(), g.Cg() * g.kernel[0] * g.kernel[1] * g.kernel[2], why);
}

}  // namespace

void conv_tactic(Kernel& k, const std::vector<Target>& targets) {
  const ConvGeometry g = plan_of<ConvPlan>(k).geometry;  // copies: a Winograd tactic replaces the plan
  check_size(k);
  k.arch_tactic.clear();
  k.engine = Engine::simt;
  k.fallback_reason = conv_fallback(k, g);
  const DType storage = tc_storage(k.inputs[0].dtype, k.inputs[1].dtype);
  if (k.fallback_reason.empty()) k.fallback_reason = bf16_without_tensor_cores(storage, targets);
  if (plan_of<ConvPlan>(k).prologue.active() && !k.fallback_reason.empty()) {
    // fuse_prologue folds only into convolutions this rule runs on tc::Conv.
    throw Error("internal: kernel " + k.id + " has an operand prologue but runs SIMT (" + k.fallback_reason + ")");
  }
  if (k.fallback_reason.empty()) {
    // --arch sm_90a: the Hopper engine where hopper::Conv takes the convolution (schedule/hopper.h),
    // else mma.sync (or Winograd) with the reason.
    std::string not_hopper;
    if (std::any_of(targets.begin(), targets.end(), [](const Target& t) { return t.hopper; })) {
      const ConvPlan& c = plan_of<ConvPlan>(k);
      not_hopper = hopper_conv_fallback(k, c, targets);
      if (not_hopper.empty()) {
        std::string why;
        k.tactic = choose_hopper_conv_tile(g, c.x_pitch, kernel_bytes(k), targets.front(), &why);
        k.engine = Engine::hopper;
        k.tuning_signature.clear();
        k.tune_candidates.clear();
        k.workspace_bytes = 0;
        k.note = fmt::format("{}: implicit GEMM, M {} (pixels) N {} (channels) K {} ({} taps x pitch {}); {}", g.str(),
                             g.N * g.out_pixels(), g.M, c.depth.K, c.depth.taps, c.x_pitch, why);
        return;
      }
    }
    k.engine = Engine::tensor_core;
    const int64_t pixels = g.N * g.out_pixels();
    const TcConvDepth d = plan_of<ConvPlan>(k).depth;
    const std::string why =
        plan_tc_archs(k, targets, {1, pixels, g.M, d.K, kernel_bytes(k)}, storage,
                      [&](const Target& t, std::string* w) { return simt_conv_tile(k, g, t, w); });
    const std::string depth = d.compact ? fmt::format("compact: {} taps x {} channels, W rows of {}", d.taps, g.C, d.row)
                                        : fmt::format("{} taps x pitch {}", d.taps, d.pitch);
    k.note = fmt::format("{}: implicit GEMM on tensor cores, M {} (pixels) N {} (channels) K {} ({}); {}", g.str(),
                         pixels, g.M, d.K, depth, why);
    if (!not_hopper.empty()) k.note += " (mma.sync, not the Hopper engine: " + not_hopper + ")";
    const std::string winograd = plan_winograd(k, g, targets);
    if (k.engine == Engine::winograd) {
      k.note = g.str() + ": " + winograd;
    } else if (!winograd.empty()) {
      k.note += "; " + winograd;
    }
    return;
  }
  // Grouped FP16 / BF16 (conv_fallback's "groups = G"): tc::ConvGrouped where it takes the kernel
  // (schedule/conv_tiled.h), else the SIMT implicit GEMM with the reason.
  if (g.G > 1 && k.fallback_reason == fmt::format("groups = {}", g.G)) {
    const std::string grouped = grouped_fallback(k, g);
    if (grouped.empty() && bf16_without_tensor_cores(storage, targets).empty()) {
      k.fallback_reason.clear();
      plan_grouped(k, g, plan_of<ConvPlan>(k).x_pitch, targets,
                   [&](const Target& t, std::string* w) { return simt_conv_tile(k, g, t, w); });
      return;
    }
    k.fallback_reason += "; " + (grouped.empty() ? bf16_without_tensor_cores(storage, targets) : grouped);
  }
  simt_conv(k, g, targets.front());
  k.note += " (SIMT: " + k.fallback_reason + ")";
}

void conv_depthwise_tactic(Kernel& k, const std::vector<Target>& targets) {
  const ConvGeometry& g = plan_of<DirectConvPlan>(k).geometry;
  check_size(k);
  if (g.Cg() != 1 || g.G < 2) {
    throw Error("internal: conv_depthwise kernel " + k.id + " has " + std::to_string(g.Cg()) + " input channels in each of " +
                std::to_string(g.G) + " groups");
  }
  k.arch_tactic.clear();
  // Not on tensor cores either way (one input channel a group: an MMA of 7/8 zeros).
  const std::string depthwise = g.M == g.G ? "depthwise (groups = C)" : fmt::format("depthwise (groups = {})", g.G);
  const std::string not_tiled = depthwise_tiled_fallback(k);
  if (not_tiled.empty()) {
    k.engine = Engine::depthwise_tiled;
    k.fallback_reason = depthwise;
    plan_depthwise_tiled(k, targets);
    return;
  }
  k.engine = Engine::simt;
  // FP32 models keep the reason they always had; 16-bit ones say why the tiled kernel does not run.
  k.fallback_reason = k.inputs[0].dtype == DType::float32 ? depthwise : depthwise + "; not tiled: " + not_tiled;
  k.tactic = DirectTactic{128};
  k.note = fmt::format("{}: depthwise (one input channel per group), direct, one thread per output{}", g.str(),
                       k.inputs[0].dtype == DType::float32 ? "" : " (not tiled: " + not_tiled + ")");
}

void conv_transpose_tactic(Kernel& k, const std::vector<Target>&) {
  const ConvGeometry g = conv_transpose_geometry(k);
  check_size(k);
  k.tactic = DirectTactic{128};
  k.note = fmt::format("{}: gather form, one thread per output", g.str());
}

void pool_tactic(Kernel& k, const std::vector<Target>&) {
  check_size(k);
  k.tactic = DirectTactic{128};
  const KernelLayout l = kernel_layout(k);
  if (k.source.node->op() == "GlobalAveragePool" || k.source.node->op() == "GlobalMaxPool") {
    k.note = l.channels_last ? "NHWC: one thread per (n, c), looping over the plane"
                             : "one warp per (n, c) plane, shuffle reduction";
    return;
  }
  k.note = fmt::format("{}: {}one thread per output", pool_geometry(k).str(), l.channels_last ? "NHWC, " : "");
}

}  // namespace modelc::linear

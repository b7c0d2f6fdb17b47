// compiler/schedule/tactics.h — the tactics stage: each kernel's template parameters (tile,
// threads, staging), engine (tensor cores or SIMT) and the reason for a fallback, chosen per
// --arch target. Each family's rule is its FamilyFacts::choose_tactic (schedule/families.cpp);
// the rules live here and in tactics_*.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/tactic.h"
#include "schedule/target.h"
#include "schedule/tuning_cache.h"

namespace modelc {

/// \brief Sets k.plan as its family plans it (FamilyFacts::plan, schedule/plan.h; null for a family
/// that plans nothing) from its node and views: what the plan_kernels stage does per kernel, before
/// the tactic (the cost model reads the plan); a test that builds a kernel by hand calls it too.
void plan_kernel(Kernel& k);

/// \brief Chooses k's tactic by its family's rule for `targets` (every --arch, ascending, never
/// empty). Errors name k's node.
void choose_tactic(Kernel& k, const std::vector<Target>& targets);

/// \brief The tactics stage: choose_tactic for every kernel of the schedule, for its --arch list.
void choose_tactics(Schedule& s, bool fp16_accumulate);

/// elementwise: a grid-stride loop of 256 threads per block, at most 4096 blocks.
void elementwise_tactic(Kernel& k, const std::vector<Target>& targets);
/// The data-movement families (concat, split, slice, ...): a grid-stride loop of 256 threads; the
/// note says how the family copies.
std::function<void(Kernel&, const std::vector<Target>&)> data_tactic(std::string note);
/// transpose: a strided copy, through shared-memory tiles where reads and writes run along
/// different dims (tiled_dim).
void transpose_tactic(Kernel& k, const std::vector<Target>& targets);
/// resize: no compile-time parameter beyond the tap tables the family builds.
void resize_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc

namespace modelc::linear {

struct GemmLowering;  // schedule/linear.h

using ::modelc::TcTile;
using ::modelc::TileConfig;

// ---- SIMT GEMM tiles (templates/gemm.cuh) ----------------------------------------------------

/// \brief The tile heuristic for a GEMM of `batch` x (M x N) outputs (a convolution: groups x
/// (output channels of a group x output pixels)):
///   M <= 16: 16x64x16 t2x4 (skinny rows: a GEMV-like product, e.g. a batch-1 fully connected layer);
///   N <= 16: 64x16x16 t4x2 (skinny columns);
///   otherwise the largest of 128x64 / 64x128 (the long side of the tile along the long side of the
///   problem), 64x64, 32x32 whose block count reaches one block per SM (target.sm_count), so big
///   problems get the tile with the most reuse and small ones still spread over the GPU; 32x32
///   when none does.
/// Every configuration runs 128 threads. `why` receives a one-line reason.
TileConfig choose_tile(int64_t batch, int64_t M, int64_t N, const Target& target, std::string* why = nullptr);
/// Throws Error naming the node when the tile's row count exceeds the grid's y limit.
void check_grid(const Kernel& k, const TileConfig& t, int64_t M);
/// The SIMT tile of k's tactic; an internal Error when it has none.
TileConfig tile_of(const Kernel& k);

// ---- tensor-core tiles (templates/tensor_core.cuh) -------------------------------------------

/// \brief A tensor-core problem: `batch` GEMMs of M x N x K (a convolution: output pixels x output
/// channels x taps times the channel pitch) moving at least `bytes` (cost_model.h kernel_bytes).
struct TcProblem {
  int64_t batch = 1, M = 1, N = 1, K = 1;
  double bytes = 0;
  bool split_k = true;  ///< false: split-K is not a candidate (Winograd's GEMMs: no workspace for partials)
  /// The INT8 kernels (TcTile::int8): slices of 32, 64 (K >= 128) and 128 (K >= 512) 8-bit elements.
  bool int8 = false;
};

/// \brief The tensor-core tactic with the smallest estimated time (cost_model.h) on `target`.
/// Candidates: the block tiles 128x128 (warps 2x2 or 2x4), 128x64, 64x128, 64x64 (2x2), 64x32
/// (2x1), 32x64 (1x2), 32x32 (1x1); slices 32 deep, and 64 where K >= kDeepSliceMinK (256);
/// 2 stages on sm_75, 2..4 on sm_80 and newer (cp.async); split-K from 1 up to the largest factor
/// that leaves every split at least 2 slices (split_leaves_two_slices), its FP32 partials and
/// second launch in the estimate. Tiles whose shared memory exceeds target.smem_per_block are
/// skipped. Ties (estimates within 2%) keep the larger tile, then fewer stages, then split 1. FP16 accumulators with
/// target.fp16_accumulate. `why` receives the tile, the estimate and, for a kernel with fewer
/// blocks than SMs and no split, why not.
/// With `tuned` (target.tuning's entry for the kernel, on the cache's arch): its measured winner
/// when the winner is one of the candidates above (by TcTile::name), and `why` says so with the
/// measured times; a winner that is not a candidate here is ignored (and `why` says that too).
TcTile choose_tc_tile(const TcProblem& p, const Target& target, std::string* why = nullptr,
                      const TunedKernel* tuned = nullptr);
/// \brief Up to `n` candidates of choose_tc_tile for p on target: its choice (without a tuning
/// cache) first, then the best of each of its rank classes in turn (the tiles that give every SM a
/// block, the split-K ones, the rest; each class by estimate), so the candidates span what the
/// model ranks apart; each with its estimate and split-K workspace. What `modelc tune` times
/// (Kernel::tune_candidates).
std::vector<TcCandidate> tc_candidates(const TcProblem& p, const Target& target, int n);
/// \brief The key of a tensor-core kernel in a tuning cache: its family, storage type, layout (the
/// convolutions), batch, M, N, K and whether split-K may run, e.g.
/// "conv float16 nhwc batch 1 M 3136 N 64 K 576". The arch is the cache's (TuningDevice::sm).
std::string tuning_signature(const Kernel& k, const TcProblem& p);
/// True when K's `slices` split into `split` parts of ceil(slices / split) slices leave every part
/// (the last included) at least 2.
bool split_leaves_two_slices(int64_t slices, int64_t split);
/// K of at least this many elements also tries 64-deep slices (4 of them at least).
constexpr int64_t kDeepSliceMinK = 256;
/// The tensor-core tile of a tactic (k.tactic or an entry of k.arch_tactic); an internal Error
/// naming k when it is not one.
TcTile tc_tile_of(const Kernel& k, const Tactic& tactic);
/// Below this many MACs (M x N x K per product) a GEMM stays SIMT ("tiny GEMM"): a 32 x 32 x 32
/// product, one small block, where staging and fragment traffic outweigh the MMAs.
constexpr int64_t kTinyGemmMacs = 32 * 32 * 32;

/// BF16 operands take tensor cores from this SM on (mma.sync ... .bf16 is sm_80's); an older target
/// runs a BF16 convolution or matrix product on its SIMT tile (tensor_cores_on).
constexpr int kBf16TensorCoreMinSm = 80;
/// \brief Whether the tensor-core templates run operands of `storage` (float16 or bfloat16) on `t`.
bool tensor_cores_on(const Target& t, DType storage);

/// \brief The SIMT tile a tensor-core kernel runs on a target without tensor cores for its operands
/// (BF16 below sm_80): the family's SIMT rule, its reason in *why.
using SimtVariant = std::function<TileConfig(const Target&, std::string* why)>;

/// \brief Plans a tensor-core kernel for every target: k.tactic = the first (oldest) target's
/// choice, k.arch_tactic = each target's where they differ; returns the first target's reason
/// (plus " (sm_90: ...)" for each arch that differs). A target where `storage` has no tensor cores
/// (tensor_cores_on) gets `simt`'s tile instead: the kernel's variant for that arch is SIMT (at least
/// one target must have them). k.workspace_bytes: the largest split-K workspace of the tensor-core
/// variants. With `small_m` (a matrix product's lowering: the gemm family), a target where the
/// small-M kernel takes it (schedule/small_m.h small_m_fallback) and no tuning cache measured the
/// kernel gets choose_small_m_tile's tile instead where its estimate beats the tensor-core tile's
/// by more than kSmallMMargin (the reason says which, with both estimates, or why not);
/// k.zeroed_bytes: the largest ticket bytes of the small-M variants.
std::string plan_tc_archs(Kernel& k, const std::vector<Target>& targets, const TcProblem& p, DType storage,
                          const SimtVariant& simt, const GemmLowering* small_m = nullptr);

// ---- GEMV (templates/gemv.cuh) ------------------------------------------------------------------

/// \brief A product with a row norm (Kernel::row_norm, schedule/fuse_row_norm.cpp): its row panels
/// under tactic t (batch x M tiles of the tile's rows: one ticket each, an unsigned), and the byte
/// offset of the first ticket in the kernel's zeroed scratch (after a small-M split-K's tickets,
/// 16-byte aligned). 0 panels for a tactic without row panels.
int64_t row_norm_panels(const Tactic& t, int64_t batch, int64_t M);
int64_t row_norm_ticket_offset(const Tactic& t, int64_t batch, int64_t M, int64_t N);

/// Products of at most this many rows run on the GEMV template (gemm_tactic): memory bound on B,
/// where a 16-row MMA tile would compute mostly absent rows.
constexpr int64_t kGemvMaxRows = 8;
/// Warps per GEMV block.
constexpr int kGemvWarps = 4;

/// \brief The GEMV tactic for `batch` products with N columns of `group_columns` per column group
/// (1 for a K-contiguous B, 32 x V otherwise): the most columns per block (K split 1, then 2, then 4
/// warps per column group) that still gives at least one block per SM of `target`, else K split
/// kGemvWarps (the most blocks). `why` receives the choice.
GemvTactic choose_gemv(int64_t batch, int64_t N, int64_t group_columns, const Target& target, std::string* why = nullptr);
/// The GEMV tactic of k; an internal Error naming k when it has none.
GemvTactic gemv_of(const Kernel& k);

// ---- the families' rules ------------------------------------------------------------------------

/// gemm: Gemm / MatMul / Einsum (and fused forms) of at most kGemvMaxRows rows on the GEMV (one
/// element type throughout, FP32, FP16 or BF16, not horizontally fused), else on tensor cores where
/// gemm_fallback finds no reason against (BF16: the SIMT tile on targets below sm_80), else a SIMT
/// tile (one-operand Einsum: a strided sum, one thread per output).
void gemm_tactic(Kernel& k, const std::vector<Target>& targets);
/// conv: an implicit GEMM on tensor cores (FP16 or BF16, one group, channels-last with the pitch padded
/// to 8, aligned; BF16: the SIMT tile on targets below sm_80), else a SIMT tile.
void conv_tactic(Kernel& k, const std::vector<Target>& targets);
/// conv_depthwise: direct, one thread per output (SIMT, "depthwise").
void conv_depthwise_tactic(Kernel& k, const std::vector<Target>& targets);
/// conv_transpose: gather form, one thread per output.
void conv_transpose_tactic(Kernel& k, const std::vector<Target>& targets);
/// pool: one thread per output (global pools: per plane).
void pool_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::linear

namespace modelc::reduction {

/// \brief Picks the tiling for `rows` rows of `cols` columns. Contiguous columns (inner stride 1)
/// get a group of consecutive threads per row (about 4 columns per thread, at most 512 threads);
/// columns that are strided while the rows are contiguous get interleaved groups (consecutive
/// threads serve consecutive rows: coalesced), at most 8 threads per row, fewer when the rows alone
/// fill the GPU.
ReductionTile choose_tile(int64_t rows, int64_t cols, int64_t col_inner_stride, int64_t row_inner_stride,
                          const Target& t);
/// One block per row (TopK): threads for a row of `cols` columns.
ReductionTile choose_block_per_row(int64_t cols, bool sorts);
/// The tiling of k's tactic; an internal Error when it has none.
ReductionTile tile_of(const Kernel& k);
/// \brief How a tiling splits the work, for k.note: "4 threads per row, interleaved (...), row kept
/// in registers". kept_in_registers: the template keeps a row of at most 16 per thread
/// (softmax, normalization) and the note says whether this one fits.
std::string tile_note(const ReductionTile& t, int64_t cols, const char* per, bool kept_in_registers);

// The families' rules: the tiling of the split's rows (schedule/reduction.h), and a note with the
// op's dims.
void reduce_tactic(Kernel& k, const std::vector<Target>& targets);
void softmax_tactic(Kernel& k, const std::vector<Target>& targets);
void argminmax_tactic(Kernel& k, const std::vector<Target>& targets);
void layernorm_tactic(Kernel& k, const std::vector<Target>& targets);
void instancenorm_tactic(Kernel& k, const std::vector<Target>& targets);
/// topk: one block per row, a bitonic sort when the row fits (topk_sorts), else selection rounds.
void topk_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::reduction

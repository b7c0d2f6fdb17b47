// compiler/schedule/small_m.h — the small-M tactic of the tensor-core products (templates/
// gemm_small_m.cuh): when a matrix product of at most kSmallMMaxRows rows runs on smallm::Gemm (K
// split across the warps of a block, split-K reduced by the tiles' own blocks in one launch) instead
// of tc::Gemm, and with which tile. The gemm family's tactic (tactics_linear.cpp plan_tc_archs) asks
// here per target after choosing today's tensor-core tile and takes the small-M tile only where
// the cost model rates it faster by more than kSmallMMargin; the note says which and why, or why
// the product cannot run on it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/cost_model.h"
#include "schedule/linear.h"
#include "schedule/tactic.h"
#include "schedule/tactics.h"
#include "schedule/target.h"

namespace modelc::linear {

/// Products of at most this many rows (M, per batch item) may run on the small-M kernel: above,
/// today's tiles have blocks for every SM and the kernel's small tiles give up reuse.
constexpr int64_t kSmallMMaxRows = 512;
/// The small-M tile replaces today's tensor-core tile only when its estimate is lower by more than
/// this fraction: the kernel is unmeasured on a GPU so far, and the model's resolution is ~2%
/// (the reverted in-kernel split-K of bench/RESULTS.md moved kernels on a model that favoured it).
constexpr double kSmallMMargin = 0.10;

/// \brief Why product g of kernel k (FP16 / BF16 operands, tensor cores chosen) cannot run on the
/// small-M kernel on target t; "" when it can: sm_80 or newer (cp.async staging), FP32 accumulation
/// (not --fp16-accumulate), one output (not horizontally fused: no ranged epilogue), a product (not a
/// strided sum), at most kSmallMMaxRows rows, N and K at least 16, tiles and grid within int and the
/// grid's limits.
std::string small_m_fallback(const Kernel& k, const GemmLowering& g, const Target& t);

/// \brief The small-M tile with the lowest estimate for p on target t, with its estimate in *e:
/// tiles BM 16 / 32 / 64 x BN 32 / 48 / 64 / 96 / 128, warps_m x warps_n 1x1 / 1x2 / 2x1 / 2x2 (each
/// warp's tile whole m16 rows and pairs of n8 columns), warps_k 4 / 2 / 1 (BK 64: 1, 2 or 4 k16
/// steps a warp a slice), stages for every slice of a split in flight at once (slices + 1, 2..6) within
/// t.smem_per_block, split-K 1..4 where every split gets a slice and the grid stays within one wave
/// of resident blocks (a split waits on the tile's lower splits: they must be running). Ties
/// (within 2%) keep the earlier in that order (tiles and warp grids as listed, warps_k 4 before 2
/// before 1, no split first). None when nothing fits.
std::optional<SmallMTile> choose_small_m_tile(const TcProblem& p, const Target& t, Estimate* e);

/// \brief The work of `batch` products of M x N x K on the small-M kernel with tile t, moving at
/// least `bytes`: blocks tiles x split_k of t.threads(), each walking its split's K slices; the
/// chain is each warp's (KernelWork::warp_flops_per_slice: its outputs over BK / warps_k of each
/// slice, one MMA after another, against the slice's load share: what warps_k shortens, and why a
/// one-warp tile is slow); its executed FLOPs whole tiles and slices;
/// split-K's reduction: the partials written and read by the tiles' splits through L2
/// (KernelWork::l2_bytes, 2 (split_k - 1) x BM x BN x 4 bytes a tile) and the chain of split_k - 1
/// ticket hand-offs, each three memory round trips (KernelWork::handoffs). One launch. Not priced: the
/// cross-warp reduction ((warps_k - 1) x BM x BN floats through shared memory, two barriers).
KernelWork small_m_gemm_work(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const SmallMTile& t);

/// The small-M tile of a tactic; an internal Error naming k when it is not one.
SmallMTile small_m_tile_of(const Kernel& k, const Tactic& tactic);

}  // namespace modelc::linear

// compiler/schedule/tactic.h — what the tactics stage decides for a kernel: the compile-time
// parameters of its template (tile, threads, staging), as typed values the families print.
//
// One alternative per kind of template: the GEMM-shaped families (gemm, conv) on SIMT or tensor
// cores, the GEMV (gemm products of at most 8 rows), the reduction-shaped ones (reduce, softmax,
// normalizations, arg/top-k), the direct ones (one thread per output: depthwise, transposed
// convolution, pools, a strided sum), the tiled depthwise convolution and the grid-stride ones
// (elementwise, data movement).
// report.json and the emitted comments print a tactic as its named fields (tactic_fields).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>

namespace modelc {

/// \brief A block tile of the SIMT GEMM main loop (templates/gemm.cuh Tile<BM, BN, BK, TM, TN>).
struct TileConfig {
  int bm = 64, bn = 64, bk = 8, tm = 4, tn = 8;
  int threads() const { return (bm / tm) * (bn / tn); }
  std::string name() const;  ///< "128x64x8 t8x8"
  bool operator==(const TileConfig& o) const;
  bool operator!=(const TileConfig& o) const { return !(*this == o); }
};

/// \brief A tensor-core tactic: tc::Tile<BM, BN, BK, WarpsM, WarpsN, async, stages, split_k> and
/// the accumulator.
struct TcTile {
  int bm = 64, bn = 64, bk = 32, warps_m = 2, warps_n = 2;
  bool async = false;            ///< cp.async staging (sm_80 and newer), else through registers
  bool fp16_accumulate = false;  ///< --fp16-accumulate: FP16 accumulators
  /// Shared-memory stages of the K pipeline: 2 on sm_75 (the next slice staged through
  /// registers), 2..4 with cp.async (sm_80 and newer).
  int stages = 2;
  /// 1: none. Otherwise K's slices are split into split_k parts of ceil(slices / split_k) slices
  /// each (every part at least 2), each part a block of its own (grid z), and a second launch adds
  /// the parts' FP32 partial sums in part order (deterministic) and applies the epilogue.
  int split_k = 1;
  /// The INT8 kernels (templates/tensor_core_int8.cuh: 8-bit operands, mma m16n8k32, INT32
  /// accumulators): BK counts 8-bit elements (a multiple of 32) and a stage is [X][BK + 16] bytes.
  bool int8 = false;
  int threads() const { return 32 * warps_m * warps_n; }
  /// Shared memory of a block: `stages` stages of both operands' slices (each the larger of the
  /// k-fast [X][BK + 8] and x-fast [BK][X + 8] orientations, in halves), or the epilogue's FP32
  /// scratch of 16 x (BN / warps_n + 4) per warp, whichever is larger. What the tile choice holds
  /// against Target::smem_per_block (above 48 KiB the kernel's limit is raised at create).
  int smem_bytes() const;
  /// The split-K workspace: split_k x batch x M x N FP32 partial sums (0 without a split).
  int64_t workspace_bytes(int64_t batch, int64_t M, int64_t N) const;
  std::string name() const;  ///< "128x64x32 w2x2 cp.async 3 stages" (+ " split-K 4" when split)
  bool operator==(const TcTile& o) const;
  bool operator!=(const TcTile& o) const { return !(*this == o); }
};

/// \brief A Hopper engine tactic (sm_90a; templates/hopper_gemm.cuh hopper::Tile<BM, BN, BK, Stages,
/// Swizzle, Consumers>): a persistent warp-specialized block of one producer warpgroup (TMA loads
/// into a ring of `stages` shared-memory stages) and `consumers` warpgroups issuing
/// wgmma.mma_async, each BM / consumers rows of all BN columns; operands in 128-byte swizzled
/// boxes. The grid is min(SMs, tiles) blocks, each looping over tiles (no stream-K yet: the
/// emitted code launches no more blocks than tiles, so it needs no workspace).
struct HopperTile {
  int bm = 128, bn = 128, bk = 64, stages = 4, consumers = 2;
  /// 8-bit operands (tc::MmaS8, INT32 accumulators, wgmma k32): BK counts bytes (128 a stage row).
  bool int8 = false;
  int threads() const { return 128 * (1 + consumers); }
  /// hopper::Kernel::kSmemBytes: 1 KB alignment slack, the stages (A and B slices of 2-byte
  /// elements, 1-byte for INT8, each rounded up to 1 KB), 16 bytes of mbarriers a stage, 17 KB of
  /// epilogue scratch per consumer warpgroup.
  int smem_bytes() const;
  std::string name() const;  ///< "wgmma 128x128x64 4 stages 2 consumers" ("wgmma INT8 128x128x128 ...")
  bool operator==(const HopperTile& o) const;
  bool operator!=(const HopperTile& o) const { return !(*this == o); }
};

/// \brief A small-M tensor-core tactic (templates/gemm_small_m.cuh smallm::Tile<BM, BN, BK, WarpsM,
/// WarpsN, WarpsK, Stages, SplitK>): a block tile BM x BN run by warps_m x warps_n x warps_k warps,
/// the warps_k warps of each output sharing each K slice's k16 steps (their sums added through shared
/// memory in a fixed order); `stages` cp.async stages; split_k blocks per output tile, whose FP32
/// partials the tile's own blocks add in split order behind a per-tile ticket, the last one running
/// the epilogue (one launch). FP16 / BF16 operands, FP32 accumulation, sm_80 and newer.
struct SmallMTile {
  int bm = 32, bn = 48, bk = 64, warps_m = 1, warps_n = 1, warps_k = 4, stages = 6, split_k = 1;
  int threads() const { return 32 * warps_m * warps_n * warps_k; }
  /// smallm::Gemm::kSmemBytes, with TcTile's larger staging orientation per operand: the stages, the
  /// cross-warp reduction ((warps_k - 1) x BM x BN floats) or the epilogue scratch, the largest.
  int smem_bytes() const;
  /// The FP32 partial sums of split-K (tiles x BM x BN floats; 0 without a split), bytes.
  int64_t workspace_bytes(int64_t batch, int64_t M, int64_t N) const;
  /// The tickets of split-K, one unsigned per output tile (0 without a split), bytes: zero before
  /// the first launch and left zero by every launch (Kernel::zeroed).
  int64_t ticket_bytes(int64_t batch, int64_t M, int64_t N) const;
  std::string name() const;  ///< "small-M 32x48x64 w1x1x4 6 stages" (+ " split-K 2")
  bool operator==(const SmallMTile& o) const;
  bool operator!=(const SmallMTile& o) const { return !(*this == o); }
};

/// \brief A GEMV tactic (templates/gemv.cuh Config<warps, k_split>; products of at most 8 rows): a
/// block of `warps` warps, k_split of them on each column group, splitting K between them; `columns`
/// per block (a K-contiguous B: one per column group, a warp per column; otherwise 32 x V per
/// group, V the elements of a 16-byte load, as gemv::Gemv::kColumnsPerBlock computes it).
struct GemvTactic {
  int warps = 4;
  int k_split = 1;
  int columns = 4;
  int threads() const { return 32 * warps; }
  bool operator==(const GemvTactic& o) const { return warps == o.warps && k_split == o.k_split && columns == o.columns; }
  bool operator!=(const GemvTactic& o) const { return !(*this == o); }
};

/// \brief A Winograd F(2x2, 3x3) convolution (templates/winograd.cuh): three launches, the input
/// transform (one thread per 8 channels of a 4x4 input tile), 16 tensor-core GEMMs of tile `gemm`
/// (no split-K: the 16 products fill the GPU), the output transform with the convolution's epilogue.
struct WinogradTactic {
  TcTile gemm;
  static constexpr int kTransformThreads = 128;  ///< winograd.cuh InputTransform / OutputTransform
  std::string name() const;  ///< "Winograd F(2x2,3x3), GEMMs 64x64x32 w2x2 ..."
  bool operator==(const WinogradTactic& o) const { return gemm == o.gemm; }
  bool operator!=(const WinogradTactic& o) const { return !(*this == o); }
};

/// \brief The block tiling of a reduction-shaped kernel (templates/reduce.cuh Tiling<kThreads,
/// kGroup, kLanesContiguous>): `group` threads per row, consecutive (lanes_contiguous) or
/// interleaved with the other rows' threads.
struct ReductionTile {
  int threads = 128;
  int group = 1;
  bool lanes_contiguous = true;
  bool operator==(const ReductionTile& o) const;
  bool operator!=(const ReductionTile& o) const { return !(*this == o); }
};

/// \brief One thread per output element, `threads` per block (conv_depthwise, conv_transpose,
/// pool, the strided sum of a one-operand Einsum).
struct DirectTactic {
  int threads = 128;
  bool operator==(const DirectTactic& o) const { return threads == o.threads; }
  bool operator!=(const DirectTactic& o) const { return !(*this == o); }
};

/// \brief A depthwise convolution through a shared-memory input tile (templates/conv_depthwise.cuh
/// ConvDepthwiseTiled, DepthwiseTile<TH, TW, CB, CV, RH, RW, Async>): a block computes th x tw output
/// pixels of cb channels; each thread cv channels of rh x rw pixels; `async` stages the tile by
/// cp.async (sm_80 and newer); `fp16_accumulate`: HFMA2 sums (--fp16-accumulate, FP16 storage).
struct DepthwiseTactic {
  int th = 8, tw = 8, cb = 32, cv = 2, rh = 2, rw = 4;
  bool async = false;
  bool fp16_accumulate = false;
  int threads() const { return (cb / cv) * (th / rh) * (tw / rw); }
  std::string name() const;  ///< "8x8x32 cv2 r2x4 cp.async" (+ " fp16 sums")
  bool operator==(const DepthwiseTactic& o) const;
  bool operator!=(const DepthwiseTactic& o) const { return !(*this == o); }
};

/// \brief A grid-stride loop of `block` threads per block (elementwise, data movement); `grid`:
/// the block count, where the family fixes it at compile time.
struct GridStrideTactic {
  int block = 256;
  std::optional<int64_t> grid;
  bool operator==(const GridStrideTactic& o) const { return block == o.block && grid == o.grid; }
  bool operator!=(const GridStrideTactic& o) const { return !(*this == o); }
};

/// \brief A fused attention kernel's tile (templates/attention.cuh Tile<BQ, BKV, Warps, Stages,
/// QRegs>): a block of `bq` queries of one (batch, head) run by `warps` warps (16 x bq / (16 x warps)
/// rows each), key tiles of `bkv` keys streamed through `stages` shared-memory stages; q_regs: Q's
/// fragments held in registers for the whole kernel.
struct AttentionTile {
  int bq = 64, bkv = 64, warps = 4, stages = 2;
  bool q_regs = true;
  int threads() const { return 32 * warps; }
  /// The kernel's dynamic shared memory for head dim d (Attention::kSmemBytes): the Q tile and
  /// `stages` (K, V) tile pairs, rows of d rounded up to 16, plus 8 halves of padding.
  int smem_bytes(int64_t d) const;
  std::string name() const;  ///< "64q x 64kv w4 2 stages"
  bool operator==(const AttentionTile& o) const {
    return bq == o.bq && bkv == o.bkv && warps == o.warps && stages == o.stages && q_regs == o.q_regs;
  }
  bool operator!=(const AttentionTile& o) const { return !(*this == o); }
};

/// \brief A kernel's tactic (std::monostate before the tactics stage).
using Tactic =
    std::variant<std::monostate, TileConfig, TcTile, WinogradTactic, GemvTactic, ReductionTile, DirectTactic,
                 GridStrideTactic, HopperTile, DepthwiseTactic, AttentionTile, SmallMTile>;

/// \brief The cost model's estimate of one kernel on one target (schedule/cost_model.h).
struct Estimate {
  double us = 0;
  std::string bound;  ///< "compute" | "memory" | "latency" | "launch"
  double compute_us = 0, memory_us = 0, latency_us = 0, launch_us = 0;
  int64_t blocks = 0;
  int blocks_per_sm = 0;  ///< occupancy: resident blocks per SM
  double waves = 0;       ///< blocks / (SMs x blocks per SM)
  double flops = 0;
  double bytes = 0;       ///< the fewest bytes, plus split-K's partials
};

/// \brief A tensor-core tactic weighed for a kernel: the tile, the cost model's estimate with it,
/// and the split-K workspace it needs (bytes; 0 without a split).
struct TcCandidate {
  TcTile tile;
  Estimate estimate;
  int64_t workspace_bytes = 0;
};

/// \brief The tactic as named integer fields (report.json's "tactic", the emitted comments):
/// BM BN BK TM TN threads (SIMT tile); BM BN BK warps_m warps_n async threads fp16_accumulate
/// stages split_k (tensor cores); BM BN BK stages consumers threads hopper 1 [int8 1] (the Hopper engine); the same and winograd 1 (Winograd: its GEMMs' tile); threads
/// warps k_split columns (GEMV); threads group lanes_contiguous (reduction); threads (direct); block
/// [grid] (grid-stride); TH TW CB CV RH RW async threads fp16_accumulate (tiled depthwise); BQ BKV
/// warps stages q_regs threads (attention); BM BN BK warps_m warps_n warps_k stages split_k threads
/// small_m 1 (small-M); nothing for none.
std::map<std::string, int64_t> tactic_fields(const Tactic& t);

}  // namespace modelc

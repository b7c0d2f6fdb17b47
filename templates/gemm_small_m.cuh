// templates/gemm_small_m.cuh — tensor-core products that fill the GPU when M is small (M <= 512:
// a transformer's rows at batch 1, 128 tokens): K split across the warps of a block, and split-K
// across blocks reduced by the splits' own blocks in split order, in one launch.
//
// Why: at M = 128 the usual tiles leave most SMs idle or give each block one warp (netC's 32 x 32
// x 64 one-warp tiles: the M = 128, N = 1536, K = 384 product with bias and GELU took 13.5 us,
// ../shared/measurements). Output tiles small enough to make ~one wave of blocks (32 x 48: 4 x 32 =
// 128 blocks on 132 SMs) have too few output fragments for more than one warp; here the block's
// other warps take other k16 steps of every K slice instead (Tile's WarpsK), so a small tile still
// runs 4 warps (one per SM sub-partition) and each warp's chain of K steps is 4x shorter.
//
// The main loop (Mainloop below) is tensor_core.cuh's scheme — BK-deep slices staged by cp.async
// in Stages stages (rows padded by 8 elements), ldmatrix fragments, mma.sync m16n8k16 with FP32
// accumulators — with one difference in who computes what: warp (wm, wn, wk) of the WarpsM x
// WarpsN x WarpsK grid owns the (BM / WarpsM) x (BN / WarpsN) outputs at (wm, wn) and, of each
// slice's BK / 16 k16 steps, those with step % WarpsK == wk. It reuses tensor_core.cuh's operand
// loaders (tc::OperandLoader), stage layouts, ldmatrix addressing and epilogue helpers unchanged;
// the slice loop is its own (a separate, self-contained addition: it does not touch tc::Mainloop).
// The staging is cp.async only (sm_80 and newer; below sm_80 mc::cp_async_16 is a synchronous
// copy, so the kernel still runs, without overlap).
//
// K across the warps: at the end the warps with wk > 0 store their accumulators to shared memory
// in register order (lane-contiguous words: no bank conflicts) and the wk = 0 warps add them in wk
// order — the same bits on every run.
//
// K across blocks (Tile's SplitK > 1; grid z walks batch x splits, the split fastest): every split
// of a tile adds its partial into the tile's FP32 accumulator in global memory (Params::partial,
// [batch x M tiles x N tiles][BM x BN], in register order) in split order, guarded by the tile's
// ticket (Params::tickets, one unsigned per tile, 0 before the first launch): split s waits until
// the ticket is s, adds (split 0 writes), publishes (__threadfence) and sets it to s + 1; the last
// split adds its registers to what the others left, runs the epilogue, stores Y, and resets the
// ticket to 0 for the next launch. The reduction is spread over the tile's blocks (each adds its
// own partial as soon as its predecessor has) and needs no second launch; its order is fixed
// (deterministic). A block waits only on lower splits of its tile, which the GPU dispatches
// earlier (lower linear block index) and the host emulation runs earlier (blocks in x, y, z order):
// no deadlock, but the tactic should keep such grids within one wave so the chain overlaps the
// other tiles' work. (On sm_90 a cluster of a tile's splits reducing through distributed shared
// memory would make the adds parallel; not here.)
//
// Expected time of the issue's product (M 128, N 1536, K 384, bias + GELU, FP16, H100 SXM at 1.98
// GHz, 132 SMs, 3.35 TB/s) with Tile<32, 48, 64, 1, 1, 4, 6>: 128 blocks (0.97 wave) of 4 warps;
// each block streams its 6 slices (A 32 x 384 and B 384 x 48: 61 KB) with all 6 in flight; the
// grid moves 7.9 MB from L2 (~1.1 us at ~7 TB/s) and 1.3 MB from DRAM (0.4 us), one DRAM round
// trip (~0.6 us) before the first MMA; each warp issues 72 m16n8k16 (0.3 us of tensor time); the
// cross-warp reduction and the epilogue (12 GELUs a thread) ~0.2 us; plus the launch (~1-1.5 us in
// a CUDA graph): about 3-3.5 us, against 13.5 us (ncu) / ~9.6 us (graph) for today's 32 x 32
// one-warp tiles. Unmeasured: no GPU in this task. The gemm family's tactic runs it where the cost
// model rates it more than 10% below the tensor-core tile (schedule/small_m.h: its work prices each
// warp's MMAs per slice, what WarpsK shortens; the model gives this product 1.67 us on sm_90 with
// Tile<32, 32, 64, 1, 1, 4, 6>, against 1.99 us for tc::Gemm's 32 x 32 one-warp tile).
//
// Kernel contract: codegen/launch.h's (Params, kThreads, kSmemBytes, grid(), block(), run);
// mc::smallm::kernel<K> is the tests' entry point.
#pragma once

#include "tensor_core.cuh"

namespace mc {
namespace smallm {

/// \brief A block tile BM x BN, K slices of BK, run by WarpsM x WarpsN x WarpsK warps (WarpsK of
/// them share each output and split each slice's k16 steps), Stages cp.async stages, SplitK blocks
/// per output tile.
template <int BM, int BN, int BK, int WarpsM, int WarpsN, int WarpsK, int Stages, int SplitK = 1>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN, kWarpsK = WarpsK;
  static constexpr int kWarpsMN = WarpsM * WarpsN, kWarps = kWarpsMN * WarpsK, kThreads = 32 * kWarps;
  static constexpr int kWarpTileM = BM / WarpsM, kWarpTileN = BN / WarpsN;
  static constexpr int kFragM = kWarpTileM / 16, kFragN = kWarpTileN / 8;
  static constexpr int kStepsPerWarp = BK / 16 / WarpsK;  ///< k16 steps of a slice per warp
  static constexpr int kStages = Stages, kSplitK = SplitK;
  static_assert(BM % (16 * WarpsM) == 0, "smallm::Tile: each warp's rows are whole m16 tiles");
  static_assert(BN % (16 * WarpsN) == 0, "smallm::Tile: each warp's columns are pairs of n8 tiles (ldmatrix x4)");
  static_assert(BK % (16 * WarpsK) == 0, "smallm::Tile: each warp takes the same number of a slice's k16 steps");
  static_assert(Stages >= 2 && Stages <= 8, "smallm::Tile: 2..8 cp.async stages");
  static_assert(SplitK >= 1, "smallm::Tile: SplitK >= 1");
  static_assert(kThreads <= 1024, "smallm::Tile: at most 32 warps");
};

/// \brief The K slices [s0, s1) of split `split` (whole slices; the last split the remainder, a
/// split past the end none).
template <class Tl>
__device__ __forceinline__ void split_range(int k_extent, int split, int& s0, int& s1) {
  const int slices = (k_extent + Tl::kBK - 1) / Tl::kBK;
  const int per = (slices + Tl::kSplitK - 1) / Tl::kSplitK;
  s0 = split * per < slices ? split * per : slices;
  s1 = s0 + per < slices ? s0 + per : slices;
}

/// \brief Per warp: kFragM x kFragN m16n8 FP32 accumulator tiles.
template <class Tl>
using Accums = tc::Accum<float>[Tl::kFragM][Tl::kFragN];

/// \brief acc += the warp's share of A x B over slices [s0, s1): its outputs, its k16 steps of each
/// slice (see the file comment). Ends on a barrier with every cp.async group drained.
template <class Tl>
struct Mainloop {
  template <class LA, class LB>
  static constexpr int smem_bytes() {
    return Tl::kStages * (LA::Layout::kBytes + LB::Layout::kBytes);
  }

  template <class LA, class LB>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int s0, int s1, unsigned char* smem,
                                             tc::Accum<float> (&acc)[Tl::kFragM][Tl::kFragN]) {
    using T = typename LA::Elem;
    constexpr int kStageBytes = LA::Layout::kBytes + LB::Layout::kBytes;
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int wmn = warp % Tl::kWarpsMN, wk = warp / Tl::kWarpsMN;
    const int wm0 = (wmn / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (wmn % Tl::kWarpsN) * Tl::kWarpTileN;
    const int a_lane = tc::ldmatrix_offset<LA, true>(lane, wm0, 0), b_lane = tc::ldmatrix_offset<LB, false>(lane, wn0, 0);
    auto a_stage = [&](int stage) { return reinterpret_cast<T*>(smem + stage * kStageBytes); };
    auto b_stage = [&](int stage) { return reinterpret_cast<T*>(smem + stage * kStageBytes + LA::Layout::kBytes); };

    auto compute = [&](int stage) {
      const T* sa = a_stage(stage) + a_lane;
      const T* sb = b_stage(stage) + b_lane;
      MC_UNROLL
      for (int step = 0; step < Tl::kStepsPerWarp; ++step) {
        const int kk = (step * Tl::kWarpsK + wk) * 16;
        unsigned a[Tl::kFragM][4], b[Tl::kFragN][2];
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) ldmatrix<4, !LA::kKFast>(a[i], sa + LA::Layout::offset(i * 16, kk));
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; j += 2) {
          unsigned r[4];
          ldmatrix<4, !LB::kKFast>(r, sb + LB::Layout::offset(j * 8, kk));
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          MC_UNROLL
          for (int j = 0; j < Tl::kFragN; ++j) tc::mma<T>(acc[i][j].r, a[i], b[j]);
        }
      }
    };

    // Stages - 1 slices in flight ahead of the one computed, one commit group per slice (empty past
    // the end), one barrier per slice: the stage loaded in iteration s was last read in s - 1.
    const int slices = s1 - s0;
    MC_UNROLL
    for (int s = 0; s < Tl::kStages - 1; ++s) {
      if (s < slices) {
        la.async((s0 + s) * Tl::kBK, a_stage(s));
        lb.async((s0 + s) * Tl::kBK, b_stage(s));
      }
      cp_async_commit();
    }
    int stage = 0, load_stage = Tl::kStages - 1;
    for (int s = 0; s < slices; ++s) {
      cp_async_wait<Tl::kStages - 2>();
      __syncthreads();
      if (s + Tl::kStages - 1 < slices) {
        la.async((s0 + s + Tl::kStages - 1) * Tl::kBK, a_stage(load_stage));
        lb.async((s0 + s + Tl::kStages - 1) * Tl::kBK, b_stage(load_stage));
      }
      cp_async_commit();
      compute(stage);
      stage = stage + 1 == Tl::kStages ? 0 : stage + 1;
      load_stage = load_stage + 1 == Tl::kStages ? 0 : load_stage + 1;
    }
    cp_async_wait<0>();
    __syncthreads();
  }
};

/// Floats of one warp's accumulators in register order (fragment i, j, element e, lane).
template <class Tl>
constexpr int kWarpAccFloats = Tl::kFragM * Tl::kFragN * 4 * 32;

/// \brief Shared memory of the cross-warp K reduction: the wk > 0 warps' accumulators.
template <class Tl>
constexpr int k_reduce_bytes() {
  return Tl::kWarpsK > 1 ? (Tl::kWarpsK - 1) * Tl::kWarpsMN * kWarpAccFloats<Tl> * 4 : 0;
}

/// \brief Y = Epi(A x B), batched, as tc::Gemm (the same Shape, Strides, epilogues and output
/// types), T __half or bf16 (sm_80 and newer), FP32 accumulation; tiles of smallm::Tile. Grid: (N
/// tiles, M tiles, batch x SplitK). With SplitK > 1: Params::partial (tiles x BM x BN floats) and
/// Params::tickets (one unsigned per tile, zeroed before the first launch; every launch leaves them
/// zero). Row tables (fold_row_maps) as tc::Gemm's: with SA gemm::RowMapped, A's rows are read
/// through Params::a_rows (tc::GatherLoader), with SY RowMapped Y's are written through
/// Params::y_rows (tc::finish_gemm).
template <class T, class TY, class Sh, class SA, class SB, class SY, class TileT, class Epi>
struct Gemm {
  using Tl = TileT;
  static_assert(!gemm::HasRanges<Epi>::value, "smallm::Gemm: no ranged (horizontally fused) epilogue");
  static constexpr int kThreads = Tl::kThreads;
  /// A gathered A (gemm::RowMapped SA: rows through Params::a_rows) or a scattered Y (SY: through
  /// Params::y_rows), as tc::Gemm: its loader and store.
  static constexpr bool kGatherA = gemm::IsRowMapped<SA>::value, kScatterY = gemm::IsRowMapped<SY>::value;
  static_assert(!kGatherA || SA::kCol == 1, "smallm::Gemm: a gathered A has contiguous rows");
  using LA = typename std::conditional<
      kGatherA, tc::GatherLoader<T, Sh::kM, Sh::kK, SA::kRow, Tl::kBK, Tl::kBM, kThreads, true>,
      tc::OperandLoader<T, Sh::kM, Sh::kK, SA::kRow, SA::kCol, Tl::kBK, Tl::kBM, kThreads,
                        SA::kS0 % 8 == 0 && SA::kS1 % 8 == 0 && SA::kS2 % 8 == 0>>::type;
  using LB = tc::OperandLoader<T, Sh::kN, Sh::kK, SB::kCol, SB::kRow, Tl::kBK, Tl::kBN, kThreads,
                               SB::kS0 % 8 == 0 && SB::kS1 % 8 == 0 && SB::kS2 % 8 == 0>;
  /// The epilogue's scratch: per MN warp 16 rows of its columns (FP32, padded by 4).
  static constexpr int kScratchBytes = Tl::kWarpsMN * 16 * (Tl::kWarpTileN + 4) * 4;
  static constexpr int kSmemBytes = tc::max_int(tc::max_int(Mainloop<Tl>::template smem_bytes<LA, LB>(), k_reduce_bytes<Tl>()),
                                                kScratchBytes);
  static constexpr int kTilesM = (Sh::kM + Tl::kBM - 1) / Tl::kBM, kTilesN = (Sh::kN + Tl::kBN - 1) / Tl::kBN;
  static constexpr int kTiles = Sh::kBatch * kTilesM * kTilesN;
  /// Split-K's workspace: floats of Params::partial and unsigneds of Params::tickets.
  static constexpr int64_t kPartialFloats = Tl::kSplitK > 1 ? int64_t{kTiles} * Tl::kBM * Tl::kBN : 0;
  static constexpr int kTickets = Tl::kSplitK > 1 ? kTiles : 0;
  /// What resnorm::PanelNorm reads: the shape, the rows of a grid row (y), the splits along z.
  using Shape = Sh;
  static constexpr int kPanelRows = Tl::kBM, kSplits = Tl::kSplitK;

  struct Fields {
    const T* __restrict__ A = nullptr;
    const T* __restrict__ B = nullptr;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
    float* __restrict__ partial = nullptr;  ///< SplitK > 1: kPartialFloats
    unsigned* tickets = nullptr;            ///< SplitK > 1: kTickets, zero before the first launch
  };
  /// With a row table: the tables (int rows, Sh::kBatch x Sh::kM entries each), beside the fields.
  struct RowFields : Fields {
    const int* __restrict__ a_rows = nullptr;
    const int* __restrict__ y_rows = nullptr;
  };
  using Params = typename std::conditional<kGatherA || kScatterY, RowFields, Fields>::type;

  static dim3 grid() { return dim3(kTilesN, kTilesM, Sh::kBatch * Tl::kSplitK); }
  static dim3 block() { return dim3(kThreads); }

  /// The epilogue and store of outputs (batch, m, n .. n + 7): tc::Gemm's (tc::finish_gemm).
  __device__ __forceinline__ static void finish(const Params& p, int batch, int m, int n, float (&v)[8]) {
    if constexpr (kScatterY) {
      tc::finish_gemm<Sh, SY, Epi>(p.epilogue, p.Y, batch, m, n, v, p.y_rows);
    } else {
      tc::finish_gemm<Sh, SY, Epi>(p.epilogue, p.Y, batch, m, n, v);
    }
  }
  /// The A loader of the block at (batch, m0).
  __device__ __forceinline__ static LA a_loader(const Params& p, int batch, int m0, int tid) {
    if constexpr (kGatherA) {
      return LA(p.A, p.a_rows + static_cast<int64_t>(batch) * Sh::kM, m0, tid);
    } else {
      return LA{p.A + SA::template batch_offset<Sh>(batch), m0, tid};
    }
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    const int batch = static_cast<int>(blockIdx.z) / Tl::kSplitK, split = static_cast<int>(blockIdx.z) % Tl::kSplitK;
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
    const int wmn = warp % Tl::kWarpsMN, wk = warp / Tl::kWarpsMN;
    const LA la = a_loader(p, batch, m0, tid);
    const LB lb{p.B + SB::template batch_offset<Sh>(batch), n0, tid};
    tc::Accum<float> acc[Tl::kFragM][Tl::kFragN];
    int s0, s1;
    split_range<Tl>(Sh::kK, split, s0, s1);
    Mainloop<Tl>::run(la, lb, s0, s1, smem, acc);

    // K across the warps: wk > 0 warps' accumulators through shared memory, added in wk order.
    if constexpr (Tl::kWarpsK > 1) {
      float* red = reinterpret_cast<float*>(smem);
      if (wk > 0) {
        float* mine = red + ((wk - 1) * Tl::kWarpsMN + wmn) * kWarpAccFloats<Tl>;
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          MC_UNROLL
          for (int j = 0; j < Tl::kFragN; ++j) {
            MC_UNROLL
            for (int e = 0; e < 4; ++e) st_shared(mine + ((i * Tl::kFragN + j) * 4 + e) * 32 + lane, acc[i][j].r[e]);
          }
        }
      }
      __syncthreads();
      if (wk == 0) {
        for (int w = 1; w < Tl::kWarpsK; ++w) {
          const float* theirs = red + ((w - 1) * Tl::kWarpsMN + wmn) * kWarpAccFloats<Tl>;
          MC_UNROLL
          for (int i = 0; i < Tl::kFragM; ++i) {
            MC_UNROLL
            for (int j = 0; j < Tl::kFragN; ++j) {
              MC_UNROLL
              for (int e = 0; e < 4; ++e) acc[i][j].r[e] += ld_shared(theirs + ((i * Tl::kFragN + j) * 4 + e) * 32 + lane);
            }
          }
        }
      }
      __syncthreads();  // the scratch below reuses the reduction's memory
    }

    // K across the blocks: the tile's splits add into its accumulator in split order.
    if constexpr (Tl::kSplitK > 1) {
      const int tile = (batch * kTilesM + static_cast<int>(blockIdx.y)) * kTilesN + static_cast<int>(blockIdx.x);
      unsigned* ticket = p.tickets + tile;
      if (tid == 0) {
#if defined(MODELC_HOST_EMULATION) && !defined(__CUDACC__)
        // The emulation runs blocks in x, y, z order: the lower splits are done already.
        if (atomicAdd(ticket, 0u) != static_cast<unsigned>(split)) {
          host::fault("smallm::Gemm: split " + std::to_string(split) + " of tile " + std::to_string(tile) +
                      " found ticket " + std::to_string(*ticket) + " (tickets not zero before the launch?)");
        }
#else
        while (atomicAdd(ticket, 0u) != static_cast<unsigned>(split)) {
        }
#endif
        __threadfence();  // the previous splits' partial sums are visible past the ticket
      }
      __syncthreads();
      float* part = p.partial + static_cast<int64_t>(tile) * Tl::kBM * Tl::kBN + wmn * kWarpAccFloats<Tl>;
      if (wk == 0) {
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          MC_UNROLL
          for (int j = 0; j < Tl::kFragN; ++j) {
            MC_UNROLL
            for (int e = 0; e < 4; ++e) {
              float* at = part + ((i * Tl::kFragN + j) * 4 + e) * 32 + lane;
              // Split order: (((p0 + p1) + p2) + ...), the same bits on every run. A volatile load:
              // another SM wrote it (past L1).
              float v = split == 0 ? acc[i][j].r[e] : *static_cast<volatile float*>(at) + acc[i][j].r[e];
              if (split + 1 < Tl::kSplitK) {
                *at = v;
              } else {
                acc[i][j].r[e] = v;
              }
            }
          }
        }
      }
      if (split + 1 < Tl::kSplitK) {
        __threadfence();  // the partial sums before the ticket
        __syncthreads();
        if (tid == 0) atomicExch(ticket, static_cast<unsigned>(split + 1));
        return;
      }
      if (tid == 0) atomicExch(ticket, 0u);  // ready for the next launch
    }

    // The epilogue: per 16-row band of each MN warp's tile, its accumulators through its scratch,
    // then runs of 8 columns of one row per lane (as tc::for_each_output).
    if (wk == 0) {
      constexpr int kLd = Tl::kWarpTileN + 4, kRuns = Tl::kWarpTileN / 8;
      const int wm0 = (wmn / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (wmn % Tl::kWarpsN) * Tl::kWarpTileN;
      float* scratch = reinterpret_cast<float*>(smem) + wmn * 16 * kLd;
      const int g = lane / 4, t = lane % 4;
      MC_UNROLL
      for (int i = 0; i < Tl::kFragM; ++i) {
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; ++j) {
          st_shared(reinterpret_cast<float2*>(scratch + g * kLd + j * 8 + 2 * t), make_float2(acc[i][j].r[0], acc[i][j].r[1]));
          st_shared(reinterpret_cast<float2*>(scratch + (g + 8) * kLd + j * 8 + 2 * t),
                    make_float2(acc[i][j].r[2], acc[i][j].r[3]));
        }
        __syncwarp();
        MC_UNROLL
        for (int q = lane; q < 16 * kRuns; q += 32) {
          const int r = q / kRuns, c = (q % kRuns) * 8;
          const float4 lo = ld_shared(reinterpret_cast<const float4*>(scratch + r * kLd + c));
          const float4 hi = ld_shared(reinterpret_cast<const float4*>(scratch + r * kLd + c + 4));
          float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
          const int m = m0 + wm0 + i * 16 + r;
          if (m < Sh::kM) finish(p, batch, m, n0 + wn0 + c, v);
        }
        __syncwarp();
      }
    }
  }
};

/// \brief The entry point of an instantiation for the template tests (the emitted code gives each
/// its own).
template <class K>
__global__ void __launch_bounds__(K::kThreads, 1) kernel(typename K::Params p) {
  K::run(p);
}

}  // namespace smallm
}  // namespace mc

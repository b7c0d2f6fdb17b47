// templates/hopper_gemm.cuh — the Hopper engine (sm_90a): a warp-specialized GEMM and implicit-GEMM
// NHWC convolution on wgmma.mma_async fed by TMA through an mbarrier ring, for FP16 / BF16 (FP32
// accumulators) and INT8 (INT32), with tensor_core.cuh's MMA policies (tc::MmaF16<float>,
// tc::MmaBF16, tc::MmaS8<TA>: their wgmma<N, TransB>) and epilogues (tc::finish_gemm /
// finish_conv over gemm.cuh's functors: bias, activation, residual, cast with clamp; tc8::Epilogue:
// requantize), stored with 16-byte stores.
//
// A block (Tile: BM x BN x BK, Stages, Consumers) is 1 + Consumers warpgroups:
//   the producer (warpgroup 0; setmaxnreg.dec to 40 registers, one thread works): for each K slice
//     of each work unit it waits for the ring stage to be empty (mbarrier `empty`, parity
//     flipped per pass over the ring), announces the stage's bytes (arrive.expect_tx on `full`) and
//     issues the TMA loads of the A and B slices into it;
//   the consumers (warpgroups 1..Consumers; setmaxnreg.inc to 232, or 240 for one): each owns
//     BM / Consumers rows (one or two m64 wgmmas per k step) of all BN columns; per slice they wait
//     for `full`, issue wgmma.fence, the slice's wgmmas (BK x element bytes / 32 k steps) and
//     wgmma.commit_group, then wgmma.wait_group 1 — the previous slice's products are done — and
//     release the previous stage (one arrival per consumer warpgroup on `empty`). So one slice's
//     wgmmas are always in flight while the next one's wait for their data.
// Shared memory: Stages x (A slice, B slice), each 1024-aligned in the shared window (the kernel
// aligns it: the window does not promise 1024), then the 2 x Stages mbarriers, then each consumer
// warp's epilogue scratch (16 x 68 values: tc::band_out in chunks of 64 columns).
//
// Operand layouts (the TMA box and the wgmma descriptor agree on them; host/hopper.h gives the
// PTX ISA's canonical forms): a K-major slice of X rows (A's m, or B's n for a [N][K] B) is
// BK x e / inner boxes of X rows x `inner` bytes, inner = the swizzle span (32, 64, 128) or 16
// without swizzle; descriptors: swizzled SBO 8 x span (next 8 rows), start + 32 bytes per k step
// inside a box; unswizzled SBO 128, LBO one box (next 16 bytes of k). An N-major B slice ([K][N],
// 16-bit only: wgmma's imm-trans-b) is BN x e / inner boxes of BK rows (k) x inner bytes (n):
// swizzled LBO one box (next span of n), SBO 8 x span (next 8 k); unswizzled SBO one box, LBO 128.
//
// Work (a persistent grid; grid(ctas) for ctas blocks resident): tiles in order (n fastest, then m,
// then batch or image). With at least as many tiles as blocks, block c takes tiles c, c + G, ...
// (G = gridDim.x), each over all of K. With fewer (tiles cannot fill the chip), stream-K: the
// tiles' K slices, all of them in order, split evenly over the blocks; a block's part of a tile
// that does not end the tile leaves its accumulators in the workspace (one slot per block, each
// consumer thread its own values and its own flag: no block barrier among the consumers), and the
// block that ends the tile adds the earlier parts, in block order (deterministic for a given G),
// then runs the epilogue; it resets the flags it consumed (zeroed once at create; self-cleaning).
// Stream-K blocks wait for earlier blocks only (they are resident: the grid never exceeds ctas).
//
// Convolution im2col: per-tap tiled TMA loads, not TMA's im2col mode. A tile's M rows are a
// PH x PW rectangle of one image's output pixels; for tap (kh, kw) and channel slice c0 the A slice
// is one 4-D box of X [N][H][W][Cp] at (c0, ow0 sw - pw + kw dw, oh0 sh - ph + kh dh, n) with
// traversal steps (sw, sh): TMA's out-of-bounds zeros are the padding, and the box's rows are
// exactly the tile's pixels, so the same K-major descriptors serve. Why: tiled mode is exact in the
// emulation and needs no im2col tensor map (whose pixel ranges, offsets and wrap-around the
// documentation leaves to examples); the cost is rows of a rectangle that falls off the image's
// edge (7 x 7 outputs in an 8 x 8 rectangle: 77% useful), where im2col mode would pack pixels.
// Taps x Cp / BK slices: a slice that crosses into the next tap's weights meets X's zeros beyond
// Cp. 8-bit activations with a zero point stay on tc8::Conv (TMA pads with 0, not the zero point).
//
// Host side, at create (K::make_maps): the tensor maps, built with mc::make_tensor_map from the
// compile-time shapes and the buffers' addresses, go into Params (passed as a __grid_constant__
// kernel parameter: TMA reads them from there); for stream-K, Params::workspace and flags
// (workspace_bytes(ctas), flag_bytes(ctas)), zeroed once. Launch: K::grid(ctas), K::block(),
// kSmemBytes of dynamic shared memory (cudaFuncSetAttribute above 48 KB), mc::hopper::kernel<K>.
// Builds for sm_90a only (-gencode=arch=compute_90a,code=sm_90a); elsewhere the kernel traps.
#pragma once

#include "tensor_core_int8.cuh"

namespace mc {
namespace hopper {

using tc::PartialOf;

// ---- tiles and staging ----------------------------------------------------------------------------

/// \brief A block tile BM x BN x BK (elements) in a ring of Stages, operands swizzled by Sw, run by
/// Consumers warpgroups (each BM / Consumers = 64 or 128 rows) and one producer warpgroup.
template <int BM, int BN, int BK, int Stages, Swizzle Sw = Swizzle::b128, int Consumers = 2>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kStages = Stages, kConsumers = Consumers;
  static constexpr Swizzle kSwizzle = Sw;
  static constexpr int kSpan = static_cast<int>(Sw);
  static constexpr int kThreads = 128 * (1 + Consumers);
  static constexpr int kConsumerThreads = 128 * Consumers;
  static constexpr int kWgRows = BM / Consumers;  ///< rows of one consumer warpgroup
  static constexpr int kMmaM = kWgRows / 64;      ///< m64 wgmmas per consumer per k step
  static constexpr int kProducerRegs = 40, kConsumerRegs = Consumers == 2 ? 232 : 240;
  static_assert(Consumers == 1 || Consumers == 2, "hopper::Tile: one or two consumer warpgroups");
  static_assert(BM % Consumers == 0 && (kWgRows == 64 || kWgRows == 128), "hopper::Tile: 64 or 128 rows per consumer");
  static_assert(BN % 8 == 0 && BN >= 8 && BN <= 256, "hopper::Tile: BN a multiple of 8 up to 256 (one wgmma's N)");
  static_assert(Stages >= 2 && Stages <= 8, "hopper::Tile: 2..8 stages");
};

/// \brief One stage's K-major slice of X rows by BK elements of E bytes (see the file comment).
template <int X, int BK, int E, int Span>
struct KMajor {
  static constexpr int kInner = Span == 0 ? 16 : Span;
  static_assert((BK * E) % kInner == 0 && (BK * E) % 32 == 0, "hopper::KMajor: BK must span whole boxes and whole k steps");
  static_assert(X % 8 == 0 && X <= 256, "hopper::KMajor: up to 256 rows, a multiple of 8");
  static constexpr int kBoxes = BK * E / kInner, kBoxBytes = X * kInner, kBytes = kBoxes * kBoxBytes;
  static constexpr int kSteps = BK * E / 32;  ///< wgmma k steps
  static constexpr uint32_t kBox[2] = {kInner / E, X};
  /// The descriptor of k step j for the rows from x0 (a multiple of 8) of the slice at `base`.
  __device__ __forceinline__ static uint64_t desc(unsigned base, int j, int x0) {
    if constexpr (Span == 0) {
      return wgmma_descriptor(base + 2 * j * kBoxBytes + x0 * 16, kBoxBytes, 128, Swizzle::none);
    } else {
      return wgmma_descriptor(base + (j * 32 / Span) * kBoxBytes + x0 * Span + (j * 32) % Span, 16, 8 * Span,
                              static_cast<Swizzle>(Span));
    }
  }
  /// Box b's k offset (elements) within the slice, and its place in the stage.
  __host__ __device__ static constexpr int box_k(int b) { return b * (kInner / E); }
  __host__ __device__ static constexpr int box_offset(int b) { return b * kBoxBytes; }
};

/// \brief One stage's N-major slice (a [K][N] B of 16-bit elements) of BK rows of k by X columns.
template <int X, int BK, int E, int Span>
struct NMajor {
  static constexpr int kInner = Span == 0 ? 16 : Span;
  static_assert(E == 2, "hopper::NMajor: only 16-bit operands may be N-major (wgmma's imm-trans-b)");
  static_assert((X * E) % kInner == 0 && BK % 16 == 0 && BK <= 256, "hopper::NMajor: whole boxes of n, whole k steps");
  static constexpr int kBoxes = X * E / kInner, kBoxBytes = BK * kInner, kBytes = kBoxes * kBoxBytes;
  static constexpr int kSteps = BK / 16;
  static constexpr uint32_t kBox[2] = {kInner / E, BK};
  __device__ __forceinline__ static uint64_t desc(unsigned base, int j, int) {
    if constexpr (Span == 0) {
      return wgmma_descriptor(base + j * 16 * 16, 128, kBoxBytes, Swizzle::none);
    } else {
      return wgmma_descriptor(base + j * 16 * Span, kBoxBytes, 8 * Span, static_cast<Swizzle>(Span));
    }
  }
  __host__ __device__ static constexpr int box_n(int b) { return b * (kInner / E); }
  __host__ __device__ static constexpr int box_offset(int b) { return b * kBoxBytes; }
};

constexpr int align1024(int b) { return (b + 1023) / 1024 * 1024; }

/// \brief The ring's bookkeeping: slice g (counted over the block's work) uses stage g % S; the wait
/// for its data (`full`) is for the phase of parity (g / S) & 1, the producer's wait for its stage
/// (`empty`) for the other parity: the first pass finds every stage empty. A problem may bring its
/// own Ring (the tests plant a wrong phase through it).
template <int S>
struct Ring {
  __device__ __forceinline__ static int stage(int g) { return g % S; }
  __device__ __forceinline__ static unsigned full_parity(int g) { return static_cast<unsigned>(g / S) & 1u; }
  __device__ __forceinline__ static unsigned empty_parity(int g) { return (static_cast<unsigned>(g / S) & 1u) ^ 1u; }
};
template <class P, class = void>
struct RingOf {
  using type = Ring<P::Tl::kStages>;
};
template <class P>
struct RingOf<P, std::void_t<typename P::Ring>> {
  using type = typename P::Ring;
};

// ---- the kernel ---------------------------------------------------------------------------------------
// A problem P (GemmProblem, ConvProblem below) gives: Mma, Tl, the staging SA / SB and kTransB, the
// number of tiles and of K slices a tile, Params (maps, outputs, epilogue, workspace, flags), and
// load(p, a_stage, b_stage, bar, tile, slice) (the producer's TMA loads: all of a stage's boxes),
// store(p, ctx, tile, row, col, v[8]) (the epilogue of 8 outputs of one row; ctx: context(p)).

/// \brief The persistent warp-specialized kernel of problem P (see the file comment).
template <class P>
struct Kernel : P {
  using Mma = typename P::Mma;
  using Tl = typename P::Tl;
  using Acc = typename Mma::Acc;
  using SA = typename P::SA;
  using SB = typename P::SB;
  using R = typename RingOf<P>::type;
  static_assert(Mma::kWgmma, "hopper: an MMA policy with wgmma (FP32 or INT32 accumulators)");
  static constexpr int kR = Tl::kBN / 2;  ///< accumulator registers of one m64 wgmma per thread
  static constexpr int kStageA = align1024(SA::kBytes), kStageB = align1024(SB::kBytes);
  static constexpr int kStageBytes = kStageA + kStageB;
  static constexpr int kScratchLd = 68;  ///< 64 columns + 4
  static constexpr int kScratchBytes = Tl::kConsumers * 4 * 16 * kScratchLd * 4;
  static constexpr int kSmemBytes = 1024 + Tl::kStages * kStageBytes + 16 * Tl::kStages + kScratchBytes;
  static_assert(kSmemBytes <= 227 * 1024, "hopper: the tile's stages, barriers and scratch exceed 227 KB of shared memory");
  static_assert(SA::kSteps == SB::kSteps, "hopper: A and B slices of one depth");
  static constexpr int kThreads = Tl::kThreads;
  using Params = typename P::Params;
  static constexpr int kValues = Tl::kMmaM * kR;  ///< accumulators per consumer thread

  /// The work units of this block: f(tile, first slice, end slice), in order.
  template <class F>
  __device__ __forceinline__ static void for_each_unit(const F& f) {
    const int G = static_cast<int>(gridDim.x), c = static_cast<int>(blockIdx.x);
    constexpr int kTiles = P::kTiles, kIters = P::kIters;
    if (kTiles >= G) {
      for (int t = c; t < kTiles; t += G) f(t, 0, kIters);
      return;
    }
    const int64_t total = static_cast<int64_t>(kTiles) * kIters;
    const int64_t end = (c + 1) * total / G;
    for (int64_t pos = c * total / G; pos < end;) {
      const int t = static_cast<int>(pos / kIters), kb = static_cast<int>(pos % kIters);
      const int ke = static_cast<int64_t>(kIters - kb) < end - pos ? kIters : kb + static_cast<int>(end - pos);
      f(t, kb, ke);
      pos += ke - kb;
    }
  }

  __device__ static void run(const typename P::Params& p) {
    unsigned char* raw = dynamic_smem<unsigned char>();
    unsigned char* smem = raw + (1024 - smem_address(raw) % 1024) % 1024;
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + Tl::kStages * kStageBytes);
    uint64_t* empty = full + Tl::kStages;
    const int tid = static_cast<int>(threadIdx.x);
    if (tid == 0) {
      for (int s = 0; s < Tl::kStages; ++s) {
        mbarrier_init(&full[s], 1);
        mbarrier_init(&empty[s], Tl::kConsumers);
      }
      fence_mbarrier_init();
    }
    __syncthreads();  // the last block-wide barrier: the roles split here
    if (tid < 128) {
      setmaxnreg_dec<Tl::kProducerRegs>();
      if (tid == 0) produce(p, smem, full, empty);
    } else {
      setmaxnreg_inc<Tl::kConsumerRegs>();
      consume(p, smem, full, empty);
    }
  }

  __device__ __forceinline__ static void produce(const typename P::Params& p, unsigned char* smem, uint64_t* full,
                                                 uint64_t* empty) {
    int g = 0;  // slices through the ring so far
    for_each_unit([&](int tile, int kb, int ke) {
      for (int it = kb; it < ke; ++it, ++g) {
        const int s = R::stage(g);
        mbarrier_wait(&empty[s], R::empty_parity(g));
        mbarrier_arrive_expect_tx(&full[s], SA::kBytes + SB::kBytes);
        P::load(p, smem + s * kStageBytes, smem + s * kStageBytes + kStageA, &full[s], tile, it);
      }
    });
  }

  __device__ __forceinline__ static void consume(const typename P::Params& p, unsigned char* smem, uint64_t* full,
                                                 uint64_t* empty) {
    const int ct = static_cast<int>(threadIdx.x) - 128;  // consumer thread 0 .. kConsumerThreads - 1
    const int wg = ct / 128, warp = ct / 32;
    const unsigned base = smem_address(smem);
    PartialOf<Acc>* scratch = reinterpret_cast<PartialOf<Acc>*>(smem + Tl::kStages * kStageBytes + 16 * Tl::kStages) +
                              warp * 16 * kScratchLd;
    const auto ctx = P::context(p);
    Acc d[Tl::kMmaM][kR];
    int g = 0;
    for_each_unit([&](int tile, int kb, int ke) {
      for (int it = kb; it < ke; ++it, ++g) {
        const int s = R::stage(g);
        mbarrier_wait(&full[s], R::full_parity(g));
        const unsigned a = base + s * kStageBytes, b = a + kStageA;
        wgmma_fence();
        MC_UNROLL
        for (int i = 0; i < Tl::kMmaM; ++i) wgmma_fence_operand(d[i]);
        MC_UNROLL
        for (int j = 0; j < SA::kSteps; ++j) {
          MC_UNROLL
          for (int i = 0; i < Tl::kMmaM; ++i)
            Mma::template wgmma<Tl::kBN, P::kTransB>(d[i], SA::desc(a, j, wg * Tl::kWgRows + i * 64), SB::desc(b, j, 0),
                                                     it > kb || j > 0);
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous slice's wgmmas are done: its stage may refill
        MC_UNROLL
        for (int i = 0; i < Tl::kMmaM; ++i) wgmma_fence_operand(d[i]);
        if (it > kb && ct % 128 == 0) mbarrier_arrive(&empty[R::stage(g - 1)]);
      }
      wgmma_wait<0>();
      MC_UNROLL
      for (int i = 0; i < Tl::kMmaM; ++i) wgmma_fence_operand(d[i]);
      if (ct % 128 == 0) mbarrier_arrive(&empty[R::stage(g - 1)]);
      if (!stream_k_fixup(p, tile, kb, ke, ct, d)) return;  // a part handed on to the block that ends the tile
      // The warp's 16-row bands, 64 columns at a time through its scratch (the last chunk narrower).
      MC_UNROLL
      for (int i = 0; i < Tl::kMmaM; ++i) {
        const int row0 = wg * Tl::kWgRows + i * 64 + (warp % 4) * 16;
        auto chunk = [&](auto cols, int c0) {
          tc::band_out<decltype(cols)::value, kScratchLd>(
              [&](int jj, int e) { return d[i][4 * (c0 / 8 + jj) + e]; }, scratch,
              [&](int r, int c, PartialOf<Acc> (&v)[8]) { P::store(p, ctx, tile, row0 + r, c0 + c, v); });
        };
        MC_UNROLL
        for (int c0 = 0; c0 + 64 <= Tl::kBN; c0 += 64) chunk(std::integral_constant<int, 64>{}, c0);
        if constexpr (Tl::kBN % 64 != 0) chunk(std::integral_constant<int, Tl::kBN % 64>{}, Tl::kBN / 64 * 64);
      }
    });
  }

  /// Stream-K: a part that does not end its tile goes to the workspace (false: no epilogue here);
  /// the part that ends it adds the earlier blocks' parts, in block order. Data-parallel units pass.
  __device__ __forceinline__ static bool stream_k_fixup(const typename P::Params& p, int tile, int kb, int ke, int ct,
                                                        Acc (&d)[Tl::kMmaM][kR]) {
    constexpr int kIters = P::kIters, CT = Tl::kConsumerThreads;
    if (kb == 0 && ke == kIters) return true;
    const int G = static_cast<int>(gridDim.x), c = static_cast<int>(blockIdx.x);
    if (ke < kIters) {
      PartialOf<Acc>* slot = p.workspace + static_cast<int64_t>(c) * kValues * CT + ct;
      MC_UNROLL
      for (int i = 0; i < Tl::kMmaM; ++i) {
        MC_UNROLL
        for (int v = 0; v < kR; ++v) slot[(i * kR + v) * CT] = d[i][v];
      }
      grid_flag_set(&p.flags[c * CT + ct], 1);
      return false;
    }
    const int64_t total = static_cast<int64_t>(P::kTiles) * kIters, start = static_cast<int64_t>(tile) * kIters;
    int first = c;  // the earliest block whose part of the tile ends after its start
    while (first > 0 && static_cast<int64_t>(first) * total / G > start) --first;
    for (int o = first; o < c; ++o) {
      grid_flag_wait(&p.flags[o * CT + ct], 1);
      const PartialOf<Acc>* slot = p.workspace + static_cast<int64_t>(o) * kValues * CT + ct;
      MC_UNROLL
      for (int i = 0; i < Tl::kMmaM; ++i) {
        MC_UNROLL
        for (int v = 0; v < kR; ++v) d[i][v] += slot[(i * kR + v) * CT];
      }
      grid_flag_set(&p.flags[o * CT + ct], 0);  // consumed: ready for the next launch
    }
    return true;
  }

  /// Blocks for `ctas` resident ones: every tile, at most ctas at a time; stream-K when fewer.
  static dim3 grid(int ctas) {
    const int64_t total = static_cast<int64_t>(P::kTiles) * P::kIters;
    return dim3(static_cast<unsigned>(P::kTiles >= ctas ? ctas : (total < ctas ? total : ctas)));
  }
  static dim3 block() { return dim3(kThreads); }
  /// Stream-K's workspace (partial accumulators) and flags for a grid of `ctas` blocks.
  static size_t workspace_bytes(int ctas) { return static_cast<size_t>(ctas) * kValues * Tl::kConsumerThreads * 4; }
  static size_t flag_bytes(int ctas) { return static_cast<size_t>(ctas) * Tl::kConsumerThreads * 4; }
};

/// \brief The stream-K fields every Params carries.
template <class Acc>
struct StreamK {
  PartialOf<Acc>* workspace = nullptr;  ///< stream-K: workspace_bytes(ctas), zeroed at create
  unsigned* flags = nullptr;            ///< stream-K: flag_bytes(ctas), zeroed at create
};

/// \brief Builds a 2-D or 3-D tensor map of a matrix slice staging (KMajor / NMajor) over a tensor
/// of `inner` x `outer` (x `batches`) elements of E bytes, rows `row_bytes` apart, batches
/// `batch_bytes` apart (ignored for one batch).
template <class St, int E, int Span>
inline cudaError_t make_operand_map(TensorMap* map, const void* data, uint64_t inner, uint64_t outer, uint64_t row_bytes,
                                    uint64_t batches, uint64_t batch_bytes) {
  const uint64_t dims[3] = {inner, outer, batches}, strides[2] = {row_bytes, batch_bytes};
  const uint32_t box[3] = {St::kBox[0], St::kBox[1], 1}, steps[3] = {1, 1, 1};
  return make_tensor_map(map, E, batches > 1 ? 3 : 2, data, dims, strides, box, steps, static_cast<Swizzle>(Span));
}

// ---- the GEMM -----------------------------------------------------------------------------------------

/// \brief Y = Epi(A x B), batched, on the Hopper engine: Mma a tc policy (MmaF16<float>, MmaBF16:
/// TY as tc::Gemm's, Epi a gemm.cuh epilogue; MmaS8<TA>: Epi a tc8::Epilogue, B int8 [N][K]); Sh,
/// SA, SB, SY as tc::Gemm's, with A K-major (SA::kCol == 1), B K-major ([N][K]: SB::kRow == 1) or,
/// 16-bit only, N-major (SB::kCol == 1), and each operand's batch a single stride (its three batch
/// dims flatten to one: S0 = S1 x B1, S1 = S2 x B2 over the dims > 1) or 0 (broadcast). Rows,
/// columns and batches at multiples of 16 bytes (TMA's strides).
template <class MmaT, class TY, class Sh, class SAt, class SBt, class SY, class TileT, class Epi>
struct GemmProblem {
  using Mma = MmaT;
  using Tl = TileT;
  using TA = typename Mma::TA;
  using TB = typename Mma::TB;
  static constexpr int E = sizeof(TA);
  static constexpr bool kTransB = SBt::kCol == 1 && SBt::kRow != 1;
  static_assert(SAt::kCol == 1, "hopper::Gemm: A must be K-major (k contiguous)");
  static_assert(SBt::kRow == 1 || (SBt::kCol == 1 && E == 2), "hopper::Gemm: B K-major, or N-major for 16-bit operands");
  using SA = KMajor<Tl::kBM, Tl::kBK, E, Tl::kSpan>;
  using SB = typename std::conditional<kTransB, NMajor<Tl::kBN, Tl::kBK, E, Tl::kSpan>, KMajor<Tl::kBN, Tl::kBK, E, Tl::kSpan>>::type;
  static constexpr int kTilesM = (Sh::kM + Tl::kBM - 1) / Tl::kBM, kTilesN = (Sh::kN + Tl::kBN - 1) / Tl::kBN;
  static constexpr int kTiles = Sh::kBatch * kTilesM * kTilesN, kIters = (Sh::kK + Tl::kBK - 1) / Tl::kBK;

  /// An operand's flattened batch stride (elements; 0 broadcast), checked against its three dims.
  template <class S>
  static constexpr int64_t batch_stride() {
    return Sh::kB2 > 1 ? S::kS2 : Sh::kB1 > 1 ? S::kS1 : S::kS0;
  }
  template <class S>
  static constexpr bool flat() {
    return (Sh::kB1 == 1 || Sh::kB2 == 1 || S::kS1 == S::kS2 * Sh::kB2) &&
           (Sh::kB0 == 1 || (Sh::kB1 == 1 && Sh::kB2 == 1) || S::kS0 == (Sh::kB1 > 1 ? S::kS1 * Sh::kB1 : S::kS2 * Sh::kB2));
  }
  static_assert(flat<SAt>() && flat<SBt>(), "hopper::Gemm: each operand's batch dims must flatten to one stride");
  static constexpr bool kBatchedA = Sh::kBatch > 1 && batch_stride<SAt>() != 0;
  static constexpr bool kBatchedB = Sh::kBatch > 1 && batch_stride<SBt>() != 0;

  struct Params : StreamK<typename Mma::Acc> {
    TensorMap a, b;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
  };

  /// The tensor maps of A and B at create.
  static cudaError_t make_maps(Params& p, const TA* A, const TB* B) {
    constexpr int64_t ba = batch_stride<SAt>(), bb = batch_stride<SBt>();
    const uint64_t na = kBatchedA ? Sh::kBatch : 1, nb = kBatchedB ? Sh::kBatch : 1;
    cudaError_t e = make_operand_map<SA, E, Tl::kSpan>(&p.a, A, Sh::kK, Sh::kM, SAt::kRow * E, na, ba * E);
    if (e == cudaSuccess) {
      e = kTransB ? make_operand_map<SB, E, Tl::kSpan>(&p.b, B, Sh::kN, Sh::kK, SBt::kRow * E, nb, bb * E)
                  : make_operand_map<SB, E, Tl::kSpan>(&p.b, B, Sh::kK, Sh::kN, SBt::kCol * E, nb, bb * E);
    }
    return e;
  }

  __device__ __forceinline__ static void where(int tile, int& batch, int& m0, int& n0) {
    batch = tile / (kTilesM * kTilesN);
    m0 = (tile / kTilesN) % kTilesM * Tl::kBM;
    n0 = tile % kTilesN * Tl::kBN;
  }

  /// The producer's TMA loads of slice `it` of `tile`: every box of A's and B's stage.
  __device__ __forceinline__ static void load(const Params& p, unsigned char* sa, unsigned char* sb, uint64_t* bar, int tile,
                                              int it) {
    int batch, m0, n0;
    where(tile, batch, m0, n0);
    const int k0 = it * Tl::kBK;
    MC_UNROLL
    for (int x = 0; x < SA::kBoxes; ++x) load_box<kBatchedA>(sa + SA::box_offset(x), &p.a, bar, k0 + SA::box_k(x), m0, batch);
    MC_UNROLL
    for (int x = 0; x < SB::kBoxes; ++x) {
      if constexpr (kTransB) {
        load_box<kBatchedB>(sb + SB::box_offset(x), &p.b, bar, n0 + SB::box_n(x), k0, batch);
      } else {
        load_box<kBatchedB>(sb + SB::box_offset(x), &p.b, bar, k0 + SB::box_k(x), n0, batch);
      }
    }
  }
  /// One box: a 3-D map for an operand with its own batches, else 2-D (one batch, or broadcast).
  template <bool kBatched>
  __device__ __forceinline__ static void load_box(unsigned char* dst, const TensorMap* map, uint64_t* bar, int c0, int c1,
                                                  int batch) {
    if constexpr (kBatched) {
      tma_load<3>(dst, map, bar, {c0, c1, batch});
    } else {
      tma_load<2>(dst, map, bar, {c0, c1});
    }
  }

  /// The epilogue's context: the activation zero point for the integer epilogue (0 otherwise).
  __device__ __forceinline__ static int context(const Params& p) {
    if constexpr (std::is_same<typename Mma::Acc, int>::value) {
      return Epi::template zero_point<TA>(p.epilogue);
    } else {
      (void)p;
      return 0;
    }
  }

  template <class V>
  __device__ __forceinline__ static void store(const Params& p, int zx, int tile, int row, int col, V (&v)[8]) {
    int batch, m0, n0;
    where(tile, batch, m0, n0);
    const int m = m0 + row, n = n0 + col;
    if (m >= Sh::kM || n >= Sh::kN) return;
    if constexpr (std::is_same<typename Mma::Acc, int>::value) {
      static_assert(Sh::kBatch == 1, "hopper::Gemm: the integer epilogue addresses one batch");
      const int64_t off = static_cast<int64_t>(m) * SY::kRow + n;
      Epi::template apply<Sh::kN>(p.epilogue, zx, v, n, p.Y + off, off, SY::kRow % 8 == 0 && n + 8 <= Sh::kN);
    } else {
      (void)zx;
      tc::finish_gemm<Sh, SY, Epi>(p.epilogue, p.Y, batch, m, n, v);
    }
  }
};

/// \brief The Hopper GEMM (GemmProblem's parameters; the kernel contract of Kernel).
template <class Mma, class TY, class Sh, class SA, class SB, class SY, class Tl, class Epi>
using Gemm = Kernel<GemmProblem<Mma, TY, Sh, SA, SB, SY, Tl, Epi>>;

// ---- the convolution --------------------------------------------------------------------------------

/// \brief Y = Epi(conv(X, W)) on the Hopper engine, groups = 1, 2-D, NHWC: X [N][H][W][Cp] and W
/// OHWI [M][KH][KW][Cp] of Mma's operand types (Cp x e a multiple of 16 bytes), Y [N][OH][OW][Yp]
/// of TY; a tile's rows are PH x PW output pixels of one image (PH x PW = BM). Epi as GemmProblem's
/// (the integer epilogue without a zero point: the padding reads 0).
template <class MmaT, class TY, class Sh, int Cp, int Yp, class TileT, class Epi, int PH, int PW>
struct ConvProblem {
  using Mma = MmaT;
  using Tl = TileT;
  using TA = typename Mma::TA;
  using TB = typename Mma::TB;
  using I = typename Sh::InDims;        // the image,
  using O = typename Sh::OutDims;       // the output,
  using KD = typename Sh::KernelDims;   // the taps;
  using S = typename Sh::StrideDims;    // their strides, pads, dilations
  static constexpr int E = sizeof(TA);
  static constexpr bool kTransB = false;
  static_assert(Sh::kG == 1 && KD::kD == 1 && I::kD == 1 && O::kD == 1, "hopper::Conv: 2-D, groups = 1");
  static_assert(PH * PW == Tl::kBM, "hopper::Conv: a tile's pixel rectangle is its BM rows");
  static_assert(Cp >= Sh::kC && (Cp * E) % 16 == 0 && Yp >= Sh::kM, "hopper::Conv: channel pitches of whole 16 bytes");
  static_assert(PW * S::kW <= 256 && PH * S::kH <= 256, "hopper::Conv: a box spans at most 256 elements a dim");
  using SA = KMajor<Tl::kBM, Tl::kBK, E, Tl::kSpan>;
  using SB = KMajor<Tl::kBN, Tl::kBK, E, Tl::kSpan>;
  static constexpr int kTilesH = (O::kH + PH - 1) / PH, kTilesW = (O::kW + PW - 1) / PW;
  static constexpr int kTilesN = (Sh::kM + Tl::kBN - 1) / Tl::kBN;
  static constexpr int kTiles = Sh::kN * kTilesH * kTilesW * kTilesN;
  static constexpr int kChunks = (Cp + Tl::kBK - 1) / Tl::kBK;  ///< slices per tap
  static constexpr int kIters = KD::kH * KD::kW * kChunks;
  static constexpr int kK = KD::kH * KD::kW * Cp;  ///< W's row length

  struct Params : StreamK<typename Mma::Acc> {
    TensorMap x, w;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
  };

  /// The tensor maps of X (4-D, the strided pixel box: TMA's traversal steps are the strides) and
  /// W (2-D, [M][K]) at create.
  static cudaError_t make_maps(Params& p, const TA* X, const TB* W) {
    const uint64_t dims[4] = {Cp, I::kW, I::kH, Sh::kN};
    const uint64_t strides[3] = {uint64_t{Cp} * E, uint64_t{I::kW} * Cp * E, uint64_t{I::kH} * I::kW * Cp * E};
    const uint32_t box[4] = {SA::kBox[0], PW * S::kW, PH * S::kH, 1}, steps[4] = {1, S::kW, S::kH, 1};
    const cudaError_t e = make_tensor_map(&p.x, E, 4, X, dims, strides, box, steps, Tl::kSwizzle);
    return e == cudaSuccess ? make_operand_map<SB, E, Tl::kSpan>(&p.w, W, kK, Sh::kM, uint64_t{kK} * E, 1, 0) : e;
  }

  /// Tile t: its image, first output row and column, and first output channel.
  __device__ __forceinline__ static void where(int tile, int& n, int& oh0, int& ow0, int& m0) {
    m0 = tile % kTilesN * Tl::kBN;
    const int pix = tile / kTilesN;
    ow0 = pix % kTilesW * PW;
    oh0 = pix / kTilesW % kTilesH * PH;
    n = pix / (kTilesW * kTilesH);
  }

  __device__ __forceinline__ static void load(const Params& p, unsigned char* sa, unsigned char* sb, uint64_t* bar, int tile,
                                              int it) {
    int n, oh0, ow0, m0;
    where(tile, n, oh0, ow0, m0);
    const int tap = it / kChunks, c0 = it % kChunks * Tl::kBK;
    const int kh = tap / KD::kW, kw = tap % KD::kW;
    using Pd = typename Sh::PadDims;
    using Dl = typename Sh::DilationDims;
    const int ih0 = oh0 * S::kH - Pd::kH + kh * Dl::kH, iw0 = ow0 * S::kW - Pd::kW + kw * Dl::kW;
    MC_UNROLL
    for (int x = 0; x < SA::kBoxes; ++x) tma_load<4>(sa + SA::box_offset(x), &p.x, bar, {c0 + SA::box_k(x), iw0, ih0, n});
    MC_UNROLL
    for (int x = 0; x < SB::kBoxes; ++x) tma_load<2>(sb + SB::box_offset(x), &p.w, bar, {tap * Cp + c0 + SB::box_k(x), m0});
  }

  __device__ __forceinline__ static int context(const Params& p) {
    if constexpr (std::is_same<typename Mma::Acc, int>::value) {
      static_assert(!Epi::kUsesZeroPoint, "hopper::Conv: activations with a zero point stay on tc8::Conv");
    }
    (void)p;
    return 0;
  }

  template <class V>
  __device__ __forceinline__ static void store(const Params& p, int zx, int tile, int row, int col, V (&v)[8]) {
    int n, oh0, ow0, m0;
    where(tile, n, oh0, ow0, m0);
    const int oh = oh0 + row / PW, ow = ow0 + row % PW, m = m0 + col;
    if (oh >= O::kH || ow >= O::kW || m >= Sh::kM) return;
    const int j = (n * O::kH + oh) * O::kW + ow;
    if constexpr (std::is_same<typename Mma::Acc, int>::value) {
      const int64_t off = static_cast<int64_t>(j) * Yp + m;
      Epi::template apply<Sh::kM>(p.epilogue, zx, v, m, p.Y + off, off, Yp % 8 == 0 && m + 8 <= Sh::kM);
    } else {
      (void)zx;
      tc::finish_conv<Sh, Yp, Epi>(p.epilogue, p.Y, j, m, v);
    }
  }
};

/// \brief The Hopper convolution (ConvProblem's parameters; the kernel contract of Kernel).
template <class Mma, class TY, class Sh, int Cp, int Yp, class Tl, class Epi, int PH, int PW>
using Conv = Kernel<ConvProblem<Mma, TY, Sh, Cp, Yp, Tl, Epi, PH, PW>>;

/// \brief The blocks a Hopper kernel of `tiles` tiles runs on the current device when it has no
/// stream-K workspace (what modelc's emitted launches do): one per SM (the grid must be resident:
/// one block per SM), at most one per tile, so grid() never splits a tile's K; at least 1.
inline cudaError_t persistent_ctas(int tiles, int* ctas) {
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  *ctas = sms < tiles ? sms : tiles;
  if (*ctas < 1) *ctas = 1;
  return e;
}

/// \brief The entry point of a Hopper kernel K (the emitted code's is the same: a register cap at
/// entry, one block per SM, Params as a __grid_constant__ parameter the TMA reads the maps from).
template <class K>
__global__ void __launch_bounds__(K::kThreads, 1) kernel(const __grid_constant__ typename K::Params p) {
  K::run(p);
}

}  // namespace hopper
}  // namespace mc

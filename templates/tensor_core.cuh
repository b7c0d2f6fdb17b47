// templates/tensor_core.cuh — the tensor-core GEMM and implicit-GEMM convolution (sm_75 and newer):
// mma.sync m16n8k16 on 16-bit operands of type T, FP16 (__half; two m16n8k8 on sm_75:
// runtime_stub/device.h) or BF16 (mc::bf16; sm_80 and newer), fragments loaded with ldmatrix, an
// FP32 (or, FP16 only, with --fp16-accumulate, FP16) accumulator. The two types share everything
// but the MMA instruction (tc::mma): 2 bytes an element, 8 to a 16-byte chunk, the same ldmatrix
// and fragment layouts.
//
// The main loop (Mainloop): a block computes a BM x BN tile of the GEMM; its warps form a
// kWarpsM x kWarpsN grid, each warp owning (BM / kWarpsM) x (BN / kWarpsN) outputs as a grid of
// m16n8 MMA tiles (Accum: the lane's accumulator registers). The K loop walks BK-deep slices (BK a
// multiple of 16); each slice of A (BM x BK) and B (BK x BN) is staged in shared memory, every row
// padded by 8 halves (16 bytes): the 8 rows an ldmatrix phase reads then start in distinct bank
// groups, and the 16-byte chunk stores are conflict-free. An operand is staged in its own
// contiguous direction (StageLayout: k-fast [X][BK + 8] or x-fast [BK][X + 8]); ldmatrix reads the
// k-fast form as is and the x-fast form with .trans, so a transposed operand costs nothing. Per 16
// of k a warp issues one ldmatrix.x4 per 16 rows of A and per 16 columns of B, then one mma per
// m16n8 tile. Stage addresses are computed (stage x bytes per stage), never indexed pointers: no
// local memory.
//
// Staging (Tile's kAsync, kStages):
//   async (sm_80+): kStages stages in flight; slice s + kStages - 1 goes global -> shared with
//     mc::cp_async_16 (its src-size zero-fills what lies outside the matrix) while slice s is
//     computed; one commit group per slice, cp_async_wait<kStages - 2> and one barrier per slice.
//   registers (sm_75): two stages; the next slice's chunks are loaded into registers before the
//     slice's MMAs are issued and written to the other stage after them.
// An operand whose contiguous dim allows 16-byte loads (stride 1, the other strides multiples of
// 8 halves) is read in 16-byte vectors; any other operand is read element by element, masked
// (always through registers), and still runs on tensor cores. Out-of-range elements read 0, so
// any M, N, K works. The shared memory is dynamic (kSmemBytes; above 48 KiB the emitted prepare
// function raises the kernel's limit at create), and every access to it goes through cp.async,
// ldmatrix or mc::st_shared / ld_shared: the emulation's race check sees them all.
//
// Split-K (Tile's kSplitK > 1): grid z also walks the splits of the K slices (split_slices); each
// block writes its FP32 partial sums to Params::partial, and a second launch, SplitKReduce, adds
// the splits in order (the same bits on every run: no atomics) and runs the epilogue.
//
// Epilogue: per 16-row band of its tile each warp writes its accumulators to its own shared scratch
// (FP32), then each lane takes runs of 8 consecutive columns of one row (for_each_output) and the
// kernel's finish() applies the gemm.cuh epilogue (EpilogueIdentity / Linear / Bias / Fused: bias,
// activation, residual; gemm::apply8 reads bias and residual 16 bytes at a time) in FP32 and
// stores TY: a cast (to __half: finite values clamped to +-65504 first), with one or two 16-byte
// stores where the output is contiguous along the columns, element stores otherwise. A
// horizontally fused kernel (EpilogueRanges) stores each channel in its range's output instead.
//
// Kernels: Gemm (batched strided GEMM, as mc::gemm::Gemm) and Conv (implicit GEMM over NHWC
// views with channel pitches: GEMM rows are output pixels, columns output channels, depth
// k = (tap, c) with c fastest over the pitch Cp; channels >= C are masked, never read as data;
// or, in the compact-K form, over the C channels only: K = taps x C, W's rows padded to a multiple
// of 8), and SplitKReduce of either. Each follows the kernel contract of codegen/launch.h (Params,
// kThreads, kSmemBytes, grid(), block(), run); the emitted code gives every instantiation an entry
// point of its own, the tests use mc::tc::kernel<K>.
#pragma once

#include "conv.cuh"
#include "gemm.cuh"

namespace mc {
namespace tc {


// ---- tiles -----------------------------------------------------------------------------------

/// \brief A block tile BM x BN x BK run by WarpsM x WarpsN warps. Async: cp.async staging in Stages
/// stages (sm_80+); otherwise register staging in two. SplitK: the K slices split into SplitK
/// parts, each a block of its own (grid z), their FP32 partial sums added by SplitKReduce.
template <int BM, int BN, int BK, int WarpsM, int WarpsN, bool Async, int Stages = 2, int SplitK = 1>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN, kWarps = WarpsM * WarpsN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWarpTileM = BM / WarpsM, kWarpTileN = BN / WarpsN;
  static constexpr int kFragM = kWarpTileM / 16, kFragN = kWarpTileN / 8;  ///< m16n8 MMA tiles per warp
  static constexpr bool kAsync = Async;
  static constexpr int kStages = Stages, kSplitK = SplitK;
  static_assert(BK % 16 == 0, "tc::Tile: BK must be a multiple of 16");
  static_assert(BM % (16 * WarpsM) == 0 && BN % (16 * WarpsN) == 0,
                "tc::Tile: each warp's tile must be a whole number of 16 x 16 blocks");
  static_assert(Async ? Stages >= 2 && Stages <= 6 : Stages == 2,
                "tc::Tile: 2..6 cp.async stages, or two register-staged ones");
  static_assert(SplitK >= 1, "tc::Tile: SplitK >= 1");
};

/// \brief Shared-memory layout of one stage of an operand slice of X (rows m of A, or columns n
/// of B) by BK: k-fast [X][BK + 8] or x-fast [BK][X + 8], in 16-bit elements.
template <int X, int BK, bool KFast>
struct StageLayout {
  static constexpr int kLd = KFast ? BK + 8 : X + 8;
  static constexpr int kElems = KFast ? X * kLd : BK * kLd;
  static constexpr int kBytes = kElems * 2;  // a multiple of 32: X and BK are multiples of 16
  __device__ __forceinline__ static int offset(int x, int k) { return KFast ? x * kLd + k : k * kLd + x; }
};

/// \brief The chunks (8 consecutive elements along the fast dim) of an X x BK slice, spread over NT
/// threads: chunk c = tid + i * NT. Consecutive threads take consecutive chunks along the fast dim.
template <int X, int BK, bool KFast, int NT>
struct Chunks {
  static constexpr int kPerSlice = X * BK / 8;
  static_assert(kPerSlice % NT == 0, "tc::Chunks: the slice must split evenly over the threads");
  static constexpr int kCount = kPerSlice / NT;
  __device__ __forceinline__ static int x(int c) { return KFast ? c / (BK / 8) : (c % (X / 8)) * 8; }
  __device__ __forceinline__ static int k(int c) { return KFast ? (c % (BK / 8)) * 8 : c / (X / 8); }
};

/// \brief 8 elements of T (__half or bf16) in registers (one 16-byte chunk): moved as one uint4, built
/// element-wise (a union: the two views alias by definition).
template <class T>
union Chunk {
  static_assert(sizeof(T) == 2, "tc::Chunk: 16-bit elements");
  uint4 v;
  T h[8];
};

/// \brief acc += a x b: one m16n8k16 MMA of the fragments a (A, 16 x 16) and b (B, 16 x 8) of T
/// elements: FP16 (mc::mma_m16n8k16, FP32 or FP16 accumulators) or BF16 (mc::mma_m16n8k16_bf16, FP32
/// accumulators, sm_80 and newer).
template <class T, class AccRegs>
__device__ __forceinline__ void mma(AccRegs& acc, const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (std::is_same<T, bf16>::value) {
    mma_m16n8k16_bf16(acc, a, b, acc);
  } else {
    static_assert(std::is_same<T, __half>::value, "tc: operands are __half or mc::bf16");
    mma_m16n8k16(acc, a, b, acc);
  }
}

// ---- operand loaders --------------------------------------------------------------------------
// Interface: kKFast, kVector, Layout (StageLayout), kCount; load(k0, Chunk[kCount]) (registers),
// store(Chunk[kCount], stage), async(k0, stage) (cp.async where kVector, else load + store).

/// \brief A strided matrix operand of T: element (x, k) at base[x * SX + k * SK], 0 outside X x K.
/// Vec: 16-byte loads are allowed when the strides permit (the caller's base is 16-byte aligned).
template <class T, int X, int K, int64_t SX, int64_t SK, int BK, int BX, int NT, bool Vec>
struct OperandLoader {
  using Elem = T;
  static constexpr bool kKFast = !(SX == 1 && SK != 1);
  static constexpr int64_t kSFast = kKFast ? SK : SX, kSSlow = kKFast ? SX : SK;
  static constexpr int kFast = kKFast ? K : X, kSlow = kKFast ? X : K;
  static constexpr bool kVector = Vec && kSFast == 1 && kSSlow % 8 == 0;
  using Map = Chunks<BX, BK, kKFast, NT>;
  using Layout = StageLayout<BX, BK, kKFast>;
  static constexpr int kCount = Map::kCount;
  const T* base;  ///< the operand for this block's batch
  int x0;         ///< first x of this block
  int tid;

  /// Chunk i of slice k0: its fast / slow global coordinates and the element pointer of its start.
  __device__ __forceinline__ void where(int k0, int i, int& f, int& s, const T*& p) const {
    const int c = tid + i * NT;
    const int gx = x0 + Map::x(c), gk = k0 + Map::k(c);
    f = kKFast ? gk : gx;
    s = kKFast ? gx : gk;
    p = base + static_cast<int64_t>(gx) * SX + static_cast<int64_t>(gk) * SK;
  }
  __device__ __forceinline__ void load(int k0, Chunk<T> (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      int f, s;
      const T* p;
      where(k0, i, f, s, p);
      const int n = s < kSlow ? (kFast - f < 8 ? (kFast - f > 0 ? kFast - f : 0) : 8) : 0;
      if (kVector && n == 8) {
        r[i].v = *reinterpret_cast<const uint4*>(p);
      } else {
        MC_UNROLL
        for (int e = 0; e < 8; ++e) r[i].h[e] = e < n ? p[e * kSFast] : static_cast<T>(0.0f);
      }
    }
  }
  __device__ __forceinline__ void store(const Chunk<T> (&r)[kCount], T* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      st_shared(reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))), r[i].v);
    }
  }
  __device__ __forceinline__ void async(int k0, T* stage) const {
    if constexpr (kVector) {
      MC_UNROLL
      for (int i = 0; i < kCount; ++i) {
        int f, s;
        const T* p;
        where(k0, i, f, s, p);
        const int n = s < kSlow ? (kFast - f < 8 ? (kFast - f > 0 ? kFast - f : 0) : 8) : 0;
        const int c = tid + i * NT;
        cp_async_16(stage + Layout::offset(Map::x(c), Map::k(c)), n > 0 ? p : base, n * 2);
      }
    } else {
      Chunk<T> r[kCount];
      load(k0, r);
      store(r, stage);
    }
  }
};

// ---- the main loop ----------------------------------------------------------------------------

/// \brief One m16n8 MMA tile's accumulators in a lane's registers (mma.sync's C/D fragment): FP32
/// c0..c3, or FP16 pairs in two registers. get(e): element e at row g + 8 (e / 2), column
/// 2 t + e % 2 of the tile (g = lane / 4, t = lane % 4).
template <class Acc>
struct Accum;
template <>
struct Accum<float> {
  float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  __device__ __forceinline__ float get(int e) const { return r[e]; }
};
template <>
struct Accum<__half> {
  unsigned r[2] = {0u, 0u};
  __device__ __forceinline__ float get(int e) const {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(r[e / 2] >> (16 * (e % 2)))));
  }
};

/// \brief Where lane `lane` points ldmatrix (.x4) for the 16 x 16 block of an operand staged as L
/// (StageLayout) at x0 (rows m of A, columns n of B), k0. Matrix i = lane / 8 is the 8 x 8 quarter
/// (x half, k half) = (i % 2, i / 2) for A (registers a0..a3) and (i / 2, i % 2) for B (b0 b1 of
/// the first n8 tile, then of the second). k-fast staging holds rows of x: lane % 8 is the x row,
/// read as is; x-fast staging holds rows of k: lane % 8 is the k row, read with .trans.
template <class L, bool kIsA>
__device__ __forceinline__ int ldmatrix_offset(int lane, int x0, int k0) {
  const int i = lane / 8, r = lane % 8;
  const int xh = kIsA ? i % 2 : i / 2, kh = kIsA ? i / 2 : i % 2;
  return L::kKFast ? L::Layout::offset(x0 + xh * 8 + r, k0 + kh * 8) : L::Layout::offset(x0 + xh * 8, k0 + kh * 8 + r);
}

/// \brief acc[i][j] += the warp's m16n8 tiles of A x B over the K slices [s0, s1) (slice s covers
/// k in [s BK, (s + 1) BK)), on mma.sync m16n8k16 with ldmatrix fragment loads. Operands: the
/// loaders' Elem (__half or bf16, both loaders alike); Acc: float or __half (FP16 operands only).
/// `smem`: Tl::kStages stages, each A's slice then B's, at stage * kStageBytes (computed, never an
/// array of stage pointers: no local memory). Ends on a barrier, every cp.async group drained: the
/// caller may reuse the shared memory.
template <class Tl, class Acc>
struct Mainloop {
  template <class LA, class LB>
  static constexpr int stage_bytes() {
    return LA::Layout::kBytes + LB::Layout::kBytes;
  }
  template <class LA, class LB>
  static constexpr int smem_bytes() {
    return Tl::kStages * stage_bytes<LA, LB>();
  }

  template <class LA, class LB>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int s0, int s1, unsigned char* smem,
                                             Accum<Acc> (&acc)[Tl::kFragM][Tl::kFragN]) {
    using T = typename LA::Elem;
    static_assert(std::is_same<T, typename LB::Elem>::value, "tc::Mainloop: A and B of one element type");
    static_assert(std::is_same<T, __half>::value || std::is_same<Acc, float>::value,
                  "tc::Mainloop: BF16 operands accumulate in FP32");
    constexpr int kStageBytes = LA::Layout::kBytes + LB::Layout::kBytes;  // stage_bytes (host-only constexpr)
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
    const int a_lane = ldmatrix_offset<LA, true>(lane, wm0, 0), b_lane = ldmatrix_offset<LB, false>(lane, wn0, 0);
    auto a_stage = [&](int stage) { return reinterpret_cast<T*>(smem + stage * kStageBytes); };
    auto b_stage = [&](int stage) { return reinterpret_cast<T*>(smem + stage * kStageBytes + LA::Layout::kBytes); };

    auto compute = [&](int stage) {
      const T* sa = a_stage(stage) + a_lane;
      const T* sb = b_stage(stage) + b_lane;
      MC_UNROLL
      for (int kk = 0; kk < Tl::kBK; kk += 16) {
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

    const int slices = s1 - s0;
    if constexpr (Tl::kAsync) {
      // Stages - 1 slices in flight ahead of the one computed; one commit group per slice (empty
      // past the end, so the group count stays simple), one barrier per slice: the stage loaded in
      // iteration s was last read in iteration s - 1, which every thread has left at the barrier.
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
    } else {
      Chunk<T> ra[LA::kCount], rb[LB::kCount];
      if (slices > 0) {
        la.load(s0 * Tl::kBK, ra);
        lb.load(s0 * Tl::kBK, rb);
        la.store(ra, a_stage(0));
        lb.store(rb, b_stage(0));
      }
      __syncthreads();
      for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        const bool more = s + 1 < slices;
        if (more) {
          la.load((s0 + s + 1) * Tl::kBK, ra);
          lb.load((s0 + s + 1) * Tl::kBK, rb);
        }
        compute(cur);
        if (more) {
          la.store(ra, a_stage(cur ^ 1));
          lb.store(rb, b_stage(cur ^ 1));
        }
        __syncthreads();
      }
    }
  }
};

/// \brief The K slices [s0, s1) of split `split` of Tl::kSplitK (whole slices, the last split the
/// remainder; a split past the end has none).
template <class Tl>
__device__ __forceinline__ void split_slices(int k_extent, int split, int& s0, int& s1) {
  const int slices = (k_extent + Tl::kBK - 1) / Tl::kBK;
  const int per = (slices + Tl::kSplitK - 1) / Tl::kSplitK;
  s0 = split * per < slices ? split * per : slices;
  s1 = s0 + per < slices ? s0 + per : slices;
}

// ---- epilogue ---------------------------------------------------------------------------------

/// \brief float -> the stored type; to __half, finite values are clamped to +-65504 first (a cast
/// with clamp: no overflow to infinity; NaN and infinities stay what they are); to bf16 (FP32's
/// range) and float, a cast (bf16 rounds to nearest even).
template <class TY>
__device__ __forceinline__ TY to_output(float v) {
  if constexpr (std::is_same<TY, __half>::value) {
    if (v > 65504.0f && v < INFINITY) v = 65504.0f;
    if (v < -65504.0f && v > -INFINITY) v = -65504.0f;
    return __float2half(v);
  } else {
    return static_cast<TY>(v);
  }
}

/// \brief 8 output values, written element-wise and stored as whole 16-byte vectors.
template <class TY>
union Out8 {
  static_assert((8 * sizeof(TY)) % 16 == 0, "tc::Out8: 8 elements must be whole 16-byte vectors");
  static constexpr int kVectors = static_cast<int>(8 * sizeof(TY) / 16);
  uint4 v[kVectors];
  TY t[8];
};

/// \brief o to dst (16-byte aligned) with 16-byte stores.
template <class TY>
__device__ __forceinline__ void store8(TY* dst, const Out8<TY>& o) {
  MC_UNROLL
  for (int q = 0; q < Out8<TY>::kVectors; ++q) reinterpret_cast<uint4*>(dst)[q] = o.v[q];
}

/// \brief Stores the 8 outputs of channels c .. c + 7 (c a multiple of 8) of a horizontally fused
/// kernel (gemm::EpilogueRanges) where their ranges want them (at(channel, outer, inner)): as one
/// vector when their range allows it (the 8 then lie in it), else one by one; channels >= C are not
/// written.
template <class Epi, int C, class TY>
__device__ __forceinline__ void store_ranges(const typename Epi::Params& p, int c, int outer, int inner,
                                             const Out8<TY>& out) {
  bool vector;
  TY* dst = Epi::at(p, c, outer, inner, &vector);
  if (vector && c + 8 <= C) {
    store8(dst, out);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      if (c + e < C) *Epi::at(p, c + e, outer, inner, &vector) = out.t[e];
    }
  }
}

/// \brief Epi on the 8 accumulators of columns n .. n + 7 of one row (Coord c: the first), kN
/// columns in all: 8 at a time (16-byte operand loads) when the run is whole; element by element
/// otherwise, never past the last column (the epilogue would read bias / residual there). Returns
/// the stored type.
template <class Epi, class Sh, gemm::ChannelAxis kAlong, int kN, class TY>
__device__ __forceinline__ Out8<TY> epilogue8(const typename Epi::Params& p, float (&v)[8], int n,
                                              const gemm::Coord& c, int64_t y_step) {
  Out8<TY> out;
  if (n + 8 <= kN) {
    gemm::apply8<Epi, Sh, kAlong>(p, v, c, y_step);
    MC_UNROLL
    for (int e = 0; e < 8; ++e) out.t[e] = to_output<TY>(v[e]);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      const bool row = kAlong == gemm::ChannelAxis::row;
      const gemm::Coord ce{c.batch, row ? c.row + e : c.row, row ? c.col : c.col + e, c.offset + e * y_step};
      out.t[e] = n + e < kN ? to_output<TY>(static_cast<float>(Epi::template apply<Sh>(p, v[e], ce))) : to_output<TY>(0.0f);
    }
  }
  return out;
}

/// Shared memory of the epilogue's scratch: per warp 16 rows of the warp tile's columns (FP32),
/// each padded by 4 (for_each_output).
template <class Tl>
constexpr int scratch_bytes() {
  return Tl::kWarps * 16 * (Tl::kWarpTileN + 4) * 4;
}

/// \brief For each 16-row band of the warp's tile: the lanes' accumulators go to the warp's shared
/// scratch (FP32), then each lane takes runs of 8 consecutive columns of one row and calls
/// f(row, col, v[8]) with block-tile coordinates.
template <class Tl, class Acc, class F>
__device__ __forceinline__ void for_each_output(const Accum<Acc> (&acc)[Tl::kFragM][Tl::kFragN], unsigned char* smem,
                                                F&& f) {
  constexpr int kLd = Tl::kWarpTileN + 4, kRuns = Tl::kWarpTileN / 8;  // as scratch_bytes
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
  float* scratch = reinterpret_cast<float*>(smem) + warp * 16 * kLd;
  const int g = lane / 4, t = lane % 4;
  MC_UNROLL
  for (int i = 0; i < Tl::kFragM; ++i) {
    MC_UNROLL
    for (int j = 0; j < Tl::kFragN; ++j) {
      st_shared(reinterpret_cast<float2*>(scratch + g * kLd + j * 8 + 2 * t), make_float2(acc[i][j].get(0), acc[i][j].get(1)));
      st_shared(reinterpret_cast<float2*>(scratch + (g + 8) * kLd + j * 8 + 2 * t),
                make_float2(acc[i][j].get(2), acc[i][j].get(3)));
    }
    __syncwarp();
    MC_UNROLL
    for (int q = lane; q < 16 * kRuns; q += 32) {
      const int r = q / kRuns, c = (q % kRuns) * 8;
      const float4 lo = ld_shared(reinterpret_cast<const float4*>(scratch + r * kLd + c));
      const float4 hi = ld_shared(reinterpret_cast<const float4*>(scratch + r * kLd + c + 4));
      float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      f(wm0 + i * 16 + r, wn0 + c, v);
    }
    __syncwarp();
  }
}

/// \brief A split's FP32 partial sums, straight from the registers: element (m, n) of the block tile
/// at partial[(m0 + m) * kN + n0 + n] for the rows below kM and columns below kN (8-byte stores of
/// column pairs when kN is even).
template <class Tl, int kM, int kN, class Acc>
__device__ __forceinline__ void store_partial(const Accum<Acc> (&acc)[Tl::kFragM][Tl::kFragN], float* partial, int m0,
                                              int n0) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm0 = m0 + (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = n0 + (warp % Tl::kWarpsN) * Tl::kWarpTileN;
  const int g = lane / 4, t = lane % 4;
  MC_UNROLL
  for (int i = 0; i < Tl::kFragM; ++i) {
    MC_UNROLL
    for (int j = 0; j < Tl::kFragN; ++j) {
      MC_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int m = wm0 + i * 16 + g + 8 * h, n = wn0 + j * 8 + 2 * t;
        if (m >= kM) continue;
        float* dst = partial + static_cast<int64_t>(m) * kN + n;
        if (kN % 2 == 0 && n + 1 < kN) {
          *reinterpret_cast<float2*>(dst) = make_float2(acc[i][j].get(2 * h), acc[i][j].get(2 * h + 1));
        } else {
          if (n < kN) dst[0] = acc[i][j].get(2 * h);
          if (n + 1 < kN) dst[1] = acc[i][j].get(2 * h + 1);
        }
      }
    }
  }
}

constexpr int max_int(int a, int b) { return a > b ? a : b; }

/// \brief The second launch of a split-K kernel K (a Gemm or Conv with Tile::kSplitK > 1): for each
/// run of 8 columns of each row, the splits' partial sums added in split order (the same bits on
/// every run), then K's epilogue and store (K::finish). Params are K's.
template <class K>
struct SplitKReduce {
  static constexpr int kThreads = 256;
  static constexpr int kSmemBytes = 0;
  static constexpr int kRuns = (K::kCols + 7) / 8;
  static constexpr int64_t kItems = static_cast<int64_t>(K::kBatches) * K::kRows * kRuns;
  using Params = typename K::Params;
  static dim3 grid() { return dim3(static_cast<unsigned>((kItems + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= kItems) return;
    const int n = static_cast<int>(item % kRuns) * 8, row = static_cast<int>((item / kRuns) % K::kRows);
    const int batch = static_cast<int>(item / (static_cast<int64_t>(kRuns) * K::kRows));
    constexpr int64_t kSplitStride = static_cast<int64_t>(K::kBatches) * K::kRows * K::kCols;
    const float* src = p.partial + (static_cast<int64_t>(batch) * K::kRows + row) * K::kCols + n;
    float v[8];
    MC_UNROLL
    for (int e = 0; e < 8; ++e) v[e] = 0.0f;
    for (int s = 0; s < K::Tl::kSplitK; ++s) {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (n + e < K::kCols) v[e] += src[s * kSplitStride + e];
      }
    }
    K::finish(p, batch, row, n, v);
  }
};

// ---- the batched GEMM -------------------------------------------------------------------------

/// \brief Y = Epi(A x B), batched, on tensor cores: A and B of T (__half, or bf16 on sm_80 and newer),
/// Y TY (float, __half or bf16), Acc the accumulator (float, or __half with --fp16-accumulate on
/// __half operands). Shapes and strides as mc::gemm::Gemm
/// (SA: rows m, columns k; SB: rows k, columns n; SY: rows m, columns n). With gemm::EpilogueRanges
/// (a horizontally fused product, one batch dim at most) each column goes to its range's output
/// and SY is unused. Grid: (N tiles, M tiles, batch x splits). A and B must be 16-byte aligned
/// (every buffer of the arena and the weights is). Dynamic shared memory: kSmemBytes (the launch
/// raises the limit above 48 KB). Split-K (Tl::kSplitK > 1): the blocks write FP32 partial sums to
/// Params::partial ([split][batch][M][N]) and SplitKReduce<Gemm> finishes.
template <class T, class TY, class Acc, class Sh, class SA, class SB, class SY, class TileT, class Epi>
struct Gemm {
  using Tl = TileT;
  static_assert(!gemm::HasRanges<Epi>::value || (Sh::kB0 == 1 && Sh::kB1 == 1),
                "tc::Gemm: a ranged epilogue addresses one batch dim");
  static constexpr int kThreads = Tl::kThreads;
  using LA = OperandLoader<T, Sh::kM, Sh::kK, SA::kRow, SA::kCol, Tl::kBK, Tl::kBM, kThreads,
                           SA::kS0 % 8 == 0 && SA::kS1 % 8 == 0 && SA::kS2 % 8 == 0>;
  using LB = OperandLoader<T, Sh::kN, Sh::kK, SB::kCol, SB::kRow, Tl::kBK, Tl::kBN, kThreads,
                           SB::kS0 % 8 == 0 && SB::kS1 % 8 == 0 && SB::kS2 % 8 == 0>;
  static constexpr int kSmemBytes = max_int(Mainloop<Tl, Acc>::template smem_bytes<LA, LB>(), scratch_bytes<Tl>());
  /// 8 consecutive outputs of a row are one aligned vector (columns contiguous, rows and batches
  /// at multiples of 8 elements).
  static constexpr bool kVectorY =
      SY::kCol == 1 && SY::kRow % 8 == 0 && SY::kS0 % 8 == 0 && SY::kS1 % 8 == 0 && SY::kS2 % 8 == 0;
  /// What SplitKReduce walks: batches of rows of columns.
  static constexpr int kBatches = Sh::kBatch, kRows = Sh::kM, kCols = Sh::kN;

  struct Params {
    const T* __restrict__ A = nullptr;
    const T* __restrict__ B = nullptr;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
    float* __restrict__ partial = nullptr;  ///< split-K only: kSplitK x batch x M x N floats
  };

  static dim3 grid() {
    return dim3((Sh::kN + Tl::kBN - 1) / Tl::kBN, (Sh::kM + Tl::kBM - 1) / Tl::kBM, Sh::kBatch * Tl::kSplitK);
  }
  static dim3 block() { return dim3(kThreads); }

  /// The epilogue and store of outputs (batch, m, n .. n + 7), v the accumulators.
  __device__ __forceinline__ static void finish(const Params& p, int batch, int m, int n, float (&v)[8]) {
    const int64_t row = SY::template batch_offset<Sh>(batch) + static_cast<int64_t>(m) * SY::kRow;
    const Out8<TY> out = epilogue8<Epi, Sh, gemm::ChannelAxis::column, Sh::kN, TY>(
        p.epilogue, v, n, gemm::Coord{batch, m, n, row + static_cast<int64_t>(n) * SY::kCol}, SY::kCol);
    if constexpr (gemm::HasRanges<Epi>::value) {  // a horizontally fused product: the ranges' outputs
      store_ranges<Epi, Sh::kN>(p.epilogue, n, batch, m, out);
    } else if (kVectorY && n + 8 <= Sh::kN) {
      store8(p.Y + row + n, out);
    } else {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (n + e < Sh::kN) p.Y[row + static_cast<int64_t>(n + e) * SY::kCol] = out.t[e];
      }
    }
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    const int batch = static_cast<int>(blockIdx.z) / Tl::kSplitK, split = static_cast<int>(blockIdx.z) % Tl::kSplitK;
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    const LA la{p.A + SA::template batch_offset<Sh>(batch), m0, tid};
    const LB lb{p.B + SB::template batch_offset<Sh>(batch), n0, tid};
    Accum<Acc> acc[Tl::kFragM][Tl::kFragN];
    int s0, s1;
    split_slices<Tl>(Sh::kK, split, s0, s1);
    Mainloop<Tl, Acc>::run(la, lb, s0, s1, smem, acc);
    if constexpr (Tl::kSplitK > 1) {
      store_partial<Tl, Sh::kM, Sh::kN>(acc, p.partial + (static_cast<int64_t>(split) * Sh::kBatch + batch) * Sh::kM * Sh::kN,
                                        m0, n0);
    } else {
      // The main loop ends on a barrier: the staging memory is free for the scratch.
      for_each_output<Tl, Acc>(acc, smem, [&](int r, int c, float (&v)[8]) {
        if (m0 + r < Sh::kM) finish(p, batch, m0 + r, n0 + c, v);
      });
    }
  }
};

// ---- the implicit-GEMM convolution -------------------------------------------------------------

/// \brief Loads chunks of the im2col matrix of an NHWC X with channel pitch Cp: element (j, k) is
/// X[n, id, ih, iw, c] for pixel j = (n, od, oh, ow) and k = (kd, kh, kw, c), c fastest over KC
/// channels per tap: Cp (padded: channels >= C read 0) or C (compact: k = tap x C + c, X still
/// read at its pitch Cp); zero in the padding and past the last pixel or tap. 16-byte loads where
/// a chunk is 8 channels of one tap (KC = Cp, a multiple of 8); element by element otherwise.
template <class T, class Sh, int Cp, int KC, int BK, int BX, int NT>
struct Im2colLoader {
  using Elem = T;
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static constexpr bool kKFast = true;
  static_assert(KC == Cp || KC == Sh::kC, "tc::Im2colLoader: k runs over the pitch or the channels");
  static constexpr bool kVector = KC == Cp && Cp % 8 == 0;
  static constexpr int kPixels = Sh::kN * O::kSize, kK = KD::kSize * KC;
  using Map = Chunks<BX, BK, true, NT>;
  using Layout = StageLayout<BX, BK, true>;
  static constexpr int kCount = Map::kCount;

  const T* x;
  int tid;
  int pix_base[kCount];  ///< offset of the pixel's image in X; -1: past the last pixel
  int id0[kCount], ih0[kCount], iw0[kCount];

  __device__ __forceinline__ Im2colLoader(const T* x_, int j0, int tid_) : x(x_), tid(tid_) {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int j = j0 + Map::x(tid + i * NT);
      const int n = j / O::kSize, o = j % O::kSize;
      const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
      pix_base[i] = j < kPixels ? n * I::kSize * Cp : -1;
      id0[i] = od * S::kD - P::kD;
      ih0[i] = oh * S::kH - P::kH;
      iw0[i] = ow * S::kW - P::kW;
    }
  }

  /// Element offset of (chunk i, depth k) in X and how many of the channels c .. c + avail are data.
  __device__ __forceinline__ int at(int i, int k, int& avail) const {
    const int tap = k / KC, c = k % KC;
    const int kd = tap / (KD::kH * KD::kW), kh = (tap / KD::kW) % KD::kH, kw = tap % KD::kW;
    const int id = id0[i] + kd * Dl::kD, ih = ih0[i] + kh * Dl::kH, iw = iw0[i] + kw * Dl::kW;
    const bool inside = k < kK && pix_base[i] >= 0 && static_cast<unsigned>(id) < unsigned(I::kD) &&
                        static_cast<unsigned>(ih) < unsigned(I::kH) && static_cast<unsigned>(iw) < unsigned(I::kW);
    avail = inside ? Sh::kC - c : 0;
    return inside ? pix_base[i] + ((id * I::kH + ih) * I::kW + iw) * Cp + c : 0;
  }

  __device__ __forceinline__ void load(int k0, Chunk<T> (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int k = k0 + Map::k(tid + i * NT);
      if constexpr (kVector) {
        int avail;
        const int off = at(i, k, avail);  // the 8 channels share one tap (KC = Cp, Cp % 8 == 0)
        if (avail >= 8) {
          r[i].v = *reinterpret_cast<const uint4*>(x + off);
        } else {
          MC_UNROLL
          for (int e = 0; e < 8; ++e) r[i].h[e] = e < avail ? x[off + e] : static_cast<T>(0.0f);
        }
      } else {
        MC_UNROLL
        for (int e = 0; e < 8; ++e) {
          int avail;
          const int off = at(i, k + e, avail);
          r[i].h[e] = avail > 0 ? x[off] : static_cast<T>(0.0f);
        }
      }
    }
  }
  __device__ __forceinline__ void store(const Chunk<T> (&r)[kCount], T* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      st_shared(reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))), r[i].v);
    }
  }
  __device__ __forceinline__ void async(int k0, T* stage) const {
    if constexpr (kVector) {
      MC_UNROLL
      for (int i = 0; i < kCount; ++i) {
        const int c = tid + i * NT;
        int avail;
        const int off = at(i, k0 + Map::k(c), avail);
        const int n = avail < 8 ? (avail > 0 ? avail : 0) : 8;
        cp_async_16(stage + Layout::offset(Map::x(c), Map::k(c)), x + off, n * 2);
      }
    } else {
      Chunk<T> r[kCount];
      load(k0, r);
      store(r, stage);
    }
  }
};

/// \brief Y = Epi(conv(X, W)) on tensor cores, X and W of T (__half, or bf16 on sm_80 and newer), Y of
/// TY, Acc as tc::Gemm's; groups = 1, NHWC views: X [N][D][H][W][Cp] (channels
/// >= C masked), Y [N][OD][OH][OW][Yp] (channels >= M never written), and W by the K form:
///   padded (CompactK false): K = taps x Cp, W OHWI [M][KD][KH][KW][Cp] (padded channels zero);
///   compact (CompactK true, for C below 8, where a 16-byte chunk of channels is mostly padding):
///     K = taps x C, k = tap x C + c; W rows [M][kKw], kKw = K rounded up to 8 (16-byte rows),
///     element (m, tap x C + c), the tail zero; the last slice's k >= K masked in both operands.
/// Sh: mc::conv::Shape with G = 1. The epilogue sees Coord{0, output channel, pixel, offset in Y}
/// (as the SIMT conv: gemm::EpilogueBias adds bias[channel]); with gemm::EpilogueRanges (a
/// horizontally fused convolution) each channel goes to its range's output. Grid: (pixel tiles,
/// channel tiles, splits).
template <class T, class TY, class Acc, class Sh, int Cp, int Yp, class TileT, class Epi, bool CompactK = false>
struct Conv {
  using Tl = TileT;
  static_assert(Sh::kG == 1, "tc::Conv runs groups = 1 (grouped and depthwise convolutions are SIMT)");
  static_assert(Cp >= Sh::kC && Yp >= Sh::kM, "tc::Conv: a channel pitch below the channel count");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kPixels = Sh::kN * Sh::OutDims::kSize;
  static constexpr int kK = Sh::KernelDims::kSize * (CompactK ? Sh::kC : Cp);  ///< the GEMM depth
  static constexpr int kKw = CompactK ? (kK + 7) / 8 * 8 : kK;                 ///< W's row pitch
  using LA = Im2colLoader<T, Sh, Cp, CompactK ? Sh::kC : Cp, Tl::kBK, Tl::kBM, kThreads>;
  using LB = OperandLoader<T, Sh::kM, kK, kKw, 1, Tl::kBK, Tl::kBN, kThreads, true>;
  static constexpr int kSmemBytes = max_int(Mainloop<Tl, Acc>::template smem_bytes<LA, LB>(), scratch_bytes<Tl>());
  /// What the epilogues' batch_offset sees: one batch.
  using EpiShape = gemm::Shape<1, 1, 1, kPixels, Sh::kM, kK>;
  /// What SplitKReduce walks: one batch of pixel rows of channel columns.
  static constexpr int kBatches = 1, kRows = kPixels, kCols = Sh::kM;

  struct Params {
    const T* __restrict__ X = nullptr;
    const T* __restrict__ W = nullptr;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
    float* __restrict__ partial = nullptr;  ///< split-K only: kSplitK x pixels x M floats
  };

  static dim3 grid() {
    return dim3((kPixels + Tl::kBM - 1) / Tl::kBM, (Sh::kM + Tl::kBN - 1) / Tl::kBN, Tl::kSplitK);
  }
  static dim3 block() { return dim3(kThreads); }

  /// The epilogue and store of output channels m .. m + 7 of pixel j, v the accumulators.
  __device__ __forceinline__ static void finish(const Params& p, int, int j, int m, float (&v)[8]) {
    const int row = j * Yp;
    const Out8<TY> out =
        epilogue8<Epi, EpiShape, gemm::ChannelAxis::row, Sh::kM, TY>(p.epilogue, v, m, gemm::Coord{0, m, j, row + m}, 1);
    if constexpr (gemm::HasRanges<Epi>::value) {  // a horizontally fused kernel: the ranges' outputs
      store_ranges<Epi, Sh::kM>(p.epilogue, m, j / Sh::OutDims::kSize, j % Sh::OutDims::kSize, out);
    } else if (Yp % 8 == 0 && m + 8 <= Sh::kM) {
      store8(p.Y + row + m, out);
    } else {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (m + e < Sh::kM) p.Y[row + m + e] = out.t[e];
      }
    }
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    const int j0 = static_cast<int>(blockIdx.x) * Tl::kBM, m0 = static_cast<int>(blockIdx.y) * Tl::kBN;
    const int split = static_cast<int>(blockIdx.z);
    const int tid = static_cast<int>(threadIdx.x);
    const LA la(p.X, j0, tid);
    const LB lb{p.W, m0, tid};
    Accum<Acc> acc[Tl::kFragM][Tl::kFragN];
    int s0, s1;
    split_slices<Tl>(kK, split, s0, s1);
    Mainloop<Tl, Acc>::run(la, lb, s0, s1, smem, acc);
    if constexpr (Tl::kSplitK > 1) {
      store_partial<Tl, kPixels, Sh::kM>(acc, p.partial + static_cast<int64_t>(split) * kPixels * Sh::kM, j0, m0);
    } else {
      for_each_output<Tl, Acc>(acc, smem, [&](int r, int c, float (&v)[8]) {
        if (j0 + r < kPixels) finish(p, 0, j0 + r, m0 + c, v);
      });
    }
  }
};

/// \brief A kernel of the templates here (Gemm, Conv, SplitKReduce) for the template tests (the emitted
/// code has an entry point per instantiation; the products' with at least 1 block per SM, as here).
template <class K>
__global__ void __launch_bounds__(K::kThreads, 1) kernel(typename K::Params p) {
  K::run(p);
}

}  // namespace tc
}  // namespace mc

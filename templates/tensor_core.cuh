// templates/tensor_core.cuh — the tensor-core GEMM and implicit-GEMM convolution (sm_75 and newer):
// nvcuda::wmma m16n16k16 on FP16 operands, an FP32 (or, with --fp16-accumulate, FP16) accumulator.
//
// The main loop (Mainloop): a block computes a BM x BN tile of the GEMM; its warps form a
// kWarpsM x kWarpsN grid, each warp owning (BM / kWarpsM) x (BN / kWarpsN) outputs as a grid of
// 16 x 16 accumulator fragments. The K loop walks BK-deep slices (BK a multiple of 16); each slice of
// A (BM x BK) and B (BK x BN) is staged in shared memory, double-buffered (two stages), every row
// padded by 8 halves (16 bytes): consecutive rows then start in different banks, so the 8-row
// phases of ldmatrix / load_matrix_sync and the 16-byte chunk stores are conflict-free, and every
// fragment pointer stays 256-bit aligned. An operand is staged in its own contiguous direction
// (StageLayout: k-fast [X][BK + 8] or x-fast [BK][X + 8]); the fragment's row_major / col_major
// follows, so a transposed operand costs nothing.
//
// Staging (Tile's kAsync):
//   async (sm_80+): the next slice's 16-byte chunks go global -> shared with mc::cp_async_16 (its
//     src-size zero-fills what lies outside the matrix), committed as one group; the loop waits
//     for the slice it is about to use (cp_async_wait<1>) while the next one is in flight.
//   registers (sm_75): the next slice's chunks are loaded into registers before the slice's MMAs
//     are issued and written to the other stage after them (their latency hides behind the MMAs).
// An operand whose contiguous dim allows 16-byte loads (stride 1, the other strides multiples of
// 8 halves) is read in 16-byte vectors; any other operand is read element by element, masked
// (always through registers), and still runs on tensor cores. Out-of-range elements read 0, so
// any M, N, K works.
//
// Epilogue: each warp writes one accumulator fragment at a time to its own shared scratch
// (store_matrix_sync, 16 x 24), then each lane takes 8 consecutive columns of one row, applies the
// gemm.cuh epilogue (EpilogueIdentity / Linear / Bias / Fused: bias, activation, residual) in FP32
// and stores TY: a cast (to __half: finite values clamped to +-65504 first), with one or two
// 16-byte stores where the output is contiguous along the columns, element stores otherwise. A
// horizontally fused Conv (EpilogueRanges) stores each channel in its range's output instead.
//
// Kernels: Gemm (batched strided GEMM, as mc::gemm::Gemm) and Conv (implicit GEMM over NHWC
// views with channel pitches: GEMM rows are output pixels, columns output channels, depth
// k = (tap, c) with c fastest over the pitch Cp; channels >= C are masked, never read as data).
// Each follows the kernel contract of codegen/launch.h (Params, kThreads, grid(), block(), run);
// the emitted code gives every instantiation an entry point of its own, the tests use mc::tc::kernel<K>.
#pragma once

#include "conv.cuh"
#include "gemm.cuh"

namespace mc {
namespace tc {

namespace wmma = nvcuda::wmma;

// ---- tiles -----------------------------------------------------------------------------------

/// \brief A block tile BM x BN x BK run by WarpsM x WarpsN warps; Async: cp.async staging (sm_80+)
/// rather than register staging.
template <int BM, int BN, int BK, int WarpsM, int WarpsN, bool Async>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN, kWarps = WarpsM * WarpsN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWarpTileM = BM / WarpsM, kWarpTileN = BN / WarpsN;
  static constexpr int kFragM = kWarpTileM / 16, kFragN = kWarpTileN / 16;  ///< fragments per warp
  static constexpr bool kAsync = Async;
  static_assert(BK % 16 == 0, "tc::Tile: BK must be a multiple of 16");
  static_assert(BM % (16 * WarpsM) == 0 && BN % (16 * WarpsN) == 0,
                "tc::Tile: each warp's tile must be a whole number of 16 x 16 fragments");
};

/// \brief Shared-memory layout of one stage of an operand slice of X (rows m of A, or columns n
/// of B) by BK: k-fast [X][BK + 8] or x-fast [BK][X + 8], in halves.
template <int X, int BK, bool KFast>
struct StageLayout {
  static constexpr int kLd = KFast ? BK + 8 : X + 8;
  static constexpr int kElems = KFast ? X * kLd : BK * kLd;
  static constexpr int kBytes = kElems * 2;  // a multiple of 32: X and BK are multiples of 16
  __device__ __forceinline__ static int offset(int x, int k) { return KFast ? x * kLd + k : k * kLd + x; }
};

/// \brief The chunks (8 consecutive halves along the fast dim) of an X x BK slice, spread over NT
/// threads: chunk c = tid + i * NT. Consecutive threads take consecutive chunks along the fast dim.
template <int X, int BK, bool KFast, int NT>
struct Chunks {
  static constexpr int kPerSlice = X * BK / 8;
  static_assert(kPerSlice % NT == 0, "tc::Chunks: the slice must split evenly over the threads");
  static constexpr int kCount = kPerSlice / NT;
  __device__ __forceinline__ static int x(int c) { return KFast ? c / (BK / 8) : (c % (X / 8)) * 8; }
  __device__ __forceinline__ static int k(int c) { return KFast ? (c % (BK / 8)) * 8 : c / (X / 8); }
};

/// \brief 8 halves in registers (one 16-byte chunk): moved as one uint4, built element-wise
/// (a union: the two views alias by definition).
union Chunk {
  uint4 v;
  __half h[8];
};

// ---- operand loaders --------------------------------------------------------------------------
// Interface: kKFast, kVector, Layout (StageLayout), kCount; load(k0, Chunk[kCount]) (registers),
// store(Chunk[kCount], stage), async(k0, stage) (cp.async where kVector, else load + store).

/// \brief A strided matrix operand: element (x, k) at base[x * SX + k * SK], 0 outside X x K.
/// Vec: 16-byte loads are allowed when the strides permit (the caller's base is 16-byte aligned).
template <int X, int K, int64_t SX, int64_t SK, int BK, int BX, int NT, bool Vec>
struct OperandLoader {
  static constexpr bool kKFast = !(SX == 1 && SK != 1);
  static constexpr int64_t kSFast = kKFast ? SK : SX, kSSlow = kKFast ? SX : SK;
  static constexpr int kFast = kKFast ? K : X, kSlow = kKFast ? X : K;
  static constexpr bool kVector = Vec && kSFast == 1 && kSSlow % 8 == 0;
  using Map = Chunks<BX, BK, kKFast, NT>;
  using Layout = StageLayout<BX, BK, kKFast>;
  static constexpr int kCount = Map::kCount;
  const __half* base;  ///< the operand for this block's batch
  int x0;              ///< first x of this block
  int tid;

  /// Chunk i of slice k0: its fast / slow global coordinates and the element pointer of its start.
  __device__ __forceinline__ void where(int k0, int i, int& f, int& s, const __half*& p) const {
    const int c = tid + i * NT;
    const int gx = x0 + Map::x(c), gk = k0 + Map::k(c);
    f = kKFast ? gk : gx;
    s = kKFast ? gx : gk;
    p = base + static_cast<int64_t>(gx) * SX + static_cast<int64_t>(gk) * SK;
  }
  __device__ __forceinline__ void load(int k0, Chunk (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      int f, s;
      const __half* p;
      where(k0, i, f, s, p);
      const int n = s < kSlow ? (kFast - f < 8 ? (kFast - f > 0 ? kFast - f : 0) : 8) : 0;
      if (kVector && n == 8) {
        r[i].v = *reinterpret_cast<const uint4*>(p);
      } else {
        MC_UNROLL
        for (int e = 0; e < 8; ++e) r[i].h[e] = e < n ? p[e * kSFast] : __float2half(0.0f);
      }
    }
  }
  __device__ __forceinline__ void store(const Chunk (&r)[kCount], __half* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      *reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))) = r[i].v;
    }
  }
  __device__ __forceinline__ void async(int k0, __half* stage) const {
    if constexpr (kVector) {
      MC_UNROLL
      for (int i = 0; i < kCount; ++i) {
        int f, s;
        const __half* p;
        where(k0, i, f, s, p);
        const int n = s < kSlow ? (kFast - f < 8 ? (kFast - f > 0 ? kFast - f : 0) : 8) : 0;
        const int c = tid + i * NT;
        cp_async_16(stage + Layout::offset(Map::x(c), Map::k(c)), n > 0 ? p : base, n * 2);
      }
    } else {
      Chunk r[kCount];
      load(k0, r);
      store(r, stage);
    }
  }
};

// ---- the main loop ----------------------------------------------------------------------------

/// \brief acc[i][j] += the warp's 16 x 16 blocks of A x B over k in [0, k_extent). Acc: float or
/// __half (the accumulator fragment's type). `smem`: 2 stages of A then 2 of B.
template <class Tl, class Acc>
struct Mainloop {
  using AccFrag = wmma::fragment<wmma::accumulator, 16, 16, 16, Acc>;

  template <class LA, class LB>
  static constexpr int stage_bytes() {
    return 2 * (LA::Layout::kBytes + LB::Layout::kBytes);
  }

  template <class LA, class LB>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int k_extent, unsigned char* smem,
                                             AccFrag (&acc)[Tl::kFragM][Tl::kFragN]) {
    // A's fragment: element (m, k); k-fast staging [m][k] is row-major. B's: element (k, n);
    // k-fast staging [n][k] is column-major.
    using ALayout = typename std::conditional<LA::kKFast, wmma::row_major, wmma::col_major>::type;
    using BLayout = typename std::conditional<LB::kKFast, wmma::col_major, wmma::row_major>::type;
    using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, ALayout>;
    using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, BLayout>;
    __half* sa[2] = {reinterpret_cast<__half*>(smem), reinterpret_cast<__half*>(smem + LA::Layout::kBytes)};
    __half* sb[2] = {reinterpret_cast<__half*>(smem + 2 * LA::Layout::kBytes),
                     reinterpret_cast<__half*>(smem + 2 * LA::Layout::kBytes + LB::Layout::kBytes)};
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
    const int slices = (k_extent + Tl::kBK - 1) / Tl::kBK;

    auto compute = [&](int stage) {
      MC_UNROLL
      for (int kk = 0; kk < Tl::kBK; kk += 16) {
        FragA a[Tl::kFragM];
        FragB b[Tl::kFragN];
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          wmma::load_matrix_sync(a[i], sa[stage] + LA::Layout::offset(wm0 + i * 16, kk), LA::Layout::kLd);
        }
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; ++j) {
          wmma::load_matrix_sync(b[j], sb[stage] + LB::Layout::offset(wn0 + j * 16, kk), LB::Layout::kLd);
        }
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          MC_UNROLL
          for (int j = 0; j < Tl::kFragN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
      }
    };

    if constexpr (Tl::kAsync) {
      la.async(0, sa[0]);
      lb.async(0, sb[0]);
      cp_async_commit();
      for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        if (s + 1 < slices) {
          // The other stage was last read in slice s - 1, before the barrier that ended it.
          la.async((s + 1) * Tl::kBK, sa[cur ^ 1]);
          lb.async((s + 1) * Tl::kBK, sb[cur ^ 1]);
          cp_async_commit();
          cp_async_wait<1>();
        } else {
          cp_async_wait<0>();
        }
        __syncthreads();
        compute(cur);
        __syncthreads();
      }
    } else {
      Chunk ra[LA::kCount], rb[LB::kCount];
      la.load(0, ra);
      lb.load(0, rb);
      la.store(ra, sa[0]);
      lb.store(rb, sb[0]);
      __syncthreads();
      for (int s = 0; s < slices; ++s) {
        const int cur = s & 1;
        const bool more = s + 1 < slices;
        if (more) {
          la.load((s + 1) * Tl::kBK, ra);
          lb.load((s + 1) * Tl::kBK, rb);
        }
        compute(cur);
        if (more) {
          la.store(ra, sa[cur ^ 1]);
          lb.store(rb, sb[cur ^ 1]);
        }
        __syncthreads();
      }
    }
  }
};

// ---- epilogue ---------------------------------------------------------------------------------

/// \brief float -> the stored type; to __half, finite values are clamped to +-65504 first (a cast
/// with clamp: no overflow to infinity; NaN and infinities stay what they are).
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

/// Row pitch (elements) of a warp's epilogue scratch: 16 x 24, 16-byte rows, 256-bit aligned tiles.
constexpr int kScratchLd = 24;

/// \brief For each accumulator fragment of the warp: through the warp's shared scratch, lane l gets
/// row l / 2, columns (l % 2) * 8 .. + 8 of it and calls f(row, col, v[8]) with block-tile
/// coordinates (float values).
template <class Tl, class Acc, class F>
__device__ __forceinline__ void for_each_output(
    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> (&acc)[Tl::kFragM][Tl::kFragN], unsigned char* smem, F&& f) {
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
  Acc* scratch = reinterpret_cast<Acc*>(smem) + warp * 16 * kScratchLd;
  const int r = lane >> 1, c = (lane & 1) * 8;
  MC_UNROLL
  for (int i = 0; i < Tl::kFragM; ++i) {
    MC_UNROLL
    for (int j = 0; j < Tl::kFragN; ++j) {
      wmma::store_matrix_sync(scratch, acc[i][j], kScratchLd, wmma::mem_row_major);
      __syncwarp();
      float v[8];
      MC_UNROLL
      for (int e = 0; e < 8; ++e) v[e] = static_cast<float>(scratch[r * kScratchLd + c + e]);
      __syncwarp();
      f(wm0 + i * 16 + r, wn0 + j * 16 + c, v);
    }
  }
}

template <class Tl, class Acc>
constexpr int scratch_bytes() {
  return Tl::kWarps * 16 * kScratchLd * static_cast<int>(sizeof(Acc));
}

constexpr int max_int(int a, int b) { return a > b ? a : b; }

// ---- the batched GEMM -------------------------------------------------------------------------

/// \brief Y = Epi(A x B), batched, on tensor cores: A and B __half, Y TY (float or __half), Acc the
/// accumulator (float, or __half with --fp16-accumulate). Shapes and strides as mc::gemm::Gemm
/// (SA: rows m, columns k; SB: rows k, columns n; SY: rows m, columns n). With gemm::EpilogueRanges
/// (a horizontally fused product, one batch dim at most) each column goes to its range's output
/// and SY is unused. Grid: (N tiles, M tiles, batch). A and B must be 16-byte aligned (every
/// buffer of the arena and the weights is).
template <class TY, class Acc, class Sh, class SA, class SB, class SY, class Tl, class Epi>
struct Gemm {
  static_assert(!gemm::HasRanges<Epi>::value || (Sh::kB0 == 1 && Sh::kB1 == 1),
                "tc::Gemm: a ranged epilogue addresses one batch dim");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kSmemBytes = 0;  // static shared memory only
  using LA = OperandLoader<Sh::kM, Sh::kK, SA::kRow, SA::kCol, Tl::kBK, Tl::kBM, kThreads,
                           SA::kS0 % 8 == 0 && SA::kS1 % 8 == 0 && SA::kS2 % 8 == 0>;
  using LB = OperandLoader<Sh::kN, Sh::kK, SB::kCol, SB::kRow, Tl::kBK, Tl::kBN, kThreads,
                           SB::kS0 % 8 == 0 && SB::kS1 % 8 == 0 && SB::kS2 % 8 == 0>;
  static constexpr int kSharedBytes =
      max_int(Mainloop<Tl, Acc>::template stage_bytes<LA, LB>(), scratch_bytes<Tl, Acc>());
  /// 8 consecutive outputs of a row are one aligned vector (columns contiguous, rows and batches
  /// at multiples of 8 elements).
  static constexpr bool kVectorY =
      SY::kCol == 1 && SY::kRow % 8 == 0 && SY::kS0 % 8 == 0 && SY::kS1 % 8 == 0 && SY::kS2 % 8 == 0;

  struct Params {
    const __half* A = nullptr;
    const __half* B = nullptr;
    TY* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3((Sh::kN + Tl::kBN - 1) / Tl::kBN, (Sh::kM + Tl::kBM - 1) / Tl::kBM, Sh::kBatch); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    __shared__ __align__(128) unsigned char smem[kSharedBytes];
    const int batch = static_cast<int>(blockIdx.z);
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    const LA la{p.A + SA::template batch_offset<Sh>(batch), m0, tid};
    const LB lb{p.B + SB::template batch_offset<Sh>(batch), n0, tid};
    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> acc[Tl::kFragM][Tl::kFragN];
    MC_UNROLL
    for (int i = 0; i < Tl::kFragM; ++i) {
      MC_UNROLL
      for (int j = 0; j < Tl::kFragN; ++j) wmma::fill_fragment(acc[i][j], Acc(0.0f));
    }
    Mainloop<Tl, Acc>::run(la, lb, Sh::kK, smem, acc);
    // The main loop ends on a barrier: the staging memory is free for the scratch.

    const int64_t y_batch = SY::template batch_offset<Sh>(batch);
    for_each_output<Tl, Acc>(acc, smem, [&](int r, int c, const float (&v)[8]) {
      const int m = m0 + r, n = n0 + c;
      if (m >= Sh::kM) return;
      const int64_t row = y_batch + static_cast<int64_t>(m) * SY::kRow;
      Out8<TY> out;
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        const int64_t o = row + static_cast<int64_t>(n + e) * SY::kCol;
        // Past the last column the epilogue must not run: it would read bias / residual there.
        out.t[e] = n + e < Sh::kN ? to_output<TY>(static_cast<float>(Epi::template apply<Sh>(
                                      p.epilogue, v[e], gemm::Coord{batch, m, n + e, o})))
                                : to_output<TY>(0.0f);
      }
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
    });
  }
};

// ---- the implicit-GEMM convolution -------------------------------------------------------------

/// \brief Loads chunks of the im2col matrix of an NHWC X with channel pitch Cp: element (j, k) is
/// X[n, id, ih, iw, c] for pixel j = (n, od, oh, ow) and k = (kd, kh, kw, c), c fastest over Cp;
/// zero in the padding, for channels >= C and past the last pixel or tap.
template <class Sh, int Cp, int BK, int BX, int NT>
struct Im2colLoader {
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static constexpr bool kKFast = true;
  static constexpr bool kVector = Cp % 8 == 0;
  static constexpr int kPixels = Sh::kN * O::kSize, kK = KD::kSize * Cp;
  using Map = Chunks<BX, BK, true, NT>;
  using Layout = StageLayout<BX, BK, true>;
  static constexpr int kCount = Map::kCount;

  const __half* x;
  int tid;
  int pix_base[kCount];  ///< offset of the pixel's image in X; -1: past the last pixel
  int id0[kCount], ih0[kCount], iw0[kCount];

  __device__ __forceinline__ Im2colLoader(const __half* x_, int j0, int tid_) : x(x_), tid(tid_) {
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
    const int tap = k / Cp, c = k % Cp;
    const int kd = tap / (KD::kH * KD::kW), kh = (tap / KD::kW) % KD::kH, kw = tap % KD::kW;
    const int id = id0[i] + kd * Dl::kD, ih = ih0[i] + kh * Dl::kH, iw = iw0[i] + kw * Dl::kW;
    const bool inside = k < kK && pix_base[i] >= 0 && static_cast<unsigned>(id) < unsigned(I::kD) &&
                        static_cast<unsigned>(ih) < unsigned(I::kH) && static_cast<unsigned>(iw) < unsigned(I::kW);
    avail = inside ? Sh::kC - c : 0;
    return inside ? pix_base[i] + ((id * I::kH + ih) * I::kW + iw) * Cp + c : 0;
  }

  __device__ __forceinline__ void load(int k0, Chunk (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int k = k0 + Map::k(tid + i * NT);
      if constexpr (kVector) {
        int avail;
        const int off = at(i, k, avail);  // the 8 channels share one tap (Cp % 8 == 0)
        if (avail >= 8) {
          r[i].v = *reinterpret_cast<const uint4*>(x + off);
        } else {
          MC_UNROLL
          for (int e = 0; e < 8; ++e) r[i].h[e] = e < avail ? x[off + e] : __float2half(0.0f);
        }
      } else {
        MC_UNROLL
        for (int e = 0; e < 8; ++e) {
          int avail;
          const int off = at(i, k + e, avail);
          r[i].h[e] = avail > 0 ? x[off] : __float2half(0.0f);
        }
      }
    }
  }
  __device__ __forceinline__ void store(const Chunk (&r)[kCount], __half* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      *reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))) = r[i].v;
    }
  }
  __device__ __forceinline__ void async(int k0, __half* stage) const {
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
      Chunk r[kCount];
      load(k0, r);
      store(r, stage);
    }
  }
};

/// \brief Y = Epi(conv(X, W)) on tensor cores, groups = 1, NHWC views: X [N][D][H][W][Cp] (channels
/// >= C masked), W OHWI [M][KD][KH][KW][Cp] (padded channels zero), Y [N][OD][OH][OW][Yp]
/// (channels >= M never written). Sh: mc::conv::Shape with G = 1. The epilogue sees Coord{0, output
/// channel, pixel, offset in Y} (as the SIMT conv: gemm::EpilogueBias adds bias[channel]); with
/// gemm::EpilogueRanges (a horizontally fused convolution) each channel goes to its range's output.
/// Grid: (pixel tiles, channel tiles).
template <class TY, class Acc, class Sh, int Cp, int Yp, class Tl, class Epi>
struct Conv {
  static_assert(Sh::kG == 1, "tc::Conv runs groups = 1 (grouped and depthwise convolutions are SIMT)");
  static_assert(Cp >= Sh::kC && Yp >= Sh::kM, "tc::Conv: a channel pitch below the channel count");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kSmemBytes = 0;
  static constexpr int kPixels = Sh::kN * Sh::OutDims::kSize;
  static constexpr int kK = Sh::KernelDims::kSize * Cp;
  using LA = Im2colLoader<Sh, Cp, Tl::kBK, Tl::kBM, kThreads>;
  using LB = OperandLoader<Sh::kM, kK, kK, 1, Tl::kBK, Tl::kBN, kThreads, true>;
  static constexpr int kSharedBytes =
      max_int(Mainloop<Tl, Acc>::template stage_bytes<LA, LB>(), scratch_bytes<Tl, Acc>());
  /// What the epilogues' batch_offset sees: one batch.
  using EpiShape = gemm::Shape<1, 1, 1, kPixels, Sh::kM, kK>;

  struct Params {
    const __half* X = nullptr;
    const __half* W = nullptr;
    TY* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3((kPixels + Tl::kBM - 1) / Tl::kBM, (Sh::kM + Tl::kBN - 1) / Tl::kBN, 1); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    __shared__ __align__(128) unsigned char smem[kSharedBytes];
    const int j0 = static_cast<int>(blockIdx.x) * Tl::kBM, m0 = static_cast<int>(blockIdx.y) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    const LA la(p.X, j0, tid);
    const LB lb{p.W, m0, tid};
    wmma::fragment<wmma::accumulator, 16, 16, 16, Acc> acc[Tl::kFragM][Tl::kFragN];
    MC_UNROLL
    for (int i = 0; i < Tl::kFragM; ++i) {
      MC_UNROLL
      for (int j = 0; j < Tl::kFragN; ++j) wmma::fill_fragment(acc[i][j], Acc(0.0f));
    }
    Mainloop<Tl, Acc>::run(la, lb, kK, smem, acc);

    for_each_output<Tl, Acc>(acc, smem, [&](int r, int c, const float (&v)[8]) {
      const int j = j0 + r, m = m0 + c;
      if (j >= kPixels) return;
      const int row = j * Yp;
      Out8<TY> out;
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        out.t[e] = m + e < Sh::kM ? to_output<TY>(static_cast<float>(Epi::template apply<EpiShape>(
                                      p.epilogue, v[e], gemm::Coord{0, m + e, j, row + m + e})))
                                : to_output<TY>(0.0f);
      }
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
    });
  }
};

/// \brief A kernel of the templates here (Gemm, Conv) for the template tests (the emitted code has an
/// entry point per instantiation).
template <class K>
__global__ void __launch_bounds__(K::kThreads) kernel(typename K::Params p) {
  K::run(p);
}

}  // namespace tc
}  // namespace mc

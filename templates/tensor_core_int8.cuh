// templates/tensor_core_int8.cuh — the INT8 tensor-core convolution and GEMM (sm_75 and newer):
// mma.sync m16n8k32 on 8-bit operands (A int8 or uint8, B int8; four m8n8k16 on sm_75:
// runtime_stub/device.h), fragments loaded with ldmatrix, INT32 accumulators, and a requantizing
// epilogue (ops/quantize.h: scales, zero-point correction, bias, activation, residual, the output
// scale and saturation). modelc's QConv and QMatMul (compiler/ops/int8_products.cpp) run here.
//
// The main loop (Mainloop8) is tensor_core.cuh's, in bytes: a block computes a BM x BN tile (tc::Tile,
// BK counted in 8-bit elements, a multiple of 32) with its warps' m16n8 MMA tiles; each K slice of A
// (BM x BK) and B (BK x BN) is staged in shared memory k-fast ([X][BK + 16] bytes: the 8 rows an
// ldmatrix phase reads start in distinct bank groups), and per 32 of k a warp issues one
// ldmatrix.x4 per 16 rows of A and per 16 columns of B, then one mma per m16n8 tile. An 8-bit 16 x
// 32 tile is, in bytes, the FP16 16 x 16 one, so the same ldmatrix (.b16, never .trans: it would
// move 16-bit pairs) delivers the m16n8k32 fragments. Both operands are therefore staged k-fast:
// W is OHWI (K contiguous), a QMatMul's B is stored [N, K] (compiler/ops/quantize.h).
// Staging: cp.async in Tl::kStages stages (sm_80+) or two stages through registers (sm_75), as
// tc::Mainloop. 16-byte chunks where the operand allows (K contiguous, rows at multiples of 16
// bytes), element loads otherwise; out-of-range elements read 0, so any M, N, K runs.
//
// Zero points: an activation zero point zx (QConv / QMatMul input 5 at run time, or the x_zero_point
// attribute) is handled without widening the operands: a convolution's taps outside the image read
// zx instead of 0 (a real zero), and the epilogue subtracts zx * w_sum[m] (the sum of channel m's
// weights, a constant): sum (x - zx) w = sum x w - zx sum w.
//
// Split-K (Tl::kSplitK > 1): each block writes its INT32 partial sums to Params::partial; a second
// launch, SplitKReduce8, adds the splits (exact integers: the order cannot change the result) and
// runs the epilogue.
//
// Epilogue (Epilogue8): per 16-row band each warp writes its accumulators to its own shared scratch
// (INT32), then each lane takes runs of 8 consecutive output channels of one row and computes, in
// float32 in this order (the reference's order, ops/int8_products.cpp): v = float(acc - zx w_sum[m])
// * (x_scale * w_scale[m]) + bias[m]; the residual (dequantized when 8-bit) before or after the
// activation; then stores TY: int8 / uint8 = saturate(rint(v / y_scale) + y_zero_point), int32 = the
// corrected accumulator itself (ConvInteger / MatMulInteger), float / __half = v (tc::to_output).
#pragma once

#include "tensor_core.cuh"

namespace mc {
namespace tc8 {

using tc::Tile;

// ---- staging ------------------------------------------------------------------------------------

/// \brief One stage of an operand slice of X rows (rows m of A, or columns n of B) by BK bytes,
/// k-fast, each row padded by 16 bytes.
template <int X, int BK>
struct StageLayout {
  static_assert(BK % 32 == 0 && X % 16 == 0, "tc8::StageLayout: BK a multiple of 32, X of 16");
  static constexpr int kLd = BK + 16;
  static constexpr int kBytes = X * kLd;  // a multiple of 16
  __device__ __forceinline__ static int offset(int x, int k) { return x * kLd + k; }
};

/// \brief The 16-byte chunks of an X x BK slice over NT threads: chunk c = tid + i * NT, consecutive
/// chunks along k.
template <int X, int BK, int NT>
struct Chunks {
  static constexpr int kPerSlice = X * BK / 16;
  static_assert(kPerSlice % NT == 0, "tc8::Chunks: the slice must split evenly over the threads");
  static constexpr int kCount = kPerSlice / NT;
  __device__ __forceinline__ static int x(int c) { return c / (BK / 16); }
  __device__ __forceinline__ static int k(int c) { return (c % (BK / 16)) * 16; }
};

/// \brief 16 bytes in registers, moved as one uint4 and built byte by byte.
union Chunk {
  uint4 v;
  unsigned char b[16];
};

/// 16 copies of a byte.
__device__ __forceinline__ uint4 splat(unsigned char b) {
  const unsigned w = 0x01010101u * b;
  return make_uint4(w, w, w, w);
}

/// \brief A strided matrix operand of 8-bit T: element (x, k) at base[x * SX + k * SK], 0 outside
/// X x K. 16-byte chunks when K is contiguous and rows start at multiples of 16 bytes.
template <class T, int X, int K, int64_t SX, int64_t SK, int BK, int BX, int NT>
struct MatrixLoader {
  static_assert(sizeof(T) == 1, "tc8::MatrixLoader: 8-bit elements");
  using Map = Chunks<BX, BK, NT>;
  using Layout = StageLayout<BX, BK>;
  static constexpr bool kVector = SK == 1 && SX % 16 == 0;
  static constexpr int kCount = Map::kCount;
  const T* base;  ///< the operand (16-byte aligned)
  int x0;         ///< first x of this block
  int tid;

  /// Chunk i of slice k0: how many of its 16 elements lie inside (0 past the last row or K).
  __device__ __forceinline__ int where(int k0, int i, int& gx, int& gk) const {
    const int c = tid + i * NT;
    gx = x0 + Map::x(c);
    gk = k0 + Map::k(c);
    return gx < X ? (K - gk < 16 ? (K - gk > 0 ? K - gk : 0) : 16) : 0;
  }
  __device__ __forceinline__ void load(int k0, Chunk (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      int gx, gk;
      const int n = where(k0, i, gx, gk);
      const T* p = base + static_cast<int64_t>(gx) * SX + static_cast<int64_t>(gk) * SK;
      if (kVector && n == 16) {
        r[i].v = *reinterpret_cast<const uint4*>(p);
      } else {
        MC_UNROLL
        for (int e = 0; e < 16; ++e) r[i].b[e] = e < n ? static_cast<unsigned char>(p[e * SK]) : 0;
      }
    }
  }
  __device__ __forceinline__ void store(const Chunk (&r)[kCount], unsigned char* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      st_shared(reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))), r[i].v);
    }
  }
  __device__ __forceinline__ void async(int k0, unsigned char* stage) const {
    if constexpr (kVector) {
      MC_UNROLL
      for (int i = 0; i < kCount; ++i) {
        int gx, gk;
        const int n = where(k0, i, gx, gk);
        const int c = tid + i * NT;
        const T* p = n > 0 ? base + static_cast<int64_t>(gx) * SX + gk : base;
        cp_async_16(stage + Layout::offset(Map::x(c), Map::k(c)), p, n);
      }
    } else {
      Chunk r[kCount];
      load(k0, r);
      store(r, stage);
    }
  }
};

/// \brief The im2col matrix of an NHWC 8-bit X with channel pitch Cp: element (j, k) is
/// X[n, id, ih, iw, c] for pixel j = (n, od, oh, ow) and k = (tap, c), c fastest over KC channels
/// per tap (Cp: padded; C: the compact form, k = tap x C + c). A tap outside the image reads `pad`
/// (the zero point: a real zero); channels >= C, k >= K and pixels past the last read 0 (the weights
/// are zero there). 16-byte chunks when a chunk is 16 channels of one tap (KC = Cp, a multiple of
/// 16); element by element otherwise.
template <class T, class Sh, int Cp, int KC, int BK, int BX, int NT>
struct Im2colLoader {
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static_assert(KC == Cp || KC == Sh::kC, "tc8::Im2colLoader: k runs over the pitch or the channels");
  static constexpr bool kVector = KC == Cp && Cp % 16 == 0;
  static constexpr int kPixels = Sh::kN * O::kSize, kK = KD::kSize * KC;
  using Map = Chunks<BX, BK, NT>;
  using Layout = StageLayout<BX, BK>;
  static constexpr int kCount = Map::kCount;

  const T* x;
  int tid;
  unsigned char pad;     ///< what a tap outside the image reads
  int pix_base[kCount];  ///< offset of the pixel's image in X; -1: past the last pixel
  int id0[kCount], ih0[kCount], iw0[kCount];

  __device__ __forceinline__ Im2colLoader(const T* x_, int j0, int tid_, unsigned char pad_) : x(x_), tid(tid_), pad(pad_) {
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

  /// Where (chunk i, depth k) is: 1 inside the image (*off its element offset, *avail the channels
  /// c .. that are data), 0 outside it (a padded tap of a real pixel), -1 nowhere (k >= K or no
  /// pixel).
  __device__ __forceinline__ int at(int i, int k, int& off, int& avail) const {
    const int tap = k / KC, c = k % KC;
    if (k >= kK || pix_base[i] < 0) return -1;
    const int kd = tap / (KD::kH * KD::kW), kh = (tap / KD::kW) % KD::kH, kw = tap % KD::kW;
    const int id = id0[i] + kd * Dl::kD, ih = ih0[i] + kh * Dl::kH, iw = iw0[i] + kw * Dl::kW;
    const bool inside = static_cast<unsigned>(id) < unsigned(I::kD) && static_cast<unsigned>(ih) < unsigned(I::kH) &&
                        static_cast<unsigned>(iw) < unsigned(I::kW);
    if (!inside) return 0;
    avail = Sh::kC - c;
    off = pix_base[i] + ((id * I::kH + ih) * I::kW + iw) * Cp + c;
    return 1;
  }

  __device__ __forceinline__ void load(int k0, Chunk (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int k = k0 + Map::k(tid + i * NT);
      if constexpr (kVector) {
        int off = 0, avail = 0;
        const int w = at(i, k, off, avail);  // the 16 channels share one tap
        if (w > 0 && avail >= 16) {
          r[i].v = *reinterpret_cast<const uint4*>(x + off);
        } else if (w == 0) {
          r[i].v = splat(pad);
        } else {
          MC_UNROLL
          for (int e = 0; e < 16; ++e) r[i].b[e] = w > 0 && e < avail ? static_cast<unsigned char>(x[off + e]) : 0;
        }
      } else {
        MC_UNROLL
        for (int e = 0; e < 16; ++e) {
          int off = 0, avail = 0;
          const int w = at(i, k + e, off, avail);
          r[i].b[e] = w > 0 ? (avail > 0 ? static_cast<unsigned char>(x[off]) : 0) : w == 0 ? pad : 0;
        }
      }
    }
  }
  __device__ __forceinline__ void store(const Chunk (&r)[kCount], unsigned char* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = tid + i * NT;
      st_shared(reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))), r[i].v);
    }
  }
  __device__ __forceinline__ void async(int k0, unsigned char* stage) const {
    if constexpr (kVector) {
      MC_UNROLL
      for (int i = 0; i < kCount; ++i) {
        const int c = tid + i * NT;
        int off = 0, avail = 0;
        const int w = at(i, k0 + Map::k(c), off, avail);
        unsigned char* dst = stage + Layout::offset(Map::x(c), Map::k(c));
        if (w == 0 && pad != 0) {
          st_shared(reinterpret_cast<uint4*>(dst), splat(pad));
        } else {
          const int n = w > 0 ? (avail < 16 ? (avail > 0 ? avail : 0) : 16) : 0;
          cp_async_16(dst, w > 0 ? x + off : x, n);
        }
      }
    } else {
      Chunk r[kCount];
      load(k0, r);
      store(r, stage);
    }
  }
};

// ---- the main loop ------------------------------------------------------------------------------

/// \brief One m16n8 MMA tile's INT32 accumulators in a lane's registers: element e at row g + 8 (e / 2),
/// column 2 t + e % 2.
struct Accum {
  int r[4] = {0, 0, 0, 0};
};

/// \brief Where lane `lane` points ldmatrix (.x4) for the 16 x 32-byte block of an operand staged as
/// L::Layout at x0, k0: matrix i = lane / 8 is the 8-row, 16-byte quarter (x half, k half) = (i % 2,
/// i / 2) for A (registers a0..a3) and (i / 2, i % 2) for B (b0 b1 of the first n8 tile, then of the
/// second); lane % 8 is the row.
template <class L, bool kIsA>
__device__ __forceinline__ int ldmatrix_offset(int lane, int x0, int k0) {
  const int i = lane / 8, r = lane % 8;
  const int xh = kIsA ? i % 2 : i / 2, kh = kIsA ? i / 2 : i % 2;
  return L::Layout::offset(x0 + xh * 8 + r, k0 + kh * 16);
}

/// \brief acc[i][j] += the warp's m16n8 tiles of A x B over the K slices [s0, s1), on mma.sync
/// m16n8k32 (TA: A's type, int8_t or uint8_t) with ldmatrix fragment loads; tc::Mainloop's
/// staging and barriers (ends on a barrier, every cp.async group drained).
template <class Tl, class TA>
struct Mainloop {
  template <class LA, class LB>
  static constexpr int smem_bytes() {
    return Tl::kStages * (LA::Layout::kBytes + LB::Layout::kBytes);
  }

  template <class LA, class LB>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int s0, int s1, unsigned char* smem,
                                             Accum (&acc)[Tl::kFragM][Tl::kFragN]) {
    static_assert(Tl::kBK % 32 == 0, "tc8::Mainloop: BK must be a multiple of 32 (8-bit elements)");
    constexpr int kStageBytes = LA::Layout::kBytes + LB::Layout::kBytes;
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
    const int a_lane = ldmatrix_offset<LA, true>(lane, wm0, 0), b_lane = ldmatrix_offset<LB, false>(lane, wn0, 0);
    auto a_stage = [&](int stage) { return smem + stage * kStageBytes; };
    auto b_stage = [&](int stage) { return smem + stage * kStageBytes + LA::Layout::kBytes; };

    auto compute = [&](int stage) {
      const unsigned char* sa = a_stage(stage) + a_lane;
      const unsigned char* sb = b_stage(stage) + b_lane;
      MC_UNROLL
      for (int kk = 0; kk < Tl::kBK; kk += 32) {
        unsigned a[Tl::kFragM][4], b[Tl::kFragN][2];
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) ldmatrix<4>(a[i], sa + LA::Layout::offset(i * 16, kk));
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; j += 2) {
          unsigned r[4];
          ldmatrix<4>(r, sb + LB::Layout::offset(j * 8, kk));
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          MC_UNROLL
          for (int j = 0; j < Tl::kFragN; ++j) mma_m16n8k32<TA>(acc[i][j].r, a[i], b[j], acc[i][j].r);
        }
      }
    };

    const int slices = s1 - s0;
    if constexpr (Tl::kAsync) {
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
      Chunk ra[LA::kCount], rb[LB::kCount];
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

/// Shared memory of the epilogue's scratch: per warp 16 rows of the warp tile's columns (INT32),
/// each padded by 4.
template <class Tl>
constexpr int scratch_bytes() {
  return Tl::kWarps * 16 * (Tl::kWarpTileN + 4) * 4;
}

/// \brief For each 16-row band of the warp's tile: the lanes' accumulators go to the warp's shared
/// scratch, then each lane takes runs of 8 consecutive columns of one row and calls f(row, col,
/// v[8]) with block-tile coordinates (INT32: exact).
template <class Tl, class F>
__device__ __forceinline__ void for_each_output(const Accum (&acc)[Tl::kFragM][Tl::kFragN], unsigned char* smem, F&& f) {
  constexpr int kLd = Tl::kWarpTileN + 4, kRuns = Tl::kWarpTileN / 8;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
  int* scratch = reinterpret_cast<int*>(smem) + warp * 16 * kLd;
  const int g = lane / 4, t = lane % 4;
  MC_UNROLL
  for (int i = 0; i < Tl::kFragM; ++i) {
    MC_UNROLL
    for (int j = 0; j < Tl::kFragN; ++j) {
      st_shared(reinterpret_cast<int2*>(scratch + g * kLd + j * 8 + 2 * t), make_int2(acc[i][j].r[0], acc[i][j].r[1]));
      st_shared(reinterpret_cast<int2*>(scratch + (g + 8) * kLd + j * 8 + 2 * t), make_int2(acc[i][j].r[2], acc[i][j].r[3]));
    }
    __syncwarp();
    MC_UNROLL
    for (int q = lane; q < 16 * kRuns; q += 32) {
      const int r = q / kRuns, c = (q % kRuns) * 8;
      const int4 lo = ld_shared(reinterpret_cast<const int4*>(scratch + r * kLd + c));
      const int4 hi = ld_shared(reinterpret_cast<const int4*>(scratch + r * kLd + c + 4));
      int v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
      f(wm0 + i * 16 + r, wn0 + c, v);
    }
    __syncwarp();
  }
}

/// \brief A split's INT32 partial sums from the registers: element (m, n) of the block tile at
/// partial[(m0 + m) * kN + n0 + n] for rows below kM and columns below kN.
template <class Tl, int kM, int kN>
__device__ __forceinline__ void store_partial(const Accum (&acc)[Tl::kFragM][Tl::kFragN], int* partial, int m0, int n0) {
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
        int* dst = partial + static_cast<int64_t>(m) * kN + n;
        if (kN % 2 == 0 && n + 1 < kN) {
          *reinterpret_cast<int2*>(dst) = make_int2(acc[i][j].r[2 * h], acc[i][j].r[2 * h + 1]);
        } else {
          if (n < kN) dst[0] = acc[i][j].r[2 * h];
          if (n + 1 < kN) dst[1] = acc[i][j].r[2 * h + 1];
        }
      }
    }
  }
}

// ---- the epilogue -------------------------------------------------------------------------------

/// \brief The requantizing epilogue (the file comment; ops/quantize.h): TY the stored type (int8_t,
/// uint8_t: quantized; int32_t: the corrected accumulators; float, __half: real values), TR the
/// residual's type (8-bit: dequantized with residual_scale / residual_zero_point; float / __half:
/// as is), kResidual 0 none, 1 before the activation, 2 after; kBias: a float32 bias per channel;
/// kPerChannel: one w_scale per channel (else w_scale[0]); kZeroPoint: subtract zx * w_sum[m].
template <class TY, class TR, Act A, int kResidual, bool kBias, bool kPerChannel, bool kZeroPoint>
struct Epilogue {
  static constexpr bool kQuantized = std::is_same<TY, int8_t>::value || std::is_same<TY, uint8_t>::value;
  static constexpr bool kRaw = std::is_same<TY, int32_t>::value;
  static constexpr bool kIntResidual = std::is_same<TR, int8_t>::value || std::is_same<TR, uint8_t>::value;
  struct Params {
    float x_scale = 1.0f;
    const float* w_scale = nullptr;    ///< one per channel (kPerChannel) or one
    const float* bias = nullptr;       ///< kBias
    const TR* residual = nullptr;      ///< kResidual != 0: read at the output's offset
    float residual_scale = 1.0f;
    int residual_zero_point = 0;
    float y_scale = 1.0f;              ///< quantized outputs
    int y_zero_point = 0;
    ActParams act{};
    const int* w_sum = nullptr;        ///< kZeroPoint
    int x_zero_point = 0;              ///< the attribute's zero point ...
    const void* x_zero_point_ptr = nullptr;  ///< ... or the one read at run time (one byte of X's type)
  };

  /// Channels c .. c + 7 (c + e < kC only) of one output row, y: the row's first element (its
  /// residual at the same offset); v the accumulators; zx the activation zero point.
  template <int kC>
  __device__ __forceinline__ static void apply(const Params& p, int zx, const int (&v)[8], int c, TY* y, int64_t y_off,
                                               bool vector) {
    union {
      TY t[8];
      unsigned char bytes[8 * sizeof(TY)];
    } out;
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      const int ch = c + e < kC ? c + e : kC - 1;
      int acc = v[e];
      if constexpr (kZeroPoint) acc -= zx * p.w_sum[ch];
      if constexpr (kRaw) {
        out.t[e] = static_cast<TY>(acc);
      } else {
        float r = static_cast<float>(acc) * (p.x_scale * p.w_scale[kPerChannel ? ch : 0]);
        if constexpr (kBias) r += p.bias[ch];
        float res = 0.0f;
        if constexpr (kResidual != 0) {
          const TR rv = c + e < kC ? p.residual[y_off + e] : TR{};  // never past the row's last channel
          if constexpr (kIntResidual) {
            res = static_cast<float>(static_cast<int>(rv) - p.residual_zero_point) * p.residual_scale;
          } else {
            res = static_cast<float>(rv);
          }
        }
        if constexpr (kResidual == 1) r += res;
        r = activate<A>(r, p.act);
        if constexpr (kResidual == 2) r += res;
        if constexpr (kQuantized) {
          constexpr float lo = std::is_same<TY, int8_t>::value ? -128.0f : 0.0f;
          constexpr float hi = std::is_same<TY, int8_t>::value ? 127.0f : 255.0f;
          const float q = r / p.y_scale;
          float z = q != q ? static_cast<float>(p.y_zero_point) : rintf(q) + static_cast<float>(p.y_zero_point);
          z = z < lo ? lo : (z > hi ? hi : z);
          out.t[e] = static_cast<TY>(static_cast<int>(z));
        } else {
          out.t[e] = tc::to_output<TY>(r);
        }
      }
    }
    if (vector) {  // 8 aligned elements: one 8-, 16- or 32-byte store
      if constexpr (sizeof(TY) == 1) {
        *reinterpret_cast<uint2*>(y) = *reinterpret_cast<const uint2*>(out.bytes);
      } else {
        MC_UNROLL
        for (int q = 0; q < static_cast<int>(sizeof(TY)) / 2; ++q) {
          reinterpret_cast<uint4*>(y)[q] = reinterpret_cast<const uint4*>(out.bytes)[q];
        }
      }
    } else {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (c + e < kC) y[e] = out.t[e];
      }
    }
  }

  /// The activation zero point of this launch (0 without kZeroPoint).
  template <class TA>
  __device__ __forceinline__ static int zero_point(const Params& p) {
    if constexpr (!kZeroPoint) return 0;
    return p.x_zero_point_ptr ? static_cast<int>(*static_cast<const TA*>(p.x_zero_point_ptr)) : p.x_zero_point;
  }
};

// ---- split-K ------------------------------------------------------------------------------------

/// \brief The second launch of a split-K kernel K: for each run of 8 columns of each row, the
/// splits' INT32 partials added, then K's epilogue and store (K::finish). Params are K's.
template <class K>
struct SplitKReduce8 {
  static constexpr int kThreads = 256;
  static constexpr int kSmemBytes = 0;
  static constexpr int kRuns = (K::kCols + 7) / 8;
  static constexpr int64_t kItems = static_cast<int64_t>(K::kRows) * kRuns;
  using Params = typename K::Params;
  static dim3 grid() { return dim3(static_cast<unsigned>((kItems + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= kItems) return;
    const int n = static_cast<int>(item % kRuns) * 8, row = static_cast<int>(item / kRuns);
    constexpr int64_t kSplitStride = static_cast<int64_t>(K::kRows) * K::kCols;
    const int* src = p.partial + static_cast<int64_t>(row) * K::kCols + n;
    int v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int s = 0; s < K::Tl::kSplitK; ++s) {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (n + e < K::kCols) v[e] += src[s * kSplitStride + e];
      }
    }
    K::finish(p, K::zero_point(p), row, n, v);
  }
};

// ---- the convolution ----------------------------------------------------------------------------

/// \brief Y = Epi(conv(X - zx, W)) on integer tensor cores, groups = 1, NHWC views: X TA [N][D][H][W][Cp]
/// (int8_t or uint8_t; channels >= C masked), Y TY [N][OD][OH][OW][Yp] (channels >= M never written),
/// W int8 OHWI rows: padded (K = taps x Cp, Cp a multiple of 16) or compact (CompactK: K = taps x C,
/// rows of kKw = K rounded up to 16). Sh: mc::conv::Shape with G = 1. Grid: (pixel tiles, channel
/// tiles, splits).
template <class TA, class TY, class Sh, int Cp, int Yp, class TileT, class Epi, bool CompactK = false>
struct Conv {
  using Tl = TileT;
  static_assert(Sh::kG == 1, "tc8::Conv runs groups = 1");
  static_assert(Cp >= Sh::kC && Yp >= Sh::kM, "tc8::Conv: a channel pitch below the channel count");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kPixels = Sh::kN * Sh::OutDims::kSize;
  static constexpr int kK = Sh::KernelDims::kSize * (CompactK ? Sh::kC : Cp);  ///< the GEMM depth
  static constexpr int kKw = CompactK ? (kK + 15) / 16 * 16 : kK;              ///< W's row pitch
  using LA = Im2colLoader<TA, Sh, Cp, CompactK ? Sh::kC : Cp, Tl::kBK, Tl::kBM, kThreads>;
  using LB = MatrixLoader<int8_t, Sh::kM, kK, kKw, 1, Tl::kBK, Tl::kBN, kThreads>;
  static constexpr int kSmemBytes = tc::max_int(Mainloop<Tl, TA>::template smem_bytes<LA, LB>(), scratch_bytes<Tl>());
  static constexpr int kRows = kPixels, kCols = Sh::kM;  ///< what SplitKReduce8 walks

  struct Params {
    const TA* __restrict__ X = nullptr;
    const int8_t* __restrict__ W = nullptr;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
    int* __restrict__ partial = nullptr;  ///< split-K only: kSplitK x pixels x M INT32
  };

  static dim3 grid() { return dim3((kPixels + Tl::kBM - 1) / Tl::kBM, (Sh::kM + Tl::kBN - 1) / Tl::kBN, Tl::kSplitK); }
  static dim3 block() { return dim3(kThreads); }

  __device__ __forceinline__ static int zero_point(const Params& p) { return Epi::template zero_point<TA>(p.epilogue); }

  /// The epilogue and store of output channels m .. m + 7 of pixel j.
  __device__ __forceinline__ static void finish(const Params& p, int zx, int j, int m, const int (&v)[8]) {
    const int64_t off = static_cast<int64_t>(j) * Yp + m;
    Epi::template apply<Sh::kM>(p.epilogue, zx, v, m, p.Y + off, off, Yp % 8 == 0 && m + 8 <= Sh::kM);
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    const int j0 = static_cast<int>(blockIdx.x) * Tl::kBM, m0 = static_cast<int>(blockIdx.y) * Tl::kBN;
    const int split = static_cast<int>(blockIdx.z);
    const int tid = static_cast<int>(threadIdx.x);
    const int zx = zero_point(p);
    const LA la(p.X, j0, tid, static_cast<unsigned char>(zx));
    const LB lb{p.W, m0, tid};
    Accum acc[Tl::kFragM][Tl::kFragN];
    int s0, s1;
    tc::split_slices<Tl>(kK, split, s0, s1);
    Mainloop<Tl, TA>::run(la, lb, s0, s1, smem, acc);
    if constexpr (Tl::kSplitK > 1) {
      store_partial<Tl, kPixels, Sh::kM>(acc, p.partial + static_cast<int64_t>(split) * kPixels * Sh::kM, j0, m0);
    } else {
      for_each_output<Tl>(acc, smem, [&](int r, int c, const int (&v)[8]) {
        if (j0 + r < kPixels) finish(p, zx, j0 + r, m0 + c, v);
      });
    }
  }
};

// ---- the matrix product -------------------------------------------------------------------------

/// \brief Y[m, n] = Epi(sum over k of (A[m, k] - zx) * B[n, k]) on integer tensor cores: A TA with
/// strides (SAm, SAk) (every leading dim of QMatMul's A a row), B int8 [N, K] rows of SB elements,
/// Y TY rows of SY elements (columns contiguous). Grid: (N tiles, M tiles, splits).
template <class TA, class TY, int M, int N, int K, int64_t SAm, int64_t SAk, int64_t SB, int64_t SY, class TileT, class Epi>
struct Gemm {
  using Tl = TileT;
  static constexpr int kThreads = Tl::kThreads;
  using LA = MatrixLoader<TA, M, K, SAm, SAk, Tl::kBK, Tl::kBM, kThreads>;
  using LB = MatrixLoader<int8_t, N, K, SB, 1, Tl::kBK, Tl::kBN, kThreads>;
  static constexpr int kSmemBytes = tc::max_int(Mainloop<Tl, TA>::template smem_bytes<LA, LB>(), scratch_bytes<Tl>());
  static constexpr int kRows = M, kCols = N;

  struct Params {
    const TA* __restrict__ A = nullptr;
    const int8_t* __restrict__ B = nullptr;
    TY* __restrict__ Y = nullptr;
    typename Epi::Params epilogue{};
    int* __restrict__ partial = nullptr;  ///< split-K only: kSplitK x M x N INT32
  };

  static dim3 grid() { return dim3((N + Tl::kBN - 1) / Tl::kBN, (M + Tl::kBM - 1) / Tl::kBM, Tl::kSplitK); }
  static dim3 block() { return dim3(kThreads); }

  __device__ __forceinline__ static int zero_point(const Params& p) { return Epi::template zero_point<TA>(p.epilogue); }

  __device__ __forceinline__ static void finish(const Params& p, int zx, int m, int n, const int (&v)[8]) {
    const int64_t off = static_cast<int64_t>(m) * SY + n;
    Epi::template apply<N>(p.epilogue, zx, v, n, p.Y + off, off, SY % 8 == 0 && n + 8 <= N);
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    const int split = static_cast<int>(blockIdx.z);
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    const int zx = zero_point(p);
    const LA la{p.A, m0, tid};
    const LB lb{p.B, n0, tid};
    Accum acc[Tl::kFragM][Tl::kFragN];
    int s0, s1;
    tc::split_slices<Tl>(K, split, s0, s1);
    Mainloop<Tl, TA>::run(la, lb, s0, s1, smem, acc);
    if constexpr (Tl::kSplitK > 1) {
      store_partial<Tl, M, N>(acc, p.partial + static_cast<int64_t>(split) * M * N, m0, n0);
    } else {
      for_each_output<Tl>(acc, smem, [&](int r, int c, const int (&v)[8]) {
        if (m0 + r < M) finish(p, zx, m0 + r, n0 + c, v);
      });
    }
  }
};

}  // namespace tc8
}  // namespace mc

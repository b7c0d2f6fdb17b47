// templates/conv_depthwise.cuh — depthwise convolution (group == C: every group has one input
// channel): ConvDepthwise, direct, any layout and type; ConvDepthwiseTiled, NHWC 16-bit storage
// through a shared-memory tile.
//
// ConvDepthwise: one thread per output element, the whole (compile-time) window unrolled.
// Y[n, m, o] = epilogue(sum over taps of W[m, tap] * X[n, m / K, o*s - p + tap*d]) where
// K = M / C is the channel multiplier (1 in the usual group == C == M case). An implicit GEMM would
// waste its tiles here (depth KH*KW, one row per group); a direct loop reads each weight once
// per thread from cache and the input rows through L1.
//
// Layouts as in conv.cuh; with one input channel per group the nhwc weight layout (OHWI,
// [M][KD][KH][KW][1]) is the same memory as ONNX's [M][1][KD][KH][KW]. nchw: consecutive threads
// walk output pixels; nhwc: output channels (both coalesced). In nhwc, X's pixels are kPitchX
// elements apart and Y's kPitchY (0: the channel count): channel pitches padded for tensor cores
// (compiler/schedule/layout.h); padded channels are neither read nor written.
//
// ConvDepthwiseTiled (2-D, multiplier 1, NHWC, T = __half or mc::bf16): a block computes a TH x TW
// tile of output pixels for CB channels of one image. It first copies the input tile with its halo
// ((TH - 1) s + (KH - 1) d + 1 rows by the same in columns, CB channels) into shared memory in
// 16-byte chunks of 8 channels (cp.async on sm_80+, zero-filled in the padding and past the last
// channel), each pixel CB + 8 elements apart (the 16 bytes of padding spread a warp's reads of two
// pixels over the banks). Each thread then owns CV consecutive channels and an RH x RW block of
// output pixels: the KH x KW x CV weights sit in its registers for the whole tile (read once from
// W), and it walks the input rows its outputs need once, each row's (RW - 1) s + (KW - 1) d + 1
// pixels loaded from shared memory CV channels at a time (CV x 2 bytes, conflict-free) and used by
// every output and tap that reads them (reuse along both H and W). Epilogue: gemm.cuh's (bias,
// activation, residual) per element, as ConvDepthwise; CV outputs stored as one vector where the
// pitch allows. Acc float: FP32 products and sums (FFMA); Acc __half (FP16 storage,
// --fp16-accumulate): __half2 products and sums (HFMA2, two channels an instruction), rounded to
// FP16 at every tap. Channels >= C (the last channel block, padded pitches) are computed from zeros
// and never stored.
#pragma once

#include "conv.cuh"

namespace mc {
namespace conv {

template <class T, class Acc, class Sh, Layout L, class Epi, int NT = 128, int kPitchX = 0, int kPitchY = 0>
struct ConvDepthwise {
  static_assert(Sh::kCg == 1, "ConvDepthwise: one input channel per group (group == C)");
  static constexpr int kPX = kPitchX ? kPitchX : Sh::kC, kPY = kPitchY ? kPitchY : Sh::kM;
  static_assert(kPX >= Sh::kC && kPY >= Sh::kM, "ConvDepthwise: a channel pitch below the channel count");
  static constexpr int kThreads = NT;
  static constexpr int kSmemBytes = 0;
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static constexpr int kMultiplier = Sh::kMg;
  static constexpr int64_t kOutputs = int64_t(Sh::kN) * Sh::kM * O::kSize;

  struct Params {
    const T* X = nullptr;
    const T* W = nullptr;
    T* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3(static_cast<unsigned>((kOutputs + NT - 1) / NT)); }
  static dim3 block() { return dim3(NT); }

  __device__ static void run(const Params& p) {
    const int idx = static_cast<int>(blockIdx.x) * NT + static_cast<int>(threadIdx.x);
    if (idx >= kOutputs) return;
    int n, m, o;
    if constexpr (L == Layout::nchw) {
      o = idx % O::kSize;
      m = (idx / O::kSize) % Sh::kM;
      n = idx / (O::kSize * Sh::kM);
    } else {
      m = idx % Sh::kM;
      o = (idx / Sh::kM) % O::kSize;
      n = idx / (Sh::kM * O::kSize);
    }
    const int c = m / kMultiplier;
    const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
    const int id0 = od * S::kD - P::kD, ih0 = oh * S::kH - P::kH, iw0 = ow * S::kW - P::kW;
    const T* x;
    int y_off = idx;
    if constexpr (L == Layout::nchw) {
      x = p.X + (n * Sh::kC + c) * I::kSize;
    } else {
      x = p.X + n * I::kSize * kPX + c;
      y_off = (n * O::kSize + o) * kPY + m;
    }
    constexpr int kPixelStride = L == Layout::nchw ? 1 : kPX;
    const T* w = p.W + m * KD::kSize;
    Acc acc = Acc(0);
    MC_UNROLL
    for (int kd = 0; kd < KD::kD; ++kd) {
      const int id = id0 + kd * Dl::kD;
      if (static_cast<unsigned>(id) >= unsigned(I::kD)) continue;
      MC_UNROLL
      for (int kh = 0; kh < KD::kH; ++kh) {
        const int ih = ih0 + kh * Dl::kH;
        if (static_cast<unsigned>(ih) >= unsigned(I::kH)) continue;
        MC_UNROLL
        for (int kw = 0; kw < KD::kW; ++kw) {
          const int iw = iw0 + kw * Dl::kW;
          if (static_cast<unsigned>(iw) >= unsigned(I::kW)) continue;
          acc += static_cast<Acc>(w[(kd * KD::kH + kh) * KD::kW + kw]) *
                 static_cast<Acc>(x[((id * I::kH + ih) * I::kW + iw) * kPixelStride]);
        }
      }
    }
    p.Y[y_off] = static_cast<T>(Epi::template apply<Sh>(p.epilogue, acc, gemm::Coord{c, m, n * O::kSize + o, y_off}));
  }
};


/// \brief The tile of ConvDepthwiseTiled: a block computes TH x TW output pixels of CB channels
/// (a multiple of 8: whole 16-byte chunks); each thread CV channels (2, 4 or 8: 4, 8 or 16-byte
/// shared-memory reads) of RH x RW pixels. Async: the input tile by cp.async (sm_80+).
template <int TH, int TW, int CB, int CV, int RH, int RW, bool Async>
struct DepthwiseTile {
  static constexpr int kTH = TH, kTW = TW, kCB = CB, kCV = CV, kRH = RH, kRW = RW;
  static constexpr bool kAsync = Async;
  static_assert(CB % 8 == 0, "DepthwiseTile: CB must be whole 16-byte chunks of 8 channels");
  static_assert(CV == 2 || CV == 4 || CV == 8, "DepthwiseTile: CV is 2, 4 or 8 channels");
  static_assert(CB % CV == 0 && TH % RH == 0 && TW % RW == 0, "DepthwiseTile: the threads must tile the block");
  static constexpr int kThreads = (CB / CV) * (TH / RH) * (TW / RW);
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "DepthwiseTile: whole warps, at most 1024 threads");
};

namespace detail {

/// \brief CV elements of T read or written as one vector (4, 8 or 16 bytes).
template <class T, int CV>
struct alignas(CV * sizeof(T)) DwVector {
  T e[CV];
};

/// \brief The arithmetic of ConvDepthwiseTiled: Reg is what the registers hold, kLanes elements of
/// it per register (float: one; __half2: two channels).
template <class T, class Acc>
struct DwMath {
  using Reg = float;
  static constexpr int kLanes = 1;
  __device__ __forceinline__ static Reg zero() { return 0.0f; }
  __device__ __forceinline__ static Reg load(const T* v, int e) { return static_cast<float>(v[e]); }
  __device__ __forceinline__ static Reg fma(Reg w, Reg x, Reg a) { return a + w * x; }
  __device__ __forceinline__ static float get(Reg r, int) { return r; }
};
template <>
struct DwMath<__half, __half> {
  using Reg = __half2;
  static constexpr int kLanes = 2;
  __device__ __forceinline__ static Reg zero() { return __float2half2_rn(0.0f); }
  __device__ __forceinline__ static Reg load(const __half* v, int e) { return __halves2half2(v[e], v[e + 1]); }
  __device__ __forceinline__ static Reg fma(Reg w, Reg x, Reg a) { return __hfma2(w, x, a); }
  __device__ __forceinline__ static float get(Reg r, int lane) { return lane ? __high2float(r) : __low2float(r); }
};

}  // namespace detail

/// \brief Y = Epi(depthwise conv(X, W)) for NHWC X [N][H][W][XP] and Y [N][OH][OW][YP] (pitches 0:
/// the channel count) of T (__half or mc::bf16), W [C][KH][KW]; 2-D (D = 1), one channel per group
/// and multiplier 1 (C == M == G); Acc float, or __half for __half storage (see the file comment).
/// Tl: DepthwiseTile. Grid: (output tiles, channel blocks, images); kSmemBytes of dynamic shared
/// memory (the input tile). 16-byte chunks of X where XP is a multiple of 8 (X 16-byte aligned, as
/// every buffer of the arena), element loads otherwise.
template <class T, class Acc, class Sh, class Tl, class Epi, int kPitchX = 0, int kPitchY = 0>
struct ConvDepthwiseTiled {
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static_assert(Sh::kCg == 1 && Sh::kMg == 1, "ConvDepthwiseTiled: one channel per group, multiplier 1");
  static_assert(I::kD == 1 && KD::kD == 1 && O::kD == 1, "ConvDepthwiseTiled: 2-D (ConvDepthwise runs 3-D)");
  static_assert(sizeof(T) == 2, "ConvDepthwiseTiled: 16-bit storage (__half or mc::bf16)");
  using M = detail::DwMath<T, Acc>;
  static_assert(Tl::kCV % M::kLanes == 0, "ConvDepthwiseTiled: whole __half2 lanes");
  static constexpr int kC = Sh::kC;
  static constexpr int kPX = kPitchX ? kPitchX : kC, kPY = kPitchY ? kPitchY : kC;
  static_assert(kPX >= kC && kPY >= kC, "ConvDepthwiseTiled: a channel pitch below the channel count");
  static constexpr bool kVectorX = kPX % 8 == 0;
  static constexpr bool kVectorY = kPY % Tl::kCV == 0;
  static constexpr int kThreads = Tl::kThreads;
  /// The input tile: rows and columns (halo included), pixel pitch in elements.
  static constexpr int kInH = (Tl::kTH - 1) * S::kH + (KD::kH - 1) * Dl::kH + 1;
  static constexpr int kInW = (Tl::kTW - 1) * S::kW + (KD::kW - 1) * Dl::kW + 1;
  static constexpr int kSP = Tl::kCB + 8;
  static constexpr int kSmemBytes = kInH * kInW * kSP * 2;
  /// One thread's input rows and the pixels of each.
  static constexpr int kRows = (Tl::kRH - 1) * S::kH + (KD::kH - 1) * Dl::kH + 1;
  static constexpr int kCols = (Tl::kRW - 1) * S::kW + (KD::kW - 1) * Dl::kW + 1;
  static constexpr int kTaps = KD::kH * KD::kW;
  static constexpr int kTilesH = (O::kH + Tl::kTH - 1) / Tl::kTH, kTilesW = (O::kW + Tl::kTW - 1) / Tl::kTW;
  static constexpr int kChannelBlocks = (kC + Tl::kCB - 1) / Tl::kCB;
  static constexpr int kRegs = Tl::kCV / M::kLanes;  ///< registers per pixel of a thread's channels
  using Reg = typename M::Reg;
  using Vec = detail::DwVector<T, Tl::kCV>;

  struct Params {
    const T* X = nullptr;
    const T* W = nullptr;
    T* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3(kTilesH * kTilesW, kChannelBlocks, Sh::kN); }
  static dim3 block() { return dim3(kThreads); }

  /// Copies the input tile (origin ih0, iw0 of image n, channels c0 ..) into shared memory.
  __device__ __forceinline__ static void load_tile(const Params& p, T* smem, int n, int ih0, int iw0, int c0) {
    constexpr int kChunksPerPixel = Tl::kCB / 8, kChunks = kInH * kInW * kChunksPerPixel;
    const T* image = p.X + static_cast<int64_t>(n) * I::kH * I::kW * kPX;
    for (int q = static_cast<int>(threadIdx.x); q < kChunks; q += kThreads) {
      const int pix = q / kChunksPerPixel, cc = (q % kChunksPerPixel) * 8;
      const int ih = ih0 + pix / kInW, iw = iw0 + pix % kInW, c = c0 + cc;
      const bool inside = static_cast<unsigned>(ih) < unsigned(I::kH) && static_cast<unsigned>(iw) < unsigned(I::kW);
      const int avail = inside ? (kC - c < 8 ? (kC - c > 0 ? kC - c : 0) : 8) : 0;
      const T* src = image + (ih * I::kW + iw) * kPX + c;
      T* dst = smem + pix * kSP + cc;
      if constexpr (kVectorX && Tl::kAsync) {
        cp_async_16(dst, avail > 0 ? src : image, avail * 2);
      } else {
        union {
          uint4 v;
          T e[8];
        } chunk;
        if (kVectorX && avail == 8) {
          chunk.v = *reinterpret_cast<const uint4*>(src);
        } else {
          MC_UNROLL
          for (int e = 0; e < 8; ++e) chunk.e[e] = e < avail ? src[e] : static_cast<T>(0.0f);
        }
        st_shared(reinterpret_cast<uint4*>(dst), chunk.v);
      }
    }
    if constexpr (kVectorX && Tl::kAsync) {
      cp_async_commit();
      cp_async_wait<0>();
    }
  }

  __device__ static void run(const Params& p) {
    T* smem = dynamic_smem<T>();
    const int tile = static_cast<int>(blockIdx.x), n = static_cast<int>(blockIdx.z);
    const int oh0 = (tile / kTilesW) * Tl::kTH, ow0 = (tile % kTilesW) * Tl::kTW;
    const int c0 = static_cast<int>(blockIdx.y) * Tl::kCB;
    constexpr int kLanesC = Tl::kCB / Tl::kCV;  // threads across the block's channels
    const int tid = static_cast<int>(threadIdx.x);
    const int cv = tid % kLanesC, pos = tid / kLanesC;
    const int rb = pos / (Tl::kTW / Tl::kRW), qb = pos % (Tl::kTW / Tl::kRW);
    const int c = c0 + cv * Tl::kCV;

    // The thread's weights, tap-major, zero past the last channel: read before the tile's barrier
    // (their latency under the tile's), and held in registers from there on.
    Reg w[kTaps][kRegs];
    MC_UNROLL
    for (int t = 0; t < kTaps; ++t) {
      T v[Tl::kCV];
      MC_UNROLL
      for (int e = 0; e < Tl::kCV; ++e) v[e] = c + e < kC ? p.W[(c + e) * kTaps + t] : static_cast<T>(0.0f);
      MC_UNROLL
      for (int r = 0; r < kRegs; ++r) w[t][r] = M::load(v, r * M::kLanes);
    }
    load_tile(p, smem, n, oh0 * S::kH - P::kH, ow0 * S::kW - P::kW, c0);
    __syncthreads();
    Reg acc[Tl::kRH][Tl::kRW][kRegs];
    MC_UNROLL
    for (int r = 0; r < Tl::kRH; ++r) {
      MC_UNROLL
      for (int i = 0; i < Tl::kRW; ++i) {
        MC_UNROLL
        for (int e = 0; e < kRegs; ++e) acc[r][i][e] = M::zero();
      }
    }
    // Each input row the thread's outputs read, once: row ir serves output row r at tap row
    // kh = (ir - r s) / d where that is a whole tap (all compile-time).
    const T* base = smem + ((rb * Tl::kRH * S::kH) * kInW + qb * Tl::kRW * S::kW) * kSP + cv * Tl::kCV;
    MC_UNROLL
    for (int ir = 0; ir < kRows; ++ir) {
      Reg x[kCols][kRegs];
      MC_UNROLL
      for (int j = 0; j < kCols; ++j) {
        const Vec v = ld_shared(reinterpret_cast<const Vec*>(base + (ir * kInW + j) * kSP));
        MC_UNROLL
        for (int r = 0; r < kRegs; ++r) x[j][r] = M::load(v.e, r * M::kLanes);
      }
      MC_UNROLL
      for (int r = 0; r < Tl::kRH; ++r) {
        const int dh = ir - r * S::kH;
        if (dh < 0 || dh % Dl::kH != 0 || dh / Dl::kH >= KD::kH) continue;
        const int kh = dh / Dl::kH;
        MC_UNROLL
        for (int i = 0; i < Tl::kRW; ++i) {
          MC_UNROLL
          for (int kw = 0; kw < KD::kW; ++kw) {
            MC_UNROLL
            for (int e = 0; e < kRegs; ++e) {
              acc[r][i][e] = M::fma(w[kh * KD::kW + kw][e], x[i * S::kW + kw * Dl::kW][e], acc[r][i][e]);
            }
          }
        }
      }
    }

    // The epilogue, per element; CV outputs stored as one vector where they are all channels.
    MC_UNROLL
    for (int r = 0; r < Tl::kRH; ++r) {
      MC_UNROLL
      for (int i = 0; i < Tl::kRW; ++i) {
        const int oh = oh0 + rb * Tl::kRH + r, ow = ow0 + qb * Tl::kRW + i;
        if (oh >= O::kH || ow >= O::kW) continue;
        const int o = oh * O::kW + ow;
        const int64_t y_off = (static_cast<int64_t>(n) * O::kSize + o) * kPY + c;
        Vec out;
        MC_UNROLL
        for (int e = 0; e < Tl::kCV; ++e) {
          // Past the last channel: computed from zeros, never stored (nor is its bias read).
          const float v = M::get(acc[r][i][e / M::kLanes], e % M::kLanes);
          out.e[e] = c + e < kC ? static_cast<T>(Epi::template apply<Sh>(
                                      p.epilogue, v, gemm::Coord{c + e, c + e, n * O::kSize + o, y_off + e}))
                                : static_cast<T>(0.0f);
        }
        if (kVectorY && c + Tl::kCV <= kC) {
          *reinterpret_cast<Vec*>(p.Y + y_off) = out;
        } else {
          MC_UNROLL
          for (int e = 0; e < Tl::kCV; ++e) {
            if (c + e < kC) p.Y[y_off + e] = out.e[e];
          }
        }
      }
    }
  }
};

}  // namespace conv
}  // namespace mc

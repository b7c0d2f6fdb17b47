// templates/conv.cuh — convolution as an implicit GEMM on the tiled main loop of gemm.cuh.
//
// Per group g: Y[n, g*Mg + m, o] = epilogue(sum over k of W[g*Mg + m, k] * X~[k, (n, o)]), where
// k runs over (input channel c of the group, kernel tap) and X~ is the im2col matrix, never built:
// the B-operand loader (Im2colLoader) computes each element's input position on the fly and reads
// zero in the padding. GEMM rows are the group's output channels (Mg), columns the output pixels
// of every image (N * OD * OH * OW), depth Cg * KD * KH * KW. Grid: (pixel tiles, channel tiles,
// groups).
//
// Geometry is 3-D throughout (Dims3<D, H, W>): a 2-D convolution has D = KD = OD = 1, a 1-D one
// H = KH = OH = 1 as well; the compiler folds the unit dims away. Padding: the begin pads (the
// output size, given, already accounts for the end pads and auto_pad).
//
// Layouts (template parameter L):
//   nchw: X [N][C][D][H][W], Y [N][M][OD][OH][OW], W [M][Cg][KD][KH][KW] (ONNX's own);
//         k = (c, kd, kh, kw); loads follow the pixels (contiguous in X), stores too.
//   nhwc: X [N][D][H][W][XP], Y [N][OD][OH][OW][YP], W [M][KD][KH][KW][WP] (OHWI, what the layout
//         pass produces) with channel pitches XP >= C, YP >= M, WP >= Cg (template parameters;
//         0: dense, the channel count); k = (kd, kh, kw, c) over WP, c fastest; channels >= Cg of
//         a pitch are masked (never read as data), output channels >= M never written. W's rows
//         (one per output channel) are taps x WP long, or WRow (the compact form of the
//         tensor-core conv: WP = Cg, rows padded to a multiple of 8 elements).
#pragma once

#include "gemm.cuh"

namespace mc {
namespace conv {

enum class Layout { nchw, nhwc };

/// \brief Three spatial extents (or strides, pads, dilations), outermost first.
template <int D, int H, int W>
struct Dims3 {
  static constexpr int kD = D, kH = H, kW = W;
  static constexpr int kSize = D * H * W;
};

/// \brief A convolution's geometry: batch N, input channels C, output channels M, groups G, and
/// per spatial dim the input, kernel, output extents, strides, begin pads and dilations.
template <int N, int C, int M, int G, class In, class Kernel, class Out, class Stride, class Pad, class Dilation>
struct Shape {
  static constexpr int kN = N, kC = C, kM = M, kG = G;
  static constexpr int kCg = C / G, kMg = M / G;
  static_assert(C % G == 0 && M % G == 0, "conv::Shape: channels must divide into groups");
  using InDims = In;
  using KernelDims = Kernel;
  using OutDims = Out;
  using StrideDims = Stride;
  using PadDims = Pad;
  using DilationDims = Dilation;
  static constexpr int kTaps = Kernel::kSize;
  static constexpr int kGemmM = kMg;                  ///< rows: output channels of a group
  static constexpr int kGemmN = N * Out::kSize;       ///< columns: output pixels of every image
  static constexpr int kGemmK = kCg * Kernel::kSize;  ///< depth: (channel, tap) of the group
  // The epilogues see a group as the batch.
  static constexpr int kB0 = 1, kB1 = 1, kB2 = G, kBatch = G;
};

/// \brief Loads BK x BN slices of the im2col matrix of X for group `group`: element (k, j) is
/// X[n, group*Cg + c, od*s - p + kd*d, ...] (zero in the padding) for j = (n, od, oh, ow) and k =
/// (c, kd, kh, kw) (nchw) or (kd, kh, kw, c) (nhwc). Each slot's pixel is decoded once per block.
template <class T, class Acc, class Sh, Layout L, int BK, int BN, int NT, int XP = Sh::kC, int WP = Sh::kCg>
struct Im2colLoader {
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  using Map = gemm::SlotMap<BK, BN, NT, L == Layout::nchw>;
  static constexpr int kCount = Map::kCount;

  const T* x;          ///< X
  int tid;
  int pix_base[kCount];  ///< offset of the slot's image and group in X; -1: the pixel is past the end
  int id0[kCount], ih0[kCount], iw0[kCount];  ///< input position of the window's first tap

  __device__ __forceinline__ Im2colLoader(const T* x_, int group, int j0, int tid_) : x(x_), tid(tid_) {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int j = j0 + Map::x(tid, i);
      const int n = j / O::kSize, o = j % O::kSize;
      const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
      if constexpr (L == Layout::nchw) {
        pix_base[i] = (n * Sh::kC + group * Sh::kCg) * I::kSize;
      } else {
        pix_base[i] = n * I::kSize * XP + group * Sh::kCg;
      }
      if (j >= Sh::kGemmN) pix_base[i] = -1;
      id0[i] = od * S::kD - P::kD;
      ih0[i] = oh * S::kH - P::kH;
      iw0[i] = ow * S::kW - P::kW;
    }
  }

  __device__ __forceinline__ void load(int k0, Acc (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int k = k0 + Map::k(tid, i);
      int c, tap;
      if constexpr (L == Layout::nchw) {
        c = k / KD::kSize;
        tap = k % KD::kSize;
      } else {
        tap = k / WP;
        c = k % WP;
      }
      const int kd = tap / (KD::kH * KD::kW), kh = (tap / KD::kW) % KD::kH, kw = tap % KD::kW;
      const int id = id0[i] + kd * Dl::kD, ih = ih0[i] + kh * Dl::kH, iw = iw0[i] + kw * Dl::kW;
      constexpr int kDepth = L == Layout::nchw ? Sh::kGemmK : KD::kSize * WP;
      const bool inside = k < kDepth && (L == Layout::nchw || c < Sh::kCg) && pix_base[i] >= 0 && static_cast<unsigned>(id) < unsigned(I::kD) &&
                          static_cast<unsigned>(ih) < unsigned(I::kH) && static_cast<unsigned>(iw) < unsigned(I::kW);
      int off;
      if constexpr (L == Layout::nchw) {
        off = pix_base[i] + c * I::kSize + (id * I::kH + ih) * I::kW + iw;
      } else {
        off = pix_base[i] + ((id * I::kH + ih) * I::kW + iw) * XP + c;
      }
      r[i] = inside ? static_cast<Acc>(x[off]) : Acc(0);
    }
  }
  template <int LD>
  __device__ __forceinline__ void store(const Acc (&r)[kCount], Acc* s) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) s[Map::k(tid, i) * LD + Map::x(tid, i)] = r[i];
  }
};

/// \brief Y = Epi(conv(X, W)): the implicit GEMM. Epi sees Coord{group, output channel (0..M),
/// pixel column j, offset in Y}; gemm::EpilogueBias adds the bias. XPitch / YPitch / WPitch: the
/// channel pitches of an nhwc X, Y and W (0: dense); WRow: W's row pitch (0: the depth). With
/// gemm::EpilogueRanges (groups = 1, a horizontally fused convolution) each channel goes to its
/// range's output, not to Y.
template <class T, class Acc, class Sh, Layout L, class Tl, class Epi, int XPitch = 0, int YPitch = 0, int WPitch = 0,
          int WRow = 0>
struct Conv {
  static constexpr int kXP = XPitch ? XPitch : Sh::kC, kYP = YPitch ? YPitch : Sh::kM, kWP = WPitch ? WPitch : Sh::kCg;
  static_assert(L == Layout::nhwc || (kXP == Sh::kC && kYP == Sh::kM && kWP == Sh::kCg && WRow == 0),
                "conv::Conv: channel pitches are for the nhwc layout");
  /// GEMM depth (nhwc: taps x WP, padded channels masked in X and zero in W) and W's row pitch.
  static constexpr int kDepth = L == Layout::nchw ? Sh::kGemmK : Sh::KernelDims::kSize * kWP;
  static constexpr int kWRow = WRow ? WRow : kDepth;
  static_assert(kWRow >= kDepth, "conv::Conv: W's rows are shorter than the depth");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kSmemBytes = 0;

  struct Params {
    const T* X = nullptr;
    const T* W = nullptr;
    T* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() {
    return dim3((Sh::kGemmN + Tl::kBN - 1) / Tl::kBN, (Sh::kGemmM + Tl::kBM - 1) / Tl::kBM, Sh::kG);
  }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    const int group = static_cast<int>(blockIdx.z);
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, j0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    // W's rows for this group: [Mg][kWRow], in the k order of the layout.
    gemm::MatrixLoader<T, Acc, Sh::kGemmM, kDepth, kWRow, 1, Tl::kBK, Tl::kBM, kThreads> la{
        p.W + group * Sh::kMg * kWRow, m0, tid};
    Im2colLoader<T, Acc, Sh, L, Tl::kBK, Tl::kBN, kThreads, kXP, kWP> lb(p.X, group, j0, tid);
    Acc acc[Tl::kTM][Tl::kTN];
    MC_UNROLL
    for (int i = 0; i < Tl::kTM; ++i) {
      MC_UNROLL
      for (int j = 0; j < Tl::kTN; ++j) acc[i][j] = Acc(0);
    }
    gemm::Mainloop<Acc, Tl>::run(la, lb, kDepth, acc);

    using O = typename Sh::OutDims;
    const int tx = tid % Tl::kThreadsN, ty = tid / Tl::kThreadsN;
    MC_UNROLL
    for (int j = 0; j < Tl::kTN; ++j) {
      const int col = j0 + Tl::col(tx, j);
      if (col >= Sh::kGemmN) continue;
      const int n = col / O::kSize, o = col % O::kSize;
      MC_UNROLL
      for (int i = 0; i < Tl::kTM; ++i) {
        const int m = m0 + Tl::row(ty, i);
        if (m >= Sh::kGemmM) continue;
        const int channel = group * Sh::kMg + m;
        int off;
        if constexpr (L == Layout::nchw) {
          off = (n * Sh::kM + channel) * O::kSize + o;
        } else {
          off = (n * O::kSize + o) * kYP + channel;
        }
        const T v = static_cast<T>(Epi::template apply<Sh>(p.epilogue, acc[i][j], gemm::Coord{group, channel, col, off}));
        if constexpr (gemm::HasRanges<Epi>::value) {  // a horizontally fused kernel: the range's output
          bool vector;
          *Epi::at(p.epilogue, channel, n, o, &vector) = v;
        } else {
          p.Y[off] = v;
        }
      }
    }
  }
};

// ---- per-channel operand prologues ---------------------------------------------------------------
// What a kernel applies to each element of its input X as it loads it, in place of an elementwise
// kernel of its own in front of it (the compiler's fuse_prologue stage): tensor_core.cuh's tc::Conv
// (its A operand, ChannelPrologueLoader) and pool.cuh's Pool and GlobalPool take one.

/// \brief No prologue: X as stored.
struct NoPrologue {
  static constexpr bool kActive = false;
  struct Params {};
};

/// \brief The per-channel prologue on X of T: element x of channel c of image n becomes
/// act(x scale[c] + shift[c]) (Affine: a BatchNormalization; act ReLU where Relu), then that times
/// gate[n Gp + c] (Gate: squeeze-and-excite's [N, C, 1, 1] channel scale, Gp its image pitch), in
/// FP32 (one fmaf), rounded once to T (what the elementwise kernel it replaces would have stored).
/// The caller applies it to data elements only: a convolution's padding taps, channels >= C and k
/// past K stay zero, a pool's padded taps are never loaded.
template <class T, bool Affine, bool Relu, bool Gate, int Gp = 0>
struct ChannelPrologue {
  static_assert(Affine || Gate, "ChannelPrologue: an affine map, a gate or both");
  static constexpr bool kActive = true;
  struct Params {
    const float* __restrict__ scale = nullptr;  ///< Affine: [C]
    const float* __restrict__ shift = nullptr;  ///< Affine: [C]
    const T* __restrict__ gate = nullptr;       ///< Gate: gate[n Gp + c]
  };
  __device__ __forceinline__ static T apply(const Params& p, T x, int n, int c) {
    float v = static_cast<float>(x);
    if constexpr (Affine) v = fmaf(v, p.scale[c], p.shift[c]);
    if constexpr (Relu) v = v > 0.0f ? v : 0.0f;
    if constexpr (Gate) v *= static_cast<float>(p.gate[n * Gp + c]);
    return static_cast<T>(v);
  }
};

}  // namespace conv
}  // namespace mc

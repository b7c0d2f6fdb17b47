// templates/pool.cuh — MaxPool (with the optional Indices output), AveragePool, GlobalAveragePool,
// GlobalMaxPool.
//
// Windowed pools (Pool): one thread per output element, the (compile-time) window unrolled; a tap
// outside the input is skipped. Geometry is 3-D (conv.cuh's Dims3; 2-D and 1-D pools have unit
// leading dims), begin pads in Pad, end pads in PadEnd (AveragePool's count_include_pad counts the
// taps inside input + pads, not the part of a ceil_mode window past the end padding, like the
// reference). MaxPool: the first maximum wins (strictly greater replaces), as in the reference; a
// window entirely in the padding gives 0 and index -1. Indices are flat over N x C x spatial,
// row-major, or with storage_order = 1 column-major over the spatial dims (the formula over 3-D
// with unit leading dims gives the same numbers as over the model's own rank).
//
// Global pools (GlobalPool): one warp per (n, c) plane, lanes stride over the plane and combine
// with shuffles.
//
// Layouts: nchw, or nhwc (channels innermost; threads then walk the channels, coalesced). In nhwc,
// X's pixels are kPitchX elements apart and Y's kPitchY (0: the channel count): a channel pitch
// padded for tensor cores (compiler/schedule/layout.h); the padded channels are neither read nor
// written. nhwc global pools run one thread per (n, c), each looping over the plane (adjacent
// threads read adjacent channels).
//
// Prologue (Pro: conv.cuh's NoPrologue or ChannelPrologue; the compiler's fuse_prologue stage): each
// element read goes through Pro::apply (a BatchNormalization's act(x scale[c] + shift[c]), a
// squeeze-and-excite gate) before it is summed or compared, so the elementwise kernel in front of
// the pool runs no kernel of its own. Exact per element (the average of act(x) is not act of the
// average); a padded tap is never loaded (skipped, or counted by count_include_pad as the zero the
// pool pads its input with), so the padding keeps the pool's own pad value.
#pragma once

#include "conv.cuh"

namespace mc {
namespace pool {

using conv::Dims3;
using conv::Layout;

enum class Kind { max, average_exclude_pad, average_include_pad };

/// \brief Planes (N, C) and per spatial dim the input, window, output extents, strides, begin and
/// end pads and dilations.
template <int N, int C, class In, class Kernel, class Out, class Stride, class Pad, class PadEnd, class Dilation>
struct Shape {
  static constexpr int kN = N, kC = C;
  using InDims = In;
  using KernelDims = Kernel;
  using OutDims = Out;
  using StrideDims = Stride;
  using PadDims = Pad;
  using PadEndDims = PadEnd;
  using DilationDims = Dilation;
};

/// \brief Where the window of output position `o` lies along one dim: the first tap inside the
/// input (its input position and index), how many taps are inside the input, and how many inside
/// input + pads.
struct Taps {
  int first_pos, first_tap, count, padded;
};

/// \brief Element *x, of channel c of image n, as the pool reads it: through the prologue Pro.
template <class Pro, class T>
__device__ __forceinline__ float load(const typename Pro::Params& pro, const T* x, int n, int c) {
  if constexpr (Pro::kActive) {
    return static_cast<float>(Pro::apply(pro, *x, n, c));
  } else {
    return static_cast<float>(*x);
  }
}
template <int kIn, int kK, int kS, int kP, int kPEnd, int kDil>
__device__ __forceinline__ Taps taps(int o) {
  const int start = o * kS - kP;
  Taps t{0, 0, 0, 0};
  MC_UNROLL
  for (int j = 0; j < kK; ++j) {
    const int pos = start + j * kDil;
    if (pos >= -kP && pos < kIn + kPEnd) ++t.padded;
    if (pos >= 0 && pos < kIn) {
      if (t.count == 0) {
        t.first_pos = pos;
        t.first_tap = j;
      }
      ++t.count;
    }
  }
  return t;
}

/// \brief Y (and, for Kind::max with kIndices, Indices: int64) of a windowed pool of X through Pro.
template <class T, class Sh, Layout L, Kind kKind, bool kIndices, bool kColumnMajor, int NT = 128, int kPitchX = 0,
          int kPitchY = 0, class Pro = conv::NoPrologue>
struct Pool {
  static constexpr int kThreads = NT;
  static constexpr int kSmemBytes = 0;
  using I = typename Sh::InDims;
  using K = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using PE = typename Sh::PadEndDims;
  using Dl = typename Sh::DilationDims;
  static constexpr int64_t kOutputs = int64_t(Sh::kN) * Sh::kC * O::kSize;
  static_assert(!kIndices || kKind == Kind::max, "Pool: Indices come with MaxPool only");
  static constexpr int kPX = kPitchX ? kPitchX : Sh::kC, kPY = kPitchY ? kPitchY : Sh::kC;
  static_assert(kPX >= Sh::kC && kPY >= Sh::kC, "Pool: a channel pitch below the channel count");

  struct Params {
    const T* X = nullptr;
    T* Y = nullptr;
    int64_t* indices = nullptr;  ///< null unless kIndices
    typename Pro::Params prologue{};
  };

  static dim3 grid() { return dim3(static_cast<unsigned>((kOutputs + NT - 1) / NT)); }
  static dim3 block() { return dim3(NT); }

  __device__ static void run(const Params& p) {
    const int idx = static_cast<int>(blockIdx.x) * NT + static_cast<int>(threadIdx.x);
    if (idx >= kOutputs) return;
    int n, c, o;
    if constexpr (L == Layout::nchw) {
      o = idx % O::kSize;
      c = (idx / O::kSize) % Sh::kC;
      n = idx / (O::kSize * Sh::kC);
    } else {
      c = idx % Sh::kC;
      o = (idx / Sh::kC) % O::kSize;
      n = idx / (Sh::kC * O::kSize);
    }
    const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
    const Taps tz = taps<I::kD, K::kD, S::kD, P::kD, PE::kD, Dl::kD>(od);
    const Taps ty = taps<I::kH, K::kH, S::kH, P::kH, PE::kH, Dl::kH>(oh);
    const Taps tx = taps<I::kW, K::kW, S::kW, P::kW, PE::kW, Dl::kW>(ow);
    const int plane = n * Sh::kC + c;
    const T* x;
    constexpr int kPixelStride = L == Layout::nchw ? 1 : kPX;
    int y_off = idx;
    if constexpr (L == Layout::nchw) {
      x = p.X + plane * I::kSize;
    } else {
      x = p.X + n * I::kSize * kPX + c;
      y_off = (n * O::kSize + o) * kPY + c;
    }
    if constexpr (kKind == Kind::max) {
      float best = 0.0f;
      int bz = -1, by = -1, bx = -1;
      for (int a = 0; a < tz.count; ++a) {
        const int iz = tz.first_pos + a * Dl::kD;
        for (int b = 0; b < ty.count; ++b) {
          const int iy = ty.first_pos + b * Dl::kH;
          for (int e = 0; e < tx.count; ++e) {
            const int ix = tx.first_pos + e * Dl::kW;
            const float v = load<Pro>(p.prologue, x + ((iz * I::kH + iy) * I::kW + ix) * kPixelStride, n, c);
            if (bx < 0 || v > best) {
              best = v;
              bz = iz;
              by = iy;
              bx = ix;
            }
          }
        }
      }
      p.Y[y_off] = static_cast<T>(best);
      if constexpr (kIndices) {
        int64_t index = -1;
        if (bx >= 0) {
          const int64_t within = kColumnMajor ? int64_t(bz) + int64_t(by) * I::kD + int64_t(bx) * I::kD * I::kH
                                              : (int64_t(bz) * I::kH + by) * I::kW + bx;
          index = int64_t(plane) * I::kSize + within;
        }
        p.indices[y_off] = index;
      }
    } else {
      float sum = 0.0f;
      for (int a = 0; a < tz.count; ++a) {
        const int iz = tz.first_pos + a * Dl::kD;
        for (int b = 0; b < ty.count; ++b) {
          const int iy = ty.first_pos + b * Dl::kH;
          for (int e = 0; e < tx.count; ++e) {
            sum += load<Pro>(p.prologue, x + ((iz * I::kH + iy) * I::kW + tx.first_pos + e * Dl::kW) * kPixelStride, n, c);
          }
        }
      }
      const int count = kKind == Kind::average_include_pad ? tz.padded * ty.padded * tx.padded
                                                           : tz.count * ty.count * tx.count;
      p.Y[y_off] = static_cast<T>(count > 0 ? sum / static_cast<float>(count) : 0.0f);
    }
  }
};

/// \brief GlobalAveragePool / GlobalMaxPool over planes of kInner elements: Y[plane] = mean or max
/// of the plane. nchw: plane (n, c) is contiguous, one warp per plane; nhwc: its elements are kPitchX
/// apart, one thread per plane, and Y[n, c] is at n * kPitchY + c (0: the channel count). X's
/// elements go through Pro.
template <class T, int kN, int kC, int kInner, Layout L, bool kMax, int NT = 128, int kPitchX = 0, int kPitchY = 0,
          class Pro = conv::NoPrologue>
struct GlobalPool {
  static constexpr int kThreads = NT;
  static constexpr int kSmemBytes = 0;
  static constexpr int kWarps = NT / 32;
  static constexpr int kPlanes = kN * kC;
  static_assert(NT % 32 == 0, "GlobalPool: whole warps");
  static constexpr int kPX = kPitchX ? kPitchX : kC, kPY = kPitchY ? kPitchY : kC;
  static_assert(kPX >= kC && kPY >= kC, "GlobalPool: a channel pitch below the channel count");

  struct Params {
    const T* X = nullptr;
    T* Y = nullptr;
    typename Pro::Params prologue{};
  };

  static dim3 grid() {
    return dim3(L == Layout::nchw ? (kPlanes + kWarps - 1) / kWarps : (kPlanes + NT - 1) / NT);
  }
  static dim3 block() { return dim3(NT); }

  __device__ static void run(const Params& p) {
    if constexpr (L == Layout::nhwc) {
      // One thread per (n, c): adjacent threads read adjacent channels of each pixel.
      const int plane = static_cast<int>(blockIdx.x) * NT + static_cast<int>(threadIdx.x);
      if (plane >= kPlanes) return;
      const int n = plane / kC, c = plane % kC;
      const T* x = p.X + int64_t(n) * kInner * kPX + c;
      float v = kMax ? -__int_as_float(0x7f800000) : 0.0f;
      for (int i = 0; i < kInner; ++i) {
        const float e = load<Pro>(p.prologue, x + int64_t(i) * kPX, n, c);
        v = kMax ? fmaxf(v, e) : v + e;
      }
      p.Y[int64_t(n) * kPY + c] = static_cast<T>(kMax ? v : v / static_cast<float>(kInner));
      return;
    }
    const int plane = static_cast<int>(blockIdx.x) * kWarps + static_cast<int>(mc::warp_id());
    const int lane = static_cast<int>(mc::lane_id());
    // A warp past the last plane still takes part in the shuffles (of its own lanes) and then
    // stores nothing.
    const bool active = plane < kPlanes;
    const T* x = p.X + int64_t(plane) * kInner;
    const int n = plane / kC, c = plane % kC;
    float v = kMax ? -__int_as_float(0x7f800000) : 0.0f;  // -inf: the identity of max
    if (active) {
      for (int i = lane; i < kInner; i += 32) {
        const float e = load<Pro>(p.prologue, x + i, n, c);
        v = kMax ? fmaxf(v, e) : v + e;
      }
    }
    MC_UNROLL
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, v, offset);
      v = kMax ? fmaxf(v, other) : v + other;
    }
    if (active && lane == 0) p.Y[plane] = static_cast<T>(kMax ? v : v / static_cast<float>(kInner));
  }
};

}  // namespace pool
}  // namespace mc

// templates/conv_depthwise.cuh — depthwise convolution (group == C: every group has one input
// channel), direct: one thread per output element, the whole (compile-time) window unrolled.
//
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

}  // namespace conv
}  // namespace mc

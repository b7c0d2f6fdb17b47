// templates/conv_transpose.cuh — transposed (fractionally strided) convolution, gather form: one
// thread per output element sums the input positions that scatter into it.
//
// ONNX defines Y[n, g*Mg + m, i*s - p + tap*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, tap]. Read
// from the output's side: for an output position o and a tap, the input position is
// i = (o + p - tap*d) / s when that division is exact and i is inside the input. Each thread
// loops over the (compile-time) taps, skips those that do not land, and sums the group's Cg input
// channels for the ones that do; no atomics, deterministic.
//
// The geometry is conv.cuh's Shape with In = the input X and Out = Y (kG groups, kCg = C / G input
// channels and kMg = M / G output channels per group); Pad holds the begin pads (after
// output_padding / output_shape / auto_pad were resolved by plan). W keeps ONNX's layout
// [C][Mg][KD][KH][KW] in both activation layouts.
#pragma once

#include "conv.cuh"

namespace mc {
namespace conv {

template <class T, class Acc, class Sh, Layout L, class Epi, int NT = 128>
struct ConvTranspose {
  static constexpr int kThreads = NT;
  static constexpr int kSmemBytes = 0;
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static constexpr int64_t kOutputs = int64_t(Sh::kN) * Sh::kM * O::kSize;

  struct Params {
    const T* X = nullptr;
    const T* W = nullptr;
    T* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3(static_cast<unsigned>((kOutputs + NT - 1) / NT)); }
  static dim3 block() { return dim3(NT); }

  /// The input index along one dim that output position `o` takes from tap `t`, or -1.
  template <int kIn, int kS, int kP, int kDil>
  __device__ __forceinline__ static int source(int o, int t) {
    const int v = o + kP - t * kDil;
    if (v < 0 || v % kS != 0) return -1;
    const int i = v / kS;
    return i < kIn ? i : -1;
  }

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
    const int group = m / Sh::kMg, mg = m % Sh::kMg;
    const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
    // Input channel c of the group: X element stride between channels, W's row of (c, mg).
    constexpr int kChannelStride = L == Layout::nchw ? I::kSize : 1;
    constexpr int kPixelStride = L == Layout::nchw ? 1 : Sh::kC;
    const T* x;
    if constexpr (L == Layout::nchw) {
      x = p.X + (n * Sh::kC + group * Sh::kCg) * I::kSize;
    } else {
      x = p.X + n * I::kSize * Sh::kC + group * Sh::kCg;
    }
    const T* w = p.W + (group * Sh::kCg * Sh::kMg + mg) * KD::kSize;
    constexpr int kWChannelStride = Sh::kMg * KD::kSize;
    Acc acc = Acc(0);
    MC_UNROLL
    for (int kd = 0; kd < KD::kD; ++kd) {
      const int id = source<I::kD, S::kD, P::kD, Dl::kD>(od, kd);
      if (id < 0) continue;
      MC_UNROLL
      for (int kh = 0; kh < KD::kH; ++kh) {
        const int ih = source<I::kH, S::kH, P::kH, Dl::kH>(oh, kh);
        if (ih < 0) continue;
        MC_UNROLL
        for (int kw = 0; kw < KD::kW; ++kw) {
          const int iw = source<I::kW, S::kW, P::kW, Dl::kW>(ow, kw);
          if (iw < 0) continue;
          const T* xp = x + ((id * I::kH + ih) * I::kW + iw) * kPixelStride;
          const T* wp = w + (kd * KD::kH + kh) * KD::kW + kw;
          for (int c = 0; c < Sh::kCg; ++c) {
            acc += static_cast<Acc>(xp[c * kChannelStride]) * static_cast<Acc>(wp[c * kWChannelStride]);
          }
        }
      }
    }
    p.Y[idx] = static_cast<T>(Epi::template apply<Sh>(p.epilogue, acc, gemm::Coord{group, m, n * O::kSize + o, idx}));
  }
};

}  // namespace conv
}  // namespace mc

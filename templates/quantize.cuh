// templates/quantize.cuh — the quantization ops' kernels (compiler/ops/quantize.h has their meaning):
//   QuantizeLinear / DequantizeLinear: ops of the broadcasting elementwise kernel (elementwise.cuh
//     Elementwise; the scale and zero point are operands, broadcast per tensor or along the axis):
//     mc::ew::Quantize<Lo, Hi, kZeroPoint> y = saturate(rint(x / s) + z), the division in FP32 as the
//     reference's; mc::ew::Dequantize<kZeroPoint> y = float(x - z) * s.
//   DynamicQuantizeLinear: Range (one block: min and max of x with 0, strided; scale = (max - min) /
//     255 and zero point = saturate(rint(-min / scale)) into the outputs and a workspace), then the
//     Quantize op reading them.
//   ConvInteger / QLinearConv (DirectConv) and MatMulInteger / QLinearMatMul (DirectMatMul): one
//     thread per output, NCHW / row-major, every operand (scales and zero points included) read at
//     run time; exact int64 accumulation of (x - zx)(w - zw); QLinear*: + B, then saturate(rint(acc
//     * (x_scale * w_scale / y_scale)) + zy) in double, as the reference computes it.
#pragma once

#include "conv.cuh"
#include "elementwise.cuh"

namespace mc {
namespace ew {

/// \brief saturate(rint(x / s) + z) into [Lo, Hi] (the output type's range); NaN gives z. Without a
/// zero point operand, z is 0.
template <int Lo, int Hi, bool kZeroPoint>
struct Quantize {
  __device__ __forceinline__ int64_t q(float x, float s, int64_t z) const {
    const float v = x / s;
    float r = v != v ? static_cast<float>(z) : rintf(v) + static_cast<float>(z);
    r = r < static_cast<float>(Lo) ? static_cast<float>(Lo) : (r > static_cast<float>(Hi) ? static_cast<float>(Hi) : r);
    return static_cast<int64_t>(r);
  }
  __device__ __forceinline__ int64_t operator()(float x, float s, int64_t z) const { return q(x, s, z); }
  __device__ __forceinline__ int64_t operator()(int64_t x, float s, int64_t z) const { return q(static_cast<float>(x), s, z); }
  __device__ __forceinline__ int64_t operator()(float x, float s) const { return q(x, s, 0); }
  __device__ __forceinline__ int64_t operator()(int64_t x, float s) const { return q(static_cast<float>(x), s, 0); }
};

/// \brief float(x - z) * s (without a zero point operand, z is 0).
template <bool kZeroPoint>
struct Dequantize {
  __device__ __forceinline__ float operator()(int64_t x, float s, int64_t z) const { return static_cast<float>(x - z) * s; }
  __device__ __forceinline__ float operator()(int64_t x, float s) const { return static_cast<float>(x) * s; }
};

}  // namespace ew

namespace q {

/// \brief DynamicQuantizeLinear's first launch: one block reduces min(0, x) and max(0, x) over X
/// (Shape, strides XS; float or __half), then thread 0 writes the scale (float) and zero point (uint8)
/// to `scale` / `zero_point` (a workspace: the second launch reads them) and to the node's outputs
/// when present.
template <class TX, class Shape, class XS>
struct Range {
  static constexpr int kThreads = 256;
  static constexpr int kSmemBytes = 0;
  struct Params {
    const TX* x = nullptr;
    float* scale = nullptr;
    uint8_t* zero_point = nullptr;
    float* scale_out = nullptr;         ///< output 1, or null
    uint8_t* zero_point_out = nullptr;  ///< output 2, or null
  };
  static dim3 grid() { return dim3(1); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    __shared__ float lo[kThreads], hi[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    float a = 0.0f, b = 0.0f;  // the range includes 0
    for (int64_t i = t; i < Shape::numel; i += kThreads) {
      const float v = static_cast<float>(p.x[ix::offset<Shape, XS>(i)]);
      a = v < a ? v : a;
      b = v > b ? v : b;
    }
    st_shared(&lo[t], a);
    st_shared(&hi[t], b);
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s /= 2) {
      if (t < s) {
        const float l = ld_shared(&lo[t + s]), h = ld_shared(&hi[t + s]);
        if (l < ld_shared(&lo[t])) st_shared(&lo[t], l);
        if (h > ld_shared(&hi[t])) st_shared(&hi[t], h);
      }
      __syncthreads();
    }
    if (t == 0) {
      const float mn = ld_shared(&lo[0]), mx = ld_shared(&hi[0]);
      const float scale = (mx - mn) / 255.0f;
      float z = 0.0f;
      if (scale != 0.0f) {
        z = rintf((0.0f - mn) / scale);
        z = z < 0.0f ? 0.0f : (z > 255.0f ? 255.0f : z);
      }
      *p.scale = scale;
      *p.zero_point = static_cast<uint8_t>(z);
      if (p.scale_out) *p.scale_out = scale;
      if (p.zero_point_out) *p.zero_point_out = static_cast<uint8_t>(z);
    }
  }
};

/// \brief DynamicQuantizeLinear's second launch: y = saturate(rint(x / scale) + zero point) into
/// uint8 (Shape; X strides XS, Y strides YS), the scale and zero point the first launch wrote; a zero
/// scale (x all zero) gives the zero point.
template <class TX, class Shape, class XS, class YS>
struct DynamicQuantize {
  static constexpr int kThreads = ix::kBlock;
  static constexpr int kSmemBytes = 0;
  using Index = ix::index_t<Shape, XS, YS>;
  struct Params {
    const TX* x = nullptr;
    uint8_t* y = nullptr;
    const float* scale = nullptr;
    const uint8_t* zero_point = nullptr;
  };
  static dim3 grid() { return dim3(ix::grid_for(Shape::numel)); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    const float s = *p.scale;
    const int64_t z = *p.zero_point;
    const ew::Quantize<0, 255, true> op{};
    for (Index i = ix::first_index<Index>(); i < static_cast<Index>(Shape::numel); i += ix::grid_stride<Index>()) {
      const float v = static_cast<float>(p.x[ix::offset<Shape, XS>(i)]);
      p.y[ix::offset<Shape, YS>(i)] = static_cast<uint8_t>(s != 0.0f ? op(v, s, z) : z);
    }
  }
};

/// \brief The requantization of QLinearConv / QLinearMatMul: saturate(rint(acc * (x_scale * w_scale /
/// y_scale)) + zy) into TY, in double (the reference's formula).
template <class TY>
__device__ __forceinline__ TY requantize(int64_t acc, double xs, double ws, double ys, int64_t zy) {
  constexpr double lo = sizeof(TY) == 1 && static_cast<TY>(-1) < 0 ? -128.0 : 0.0;
  constexpr double hi = sizeof(TY) == 1 && static_cast<TY>(-1) < 0 ? 127.0 : 255.0;
  double r = rint(static_cast<double>(acc) * (xs * ws / ys)) + static_cast<double>(zy);
  r = r < lo ? lo : (r > hi ? hi : r);
  return static_cast<TY>(r);
}

/// \brief ConvInteger (kQLinear false: Y int32 = the accumulators) and QLinearConv (Y TY quantized):
/// one thread per output of an NCHW convolution Sh (conv::Shape, any groups). W's zero point and
/// scale: one value, or one per output channel (kWPer). kBias: QLinearConv's int32 B.
template <class TX, class TW, class TY, class Sh, bool kQLinear, bool kWPer, bool kBias>
struct DirectConv {
  static constexpr int kThreads = 128;
  static constexpr int kSmemBytes = 0;
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static constexpr int64_t kOutputs = int64_t(Sh::kN) * Sh::kM * O::kSize;
  struct Params {
    const TX* x = nullptr;
    const TX* x_zero_point = nullptr;  ///< null: 0
    const TW* w = nullptr;
    const TW* w_zero_point = nullptr;  ///< null: 0
    TY* y = nullptr;
    const float* x_scale = nullptr;    ///< QLinearConv
    const float* w_scale = nullptr;
    const float* y_scale = nullptr;
    const TY* y_zero_point = nullptr;
    const int32_t* bias = nullptr;     ///< kBias
  };
  static dim3 grid() { return dim3(static_cast<unsigned>((kOutputs + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    const int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (idx >= kOutputs) return;
    const int o = static_cast<int>(idx % O::kSize), m = static_cast<int>((idx / O::kSize) % Sh::kM);
    const int n = static_cast<int>(idx / (int64_t(O::kSize) * Sh::kM));
    const int g = m / Sh::kMg;
    const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
    const int64_t xz = p.x_zero_point ? static_cast<int64_t>(*p.x_zero_point) : 0;
    const int64_t wz = p.w_zero_point ? static_cast<int64_t>(p.w_zero_point[kWPer ? m : 0]) : 0;
    int64_t acc = 0;
    for (int c = 0; c < Sh::kCg; ++c) {
      const TX* x = p.x + (int64_t(n) * Sh::kC + g * Sh::kCg + c) * I::kSize;
      const TW* w = p.w + (int64_t(m) * Sh::kCg + c) * KD::kSize;
      for (int kd = 0; kd < KD::kD; ++kd) {
        const int id = od * S::kD - P::kD + kd * Dl::kD;
        if (id < 0 || id >= I::kD) continue;
        for (int kh = 0; kh < KD::kH; ++kh) {
          const int ih = oh * S::kH - P::kH + kh * Dl::kH;
          if (ih < 0 || ih >= I::kH) continue;
          for (int kw = 0; kw < KD::kW; ++kw) {
            const int iw = ow * S::kW - P::kW + kw * Dl::kW;
            if (iw < 0 || iw >= I::kW) continue;
            acc += (static_cast<int64_t>(x[(id * I::kH + ih) * I::kW + iw]) - xz) *
                   (static_cast<int64_t>(w[(kd * KD::kH + kh) * KD::kW + kw]) - wz);
          }
        }
      }
    }
    if constexpr (kQLinear) {
      if constexpr (kBias) acc += p.bias[m];
      p.y[idx] = requantize<TY>(acc, *p.x_scale, p.w_scale[kWPer ? m : 0], *p.y_scale,
                                p.y_zero_point ? static_cast<int64_t>(*p.y_zero_point) : 0);
    } else {
      p.y[idx] = static_cast<TY>(acc);
    }
  }
};

/// \brief MatMulInteger (kQLinear false: Y int32) and QLinearMatMul (Y TY): one thread per output of
/// Y[b, m, n] = sum over k of (A[b, m, k] - za) (B[b, k, n] - zb[n]) with A, B, Y row-major and up to
/// 3 batch dims (gemm::Shape; SA, SB: each operand's batch strides as gemm::Strides, 0 where it
/// broadcasts). B's zero point and scale: one value or one per column (kBPer).
template <class TA, class TB, class TY, class Sh, class SA, class SB, bool kQLinear, bool kBPer>
struct DirectMatMul {
  static constexpr int kThreads = 128;
  static constexpr int kSmemBytes = 0;
  static constexpr int64_t kOutputs = int64_t(Sh::kBatch) * Sh::kM * Sh::kN;
  struct Params {
    const TA* x = nullptr;             ///< A
    const TA* x_zero_point = nullptr;  ///< A's zero point (null: 0)
    const TB* w = nullptr;             ///< B
    const TB* w_zero_point = nullptr;  ///< B's (null: 0)
    TY* y = nullptr;
    const float* x_scale = nullptr;    ///< QLinearMatMul: A's scale, B's, Y's
    const float* w_scale = nullptr;
    const float* y_scale = nullptr;
    const TY* y_zero_point = nullptr;
  };
  static dim3 grid() { return dim3(static_cast<unsigned>((kOutputs + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    const int64_t idx = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (idx >= kOutputs) return;
    const int j = static_cast<int>(idx % Sh::kN), m = static_cast<int>((idx / Sh::kN) % Sh::kM);
    const int b = static_cast<int>(idx / (int64_t(Sh::kN) * Sh::kM));
    const TA* a = p.x + SA::template batch_offset<Sh>(b) + int64_t(m) * SA::kRow;
    const TB* w = p.w + SB::template batch_offset<Sh>(b) + int64_t(j) * SB::kCol;
    const int64_t za = p.x_zero_point ? static_cast<int64_t>(*p.x_zero_point) : 0;
    const int64_t zb = p.w_zero_point ? static_cast<int64_t>(p.w_zero_point[kBPer ? j : 0]) : 0;
    int64_t acc = 0;
    for (int k = 0; k < Sh::kK; ++k) {
      acc += (static_cast<int64_t>(a[int64_t(k) * SA::kCol]) - za) * (static_cast<int64_t>(w[int64_t(k) * SB::kRow]) - zb);
    }
    if constexpr (kQLinear) {
      p.y[idx] = requantize<TY>(acc, *p.x_scale, p.w_scale[kBPer ? j : 0], *p.y_scale,
                                p.y_zero_point ? static_cast<int64_t>(*p.y_zero_point) : 0);
    } else {
      p.y[idx] = static_cast<TY>(acc);
    }
  }
};

}  // namespace q
}  // namespace mc

// templates/tensor_core_int8.cuh — the INT8 tensor-core convolution and GEMM (sm_75 and newer):
// tensor_core.cuh's main loop with the 8-bit MMA policy (tc::MmaS8<TA>: mma.sync m16n8k32 on 8-bit
// operands, A int8 or uint8, B int8; four m8n8k16 on sm_75: runtime_stub/device.h), INT32
// accumulators, and a requantizing epilogue (ops/quantize.h: scales, zero-point correction, bias,
// activation, residual, the output scale and saturation). modelc's QConv and QMatMul
// (compiler/ops/int8_products.cpp) run here.
//
// What is 8-bit here and nowhere else: both operands are staged k-fast (ldmatrix .trans would move
// 16-bit pairs), so W is OHWI (K contiguous) and a QMatMul's B is stored [N, K]
// (compiler/ops/quantize.h); BK counts bytes, a multiple of 32; a chunk is 16 elements (the padded
// channel pitch Cp a multiple of 16, compact-K rows of W rounded up to 16).
//
// Zero points: an activation zero point zx (QConv / QMatMul input 5 at run time, or the x_zero_point
// attribute) is handled without widening the operands: a convolution's taps outside the image read
// zx instead of 0 (a real zero: tc::Im2colLoader's kPad), and the epilogue subtracts zx * w_sum[m]
// (the sum of channel m's weights, a constant): sum (x - zx) w = sum x w - zx sum w.
//
// Split-K (Tl::kSplitK > 1): each block writes its INT32 partial sums to Params::partial; a second
// launch, SplitKReduce8 (tc::SplitKReduce), adds the splits (exact integers: the order cannot
// change the result) and runs the epilogue.
//
// Epilogue (Epilogue): tc::for_each_output hands each lane runs of 8 consecutive output channels of
// one row as INT32, and it computes, in float32 in this order (the reference's order,
// ops/int8_products.cpp): v = float(acc - zx w_sum[m]) * (x_scale * w_scale[m]) + bias[m]; the
// residual (dequantized when 8-bit) before or after the activation; then stores TY: int8 / uint8 =
// saturate(rint(v / y_scale) + y_zero_point), int32 = the corrected accumulator itself
// (ConvInteger / MatMulInteger), float / __half = v (tc::to_output).
#pragma once

#include "tensor_core.cuh"

namespace mc {
namespace tc8 {

using tc::Tile;

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
  static constexpr bool kUsesZeroPoint = kZeroPoint;
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

/// \brief The second launch of a split-K kernel K of this file: tc::SplitKReduce on INT32 partials.
template <class K>
using SplitKReduce8 = tc::SplitKReduce<K>;

// ---- the convolution ----------------------------------------------------------------------------

/// \brief Y = Epi(conv(X - zx, W)) on integer tensor cores, groups = 1, NHWC views: X TA [N][D][H][W][Cp]
/// (int8_t or uint8_t; channels >= C masked), Y TY [N][OD][OH][OW][Yp] (channels >= M never written),
/// W int8 OHWI rows: padded (K = taps x Cp, Cp a multiple of 16) or compact (CompactK: K = taps x C,
/// rows of kKw = K rounded up to 16). Sh: mc::conv::Shape with G = 1. Grid: (pixel tiles, channel
/// tiles, splits).
template <class TA, class TY, class Sh, int Cp, int Yp, class TileT, class Epi, bool CompactK = false>
struct Conv : tc::ConvBase<tc::MmaS8<TA>, Sh, Cp, TileT, CompactK, true> {
  using Partial = int;
  static_assert(Yp >= Sh::kM, "tc8::Conv: an output channel pitch below the channel count");

  using Params = tc::Params<TA, int8_t, TY, Epi, int, true>;

  /// The epilogue and store of output channels m .. m + 7 of pixel j (zx: the activation zero point).
  __device__ __forceinline__ static void finish(const Params& p, int zx, int j, int m, const int (&v)[8]) {
    const int64_t off = static_cast<int64_t>(j) * Yp + m;
    Epi::template apply<Sh::kM>(p.epilogue, zx, v, m, p.Y + off, off, Yp % 8 == 0 && m + 8 <= Sh::kM);
  }
  /// finish with this launch's zero point, as tc::run_tile and SplitKReduce8 call it.
  __device__ __forceinline__ static auto finisher(const Params& p) {
    const int zx = Epi::template zero_point<TA>(p.epilogue);
    return [&p, zx](int, int j, int m, const int (&v)[8]) { finish(p, zx, j, m, v); };
  }

  __device__ static void run(const Params& p) {
    Conv::product(p.X, p.W, p.partial, static_cast<unsigned char>(Epi::template zero_point<TA>(p.epilogue)), finisher(p));
  }
};

// ---- the matrix product -------------------------------------------------------------------------

/// \brief Y[m, n] = Epi(sum over k of (A[m, k] - zx) * B[n, k]) on integer tensor cores: A TA with
/// strides (SAm, SAk) (every leading dim of QMatMul's A a row), B int8 [N, K] rows of SB elements,
/// Y TY rows of SY elements (columns contiguous). Grid: (N tiles, M tiles, splits).
template <class TA, class TY, int M, int N, int K, int64_t SAm, int64_t SAk, int64_t SB, int64_t SY, class TileT, class Epi>
struct Gemm {
  using Tl = TileT;
  using Mma = tc::MmaS8<TA>;
  using Partial = int;
  static constexpr int kThreads = Tl::kThreads;
  using LA = tc::OperandLoader<TA, M, K, SAm, SAk, Tl::kBK, Tl::kBM, kThreads, true>;
  using LB = tc::OperandLoader<int8_t, N, K, SB, 1, Tl::kBK, Tl::kBN, kThreads, true>;
  static constexpr int kSmemBytes = tc::max_int(tc::Mainloop<Tl, Mma>::template smem_bytes<LA, LB>(), tc::scratch_bytes<Tl>());
  static constexpr int kBatches = 1, kRows = M, kCols = N;

  using Params = tc::Params<TA, int8_t, TY, Epi, int>;

  static dim3 grid() { return dim3((N + Tl::kBN - 1) / Tl::kBN, (M + Tl::kBM - 1) / Tl::kBM, Tl::kSplitK); }
  static dim3 block() { return dim3(kThreads); }

  __device__ __forceinline__ static void finish(const Params& p, int zx, int m, int n, const int (&v)[8]) {
    const int64_t off = static_cast<int64_t>(m) * SY + n;
    Epi::template apply<N>(p.epilogue, zx, v, n, p.Y + off, off, SY % 8 == 0 && n + 8 <= N);
  }
  __device__ __forceinline__ static auto finisher(const Params& p) {
    const int zx = Epi::template zero_point<TA>(p.epilogue);
    return [&p, zx](int, int m, int n, const int (&v)[8]) { finish(p, zx, m, n, v); };
  }

  __device__ static void run(const Params& p) {
    const int split = static_cast<int>(blockIdx.z);
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const LA la{p.A, m0, static_cast<int>(threadIdx.x)};
    const LB lb{p.B, n0, static_cast<int>(threadIdx.x)};
    int* partial = nullptr;
    if constexpr (Tl::kSplitK > 1) partial = p.partial + static_cast<int64_t>(split) * M * N;
    tc::run_tile<Tl, Mma, M, N>(la, lb, K, split, 0, m0, n0, partial, finisher(p));
  }
};

}  // namespace tc8
}  // namespace mc

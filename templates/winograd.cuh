// templates/winograd.cuh — the Winograd F(2x2, 3x3) convolution (Lavin and Gray, "Fast Algorithms
// for Convolutional Neural Networks", 2015) for 3x3, stride-1, dilation-1, 2-D convolutions with
// groups = 1 over NHWC views with channel pitches, on tensor cores.
//
// Each 2x2 block of outputs ("tile") of an image is Y = A^T [(G g G^T) . (B^T d B)] A, where d is
// the 4x4 input patch that starts one pad before it, g the 3x3 filter and . the elementwise product:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// Summed over the input channels, the 16 elementwise products are 16 independent GEMMs: for each
// position b = 4i + j of the 4x4 transform, M[b] (tiles x M) = V[b] (tiles x C) x U[b] (C x M).
// A direct 3x3 convolution does 36 multiply-adds per tile, channel pair; this does 16.
//
// Three launches, each a kernel of the contract of codegen/launch.h:
//   InputTransform   V[b][tile][c] = (B^T d B)[b] in FP32, stored __half (one thread per 8
//                    channels of a tile: 16 16-byte loads, 16 16-byte stores); channels >= C
//                    are written as zero, padding and pixels past the image read as zero;
//   the GEMMs        mc::tc::Gemm over 16 batches: A = V ([16][tiles][Cp]), B = U, the weights
//                    transformed at compile time (schedule/winograd.h: [16][M][Cp], __half), Y = M
//                    in FP32 ([16][tiles][Mp]);
//   OutputTransform  the 2x2 outputs of a tile, 8 channels per thread, through the epilogue and
//                    store of the direct tensor-core convolution it replaces (tc::Conv::finish:
//                    bias, activation, residual, the 16-byte stores, the clamp to FP16).
// The workspace holds V and M; U lives in the weights. Rounding: V and U are rounded to FP16 once
// (each a sum of at most 4 inputs / 9 weights scaled by 1/4..1), the GEMMs accumulate in FP32.
#pragma once

#include "tensor_core.cuh"

namespace mc {
namespace wino {

/// \brief The tiling of a Winograd F(2x2, 3x3) convolution of shape Sh (a conv::Shape).
template <class Sh>
struct Tiles {
  using O = typename Sh::OutDims;
  static_assert(Sh::kG == 1 && Sh::InDims::kD == 1 && Sh::KernelDims::kD == 1, "wino: 2-D, groups = 1");
  static_assert(Sh::KernelDims::kH == 3 && Sh::KernelDims::kW == 3, "wino: F(2x2, 3x3) takes 3x3 filters");
  static_assert(Sh::StrideDims::kH == 1 && Sh::StrideDims::kW == 1 && Sh::DilationDims::kH == 1 &&
                    Sh::DilationDims::kW == 1,
                "wino: stride 1, dilation 1");
  static constexpr int kH = (O::kH + 1) / 2, kW = (O::kW + 1) / 2;  ///< tiles per image, each way
  static constexpr int kCount = Sh::kN * kH * kW;                    ///< tiles of every image
};

/// \brief V[b][tile][c] = (B^T d B)[b] for the 4x4 input patch d of each tile, X NHWC with channel
/// pitch Cp (channels >= C masked), V [16][tiles][Cp] __half with zeros in channels >= C.
template <class Sh, int Cp>
struct InputTransform {
  static_assert(Cp % 8 == 0 && Cp >= Sh::kC, "wino::InputTransform: a channel pitch of whole 16-byte chunks");
  using I = typename Sh::InDims;
  using P = typename Sh::PadDims;
  using T = Tiles<Sh>;
  static constexpr int kThreads = 128, kSmemBytes = 0;
  static constexpr int kChunks = Cp / 8;
  static constexpr int64_t kItems = static_cast<int64_t>(T::kCount) * kChunks;

  struct Params {
    const __half* __restrict__ X = nullptr;
    __half* __restrict__ V = nullptr;
  };

  static dim3 grid() { return dim3(static_cast<unsigned>((kItems + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= kItems) return;
    const int c = static_cast<int>(item % kChunks) * 8, tile = static_cast<int>(item / kChunks);
    const int n = tile / (T::kH * T::kW), t = tile % (T::kH * T::kW);
    const int ih0 = (t / T::kW) * 2 - P::kH, iw0 = (t % T::kW) * 2 - P::kW;
    float d[4][4][8];
    MC_UNROLL
    for (int i = 0; i < 4; ++i) {
      MC_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int ih = ih0 + i, iw = iw0 + j;
        const bool inside = static_cast<unsigned>(ih) < unsigned(I::kH) && static_cast<unsigned>(iw) < unsigned(I::kW);
        const __half* src = p.X + (static_cast<int64_t>(n * I::kH + ih) * I::kW + iw) * Cp + c;
        tc::Chunk<__half> r;
        if (inside && c + 8 <= Sh::kC) {
          r.v = *reinterpret_cast<const uint4*>(src);
        } else {
          MC_UNROLL
          for (int e = 0; e < 8; ++e) r.h[e] = inside && c + e < Sh::kC ? src[e] : __float2half(0.0f);
        }
        MC_UNROLL
        for (int e = 0; e < 8; ++e) d[i][j][e] = __half2float(r.h[e]);
      }
    }
    // B^T d B: the rows, then the columns (B^T's rows: d0 - d2, d1 + d2, d2 - d1, d1 - d3).
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      MC_UNROLL
      for (int j = 0; j < 4; ++j) {
        const float d0 = d[0][j][e], d1 = d[1][j][e], d2 = d[2][j][e], d3 = d[3][j][e];
        d[0][j][e] = d0 - d2;
        d[1][j][e] = d1 + d2;
        d[2][j][e] = d2 - d1;
        d[3][j][e] = d1 - d3;
      }
      MC_UNROLL
      for (int i = 0; i < 4; ++i) {
        const float d0 = d[i][0][e], d1 = d[i][1][e], d2 = d[i][2][e], d3 = d[i][3][e];
        d[i][0][e] = d0 - d2;
        d[i][1][e] = d1 + d2;
        d[i][2][e] = d2 - d1;
        d[i][3][e] = d1 - d3;
      }
    }
    MC_UNROLL
    for (int b = 0; b < 16; ++b) {
      tc::Chunk<__half> r;
      MC_UNROLL
      for (int e = 0; e < 8; ++e) r.h[e] = __float2half(d[b / 4][b % 4][e]);
      *reinterpret_cast<uint4*>(p.V + (static_cast<int64_t>(b) * T::kCount + tile) * Cp + c) = r.v;
    }
  }
};

/// \brief The 16 GEMMs: M[b] (tiles x M, FP32, row pitch Mp) = V[b] (tiles x C, row pitch Cp) x
/// U[b] (U stored [16][M][Cp]: column m of U[b] is a row), on tensor cores with tile Tl.
template <class Sh, int Cp, int Mp, class Tl, class Acc = float>
using Gemms = tc::Gemm<__half, float, Acc, gemm::Shape<1, 1, 16, Tiles<Sh>::kCount, Sh::kM, Sh::kC>,
                       /*V*/ gemm::Strides<0, 0, Tiles<Sh>::kCount * Cp, Cp, 1>,
                       /*U*/ gemm::Strides<0, 0, Sh::kM * Cp, 1, Cp>,
                       /*M*/ gemm::Strides<0, 0, Tiles<Sh>::kCount * Mp, Mp, 1>, Tl, gemm::EpilogueIdentity>;

/// \brief Y = Epi(A^T M A) per tile, 8 output channels per thread: M [16][tiles][Mp] FP32 (the
/// GEMMs' output), the outputs inside the image through Direct::finish, the epilogue and store of
/// the direct convolution (a tc::Conv of the same shape, Y pitch and epilogue). Params: Direct's
/// (Y, epilogue; X and W unused) and the GEMMs' output.
template <class Sh, int Mp, class Direct>
struct OutputTransform {
  static_assert(Mp % 8 == 0 && Mp >= Sh::kM, "wino::OutputTransform: a channel pitch of whole runs of 8");
  using O = typename Sh::OutDims;
  using T = Tiles<Sh>;
  static constexpr int kThreads = 128, kSmemBytes = 0;
  static constexpr int kChunks = Mp / 8;
  static constexpr int64_t kItems = static_cast<int64_t>(T::kCount) * kChunks;

  struct Params : Direct::Params {
    const float* __restrict__ product = nullptr;  ///< M: [16][tiles][Mp]
  };

  static dim3 grid() { return dim3(static_cast<unsigned>((kItems + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= kItems) return;
    const int m = static_cast<int>(item % kChunks) * 8, tile = static_cast<int>(item / kChunks);
    if (m >= Sh::kM) return;
    const int n = tile / (T::kH * T::kW), t = tile % (T::kH * T::kW);
    const int oh0 = (t / T::kW) * 2, ow0 = (t % T::kW) * 2;
    // A^T M A: the rows (A^T's rows: m0 + m1 + m2, m1 - m2 - m3), then the columns.
    float u[2][4][8];
    MC_UNROLL
    for (int j = 0; j < 4; ++j) {
      float v[4][8];
      MC_UNROLL
      for (int i = 0; i < 4; ++i) {
        const float4* src = reinterpret_cast<const float4*>(p.product + (static_cast<int64_t>(4 * i + j) * T::kCount + tile) * Mp + m);
        const float4 lo = src[0], hi = src[1];
        const float e8[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        MC_UNROLL
        for (int e = 0; e < 8; ++e) v[i][e] = e8[e];
      }
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        u[0][j][e] = v[0][e] + v[1][e] + v[2][e];
        u[1][j][e] = v[1][e] - v[2][e] - v[3][e];
      }
    }
    MC_UNROLL
    for (int r = 0; r < 2; ++r) {
      MC_UNROLL
      for (int s = 0; s < 2; ++s) {
        const int oh = oh0 + r, ow = ow0 + s;
        if (oh >= O::kH || ow >= O::kW) continue;
        float y[8];
        MC_UNROLL
        for (int e = 0; e < 8; ++e) {
          y[e] = s == 0 ? u[r][0][e] + u[r][1][e] + u[r][2][e] : u[r][1][e] - u[r][2][e] - u[r][3][e];
        }
        Direct::finish(p, 0, (n * O::kH + oh) * O::kW + ow, m, y);
      }
    }
  }
};

}  // namespace wino
}  // namespace mc

// templates/se_gate.cuh — the gate of a squeeze-and-excite block in one kernel (modelc.SEGate,
// compiler/ops/se_gate.h): per image n,
//
//   p[c] = mean over the H x W pixels of X[n, c]                  (the squeeze: GlobalAveragePool)
//   h[s] = act(B1[s] + sum_c W1[s, c] p[c])                        (FC1, C -> S, and its activation)
//   Y[n, c] = gate(B2[c] + sum_s W2[c, s] h[s])                    (FC2, S -> C, and the gate: sigmoid,
//                                                                   hard-sigmoid)
//
// The Mul(X, Y) that applies the gate is not here: it runs as its own elementwise kernel or in the
// next 1x1 convolution's operand load; this kernel writes only the N x C gate.
//
// The work split. One block per image (grid N): the block pools all of the image's H x W x C
// elements, then runs both FCs out of shared memory, so the FCs start right after the pool with no
// second launch, no workspace and no float atomics — every sum has a fixed order and the output is
// the same bits on every run. The pool (H x W x C reads) is the large part and runs on N SMs: a
// channel-wide block streams the image once, coalesced; for batch 1 and a large image (the first
// stages of an EfficientNet at 224 x 224: 112 x 112 x 96) one SM's bandwidth bounds the kernel.
// Spreading the pool over more blocks per image needs a grid-wide hand-over before the FCs (a last-
// block ticket that must be zero before every launch, so a zeroed counter outside the arena) and is
// not done here; the cost model's work for the family says the one block per image.
//
//  - The pool, channels innermost (kSC == 1: NHWC, pixels kSP >= C elements apart, a channel pitch
//    padded for tensor cores): channel tiles of kCT = min(C, NT) channels; thread t reads channel
//    t % kCT of pixels t / kCT, t / kCT + kRows, ... (adjacent threads read adjacent channels of a
//    pixel: coalesced), its FP32 sum goes to shared memory and threads 0..kCT-1 add the kRows partial
//    sums in row order. Planes innermost (NCHW: kSP == 1): one warp per channel, lanes striding the
//    plane, a shuffle tree (fixed order).
//  - FC1: one warp per hidden unit s (lanes stride the C channels of W1's row s, a shuffle tree),
//    the activation in FP32 (activation.cuh, the same function a fused epilogue applies).
//  - FC2 and the gate: one thread per channel c, S multiply-adds in s order, the gate in FP32,
//    rounded once to T at the store.
//
// Every intermediate (p, h, the sums) is FP32 in shared memory; the unfused kernels round p and h
// to the storage type between launches, this kernel does not (it is closer to the FP32 model).
// X, W1, B1, W2, B2 and Y are T (__half, mc::bf16 or float). Y[n, c] is at n * kYN + c (kYN >= C).
#pragma once

#include "activation.cuh"
#include "device.h"

namespace mc {
namespace se {

/// \brief The gate of a squeeze-and-excite block (see the file comment): X [kN images] of kC
/// channels over kHW pixels, image n's channel c, pixel i at n kSN + c kSC + i kSP; FC1 kC -> kS
/// (W1 [kS][kC] row-major, B1 [kS]) with activation A; FC2 kS -> kC (W2 [kC][kS], B2 [kC]) with gate
/// G; Y[n, c] at n kYN + c; NT threads a block, one block an image.
template <class T, int kN, int kC, int kS, int kHW, long long kSN, int kSC, int kSP, int kYN, Act A, Act G, int NT = 256>
struct Gate {
  static constexpr int kThreads = NT;
  static constexpr int kSmemBytes = 0;
  static constexpr int kWarps = NT / 32;
  static_assert(NT % 32 == 0 && NT >= 32, "se::Gate: whole warps");
  static_assert(kC > 0 && kS > 0 && kHW > 0 && kN > 0, "se::Gate: empty shape");
  static_assert(kYN >= kC, "se::Gate: Y's image stride below the channel count");
  /// NHWC: channels innermost (adjacent threads read adjacent channels). Otherwise planes innermost.
  static constexpr bool kChannelsInner = kSC == 1 && kC > 1;
  static_assert(!kChannelsInner || kSP >= kC, "se::Gate: a channel pitch below the channel count");
  static constexpr int kCT = kC < NT ? kC : NT;  ///< channels of one pool tile (channels innermost)
  static constexpr int kRows = NT / kCT;          ///< pixel rows a tile's threads stride by
  /// The shared memory the block uses (static): the pooled vector, the hidden vector, the partial sums.
  static constexpr int kSharedBytes = 4 * (kC + kS + NT);

  struct Params {
    const T* X = nullptr;
    const T* W1 = nullptr;
    const T* B1 = nullptr;
    const T* W2 = nullptr;
    const T* B2 = nullptr;
    T* Y = nullptr;
    ActParams act{};   ///< FC1's activation's parameters
    ActParams gate{};  ///< the gate's (hard-sigmoid: alpha, beta)
  };

  static dim3 grid() { return dim3(kN); }
  static dim3 block() { return dim3(NT); }

  /// The sum of v over the warp's lanes by a shuffle tree: every lane gets the same bits on every run.
  __device__ static float warp_sum(float v) {
    MC_UNROLL
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
  }

  __device__ static void run(const Params& p) {
    __shared__ float pooled[kC];
    __shared__ float hidden[kS];
    __shared__ float partial[NT];
    const int n = static_cast<int>(blockIdx.x);
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = static_cast<int>(mc::warp_id()), lane = static_cast<int>(mc::lane_id());
    const T* x = p.X + static_cast<int64_t>(n) * kSN;
    const float inv_hw = 1.0f / static_cast<float>(kHW);

    // The squeeze: p[c] = mean of X[n, c, :].
    if constexpr (kChannelsInner) {
      const int cl = tid % kCT, r = tid / kCT;
      for (int c0 = 0; c0 < kC; c0 += kCT) {
        const int c = c0 + cl;
        if (r < kRows) {
          float v = 0.0f;
          if (c < kC) {
            for (int i = r; i < kHW; i += kRows) v += static_cast<float>(x[static_cast<int64_t>(i) * kSP + c]);
          }
          mc::st_shared(&partial[r * kCT + cl], v);
        }
        __syncthreads();
        if (tid < kCT && c0 + tid < kC) {
          float v = 0.0f;
          for (int j = 0; j < kRows; ++j) v += mc::ld_shared(&partial[j * kCT + tid]);
          mc::st_shared(&pooled[c0 + tid], v * inv_hw);
        }
        __syncthreads();  // partial is written again by the next tile
      }
    } else {
      for (int c = warp; c < kC; c += kWarps) {
        float v = 0.0f;
        for (int i = lane; i < kHW; i += 32) v += static_cast<float>(x[static_cast<int64_t>(c) * kSC + static_cast<int64_t>(i) * kSP]);
        v = warp_sum(v);
        if (lane == 0) mc::st_shared(&pooled[c], v * inv_hw);
      }
      __syncthreads();
    }

    // FC1 and its activation: one warp per hidden unit.
    for (int s = warp; s < kS; s += kWarps) {
      const T* w = p.W1 + static_cast<int64_t>(s) * kC;
      float v = 0.0f;
      for (int c = lane; c < kC; c += 32) v += static_cast<float>(w[c]) * mc::ld_shared(&pooled[c]);
      v = warp_sum(v);
      if (lane == 0) mc::st_shared(&hidden[s], activate<A>(v + static_cast<float>(p.B1[s]), p.act));
    }
    __syncthreads();

    // FC2 and the gate: one thread per channel.
    for (int c = tid; c < kC; c += NT) {
      const T* w = p.W2 + static_cast<int64_t>(c) * kS;
      float v = static_cast<float>(p.B2[c]);
      for (int s = 0; s < kS; ++s) v += static_cast<float>(w[s]) * mc::ld_shared(&hidden[s]);
      p.Y[static_cast<int64_t>(n) * kYN + c] = static_cast<T>(activate<G>(v, p.gate));
    }
  }
};

}  // namespace se
}  // namespace mc

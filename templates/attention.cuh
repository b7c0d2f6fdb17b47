// templates/attention.cuh — fused multi-head attention, O = softmax(Q K^T * scale + bias) V, in one
// kernel for every batch and head (flash-attention style: the score matrix S is never written to
// memory, and no buffer grows with the sequence length).
//
// Work split: a block takes BQ consecutive queries of one (batch, head) (grid: query tiles x heads x
// batch); its warps split those queries, 16 * kFragQ rows each, and every warp walks all the key
// tiles of BKV keys on its own rows, so the softmax of a row never leaves its warp. Per key tile a
// warp computes its S tile (16 * kFragQ x BKV) on tensor cores (mma.sync m16n8k16, FP32
// accumulators; A = Q's fragments, kept in registers for the whole kernel; B = K's rows from shared
// memory with ldmatrix), scales it, adds the bias terms, masks (causal, past the last key), and
// updates the online softmax of each row: the running max m and sum l in FP32, the output
// accumulator rescaled by exp2(m_old - m_new) when the max grows. P = exp2(S - m) is rounded to T
// in registers and goes straight into the second product as the A operand: the m16n8 accumulator
// layout of two adjacent S tiles is the A fragment of one m16n8k16 (rows g, g + 8, columns 2t,
// 2t + 1 and 2t + 8, 2t + 9), so P never touches shared memory. O += P V reads V's rows with
// ldmatrix .trans (V is [key][d], d contiguous: the B operand's n-fast form). At the end each row
// is divided by its sum, rounded to T, staged through the warp's own rows of the Q tile (no longer
// needed) and stored with 16-byte stores.
//
// Memory: the Q tile [BQ][DPad + 8] and Stages stages of (K tile, V tile) [BKV][DPad + 8] each, in
// dynamic shared memory (kSmemBytes; above 48 KiB the caller raises the kernel's limit). Rows are
// padded by 8 elements (16 bytes) so the 8 rows an ldmatrix phase reads fall in distinct bank
// groups. Loads are cp.async 16-byte chunks (mc::cp_async_16; plain copies below sm_80): Q in the
// first commit group, then one group per key tile (K and V together), Stages - 1 tiles in flight
// ahead of the one computed, one barrier per tile (the stage loaded in iteration j was last read in
// iteration j - 1, which every thread has left at that barrier). Chunks past the sequence end or
// past the head dim are zero-filled (cp.async's src-size), so any sequence length works: zero K rows
// give scores that the mask sets to -inf, zero V rows meet p = 0.
//
// Operands (every one a strided view; the head dim contiguous, element strides of batch, head and
// sequence as template parameters, so Q, K and V come straight out of a packed QKV product and O
// goes where the output projection reads it, e.g. heads interleaved as [B, S, H * D]):
//   Q [B][H][Sq][D], K and V [B][Hkv][Skv][D] (Hkv divides H: grouped-query attention reads kv head
//   h / (H / Hkv)), O [B][H][Sq][D]; T __half or mc::bf16 (sm_80 and newer), the same for all four.
//   Bases 16-byte aligned and every stride a multiple of 8 elements (static_assert): the loads and
//   stores are whole 16-byte chunks.
//   Up to two additive bias terms (Bias<TB, Batches, SB, SH, SQ, SK>: element (b % Batches, h, q,
//   k) at those strides, 0 where it broadcasts): a padding mask [B, 1, 1, Skv] (SH = SQ = 0), a
//   relative position bias [1, H, Sq, Skv] (SB = 0), a shifted-window mask [nW, 1, S, S] whose
//   batch index is the window (Batches = nW: batch b of B * nW windows reads mask b % nW); -inf
//   entries mask. Causal<Offset>: key k is visible to query q when k <= q + Offset (0: torch's
//   top-left is_causal; Skv - Sq: the bottom-right alignment of a KV cache); key tiles wholly above
//   the diagonal are skipped.
//
// Numerics: S = Q K^T in FP32 (the MMA's), s2 = (S * scale + bias) * log2(e), softmax in base 2
// (exp2f) with FP32 m and l; P rounded to T (the unfused program's softmax output is T as well);
// O accumulated in FP32, divided by l, rounded to T. A row whose scores are all -inf (every key
// masked) gives NaN, as the unfused softmax does (0 / 0): the max is then -inf and the exponent's
// base is taken as 0 so that no -inf - -inf NaN reaches rows that do have a visible key.
//
// Tiles (Tile<BQ, BKV, Warps, Stages, QRegs>): BQ a multiple of 16 x Warps (kFragQ = BQ / (16 x
// Warps) m16 row tiles per warp), BKV a multiple of 16. Registers per lane: Q DPad x kFragQ / 4
// (QRegs; otherwise ldmatrix from the Q tile per key tile), S BKV x kFragQ / 2, O DPad x kFragQ / 2
// (D = 128, BKV = 64, kFragQ = 1: 32 + 32 + 64).
//
// Kernel contract: codegen/launch.h's (Params, kThreads, kSmemBytes, grid(), block(), run);
// mc::attn::kernel<K> is the tests' entry point. `Plant` (last parameter, default none) is for the
// template test only: it plants a known fault so the test shows its check catches it.
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "device.h"

namespace mc {
namespace attn {

/// \brief Problem sizes: batch B, query heads H, key/value heads Hkv (a divisor of H), query length
/// Sq, key/value length Skv, head dim D (a multiple of 8, at most 128; DPad: D rounded up to 16,
/// the MMA's k step, the columns past D zero in shared memory).
template <int B, int H, int Sq, int Skv, int D, int Hkv = H>
struct Shape {
  static constexpr int kBatch = B, kHeads = H, kKvHeads = Hkv, kQLen = Sq, kKvLen = Skv, kD = D;
  static constexpr int kDPad = (D + 15) / 16 * 16;
  static_assert(B >= 1 && H >= 1 && Sq >= 1 && Skv >= 1, "attn::Shape: empty problem");
  static_assert(D % 8 == 0 && D >= 8 && D <= 128, "attn::Shape: head dim a multiple of 8, at most 128");
  static_assert(Hkv >= 1 && H % Hkv == 0, "attn::Shape: the key/value heads divide the query heads");
};

/// \brief Element strides of a [batch][head][sequence][head dim] operand, the head dim contiguous.
/// Multiples of 8 (16-byte chunks); a dim of size 1 may take any multiple of 8, 0 included.
template <int64_t SB, int64_t SH, int64_t SS>
struct View {
  static constexpr int64_t kB = SB, kH = SH, kS = SS;
  static_assert(SB % 8 == 0 && SH % 8 == 0 && SS % 8 == 0, "attn::View: strides must be multiples of 8 elements");
  __device__ __forceinline__ static int64_t offset(int b, int h) {
    return static_cast<int64_t>(b) * SB + static_cast<int64_t>(h) * SH;
  }
};

/// \brief No bias term.
struct NoBias {
  using Elem = float;
  static constexpr bool kPresent = false;
  static constexpr int64_t kSQ = 0;
};

/// \brief An additive bias term of TB (float, __half, bf16), element (b % Batches, h, q, k) at
/// element strides SB, SH, SQ, SK (0 where it broadcasts).
template <class TB, int Batches, int64_t SB, int64_t SH, int64_t SQ, int64_t SK>
struct Bias {
  using Elem = TB;
  static constexpr bool kPresent = true;
  static constexpr int64_t kSQ = SQ;  ///< 0: the same for every query (a padding mask)
  static_assert(Batches >= 1, "attn::Bias: at least one batch");
  __device__ __forceinline__ static int64_t offset(int b, int h, int q, int k) {
    return static_cast<int64_t>(b % Batches) * SB + static_cast<int64_t>(h) * SH + static_cast<int64_t>(q) * SQ +
           static_cast<int64_t>(k) * SK;
  }
};

/// \brief No causal mask.
struct NotCausal {
  static constexpr bool kOn = false;
  static constexpr int kOffset = 0;
};
/// \brief Causal mask: key k is visible to query q when k <= q + Offset.
template <int Offset = 0>
struct Causal {
  static constexpr bool kOn = true;
  static constexpr int kOffset = Offset;
};

/// \brief A block of BQ queries run by Warps warps (16 x kFragQ rows each), key tiles of BKV, Stages
/// cp.async stages of (K, V) tiles. QRegs: Q's fragments held in registers for the whole kernel
/// (true), or read from the shared Q tile with ldmatrix for every key tile (false: fewer registers,
/// for 32-row warps at large head dims).
template <int BQ, int BKV, int Warps, int Stages = 2, bool QRegs = true>
struct Tile {
  static constexpr int kBQ = BQ, kBKV = BKV, kWarps = Warps, kStages = Stages;
  static constexpr bool kQRegs = QRegs;
  static constexpr int kThreads = 32 * Warps;
  static constexpr int kWarpRows = BQ / Warps, kFragQ = kWarpRows / 16;
  static_assert(Warps >= 1 && BQ % (16 * Warps) == 0, "attn::Tile: each warp takes a multiple of 16 queries");
  static_assert(BKV % 16 == 0 && BKV >= 16, "attn::Tile: key tiles are multiples of 16");
  static_assert(Stages >= 2 && Stages <= 4, "attn::Tile: 2..4 stages");
};

/// \brief Test-only faults (Attention's last parameter): none; a P fragment element taken from the
/// wrong lane (lane 0's first element is lane 4's); the output accumulator not rescaled when the
/// running max grows.
enum class Plant { none, p_fragment_lane, no_rescale };

/// \brief Two floats as one 32-bit register of two T (the lower column in the low half).
template <class T>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  if constexpr (std::is_same<T, bf16>::value) {
    return static_cast<unsigned>(bf16::round(lo)) | (static_cast<unsigned>(bf16::round(hi)) << 16);
  } else {
    static_assert(std::is_same<T, __half>::value, "attn: operands are __half or mc::bf16");
    return static_cast<unsigned>(__half_as_ushort(__float2half_rn(lo))) |
           (static_cast<unsigned>(__half_as_ushort(__float2half_rn(hi))) << 16);
  }
}

/// \brief acc += a x b, one m16n8k16 of T operands, FP32 accumulators.
template <class T>
__device__ __forceinline__ void mma(float (&acc)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (std::is_same<T, bf16>::value) {
    mma_m16n8k16_bf16(acc, a, b, acc);
  } else {
    mma_m16n8k16(acc, a, b, acc);
  }
}

/// \brief O = softmax(Q K^T * scale + Bias0 + Bias1 [+ causal mask]) V for every (batch, head); see
/// the file comment. T: __half or bf16; Sh: Shape; VQ, VK, VV, VO: View; Tl: Tile.
template <class T, class Sh, class VQ, class VK, class VV, class VO, class Tl, class Bias0 = NoBias,
          class Bias1 = NoBias, class Mask = NotCausal, Plant kPlant = Plant::none>
struct Attention {
  static_assert(std::is_same<T, __half>::value || std::is_same<T, bf16>::value, "attn: __half or mc::bf16");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kD = Sh::kD, kDPad = Sh::kDPad, kLd = kDPad + 8;
  static constexpr int kFragQ = Tl::kFragQ, kWarpRows = Tl::kWarpRows;
  static constexpr int kSTiles = Tl::kBKV / 8;  ///< m16n8 S tiles across a key tile
  static constexpr int kOTiles = kDPad / 8;     ///< m16n8 O tiles across the head dim
  static constexpr int kQBytes = Tl::kBQ * kLd * 2, kKvBytes = Tl::kBKV * kLd * 2;
  static constexpr int kStageBytes = 2 * kKvBytes;  ///< K tile then V tile
  static constexpr int kSmemBytes = kQBytes + Tl::kStages * kStageBytes;
  static constexpr int kQTiles = (Sh::kQLen + Tl::kBQ - 1) / Tl::kBQ;
  static constexpr float kLog2e = 1.4426950408889634f;
  /// Every bias term is the same for all queries (padding masks): read once per key and tile.
  static constexpr bool kBiasPerKey =
      (Bias0::kPresent || Bias1::kPresent) && Bias0::kSQ == 0 && Bias1::kSQ == 0;

  struct Params {
    const T* __restrict__ q = nullptr;  ///< Q's element (0, 0, 0, 0); Q, K and V may share a buffer
    const T* __restrict__ k = nullptr;
    const T* __restrict__ v = nullptr;
    T* __restrict__ o = nullptr;
    const typename Bias0::Elem* __restrict__ bias0 = nullptr;  ///< null when Bias0 is NoBias
    const typename Bias1::Elem* __restrict__ bias1 = nullptr;
    float scale = 1.0f;  ///< multiplies Q K^T before the bias is added
  };

  static dim3 grid() {
    return dim3(static_cast<unsigned>(kQTiles), static_cast<unsigned>(Sh::kHeads), static_cast<unsigned>(Sh::kBatch));
  }
  static dim3 block() { return dim3(kThreads); }

  /// How a thread's 16-byte chunks of a row tile are laid out: each row has kSlots chunk slots (the
  /// row's kDPad / 8 chunks rounded up to a power of two; slots past them idle), thread tid takes
  /// slot tid % kSlots of rows tid / kSlots + pass x kRowsPerPass. A thread's chunks are then one
  /// pointer plus compile-time offsets (no register per chunk).
  static constexpr int kChunksPerRow = kDPad / 8;
  static constexpr int kSlots = kChunksPerRow <= 2 ? 2 : kChunksPerRow <= 4 ? 4 : kChunksPerRow <= 8 ? 8 : 16;
  static constexpr int kRowsPerPass = kThreads / kSlots;

  /// cp.async of rows [r0, r0 + R) (of `len`) of an operand into the shared tile `dst` [R][kLd]:
  /// `src` is the thread's first row and column (row tid / kSlots, column (tid % kSlots) x 8, of an
  /// operand whose rows are `Stride` apart), r the thread's row in the tile; rows past `len` and
  /// columns past D are zero-filled.
  template <int R, int64_t Stride>
  __device__ __forceinline__ static void load_rows(T* dst, const T* src, int r0, int len, int r, int d) {
    constexpr int kPasses = (R + kRowsPerPass - 1) / kRowsPerPass;
    const T* from = src + static_cast<int64_t>(r0) * Stride;
    T* to = dst + r * kLd + d;
    MC_UNROLL
    for (int pass = 0; pass < kPasses; ++pass) {
      const int row = r + pass * kRowsPerPass;
      if ((kSlots == kChunksPerRow || d < kDPad) && (R % kRowsPerPass == 0 || row < R)) {
        const bool valid = r0 + row < len && d < kD;
        cp_async_16(to + pass * kRowsPerPass * kLd, valid ? from + static_cast<int64_t>(pass) * kRowsPerPass * Stride : src,
                    valid ? 16 : 0);
      }
    }
  }

  /// The bias terms of score (q, k) of batch b, head h, times log2(e).
  __device__ __forceinline__ static float bias_at(const Params& p, int b, int h, int q, int k) {
    float x = 0.0f;
    if constexpr (Bias0::kPresent) x += static_cast<float>(p.bias0[Bias0::offset(b, h, q, k)]);
    if constexpr (Bias1::kPresent) x += static_cast<float>(p.bias1[Bias1::offset(b, h, q, k)]);
    return x * kLog2e;
  }

  __device__ static void run(const Params& p) {
    unsigned char* smem = dynamic_smem<unsigned char>();
    T* q_tile = reinterpret_cast<T*>(smem);
    auto k_stage = [&](int stage) { return reinterpret_cast<T*>(smem + kQBytes + stage * kStageBytes); };
    auto v_stage = [&](int stage) { return reinterpret_cast<T*>(smem + kQBytes + stage * kStageBytes + kKvBytes); };

    const int q0 = static_cast<int>(blockIdx.x) * Tl::kBQ, h = static_cast<int>(blockIdx.y);
    const int b = static_cast<int>(blockIdx.z);
    const int hkv = h / (Sh::kHeads / Sh::kKvHeads);
    const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
    const int g = lane / 4, t = lane % 4;
    const int wr0 = warp * kWarpRows;  // the warp's first row in the block's tile
    // The thread's chunk slot in every row tile (load_rows) and its first row and column in Q, K, V.
    const int lr = tid / kSlots, ld = (tid % kSlots) * 8;
    const T* qb = p.q + VQ::offset(b, h) + lr * VQ::kS + ld;
    const T* kb = p.k + VK::offset(b, hkv) + lr * VK::kS + ld;
    const T* vb = p.v + VV::offset(b, hkv) + lr * VV::kS + ld;

    // Key tiles this block sees: with a causal mask, none wholly past its last row's diagonal.
    int kv_end = Sh::kKvLen;
    if constexpr (Mask::kOn) {
      const int last = q0 + Tl::kBQ - 1 + Mask::kOffset;  // the last visible key of the block's last row
      kv_end = last + 1 < kv_end ? (last + 1 > 0 ? last + 1 : 0) : kv_end;
    }
    const int tiles = (kv_end + Tl::kBKV - 1) / Tl::kBKV;

    // Q in the first commit group, then Stages - 1 key tiles, one group each (empty past the end).
    load_rows<Tl::kBQ, VQ::kS>(q_tile, qb, q0, Sh::kQLen, lr, ld);
    cp_async_commit();
    MC_UNROLL
    for (int s = 0; s < Tl::kStages - 1; ++s) {
      if (s < tiles) {
        load_rows<Tl::kBKV, VK::kS>(k_stage(s), kb, s * Tl::kBKV, Sh::kKvLen, lr, ld);
        load_rows<Tl::kBKV, VV::kS>(v_stage(s), vb, s * Tl::kBKV, Sh::kKvLen, lr, ld);
      }
      cp_async_commit();
    }
    cp_async_wait<Tl::kStages - 1>();  // Q landed
    __syncthreads();

    // Q's A fragments for the whole kernel: m16 tile i, k step kk (ldmatrix x4: quarters (row half,
    // k half) = (i % 2, i / 2) of lane / 8).
    const T* q_lane = q_tile + (wr0 + ((lane / 8) % 2) * 8 + lane % 8) * kLd + (lane / 16) * 8;
    unsigned qf[Tl::kQRegs ? kFragQ : 1][Tl::kQRegs ? kDPad / 16 : 1][4];
    if constexpr (Tl::kQRegs) {
      MC_UNROLL
      for (int i = 0; i < kFragQ; ++i) {
        MC_UNROLL
        for (int kk = 0; kk < kDPad / 16; ++kk) ldmatrix<4>(qf[i][kk], q_lane + i * 16 * kLd + kk * 16);
      }
    }

    float o[kFragQ][kOTiles][4];
    float m[kFragQ][2], l[kFragQ][2];  // per row g (0) and g + 8 (1) of each m16 tile
    MC_UNROLL
    for (int i = 0; i < kFragQ; ++i) {
      MC_UNROLL
      for (int n = 0; n < kOTiles; ++n) {
        MC_UNROLL
        for (int e = 0; e < 4; ++e) o[i][n][e] = 0.0f;
      }
      MC_UNROLL
      for (int hh = 0; hh < 2; ++hh) {
        m[i][hh] = -INFINITY;
        l[i][hh] = 0.0f;
      }
    }
    const float scale_log2 = p.scale * kLog2e;
    // Lane offsets of the ldmatrix rows: K (B of Q K^T, k-fast: quarters (key half, d half) =
    // (lane / 16, (lane / 8) % 2)) and V (B of P V, n-fast, .trans: quarters (d half, key half) =
    // (lane / 16, (lane / 8) % 2)).
    const int k_lane = ((lane / 16) * 8 + lane % 8) * kLd + ((lane / 8) % 2) * 8;
    const int v_lane = (((lane / 8) % 2) * 8 + lane % 8) * kLd + (lane / 16) * 8;

    int stage = 0, load_stage = Tl::kStages - 1;
    for (int j = 0; j < tiles; ++j) {
      cp_async_wait<Tl::kStages - 2>();
      __syncthreads();
      if (j + Tl::kStages - 1 < tiles) {
        const int kv = (j + Tl::kStages - 1) * Tl::kBKV;
        load_rows<Tl::kBKV, VK::kS>(k_stage(load_stage), kb, kv, Sh::kKvLen, lr, ld);
        load_rows<Tl::kBKV, VV::kS>(v_stage(load_stage), vb, kv, Sh::kKvLen, lr, ld);
      }
      cp_async_commit();
      const int kv0 = j * Tl::kBKV;

      // S = Q K^T for the warp's rows and the tile's keys.
      float s[kFragQ][kSTiles][4];
      MC_UNROLL
      for (int i = 0; i < kFragQ; ++i) {
        MC_UNROLL
        for (int n = 0; n < kSTiles; ++n) {
          MC_UNROLL
          for (int e = 0; e < 4; ++e) s[i][n][e] = 0.0f;
        }
      }
      const T* ks = k_stage(stage) + k_lane;
      MC_UNROLL
      for (int kk = 0; kk < kDPad / 16; ++kk) {
        unsigned qs[Tl::kQRegs ? 1 : kFragQ][4];
        if constexpr (!Tl::kQRegs) {
          MC_UNROLL
          for (int i = 0; i < kFragQ; ++i) ldmatrix<4>(qs[i], q_lane + i * 16 * kLd + kk * 16);
        }
        MC_UNROLL
        for (int jj = 0; jj < kSTiles / 2; ++jj) {
          unsigned r[4];
          ldmatrix<4>(r, ks + jj * 16 * kLd + kk * 16);
          const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
          MC_UNROLL
          for (int i = 0; i < kFragQ; ++i) {
            if constexpr (Tl::kQRegs) {
              mma<T>(s[i][2 * jj], qf[i][kk], b0);
              mma<T>(s[i][2 * jj + 1], qf[i][kk], b1);
            } else {
              mma<T>(s[i][2 * jj], qs[i], b0);
              mma<T>(s[i][2 * jj + 1], qs[i], b1);
            }
          }
        }
      }

      // Bias terms that do not depend on the query (padding masks): once per key of the lane.
      float key_bias[kBiasPerKey ? kSTiles : 1][2];
      if constexpr (kBiasPerKey) {
        MC_UNROLL
        for (int n = 0; n < kSTiles; ++n) {
          MC_UNROLL
          for (int e = 0; e < 2; ++e) {
            const int col = kv0 + n * 8 + 2 * t + e;
            key_bias[n][e] = col < Sh::kKvLen ? bias_at(p, b, h, 0, col) : 0.0f;
          }
        }
      }

      // Scale, bias, mask; then the online softmax of each of the lane's rows (a row's 4 lanes, one
      // quad, reduce the max with two shuffles; the sum stays per lane until the end).
      MC_UNROLL
      for (int i = 0; i < kFragQ; ++i) {
        MC_UNROLL
        for (int hh = 0; hh < 2; ++hh) {
          const int row = q0 + wr0 + i * 16 + g + 8 * hh;
          float mx = -INFINITY;
          MC_UNROLL
          for (int n = 0; n < kSTiles; ++n) {
            MC_UNROLL
            for (int e = 0; e < 2; ++e) {
              const int col = kv0 + n * 8 + 2 * t + e;
              float x = s[i][n][2 * hh + e] * scale_log2;
              const bool visible = col < Sh::kKvLen && (!Mask::kOn || col <= row + Mask::kOffset);
              if (!visible) {
                x = -INFINITY;
              } else if constexpr (kBiasPerKey) {
                x += key_bias[n][e];
              } else if ((Bias0::kPresent || Bias1::kPresent) && row < Sh::kQLen) {
                x += bias_at(p, b, h, row, col);
              }
              s[i][n][2 * hh + e] = x;
              mx = fmaxf(mx, x);
            }
          }
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float m_new = fmaxf(m[i][hh], mx);
          const float base = m_new == -INFINITY ? 0.0f : m_new;  // no -inf - -inf
          const float alpha = exp2f(m[i][hh] - base);
          m[i][hh] = m_new;
          float sum = 0.0f;
          MC_UNROLL
          for (int n = 0; n < kSTiles; ++n) {
            MC_UNROLL
            for (int e = 0; e < 2; ++e) {
              const float pv = exp2f(s[i][n][2 * hh + e] - base);
              s[i][n][2 * hh + e] = pv;
              sum += pv;
            }
          }
          l[i][hh] = l[i][hh] * alpha + sum;
          if constexpr (kPlant != Plant::no_rescale) {
            MC_UNROLL
            for (int n = 0; n < kOTiles; ++n) {
              o[i][n][2 * hh] *= alpha;
              o[i][n][2 * hh + 1] *= alpha;
            }
          }
        }
      }

      // O += P V: P's A fragment of keys 16 kk .. 16 kk + 15 is S tiles 2 kk and 2 kk + 1.
      const T* vs = v_stage(stage) + v_lane;
      MC_UNROLL
      for (int kk = 0; kk < Tl::kBKV / 16; ++kk) {
        unsigned a[kFragQ][4];
        MC_UNROLL
        for (int i = 0; i < kFragQ; ++i) {
          float first = s[i][2 * kk][0];
          if constexpr (kPlant == Plant::p_fragment_lane) {
            const float other = __shfl_sync(0xffffffffu, first, 4);
            if (lane == 0) first = other;
          }
          a[i][0] = pack2<T>(first, s[i][2 * kk][1]);
          a[i][1] = pack2<T>(s[i][2 * kk][2], s[i][2 * kk][3]);
          a[i][2] = pack2<T>(s[i][2 * kk + 1][0], s[i][2 * kk + 1][1]);
          a[i][3] = pack2<T>(s[i][2 * kk + 1][2], s[i][2 * kk + 1][3]);
        }
        MC_UNROLL
        for (int nn = 0; nn < kOTiles / 2; ++nn) {
          unsigned r[4];
          ldmatrix<4, true>(r, vs + kk * 16 * kLd + nn * 16);
          const unsigned b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
          MC_UNROLL
          for (int i = 0; i < kFragQ; ++i) {
            mma<T>(o[i][2 * nn], a[i], b0);
            mma<T>(o[i][2 * nn + 1], a[i], b1);
          }
        }
      }
      stage = stage + 1 == Tl::kStages ? 0 : stage + 1;
      load_stage = load_stage + 1 == Tl::kStages ? 0 : load_stage + 1;
    }
    cp_async_wait_all();  // the trailing (empty) groups; with no key tile at all, nothing else
    __syncthreads();

    // O / l, rounded to T, through the warp's own rows of the Q tile, then 16-byte stores.
    T* staged = q_tile + wr0 * kLd;
    MC_UNROLL
    for (int i = 0; i < kFragQ; ++i) {
      MC_UNROLL
      for (int hh = 0; hh < 2; ++hh) {
        float sum = l[i][hh];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const float inv = 1.0f / sum;  // a fully masked row: 0 x inf = NaN, as the unfused softmax
        MC_UNROLL
        for (int n = 0; n < kOTiles; ++n) {
          st_shared(reinterpret_cast<unsigned*>(staged + (i * 16 + g + 8 * hh) * kLd + n * 8 + 2 * t),
                    pack2<T>(o[i][n][2 * hh] * inv, o[i][n][2 * hh + 1] * inv));
        }
      }
    }
    __syncwarp();
    T* ob = p.o + VO::offset(b, h);
    constexpr int kChunksPerRow = kDPad / 8, kChunks = kWarpRows * kChunksPerRow;
    MC_UNROLL
    for (int c = lane; c < kChunks; c += 32) {
      const int r = c / kChunksPerRow, d = (c % kChunksPerRow) * 8;
      const int row = q0 + wr0 + r;
      if (row < Sh::kQLen && d < kD) {
        *reinterpret_cast<uint4*>(ob + static_cast<int64_t>(row) * VO::kS + d) =
            ld_shared(reinterpret_cast<const uint4*>(staged + r * kLd + d));
      }
    }
  }
};

/// \brief The entry point of an Attention instantiation for the template tests (the emitted code
/// gives each instantiation its own).
template <class K>
__global__ void __launch_bounds__(K::kThreads, 1) kernel(typename K::Params p) {
  K::run(p);
}

}  // namespace attn
}  // namespace mc

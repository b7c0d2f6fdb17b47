// templates/gemm.cuh — the tiled SIMT GEMM (Gemm, MatMul, matmul-like Einsum) and the main loop the
// implicit-GEMM convolution shares (conv.cuh), plus a strided sum for one-operand Einsum.
//
// Y[b, m, n] = epilogue(sum_k A[b, m, k] * B[b, k, n]) for b over up to 3 batch dims, every
// operand seen through compile-time element strides (Strides<>): a transposed operand is just
// other strides, a broadcast batch dim has stride 0, so numpy matmul broadcasting, Gemm's transA /
// transB and Einsum's batched forms need no copies.
//
// The tiling (Tile<BM, BN, BK, TM, TN>): a block computes a BM x BN tile of Y with
// (BM / TM) * (BN / TN) threads, each thread TM x TN outputs held in registers. The K loop walks
// BK-deep slices: the A slice (BM x BK) and the B slice (BK x BN) are staged in shared memory, both
// stored k-major ([BK][BM], [BK][BN]) so the inner product reads rows of each. Double buffering:
// while the block computes on one shared buffer, each thread already holds the next slice's
// elements in registers and writes them to the other buffer afterwards; one __syncthreads per
// slice. A thread's TM rows are TM / V chunks of V adjacent rows (V = 4 when TM allows, else 2 or
// 1), chunk c at c * V * (BM / TM) + ty * V; columns likewise (Tile::row, Tile::col). So the inner
// product reads each chunk with one vector load (LDS.128 for V = 4), a warp's reads touch
// consecutive or broadcast addresses (no bank conflicts), and a warp's stores to Y cover
// contiguous runs of n. Loads from global memory follow the operand's contiguous side (SlotMap),
// and every access outside M, N or K reads zero: odd sizes need no padding.
//
// Numerics: storage type T (float, __half, double, integers) and accumulator Acc (float; double for
// double; int64_t for integer MatMul) are template parameters; the epilogue (Epi) turns the accumulator into the
// stored value and gets each element's coordinates (batch, row, column, offset in Y):
// EpilogueIdentity, EpilogueLinear (Gemm's alpha / beta / C), EpilogueBias (a convolution's B), and
// EpilogueFused (FusedConv / FusedGemm / FusedMatMul: bias, activation, residual add) share one
// main loop. EpilogueRanges (a horizontally fused convolution or matrix product) also says where
// each output channel (a convolution's output channel, a product's column) goes: its Range's own
// output, at that output's strides.
#pragma once

// Standard headers before device.h (the emulation's qualifier macros must not reach them).
#include <stdint.h>

#include <type_traits>

#include "activation.cuh"
#include "device.h"

namespace mc {
namespace gemm {

// ---- problem description --------------------------------------------------------------------

/// \brief Problem sizes: up to 3 batch dims (outermost first; unused ones are 1), then M, N, K.
template <int B0, int B1, int B2, int M, int N, int K>
struct Shape {
  static constexpr int kB0 = B0, kB1 = B1, kB2 = B2;
  static constexpr int kBatch = B0 * B1 * B2;
  static constexpr int kM = M, kN = N, kK = K;
};

/// \brief Element strides of a matrix operand: one per batch dim (0 where the operand is
/// broadcast), then along its rows and along its columns.
template <int64_t S0, int64_t S1, int64_t S2, int64_t SRow, int64_t SCol>
struct Strides {
  static constexpr int64_t kS0 = S0, kS1 = S1, kS2 = S2;
  static constexpr int64_t kRow = SRow, kCol = SCol;
  /// Element offset of batch `b` (a flat index over the Shape's three batch dims).
  template <class Sh>
  __device__ __forceinline__ static int64_t batch_offset(int b) {
    const int b2 = b % Sh::kB2;
    const int b1 = (b / Sh::kB2) % Sh::kB1;
    const int b0 = b / (Sh::kB2 * Sh::kB1);
    return b0 * S0 + b1 * S1 + b2 * S2;
  }
};

/// \brief A matrix operand of tc::Gemm whose rows go through a table of int rows (the
/// fold_row_maps stage, docs/ARCHITECTURE.md): S's strides describe the logical operand, and its row
/// r, the flat index batch x M + m, lies at row rows[r] of the memory (element rows[r] x S::kRow +
/// column x S::kCol; the batch strides unused), or nowhere when rows[r] is negative: a gathered A
/// reads zeros there (a padding row), a scattered Y writes nothing (a row the model drops). The
/// table is Params::a_rows / y_rows; a fused residual is read where its Y element is written.
template <class S>
struct RowMapped : S {
  static constexpr bool kRowMapped = true;
};
/// \brief Whether strides S are RowMapped.
template <class S, class = void>
struct IsRowMapped : std::false_type {};
template <class S>
struct IsRowMapped<S, decltype(void(S::kRowMapped))> : std::integral_constant<bool, S::kRowMapped> {};

/// \brief Where an output element is: its batch (a group, for convolutions), its row (m; the
/// output channel for convolutions), its column (n; the output pixel) and its offset in Y.
struct Coord {
  int batch, row, col;
  int64_t offset;
};

/// \brief Which coordinate of an element is its channel, the one the ranges split: the row (a
/// convolution's output channel) or the column (a matrix product's n). For apply8: the coordinate
/// along which its 8 consecutive elements run.
enum class ChannelAxis { row, column };

/// \brief out[e] = p[e * step] as float, e = 0..7: as 16-byte loads when step is 1 and p is 16-byte
/// aligned (the tensor-core epilogue's bias and residual reads).
template <class T>
__device__ __forceinline__ void load8(const T* p, int64_t step, float (&out)[8]) {
  if constexpr (sizeof(T) == 2 || sizeof(T) == 4) {
    if (step == 1 && (reinterpret_cast<uintptr_t>(p) & 15u) == 0) {
      union {
        uint4 v[sizeof(T) / 2];
        T t[8];
      } u;
      MC_UNROLL
      for (int q = 0; q < static_cast<int>(sizeof(T) / 2); ++q) u.v[q] = reinterpret_cast<const uint4*>(p)[q];
      MC_UNROLL
      for (int e = 0; e < 8; ++e) out[e] = static_cast<float>(u.t[e]);
      return;
    }
  }
  MC_UNROLL
  for (int e = 0; e < 8; ++e) out[e] = static_cast<float>(p[e * step]);
}

// ---- epilogues: Params + apply<Shape>(params, accumulator, coordinate) -> value to store ---------
// An epilogue may also give apply8<Shape, Along>(params, v[8], first coordinate, Y step): the same
// for 8 consecutive elements along the row or column coordinate, their offsets in Y y_step apart,
// reading its operands 8 at a time (load8). gemm::apply8 falls back to apply per element.

/// \brief Stores the accumulator as is.
struct EpilogueIdentity {
  struct Params {};
  template <class Sh, class Acc>
  __device__ __forceinline__ static Acc apply(const Params&, Acc v, const Coord&) {
    return v;
  }
};

/// \brief alpha * acc + beta * C[b, m, n] (Gemm). C is read through strides SC (0 where it
/// broadcasts); kHasC false: alpha * acc only.
template <class T, class SC, bool kHasC>
struct EpilogueLinear {
  struct Params {
    float alpha = 1.0f, beta = 1.0f;
    const T* C = nullptr;  ///< null when kHasC is false
  };
  template <class Sh, class Acc>
  __device__ __forceinline__ static Acc apply(const Params& p, Acc v, const Coord& c) {
    using R = std::conditional_t<std::is_same<Acc, double>::value, double, float>;  // FP64 data: FP64 math
    R r = static_cast<R>(p.alpha) * static_cast<R>(v);
    if constexpr (kHasC) {
      const int64_t o = SC::template batch_offset<Sh>(c.batch) + c.row * SC::kRow + c.col * SC::kCol;
      r += static_cast<R>(p.beta) * static_cast<R>(p.C[o]);
    }
    return static_cast<Acc>(r);
  }
};

/// \brief acc + bias[row] (convolutions: the row is the output channel).
template <class T>
struct EpilogueBias {
  struct Params {
    const T* bias = nullptr;
  };
  template <class Sh, class Acc>
  __device__ __forceinline__ static Acc apply(const Params& p, Acc v, const Coord& c) {
    return v + static_cast<Acc>(p.bias[c.row]);
  }
  template <class Sh, ChannelAxis kAlong>
  __device__ __forceinline__ static void apply8(const Params& p, float (&v)[8], const Coord& c, int64_t) {
    float b[8];
    load8(p.bias + c.row, kAlong == ChannelAxis::row ? 1 : 0, b);
    MC_UNROLL
    for (int e = 0; e < 8; ++e) v[e] += b[e];
  }
};

// The activations (Act, ActParams, activate): activation.cuh, under their mc::gemm names too.
using mc::Act;
using mc::ActParams;
using mc::activate;

/// \brief Where a fused residual is added: before or after the activation (or not at all).
enum class Residual { none, before_activation, after_activation };

/// \brief The epilogue of a fused node (FusedConv, FusedGemm, FusedMatMul):
///   Y = act(alpha * acc [+ beta * bias] [+ R if before]) [+ R if after]
/// The bias is read through strides SBias (Conv: per output channel, Strides<0, 0, 0, 1, 0>; Gemm:
/// C's broadcast strides; MatMul: per column); the residual R has Y's layout (read at the
/// element's offset in Y). Computed in FP32 and rounded once to T.
template <class T, class SBias, bool kHasBias, Act A, Residual R>
struct EpilogueFused {
  struct Params {
    float alpha = 1.0f, beta = 1.0f;
    const T* bias = nullptr;      ///< null when kHasBias is false
    const T* residual = nullptr;  ///< null when R is Residual::none
    ActParams act{};
  };
  template <class Sh, class Acc>
  __device__ __forceinline__ static Acc apply(const Params& p, Acc v, const Coord& c) {
    float r = p.alpha * static_cast<float>(v);
    if constexpr (kHasBias) {
      const int64_t o = SBias::template batch_offset<Sh>(c.batch) + c.row * SBias::kRow + c.col * SBias::kCol;
      r += p.beta * static_cast<float>(p.bias[o]);
    }
    if constexpr (R == Residual::before_activation) r += static_cast<float>(p.residual[c.offset]);
    r = activate<A>(r, p.act);
    if constexpr (R == Residual::after_activation) r += static_cast<float>(p.residual[c.offset]);
    return static_cast<Acc>(r);
  }
  template <class Sh, ChannelAxis kAlong>
  __device__ __forceinline__ static void apply8(const Params& p, float (&v)[8], const Coord& c, int64_t y_step) {
    float bias[8], res[8];
    if constexpr (kHasBias) {
      const int64_t o = SBias::template batch_offset<Sh>(c.batch) + c.row * SBias::kRow + c.col * SBias::kCol;
      load8(p.bias + o, kAlong == ChannelAxis::row ? SBias::kRow : SBias::kCol, bias);
    }
    if constexpr (R != Residual::none) load8(p.residual + c.offset, y_step, res);
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      float r = p.alpha * v[e];
      if constexpr (kHasBias) r += p.beta * bias[e];
      if constexpr (R == Residual::before_activation) r += res[e];
      r = activate<A>(r, p.act);
      if constexpr (R == Residual::after_activation) r += res[e];
      v[e] = r;
    }
  }
};

// ---- horizontally fused outputs -----------------------------------------------------------------

/// \brief One output of a horizontally fused kernel (compiler/schedule/fuse_horizontal.cpp): the
/// product's channels [Begin, End) (a convolution's output channels, a matrix product's columns),
/// through activation A, stored at y + outer * SOuter + inner * SInner + (channel - Begin) *
/// SChannel, y being the range's own pointer (EpilogueRanges::Params::y) and (outer, inner) the
/// image and the output pixel in it (a product: the batch and the row). Vector: 8 consecutive
/// channels of the range from a multiple of 8 form one 16-byte aligned run (SChannel 1, the other
/// strides and the pointer aligned): the tensor-core store writes them whole.
template <int Begin, int End, Act A, int64_t SOuter, int64_t SInner, int64_t SChannel, bool Vector>
struct Range {
  static constexpr int kBegin = Begin, kEnd = End;
  static constexpr Act kAct = A;
  static constexpr int64_t kSOuter = SOuter, kSInner = SInner, kSChannel = SChannel;
  static constexpr bool kVector = Vector;
};

/// \brief The ranges' lookups by channel: a chain of tests on the ranges' constant ends (the last
/// range takes whatever the ones before it do not).
template <int I, class R, class... Rest>
struct RangeChain {
  __device__ __forceinline__ static float activate(int channel, float x, const ActParams* act) {
    if constexpr (sizeof...(Rest) > 0) {
      if (channel >= R::kEnd) return RangeChain<I + 1, Rest...>::activate(channel, x, act);
    }
    return mc::gemm::activate<R::kAct>(x, act[I]);
  }
  template <class TY>
  __device__ __forceinline__ static TY* at(TY* const* y, int channel, int outer, int inner, bool* vector) {
    if constexpr (sizeof...(Rest) > 0) {
      if (channel >= R::kEnd) return RangeChain<I + 1, Rest...>::at(y, channel, outer, inner, vector);
    }
    *vector = R::kVector;
    return y[I] + outer * R::kSOuter + inner * R::kSInner + (channel - R::kBegin) * R::kSChannel;
  }
};

/// \brief The epilogue of a horizontally fused convolution or matrix product: alpha * acc + beta *
/// bias[channel] (the ranges' biases concatenated; alpha and beta one for a convolution, Gemm's
/// or FusedMatMul's otherwise), then the activation of the channel's range (Range, in channel
/// order). The kernel stores each channel where at() says, not in its own Y: in its range's output.
template <class T, class TY, bool kHasBias, ChannelAxis kAxis, class... Rs>
struct EpilogueRanges {
  static constexpr int kRanges = sizeof...(Rs);
  using Chain = RangeChain<0, Rs...>;
  struct Params {
    float alpha = 1.0f, beta = 1.0f;
    const T* bias = nullptr;  ///< null when kHasBias is false
    TY* y[kRanges] = {};      ///< each range's output
    ActParams act[kRanges] = {};
  };
  template <class Sh, class Acc>
  __device__ __forceinline__ static Acc apply(const Params& p, Acc v, const Coord& c) {
    const int channel = kAxis == ChannelAxis::row ? c.row : c.col;
    float r = p.alpha * static_cast<float>(v);
    if constexpr (kHasBias) r += p.beta * static_cast<float>(p.bias[channel]);
    return static_cast<Acc>(Chain::activate(channel, r, p.act));
  }
  /// Where output channel `channel` of pixel `inner` of image `outer` goes; *vector: its range's Vector.
  __device__ __forceinline__ static TY* at(const Params& p, int channel, int outer, int inner, bool* vector) {
    return Chain::at(p.y, channel, outer, inner, vector);
  }
};

/// \brief True for an epilogue that says where each output goes (EpilogueRanges).
template <class Epi, class = void>
struct HasRanges : std::false_type {};
template <class Epi>
struct HasRanges<Epi, std::void_t<decltype(Epi::kRanges)>> : std::true_type {};

/// \brief True for an epilogue with its own apply8.
template <class Epi, class = void>
struct HasApply8 : std::false_type {};
template <class Epi>
struct HasApply8<Epi, std::void_t<decltype(&Epi::template apply8<Shape<1, 1, 1, 1, 1, 1>, ChannelAxis::row>)>>
    : std::true_type {};

/// \brief Epi on 8 consecutive elements along kAlong from c (offsets in Y y_step apart): the
/// epilogue's apply8, or apply per element.
template <class Epi, class Sh, ChannelAxis kAlong>
__device__ __forceinline__ void apply8(const typename Epi::Params& p, float (&v)[8], const Coord& c, int64_t y_step) {
  if constexpr (HasApply8<Epi>::value) {
    Epi::template apply8<Sh, kAlong>(p, v, c, y_step);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      const Coord ce{c.batch, kAlong == ChannelAxis::row ? c.row + e : c.row, kAlong == ChannelAxis::row ? c.col : c.col + e,
                     c.offset + e * y_step};
      v[e] = static_cast<float>(Epi::template apply<Sh>(p, v[e], ce));
    }
  }
}

// ---- tiling ------------------------------------------------------------------------------------

/// \brief A block tile of BM x BN outputs, BK deep per K slice, TM x TN outputs per thread.
template <int BM, int BN, int BK, int TM, int TN>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN;
  static constexpr int kThreadsM = BM / TM, kThreadsN = BN / TN;
  static constexpr int kThreads = kThreadsM * kThreadsN;
  static_assert(BM % TM == 0 && BN % TN == 0, "Tile: the thread tile must divide the block tile");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "Tile: whole warps, at most 1024 threads");
  /// Shared rows are padded by 4 elements: a warp writing a k-fast slice then hits distinct banks
  /// (and rows stay 16-byte aligned for the vector reads).
  static constexpr int kLdA = BM + 4, kLdB = BN + 4;
  /// Adjacent rows / columns a thread owns (one vector load from shared memory each).
  static constexpr int kVecM = TM % 4 == 0 ? 4 : TM % 2 == 0 ? 2 : 1;
  static constexpr int kVecN = TN % 4 == 0 ? 4 : TN % 2 == 0 ? 2 : 1;
  /// Block-tile row of the i-th output row of the thread with row index ty (see the top comment).
  __device__ __forceinline__ static int row(int ty, int i) {
    return (i / kVecM) * (kThreadsM * kVecM) + ty * kVecM + i % kVecM;
  }
  /// Block-tile column of the j-th output column of the thread with column index tx.
  __device__ __forceinline__ static int col(int tx, int j) {
    return (j / kVecN) * (kThreadsN * kVecN) + tx * kVecN + j % kVecN;
  }
};

/// \brief dst[0..V) = p[0..V) from shared memory, as one vector load for float (p aligned to V
/// elements).
template <int V, class Acc>
__device__ __forceinline__ void load_vector(const Acc* p, Acc* dst) {
  if constexpr (V == 4 && std::is_same<Acc, float>::value) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    dst[0] = v.x;
    dst[1] = v.y;
    dst[2] = v.z;
    dst[3] = v.w;
  } else if constexpr (V == 2 && std::is_same<Acc, float>::value) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    dst[0] = v.x;
    dst[1] = v.y;
  } else {
    MC_UNROLL
    for (int i = 0; i < V; ++i) dst[i] = p[i];
  }
}

/// \brief Which element of a BK x BX slice the i-th load of thread `tid` covers. kXFast: consecutive
/// threads take consecutive x (the operand is contiguous along x); otherwise consecutive k.
template <int BK, int BX, int NT, bool kXFast>
struct SlotMap {
  static_assert((BK * BX) % NT == 0, "SlotMap: the slice must split evenly over the threads");
  static constexpr int kCount = BK * BX / NT;
  __device__ __forceinline__ static int k(int tid, int i) {
    if constexpr (kXFast) {
      if constexpr (NT % BX == 0) return tid / BX + i * (NT / BX);
      return (tid + i * NT) / BX;
    } else {
      if constexpr (NT % BK == 0) return tid % BK;
      return (tid + i * NT) % BK;
    }
  }
  __device__ __forceinline__ static int x(int tid, int i) {
    if constexpr (kXFast) {
      if constexpr (NT % BX == 0) return tid % BX;
      return (tid + i * NT) % BX;
    } else {
      if constexpr (NT % BK == 0) return tid / BK + i * (NT / BK);
      return (tid + i * NT) / BK;
    }
  }
};

/// \brief Loads a BK x BX slice of a strided matrix: element (k, x) at base[x * SX + k * SK],
/// zero outside [0, X) x [0, K). For A, x is m; for B, x is n.
template <class T, class Acc, int X, int K, int64_t SX, int64_t SK, int BK, int BX, int NT>
struct MatrixLoader {
  // Follow the contiguous side; when neither side is (a strided view), x-fast.
  using Map = SlotMap<BK, BX, NT, !(SK == 1 && SX != 1)>;
  static constexpr int kCount = Map::kCount;
  // Offsets within one matrix fit in int (plan refuses tensors of 2^31 elements or more).
  static constexpr int kSX = static_cast<int>(SX), kSK = static_cast<int>(SK);
  const T* base;  ///< the operand for this block's batch
  int x0;         ///< first x of this block
  int tid;

  __device__ __forceinline__ void load(int k0, Acc (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int gk = k0 + Map::k(tid, i), gx = x0 + Map::x(tid, i);
      r[i] = (gk < K && gx < X) ? static_cast<Acc>(base[gx * kSX + gk * kSK]) : Acc(0);
    }
  }
  /// s: one stage of the shared slice, [BK][LD].
  template <int LD>
  __device__ __forceinline__ void store(const Acc (&r)[kCount], Acc* s) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) s[Map::k(tid, i) * LD + Map::x(tid, i)] = r[i];
  }
};

/// \brief The double-buffered main loop: acc[i][j] += sum over k of A(m_i, k) * B(k, n_j) for the
/// thread's outputs m_i = Tile::row(ty, i), n_j = Tile::col(tx, j) (relative to the block tile).
/// ALoader/BLoader provide load(k0, regs) and store<LD>(regs, shared stage).
template <class Acc, class Tl>
struct Mainloop {
  static constexpr int BM = Tl::kBM, BN = Tl::kBN, BK = Tl::kBK, TM = Tl::kTM, TN = Tl::kTN;

  template <class ALoader, class BLoader>
  __device__ __forceinline__ static void run(const ALoader& la, const BLoader& lb, int k_extent,
                                             Acc (&acc)[TM][TN]) {
    __shared__ __align__(16) Acc sa[2][BK * Tl::kLdA];
    __shared__ __align__(16) Acc sb[2][BK * Tl::kLdB];
    const int tid = static_cast<int>(threadIdx.x);
    const int tx = tid % Tl::kThreadsN, ty = tid / Tl::kThreadsN;
    const int slices = (k_extent + BK - 1) / BK;

    Acc ra[ALoader::kCount], rb[BLoader::kCount];
    la.load(0, ra);
    lb.load(0, rb);
    la.template store<Tl::kLdA>(ra, sa[0]);
    lb.template store<Tl::kLdB>(rb, sb[0]);
    __syncthreads();

    for (int s = 0; s < slices; ++s) {
      const int cur = s & 1;
      const bool more = s + 1 < slices;
      // Issue the next slice's global loads before computing: their latency hides behind the FMAs.
      if (more) {
        la.load((s + 1) * BK, ra);
        lb.load((s + 1) * BK, rb);
      }
      const Acc* a = sa[cur];
      const Acc* b = sb[cur];
      MC_UNROLL
      for (int k = 0; k < BK; ++k) {
        Acc av[TM], bv[TN];
        MC_UNROLL
        for (int i = 0; i < TM; i += Tl::kVecM) load_vector<Tl::kVecM>(a + k * Tl::kLdA + Tl::row(ty, i), av + i);
        MC_UNROLL
        for (int j = 0; j < TN; j += Tl::kVecN) load_vector<Tl::kVecN>(b + k * Tl::kLdB + Tl::col(tx, j), bv + j);
        MC_UNROLL
        for (int i = 0; i < TM; ++i) {
          MC_UNROLL
          for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
        }
      }
      // The other buffer was last read in slice s - 1, before the barrier that ended it.
      if (more) {
        la.template store<Tl::kLdA>(ra, sa[cur ^ 1]);
        lb.template store<Tl::kLdB>(rb, sb[cur ^ 1]);
      }
      __syncthreads();
    }
  }
};

// ---- the batched GEMM ----------------------------------------------------------------------------

/// \brief Y = Epi(A x B), batched. SA: A's strides (rows m, columns k), SB: B's (rows k, columns
/// n), SY: Y's (rows m, columns n). With EpilogueRanges (a horizontally fused product, one batch
/// dim at most) column n of batch b, row m goes to its range's output at Epi::at(n, b, m); SY is
/// unused. Grid: (N tiles, M tiles, batch).
template <class T, class Acc, class Sh, class SA, class SB, class SY, class Tl, class Epi>
struct Gemm {
  static_assert(!HasRanges<Epi>::value || (Sh::kB0 == 1 && Sh::kB1 == 1),
                "Gemm: a ranged epilogue addresses one batch dim");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kSmemBytes = 0;  // static shared memory only
  /// What resnorm::PanelNorm reads: the shape, the rows of a grid row (y), the splits along z.
  using Shape = Sh;
  static constexpr int kPanelRows = Tl::kBM, kSplits = 1;

  struct Params {
    const T* A = nullptr;
    const T* B = nullptr;
    T* Y = nullptr;
    typename Epi::Params epilogue{};
  };

  static dim3 grid() { return dim3((Sh::kN + Tl::kBN - 1) / Tl::kBN, (Sh::kM + Tl::kBM - 1) / Tl::kBM, Sh::kBatch); }
  static dim3 block() { return dim3(kThreads); }

  __device__ static void run(const Params& p) {
    const int batch = static_cast<int>(blockIdx.z);
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    MatrixLoader<T, Acc, Sh::kM, Sh::kK, SA::kRow, SA::kCol, Tl::kBK, Tl::kBM, kThreads> la{
        p.A + SA::template batch_offset<Sh>(batch), m0, tid};
    MatrixLoader<T, Acc, Sh::kN, Sh::kK, SB::kCol, SB::kRow, Tl::kBK, Tl::kBN, kThreads> lb{
        p.B + SB::template batch_offset<Sh>(batch), n0, tid};
    Acc acc[Tl::kTM][Tl::kTN];
    MC_UNROLL
    for (int i = 0; i < Tl::kTM; ++i) {
      MC_UNROLL
      for (int j = 0; j < Tl::kTN; ++j) acc[i][j] = Acc(0);
    }
    Mainloop<Acc, Tl>::run(la, lb, Sh::kK, acc);

    const int tx = tid % Tl::kThreadsN, ty = tid / Tl::kThreadsN;
    const int64_t y_batch = SY::template batch_offset<Sh>(batch);
    MC_UNROLL
    for (int i = 0; i < Tl::kTM; ++i) {
      const int m = m0 + Tl::row(ty, i);
      MC_UNROLL
      for (int j = 0; j < Tl::kTN; ++j) {
        const int n = n0 + Tl::col(tx, j);
        if (m < Sh::kM && n < Sh::kN) {
          const int64_t o = y_batch + m * SY::kRow + n * SY::kCol;
          const T v = static_cast<T>(Epi::template apply<Sh>(p.epilogue, acc[i][j], Coord{batch, m, n, o}));
          if constexpr (HasRanges<Epi>::value) {  // a horizontally fused product: the range's output
            bool vector;
            *Epi::at(p.epilogue, n, batch, m, &vector) = v;
          } else {
            p.Y[o] = v;
          }
        }
      }
    }
  }
};

/// \brief The kernel of any template here with a Params and a static run (Gemm, Conv, ...), for the
/// template tests (the emitted code has an entry point per instantiation).
template <class K>
__global__ void __launch_bounds__(K::kThreads) kernel(typename K::Params p) {
  K::run(p);
}

// ---- one-operand Einsum: a strided sum ---------------------------------------------------------

/// \brief A list of compile-time integers (dims or strides).
template <int64_t... V>
struct Ints {
  static constexpr int kRank = sizeof...(V);
};

/// \brief Offset of a flat C-order index over Dims, through Strides (the last dim fastest).
template <class Dims, class Str>
struct StridedIndex;
template <int64_t... D, int64_t... S>
struct StridedIndex<Ints<D...>, Ints<S...>> {
  static_assert(sizeof...(D) == sizeof...(S), "StridedIndex: one stride per dim");
  static constexpr int64_t kSize = (int64_t(1) * ... * D);
  __device__ __forceinline__ static int64_t offset(int64_t flat) {
    if constexpr (sizeof...(D) == 0) {
      return 0;
    } else {
      const int64_t dims[] = {D...};
      const int64_t strides[] = {S...};
      int64_t off = 0;
      MC_UNROLL
      for (int i = static_cast<int>(sizeof...(D)) - 1; i >= 0; --i) {
        off += (flat % dims[i]) * strides[i];
        flat /= dims[i];
      }
      return off;
    }
  }
};

/// \brief Y[o] = sum over r of X[out(o) + sum(r)]: one-operand Einsum (a sum over letters, a
/// transpose, a diagonal: a letter repeated in the term has the sum of its strides). One thread per
/// output element; Y dense.
template <class T, class Acc, class OutIndex, class SumIndex, int NT = 128>
struct StridedSum {
  static constexpr int kThreads = NT;
  static constexpr int kSmemBytes = 0;
  struct Params {
    const T* X = nullptr;
    T* Y = nullptr;
  };
  static dim3 grid() { return dim3(static_cast<unsigned>((OutIndex::kSize + NT - 1) / NT)); }
  static dim3 block() { return dim3(NT); }
  __device__ static void run(const Params& p) {
    const int64_t o = static_cast<int64_t>(blockIdx.x) * NT + threadIdx.x;
    if (o >= OutIndex::kSize) return;
    const T* x = p.X + OutIndex::offset(o);
    Acc acc = Acc(0);
    for (int64_t r = 0; r < SumIndex::kSize; ++r) acc += static_cast<Acc>(x[SumIndex::offset(r)]);
    p.Y[o] = static_cast<T>(acc);
  }
};

}  // namespace gemm
}  // namespace mc

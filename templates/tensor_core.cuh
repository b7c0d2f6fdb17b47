// templates/tensor_core.cuh — the tensor-core main loop (sm_75 and newer) and the FP16 / BF16 GEMM and
// implicit-GEMM convolution on it; templates/tensor_core_int8.cuh runs the INT8 products on the same
// main loop. One main loop, parameterised by two policies:
//   the MMA policy (Mma): the operands' element types and width, k per instruction, the ldmatrix
//     form, the accumulator type and the instruction: MmaF16<Acc> (mma.sync m16n8k16 on __half,
//     FP32 or, with --fp16-accumulate, FP16 accumulators; two m16n8k8 on sm_75), MmaBF16 (m16n8k16
//     .bf16, FP32, sm_80 and newer), MmaS8<TA> (m16n8k32 on 8-bit A (int8_t / uint8_t) and int8 B,
//     INT32 accumulators; four m8n8k16 on sm_75): runtime_stub/device.h;
//   the pipeline policy (Tile::Pipeline): CpAsyncPipeline<Stages> (sm_80+) or RegisterPipeline
//     (sm_75), below. (The Hopper engine, templates/hopper_gemm.cuh, keeps its TMA + mbarrier ring
//     and wgmma in a warp-specialized kernel of its own: its consumers never stage through
//     registers or issue ldmatrix, so it shares the epilogue, not this loop.)
// Everything else is counted in 16-byte chunks, which is what makes one loop serve every width: a
// chunk is 8 16-bit or 16 8-bit elements, an MMA consumes two chunks of k (32 bytes: k16 or k32),
// and ldmatrix moves 8 rows of one chunk per matrix; an 8-bit 16 x 32 A tile is, in bytes, the
// 16-bit 16 x 16 one, so the same ldmatrix.x4 (.b16) delivers the m16n8k32 fragments.
//
// The main loop (Mainloop): a block computes a BM x BN tile of the GEMM; its warps form a
// kWarpsM x kWarpsN grid, each warp owning (BM / kWarpsM) x (BN / kWarpsN) outputs as a grid of
// m16n8 MMA tiles (Accum: the lane's accumulator registers). The K loop walks BK-deep slices (BK a
// multiple of the MMA's k); each slice of A (BM x BK) and B (BK x BN) is staged in shared memory,
// every row padded by one chunk (16 bytes): the 8 rows an ldmatrix phase reads then start in
// distinct bank groups, and the 16-byte chunk stores are conflict-free. An operand is staged in its
// own contiguous direction (StageLayout: k-fast [X][BK + chunk] or x-fast [BK][X + chunk]);
// ldmatrix reads the k-fast form as is and the x-fast form with .trans, so a transposed 16-bit
// operand costs nothing (8-bit operands are always staged k-fast: .trans moves 16-bit pairs). Per
// MMA k a warp issues one ldmatrix.x4 per 16 rows of A and per 16 columns of B, then one mma per
// m16n8 tile. Stage addresses are computed (stage x bytes per stage), never indexed pointers: no
// local memory.
//
// Staging (Tile's kAsync, kStages: the pipeline policy):
//   async (sm_80+): kStages stages in flight; slice s + kStages - 1 goes global -> shared with
//     mc::cp_async_16 (its src-size zero-fills what lies outside the matrix) while slice s is
//     computed; one commit group per slice, cp_async_wait<kStages - 2> and one barrier per slice.
//   registers (sm_75): two stages; the next slice's chunks are loaded into registers before the
//     slice's MMAs are issued and written to the other stage after them.
// An operand whose contiguous dim allows 16-byte loads (stride 1, the other strides whole chunks)
// is read in 16-byte vectors; any other operand is read element by element, masked (always
// through registers), and still runs on tensor cores. Out-of-range elements read 0, so any M, N,
// K works. The shared memory is dynamic (kSmemBytes; above 48 KiB the emitted prepare function
// raises the kernel's limit at create), and every access to it goes through cp.async, ldmatrix or
// mc::st_shared / ld_shared: the emulation's race check sees them all.
//
// Split-K (Tile's kSplitK > 1): grid z also walks the splits of the K slices (split_slices); each
// block writes its partial sums (FP32, or INT32 for the integer MMA) to Params::partial, and a
// second launch, SplitKReduce, adds the splits in order (the same bits on every run: no atomics)
// and runs the epilogue.
//
// Epilogue: per 16-row band of its tile each warp writes its accumulators to its own shared scratch
// (FP32 / INT32), then each lane takes runs of 8 consecutive columns of one row (for_each_output)
// and the kernel's finisher applies its epilogue. Here (FP16 / BF16): the gemm.cuh epilogue
// (EpilogueIdentity / Linear / Bias / Fused: bias, activation, residual; gemm::apply8 reads bias
// and residual 16 bytes at a time) in FP32, storing TY: a cast (to __half: finite values clamped
// to +-65504 first), with one or two 16-byte stores where the output is contiguous along the
// columns, element stores otherwise. A horizontally fused kernel (EpilogueRanges) stores each
// channel in its range's output instead.
//
// A-operand prologue (Conv's Pro: ChannelPrologue, conv.cuh): a per-channel act(x scale + shift) and a
// per-(image, channel) gate applied to X's elements between global and shared memory (in registers,
// or in place after the cp.async wait), so a pre-activation BatchNormalization + ReLU or a
// squeeze-and-excite scale needs no kernel of its own (docs/CONV_KERNELS.md).
//
// Row tables (Gemm only; the fold_row_maps stage, docs/ARCHITECTURE.md): with SA a
// gemm::RowMapped<Strides>, A's logical row r (the flat batch x M + m) is read at row a_rows[r] of
// Params::A (GatherLoader: each chunk's row looked up once per block, k-fast, 16-byte chunks where
// the row pitch allows; a negative entry reads zeros: cp.async's zero-fill, no load), so a Pad /
// roll / window partition before the product needs no kernel; with SY RowMapped, Y's row r is
// written at row y_rows[r] (negative: not written) and a fused residual is read at that element's
// offset, so the window reverse, roll back, crop and residual Add after it need none either. The
// host emulation runs the same code: the same bits.
//
// Kernels: Gemm (batched strided GEMM, as mc::gemm::Gemm) and Conv (implicit GEMM over NHWC
// views with channel pitches: GEMM rows are output pixels, columns output channels, depth
// k = (tap, c) with c fastest over the pitch Cp; channels >= C are masked, never read as data;
// or, in the compact-K form, over the C channels only: K = taps x C, W's rows padded to a whole
// chunk), and SplitKReduce of either. Each follows the kernel contract of codegen/launch.h (Params,
// kThreads, kSmemBytes, grid(), block(), run); the emitted code gives every instantiation an entry
// point of its own, the tests use mc::tc::kernel<K>.
#pragma once

#include "conv.cuh"
#include "gemm.cuh"

namespace mc {
namespace tc {

// ---- operand prologues --------------------------------------------------------------------------
// A loader may transform its operand's elements between global and shared memory (an A-operand
// prologue: ChannelPrologueLoader below). Through registers (load(): RegisterPipeline, element
// loads) it transforms them there; its cp.async copies (async()) land raw, and the loader's
// land(k0, stage) transforms the chunks the thread copied itself after cp_async_wait and before
// the pipeline's barrier: its own copies have landed, no other thread reads or writes those bytes
// until the barrier, so the pass needs no barrier of its own and the copies keep their stages in
// flight.

/// \brief Whether loader L rewrites its staged slice after its copies land (L::kLands).
template <class L, class = void>
struct Lands : std::false_type {};
template <class L>
struct Lands<L, decltype(void(L::kLands))> : std::integral_constant<bool, L::kLands> {};

/// \brief l.land(k0, stage) where the loader has one (Lands), nothing otherwise.
template <class L>
__device__ __forceinline__ void land(const L& l, int k0, typename L::Elem* stage) {
  if constexpr (Lands<L>::value) l.land(k0, stage);
}

// ---- pipeline policies --------------------------------------------------------------------------
// Interface: kStages; run(la, lb, s0, s1, a_stage, b_stage, compute): stages the K slices [s0, s1)
// of both operands (loaders below) in shared memory (a_stage(i), b_stage(i): stage i's slices) and
// calls compute(stage) once per slice, in order, when the slice is in `stage`. Ends on a barrier,
// every copy landed: the caller may reuse the shared memory.

/// \brief cp.async staging (sm_80+): Stages - 1 slices in flight ahead of the one computed.
template <int Stages>
struct CpAsyncPipeline {
  static_assert(Stages >= 2 && Stages <= 6, "tc::CpAsyncPipeline: 2..6 stages");
  static constexpr int kStages = Stages;

  template <int BK, class LA, class LB, class AStage, class BStage, class Compute>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int s0, int s1, AStage a_stage, BStage b_stage,
                                             Compute compute) {
    // One commit group per slice (empty past the end, so the group count stays simple), one
    // barrier per slice: the stage loaded in iteration s was last read in iteration s - 1, which
    // every thread has left at the barrier.
    const int slices = s1 - s0;
    MC_UNROLL
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < slices) {
        la.async((s0 + s) * BK, a_stage(s));
        lb.async((s0 + s) * BK, b_stage(s));
      }
      cp_async_commit();
    }
    int stage = 0, load_stage = kStages - 1;
    for (int s = 0; s < slices; ++s) {
      cp_async_wait<kStages - 2>();
      // A loader with an operand prologue rewrites the chunks it copied itself, now landed, before
      // the barrier that shows the slice to the other warps (land: a no-op for the others).
      land(la, (s0 + s) * BK, a_stage(stage));
      __syncthreads();
      if (s + kStages - 1 < slices) {
        la.async((s0 + s + kStages - 1) * BK, a_stage(load_stage));
        lb.async((s0 + s + kStages - 1) * BK, b_stage(load_stage));
      }
      cp_async_commit();
      compute(stage);
      stage = stage + 1 == kStages ? 0 : stage + 1;
      load_stage = load_stage + 1 == kStages ? 0 : load_stage + 1;
    }
    cp_async_wait<0>();
    __syncthreads();
  }
};

/// \brief Register staging (sm_75, no cp.async): two stages; the next slice is loaded into registers
/// before the slice's MMAs are issued and stored to the other stage after them.
struct RegisterPipeline {
  static constexpr int kStages = 2;

  template <int BK, class LA, class LB, class AStage, class BStage, class Compute>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int s0, int s1, AStage a_stage, BStage b_stage,
                                             Compute compute) {
    const int slices = s1 - s0;
    typename LA::Regs ra[LA::kCount];
    typename LB::Regs rb[LB::kCount];
    if (slices > 0) {
      la.load(s0 * BK, ra);
      lb.load(s0 * BK, rb);
      store_slice(la, ra, a_stage(0));
      store_slice(lb, rb, b_stage(0));
    }
    __syncthreads();
    for (int s = 0; s < slices; ++s) {
      const int cur = s & 1;
      const bool more = s + 1 < slices;
      if (more) {
        la.load((s0 + s + 1) * BK, ra);
        lb.load((s0 + s + 1) * BK, rb);
      }
      compute(cur);
      if (more) {
        store_slice(la, ra, a_stage(cur ^ 1));
        store_slice(lb, rb, b_stage(cur ^ 1));
      }
      __syncthreads();
    }
  }
};

// ---- tiles -----------------------------------------------------------------------------------

/// \brief A block tile BM x BN x BK run by WarpsM x WarpsN warps. Async: cp.async staging in Stages
/// stages (sm_80+); otherwise register staging in two (Pipeline: the policy). SplitK: the K slices
/// split into SplitK parts, each a block of its own (grid z), their partial sums added by
/// SplitKReduce. BK counts elements: a multiple of the MMA's k (16; 32 for 8-bit operands).
template <int BM, int BN, int BK, int WarpsM, int WarpsN, bool Async, int Stages = 2, int SplitK = 1>
struct Tile {
  static constexpr int kBM = BM, kBN = BN, kBK = BK;
  static constexpr int kWarpsM = WarpsM, kWarpsN = WarpsN, kWarps = WarpsM * WarpsN;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWarpTileM = BM / WarpsM, kWarpTileN = BN / WarpsN;
  static constexpr int kFragM = kWarpTileM / 16, kFragN = kWarpTileN / 8;  ///< m16n8 MMA tiles per warp
  static constexpr bool kAsync = Async;
  static constexpr int kStages = Stages, kSplitK = SplitK;
  static_assert(BK % 16 == 0, "tc::Tile: BK must be a multiple of 16");
  static_assert(BM % (16 * WarpsM) == 0 && BN % (16 * WarpsN) == 0,
                "tc::Tile: each warp's tile must be a whole number of 16 x 16 blocks");
  static_assert(Async ? Stages >= 2 && Stages <= 6 : Stages == 2,
                "tc::Tile: 2..6 cp.async stages, or two register-staged ones");
  static_assert(SplitK >= 1, "tc::Tile: SplitK >= 1");
  using Pipeline = typename std::conditional<Async, CpAsyncPipeline<Stages>, RegisterPipeline>::type;
};

// ---- MMA policies -------------------------------------------------------------------------------
// Interface: TA, TB (the operands' element types, one width), Acc (the accumulator as Accum takes
// it), kK (k per instruction: two chunks), kTrans (ldmatrix .trans may read an x-fast stage: 16-bit
// elements only), mma(acc, a, b): acc += a (16 x kK, ldmatrix.x4's four registers) x b (kK x 8);
// and for the Hopper engine (templates/hopper_gemm.cuh) kWgmma (it has one) and
// wgmma<N, TransB>(d, desc_a, desc_b, accumulate): the warpgroup's 64 x N product of the same k
// (wgmma.mma_async m64nNk16 / m64nNk32), operands in shared memory by descriptor.

/// \brief One m16n8 MMA tile's accumulators in a lane's registers (mma.sync's C/D fragment): FP32
/// or INT32 c0..c3, or FP16 pairs in two registers. get(e): element e at row g + 8 (e / 2), column
/// 2 t + e % 2 of the tile (g = lane / 4, t = lane % 4), as float (int for INT32).
template <class Acc>
struct Accum;
template <>
struct Accum<float> {
  float r[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  __device__ __forceinline__ float get(int e) const { return r[e]; }
};
template <>
struct Accum<__half> {
  unsigned r[2] = {0u, 0u};
  __device__ __forceinline__ float get(int e) const {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(r[e / 2] >> (16 * (e % 2)))));
  }
};
template <>
struct Accum<int> {
  int r[4] = {0, 0, 0, 0};
  __device__ __forceinline__ int get(int e) const { return r[e]; }
};

/// \brief The types and facts of an MMA policy: k per instruction is two chunks (32 bytes) of k;
/// ldmatrix .trans (an x-fast stage) for 16-bit operands only.
template <class TAElem, class TBElem, class AccT, bool Wgmma = true>
struct MmaFacts {
  using TA = TAElem;
  using TB = TBElem;
  using Acc = AccT;
  static constexpr int kK = 32 / static_cast<int>(sizeof(TAElem));
  static constexpr bool kTrans = sizeof(TAElem) == 2;
  static constexpr bool kWgmma = Wgmma;
};

/// \brief FP16 operands: mma.sync m16n8k16 (two m16n8k8 on sm_75), Acc float or __half (no wgmma:
/// the Hopper engine accumulates in FP32).
template <class AccT>
struct MmaF16 : MmaFacts<__half, __half, AccT, std::is_same<AccT, float>::value> {
  __device__ __forceinline__ static void mma(Accum<AccT>& acc, const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_m16n8k16(acc.r, a, b, acc.r);
  }
  template <int N, bool TransB>
  __device__ __forceinline__ static void wgmma(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
    wgmma_m64k16<N, __half, false, TransB>(d, desc_a, desc_b, accumulate);
  }
};

/// \brief BF16 operands: mma.sync m16n8k16 .bf16, FP32 accumulators (sm_80 and newer).
struct MmaBF16 : MmaFacts<bf16, bf16, float> {
  __device__ __forceinline__ static void mma(Accum<float>& acc, const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_m16n8k16_bf16(acc.r, a, b, acc.r);
  }
  template <int N, bool TransB>
  __device__ __forceinline__ static void wgmma(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
    wgmma_m64k16<N, bf16, false, TransB>(d, desc_a, desc_b, accumulate);
  }
};

/// \brief 8-bit operands: mma.sync m16n8k32, A TAElem (int8_t .s8 / uint8_t .u8), B int8, INT32
/// accumulators (wrapping; four m8n8k16 on sm_75).
template <class TAElem>
struct MmaS8 : MmaFacts<TAElem, int8_t, int> {
  __device__ __forceinline__ static void mma(Accum<int>& acc, const unsigned (&a)[4], const unsigned (&b)[2]) {
    mma_m16n8k32<TAElem>(acc.r, a, b, acc.r);
  }
  template <int N, bool TransB>
  __device__ __forceinline__ static void wgmma(int (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
    static_assert(!TransB, "tc::MmaS8: 8-bit operands are K-major");
    wgmma_m64k32<N, TAElem>(d, desc_a, desc_b, accumulate);
  }
};

/// \brief acc += a x b, one m16n8k16 MMA on 16-bit operands T (the policies' mma on a bare register
/// array: for templates that run a loop of their own over tc's loaders and fragments).
template <class T, class AccRegs>
__device__ __forceinline__ void mma(AccRegs& acc, const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (std::is_same<T, bf16>::value) {
    mma_m16n8k16_bf16(acc, a, b, acc);
  } else {
    mma_m16n8k16(acc, a, b, acc);
  }
}

/// \brief The MMA policy of 16-bit operands T with accumulators Acc (what tc::Gemm / Conv name).
template <class T, class Acc>
struct Mma16 {
  static_assert(std::is_same<T, __half>::value || std::is_same<T, bf16>::value, "tc: operands are __half or mc::bf16");
  static_assert(std::is_same<T, __half>::value || std::is_same<Acc, float>::value, "tc: BF16 operands accumulate in FP32");
  using type = typename std::conditional<std::is_same<T, bf16>::value, MmaBF16, MmaF16<Acc>>::type;
};

// ---- staging ------------------------------------------------------------------------------------

/// \brief Elements of E bytes in a 16-byte chunk.
template <int E>
constexpr int chunk_elems() {
  return 16 / E;
}

/// \brief Shared-memory layout of one stage of an operand slice of X (rows m of A, or columns n
/// of B) by BK, in elements of E bytes: k-fast [X][BK + chunk] or x-fast [BK][X + chunk].
template <int X, int BK, bool KFast, int E = 2>
struct StageLayout {
  static constexpr int kLd = KFast ? BK + chunk_elems<E>() : X + chunk_elems<E>();
  static constexpr int kElems = KFast ? X * kLd : BK * kLd;
  static constexpr int kBytes = kElems * E;  // a multiple of 16: X and BK are multiples of 16
  __device__ __forceinline__ static int offset(int x, int k) { return KFast ? x * kLd + k : k * kLd + x; }
};

/// \brief The chunks (V consecutive elements along the fast dim) of an X x BK slice, spread over NT
/// threads: chunk c = tid + i * NT. Consecutive threads take consecutive chunks along the fast dim.
template <int X, int BK, bool KFast, int NT, int V = 8>
struct Chunks {
  static constexpr int kPerSlice = X * BK / V;
  static_assert(kPerSlice % NT == 0, "tc::Chunks: the slice must split evenly over the threads");
  static constexpr int kCount = kPerSlice / NT;
  __device__ __forceinline__ static int x(int c) { return KFast ? c / (BK / V) : (c % (X / V)) * V; }
  __device__ __forceinline__ static int k(int c) { return KFast ? (c % (BK / V)) * V : c / (X / V); }
};

/// \brief One 16-byte chunk of T (__half, bf16: 8; int8_t, uint8_t: 16) in registers: moved as one
/// uint4, built element-wise (a union: the two views alias by definition).
template <class T>
union Chunk {
  static_assert(sizeof(T) == 2 || sizeof(T) == 1, "tc::Chunk: 16- or 8-bit elements");
  uint4 v;
  T h[16 / sizeof(T)];
};

/// \brief 16 copies of a byte.
__device__ __forceinline__ uint4 splat(unsigned char b) {
  const unsigned w = 0x01010101u * b;
  return make_uint4(w, w, w, w);
}

/// \brief How many of a chunk's V elements from `fast` on lie before `extent` (0..V).
template <int V>
__device__ __forceinline__ int inside(int extent, int fast) {
  return extent - fast < V ? (extent - fast > 0 ? extent - fast : 0) : V;
}

/// \brief A thread's chunks of a slice (chunk i is c = tid + i NT of Map) to a stage laid out as
/// Layout: one 16-byte store each.
template <class Map, class Layout, int NT, class T>
__device__ __forceinline__ void store_chunks(const Chunk<T> (&r)[Map::kCount], T* stage, int tid) {
  MC_UNROLL
  for (int i = 0; i < Map::kCount; ++i) {
    const int c = tid + i * NT;
    st_shared(reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c))), r[i].v);
  }
}

/// \brief A loader's chunks (in registers) to a stage.
template <class L>
__device__ __forceinline__ void store_slice(const L& l, const typename L::Regs (&r)[L::kCount], typename L::Elem* stage) {
  store_chunks<typename L::Map, typename L::Layout, L::kNT>(r, stage, l.tid);
}
/// \brief Slice k0 of a loader's operand to a stage element by element through registers
/// (synchronously): the async() of an operand that is not whole 16-byte chunks.
template <class L>
__device__ __forceinline__ void stage_through_registers(const L& l, int k0, typename L::Elem* stage) {
  typename L::Regs r[L::kCount];
  l.load(k0, r);
  store_slice(l, r, stage);
}

/// \brief A chunk loader's load(k0, r) from its where(k0, i, p) (OperandLoader, GatherLoader): a
/// 16-byte load of each whole chunk where kVector allows, else element by element `step` apart in
/// memory, 0 past the edge.
template <class L>
__device__ __forceinline__ void load_chunks(const L& l, int k0, typename L::Regs (&r)[L::kCount], int64_t step) {
  using T = typename L::Elem;
  MC_UNROLL
  for (int i = 0; i < L::kCount; ++i) {
    const T* p;
    const int n = l.where(k0, i, p);
    if (L::kVector && n == L::V) {
      r[i].v = *reinterpret_cast<const uint4*>(p);
    } else {
      MC_UNROLL
      for (int e = 0; e < L::V; ++e) r[i].h[e] = e < n ? p[e * step] : static_cast<T>(0.0f);
    }
  }
}
/// \brief A chunk loader's async(k0, stage): cp.async of whole 16-byte chunks (kVector; the part
/// of a chunk past the edge zero-filled, a chunk with nothing inside copied from the loader's base
/// with size 0), else through registers.
template <class L>
__device__ __forceinline__ void async_chunks(const L& l, int k0, typename L::Elem* stage) {
  if constexpr (!L::kVector) {
    stage_through_registers(l, k0, stage);
  } else {
    MC_UNROLL
    for (int i = 0; i < L::kCount; ++i) {
      const typename L::Elem* p;
      const int n = l.where(k0, i, p);
      const int c = l.tid + i * L::kNT;
      cp_async_16(stage + L::Layout::offset(L::Map::x(c), L::Map::k(c)), n > 0 ? p : l.base,
                  n * static_cast<int>(sizeof(typename L::Elem)));
    }
  }
}

// ---- operand loaders --------------------------------------------------------------------------
// Interface: Elem, kKFast, kVector, Map (Chunks), Layout (StageLayout), kCount, kNT, Regs
// (Chunk<Elem>), tid; load(k0, Regs[kCount]) (registers), async(k0, stage) (cp.async where kVector,
// else through registers); store_slice (above) writes registers to a stage.

/// \brief A strided matrix operand of T: element (x, k) at base[x * SX + k * SK], 0 outside X x K.
/// Vec: 16-byte loads are allowed when the strides permit (the caller's base is 16-byte aligned).
/// Staged x-fast (read with ldmatrix .trans) when x is the contiguous dim of a 16-bit operand;
/// k-fast otherwise (8-bit operands always: a transposed one is read element by element).
template <class T, int X, int K, int64_t SX, int64_t SK, int BK, int BX, int NT, bool Vec>
struct OperandLoader {
  using Elem = T;
  using Regs = Chunk<T>;
  static constexpr int V = chunk_elems<sizeof(T)>();
  static constexpr bool kKFast = sizeof(T) == 1 || !(SX == 1 && SK != 1);
  static constexpr int64_t kSFast = kKFast ? SK : SX, kSSlow = kKFast ? SX : SK;
  static constexpr int kFast = kKFast ? K : X, kSlow = kKFast ? X : K;
  static constexpr bool kVector = Vec && kSFast == 1 && kSSlow % V == 0;
  using Map = Chunks<BX, BK, kKFast, NT, V>;
  using Layout = StageLayout<BX, BK, kKFast, sizeof(T)>;
  static constexpr int kCount = Map::kCount, kNT = NT;
  const T* base;  ///< the operand for this block's batch
  int x0;         ///< first x of this block
  int tid;

  /// Chunk i of slice k0: how many of its elements lie inside, and the element pointer of its start.
  __device__ __forceinline__ int where(int k0, int i, const T*& p) const {
    const int c = tid + i * NT;
    const int gx = x0 + Map::x(c), gk = k0 + Map::k(c);
    const int f = kKFast ? gk : gx, s = kKFast ? gx : gk;
    p = base + static_cast<int64_t>(gx) * SX + static_cast<int64_t>(gk) * SK;
    return s < kSlow ? inside<V>(kFast, f) : 0;
  }
  __device__ __forceinline__ void load(int k0, Regs (&r)[kCount]) const { load_chunks(*this, k0, r, kSFast); }
  /// Slice k0 to a stage: cp.async of whole 16-byte chunks (kVector), else through registers.
  __device__ __forceinline__ void async(int k0, T* stage) const { async_chunks(*this, k0, stage); }
};

/// \brief A k-fast matrix operand of T read through a row table (gemm::RowMapped A): element
/// (x, k) at base[rows[x] * SX + k] (SK is 1), 0 where rows[x] is negative (a padding row) or
/// outside X x K. Each chunk's row is looked up once, in the constructor (its x is the same in
/// every slice), so the main loop costs what OperandLoader's does: cp.async with src-size 0
/// zero-fills a padding row's chunks. Vec: 16-byte loads (the caller's base 16-byte aligned, SX
/// whole chunks).
template <class T, int X, int K, int64_t SX, int BK, int BX, int NT, bool Vec>
struct GatherLoader {
  using Elem = T;
  using Regs = Chunk<T>;
  static constexpr int V = chunk_elems<sizeof(T)>();
  static constexpr bool kKFast = true;
  static constexpr bool kVector = Vec && SX % V == 0;
  using Map = Chunks<BX, BK, true, NT, V>;
  using Layout = StageLayout<BX, BK, true, sizeof(T)>;
  static constexpr int kCount = Map::kCount, kNT = NT;
  const T* base;
  int tid;
  int64_t row[kCount];  ///< element offset of chunk i's row; -1: a padding row or past X

  /// rows: the table from this block's first logical row (batch x X) on; x0 the block's first x.
  __device__ __forceinline__ GatherLoader(const T* base_, const int* rows, int x0, int tid_) : base(base_), tid(tid_) {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int x = x0 + Map::x(tid + i * NT);
      const int r = x < X ? rows[x] : -1;
      row[i] = r < 0 ? -1 : static_cast<int64_t>(r) * SX;
    }
  }
  /// Chunk i of slice k0: how many of its elements lie inside, and the element pointer of its start.
  __device__ __forceinline__ int where(int k0, int i, const T*& p) const {
    const int gk = k0 + Map::k(tid + i * NT);
    p = base + (row[i] < 0 ? 0 : row[i] + gk);
    return row[i] < 0 ? 0 : inside<V>(K, gk);
  }
  __device__ __forceinline__ void load(int k0, Regs (&r)[kCount]) const { load_chunks(*this, k0, r, 1); }
  /// Slice k0 to a stage: cp.async of whole 16-byte chunks (kVector), else through registers.
  __device__ __forceinline__ void async(int k0, T* stage) const { async_chunks(*this, k0, stage); }
};

/// \brief Loads chunks of the im2col matrix of an NHWC X of T with channel pitch Cp: element (j, k)
/// is X[n, id, ih, iw, c] for pixel j = (n, od, oh, ow) and k = (kd, kh, kw, c), c fastest over KC
/// channels per tap: Cp (padded: channels >= C read 0) or C (compact: k = tap x C + c, X still read
/// at its pitch Cp); zero past the last pixel or tap. A tap in the padding reads 0, or with kPad
/// (8-bit operands with a zero point) the byte `pad` (the zero point: a real zero). 16-byte loads
/// where a chunk is one tap's channels (KC and Cp whole numbers of chunks: padded, or compact over a
/// channel slice of a wider buffer); element by element otherwise.
template <class T, class Sh, int Cp, int KC, int BK, int BX, int NT, bool kPad = false>
struct Im2colLoader {
  using Elem = T;
  using Regs = Chunk<T>;
  using I = typename Sh::InDims;
  using KD = typename Sh::KernelDims;
  using O = typename Sh::OutDims;
  using S = typename Sh::StrideDims;
  using P = typename Sh::PadDims;
  using Dl = typename Sh::DilationDims;
  static constexpr int V = chunk_elems<sizeof(T)>();
  static constexpr bool kKFast = true;
  static_assert(KC == Cp || KC == Sh::kC, "tc::Im2colLoader: k runs over the pitch or the channels");
  static_assert(!kPad || sizeof(T) == 1, "tc::Im2colLoader: a padding value for 8-bit operands only");
  // Whole chunks of one tap: the padded form, or the compact one over whole chunks of channels
  // read at a wider pitch (X a channel slice of a Concat's buffer).
  static constexpr bool kVector = KC % V == 0 && Cp % V == 0;
  static constexpr int kKC = KC;
  static constexpr int kPixels = Sh::kN * O::kSize, kK = KD::kSize * KC;
  using Map = Chunks<BX, BK, true, NT, V>;
  using Layout = StageLayout<BX, BK, true, sizeof(T)>;
  static constexpr int kCount = Map::kCount, kNT = NT;

  const T* x;
  int tid;
  unsigned char pad;     ///< kPad: what a tap in the padding reads
  int pix_base[kCount];  ///< offset of the pixel's image in X; -1: past the last pixel
  int id0[kCount], ih0[kCount], iw0[kCount];

  __device__ __forceinline__ Im2colLoader(const T* x_, int j0, int tid_, unsigned char pad_ = 0)
      : x(x_), tid(tid_), pad(pad_) {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int j = j0 + Map::x(tid + i * NT);
      const int n = j / O::kSize, o = j % O::kSize;
      const int od = o / (O::kH * O::kW), oh = (o / O::kW) % O::kH, ow = o % O::kW;
      pix_base[i] = j < kPixels ? n * I::kSize * Cp : -1;
      id0[i] = od * S::kD - P::kD;
      ih0[i] = oh * S::kH - P::kH;
      iw0[i] = ow * S::kW - P::kW;
    }
  }

  /// Where (chunk i, depth k) is: 1 inside the image (off its element offset, avail how many of
  /// the channels c .. are data), 0 in the padding (a tap of a real pixel outside the image), -1
  /// nowhere (k >= K or no pixel).
  __device__ __forceinline__ int at(int i, int k, int& off, int& avail) const {
    const int tap = k / KC, c = k % KC;
    if (k >= kK || pix_base[i] < 0) return -1;
    const int kd = tap / (KD::kH * KD::kW), kh = (tap / KD::kW) % KD::kH, kw = tap % KD::kW;
    const int id = id0[i] + kd * Dl::kD, ih = ih0[i] + kh * Dl::kH, iw = iw0[i] + kw * Dl::kW;
    const bool in_image = static_cast<unsigned>(id) < unsigned(I::kD) && static_cast<unsigned>(ih) < unsigned(I::kH) &&
                          static_cast<unsigned>(iw) < unsigned(I::kW);
    if (!in_image) return 0;
    avail = Sh::kC - c;
    off = pix_base[i] + ((id * I::kH + ih) * I::kW + iw) * Cp + c;
    return 1;
  }
  /// What element e of a chunk reads where at() said w: data, the padding value, or zero.
  __device__ __forceinline__ T element(int w, int off, bool data) const {
    if (w > 0 && data) return x[off];
    if constexpr (kPad) {
      if (w == 0) return static_cast<T>(pad);
    }
    return static_cast<T>(0.0f);
  }

  __device__ __forceinline__ void load(int k0, Regs (&r)[kCount]) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int k = k0 + Map::k(tid + i * NT);
      if constexpr (kVector) {
        int off = 0, avail = 0;
        const int w = at(i, k, off, avail);  // the chunk's channels share one tap (KC = Cp)
        if (w > 0 && avail >= V) {
          r[i].v = *reinterpret_cast<const uint4*>(x + off);
        } else if (kPad && w == 0) {
          r[i].v = splat(pad);
        } else {
          MC_UNROLL
          for (int e = 0; e < V; ++e) r[i].h[e] = element(w, off + e, e < avail);
        }
      } else {
        MC_UNROLL
        for (int e = 0; e < V; ++e) {
          int off = 0, avail = 0;
          const int w = at(i, k + e, off, avail);
          r[i].h[e] = element(w, off, avail > 0);
        }
      }
    }
  }
  /// Slice k0 to a stage: cp.async of whole 16-byte chunks (kVector), else through registers.
  __device__ __forceinline__ void async(int k0, T* stage) const {
    if constexpr (kVector) {
      MC_UNROLL
      for (int i = 0; i < kCount; ++i) {
        const int c = tid + i * NT;
        int off = 0, avail = 0;
        const int w = at(i, k0 + Map::k(c), off, avail);
        T* dst = stage + Layout::offset(Map::x(c), Map::k(c));
        if (kPad && w == 0 && pad != 0) {
          st_shared(reinterpret_cast<uint4*>(dst), splat(pad));
        } else {
          const int n = w > 0 ? (avail < V ? (avail > 0 ? avail : 0) : V) : 0;
          cp_async_16(dst, w > 0 ? x + off : x, n * static_cast<int>(sizeof(T)));
        }
      }
    } else {
      stage_through_registers(*this, k0, stage);
    }
  }
};

// NoPrologue and ChannelPrologue live in conv.cuh (the pool template applies them too).
using conv::ChannelPrologue;
using conv::NoPrologue;

/// \brief An im2col loader (Base: Im2colLoader of 16-bit elements) whose elements go through the
/// prologue Pro (ChannelPrologue) on their way to shared memory: in registers where they pass
/// through them (load: register staging, element loads), after they land where they are copied
/// with cp.async (land: see "operand prologues" above). Each element is transformed exactly once,
/// and only where at() says it is data (a tap inside the image, a channel below C): the zeros of
/// the padding, the padded channels and the K tail stay zeros, which act(0 scale + shift) is not.
template <class Base, class Pro>
struct ChannelPrologueLoader : Base {
  using T = typename Base::Elem;
  using Regs = typename Base::Regs;
  using Map = typename Base::Map;
  using Layout = typename Base::Layout;
  static_assert(sizeof(T) == 2, "tc::ChannelPrologueLoader: 16-bit operands");
  static constexpr int V = Base::V, kCount = Base::kCount, kNT = Base::kNT, KC = Base::kKC;
  static constexpr bool kLands = Base::kVector;  ///< cp.async copies land raw
  typename Pro::Params pro;
  int img[kCount];  ///< the image of chunk i's pixel

  __device__ __forceinline__ ChannelPrologueLoader(const T* x_, int j0, int tid_, unsigned char pad_,
                                                   const typename Pro::Params& pro_)
      : Base(x_, j0, tid_, pad_), pro(pro_) {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) img[i] = (j0 + Map::x(tid_ + i * kNT)) / Base::O::kSize;
  }

  /// Chunk i of depth k (its first element's) in registers, transformed.
  __device__ __forceinline__ void transform(int i, int k, Regs& r) const {
    if constexpr (Base::kVector) {  // one tap's channels
      int off = 0, avail = 0;
      if (this->at(i, k, off, avail) <= 0) return;
      const int c = k % KC;
      MC_UNROLL
      for (int e = 0; e < V; ++e) {
        if (e < avail) r.h[e] = Pro::apply(pro, r.h[e], img[i], c + e);
      }
    } else {
      MC_UNROLL
      for (int e = 0; e < V; ++e) {
        int off = 0, avail = 0;
        if (this->at(i, k + e, off, avail) > 0 && avail > 0) r.h[e] = Pro::apply(pro, r.h[e], img[i], (k + e) % KC);
      }
    }
  }
  __device__ __forceinline__ void load(int k0, Regs (&r)[kCount]) const {
    Base::load(k0, r);
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) transform(i, k0 + Map::k(this->tid + i * kNT), r[i]);
  }
  /// Slice k0 to a stage: raw cp.async copies (kVector; land transforms them), else through load.
  __device__ __forceinline__ void async(int k0, T* stage) const {
    if constexpr (Base::kVector) {
      Base::async(k0, stage);
    } else {
      stage_through_registers(*this, k0, stage);
    }
  }
  /// After this thread's copies of slice k0 landed in `stage`: its own chunks, transformed in place.
  __device__ __forceinline__ void land(int k0, T* stage) const {
    MC_UNROLL
    for (int i = 0; i < kCount; ++i) {
      const int c = this->tid + i * kNT;
      uint4* p = reinterpret_cast<uint4*>(stage + Layout::offset(Map::x(c), Map::k(c)));
      Regs r;
      r.v = ld_shared(p);
      transform(i, k0 + Map::k(c), r);
      st_shared(p, r.v);
    }
  }
};

// ---- the main loop ----------------------------------------------------------------------------

/// \brief Where lane `lane` points ldmatrix (.x4) for the 16 x (two chunks) block of an operand
/// staged as L (StageLayout) at x0 (rows m of A, columns n of B), k0. Matrix i = lane / 8 is the
/// 8 x chunk quarter (x half, k half) = (i % 2, i / 2) for A (registers a0..a3) and (i / 2, i % 2)
/// for B (b0 b1 of the first n8 tile, then of the second). k-fast staging holds rows of x: lane % 8
/// is the x row, read as is; x-fast staging (16-bit) holds rows of k: lane % 8 is the k row, read
/// with .trans.
template <class L, bool kIsA>
__device__ __forceinline__ int ldmatrix_offset(int lane, int x0, int k0) {
  const int i = lane / 8, r = lane % 8;
  const int xh = kIsA ? i % 2 : i / 2, kh = kIsA ? i / 2 : i % 2;
  return L::kKFast ? L::Layout::offset(x0 + xh * 8 + r, k0 + kh * L::V)
                   : L::Layout::offset(x0 + xh * L::V, k0 + kh * 8 + r);
}

/// \brief acc[i][j] += the warp's m16n8 tiles of A x B over the K slices [s0, s1) (slice s covers
/// k in [s BK, (s + 1) BK)), on the MMA policy Mma with ldmatrix fragment loads, staged by the
/// pipeline policy Tl::Pipeline. Operands: the loaders' Elem (Mma::TA, Mma::TB). `smem`: the
/// pipeline's stages, each A's slice then B's, at stage * kStageBytes (computed, never an array of
/// stage pointers: no local memory). Ends on a barrier, every copy landed: the caller may reuse the
/// shared memory.
template <class Tl, class Mma>
struct Mainloop {
  using Frag = Accum<typename Mma::Acc>;
  template <class LA, class LB>
  static constexpr int stage_bytes() {
    return LA::Layout::kBytes + LB::Layout::kBytes;
  }
  template <class LA, class LB>
  static constexpr int smem_bytes() {
    return Tl::Pipeline::kStages * stage_bytes<LA, LB>();
  }

  template <class LA, class LB>
  __device__ __forceinline__ static void run(const LA& la, const LB& lb, int s0, int s1, unsigned char* smem,
                                             Frag (&acc)[Tl::kFragM][Tl::kFragN]) {
    using TA = typename LA::Elem;
    using TB = typename LB::Elem;
    static_assert(std::is_same<TA, typename Mma::TA>::value && std::is_same<TB, typename Mma::TB>::value,
                  "tc::Mainloop: the loaders' elements are the MMA's operands");
    static_assert(sizeof(TA) == sizeof(TB) && Mma::kK == 2 * LA::V, "tc::Mainloop: an MMA takes two chunks of k");
    static_assert(Tl::kBK % Mma::kK == 0, "tc::Mainloop: BK must be a multiple of the MMA's k");
    static_assert(Mma::kTrans || (LA::kKFast && LB::kKFast), "tc::Mainloop: 8-bit operands are staged k-fast");
    constexpr int kStageBytes = LA::Layout::kBytes + LB::Layout::kBytes;  // stage_bytes (host-only constexpr)
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
    const int a_lane = ldmatrix_offset<LA, true>(lane, wm0, 0), b_lane = ldmatrix_offset<LB, false>(lane, wn0, 0);
    auto a_stage = [&](int stage) { return reinterpret_cast<TA*>(smem + stage * kStageBytes); };
    auto b_stage = [&](int stage) { return reinterpret_cast<TB*>(smem + stage * kStageBytes + LA::Layout::kBytes); };

    auto compute = [&](int stage) {
      const TA* sa = a_stage(stage) + a_lane;
      const TB* sb = b_stage(stage) + b_lane;
      MC_UNROLL
      for (int kk = 0; kk < Tl::kBK; kk += Mma::kK) {
        unsigned a[Tl::kFragM][4], b[Tl::kFragN][2];
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) ldmatrix<4, !LA::kKFast>(a[i], sa + LA::Layout::offset(i * 16, kk));
        MC_UNROLL
        for (int j = 0; j < Tl::kFragN; j += 2) {
          unsigned r[4];
          ldmatrix<4, !LB::kKFast>(r, sb + LB::Layout::offset(j * 8, kk));
          b[j][0] = r[0];
          b[j][1] = r[1];
          b[j + 1][0] = r[2];
          b[j + 1][1] = r[3];
        }
        MC_UNROLL
        for (int i = 0; i < Tl::kFragM; ++i) {
          MC_UNROLL
          for (int j = 0; j < Tl::kFragN; ++j) Mma::mma(acc[i][j], a[i], b[j]);
        }
      }
    };
    Tl::Pipeline::template run<Tl::kBK>(la, lb, s0, s1, a_stage, b_stage, compute);
  }
};

/// \brief The K slices [s0, s1) of split `split` of Tl::kSplitK (whole slices, the last split the
/// remainder; a split past the end has none).
template <class Tl>
__device__ __forceinline__ void split_slices(int k_extent, int split, int& s0, int& s1) {
  const int slices = (k_extent + Tl::kBK - 1) / Tl::kBK;
  const int per = (slices + Tl::kSplitK - 1) / Tl::kSplitK;
  s0 = split * per < slices ? split * per : slices;
  s1 = s0 + per < slices ? s0 + per : slices;
}

// ---- epilogue ---------------------------------------------------------------------------------

/// \brief float -> the stored type; to __half, finite values are clamped to +-65504 first (a cast
/// with clamp: no overflow to infinity; NaN and infinities stay what they are); to bf16 (FP32's
/// range) and float, a cast (bf16 rounds to nearest even).
template <class TY>
__device__ __forceinline__ TY to_output(float v) {
  if constexpr (std::is_same<TY, __half>::value) {
    if (v > 65504.0f && v < INFINITY) v = 65504.0f;
    if (v < -65504.0f && v > -INFINITY) v = -65504.0f;
    return __float2half(v);
  } else {
    return static_cast<TY>(v);
  }
}

/// \brief 8 output values, written element-wise and stored as whole 16-byte vectors.
template <class TY>
union Out8 {
  static_assert((8 * sizeof(TY)) % 16 == 0, "tc::Out8: 8 elements must be whole 16-byte vectors");
  static constexpr int kVectors = static_cast<int>(8 * sizeof(TY) / 16);
  uint4 v[kVectors];
  TY t[8];
};

/// \brief o to dst (16-byte aligned) with 16-byte stores.
template <class TY>
__device__ __forceinline__ void store8(TY* dst, const Out8<TY>& o) {
  MC_UNROLL
  for (int q = 0; q < Out8<TY>::kVectors; ++q) reinterpret_cast<uint4*>(dst)[q] = o.v[q];
}

/// \brief Stores the 8 outputs of channels c .. c + 7 (c a multiple of 8) of a horizontally fused
/// kernel (gemm::EpilogueRanges) where their ranges want them (at(channel, outer, inner)): as one
/// vector when their range allows it (the 8 then lie in it), else one by one; channels >= C are not
/// written.
template <class Epi, int C, class TY>
__device__ __forceinline__ void store_ranges(const typename Epi::Params& p, int c, int outer, int inner,
                                             const Out8<TY>& out) {
  bool vector;
  TY* dst = Epi::at(p, c, outer, inner, &vector);
  if (vector && c + 8 <= C) {
    store8(dst, out);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      if (c + e < C) *Epi::at(p, c + e, outer, inner, &vector) = out.t[e];
    }
  }
}

/// \brief Epi on the 8 accumulators of columns n .. n + 7 of one row (Coord c: the first), kN
/// columns in all: 8 at a time (16-byte operand loads) when the run is whole; element by element
/// otherwise, never past the last column (the epilogue would read bias / residual there). Returns
/// the stored type.
template <class Epi, class Sh, gemm::ChannelAxis kAlong, int kN, class TY>
__device__ __forceinline__ Out8<TY> epilogue8(const typename Epi::Params& p, float (&v)[8], int n,
                                              const gemm::Coord& c, int64_t y_step) {
  Out8<TY> out;
  if (n + 8 <= kN) {
    gemm::apply8<Epi, Sh, kAlong>(p, v, c, y_step);
    MC_UNROLL
    for (int e = 0; e < 8; ++e) out.t[e] = to_output<TY>(v[e]);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      const bool row = kAlong == gemm::ChannelAxis::row;
      const gemm::Coord ce{c.batch, row ? c.row + e : c.row, row ? c.col : c.col + e, c.offset + e * y_step};
      out.t[e] = n + e < kN ? to_output<TY>(static_cast<float>(Epi::template apply<Sh>(p, v[e], ce))) : to_output<TY>(0.0f);
    }
  }
  return out;
}

/// \brief The partial sums and scratch values of accumulators Acc: INT32 for the integer MMA, FP32
/// otherwise (FP16 accumulators are widened).
template <class Acc>
using PartialOf = typename std::conditional<std::is_same<Acc, int>::value, int, float>::type;

/// \brief Two and four values of V (float or int) as one shared-memory access.
template <class V>
struct Vectors;
template <>
struct Vectors<float> {
  using Two = float2;
  using Four = float4;
  __device__ __forceinline__ static float2 two(float a, float b) { return make_float2(a, b); }
};
template <>
struct Vectors<int> {
  using Two = int2;
  using Four = int4;
  __device__ __forceinline__ static int2 two(int a, int b) { return make_int2(a, b); }
};

/// Shared memory of the epilogue's scratch: per warp 16 rows of the warp tile's columns (FP32 or
/// INT32), each padded by 4 (for_each_output).
template <class Tl>
constexpr int scratch_bytes() {
  return Tl::kWarps * 16 * (Tl::kWarpTileN + 4) * 4;
}

/// \brief One warp's band of 16 rows by Cols columns (Cols / 8 m16n8 accumulator fragments in
/// mma.sync's C layout: frag(j, e) is element e of fragment j, at row g + 8 (e / 2), column 8 j + 2 t
/// + e % 2) through the warp's shared scratch (16 rows of Ld values): each lane then takes runs of 8
/// consecutive columns of one row and calls f(row, col, v[8]). The scratch is the warp's own: warp
/// collectives order its accesses.
template <int Cols, int Ld, class V, class Frag, class F>
__device__ __forceinline__ void band_out(const Frag& frag, V* scratch, const F& f) {
  using Vec = Vectors<V>;
  constexpr int kRuns = Cols / 8;
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  MC_UNROLL
  for (int j = 0; j < kRuns; ++j) {
    st_shared(reinterpret_cast<typename Vec::Two*>(scratch + g * Ld + j * 8 + 2 * t), Vec::two(frag(j, 0), frag(j, 1)));
    st_shared(reinterpret_cast<typename Vec::Two*>(scratch + (g + 8) * Ld + j * 8 + 2 * t), Vec::two(frag(j, 2), frag(j, 3)));
  }
  __syncwarp();
  MC_UNROLL
  for (int q = lane; q < 16 * kRuns; q += 32) {
    const int r = q / kRuns, c = (q % kRuns) * 8;
    const typename Vec::Four lo = ld_shared(reinterpret_cast<const typename Vec::Four*>(scratch + r * Ld + c));
    const typename Vec::Four hi = ld_shared(reinterpret_cast<const typename Vec::Four*>(scratch + r * Ld + c + 4));
    V v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    f(r, c, v);
  }
  __syncwarp();
}

/// \brief For each 16-row band of the warp's tile: band_out of its accumulators (FP32, or INT32:
/// exact) through the warp's scratch in smem, f(row, col, v[8]) with block-tile coordinates.
template <class Tl, class Acc, class F>
__device__ __forceinline__ void for_each_output(const Accum<Acc> (&acc)[Tl::kFragM][Tl::kFragN], unsigned char* smem,
                                                F&& f) {
  using V = PartialOf<Acc>;
  constexpr int kLd = Tl::kWarpTileN + 4;  // as scratch_bytes
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int wm0 = (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = (warp % Tl::kWarpsN) * Tl::kWarpTileN;
  V* scratch = reinterpret_cast<V*>(smem) + warp * 16 * kLd;
  MC_UNROLL
  for (int i = 0; i < Tl::kFragM; ++i) {
    band_out<Tl::kWarpTileN, kLd>([&](int j, int e) { return acc[i][j].get(e); }, scratch,
                                  [&](int r, int c, V (&v)[8]) { f(wm0 + i * 16 + r, wn0 + c, v); });
  }
}

/// \brief A split's partial sums (FP32 or INT32), straight from the registers: element (m, n) of the
/// block tile at partial[(m0 + m) * kN + n0 + n] for the rows below kM and columns below kN (8-byte
/// stores of column pairs when kN is even).
template <class Tl, int kM, int kN, class Acc>
__device__ __forceinline__ void store_partial(const Accum<Acc> (&acc)[Tl::kFragM][Tl::kFragN], PartialOf<Acc>* partial,
                                              int m0, int n0) {
  using Vec = Vectors<PartialOf<Acc>>;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int wm0 = m0 + (warp / Tl::kWarpsN) * Tl::kWarpTileM, wn0 = n0 + (warp % Tl::kWarpsN) * Tl::kWarpTileN;
  const int g = lane / 4, t = lane % 4;
  MC_UNROLL
  for (int i = 0; i < Tl::kFragM; ++i) {
    MC_UNROLL
    for (int j = 0; j < Tl::kFragN; ++j) {
      MC_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int m = wm0 + i * 16 + g + 8 * h, n = wn0 + j * 8 + 2 * t;
        if (m >= kM) continue;
        PartialOf<Acc>* dst = partial + static_cast<int64_t>(m) * kN + n;
        if (kN % 2 == 0 && n + 1 < kN) {
          *reinterpret_cast<typename Vec::Two*>(dst) = Vec::two(acc[i][j].get(2 * h), acc[i][j].get(2 * h + 1));
        } else {
          if (n < kN) dst[0] = acc[i][j].get(2 * h);
          if (n + 1 < kN) dst[1] = acc[i][j].get(2 * h + 1);
        }
      }
    }
  }
}

constexpr int max_int(int a, int b) { return a > b ? a : b; }

/// \brief A block's product: the main loop over its split's K slices of A (la, kRows rows from m0) x
/// B (lb, kCols columns from n0), then either the split's partial sums to `partial` (split-K) or,
/// through the scratch, fin(batch, m, n, v[8]) for every run of 8 columns of its rows below kRows.
template <class Tl, class Mma, int kRows, int kCols, class LA, class LB, class Fin>
__device__ __forceinline__ void run_tile(const LA& la, const LB& lb, int k_extent, int split, int batch, int m0, int n0,
                                         PartialOf<typename Mma::Acc>* partial, const Fin& fin) {
  unsigned char* smem = dynamic_smem<unsigned char>();
  Accum<typename Mma::Acc> acc[Tl::kFragM][Tl::kFragN];
  int s0, s1;
  split_slices<Tl>(k_extent, split, s0, s1);
  Mainloop<Tl, Mma>::run(la, lb, s0, s1, smem, acc);
  if constexpr (Tl::kSplitK > 1) {
    store_partial<Tl, kRows, kCols>(acc, partial, m0, n0);
  } else {
    // The main loop ends on a barrier: the staging memory is free for the scratch.
    for_each_output<Tl>(acc, smem, [&](int r, int c, PartialOf<typename Mma::Acc> (&v)[8]) {
      if (m0 + r < kRows) fin(batch, m0 + r, n0 + c, v);
    });
  }
}

/// \brief The second launch of a split-K kernel K (a Gemm or Conv with Tile::kSplitK > 1, here or
/// in tensor_core_int8.cuh): for each run of 8 columns of each row, the splits' partial sums
/// (K::Partial: FP32 or INT32) added in split order (the same bits on every run), then K's epilogue
/// and store (K::finisher). Params are K's.
template <class K>
struct SplitKReduce {
  static constexpr int kThreads = 256;
  static constexpr int kSmemBytes = 0;
  static constexpr int kRuns = (K::kCols + 7) / 8;
  static constexpr int64_t kItems = static_cast<int64_t>(K::kBatches) * K::kRows * kRuns;
  using Params = typename K::Params;
  using V = typename K::Partial;
  static dim3 grid() { return dim3(static_cast<unsigned>((kItems + kThreads - 1) / kThreads)); }
  static dim3 block() { return dim3(kThreads); }
  __device__ static void run(const Params& p) {
    const int64_t item = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
    if (item >= kItems) return;
    const int n = static_cast<int>(item % kRuns) * 8, row = static_cast<int>((item / kRuns) % K::kRows);
    const int batch = static_cast<int>(item / (static_cast<int64_t>(kRuns) * K::kRows));
    constexpr int64_t kSplitStride = static_cast<int64_t>(K::kBatches) * K::kRows * K::kCols;
    const V* src = p.partial + (static_cast<int64_t>(batch) * K::kRows + row) * K::kCols + n;
    V v[8];
    MC_UNROLL
    for (int e = 0; e < 8; ++e) v[e] = V(0);
    for (int s = 0; s < K::Tl::kSplitK; ++s) {
      MC_UNROLL
      for (int e = 0; e < 8; ++e) {
        if (n + e < K::kCols) v[e] += src[s * kSplitStride + e];
      }
    }
    K::finisher(p)(batch, row, n, v);
  }
};

// ---- stores ---------------------------------------------------------------------------------------

/// \brief The epilogue Epi and store of a GEMM's outputs (batch, m, n .. n + 7) in Y (TY, strides SY:
/// rows m, columns n; 16-byte stores where the columns are contiguous and rows and batches lie at
/// multiples of 8 elements; element stores otherwise; a ranged epilogue's own outputs), v the FP32
/// accumulators. Shared by tc::Gemm and the Hopper engine's GEMM.
template <class Sh, class SY, class Epi, class TY>
__device__ __forceinline__ void finish_gemm(const typename Epi::Params& epi, TY* Y, int batch, int m, int n, float (&v)[8],
                                            const int* y_rows = nullptr) {
  constexpr bool kVectorY =
      SY::kCol == 1 && SY::kRow % 8 == 0 && SY::kS0 % 8 == 0 && SY::kS1 % 8 == 0 && SY::kS2 % 8 == 0;
  int64_t row;
  if constexpr (gemm::IsRowMapped<SY>::value) {  // scattered: the table's row, or not written
    const int r = y_rows[batch * Sh::kM + m];
    if (r < 0) return;
    row = static_cast<int64_t>(r) * SY::kRow;
  } else {
    row = SY::template batch_offset<Sh>(batch) + static_cast<int64_t>(m) * SY::kRow;
  }
  const Out8<TY> out = epilogue8<Epi, Sh, gemm::ChannelAxis::column, Sh::kN, TY>(
      epi, v, n, gemm::Coord{batch, m, n, row + static_cast<int64_t>(n) * SY::kCol}, SY::kCol);
  if constexpr (gemm::HasRanges<Epi>::value) {  // a horizontally fused product: the ranges' outputs
    store_ranges<Epi, Sh::kN>(epi, n, batch, m, out);
  } else if (kVectorY && n + 8 <= Sh::kN) {
    store8(Y + row + n, out);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      if (n + e < Sh::kN) Y[row + static_cast<int64_t>(n + e) * SY::kCol] = out.t[e];
    }
  }
}

/// \brief The epilogue Epi and store of a convolution's output channels m .. m + 7 of pixel j in Y
/// (TY, NHWC with channel pitch Yp; 16-byte stores where Yp allows), v the FP32 accumulators; the
/// epilogue sees Coord{0, channel, pixel, offset}. Shared by tc::Conv and the Hopper engine's.
template <class Sh, int Yp, class Epi, class TY>
__device__ __forceinline__ void finish_conv(const typename Epi::Params& epi, TY* Y, int j, int m, float (&v)[8]) {
  using EpiShape = gemm::Shape<1, 1, 1, Sh::kN * Sh::OutDims::kSize, Sh::kM, 1>;  // one batch
  const int row = j * Yp;
  const Out8<TY> out = epilogue8<Epi, EpiShape, gemm::ChannelAxis::row, Sh::kM, TY>(epi, v, m, gemm::Coord{0, m, j, row + m}, 1);
  if constexpr (gemm::HasRanges<Epi>::value) {  // a horizontally fused kernel: the ranges' outputs
    store_ranges<Epi, Sh::kM>(epi, m, j / Sh::OutDims::kSize, j % Sh::OutDims::kSize, out);
  } else if (Yp % 8 == 0 && m + 8 <= Sh::kM) {
    store8(Y + row + m, out);
  } else {
    MC_UNROLL
    for (int e = 0; e < 8; ++e) {
      if (m + e < Sh::kM) Y[row + m + e] = out.t[e];
    }
  }
}

// ---- parameters ----------------------------------------------------------------------------------

/// \brief The parameters of a tensor-core product (the fields the emitted code sets by name): a
/// GEMM's operands A and B or a convolution's X and W (Conv: the second pair's names), the output Y,
/// the epilogue's, and the split-K partial sums (Partial: FP32, or INT32 for 8-bit operands).
template <class TA, class TB, class TY, class Epi, class Partial, bool Conv = false>
struct Params;
template <class TA, class TB, class TY, class Epi, class Partial>
struct Params<TA, TB, TY, Epi, Partial, false> {
  const TA* __restrict__ A = nullptr;
  const TB* __restrict__ B = nullptr;
  TY* __restrict__ Y = nullptr;
  typename Epi::Params epilogue{};
  Partial* __restrict__ partial = nullptr;  ///< split-K only: kSplitK x batch x M x N
};
template <class TX, class TW, class TY, class Epi, class Partial>
struct Params<TX, TW, TY, Epi, Partial, true> {
  const TX* __restrict__ X = nullptr;
  const TW* __restrict__ W = nullptr;
  TY* __restrict__ Y = nullptr;
  typename Epi::Params epilogue{};
  Partial* __restrict__ partial = nullptr;  ///< split-K only: kSplitK x pixels x M
};

// ---- the batched GEMM -------------------------------------------------------------------------

/// \brief Y = Epi(A x B), batched, on tensor cores: A and B of T (__half, or bf16 on sm_80 and newer),
/// Y TY (float, __half or bf16), Acc the accumulator (float, or __half with --fp16-accumulate on
/// __half operands). Shapes and strides as mc::gemm::Gemm
/// (SA: rows m, columns k; SB: rows k, columns n; SY: rows m, columns n). With gemm::EpilogueRanges
/// (a horizontally fused product, one batch dim at most) each column goes to its range's output
/// and SY is unused. Grid: (N tiles, M tiles, batch x splits). A and B must be 16-byte aligned
/// (every buffer of the arena and the weights is). Dynamic shared memory: kSmemBytes (the launch
/// raises the limit above 48 KB). Split-K (Tl::kSplitK > 1): the blocks write FP32 partial sums to
/// Params::partial ([split][batch][M][N]) and SplitKReduce<Gemm> finishes.
template <class T, class TY, class Acc, class Sh, class SA, class SB, class SY, class TileT, class Epi>
struct Gemm {
  using Tl = TileT;
  using Mma = typename Mma16<T, Acc>::type;
  using Partial = float;
  static_assert(!gemm::HasRanges<Epi>::value || (Sh::kB0 == 1 && Sh::kB1 == 1),
                "tc::Gemm: a ranged epilogue addresses one batch dim");
  static constexpr int kThreads = Tl::kThreads;
  /// A gathered A (gemm::RowMapped SA: rows through Params::a_rows) or a scattered Y (SY: through
  /// Params::y_rows).
  static constexpr bool kGatherA = gemm::IsRowMapped<SA>::value, kScatterY = gemm::IsRowMapped<SY>::value;
  static_assert(!kGatherA || SA::kCol == 1, "tc::Gemm: a gathered A has contiguous rows");
  static_assert(!kScatterY || !gemm::HasRanges<Epi>::value, "tc::Gemm: a scattered Y has no ranges");
  using LA = typename std::conditional<
      kGatherA, GatherLoader<T, Sh::kM, Sh::kK, SA::kRow, Tl::kBK, Tl::kBM, kThreads, true>,
      OperandLoader<T, Sh::kM, Sh::kK, SA::kRow, SA::kCol, Tl::kBK, Tl::kBM, kThreads,
                    SA::kS0 % 8 == 0 && SA::kS1 % 8 == 0 && SA::kS2 % 8 == 0>>::type;
  using LB = OperandLoader<T, Sh::kN, Sh::kK, SB::kCol, SB::kRow, Tl::kBK, Tl::kBN, kThreads,
                           SB::kS0 % 8 == 0 && SB::kS1 % 8 == 0 && SB::kS2 % 8 == 0>;
  static constexpr int kSmemBytes = max_int(Mainloop<Tl, Mma>::template smem_bytes<LA, LB>(), scratch_bytes<Tl>());
  /// What SplitKReduce walks: batches of rows of columns.
  static constexpr int kBatches = Sh::kBatch, kRows = Sh::kM, kCols = Sh::kN;
  /// What resnorm::PanelNorm reads: the shape, the rows of a grid row (y), the splits along z.
  using Shape = Sh;
  static constexpr int kPanelRows = Tl::kBM, kSplits = Tl::kSplitK;

  /// With a row table: the tables (int rows, Sh::kBatch x Sh::kM entries each), beside the fields.
  struct RowParams : tc::Params<T, T, TY, Epi, float> {
    const int* __restrict__ a_rows = nullptr;
    const int* __restrict__ y_rows = nullptr;
  };
  using Params = typename std::conditional<kGatherA || kScatterY, RowParams, tc::Params<T, T, TY, Epi, float>>::type;

  static dim3 grid() {
    return dim3((Sh::kN + Tl::kBN - 1) / Tl::kBN, (Sh::kM + Tl::kBM - 1) / Tl::kBM, Sh::kBatch * Tl::kSplitK);
  }
  static dim3 block() { return dim3(kThreads); }

  /// The epilogue and store of outputs (batch, m, n .. n + 7), v the accumulators.
  __device__ __forceinline__ static void finish(const Params& p, int batch, int m, int n, float (&v)[8]) {
    if constexpr (kScatterY) {
      finish_gemm<Sh, SY, Epi>(p.epilogue, p.Y, batch, m, n, v, p.y_rows);
    } else {
      finish_gemm<Sh, SY, Epi>(p.epilogue, p.Y, batch, m, n, v);
    }
  }
  /// The A loader of the block at (batch, m0).
  __device__ __forceinline__ static LA a_loader(const Params& p, int batch, int m0, int tid) {
    if constexpr (kGatherA) {
      return LA(p.A, p.a_rows + static_cast<int64_t>(batch) * Sh::kM, m0, tid);
    } else {
      return LA{p.A + SA::template batch_offset<Sh>(batch), m0, tid};
    }
  }
  /// finish, as run_tile and SplitKReduce call it.
  __device__ __forceinline__ static auto finisher(const Params& p) {
    return [&p](int batch, int m, int n, float (&v)[8]) { finish(p, batch, m, n, v); };
  }

  __device__ static void run(const Params& p) {
    const int batch = static_cast<int>(blockIdx.z) / Tl::kSplitK, split = static_cast<int>(blockIdx.z) % Tl::kSplitK;
    const int m0 = static_cast<int>(blockIdx.y) * Tl::kBM, n0 = static_cast<int>(blockIdx.x) * Tl::kBN;
    const int tid = static_cast<int>(threadIdx.x);
    const LA la = a_loader(p, batch, m0, tid);
    const LB lb{p.B + SB::template batch_offset<Sh>(batch), n0, tid};
    float* partial = nullptr;  // no offset from a null pointer without split-K
    if constexpr (Tl::kSplitK > 1) partial = p.partial + (static_cast<int64_t>(split) * Sh::kBatch + batch) * Sh::kM * Sh::kN;
    run_tile<Tl, Mma, Sh::kM, Sh::kN>(la, lb, Sh::kK, split, batch, m0, n0, partial, finisher(p));
  }
};

// ---- the implicit-GEMM convolution -------------------------------------------------------------

/// \brief A tensor-core convolution on MMA policy Mma, whatever its operands and epilogue (tc::Conv
/// here, tc8::Conv): the implicit GEMM of Sh (rows: output pixels; columns: output channels; depth:
/// taps x Cp, or taps x C in the compact form, W's rows then rounded up to a whole chunk), its
/// loaders (kPad: padding taps read a value, the 8-bit zero point), shared memory, grid (pixel
/// tiles, channel tiles, splits) and a block's product (product: the split's K slices, then the
/// partial sums or fin on every run of 8 outputs).
template <class Mma, class Sh, int Cp, class TileT, bool CompactK, bool kPad = false, class Pro = NoPrologue>
struct ConvBase {
  using Tl = TileT;
  static_assert(Sh::kG == 1, "tc::Conv runs groups = 1 (grouped and depthwise convolutions are SIMT)");
  static_assert(Cp >= Sh::kC, "tc::Conv: a channel pitch below the channel count");
  static constexpr int kThreads = Tl::kThreads;
  static constexpr int kPixels = Sh::kN * Sh::OutDims::kSize;
  static constexpr int kK = Sh::KernelDims::kSize * (CompactK ? Sh::kC : Cp);  ///< the GEMM depth
  static constexpr int kChunk = chunk_elems<sizeof(typename Mma::TA)>();
  static constexpr int kKw = CompactK ? (kK + kChunk - 1) / kChunk * kChunk : kK;  ///< W's row pitch
  using LX = Im2colLoader<typename Mma::TA, Sh, Cp, CompactK ? Sh::kC : Cp, Tl::kBK, Tl::kBM, kThreads, kPad>;
  using LA = typename std::conditional<Pro::kActive, ChannelPrologueLoader<LX, Pro>, LX>::type;
  using LB = OperandLoader<typename Mma::TB, Sh::kM, kK, kKw, 1, Tl::kBK, Tl::kBN, kThreads, true>;
  static constexpr int kSmemBytes = max_int(Mainloop<Tl, Mma>::template smem_bytes<LA, LB>(), scratch_bytes<Tl>());
  /// What SplitKReduce walks: one batch of pixel rows of channel columns.
  static constexpr int kBatches = 1, kRows = kPixels, kCols = Sh::kM;

  static dim3 grid() {
    return dim3((kPixels + Tl::kBM - 1) / Tl::kBM, (Sh::kM + Tl::kBN - 1) / Tl::kBN, Tl::kSplitK);
  }
  static dim3 block() { return dim3(kThreads); }

  /// The A loader of pixel tile j0 (with the prologue's parameters where there is one).
  __device__ __forceinline__ static LA a_loader(const typename Mma::TA* X, int j0, unsigned char pad,
                                                const typename Pro::Params& pro) {
    if constexpr (Pro::kActive) {
      return LA(X, j0, static_cast<int>(threadIdx.x), pad, pro);
    } else {
      return LA(X, j0, static_cast<int>(threadIdx.x), pad);
    }
  }

  template <class Fin>
  __device__ __forceinline__ static void product(const typename Mma::TA* X, const typename Mma::TB* W,
                                                 PartialOf<typename Mma::Acc>* partial, unsigned char pad, const Fin& fin,
                                                 const typename Pro::Params& pro = {}) {
    const int j0 = static_cast<int>(blockIdx.x) * Tl::kBM, m0 = static_cast<int>(blockIdx.y) * Tl::kBN;
    const int split = static_cast<int>(blockIdx.z);
    const LA la = a_loader(X, j0, pad, pro);
    const LB lb{W, m0, static_cast<int>(threadIdx.x)};
    if constexpr (Tl::kSplitK > 1) partial += static_cast<int64_t>(split) * kPixels * Sh::kM;
    run_tile<Tl, Mma, kPixels, Sh::kM>(la, lb, kK, split, 0, j0, m0, Tl::kSplitK > 1 ? partial : nullptr, fin);
  }
};

/// \brief Y = Epi(conv(X, W)) on tensor cores, X and W of T (__half, or bf16 on sm_80 and newer), Y of
/// TY, Acc as tc::Gemm's; groups = 1, NHWC views: X [N][D][H][W][Cp] (channels
/// >= C masked), Y [N][OD][OH][OW][Yp] (channels >= M never written), and W by the K form:
///   padded (CompactK false): K = taps x Cp, W OHWI [M][KD][KH][KW][Cp] (padded channels zero);
///   compact (CompactK true, for C below 8, where a 16-byte chunk of channels is mostly padding):
///     K = taps x C, k = tap x C + c; W rows [M][kKw], kKw = K rounded up to 8 (16-byte rows),
///     element (m, tap x C + c), the tail zero; the last slice's k >= K masked in both operands.
/// Sh: mc::conv::Shape with G = 1. The epilogue sees Coord{0, output channel, pixel, offset in Y}
/// (as the SIMT conv: gemm::EpilogueBias adds bias[channel]); with gemm::EpilogueRanges (a
/// horizontally fused convolution) each channel goes to its range's output. Grid: (pixel tiles,
/// channel tiles, splits).
template <class T, class TY, class Acc, class Sh, int Cp, int Yp, class TileT, class Epi, bool CompactK = false,
          class Pro = NoPrologue>
struct Conv : ConvBase<typename Mma16<T, Acc>::type, Sh, Cp, TileT, CompactK, false, Pro> {
  using Partial = float;
  static_assert(Yp >= Sh::kM, "tc::Conv: an output channel pitch below the channel count");

  /// With a prologue (ChannelPrologue), its parameters in `prologue`.
  struct PrologueParams : tc::Params<T, T, TY, Epi, float, true> {
    typename Pro::Params prologue{};
  };
  using Params = typename std::conditional<Pro::kActive, PrologueParams, tc::Params<T, T, TY, Epi, float, true>>::type;

  /// The epilogue and store of output channels m .. m + 7 of pixel j, v the accumulators.
  __device__ __forceinline__ static void finish(const Params& p, int, int j, int m, float (&v)[8]) {
    finish_conv<Sh, Yp, Epi>(p.epilogue, p.Y, j, m, v);
  }
  /// finish, as run_tile and SplitKReduce call it.
  __device__ __forceinline__ static auto finisher(const Params& p) {
    return [&p](int batch, int j, int m, float (&v)[8]) { finish(p, batch, j, m, v); };
  }

  __device__ static void run(const Params& p) {
    if constexpr (Pro::kActive) {
      Conv::product(p.X, p.W, p.partial, 0, finisher(p), p.prologue);
    } else {
      Conv::product(p.X, p.W, p.partial, 0, finisher(p));
    }
  }
};

/// \brief A kernel of the templates here (Gemm, Conv, SplitKReduce) for the template tests (the emitted
/// code has an entry point per instantiation; the products' with at least 1 block per SM, as here).
template <class K>
__global__ void __launch_bounds__(K::kThreads, 1) kernel(typename K::Params p) {
  K::run(p);
}

}  // namespace tc
}  // namespace mc

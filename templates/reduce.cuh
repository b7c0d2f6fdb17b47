// templates/reduce.cuh — reductions over any set of axes (Reduce*), ArgMax/ArgMin, and the
// machinery the other reduction-shaped templates share (softmax.cuh, normalization.cuh, topk.cuh).
//
// The index model. Every kernel here sees its tensors through one logical split of the input's
// dims into "row" dims (one output row each: the kept dims of a Reduce*, the outer dims of a
// softmax) and "column" dims (what a row reduces over: the reduced axes, the softmax axis). Codegen
// computes, per tensor, a compile-time strided map for each side: Strided<Dims<e...>, Strides<s...>>
// turns a flat C-order index over the side's dims into an element offset. Adjacent dims whose
// strides chain are merged at emit time, so a contiguous side is one dim and the common case is a
// single division-free multiply. Reduced axes that are not contiguous (ReduceSum over axes {0, 2})
// need no copy and no transpose: their map simply has more than one dim. Broadcast operands
// (LayerNormalization's Scale) have stride 0 on the dims they repeat over.
//
// The work split (Tiling<kThreads, kGroup, kLanesContiguous>): a block of kThreads threads serves
// kThreads / kGroup rows; each row belongs to a group of kGroup threads that stride over its
// columns and combine their partial results with warp shuffles (kGroup <= 32, lanes contiguous),
// shuffles plus shared memory (larger groups), or shared memory alone when the group's threads are
// interleaved with other rows' (kLanesContiguous = false: consecutive threads serve consecutive
// rows, which is what coalesces when the rows, not the columns, are contiguous in memory).
//
// Numerics: storage type T is a template parameter; float32 and float16 data are computed in
// FP32, float64 in FP64, integers exactly in int64 (wrapping like a C cast, as the reference does;
// no uint64, whose order is not int64's), and the float-valued reductions of integers (Mean, L2,
// LogSum, LogSumExp) in double, then converted to the integer type with the reference's saturation. Results do not depend on the launch order:
// every combine is done in a fixed tree, so a run is deterministic.
#pragma once

#include "device.h"

#include <stdint.h>

#include <type_traits>

namespace mc {
namespace reduction {

// ---- compile-time index maps -------------------------------------------------------------------

/// \brief A compile-time list of ints: the extents of a map's dims (Dims) or their strides in
/// elements (Strides), outermost first.
template <int... V>
struct Ints {};
template <int... V>
using Dims = Ints<V...>;
template <int... V>
using Strides = Ints<V...>;

/// \brief Flat C-order index over Dims -> element offset with Strides. kSize is the number of
/// indices (the product of the extents; 1 for no dims).
template <class D, class S>
struct Strided;
template <>
struct Strided<Ints<>, Ints<>> {
  static constexpr int kRank = 0;
  static constexpr int kSize = 1;
  static constexpr int kInnerStride = 0;
  __device__ __forceinline__ static int offset(int) { return 0; }
};
template <int E0, int... E, int S0, int... S>
struct Strided<Ints<E0, E...>, Ints<S0, S...>> {
  static_assert(sizeof...(E) == sizeof...(S), "Strided: one stride per dim");
  using Rest = Strided<Ints<E...>, Ints<S...>>;
  static constexpr int kRank = 1 + Rest::kRank;
  static constexpr int kSize = E0 * Rest::kSize;
  /// The stride of the innermost dim (1 when the side is contiguous at its inner end).
  static constexpr int kInnerStride = Rest::kRank == 0 ? S0 : Rest::kInnerStride;
  __device__ __forceinline__ static int offset(int i) {
    if constexpr (Rest::kRank == 0) {
      return i * S0;
    } else {
      return (i / Rest::kSize) * S0 + Rest::offset(i % Rest::kSize);
    }
  }
};
/// The map of no dims (a side with nothing on it: offset 0).
using NoDims = Strided<Ints<>, Ints<>>;

/// \brief A tensor operand: element type, row map and column map.
template <class E, class RowMap, class ColMap = NoDims>
struct Operand {
  using Elem = E;
  using Row = RowMap;
  using Col = ColMap;
  static constexpr bool kPresent = true;
  __device__ __forceinline__ static int offset(int row, int col) { return Row::offset(row) + Col::offset(col); }
};
/// \brief An optional operand that is absent (LayerNormalization without B, no Mean output, ...).
struct Absent {
  using Elem = float;
  using Row = NoDims;
  using Col = NoDims;
  static constexpr bool kPresent = false;
  __device__ __forceinline__ static int offset(int, int) { return 0; }
};

// ---- element types -----------------------------------------------------------------------------

/// \brief Storage type traits: the compute type (FP32 for float and __half storage, FP64 for double,
/// int64 for integers), loads and stores.
template <class T>
struct Elem;
template <>
struct Elem<float> {
  static constexpr bool kFloat = true;
  using Compute = float;
  __device__ __forceinline__ static float load(float v) { return v; }
  __device__ __forceinline__ static float store(float v) { return v; }
};
template <>
struct Elem<__half> {
  static constexpr bool kFloat = true;
  using Compute = float;
  __device__ __forceinline__ static float load(__half v) { return __half2float(v); }
  __device__ __forceinline__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Elem<double> {
  static constexpr bool kFloat = true;
  using Compute = double;
  __device__ __forceinline__ static double load(double v) { return v; }
  __device__ __forceinline__ static double store(double v) { return v; }
};
template <>
struct Elem<bf16> {
  static constexpr bool kFloat = true;
  using Compute = float;
  __device__ __forceinline__ static float load(bf16 v) { return static_cast<float>(v); }
  __device__ __forceinline__ static bf16 store(float v) { return bf16(v); }
};
/// Integer storage: exact int64 arithmetic; stores wrap like a C cast (from_i64) or, from a
/// double, saturate with NaN -> 0 (the reference's from_f64).
template <class I, long long kMin, long long kMax>
struct IntElem {
  static constexpr bool kFloat = false;
  using Compute = long long;
  __device__ __forceinline__ static long long load(I v) { return static_cast<long long>(v); }
  __device__ __forceinline__ static I store(long long v) { return static_cast<I>(v); }
  __device__ __forceinline__ static I store_double(double d) {
    if (d != d) return static_cast<I>(0);
    if (d <= static_cast<double>(kMin)) return static_cast<I>(kMin);
    if (d >= static_cast<double>(kMax)) return static_cast<I>(kMax);
    return static_cast<I>(d);
  }
  static constexpr long long kLowest = kMin;
  static constexpr long long kHighest = kMax;
};
template <>
struct Elem<int8_t> : IntElem<int8_t, -128, 127> {};
template <>
struct Elem<uint8_t> : IntElem<uint8_t, 0, 255> {};
template <>
struct Elem<int16_t> : IntElem<int16_t, -32768, 32767> {};
template <>
struct Elem<uint16_t> : IntElem<uint16_t, 0, 65535> {};
template <>
struct Elem<int32_t> : IntElem<int32_t, -2147483647 - 1, 2147483647> {};
template <>
struct Elem<uint32_t> : IntElem<uint32_t, 0, 4294967295LL> {};
template <>
struct Elem<int64_t> : IntElem<int64_t, -9223372036854775807LL - 1, 9223372036854775807LL> {};
template <>
struct Elem<bool> {
  static constexpr bool kFloat = false;
  using Compute = long long;
  __device__ __forceinline__ static long long load(bool v) { return v ? 1 : 0; }
  __device__ __forceinline__ static bool store(long long v) { return v != 0; }
  __device__ __forceinline__ static bool store_double(double d) { return d != 0.0; }
  static constexpr long long kLowest = 0;
  static constexpr long long kHighest = 1;
};

/// Compute type of a storage type: float (double for double) for floating storage, long long for
/// integers.
template <class T>
using ComputeOf = typename Elem<T>::Compute;

__device__ __forceinline__ bool is_nan(float v) { return v != v; }
__device__ __forceinline__ bool is_nan(double v) { return v != v; }
__device__ __forceinline__ bool is_nan(long long) { return false; }
__device__ __forceinline__ float sqrt_of(float v) { return sqrtf(v); }
__device__ __forceinline__ double sqrt_of(double v) { return sqrt(v); }
__device__ __forceinline__ float log_of(float v) { return logf(v); }
__device__ __forceinline__ double log_of(double v) { return log(v); }
__device__ __forceinline__ float exp_of(float v) { return expf(v); }
__device__ __forceinline__ double exp_of(double v) { return exp(v); }
__device__ __forceinline__ float abs_of(float v) { return fabsf(v); }
__device__ __forceinline__ double abs_of(double v) { return fabs(v); }
template <class F>
__device__ __forceinline__ F infinity_of() {
  return static_cast<F>(INFINITY);
}

// Integer arithmetic that wraps (two's complement) instead of overflowing, as the reference's
// int64 accumulation does.
__device__ __forceinline__ long long wrap_add(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long wrap_mul(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long wrap_abs(long long a) {
  return a < 0 ? static_cast<long long>(0ull - static_cast<unsigned long long>(a)) : a;
}

// ---- warp and group collectives ----------------------------------------------------------------

/// \brief __shfl_xor_sync over the full warp for any trivially copyable type (word by word).
template <class V>
__device__ __forceinline__ V shfl_xor(V v, int lane_mask, int width) {
  if constexpr (std::is_same<V, float>::value || std::is_same<V, double>::value ||
                std::is_same<V, int>::value || std::is_same<V, long long>::value) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
  } else {
    static_assert(sizeof(V) % 4 == 0, "shfl_xor: the type's size must be a multiple of 4 bytes");
    unsigned w[sizeof(V) / 4];
    memcpy(w, &v, sizeof(V));
    MC_UNROLL
    for (int i = 0; i < static_cast<int>(sizeof(V) / 4); ++i) w[i] = __shfl_xor_sync(0xffffffffu, w[i], lane_mask, width);
    memcpy(&v, w, sizeof(V));
    return v;
  }
}

/// \brief How a block's threads are split into groups, one group per row (see the top comment).
/// kThreads: a multiple of 32. kGroup: a power of two dividing kThreads. kLanesContiguous: a
/// group's threads are consecutive (else interleaved: thread t serves row slot t % rows-per-block).
template <int kThreadsV, int kGroupV, bool kLanesContiguousV>
struct Tiling {
  static constexpr int kThreads = kThreadsV;
  static constexpr int kGroup = kGroupV;
  static constexpr bool kLanesContiguous = kLanesContiguousV;
  static constexpr int kRowsPerBlock = kThreads / kGroup;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "Tiling: kThreads must be a multiple of 32, at most 1024");
  static_assert(kGroup >= 1 && (kGroup & (kGroup - 1)) == 0 && kThreads % kGroup == 0,
                "Tiling: kGroup must be a power of two dividing kThreads");
  static_assert(kLanesContiguous || kGroup <= 64, "Tiling: interleaved groups are at most 64 threads");

  /// The thread's lane in its group (0 .. kGroup-1).
  __device__ __forceinline__ static int lane() {
    return kLanesContiguous ? static_cast<int>(threadIdx.x) % kGroup : static_cast<int>(threadIdx.x) / kRowsPerBlock;
  }
  /// The thread's row slot in its block (0 .. kRowsPerBlock-1).
  __device__ __forceinline__ static int slot() {
    return kLanesContiguous ? static_cast<int>(threadIdx.x) / kGroup : static_cast<int>(threadIdx.x) % kRowsPerBlock;
  }
  /// The row the thread serves (may be >= the row count in the last block).
  __device__ __forceinline__ static int row() { return static_cast<int>(blockIdx.x) * kRowsPerBlock + slot(); }

  /// How many Accs all_reduce needs in shared memory.
  static constexpr int kScratch = kGroup == 1 ? 1 : (kLanesContiguous ? (kGroup <= 32 ? 1 : kThreads / 32) : kThreads);

  /// \brief Combines the group's values with `combine` and returns the result to every thread of
  /// the group. Every thread of the block must call it (it may use __syncthreads), with the same
  /// `scratch` (kScratch Accs of shared memory). The combine order is fixed (deterministic); combine
  /// must be commutative and associative on the values it sees.
  template <class Acc, class Combine>
  __device__ __forceinline__ static Acc all_reduce(Acc v, Combine combine, Acc* scratch) {
    if constexpr (kGroup == 1) {
      (void)combine;
      (void)scratch;
      return v;
    } else if constexpr (kLanesContiguous) {
      constexpr int kWidth = kGroup < 32 ? kGroup : 32;
      MC_UNROLL
      for (int m = kWidth / 2; m > 0; m /= 2) v = combine(v, shfl_xor(v, m, kWidth));
      if constexpr (kGroup <= 32) {
        (void)scratch;
        return v;
      } else {
        // One value per warp, then each thread folds its group's warps in order.
        const int warp = static_cast<int>(threadIdx.x) / 32;
        if (threadIdx.x % 32 == 0) scratch[warp] = v;
        __syncthreads();
        constexpr int kWarps = kGroup / 32;
        const int first = (warp / kWarps) * kWarps;
        v = scratch[first];
        MC_UNROLL
        for (int w = 1; w < kWarps; ++w) v = combine(v, scratch[first + w]);
        __syncthreads();  // scratch may be reused right after
        return v;
      }
    } else {
      scratch[threadIdx.x] = v;
      __syncthreads();
      const int s = slot();
      v = scratch[s];
      MC_UNROLL
      for (int l = 1; l < kGroup; ++l) v = combine(v, scratch[l * kRowsPerBlock + s]);
      __syncthreads();
      return v;
    }
  }
};

/// \brief The kernel of every template here: K::run(p) with K's block size as launch bound (the
/// template tests' entry point; the emitted code has one per instantiation).
template <class K>
__global__ void __launch_bounds__(K::kThreads) kernel(typename K::Params p) {
  K::run(p);
}

// ---- Reduce* -----------------------------------------------------------------------------------
//
// An op says how an element enters the accumulator (lift), how two accumulators combine, and how
// the result leaves (finish, given the number of reduced elements). kShifted ops (LogSumExp) first
// reduce the maximum, then lift each element relative to it.

/// Acc for the reductions that are exact on integers (Sum, Prod, Max, Min, L1, SumSquare).
template <class T>
using ExactAcc = ComputeOf<T>;
/// Acc for the float-valued reductions (Mean, L2, LogSum, LogSumExp): the compute type for floats,
/// double for integers (the reference computes them in double, then converts with saturation).
template <class T>
using FloatAcc = std::conditional_t<Elem<T>::kFloat, ComputeOf<T>, double>;

template <class T, class Acc>
__device__ __forceinline__ T store_result(Acc a) {
  if constexpr (Elem<T>::kFloat) {
    return Elem<T>::store(static_cast<ComputeOf<T>>(a));
  } else if constexpr (std::is_same<Acc, double>::value) {
    return Elem<T>::store_double(a);
  } else {
    return Elem<T>::store(a);
  }
}
template <class T, class Acc>
__device__ __forceinline__ Acc load_as(T v) {
  return static_cast<Acc>(Elem<T>::load(v));
}

template <class T>
struct Sum {
  using Acc = ExactAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() { return Acc(0); }
  __device__ static Acc lift(T v) { return load_as<T, Acc>(v); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (Elem<T>::kFloat) return a + b; else return wrap_add(a, b);
  }
  template <class U = T>
  __device__ static U finish(Acc a, int) { return store_result<U>(a); }
};
template <class T>
struct Mean {
  using Acc = FloatAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() { return Acc(0); }
  __device__ static Acc lift(T v) { return load_as<T, Acc>(v); }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  /// An empty reduction gives 0/0 = NaN, as the reference (numpy) does.
  template <class U = T>
  __device__ static U finish(Acc a, int count) { return store_result<U>(a / static_cast<Acc>(count)); }
};
template <class T>
struct Max {
  using Acc = ExactAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() {
    if constexpr (Elem<T>::kFloat) return -infinity_of<Acc>(); else return Elem<T>::kLowest;
  }
  __device__ static Acc lift(T v) { return load_as<T, Acc>(v); }
  /// NaN wins (it propagates, as in the reference).
  __device__ static Acc combine(Acc a, Acc b) { return is_nan(a) ? a : ((is_nan(b) || b > a) ? b : a); }
  template <class U = T>
  __device__ static U finish(Acc a, int) { return store_result<U>(a); }
};
template <class T>
struct Min {
  using Acc = ExactAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() {
    if constexpr (Elem<T>::kFloat) return infinity_of<Acc>(); else return Elem<T>::kHighest;
  }
  __device__ static Acc lift(T v) { return load_as<T, Acc>(v); }
  __device__ static Acc combine(Acc a, Acc b) { return is_nan(a) ? a : ((is_nan(b) || b < a) ? b : a); }
  template <class U = T>
  __device__ static U finish(Acc a, int) { return store_result<U>(a); }
};
template <class T>
struct Prod {
  using Acc = ExactAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() { return Acc(1); }
  __device__ static Acc lift(T v) { return load_as<T, Acc>(v); }
  __device__ static Acc combine(Acc a, Acc b) {
    if constexpr (Elem<T>::kFloat) return a * b; else return wrap_mul(a, b);
  }
  template <class U = T>
  __device__ static U finish(Acc a, int) { return store_result<U>(a); }
};
// L1 and SumSquare are sums of lifted elements: Sum's accumulator, combine and finish.
template <class T>
struct L1 : Sum<T> {
  using Acc = typename Sum<T>::Acc;
  __device__ static Acc lift(T v) {
    if constexpr (Elem<T>::kFloat) return abs_of(load_as<T, Acc>(v)); else return wrap_abs(Elem<T>::load(v));
  }
};
template <class T>
struct SumSquare : Sum<T> {
  using Acc = typename Sum<T>::Acc;
  __device__ static Acc lift(T v) {
    const Acc x = load_as<T, Acc>(v);
    if constexpr (Elem<T>::kFloat) return x * x; else return wrap_mul(x, x);
  }
};
template <class T>
struct L2 {
  using Acc = FloatAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() { return Acc(0); }
  __device__ static Acc lift(T v) {
    const Acc x = load_as<T, Acc>(v);
    return x * x;
  }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  template <class U = T>
  __device__ static U finish(Acc a, int) { return store_result<U>(sqrt_of(a)); }
};
template <class T>
struct LogSum {
  using Acc = FloatAcc<T>;
  static constexpr bool kShifted = false;
  __device__ static Acc init() { return Acc(0); }
  __device__ static Acc lift(T v) { return load_as<T, Acc>(v); }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  template <class U = T>
  __device__ static U finish(Acc a, int) { return store_result<U>(log_of(a)); }
};
/// log(sum(exp(x))) = shift + log(sum(exp(x - shift))), shift = the largest element when it is
/// finite (else 0), so exp never overflows: the reference's formula.
template <class T>
struct LogSumExp {
  using Acc = FloatAcc<T>;
  static constexpr bool kShifted = true;
  __device__ static Acc init() { return Acc(0); }
  __device__ static Acc lift(T v, Acc shift) { return exp_of(load_as<T, Acc>(v) - shift); }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  template <class U = T>
  __device__ static U finish(Acc a, int, Acc shift) { return store_result<U>(shift + log_of(a)); }
};

/// The largest element, NaN ignored (the shift of LogSumExp, the max of Softmax).
template <class Acc>
struct MaxIgnoringNaN {
  __device__ Acc operator()(Acc a, Acc b) const { return b > a ? b : a; }
};

/// \brief Y[row] = Op over the columns of X[row, :]. X = Operand<T, kept dims, reduced dims>,
/// Y = Operand<T, kept dims>, or of another float type than X's (FP16 data, an FP32 result: the
/// accumulator is rounded once, to Y's type). One group of threads per output element.
template <class Op, class X, class Y, class Tile>
struct Reduce {
  using T = typename X::Elem;
  using Acc = typename Op::Acc;
  static constexpr int kRows = X::Row::kSize;
  static constexpr int kCols = X::Col::kSize;
  static constexpr int kThreads = Tile::kThreads;
  static constexpr int kBlocks = (kRows + Tile::kRowsPerBlock - 1) / Tile::kRowsPerBlock;
  static_assert(Y::Row::kSize == kRows, "Reduce: X and Y disagree on the number of rows");
  static dim3 grid() { return dim3(kBlocks); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    const T* x = nullptr;               ///< input
    typename Y::Elem* y = nullptr;      ///< output
  };

  struct Combine {
    __device__ Acc operator()(Acc a, Acc b) const { return Op::combine(a, b); }
  };

  __device__ static void run(const Params& p) {
    __shared__ Acc scratch[Tile::kScratch];
    const int row = Tile::row();
    const bool active = row < kRows;
    // An empty reduction reads nothing, and its input may be a null pointer: not offset then.
    const T* x = active && kCols > 0 ? p.x + X::Row::offset(row) : p.x;
    const int lane = Tile::lane();
    if constexpr (Op::kShifted) {
      Acc m = -infinity_of<Acc>();
      if (active) {
        for (int c = lane; c < kCols; c += Tile::kGroup) m = MaxIgnoringNaN<Acc>()(m, load_as<T, Acc>(x[X::Col::offset(c)]));
      }
      m = Tile::all_reduce(m, MaxIgnoringNaN<Acc>(), scratch);
      const Acc shift = (m - m == Acc(0)) ? m : Acc(0);  // finite max, else 0
      Acc a = Op::init();
      if (active) {
        for (int c = lane; c < kCols; c += Tile::kGroup) a = Op::combine(a, Op::lift(x[X::Col::offset(c)], shift));
      }
      a = Tile::all_reduce(a, Combine(), scratch);
      if (active && lane == 0) p.y[Y::Row::offset(row)] = Op::template finish<typename Y::Elem>(a, kCols, shift);
    } else {
      Acc a = Op::init();
      if (active) {
        for (int c = lane; c < kCols; c += Tile::kGroup) a = Op::combine(a, Op::lift(x[X::Col::offset(c)]));
      }
      a = Tile::all_reduce(a, Combine(), scratch);
      if (active && lane == 0) p.y[Y::Row::offset(row)] = Op::template finish<typename Y::Elem>(a, kCols);
    }
  }
};

// ---- ArgMax / ArgMin ---------------------------------------------------------------------------

/// \brief The best (value, index) so far; index -1 = none yet. NaN never enters: the reference
/// keeps its first element when that is NaN (nothing compares better than NaN) and otherwise
/// skips NaNs, which ArgMinMax::run reproduces by checking element 0.
template <class V>
struct ArgAcc {
  V value;
  int index;
};

/// \brief Y[row] = the index (int64) along the reduced axis of the largest (kMax) or smallest
/// element of X[row, :], the first one on ties (or the last one with kLast: select_last_index).
template <bool kMax, bool kLast, class X, class Y, class Tile>
struct ArgMinMax {
  using T = typename X::Elem;
  using V = ComputeOf<T>;
  using Acc = ArgAcc<V>;
  static constexpr int kRows = X::Row::kSize;
  static constexpr int kCols = X::Col::kSize;
  static constexpr int kThreads = Tile::kThreads;
  static constexpr int kBlocks = (kRows + Tile::kRowsPerBlock - 1) / Tile::kRowsPerBlock;
  static_assert(kCols >= 1, "ArgMinMax: the axis must not be empty");
  static dim3 grid() { return dim3(kBlocks); }
  static dim3 block() { return dim3(kThreads); }

  struct Params {
    const T* x = nullptr;  ///< input
    int64_t* y = nullptr;  ///< output (indices)
  };

  struct Better {
    __device__ Acc operator()(Acc a, Acc b) const {
      if (b.index < 0) return a;
      if (a.index < 0) return b;
      if (a.value != b.value) return (kMax ? b.value > a.value : b.value < a.value) ? b : a;
      return (kLast ? b.index > a.index : b.index < a.index) ? b : a;
    }
  };

  __device__ static void run(const Params& p) {
    __shared__ Acc scratch[Tile::kScratch];
    const int row = Tile::row();
    const bool active = row < kRows;
    const T* x = p.x + (active ? X::Row::offset(row) : 0);
    Acc best{};
    best.index = -1;
    if (active) {
      for (int c = Tile::lane(); c < kCols; c += Tile::kGroup) {
        const V v = Elem<T>::load(x[X::Col::offset(c)]);
        if (is_nan(v)) continue;
        Acc e{};
        e.value = v;
        e.index = c;
        best = Better()(best, e);
      }
    }
    best = Tile::all_reduce(best, Better(), scratch);
    if (active && Tile::lane() == 0) {
      const bool first_nan = is_nan(Elem<T>::load(x[0]));
      p.y[Y::Row::offset(row)] = first_nan || best.index < 0 ? 0 : best.index;
    }
  }
};

}  // namespace reduction
}  // namespace mc

// runtime_stub/host/wmma.h — nvcuda::wmma on the host.
//
// A fragment holds the WHOLE tile in every lane, row-major in x[] (num_elements = rows * cols).
// The CUDA API leaves the element-to-lane mapping opaque, so portable code (fill_fragment, and
// element-wise loops over x[0 .. num_elements) applied the same way in every lane) behaves the same.
// load/store/mma are warp collectives of all 32 lanes: the lanes must pass the same pointer, ldm
// and layout (CUDA requires it); pointers must be 256-bit aligned and ldm a multiple of 16 bytes.
// A missing lane deadlocks and is reported. The race check sees a load or store in shared memory
// as the warp's read or write of the whole tile. mma computes each product exactly, accumulates in
// float (int for 8-bit inputs) in k order, and rounds once to the accumulator type.
// Shapes: m16n16k16, m32n8k16, m8n32k16; a/b: __half, signed char, unsigned char;
// accumulators: float, __half (for __half inputs), int (for 8-bit inputs).
#pragma once

#include <cstring>
#include <string>
#include <type_traits>

#include "engine.h"
#include "half.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

namespace detail {
template <class Use, int m, int n, int k>
struct Tile;
template <int m, int n, int k>
struct Tile<matrix_a, m, n, k> { static constexpr int rows = m, cols = k; };
template <int m, int n, int k>
struct Tile<matrix_b, m, n, k> { static constexpr int rows = k, cols = n; };
template <int m, int n, int k>
struct Tile<accumulator, m, n, k> { static constexpr int rows = m, cols = n; };

constexpr bool valid_shape(int m, int n, int k) {
  return (m == 16 && n == 16 && k == 16) || (m == 32 && n == 8 && k == 16) || (m == 8 && n == 32 && k == 16);
}
template <class Use, class T>
constexpr bool valid_type() {
  return std::is_same<Use, accumulator>::value
             ? (std::is_same<T, float>::value || std::is_same<T, __half>::value || std::is_same<T, int>::value)
             : (std::is_same<T, __half>::value || std::is_same<T, signed char>::value ||
                std::is_same<T, unsigned char>::value);
}
template <class Use, class Layout>
constexpr bool valid_layout() {
  return std::is_same<Use, accumulator>::value
             ? std::is_void<Layout>::value
             : (std::is_same<Layout, row_major>::value || std::is_same<Layout, col_major>::value);
}
template <class T>
struct Identity { using type = T; };
}  // namespace detail

/// \brief A WMMA fragment; here every lane holds the whole tile (see the file comment).
template <class Use, int m, int n, int k, class T, class Layout = void>
class fragment {
  static_assert(detail::valid_shape(m, n, k), "wmma: the shape must be 16x16x16, 32x8x16 or 8x32x16");
  static_assert(detail::valid_type<Use, T>(), "wmma: unsupported element type for this fragment use");
  static_assert(detail::valid_layout<Use, Layout>(),
                "wmma: matrix_a/matrix_b fragments need row_major or col_major; accumulators take no layout");

 public:
  static constexpr int rows = detail::Tile<Use, m, n, k>::rows;
  static constexpr int cols = detail::Tile<Use, m, n, k>::cols;
  enum { num_elements = rows * cols, num_storage_elements = rows * cols };
  typedef T element_type;
  typedef T storage_element_type;
  alignas(8) T x[num_elements];
};

template <class Use, int m, int n, int k, class T, class Layout>
inline void fill_fragment(fragment<Use, m, n, k, T, Layout>& a, const typename detail::Identity<T>::type& v) {
  for (int i = 0; i < a.num_elements; ++i) a.x[i] = v;
}

namespace detail {

struct MemArg {
  void* frag;
  const void* ptr;
  unsigned ldm;
  bool col_major;
};

template <class T>
inline void check_mem(const char* what, const void* ptr, unsigned ldm, int min_ld) {
  if (reinterpret_cast<uintptr_t>(ptr) % 32 != 0)
    mc::host::fault(std::string(what) + ": pointer is not 256-bit aligned");
  if ((static_cast<size_t>(ldm) * sizeof(T)) % 16 != 0)
    mc::host::fault(std::string(what) + ": ldm " + std::to_string(ldm) + " is not a multiple of 16 bytes");
  if (static_cast<int>(ldm) < min_ld)
    mc::host::fault(std::string(what) + ": ldm " + std::to_string(ldm) + " is smaller than the tile (" +
                    std::to_string(min_ld) + ")");
}

inline int first_lane(void* const* args) {
  int l = 0;
  while (!args[l]) ++l;
  return l;
}

inline void check_same_args(const char* what, void* const* args) {
  const MemArg& a0 = *static_cast<MemArg*>(args[first_lane(args)]);
  for (int l = 0; l < 32; ++l) {
    const MemArg& a = *static_cast<MemArg*>(args[l]);
    if (a.ptr != a0.ptr || a.ldm != a0.ldm || a.col_major != a0.col_major)
      mc::host::fault(std::string(what) + ": lane " + std::to_string(l) +
                      " passes a different pointer, ldm or layout than lane 0 (all lanes must pass the same)");
  }
}

// The race check: the warp reads or writes the tile at a.ptr.
template <class Frag>
void track_tile(const MemArg& a, bool write) {
  using T = typename Frag::element_type;
  const size_t line = static_cast<size_t>(a.col_major ? Frag::rows : Frag::cols) * sizeof(T);
  const size_t lines = static_cast<size_t>(a.col_major ? Frag::cols : Frag::rows);
  mc::host::warp_shared_access(-1, a.ptr, line, lines, static_cast<size_t>(a.ldm) * sizeof(T), write);
}

template <class Frag>
void complete_load(void* const* args) {
  using T = typename Frag::element_type;
  check_same_args("wmma::load_matrix_sync", args);
  const MemArg& a0 = *static_cast<MemArg*>(args[0]);
  check_mem<T>("wmma::load_matrix_sync", a0.ptr, a0.ldm, a0.col_major ? Frag::rows : Frag::cols);
  track_tile<Frag>(a0, false);
  Frag& f0 = *static_cast<Frag*>(a0.frag);
  const T* p = static_cast<const T*>(a0.ptr);
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c)
      f0.x[r * Frag::cols + c] = a0.col_major ? p[static_cast<size_t>(c) * a0.ldm + r] : p[static_cast<size_t>(r) * a0.ldm + c];
  for (int l = 1; l < 32; ++l) std::memcpy(static_cast<MemArg*>(args[l])->frag, &f0, sizeof(Frag));
}

template <class Frag>
void complete_store(void* const* args) {
  using T = typename Frag::element_type;
  check_same_args("wmma::store_matrix_sync", args);
  const MemArg& a0 = *static_cast<MemArg*>(args[0]);
  check_mem<T>("wmma::store_matrix_sync", a0.ptr, a0.ldm, a0.col_major ? Frag::rows : Frag::cols);
  track_tile<Frag>(a0, true);
  const Frag& f0 = *static_cast<const Frag*>(a0.frag);
  for (int l = 1; l < 32; ++l)
    if (std::memcmp(static_cast<MemArg*>(args[l])->frag, &f0, sizeof(Frag)) != 0)
      mc::host::fault("wmma::store_matrix_sync: lane " + std::to_string(l) +
                      " holds a different accumulator than lane 0 (lane-dependent element access is not portable)");
  T* p = static_cast<T*>(const_cast<void*>(a0.ptr));
  for (int r = 0; r < Frag::rows; ++r)
    for (int c = 0; c < Frag::cols; ++c)
      (a0.col_major ? p[static_cast<size_t>(c) * a0.ldm + r] : p[static_cast<size_t>(r) * a0.ldm + c]) =
          f0.x[r * Frag::cols + c];
}

struct MmaArg {
  void* d;
  const void* a;
  const void* b;
  const void* c;
  bool satf;
};

inline float to_acc(float v) { return v; }
inline float to_acc(__half v) { return __half2float(v); }
inline int to_acc(int v) { return v; }

template <class Td>
inline Td from_acc(float v, bool satf) {
  if (satf) {
    if (v != v) v = 0.0f;
    const float lim = std::is_same<Td, __half>::value ? 65504.0f : 3.402823466e38f;
    v = v > lim ? lim : v < -lim ? -lim : v;
  }
  return Td(v);
}

template <class FD, class FA, class FB, class FC>
void mma_one(const MmaArg& m, typename FD::element_type* out) {
  const FA& a = *static_cast<const FA*>(m.a);
  const FB& b = *static_cast<const FB*>(m.b);
  const FC& c = *static_cast<const FC*>(m.c);
  constexpr int M = FA::rows, K = FA::cols, N = FB::cols;
  using TA = typename FA::element_type;
  if constexpr (std::is_same<TA, __half>::value) {
    float fa[M * K], fb[K * N];  // converted once; the products are exact in float
    for (int i = 0; i < M * K; ++i) fa[i] = __half2float(a.x[i]);
    for (int i = 0; i < K * N; ++i) fb[i] = __half2float(b.x[i]);
    for (int i = 0; i < M; ++i) {
      float acc[N];  // each element still sums its products in k order: the loop nest only vectorises
      for (int j = 0; j < N; ++j) acc[j] = to_acc(c.x[i * N + j]);
      for (int kk = 0; kk < K; ++kk)
        for (int j = 0; j < N; ++j) acc[j] += fa[i * K + kk] * fb[kk * N + j];
      for (int j = 0; j < N; ++j) out[i * N + j] = from_acc<typename FD::element_type>(acc[j], m.satf);
    }
  } else {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        long long acc = c.x[i * N + j];
        for (int kk = 0; kk < K; ++kk) acc += static_cast<int>(a.x[i * K + kk]) * static_cast<int>(b.x[kk * N + j]);
        if (m.satf) acc = acc > INT32_MAX ? INT32_MAX : acc < INT32_MIN ? INT32_MIN : acc;
        out[i * N + j] = static_cast<int>(static_cast<unsigned long long>(acc));  // wraps without satf
      }
  }
}

// Lanes normally hold identical fragments: compute once and copy; a lane whose inputs differ
// gets its own product.
template <class FD, class FA, class FB, class FC>
void complete_mma(void* const* args) {
  using TD = typename FD::element_type;
  TD first[FD::num_elements];
  const MmaArg& m0 = *static_cast<MmaArg*>(args[0]);
  mma_one<FD, FA, FB, FC>(m0, first);
  for (int l = 1; l < 32; ++l) {
    const MmaArg& m = *static_cast<MmaArg*>(args[l]);
    if (std::memcmp(m.a, m0.a, sizeof(FA)) == 0 && std::memcmp(m.b, m0.b, sizeof(FB)) == 0 &&
        std::memcmp(m.c, m0.c, sizeof(FC)) == 0 && m.satf == m0.satf) {
      std::memcpy(static_cast<FD*>(m.d)->x, first, sizeof first);
    } else {
      TD own[FD::num_elements];
      mma_one<FD, FA, FB, FC>(m, own);
      std::memcpy(static_cast<FD*>(m.d)->x, own, sizeof own);
    }
  }
  std::memcpy(static_cast<FD*>(m0.d)->x, first, sizeof first);  // last: m0.d may alias m0.c
}

}  // namespace detail

#define MC_WMMA_LOC const char *mc_file = __builtin_FILE(), int mc_line = __builtin_LINE()

template <class Use, int m, int n, int k, class T, class Layout>
inline void load_matrix_sync(fragment<Use, m, n, k, T, Layout>& a, const T* p, unsigned ldm, MC_WMMA_LOC) {
  static_assert(!std::is_same<Use, accumulator>::value, "wmma: loading an accumulator needs a layout_t argument");
  using Frag = fragment<Use, m, n, k, T, Layout>;
  detail::MemArg arg{&a, p, ldm, std::is_same<Layout, col_major>::value};
  mc::host::warp_collective_full(&detail::complete_load<Frag>, &arg, "wmma::load_matrix_sync", mc_file, mc_line);
}

template <int m, int n, int k, class T>
inline void load_matrix_sync(fragment<accumulator, m, n, k, T>& a, const T* p, unsigned ldm, layout_t layout, MC_WMMA_LOC) {
  using Frag = fragment<accumulator, m, n, k, T>;
  detail::MemArg arg{&a, p, ldm, layout == mem_col_major};
  mc::host::warp_collective_full(&detail::complete_load<Frag>, &arg, "wmma::load_matrix_sync", mc_file, mc_line);
}

template <int m, int n, int k, class T>
inline void store_matrix_sync(T* p, const fragment<accumulator, m, n, k, T>& a, unsigned ldm, layout_t layout, MC_WMMA_LOC) {
  using Frag = fragment<accumulator, m, n, k, T>;
  detail::MemArg arg{const_cast<Frag*>(&a), p, ldm, layout == mem_col_major};
  mc::host::warp_collective_full(&detail::complete_store<Frag>, &arg, "wmma::store_matrix_sync", mc_file, mc_line);
}

template <int m, int n, int k, class TAB, class LA, class LB, class TD, class TC>
inline void mma_sync(fragment<accumulator, m, n, k, TD>& d, const fragment<matrix_a, m, n, k, TAB, LA>& a,
                     const fragment<matrix_b, m, n, k, TAB, LB>& b, const fragment<accumulator, m, n, k, TC>& c,
                     bool satf = false, MC_WMMA_LOC) {
  constexpr bool half_inputs = std::is_same<TAB, __half>::value;
  static_assert(half_inputs ? !std::is_same<TD, int>::value && !std::is_same<TC, int>::value
                            : std::is_same<TD, int>::value && std::is_same<TC, int>::value,
                "wmma::mma_sync: __half inputs accumulate in float or __half, 8-bit inputs in int");
  using FD = fragment<accumulator, m, n, k, TD>;
  using FA = fragment<matrix_a, m, n, k, TAB, LA>;
  using FB = fragment<matrix_b, m, n, k, TAB, LB>;
  using FC = fragment<accumulator, m, n, k, TC>;
  detail::MmaArg arg{&d, &a, &b, &c, satf};
  mc::host::warp_collective_full(&detail::complete_mma<FD, FA, FB, FC>, &arg, "wmma::mma_sync", mc_file, mc_line);
}

#undef MC_WMMA_LOC

}  // namespace wmma
}  // namespace nvcuda

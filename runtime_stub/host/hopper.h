// runtime_stub/host/hopper.h — Hopper's asynchronous machinery on the host: warpgroups, wgmma with its
// shared-memory matrix descriptors, mbarriers, TMA tensor maps and bulk tensor copies, setmaxnreg,
// the proxy fence, grid flags. The emulation of what device.h declares for nvcc, with the same
// signatures (plus the caller's file and line), exact as the PTX ISA documents each instruction, so
// that a wrong descriptor, a wrong lane, a missing wait or a wait on the wrong phase gives a wrong
// answer or a reported fault here as it would on a GPU — never a right answer by accident:
//
//  - Shared-window addresses (mc::smem_address): dynamic shared memory byte 0 is at address
//    host::kSharedWindowBase (0x480: 128-aligned, not 1024-aligned), so a kernel that does not align
//    its swizzled tiles itself reads a shifted pattern. Only dynamic shared memory is in the window.
//  - wgmma (mc::wgmma_m64k16 / wgmma_m64k32): a collective of the warpgroup's 128 threads, which must
//    give the same descriptors. At issue it reads A (64 x k) and B (k x N) through the descriptors
//    (smem_matrix_address: the canonical K-major and MN-major layouts for each swizzle), then
//    overwrites every thread's accumulator registers with poison (NaN; 0x5eedbad0 for INT32): the
//    result arrives only at the wgmma_wait that covers the operation's commit group, so reading the
//    accumulators before it (or with no wait at all) gives a wrong answer. A wgmma whose registers a
//    pending wgmma writes chains on it (as the hardware does). At completion the operands are read
//    again: if the shared memory changed in between (a stage refilled before the wgmma finished
//    with it) the launch fails. A wgmma with no wgmma_fence since the warpgroup's last wait fails.
//    Products are exact, summed in float (FP16 / BF16) in k order onto D, or exactly in INT32
//    (wrapping) for 8-bit operands.
//  - mbarriers: init, arrive, arrive.expect_tx, try_wait.parity (mc::mbarrier_wait sleeps until the
//    phase of that parity completed); a phase completes when its arrivals are in and the copies
//    (TMA) issued on it cover its expected transaction bytes; the copies land at that moment, and
//    a phase with copies completes only when a thread waits for it: a thread that reads the tile
//    without waiting reads the previous contents (poison at the block's start). A wait that can
//    never be satisfied (the wrong parity, a missing arrival, too few bytes) is a deadlock, reported
//    with each waiter's barrier, parity and state.
//  - TMA (mc::tma_load / tma_store): tiled mode with a host-built mc::TensorMap (make_tensor_map
//    checks cuTensorMapEncodeTiled's documented limits); out-of-bounds elements load as zeros and
//    are not stored; the box is written row after row (the innermost dim a row), swizzled on the
//    shared-window address. A swizzled box's rows must be exactly the swizzle's span here (the
//    driver also accepts narrower rows, whose layout the CUDA documentation does not give).
//  - The proxy check: shared memory written through the generic proxy (st_shared, cp.async) and
//    read by wgmma or a bulk store needs mc::fence_proxy_async in the writing thread in between.
//  - setmaxnreg: a warpgroup collective; the count must lie in 24..256 and be a multiple of 8.
//  - grid flags (stream-K): blocks run in order here, so a block may wait only for a flag an earlier
//    block set; waiting for a later one is reported (a GPU would need both resident).
// Not emulated: clusters (distributed shared memory, TMA multicast), TMA's im2col mode, wgmma with A
// in registers, FP16 accumulators, sparse wgmma.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine.h"
#include "half.h"
#include "intrinsics.h"
#include "runtime_api.h"

#define __grid_constant__

namespace mc {

enum class Swizzle : int;  // device.h: none, b32, b64, b128 (the span in bytes)
struct bf16;

/// \brief The emulation's tensor map: what cuTensorMapEncodeTiled records (device.h: make_tensor_map).
struct alignas(64) TensorMap {
  uint32_t magic = 0;
  int elem_bytes = 0, rank = 0;
  int swizzle = 0;  ///< span in bytes, 0 for none
  const unsigned char* global = nullptr;
  uint64_t dims[5] = {}, strides[5] = {};  ///< strides[i]: bytes between consecutive elements of dim i
  uint32_t box[5] = {}, element_strides[5] = {};
};

namespace host {

constexpr uint32_t kTensorMapMagic = 0x4d435454u;

/// \brief Why the last make_tensor_map on this thread failed ("" when it did not).
inline std::string& tensor_map_error() {
  static thread_local std::string e;
  return e;
}

/// \brief The 16-byte chunk permutation of a swizzle span (0: none) on a shared-window address.
inline unsigned swizzled(unsigned address, int span) {
  if (span == 0) return address;
  const unsigned mask = static_cast<unsigned>(span / 16 - 1);  // 1, 3 or 7
  return address ^ (((address >> 7) & mask) << 4);
}

/// \brief A decoded wgmma matrix descriptor.
struct SmemDesc {
  unsigned start, lbo, sbo, base_offset;
  int span;  ///< swizzle span in bytes, 0 for none
};
inline SmemDesc decode_descriptor(uint64_t d) {
  const unsigned layout = static_cast<unsigned>(d >> 62) & 3u;
  return SmemDesc{static_cast<unsigned>(d & 0x3fffu) << 4, static_cast<unsigned>((d >> 16) & 0x3fffu) << 4,
                  static_cast<unsigned>((d >> 32) & 0x3fffu) << 4, static_cast<unsigned>((d >> 49) & 7u),
                  layout == 1 ? 128 : layout == 2 ? 64 : layout == 3 ? 32 : 0};
}

/// \brief The shared-window address of element (mn, k) of a wgmma operand (rows m of A, or columns n
/// of B) of e-byte elements, as the PTX ISA's canonical layouts place it (T = 16 / e elements in 16
/// bytes; S the swizzle span; offsets in bytes):
///   K-major, no swizzle: 8 x 16-byte core matrices; rows mn % 8 16 bytes apart, the core matrices
///     along mn SBO apart and along k LBO apart.
///   K-major, swizzle S: atoms of 8 rows of S bytes (row mn % 8 at (mn % 8) S, k contiguous within
///     the row), atoms along mn SBO apart; LBO unused (one instruction's 32 bytes of k lie in a row).
///   MN-major, no swizzle: core matrices of T mn-contiguous elements by 8 k rows 16 bytes apart;
///     along mn SBO apart, along k (groups of 8) LBO apart.
///   MN-major, swizzle S: atoms of S bytes of mn (contiguous) by 8 k rows S bytes apart; atoms along
///     mn LBO apart, groups of 8 k SBO apart.
/// The swizzle then permutes the address's 16-byte chunk. Faults on a base offset other than the one
/// the PTX ISA gives for where the pattern starts (0 at its boundary).
inline unsigned smem_matrix_address(const SmemDesc& d, bool mn_major, int e, int mn, int k, const char* what) {
  const unsigned S = static_cast<unsigned>(d.span);
  if (S != 0) {
    const unsigned expected = d.start % (8 * S) < S ? 0u : ((d.start & ~(S - 1)) >> 7) & 7u;
    if (d.base_offset != expected)
      fault(std::string(what) + ": descriptor base offset " + std::to_string(d.base_offset) + " for a " + std::to_string(S) +
            "-byte swizzle pattern at shared-window address " + std::to_string(d.start) + " (the PTX ISA's value there is " +
            std::to_string(expected) + ")");
  }
  unsigned a;
  if (!mn_major) {
    const unsigned kb = static_cast<unsigned>(k * e), r = static_cast<unsigned>(mn);
    a = S == 0 ? d.start + (r / 8) * d.sbo + (kb / 16) * d.lbo + (r % 8) * 16 + kb % 16
               : d.start + (r / 8) * d.sbo + (r % 8) * S + kb;
  } else {
    const unsigned mb = static_cast<unsigned>(mn * e), kk = static_cast<unsigned>(k);
    a = S == 0 ? d.start + (mb / 16) * d.sbo + mb % 16 + (kk % 8) * 16 + (kk / 8) * d.lbo
               : d.start + (mb / S) * d.lbo + mb % S + (kk % 8) * S + (kk / 8) * d.sbo;
  }
  return swizzled(a, static_cast<int>(S));
}

/// \brief The element types of a wgmma: A's and B's bytes as values, the accumulator.
template <class TA, class TB, class Acc>
struct WgmmaTypes {
  static constexpr int kBytes = static_cast<int>(sizeof(TA));
  static constexpr int kK = 32 / kBytes;  // 16 for 16-bit operands, 32 for 8-bit ones
  using Value = typename std::conditional<std::is_same<Acc, int>::value, int64_t, float>::type;
  static Value value(const unsigned char* p, bool is_a) {
    if constexpr (kBytes == 1) {
      const bool is_signed = is_a ? std::is_same<TA, int8_t>::value : true;
      return is_signed ? static_cast<int64_t>(static_cast<int8_t>(*p)) : static_cast<int64_t>(*p);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      if constexpr (std::is_same<TA, bf16>::value) {
        const uint32_t x = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &x, 4);
        return f;
      } else {
        return __half2float(__ushort_as_half(bits));
      }
    }
  }
};

/// \brief One thread's arguments to a wgmma.
struct WgmmaArg {
  void* d;
  uint64_t desc_a, desc_b;
  bool accumulate;
};

/// \brief The poison the accumulators hold while a wgmma is in flight.
template <class Acc>
inline Acc wgmma_poison() {
  if constexpr (std::is_same<Acc, int>::value) {
    return 0x5eedbad0;
  } else {
    return std::nanf("");
  }
}

/// \brief Row and column of accumulator register i of warpgroup thread t (PTX ISA "Matrix
/// Fragments for wgmma.mma_async.m64nNk16", accumulator D): warp w = t / 32 owns rows 16 w ..
/// 16 w + 15; with g = lane / 4, q = lane % 4: row 16 w + g + 8 ((i / 2) % 2), column 8 (i / 4) +
/// 2 q + i % 2 (per 8 columns, mma.sync's m16n8 C layout).
inline void wgmma_d_position(int t, int i, int& row, int& col) {
  const int w = t / 32, lane = t % 32, g = lane / 4, q = lane % 4;
  row = 16 * w + g + 8 * ((i / 2) % 2);
  col = 8 * (i / 4) + 2 * q + i % 2;
}

/// \brief The warpgroup's wgmma: gathers the operands, poisons the accumulators, queues the product.
template <int N, class TA, class TB, class Acc, bool TransA, bool TransB>
void complete_wgmma(void* const* args) {
  using Ty = WgmmaTypes<TA, TB, Acc>;
  using Value = typename Ty::Value;
  constexpr int K = Ty::kK, E = Ty::kBytes, R = N / 2;
  const WgmmaArg& a0 = *static_cast<WgmmaArg*>(args[0]);
  for (int t = 1; t < 128; ++t) {
    const WgmmaArg& x = *static_cast<WgmmaArg*>(args[t]);
    if (x.desc_a != a0.desc_a || x.desc_b != a0.desc_b || x.accumulate != a0.accumulate)
      fault("wgmma.mma_async: thread " + std::to_string(t) + " of the warpgroup gives other descriptors or scale-d than thread 0");
  }
  const SmemDesc da = decode_descriptor(a0.desc_a), db = decode_descriptor(a0.desc_b);
  // Where each element lies; its bytes now.
  std::vector<unsigned> addr_a(64 * K), addr_b(static_cast<size_t>(K) * N);
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < K; ++k) addr_a[m * K + k] = smem_matrix_address(da, TransA, E, m, k, "wgmma.mma_async (A)");
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) addr_b[n * K + k] = smem_matrix_address(db, TransB, E, n, k, "wgmma.mma_async (B)");
  // Its own copy of E: clang 14 will not read the enclosing constexpr E from a lambda without a capture.
  auto read = [](const std::vector<unsigned>& addrs, bool issue) {
    constexpr int kE = Ty::kBytes;
    std::vector<unsigned char> bytes(addrs.size() * kE);
    for (size_t i = 0; i < addrs.size(); ++i) {
      if (addrs[i] % kE != 0) fault("wgmma.mma_async: an element at a misaligned shared-window address");
      const unsigned char* p = shared_window_pointer(addrs[i], kE, "wgmma.mma_async");
      if (issue) async_proxy_read(p, kE, "wgmma.mma_async", nullptr, 0);
      std::memcpy(&bytes[i * kE], p, kE);
    }
    return bytes;
  };
  const std::vector<unsigned char> bytes_a = read(addr_a, true), bytes_b = read(addr_b, true);
  Acc* regs[128];
  for (int t = 0; t < 128; ++t) regs[t] = static_cast<Acc*>(static_cast<WgmmaArg*>(args[t])->d);
  const bool accumulate = a0.accumulate;
  // A wgmma on registers a pending one writes chains on that one's result; else it reads D now.
  const std::shared_ptr<std::vector<Acc>> prev = std::static_pointer_cast<std::vector<Acc>>(wgmma_pending_result(regs[0]));
  auto result = std::make_shared<std::vector<Acc>>(static_cast<size_t>(128) * R);
  std::vector<Acc> input;
  if (accumulate && !prev) {
    input.resize(static_cast<size_t>(128) * R);
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < R; ++i) input[t * R + i] = regs[t][i];
  }
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < R; ++i) regs[t][i] = wgmma_poison<Acc>();
  std::vector<Acc*> lanes(regs, regs + 128);
  auto complete = [=](bool last) {
    if (read(addr_a, false) != bytes_a || read(addr_b, false) != bytes_b)
      fault("wgmma.mma_async: the shared memory of its A or B operand changed between its issue and the wgmma.wait_group "
            "that completed it (a stage refilled before the tensor cores were done with it)");
    std::vector<Value> A(64 * K), B(static_cast<size_t>(K) * N);
    for (int i = 0; i < 64 * K; ++i) A[i] = Ty::value(&bytes_a[i * E], true);
    for (int i = 0; i < K * N; ++i) B[i] = Ty::value(&bytes_b[i * E], false);
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < R; ++i) {
        int m, n;
        wgmma_d_position(t, i, m, n);
        const Acc c = !accumulate ? Acc(0) : prev ? (*prev)[t * R + i] : input[t * R + i];
        Acc out;
        if constexpr (std::is_same<Acc, int>::value) {
          int64_t s = 0;
          for (int k = 0; k < K; ++k) s += A[m * K + k] * B[n * K + k];
          out = static_cast<int>(static_cast<uint32_t>(static_cast<int64_t>(c) + s));  // wraps modulo 2^32
        } else {
          float s = c;
          for (int k = 0; k < K; ++k) s += A[m * K + k] * B[n * K + k];
          out = s;
        }
        (*result)[t * R + i] = out;
        lanes[t][i] = last ? out : wgmma_poison<Acc>();
      }
  };
  wgmma_issue(regs[0], result, complete);
}

}  // namespace host

/// \brief make_tensor_map (device.h) in the emulation: checks what cuTensorMapEncodeTiled documents
/// (rank 1..5; elements of 1, 2 or 4 bytes; a 16-byte aligned base; dims 1..2^32; byte strides
/// multiples of 16 below 2^40; boxes of 1..256 elements whose rows are whole 16 bytes and no wider
/// than the swizzle; traversal steps 1..8) and records the map. cudaErrorInvalidValue otherwise,
/// with the reason in host::tensor_map_error().
inline cudaError_t make_tensor_map(TensorMap* map, int elem_bytes, int rank, const void* global, const uint64_t* dims,
                                   const uint64_t* strides, const uint32_t* box, const uint32_t* element_strides, Swizzle sw) {
  std::string& err = host::tensor_map_error();
  err.clear();
  const int span = static_cast<int>(sw);
  if (rank < 1 || rank > 5) err = "rank " + std::to_string(rank) + " outside 1..5";
  else if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4) err = "elements of " + std::to_string(elem_bytes) + " bytes";
  else if (reinterpret_cast<uintptr_t>(global) % 16 != 0) err = "a global address that is not 16-byte aligned";
  else if (reinterpret_cast<uintptr_t>(map) % 64 != 0) err = "a tensor map that is not 64-byte aligned";
  for (int d = 0; d < rank && err.empty(); ++d) {
    if (dims[d] < 1 || dims[d] > (uint64_t{1} << 32)) err = "dim " + std::to_string(d) + " of " + std::to_string(dims[d]) + " elements";
    else if (d + 1 < rank && (strides[d] % 16 != 0 || strides[d] >= (uint64_t{1} << 40)))
      err = "the byte stride of dim " + std::to_string(d + 1) + " (" + std::to_string(strides[d]) + ") is not a multiple of 16 below 2^40";
    else if (box[d] < 1 || box[d] > 256) err = "box dim " + std::to_string(d) + " of " + std::to_string(box[d]) + " elements";
    else if (element_strides[d] < 1 || element_strides[d] > 8) err = "traversal step " + std::to_string(element_strides[d]) + " in dim " + std::to_string(d);
  }
  if (err.empty() && (box[0] * static_cast<uint32_t>(elem_bytes)) % 16 != 0) err = "box rows that are not whole 16 bytes";
  if (err.empty() && span != 0 && box[0] * static_cast<uint32_t>(elem_bytes) > static_cast<uint32_t>(span))
    err = "box rows wider than the " + std::to_string(span) + "-byte swizzle";
  if (!err.empty()) return cudaErrorInvalidValue;
  *map = TensorMap{};
  map->magic = host::kTensorMapMagic;
  map->elem_bytes = elem_bytes;
  map->rank = rank;
  map->swizzle = span;
  map->global = static_cast<const unsigned char*>(global);
  for (int d = 0; d < rank; ++d) {
    map->dims[d] = dims[d];
    map->strides[d] = d == 0 ? static_cast<uint64_t>(elem_bytes) : strides[d - 1];
    map->box[d] = box[d];
    map->element_strides[d] = element_strides[d];
  }
  return cudaSuccess;
}

/// \brief The shared-window address of p (dynamic shared memory only).
inline unsigned smem_address(const void* p) { return host::shared_window_address(p, "mc::smem_address"); }

inline void fence_proxy_async(MC_CALLER_LOC) {
  (void)mc_file, (void)mc_line;
  host::fence_proxy_async();
}
inline void mbarrier_init(uint64_t* bar, unsigned count, MC_CALLER_LOC) { host::mbarrier_init(bar, count, mc_file, mc_line); }
inline void fence_mbarrier_init() {}
inline void mbarrier_arrive(uint64_t* bar, MC_CALLER_LOC) {
  host::mbarrier_arrive(bar, 1, 0, "mc::mbarrier_arrive", mc_file, mc_line);
}
inline void mbarrier_arrive_expect_tx(uint64_t* bar, unsigned bytes, MC_CALLER_LOC) {
  host::mbarrier_arrive(bar, 1, bytes, "mc::mbarrier_arrive_expect_tx", mc_file, mc_line);
}
inline void mbarrier_wait(uint64_t* bar, unsigned parity, MC_CALLER_LOC) { host::mbarrier_wait(bar, parity, mc_file, mc_line); }

namespace host {

/// The box of `map` at coordinates c: elements per dim, bytes, and the shared-window address of
/// each element (row after row, swizzled) with its global byte offset (-1: out of bounds).
template <int Rank>
void tma_box(const TensorMap& map, unsigned dst, const int (&c)[Rank], std::vector<unsigned>& smem,
             std::vector<int64_t>& global, const char* what) {
  if (map.magic != kTensorMapMagic) fault(std::string(what) + ": not a tensor map made by mc::make_tensor_map");
  if (map.rank != Rank)
    fault(std::string(what) + ": " + std::to_string(Rank) + " coordinates for a tensor map of rank " + std::to_string(map.rank));
  if (dst % 128 != 0) fault(std::string(what) + ": the shared-memory box must be 128-byte aligned");
  int n[5] = {1, 1, 1, 1, 1};
  for (int d = 0; d < Rank; ++d)
    n[d] = d == 0 ? static_cast<int>(map.box[0]) : static_cast<int>((map.box[d] + map.element_strides[d] - 1) / map.element_strides[d]);
  const int row_bytes = n[0] * map.elem_bytes;
  if (map.swizzle != 0 && row_bytes != map.swizzle)
    fault(std::string(what) + ": a " + std::to_string(map.swizzle) + "-byte swizzled box with rows of " + std::to_string(row_bytes) +
          " bytes (the emulation models rows of exactly the span)");
  smem.clear();
  global.clear();
  for (int i4 = 0; i4 < n[4]; ++i4)
    for (int i3 = 0; i3 < n[3]; ++i3)
      for (int i2 = 0; i2 < n[2]; ++i2)
        for (int i1 = 0; i1 < n[1]; ++i1) {
          const int idx[5] = {0, i1, i2, i3, i4};
          const int row = ((i4 * n[3] + i3) * n[2] + i2) * n[1] + i1;
          int64_t off = 0;
          bool inside = true;
          for (int d = 1; d < Rank; ++d) {
            const int64_t g = static_cast<int64_t>(c[d]) + static_cast<int64_t>(idx[d]) * map.element_strides[d];
            inside = inside && g >= 0 && g < static_cast<int64_t>(map.dims[d]);
            off += g * static_cast<int64_t>(map.strides[d]);
          }
          for (int i0 = 0; i0 < n[0]; ++i0) {
            const int64_t g = static_cast<int64_t>(c[0]) + i0;
            const bool in = inside && g >= 0 && g < static_cast<int64_t>(map.dims[0]);
            for (int b = 0; b < map.elem_bytes; ++b) {
              smem.push_back(swizzled(dst + static_cast<unsigned>(row * row_bytes + i0 * map.elem_bytes + b), map.swizzle));
              global.push_back(in ? off + g * map.elem_bytes + b : -1);
            }
          }
        }
}

}  // namespace host

/// \brief cp.async.bulk.tensor tiled load of the box at c into shared memory at dst, completing its
/// bytes on bar (queued: lands when the barrier's phase completes).
template <int Rank>
inline void tma_load(void* dst, const TensorMap* map, uint64_t* bar, const int (&c)[Rank], MC_CALLER_LOC) {
  static_assert(Rank >= 2 && Rank <= 5, "mc::tma_load: rank 2..5");
  std::vector<unsigned> smem;
  std::vector<int64_t> global;
  host::tma_box(*map, host::shared_window_address(dst, "mc::tma_load"), c, smem, global, "mc::tma_load");
  const unsigned char* src = map->global;
  unsigned char* base = host::shared_window_pointer(host::kSharedWindowBase, 0, "mc::tma_load");
  for (unsigned a : smem) host::shared_window_pointer(a, 1, "mc::tma_load");  // the whole box lies in shared memory
  auto land = [smem, global, src, base]() {
    for (size_t i = 0; i < smem.size(); ++i) {
      unsigned char* p = base + (smem[i] - host::kSharedWindowBase);
      *p = global[i] >= 0 ? src[global[i]] : 0;
      host::async_proxy_write(p, 1);
    }
  };
  host::mbarrier_complete_tx_later(bar, static_cast<uint32_t>(smem.size()), land, "mc::tma_load", mc_file, mc_line);
}

/// \brief cp.async.bulk.tensor tiled store of the box at c from shared memory at src (done at the
/// bulk_wait that covers it, reading src then).
template <int Rank>
inline void tma_store(const TensorMap* map, const void* src, const int (&c)[Rank], MC_CALLER_LOC) {
  static_assert(Rank >= 2 && Rank <= 5, "mc::tma_store: rank 2..5");
  std::vector<unsigned> smem;
  std::vector<int64_t> global;
  host::tma_box(*map, host::shared_window_address(src, "mc::tma_store"), c, smem, global, "mc::tma_store");
  unsigned char* base = host::shared_window_pointer(host::kSharedWindowBase, 0, "mc::tma_store");
  for (unsigned a : smem) host::async_proxy_read(host::shared_window_pointer(a, 1, "mc::tma_store"), 1, "mc::tma_store", mc_file, mc_line);
  unsigned char* dst = const_cast<unsigned char*>(map->global);
  host::bulk_issue([smem, global, dst, base]() {
    for (size_t i = 0; i < smem.size(); ++i)
      if (global[i] >= 0) dst[global[i]] = base[smem[i] - host::kSharedWindowBase];
  });
}
inline void bulk_commit() { host::bulk_commit(); }
template <int N>
inline void bulk_wait() {
  host::bulk_wait(N);
}

namespace host {
template <int Which>
void complete_wgmma_control(void* const* args) {
  (void)args;
  if constexpr (Which == 0) wgmma_fence();
  if constexpr (Which == 1) wgmma_commit();
}
template <int N>
void complete_wgmma_wait(void* const*) {
  wgmma_wait(N);
}
struct SetmaxnregArg {
  int count;
  bool inc;
};
inline void complete_setmaxnreg(void* const* args) {
  const SetmaxnregArg& a0 = *static_cast<SetmaxnregArg*>(args[0]);
  for (int t = 1; t < 128; ++t) {
    const SetmaxnregArg& x = *static_cast<SetmaxnregArg*>(args[t]);
    if (x.count != a0.count || x.inc != a0.inc)
      fault("setmaxnreg: thread " + std::to_string(t) + " of the warpgroup asks for another count than thread 0");
  }
}
}  // namespace host

inline void wgmma_fence(MC_CALLER_LOC) {
  host::warpgroup_collective(&host::complete_wgmma_control<0>, nullptr, "mc::wgmma_fence", mc_file, mc_line);
}
inline void wgmma_commit(MC_CALLER_LOC) {
  host::warpgroup_collective(&host::complete_wgmma_control<1>, nullptr, "mc::wgmma_commit", mc_file, mc_line);
}
template <int N>
inline void wgmma_wait(MC_CALLER_LOC) {
  host::warpgroup_collective(&host::complete_wgmma_wait<N>, nullptr, "mc::wgmma_wait", mc_file, mc_line);
}
template <class Acc, int R>
inline void wgmma_fence_operand(Acc (&)[R]) {}

/// \brief wgmma.mma_async m64nNk16, T __half or bf16, FP32 accumulators (see the file comment).
template <int N, class T, bool TransA = false, bool TransB = false>
inline void wgmma_m64k16(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate, MC_CALLER_LOC) {
  static_assert(std::is_same<T, __half>::value || std::is_same<T, bf16>::value, "mc::wgmma_m64k16: __half or bf16");
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "mc::wgmma_m64k16: N a multiple of 8 up to 256");
  host::WgmmaArg arg{d, desc_a, desc_b, accumulate};
  host::warpgroup_collective(&host::complete_wgmma<N, T, T, float, TransA, TransB>, &arg, "mc::wgmma_m64k16", mc_file, mc_line);
}
/// \brief wgmma.mma_async m64nNk32 on 8-bit operands (TA int8_t / uint8_t A, int8 B), INT32 accumulators.
template <int N, class TA>
inline void wgmma_m64k32(int (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate, MC_CALLER_LOC) {
  static_assert(std::is_same<TA, int8_t>::value || std::is_same<TA, uint8_t>::value, "mc::wgmma_m64k32: int8_t or uint8_t A");
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "mc::wgmma_m64k32: N a multiple of 8 up to 256");
  host::WgmmaArg arg{d, desc_a, desc_b, accumulate};
  host::warpgroup_collective(&host::complete_wgmma<N, TA, int8_t, int, false, false>, &arg, "mc::wgmma_m64k32", mc_file, mc_line);
}

template <int R>
inline void setmaxnreg_inc(MC_CALLER_LOC) {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "mc::setmaxnreg: 24..256, a multiple of 8");
  host::SetmaxnregArg arg{R, true};
  host::warpgroup_collective(&host::complete_setmaxnreg, &arg, "mc::setmaxnreg_inc", mc_file, mc_line);
}
template <int R>
inline void setmaxnreg_dec(MC_CALLER_LOC) {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "mc::setmaxnreg: 24..256, a multiple of 8");
  host::SetmaxnregArg arg{R, false};
  host::warpgroup_collective(&host::complete_setmaxnreg, &arg, "mc::setmaxnreg_dec", mc_file, mc_line);
}

inline void grid_flag_set(unsigned* flag, unsigned v) { *flag = v; }
inline void grid_flag_wait(const unsigned* flag, unsigned v, MC_CALLER_LOC) {
  if (*flag != v)
    host::fault("mc::grid_flag_wait at " + std::string(mc_file) + ":" + std::to_string(mc_line) + " waits for a grid flag (value " +
                std::to_string(v) + ", now " + std::to_string(*flag) +
                ") that no earlier block set: blocks run one after another here, so a block may wait only for earlier ones "
                "(on a GPU, only for blocks resident with it)");
}

}  // namespace mc

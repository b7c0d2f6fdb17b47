// runtime_stub/host/intrinsics.h — CUDA device intrinsics on the host: barriers, warp collectives,
// atomics, math, and the mc:: helpers device.h promises (dynamic_smem, cp.async).
//
// Intrinsics that wait take the caller's file and line as hidden defaulted arguments, so the
// emulation's deadlock and divergence messages say where each thread waits.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine.h"
#include "half.h"

#define MC_CALLER_LOC const char *mc_file = __builtin_FILE(), int mc_line = __builtin_LINE()

// cuda_fp16's conversions that involve float2 (half.h has no vector types).
inline float2 __half22float2(__half2 a) { return make_float2(__low2float(a), __high2float(a)); }
inline __half2 __float22half2_rn(float2 a) { return __floats2half2_rn(a.x, a.y); }

// ---- block barriers ------------------------------------------------------------------------------
inline void __syncthreads(MC_CALLER_LOC) { mc::host::block_barrier(0, "__syncthreads", mc_file, mc_line); }
inline int __syncthreads_count(int predicate, MC_CALLER_LOC) {
  return mc::host::block_barrier(predicate != 0, "__syncthreads_count", mc_file, mc_line);
}
inline int __syncthreads_and(int predicate, MC_CALLER_LOC) {
  return mc::host::block_barrier(predicate != 0, "__syncthreads_and", mc_file, mc_line) ==
         static_cast<int>(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int predicate, MC_CALLER_LOC) {
  return mc::host::block_barrier(predicate != 0, "__syncthreads_or", mc_file, mc_line) != 0;
}
// Fibers switch only inside the engine's calls, so memory is always coherent: fences only have to
// stop the compiler from moving accesses.
inline void __threadfence() { __asm__ __volatile__("" ::: "memory"); }
inline void __threadfence_block() { __asm__ __volatile__("" ::: "memory"); }
inline void __threadfence_system() { __asm__ __volatile__("" ::: "memory"); }

// ---- warp collectives ----------------------------------------------------------------------------
inline void __syncwarp(unsigned mask = 0xffffffffu, MC_CALLER_LOC) {
  mc::host::warp_vote(mc::host::vote_sync, mask, 0, "__syncwarp", mc_file, mc_line);
}
inline unsigned __ballot_sync(unsigned mask, int predicate, MC_CALLER_LOC) {
  return mc::host::warp_vote(mc::host::vote_ballot, mask, predicate, "__ballot_sync", mc_file, mc_line).ballot;
}
inline int __any_sync(unsigned mask, int predicate, MC_CALLER_LOC) {
  return mc::host::warp_vote(mc::host::vote_any, mask, predicate, "__any_sync", mc_file, mc_line).ballot != 0;
}
inline int __all_sync(unsigned mask, int predicate, MC_CALLER_LOC) {
  const mc::host::VoteResult r = mc::host::warp_vote(mc::host::vote_all, mask, predicate, "__all_sync", mc_file, mc_line);
  return r.ballot == r.participants;
}
/// \brief The lanes of the warp that exist and have not exited (the emulation has no divergence
/// to report: every lane that has not exited counts as active).
inline unsigned __activemask() { return mc::host::active_mask(); }

namespace mc {
namespace host {
template <class T>
inline T shuffle(int kind, unsigned mask, T v, unsigned b, int width, const char* what, const char* file, int line) {
  static_assert(sizeof(T) <= 8, "shuffles move at most 64 bits");
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const void*>(&v), sizeof(T));
  bits = warp_shuffle(kind, mask, bits, b, width, what, file, line);
  T r;
  std::memcpy(static_cast<void*>(&r), &bits, sizeof(T));
  return r;
}
}  // namespace host
}  // namespace mc

// The overload set of CUDA (cuda_fp16 adds __half and __half2).
#define MC_SHUFFLES(T)                                                                                                 \
  inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, MC_CALLER_LOC) {                     \
    return mc::host::shuffle(mc::host::shuffle_idx, mask, var, static_cast<unsigned>(src_lane), width, "__shfl_sync",   \
                             mc_file, mc_line);                                                                        \
  }                                                                                                                    \
  inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, MC_CALLER_LOC) {                 \
    return mc::host::shuffle(mc::host::shuffle_up, mask, var, delta, width, "__shfl_up_sync", mc_file, mc_line);      \
  }                                                                                                                    \
  inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize, MC_CALLER_LOC) {               \
    return mc::host::shuffle(mc::host::shuffle_down, mask, var, delta, width, "__shfl_down_sync", mc_file, mc_line);  \
  }                                                                                                                    \
  inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, MC_CALLER_LOC) {                \
    return mc::host::shuffle(mc::host::shuffle_xor, mask, var, static_cast<unsigned>(lane_mask), width,                \
                             "__shfl_xor_sync", mc_file, mc_line);                                                     \
  }
MC_SHUFFLES(int)
MC_SHUFFLES(unsigned int)
MC_SHUFFLES(long)
MC_SHUFFLES(unsigned long)
MC_SHUFFLES(long long)
MC_SHUFFLES(unsigned long long)
MC_SHUFFLES(float)
MC_SHUFFLES(double)
MC_SHUFFLES(__half)
MC_SHUFFLES(__half2)
#undef MC_SHUFFLES

// ---- atomics: fibers never switch inside one, so a plain read-modify-write is atomic -------------
#define MC_ATOMIC(name, T, update)                  \
  inline T name(T* address, T val) {                \
    const T old = *address;                         \
    *address = (update);                            \
    return old;                                     \
  }
MC_ATOMIC(atomicAdd, int, old + val)
MC_ATOMIC(atomicAdd, unsigned int, old + val)
MC_ATOMIC(atomicAdd, unsigned long long, old + val)
MC_ATOMIC(atomicAdd, float, old + val)
MC_ATOMIC(atomicAdd, double, old + val)
MC_ATOMIC(atomicAdd, __half, __hadd(old, val))
MC_ATOMIC(atomicAdd, __half2, __hadd2(old, val))
MC_ATOMIC(atomicSub, int, old - val)
MC_ATOMIC(atomicSub, unsigned int, old - val)
MC_ATOMIC(atomicExch, int, val)
MC_ATOMIC(atomicExch, unsigned int, val)
MC_ATOMIC(atomicExch, unsigned long long, val)
MC_ATOMIC(atomicExch, float, val)
MC_ATOMIC(atomicMax, int, old > val ? old : val)
MC_ATOMIC(atomicMax, unsigned int, old > val ? old : val)
MC_ATOMIC(atomicMax, long long, old > val ? old : val)
MC_ATOMIC(atomicMax, unsigned long long, old > val ? old : val)
MC_ATOMIC(atomicMin, int, old < val ? old : val)
MC_ATOMIC(atomicMin, unsigned int, old < val ? old : val)
MC_ATOMIC(atomicMin, long long, old < val ? old : val)
MC_ATOMIC(atomicMin, unsigned long long, old < val ? old : val)
MC_ATOMIC(atomicAnd, int, old & val)
MC_ATOMIC(atomicAnd, unsigned int, old & val)
MC_ATOMIC(atomicAnd, unsigned long long, old & val)
MC_ATOMIC(atomicOr, int, old | val)
MC_ATOMIC(atomicOr, unsigned int, old | val)
MC_ATOMIC(atomicOr, unsigned long long, old | val)
MC_ATOMIC(atomicXor, int, old ^ val)
MC_ATOMIC(atomicXor, unsigned int, old ^ val)
MC_ATOMIC(atomicXor, unsigned long long, old ^ val)
MC_ATOMIC(atomicInc, unsigned int, old >= val ? 0u : old + 1u)
MC_ATOMIC(atomicDec, unsigned int, (old == 0u || old > val) ? val : old - 1u)
#undef MC_ATOMIC
#define MC_ATOMIC_CAS(T)                                \
  inline T atomicCAS(T* address, T compare, T val) {    \
    const T old = *address;                             \
    if (old == compare) *address = val;                 \
    return old;                                         \
  }
MC_ATOMIC_CAS(int)
MC_ATOMIC_CAS(unsigned int)
MC_ATOMIC_CAS(unsigned long long)
MC_ATOMIC_CAS(unsigned short)
#undef MC_ATOMIC_CAS

// ---- math ----------------------------------------------------------------------------------------
// IEEE-exact operations are exact here too. The GPU's approximate intrinsics (__expf, __fdividef,
// rsqrtf, ...) are computed accurately, so they can differ from a GPU by the GPU's error bound.
// glibc declares __expf & co. (extern "C", without exporting them): these inline definitions match.
extern "C" {
inline float __expf(float x) noexcept { return expf(x); }
inline float __exp10f(float x) noexcept { return exp10f(x); }
inline float __logf(float x) noexcept { return logf(x); }
inline float __log2f(float x) noexcept { return log2f(x); }
inline float __log10f(float x) noexcept { return log10f(x); }
inline float __powf(float x, float y) noexcept { return powf(x, y); }
inline float __sinf(float x) noexcept { return sinf(x); }
inline float __cosf(float x) noexcept { return cosf(x); }
inline float __tanf(float x) noexcept { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) noexcept { *s = sinf(x); *c = cosf(x); }
}
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }  // NaN -> 0
inline float rsqrtf(float x) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x))); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float __frsqrt_rn(float x) { return rsqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }

inline int __float_as_int(float x) { int r; std::memcpy(&r, &x, 4); return r; }
inline unsigned int __float_as_uint(float x) { unsigned r; std::memcpy(&r, &x, 4); return r; }
inline float __int_as_float(int x) { float r; std::memcpy(&r, &x, 4); return r; }
inline float __uint_as_float(unsigned int x) { float r; std::memcpy(&r, &x, 4); return r; }
inline long long __double_as_longlong(double x) { long long r; std::memcpy(&r, &x, 8); return r; }
inline double __longlong_as_double(long long x) { double r; std::memcpy(&r, &x, 8); return r; }

namespace mc {
namespace host {
// Float to int conversions saturate and send NaN to 0, like cvt.rni/rzi/rmi/rpi.s32.f32.
inline int float_to_int_sat(float r) {
  if (r != r) return 0;
  if (r >= 2147483648.0f) return INT32_MAX;
  if (r < -2147483648.0f) return INT32_MIN;
  return static_cast<int>(r);
}
}  // namespace host
}  // namespace mc
inline int __float2int_rn(float x) { return mc::host::float_to_int_sat(std::nearbyint(x)); }  // ties to even
inline int __float2int_rz(float x) { return mc::host::float_to_int_sat(std::trunc(x)); }
inline int __float2int_rd(float x) { return mc::host::float_to_int_sat(std::floor(x)); }
inline int __float2int_ru(float x) { return mc::host::float_to_int_sat(std::ceil(x)); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}
template <class T>
inline T __ldg(const T* p) { return *p; }
template <class T>
inline T __ldcg(const T* p) { return *p; }  // ld.global.cg: at L2 (the emulation has one memory)

// CUDA's min/max overloads (global, for device and host code alike).
#define MC_MINMAX(T)                               \
  inline T min(T a, T b) { return a < b ? a : b; } \
  inline T max(T a, T b) { return a > b ? a : b; }
MC_MINMAX(int)
MC_MINMAX(unsigned int)
MC_MINMAX(long long)
MC_MINMAX(unsigned long long)
#undef MC_MINMAX
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }

// ---- mc:: helpers (device.h documents them) ------------------------------------------------------
namespace mc {

template <class T>
inline T* dynamic_smem() { return reinterpret_cast<T*>(host::tl_dynamic_smem); }

// The caller's file and line name the copy in the race check's reports.
inline void cp_async_4(void* smem_dst, const void* gmem_src, MC_CALLER_LOC) {
  host::async_copy(smem_dst, gmem_src, 4, 4, "mc::cp_async_4", mc_file, mc_line);
}
inline void cp_async_8(void* smem_dst, const void* gmem_src, MC_CALLER_LOC) {
  host::async_copy(smem_dst, gmem_src, 8, 8, "mc::cp_async_8", mc_file, mc_line);
}
inline void cp_async_16(void* smem_dst, const void* gmem_src, MC_CALLER_LOC) {
  host::async_copy(smem_dst, gmem_src, 16, 16, "mc::cp_async_16", mc_file, mc_line);
}
inline void cp_async_16(void* smem_dst, const void* gmem_src, int src_bytes, MC_CALLER_LOC) {
  if (src_bytes < 0 || src_bytes > 16) host::fault("cp_async_16: src_bytes " + std::to_string(src_bytes) + " outside [0, 16]");
  host::async_copy(smem_dst, gmem_src, 16, src_bytes, "mc::cp_async_16", mc_file, mc_line);
}
inline void cp_async_commit() { host::async_commit(); }
template <int N>
inline void cp_async_wait() { host::async_wait(N); }
inline void cp_async_wait_all() {
  host::async_commit();
  host::async_wait(0);
}

}  // namespace mc

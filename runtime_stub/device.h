// runtime_stub/device.h — the one header kernel templates include.
//
// Under nvcc (__CUDACC__) it is real CUDA: cuda_runtime.h, cuda_fp16.h, mma.h. With
// MODELC_HOST_EMULATION defined (and g++), it is the host emulation of host/: the same kernel
// source runs exactly on a CPU, each CUDA thread a fiber (see host/engine.h for the rules).
//
// What templates use (CUDA's own names are global, as in CUDA; the rest is in namespace mc):
//   threadIdx blockIdx blockDim gridDim warpSize
//   __syncthreads __syncthreads_count/_and/_or __syncwarp __threadfence(_block)
//   __shfl_sync __shfl_up_sync __shfl_down_sync __shfl_xor_sync __ballot_sync __any_sync __all_sync
//   __activemask
//   atomicAdd (int, unsigned, ull, float, double, __half, __half2) atomicSub atomicExch atomicMin
//   atomicMax atomicAnd atomicOr atomicXor atomicInc atomicDec atomicCAS
//   __half __half2 half half2 and cuda_fp16's functions: __float2half(_rn/_rz/_rd/_ru) __half2float
//   __floats2half2_rn __float2half2_rn __half22float2 __low2float __high2float __low2half
//   __high2half __halves2half2 __half2half2 __hadd __hsub __hmul __hdiv __hfma __hneg __habs
//   __hmax __hmin __heq.. __hge __hisnan __hadd2 __hsub2 __hmul2 __h2div __hfma2 __hmax2 __hmin2
//   __hneg2 __habs2 hsqrt hexp h2exp ..., operators and comparisons
//   expf __expf rsqrtf sqrtf erff tanhf fmaxf fminf __fdividef __saturatef __frcp_rn __fmaf_rn
//   __float_as_int __int_as_float __float2int_rn __popc __clz __ldg __ldcg min max ...
//   nvcuda::wmma: fragment matrix_a matrix_b accumulator row_major col_major mem_row_major
//   mem_col_major load_matrix_sync store_matrix_sync fill_fragment mma_sync
//   __shared__ (static shared memory), __device__ __global__ __forceinline__ __launch_bounds__
//   mc::dynamic_smem<T>()       the block's dynamic shared memory (never `extern __shared__`)
//   mc::launch(kernel, grid, block, dynamic_smem_bytes, stream, args...)   (never <<<>>>)
//   mc::cp_async_4/8/16(smem_dst, gmem_src), mc::cp_async_16(dst, src, src_bytes) (zero-fills
//   the rest), mc::cp_async_commit(), mc::cp_async_wait<N>(), mc::cp_async_wait_all():
//   cp.async on sm_80+, plain copies below sm_80, deferred copies in the emulation
//   mc::ldmatrix<N, Trans>(r, row) mc::mma_m16n8k16(d, a, b, c) mc::mma_m16n8k8(d, a, b, c)
//   mc::mma_m16n8k16_bf16(d, a, b, c): the tensor-core instructions with their PTX per-lane
//   fragment layouts (below); mc::st_shared(p, v)
//   mc::ld_shared(p): shared-memory accesses the emulation's race check sees
//   mc::bf16                    bfloat16 storage, explicit conversions from and to float (below)
//   mc::mma_m16n8k32<TA>(d, a, b, c) mc::mma_m8n8k16<TA>(d, a, b, c): 8-bit tensor-core products
//   (TA int8_t / uint8_t A, int8 B, INT32 accumulators; layouts below)
//   Hopper (sm_90; wgmma and setmaxnreg sm_90a; the emulation: host/hopper.h): mc::smem_address(p)
//   mc::mbarrier_init / arrive / arrive_expect_tx / wait(bar, parity) mc::fence_mbarrier_init()
//   mc::TensorMap mc::make_tensor_map (host) mc::tma_load<Rank>(dst, map, bar, coords)
//   mc::tma_store<Rank>(map, src, coords) mc::bulk_commit() mc::bulk_wait<N>() mc::fence_proxy_async()
//   mc::wgmma_fence() mc::wgmma_commit() mc::wgmma_wait<N>() mc::wgmma_fence_operand(d)
//   mc::wgmma_m64k16<N, T, TransA, TransB>(d, desc_a, desc_b, accumulate) mc::wgmma_m64k32<N, TA>(...)
//   mc::Swizzle mc::wgmma_descriptor(address, lbo, sbo, swizzle) mc::setmaxnreg_inc<R>() _dec<R>()
//   mc::grid_flag_set(flag, v) mc::grid_flag_wait(flag, v)   __grid_constant__
//   mc::lane_id() mc::warp_id() mc::thread_rank()   linear thread numbering helpers
//   MC_UNROLL / MC_UNROLL_N(n)  #pragma unroll that g++ accepts without -Wunknown-pragmas
//   MC_DEVICE_ARCH             __CUDA_ARCH__ in device code, 0 on the host and in the emulation
//   cudaMalloc ... cudaGraphLaunch: the runtime API (host/runtime_api.h lists the emulated subset)
#pragma once

#if defined(__CUDACC__)

#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

#include <cstring>
#include <type_traits>
#include <utility>

#define MC_PRAGMA(x) _Pragma(#x)
#define MC_UNROLL MC_PRAGMA(unroll)
#define MC_UNROLL_N(n) MC_PRAGMA(unroll n)
#if defined(__CUDA_ARCH__)
#define MC_DEVICE_ARCH __CUDA_ARCH__
#else
#define MC_DEVICE_ARCH 0
#endif

#include "wgmma_ptx.h"

namespace mc {

struct bf16;  // below, after the emulation's branch

/// \brief The block's dynamic shared memory (16-byte aligned), as T*.
template <class T>
__device__ __forceinline__ T* dynamic_smem() {
  extern __shared__ __align__(16) unsigned char mc_dynamic_smem[];
  return reinterpret_cast<T*>(mc_dynamic_smem);
}

/// \brief Asynchronous global -> shared copies (cp.async, sm_80+). Below sm_80 they are plain
/// synchronous copies and commit/wait do nothing. Pointers must be aligned to the copy size.
__device__ __forceinline__ void cp_async_4(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(gmem_src));
#else
  *static_cast<unsigned*>(smem_dst) = *static_cast<const unsigned*>(gmem_src);
#endif
}
__device__ __forceinline__ void cp_async_8(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst), "l"(gmem_src));
#else
  *static_cast<uint2*>(smem_dst) = *static_cast<const uint2*>(gmem_src);
#endif
}
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
#else
  *static_cast<uint4*>(smem_dst) = *static_cast<const uint4*>(gmem_src);
#endif
}
/// \brief Copies src_bytes (0..16) and zero-fills the rest of the 16 bytes (boundary tiles).
__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src, int src_bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem_src), "r"(src_bytes));
#else
  unsigned char* d = static_cast<unsigned char*>(smem_dst);
  const unsigned char* s = static_cast<const unsigned char*>(gmem_src);
  for (int i = 0; i < 16; ++i) d[i] = i < src_bytes ? s[i] : 0;
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
/// \brief Waits until at most N of the committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
__device__ __forceinline__ void cp_async_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::);
#endif
}

// ---- tensor-core primitives: ldmatrix and mma.sync (PTX ISA "warp-level matrix instructions") ----
// Fragments are 32-bit registers holding two halves each (the lower half first), laid out per lane
// as the PTX ISA documents them (g = lane / 4, t = lane % 4):
//   ldmatrix .x1/.x2/.x4: lanes 8i .. 8i + 7 give the addresses (16-byte aligned, shared memory) of
//     rows 0..7 of matrix i (x1: lanes 0-7 used, x2: 0-15); register i of lane l receives row l / 4,
//     columns 2 (l % 4), +1 of matrix i; .trans: row 2 (l % 4), +1 of column l / 4 instead.
//   mma m16n8k16 (f16 A row-major, B column-major): A 16x16 in a[0..3]: a0 (g, 2t..2t+1), a1 (g + 8,
//     2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..); B 16x8 in b[0..1]: b0 (k 2t..2t+1, n g), b1
//     (k 2t + 8.., n g); C/D 16x8 FP32 in c[0..3]: c0, c1 (g, 2t..2t+1), c2, c3 (g + 8, 2t..2t+1);
//     FP16 C/D in c[0..1]: c0 (g, 2t..2t+1), c1 (g + 8, 2t..2t+1).
//   mma m16n8k8: A 16x8 in a0 (g, 2t..2t+1), a1 (g + 8, 2t..); B 8x8 in b0 (k 2t..2t+1, n g); C/D
//     as m16n8k16.
// m16n8k16 needs sm_80: compiled for sm_75 it is the two m16n8k8 products of its K halves (the
// same registers: a0 a1 / b0 then a2 a3 / b1), so one template serves every arch.
//   mma m16n8k16 .bf16 (sm_80+): the f16 form's layouts exactly, each 16-bit element a bfloat16
//     (mc::bf16's bits); FP32 C/D only. sm_75 has no BF16 MMA at all: compiled for it, the function
//     traps, and nothing launches it there (the schedule runs a BF16 product's sm_75 variant on a
//     SIMT tile: compiler/schedule/tactics_linear.cpp, tensor_cores_on).

/// \brief The shared-space (32-bit) address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned smem_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// \brief ldmatrix.sync.aligned.m8n8.x{N}[.trans].shared.b16: N 8x8 matrices of halves into r.
template <int N, bool Trans = false>
__device__ __forceinline__ void ldmatrix(unsigned (&r)[N], const void* row) {
  static_assert(N == 1 || N == 2 || N == 4, "mc::ldmatrix: x1, x2 or x4");
  const unsigned a = smem_address(row);
  if constexpr (N == 4 && Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  } else if constexpr (N == 4) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  } else if constexpr (N == 2 && Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  } else if constexpr (N == 2) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  } else if constexpr (Trans) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(a));
  }
}

/// \brief d = a x b + c, m16n8k8, FP16 inputs, FP32 accumulators (sm_75+).
__device__ __forceinline__ void mma_m16n8k8(float (&d)[4], const unsigned (&a)[2], unsigned b, const float (&c)[4]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
/// \brief d = a x b + c, m16n8k8, FP16 inputs and accumulators (sm_75+).
__device__ __forceinline__ void mma_m16n8k8(unsigned (&d)[2], const unsigned (&a)[2], unsigned b, const unsigned (&c)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3}, {%4}, {%5, %6};\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(a[0]), "r"(a[1]), "r"(b), "r"(c[0]), "r"(c[1]));
}
/// \brief d = a x b + c, m16n8k16, FP16 inputs, FP32 accumulators (sm_80+; two m16n8k8 below).
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                             const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  const unsigned lo[2] = {a[0], a[1]}, hi[2] = {a[2], a[3]};
  float t[4];
  mma_m16n8k8(t, lo, b[0], c);
  mma_m16n8k8(d, hi, b[1], t);
#endif
}
/// \brief d = a x b + c, m16n8k16, FP16 inputs and accumulators (sm_80+; two m16n8k8 below).
__device__ __forceinline__ void mma_m16n8k16(unsigned (&d)[2], const unsigned (&a)[4], const unsigned (&b)[2],
                                             const unsigned (&c)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};\n"
               : "=r"(d[0]), "=r"(d[1])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
#else
  const unsigned lo[2] = {a[0], a[1]}, hi[2] = {a[2], a[3]};
  unsigned t[2];
  mma_m16n8k8(t, lo, b[0], c);
  mma_m16n8k8(d, hi, b[1], t);
#endif
}

/// \brief d = a x b + c, m16n8k16, BF16 inputs, FP32 accumulators (sm_80+; see above below it).
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                                  const float (&c)[4]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
#else
  (void)d, (void)a, (void)b, (void)c;
  __trap();  // no BF16 MMA below sm_80; never launched there (see above)
#endif
}

// ---- integer tensor cores: mma.sync with 8-bit operands (PTX ISA "Matrix Fragments for mma.m16n8k32"
// and "for mma.m8n8k16") ----
// Four 8-bit elements per 32-bit register, the lowest k in the low byte (g = lane / 4, t = lane % 4):
//   m16n8k32 (A row-major, B column-major): A 16x32 in a[0..3]: a0 (row g, k 4t..4t+3), a1 (g + 8,
//     4t..), a2 (g, 16 + 4t..), a3 (g + 8, 16 + 4t..); B 32x8 in b[0..1]: b0 (k 4t..4t+3, n g), b1
//     (k 16 + 4t.., n g); C/D 16x8 INT32 in c[0..3]: c0, c1 (g, 2t..2t+1), c2, c3 (g + 8, 2t..2t+1).
//   m8n8k16: A 8x16 in a (row g, k 4t..4t+3); B 16x8 in b (k 4t..4t+3, n g); C/D 8x8 INT32 in
//     c0, c1 (g, 2t..2t+1).
// In bytes, an 8-bit 16x32 A tile is the FP16 16x16 one: ldmatrix.x4 (.b16, no .trans) of rows of k
// loads it exactly (lane l gets bytes 4 (l % 4) .. + 3 of row l / 4). The accumulation wraps modulo
// 2^32 (no .satfinite). m16n8k32 needs sm_80: compiled for sm_75 it is the four m8n8k16 products of
// its row and K halves (a0 b0 then a2 b1 into c0 c1; a1 b0 then a3 b1 into c2 c3).
// mma_m16n8k32<TA>: TA int8_t (.s8) or uint8_t (.u8) for A; B is always .s8.

/// \brief d = a x b + c, m8n8k16, 8-bit A (TA: int8_t .s8 / uint8_t .u8), int8 B, INT32 (sm_75+).
template <class TA>
__device__ __forceinline__ void mma_m8n8k16(int (&d)[2], unsigned a, unsigned b, const int (&c)[2]) {
  static_assert(std::is_same<TA, int8_t>::value || std::is_same<TA, uint8_t>::value, "mc::mma_m8n8k16: int8_t or uint8_t A");
  if constexpr (std::is_same<TA, int8_t>::value) {
    asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%0, %1}, {%2}, {%3}, {%4, %5};\n"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a), "r"(b), "r"(c[0]), "r"(c[1]));
  } else {
    asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.u8.s8.s32 {%0, %1}, {%2}, {%3}, {%4, %5};\n"
                 : "=r"(d[0]), "=r"(d[1])
                 : "r"(a), "r"(b), "r"(c[0]), "r"(c[1]));
  }
}
/// \brief d = a x b + c, m16n8k32, 8-bit A (TA), int8 B, INT32 accumulators (sm_80+; four m8n8k16 below).
template <class TA>
__device__ __forceinline__ void mma_m16n8k32(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                             const int (&c)[4]) {
  static_assert(std::is_same<TA, int8_t>::value || std::is_same<TA, uint8_t>::value, "mc::mma_m16n8k32: int8_t or uint8_t A");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<TA, int8_t>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};\n"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
  }
#else
  const int top[2] = {c[0], c[1]}, bottom[2] = {c[2], c[3]};
  int t[2], u[2];
  mma_m8n8k16<TA>(t, a[0], b[0], top);
  mma_m8n8k16<TA>(t, a[2], b[1], t);
  mma_m8n8k16<TA>(u, a[1], b[0], bottom);
  mma_m8n8k16<TA>(u, a[3], b[1], u);
  d[0] = t[0];
  d[1] = t[1];
  d[2] = u[0];
  d[3] = u[1];
#endif
}

// ---- Hopper (sm_90; wgmma and setmaxnreg: sm_90a) ----------------------------------------------
// Compiled for an older arch (or plain sm_90 for the sm_90a instructions) these trap: nothing launches
// a Hopper kernel there (the runtime checks the device at create). The PTX ISA sections they follow:
// "mbarrier", "cp.async.bulk.tensor", "Asynchronous Warpgroup Level Matrix Multiply-Accumulate",
// "setmaxnreg", "membar/fence". What the emulation checks of each: host/hopper.h.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define MC_SM90 1
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MC_SM90A 1
#endif
#endif

/// \brief A TMA tensor map (CUtensorMap: 128 bytes, 64-byte aligned), built on the host
/// (make_tensor_map) and passed to kernels inside a __grid_constant__ parameter. (Before CUDA 12 an
/// opaque stand-in: make_tensor_map then says cudaErrorNotSupported.)
#if CUDA_VERSION >= 12000
using TensorMap = CUtensorMap;
#else
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};
#endif

/// \brief fence.proxy.async.shared::cta: this thread's generic-proxy shared-memory writes become
/// visible to the async proxy (TMA, wgmma) — before the barrier that hands them over.
__device__ __forceinline__ void fence_proxy_async() {
#if defined(MC_SM90)
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#else
  __trap();
#endif
}

/// \brief mbarrier.init: an mbarrier (8 bytes of shared memory) expecting `count` arrivals a phase.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, unsigned count) {
#if defined(MC_SM90)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory");
#else
  (void)bar, (void)count;
  __trap();
#endif
}
/// \brief fence.mbarrier_init: the initialised mbarriers become visible to the async proxy (TMA's
/// complete_tx); then a block barrier before anyone uses them.
__device__ __forceinline__ void fence_mbarrier_init() {
#if defined(MC_SM90)
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#else
  __trap();
#endif
}
/// \brief mbarrier.arrive: one arrival on the current phase.
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if defined(MC_SM90)
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
#else
  (void)bar;
  __trap();
#endif
}
/// \brief mbarrier.arrive.expect_tx: one arrival, and `bytes` more transaction bytes expected (the
/// TMA copies of this phase complete them).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, unsigned bytes) {
#if defined(MC_SM90)
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(bar)), "r"(bytes) : "memory");
#else
  (void)bar, (void)bytes;
  __trap();
#endif
}
/// \brief Waits until the phase of the given parity has completed (mbarrier.try_wait.parity in a
/// loop: the phase in progress has the other parity).
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, unsigned parity) {
#if defined(MC_SM90)
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
  __trap();
#endif
}

/// \brief cp.async.bulk.tensor (tiled): the box of `map` at coordinates c (innermost first) into
/// shared memory at dst (128-byte aligned), completing its bytes on `bar`. Out-of-bounds elements
/// are zeros. Rank 2..5: the number of coordinates.
template <int Rank>
__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, uint64_t* bar, const int (&c)[Rank]) {
  static_assert(Rank >= 2 && Rank <= 5, "mc::tma_load: rank 2..5");
#if defined(MC_SM90)
  const unsigned d = smem_address(dst), b = smem_address(bar);
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  if constexpr (Rank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (Rank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (Rank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n"
                 ::"r"(d), "l"(m), "r"(b), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
#else
  (void)dst, (void)map, (void)bar, (void)c;
  __trap();
#endif
}
/// \brief cp.async.bulk.tensor (tiled) store: the box at coordinates c from shared memory at src
/// (laid out as tma_load writes it) to `map`'s tensor; elements out of bounds are not written. One
/// bulk group per bulk_commit; bulk_wait<N> waits until at most N groups are still reading src.
template <int Rank>
__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, const int (&c)[Rank]) {
  static_assert(Rank >= 2 && Rank <= 5, "mc::tma_store: rank 2..5");
#if defined(MC_SM90)
  const unsigned s = smem_address(src);
  const unsigned long long m = reinterpret_cast<unsigned long long>(map);
  if constexpr (Rank == 2) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]) : "memory");
  } else if constexpr (Rank == 3) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]) : "memory");
  } else if constexpr (Rank == 4) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]) : "memory");
  } else {
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];\n" ::"l"(m), "r"(s), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]) : "memory");
  }
#else
  (void)map, (void)src, (void)c;
  __trap();
#endif
}
__device__ __forceinline__ void bulk_commit() {
#if defined(MC_SM90)
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#else
  __trap();
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
#if defined(MC_SM90)
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#else
  __trap();
#endif
}

/// \brief wgmma.fence: before a warpgroup's first wgmma and after its accumulators were touched.
__device__ __forceinline__ void wgmma_fence() {
#if defined(MC_SM90A)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
/// \brief wgmma.commit_group: the warpgroup's uncommitted wgmma operations become one group.
__device__ __forceinline__ void wgmma_commit() {
#if defined(MC_SM90A)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#else
  __trap();
#endif
}
/// \brief wgmma.wait_group N: until at most N committed groups are pending. The accumulators of the
/// groups it covers may be read only after it (then wgmma_fence_operand on them).
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#if defined(MC_SM90A)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#else
  __trap();
#endif
}
/// \brief Keeps the compiler from moving accesses of the accumulator registers across the wgmma
/// instructions around it (it sees no dependence between them and wgmma.wait_group).
template <class Acc, int R>
__device__ __forceinline__ void wgmma_fence_operand(Acc (&d)[R]) {
  MC_UNROLL
  for (int i = 0; i < R; ++i) {
    if constexpr (sizeof(Acc) == 4 && std::is_same<Acc, float>::value) {
      asm volatile("" : "+f"(d[i])::"memory");
    } else {
      asm volatile("" : "+r"(d[i])::"memory");
    }
  }
}
/// \brief wgmma.mma_async m64nNk16: d (64 x N, FP32, the warpgroup's fragments: thread t of the
/// warpgroup holds d[i] at row 16 (t / 32) + g + 8 ((i / 2) % 2), column 8 (i / 4) + 2 q + i % 2,
/// g = lane / 4, q = lane % 4) = A (64 x 16) x B (16 x N) (+ d when accumulate), T __half or bf16; A and B in
/// shared memory by their descriptors (TransA: A M-major, else K-major; TransB: B N-major, else
/// K-major). Asynchronous: complete at the wgmma_wait that covers its commit group.
template <int N, class T, bool TransA = false, bool TransB = false>
__device__ __forceinline__ void wgmma_m64k16(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  static_assert(std::is_same<T, __half>::value || std::is_same<T, bf16>::value, "mc::wgmma_m64k16: __half or bf16");
#if defined(MC_SM90A)
  if constexpr (std::is_same<T, __half>::value) {
    ptx::Wgmma<N>::template f16<TransA ? 1 : 0, TransB ? 1 : 0>(d, desc_a, desc_b, accumulate ? 1 : 0);
  } else {
    ptx::Wgmma<N>::template bf16<TransA ? 1 : 0, TransB ? 1 : 0>(d, desc_a, desc_b, accumulate ? 1 : 0);
  }
#else
  (void)d, (void)desc_a, (void)desc_b, (void)accumulate;
  __trap();
#endif
}
/// \brief wgmma.mma_async m64nNk32 on 8-bit operands: d (INT32) = A (64 x 32, TA int8_t .s8 or
/// uint8_t .u8) x B (32 x N, int8) (+ d); both K-major (8-bit operands cannot be transposed).
template <int N, class TA>
__device__ __forceinline__ void wgmma_m64k32(int (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  static_assert(std::is_same<TA, int8_t>::value || std::is_same<TA, uint8_t>::value, "mc::wgmma_m64k32: int8_t or uint8_t A");
#if defined(MC_SM90A)
  if constexpr (std::is_same<TA, int8_t>::value) {
    ptx::Wgmma<N>::s8(d, desc_a, desc_b, accumulate ? 1 : 0);
  } else {
    ptx::Wgmma<N>::u8(d, desc_a, desc_b, accumulate ? 1 : 0);
  }
#else
  (void)d, (void)desc_a, (void)desc_b, (void)accumulate;
  __trap();
#endif
}
/// \brief setmaxnreg.inc / .dec: the warpgroup's registers per thread become R (24..256, a multiple of
/// 8). Effective only with a register cap at entry (__launch_bounds__(threads, 1)).
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "mc::setmaxnreg: 24..256, a multiple of 8");
#if defined(MC_SM90A)
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
#else
  __trap();
#endif
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(R >= 24 && R <= 256 && R % 8 == 0, "mc::setmaxnreg: 24..256, a multiple of 8");
#if defined(MC_SM90A)
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
#else
  __trap();
#endif
}

/// \brief Grid flags (stream-K's hand-over between blocks of one launch): set releases the block's
/// earlier global writes with the flag; wait spins until the flag holds v, acquiring them. Only
/// blocks resident together may wait for each other (a persistent grid).
__device__ __forceinline__ void grid_flag_set(unsigned* flag, unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(v) : "memory");
#else
  *flag = v;
#endif
}
__device__ __forceinline__ void grid_flag_wait(const unsigned* flag, unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
  unsigned x;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(x) : "l"(flag) : "memory");
  } while (x != v);
#else
  while (*static_cast<const volatile unsigned*>(flag) != v) {
  }
#endif
}

/// \brief A shared-memory store and load that the emulation's race check sees (plain accesses on a
/// GPU). Templates touch shared memory only through these, cp.async and ldmatrix.
template <class T>
__device__ __forceinline__ void st_shared(T* p, const T& v) {
  *p = v;
}
template <class T>
__device__ __forceinline__ T ld_shared(const T* p) {
  return *p;
}

/// \brief Launches kernel<<<grid, block, dynamic_smem_bytes, stream>>>(args...) and returns the
/// launch error (cudaGetLastError).
template <class... KArgs, class... Args>
inline cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t dynamic_smem_bytes,
                          cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args), "mc::launch: wrong number of kernel arguments");
  kernel<<<grid, block, dynamic_smem_bytes, stream>>>(std::forward<Args>(args)...);
  return cudaGetLastError();
}

}  // namespace mc

#elif defined(MODELC_HOST_EMULATION)

#include "host/emulation.h"

#define MC_PRAGMA(x) _Pragma(#x)
#define MC_UNROLL
#define MC_UNROLL_N(n)
#define MC_DEVICE_ARCH 0

#else
#error "runtime_stub/device.h: compile with nvcc, or define MODELC_HOST_EMULATION for the host emulation"
#endif

namespace mc {

/// \brief bfloat16 storage: the upper 16 bits of a float32 (8 exponent bits, 7 mantissa bits).
/// Conversions only, both explicit, as cuda_bf16.h's are used: arithmetic goes through float
/// (static_cast<float>(x), static_cast<bf16>(f)), so a template written for float or __half
/// storage takes bf16 unchanged. float -> bf16 rounds to nearest even, and a NaN stays a quiet NaN
/// of its sign: compiler/ir/dtype.cpp's float_to_bfloat16 bit for bit, on the GPU and in the
/// emulation alike (integer arithmetic on the bits; no cvt.rn.bf16.f32, whose NaN is canonical).
/// Trivial (a union member, a __shared__ array element): `bits` is the whole state.
struct bf16 {
  unsigned short bits;
  bf16() = default;
  __host__ __device__ __forceinline__ explicit bf16(float f) : bits(round(f)) {}
  __host__ __device__ __forceinline__ explicit operator float() const {
    const unsigned x = static_cast<unsigned>(bits) << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
  }
  __host__ __device__ __forceinline__ static bf16 from_bits(unsigned short b) {
    bf16 r;
    r.bits = b;
    return r;
  }
  /// The bf16 bits of f, rounded to nearest even.
  __host__ __device__ __forceinline__ static unsigned short round(float f) {
    unsigned x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<unsigned short>(x >> 16);
  }
};

/// \brief The thread's number in its block: x + y*blockDim.x + z*blockDim.x*blockDim.y.
__device__ __forceinline__ unsigned thread_rank() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
/// \brief The thread's lane in its warp (warps are consecutive thread_rank()s).
__device__ __forceinline__ unsigned lane_id() { return thread_rank() & 31u; }
/// \brief The thread's warp in its block.
__device__ __forceinline__ unsigned warp_id() { return thread_rank() >> 5; }

// ---- Hopper: shared-memory layouts, descriptors and tensor maps (both builds) ------------------

/// \brief A shared-memory swizzle (TMA tensor maps, wgmma descriptors): within each row of `span`
/// bytes (32, 64 or 128), 16-byte chunk c of row r (rows numbered by address bits 7 and up) moves
/// to chunk c ^ (r mod span / 16): address bits [4, 4 + log2(span / 16)) XOR bits [7, ...). The
/// pattern repeats every 8 x span bytes, and lines up with the tiles only when they start at such
/// a boundary (1024 bytes for 128-byte rows).
enum class Swizzle : int { none = 0, b32 = 32, b64 = 64, b128 = 128 };

/// \brief The wgmma shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13
/// the start address, 16-29 the leading-dimension byte offset, 32-45 the stride-dimension byte offset
/// (each in 16-byte units), 49-51 the base offset (0 when the swizzle pattern starts at its
/// boundary, which the templates keep), 62-63 the swizzle (0 none, 1 128-byte, 2 64-byte, 3 32-byte).
/// What LBO and SBO mean for each layout: host/hopper.h (smem_matrix_address).
__host__ __device__ constexpr uint64_t wgmma_descriptor(unsigned address, unsigned lbo, unsigned sbo, Swizzle sw,
                                                        unsigned base_offset = 0) {
  return static_cast<uint64_t>((address & 0x3ffffu) >> 4) | (static_cast<uint64_t>((lbo & 0x3ffffu) >> 4) << 16) |
         (static_cast<uint64_t>((sbo & 0x3ffffu) >> 4) << 32) | (static_cast<uint64_t>(base_offset & 7u) << 49) |
         (static_cast<uint64_t>(sw == Swizzle::b128 ? 1 : sw == Swizzle::b64 ? 2 : sw == Swizzle::b32 ? 3 : 0) << 62);
}

#if defined(__CUDACC__) && CUDA_VERSION < 12000
inline cudaError_t make_tensor_map(TensorMap*, int, int, const void*, const uint64_t*, const uint64_t*, const uint32_t*,
                                   const uint32_t*, Swizzle) {
  return cudaErrorNotSupported;  // no tensor maps before CUDA 12
}
#elif defined(__CUDACC__)
/// \brief Builds a tiled TMA tensor map on the host (cuTensorMapEncodeTiled, reached through the
/// runtime's driver entry point: no -lcuda): `rank` dims of elements of elem_bytes (1, 2 or 4) at
/// `global` (16-byte aligned), dims[i] elements along dim i (innermost first), strides[i] the byte
/// stride of dim i + 1 (multiples of 16), a box of box[i] elements, traversal steps
/// element_strides[i] (1..8; the innermost ignored), out-of-bounds elements read as zeros. Returns
/// cudaErrorInvalidValue where the driver refuses the map, cudaErrorNotSupported without the entry
/// point (a driver older than CUDA 12).
inline cudaError_t make_tensor_map(TensorMap* map, int elem_bytes, int rank, const void* global, const uint64_t* dims,
                                   const uint64_t* strides, const uint32_t* box, const uint32_t* element_strides, Swizzle sw) {
  using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*,
                              const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                              CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = nullptr;
  if (!encode) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) return cudaErrorNotSupported;
    encode = reinterpret_cast<Encode>(fn);
  }
  const CUtensorMapDataType type = elem_bytes == 1   ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                   : elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16
                                                     : CU_TENSOR_MAP_DATA_TYPE_UINT32;
  const CUtensorMapSwizzle swizzle = sw == Swizzle::b128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : sw == Swizzle::b64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : sw == Swizzle::b32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                          : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUresult r = encode(map, type, static_cast<cuuint32_t>(rank), const_cast<void*>(global), dims, strides, box,
                            element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#endif

}  // namespace mc

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
//   __float_as_int __int_as_float __float2int_rn __popc __clz __ldg min max ...
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
//   mc::lane_id() mc::warp_id() mc::thread_rank()   linear thread numbering helpers
//   MC_UNROLL / MC_UNROLL_N(n)  #pragma unroll that g++ accepts without -Wunknown-pragmas
//   MC_DEVICE_ARCH             __CUDA_ARCH__ in device code, 0 on the host and in the emulation
//   cudaMalloc ... cudaGraphLaunch: the runtime API (host/runtime_api.h lists the emulated subset)
#pragma once

#if defined(__CUDACC__)

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

namespace mc {

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

}  // namespace mc

// runtime_stub/host/cuda_types.h — CUDA's qualifiers, dim3 and vector types for the host emulation.
#pragma once

#include <cstddef>
#include <cstdint>

// Qualifiers. __shared__ becomes a per-host-thread static: the emulation runs one block at a time on
// the launching thread, so a static is exactly one block's storage (left as the previous block left
// it: uninitialised, as on the GPU). `extern __shared__` is not supported: use mc::dynamic_smem<T>().
// __noinline__ is not defined: libstdc++ uses the attribute spelling __noinline__ itself.
#define __host__
#define __device__
#define __global__
#define __constant__
#define __managed__
#define __shared__ static thread_local
#define __forceinline__ inline __attribute__((always_inline))
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))

/// \brief Three unsigned ints, the type of threadIdx and blockIdx.
struct uint3 {
  unsigned int x, y, z;
};

/// \brief Launch dimensions; missing components are 1, as in CUDA.
struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// Vector types with CUDA's alignments, and their make_ functions.
#define MC_VEC2(T, name, align)                                            \
  struct __attribute__((aligned(align))) name { T x, y; };                 \
  inline name make_##name(T x, T y) { return name{x, y}; }
#define MC_VEC3(T, name)                                                   \
  struct name { T x, y, z; };                                              \
  inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define MC_VEC4(T, name, align)                                            \
  struct __attribute__((aligned(align))) name { T x, y, z, w; };           \
  inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
MC_VEC2(char, char2, 2)
MC_VEC2(unsigned char, uchar2, 2)
MC_VEC2(short, short2, 4)
MC_VEC2(unsigned short, ushort2, 4)
MC_VEC2(int, int2, 8)
MC_VEC2(unsigned int, uint2, 8)
MC_VEC2(float, float2, 8)
MC_VEC2(long long, longlong2, 16)
MC_VEC2(unsigned long long, ulonglong2, 16)
MC_VEC2(double, double2, 16)
MC_VEC3(int, int3)
MC_VEC3(float, float3)
MC_VEC4(char, char4, 4)
MC_VEC4(unsigned char, uchar4, 4)
MC_VEC4(short, short4, 8)
MC_VEC4(unsigned short, ushort4, 8)
MC_VEC4(int, int4, 16)
MC_VEC4(unsigned int, uint4, 16)
MC_VEC4(float, float4, 16)
#undef MC_VEC2
#undef MC_VEC3
#undef MC_VEC4
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

// runtime_stub/host/mma.h — ldmatrix, mma.sync and the shared-memory accessors on the host: the
// emulation of what device.h declares for nvcc, with the same signatures (plus the caller's file
// and line as hidden defaulted arguments, for fault and race reports).
//
// ldmatrix and mma are warp collectives of all 32 lanes (as wmma.h's). Each lane gives and gets
// exactly its own registers in the PTX ISA's per-lane fragment layouts (device.h's comment lists
// them; g = lane / 4, t = lane % 4), so a kernel that puts an element in the wrong lane computes a
// wrong result here as on a GPU. 16-bit elements are packed two per 32-bit register, the lower
// column (row with .trans) in the low 16 bits. mma computes each product exactly (the product of
// two halves, or of two bfloat16s, is exact in float), accumulates in float in k order starting from
// C, and rounds to the accumulator type after every 8 k: m16n8k16 is the two m16n8k8 of its K halves
// in sequence, exactly what device.h runs on sm_75 (with FP32 accumulators that is simply the
// k-order float sum, as wmma.h's mma). The BF16 form (mma_m16n8k16_bf16) differs only in how an
// element's bits are read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "engine.h"
#include "half.h"
#include "intrinsics.h"

namespace mc {
namespace host {

/// \brief One lane's argument to ldmatrix.
struct LdmatrixArg {
  const void* row;
  unsigned* r;
};

/// \brief ldmatrix .x{N}[.trans]: lane 8i + j gives the address of row j of matrix i; register i of
/// lane l receives (row l / 4, columns 2 (l % 4), +1) of matrix i, or with .trans (rows 2 (l % 4), +1,
/// column l / 4).
template <int N, bool Trans>
void complete_ldmatrix(void* const* args) {
  uint16_t m[N][8][8];
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < 8; ++j) {
      const int lane = 8 * i + j;
      const void* row = static_cast<LdmatrixArg*>(args[lane])->row;
      if (reinterpret_cast<uintptr_t>(row) % 16 != 0)
        fault("mc::ldmatrix: lane " + std::to_string(lane) + "'s row address (row " + std::to_string(j) + " of matrix " +
              std::to_string(i) + ") is not 16-byte aligned");
      warp_shared_access(lane, row, 16, 1, 0, false);
      std::memcpy(m[i][j], row, 16);
    }
  for (int l = 0; l < 32; ++l) {
    unsigned* r = static_cast<LdmatrixArg*>(args[l])->r;
    const int g = l / 4, c = 2 * (l % 4);
    for (int i = 0; i < N; ++i) {
      const uint16_t lo = Trans ? m[i][c][g] : m[i][g][c];
      const uint16_t hi = Trans ? m[i][c + 1][g] : m[i][g][c + 1];
      r[i] = static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
    }
  }
}

/// \brief One lane's argument to mma: its registers (Acc: float or unsigned, a packed half pair).
template <class Acc>
struct MmaArg {
  Acc* d;
  const unsigned* a;
  const unsigned* b;
  const Acc* c;
};

inline float half_lo(unsigned r) { return __half2float(__ushort_as_half(static_cast<unsigned short>(r & 0xffffu))); }
inline float half_hi(unsigned r) { return __half2float(__ushort_as_half(static_cast<unsigned short>(r >> 16))); }
/// A bfloat16 is the upper half of a float32.
inline float bf16_bits_to_float(unsigned bits) {
  const unsigned x = bits << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}
inline float bf16_lo(unsigned r) { return bf16_bits_to_float(r & 0xffffu); }
inline float bf16_hi(unsigned r) { return bf16_bits_to_float(r >> 16); }

/// \brief The A / B element type of an mma: FP16 or BF16 (the accumulator is Acc).
enum class MmaIn { f16, bf16 };
inline unsigned pack_halves(float lo, float hi) {
  return static_cast<unsigned>(__half_as_ushort(__float2half_rn(lo))) |
         (static_cast<unsigned>(__half_as_ushort(__float2half_rn(hi))) << 16);
}

/// \brief mma.m16n8k{K}.row.col, A and B of In (FP16 or BF16), Acc accumulators (float: FP32,
/// unsigned: FP16 pairs). Gathers A (16 x K), B (K x 8) and C (16 x 8) from the lanes' registers,
/// computes D, scatters it.
template <int K, class Acc, MmaIn In = MmaIn::f16>
void complete_mma(void* const* args) {
  static_assert(In == MmaIn::f16 || std::is_same<Acc, float>::value, "mma: BF16 inputs take FP32 accumulators");
  auto lo = [](unsigned r) { return In == MmaIn::f16 ? half_lo(r) : bf16_lo(r); };
  auto hi = [](unsigned r) { return In == MmaIn::f16 ? half_hi(r) : bf16_hi(r); };
  float A[16][K], B[K][8], D[16][8];
  for (int l = 0; l < 32; ++l) {
    const MmaArg<Acc>& x = *static_cast<MmaArg<Acc>*>(args[l]);
    const int g = l / 4, t = 2 * (l % 4);
    for (int h = 0; h < K / 8; ++h) {  // K halves: a0 a1 (k 0-7), a2 a3 (k 8-15); b0, b1
      const unsigned top = x.a[2 * h], bottom = x.a[2 * h + 1], b = x.b[h];
      A[g][8 * h + t] = lo(top);
      A[g][8 * h + t + 1] = hi(top);
      A[g + 8][8 * h + t] = lo(bottom);
      A[g + 8][8 * h + t + 1] = hi(bottom);
      B[8 * h + t][g] = lo(b);
      B[8 * h + t + 1][g] = hi(b);
    }
    if constexpr (std::is_same<Acc, float>::value) {
      D[g][t] = x.c[0];
      D[g][t + 1] = x.c[1];
      D[g + 8][t] = x.c[2];
      D[g + 8][t + 1] = x.c[3];
    } else {
      D[g][t] = half_lo(x.c[0]);
      D[g][t + 1] = half_hi(x.c[0]);
      D[g + 8][t] = half_lo(x.c[1]);
      D[g + 8][t + 1] = half_hi(x.c[1]);
    }
  }
  for (int h = 0; h < K / 8; ++h)
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        float acc = D[i][j];
        for (int k = 8 * h; k < 8 * h + 8; ++k) acc += A[i][k] * B[k][j];
        D[i][j] = std::is_same<Acc, float>::value ? acc : __half2float(__float2half_rn(acc));
      }
  for (int l = 0; l < 32; ++l) {  // every lane's C was read above: d may alias c
    Acc* d = static_cast<MmaArg<Acc>*>(args[l])->d;
    const int g = l / 4, t = 2 * (l % 4);
    if constexpr (std::is_same<Acc, float>::value) {
      d[0] = D[g][t];
      d[1] = D[g][t + 1];
      d[2] = D[g + 8][t];
      d[3] = D[g + 8][t + 1];
    } else {
      d[0] = pack_halves(D[g][t], D[g][t + 1]);
      d[1] = pack_halves(D[g + 8][t], D[g + 8][t + 1]);
    }
  }
}

template <int K, class Acc, MmaIn In = MmaIn::f16>
inline void mma(Acc* d, const unsigned* a, const unsigned* b, const Acc* c, const char* file, int line) {
  MmaArg<Acc> arg{d, a, b, c};
  const char* name = In == MmaIn::bf16 ? "mc::mma_m16n8k16_bf16" : K == 16 ? "mc::mma_m16n8k16" : "mc::mma_m16n8k8";
  warp_collective_full(&complete_mma<K, Acc, In>, &arg, name, file, line);
}

}  // namespace host

/// \brief ldmatrix.sync.aligned.m8n8.x{N}[.trans].shared.b16: N 8x8 matrices of halves into r.
template <int N, bool Trans = false>
inline void ldmatrix(unsigned (&r)[N], const void* row, MC_CALLER_LOC) {
  static_assert(N == 1 || N == 2 || N == 4, "mc::ldmatrix: x1, x2 or x4");
  host::LdmatrixArg arg{row, r};
  host::warp_collective_full(&host::complete_ldmatrix<N, Trans>, &arg, Trans ? "mc::ldmatrix (.trans)" : "mc::ldmatrix",
                             mc_file, mc_line);
}

/// \brief d = a x b + c, m16n8k8, FP16 inputs, FP32 accumulators.
inline void mma_m16n8k8(float (&d)[4], const unsigned (&a)[2], unsigned b, const float (&c)[4], MC_CALLER_LOC) {
  host::mma<8>(d, a, &b, c, mc_file, mc_line);
}
/// \brief d = a x b + c, m16n8k8, FP16 inputs and accumulators.
inline void mma_m16n8k8(unsigned (&d)[2], const unsigned (&a)[2], unsigned b, const unsigned (&c)[2], MC_CALLER_LOC) {
  host::mma<8>(d, a, &b, c, mc_file, mc_line);
}
/// \brief d = a x b + c, m16n8k16, FP16 inputs, FP32 accumulators.
inline void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], const float (&c)[4],
                         MC_CALLER_LOC) {
  host::mma<16>(d, a, b, c, mc_file, mc_line);
}
/// \brief d = a x b + c, m16n8k16, FP16 inputs and accumulators.
inline void mma_m16n8k16(unsigned (&d)[2], const unsigned (&a)[4], const unsigned (&b)[2], const unsigned (&c)[2],
                         MC_CALLER_LOC) {
  host::mma<16>(d, a, b, c, mc_file, mc_line);
}

/// \brief d = a x b + c, m16n8k16, BF16 inputs, FP32 accumulators.
inline void mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], const float (&c)[4],
                              MC_CALLER_LOC) {
  host::mma<16, float, host::MmaIn::bf16>(d, a, b, c, mc_file, mc_line);
}

/// \brief A shared-memory store and load that the race check sees (engine.h).
template <class T>
inline void st_shared(T* p, const T& v, MC_CALLER_LOC) {
  host::shared_access(p, sizeof(T), true, "mc::st_shared", mc_file, mc_line);
  *p = v;
}
template <class T>
inline T ld_shared(const T* p, MC_CALLER_LOC) {
  host::shared_access(p, sizeof(T), false, "mc::ld_shared", mc_file, mc_line);
  return *p;
}

}  // namespace mc

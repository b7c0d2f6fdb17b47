// runtime_stub/host/mma_int8.h — the 8-bit mma.sync on the host: mc::mma_m16n8k32<TA> and
// mc::mma_m8n8k16<TA> with device.h's signatures (plus the caller's file and line).
//
// Warp collectives of all 32 lanes, like mma.h's: each lane gives and gets exactly its own registers
// in the PTX ISA's per-lane fragment layouts (device.h lists them; g = lane / 4, t = lane % 4), four
// 8-bit elements per register with the lowest k in the low byte, so a kernel that puts an element in
// the wrong lane or byte computes a wrong result here as on a GPU. The products are exact (INT32
// accumulation from C, wrapping modulo 2^32 as mma without .satfinite does); m16n8k32 on sm_75 is
// the four m8n8k16 of device.h, whose sum is the same integer.
#pragma once

#include <cstdint>
#include <type_traits>

#include "engine.h"
#include "intrinsics.h"

namespace mc {
namespace host {

/// Byte i (0..3) of a register as TA (int8_t or uint8_t), widened.
template <class TA>
inline int32_t byte_of(unsigned r, int i) {
  const unsigned b = (r >> (8 * i)) & 0xffu;
  return std::is_same<TA, int8_t>::value ? static_cast<int32_t>(static_cast<int8_t>(b)) : static_cast<int32_t>(b);
}

/// Adds without signed overflow (the hardware wraps modulo 2^32).
inline int32_t wrap_add(int32_t a, int64_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(a) + b));
}

/// One lane's argument to an 8-bit mma: its registers.
struct MmaS8Arg {
  int* d;
  const unsigned* a;
  const unsigned* b;
  const int* c;
};

/// mma.m16n8k32.row.col.s32.{s8,u8}.s8.s32: gathers A (16 x 32), B (32 x 8), C (16 x 8) from the
/// lanes' registers, computes D exactly, scatters it.
template <class TA>
void complete_mma_m16n8k32(void* const* args) {
  int32_t A[16][32], B[32][8], D[16][8];
  for (int l = 0; l < 32; ++l) {
    const MmaS8Arg& x = *static_cast<MmaS8Arg*>(args[l]);
    const int g = l / 4, t = 4 * (l % 4);
    for (int i = 0; i < 4; ++i) {
      A[g][t + i] = byte_of<TA>(x.a[0], i);
      A[g + 8][t + i] = byte_of<TA>(x.a[1], i);
      A[g][16 + t + i] = byte_of<TA>(x.a[2], i);
      A[g + 8][16 + t + i] = byte_of<TA>(x.a[3], i);
      B[t + i][g] = byte_of<int8_t>(x.b[0], i);
      B[16 + t + i][g] = byte_of<int8_t>(x.b[1], i);
    }
    const int c = 2 * (l % 4);
    D[g][c] = x.c[0];
    D[g][c + 1] = x.c[1];
    D[g + 8][c] = x.c[2];
    D[g + 8][c + 1] = x.c[3];
  }
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 8; ++j) {
      int64_t s = 0;
      for (int k = 0; k < 32; ++k) s += static_cast<int64_t>(A[i][k]) * B[k][j];
      D[i][j] = wrap_add(D[i][j], s);
    }
  }
  for (int l = 0; l < 32; ++l) {  // every lane's C was read above: d may alias c
    int* d = static_cast<MmaS8Arg*>(args[l])->d;
    const int g = l / 4, c = 2 * (l % 4);
    d[0] = D[g][c];
    d[1] = D[g][c + 1];
    d[2] = D[g + 8][c];
    d[3] = D[g + 8][c + 1];
  }
}

/// mma.m8n8k16.row.col.s32.{s8,u8}.s8.s32: A (8 x 16), B (16 x 8), C (8 x 8).
template <class TA>
void complete_mma_m8n8k16(void* const* args) {
  int32_t A[8][16], B[16][8], D[8][8];
  for (int l = 0; l < 32; ++l) {
    const MmaS8Arg& x = *static_cast<MmaS8Arg*>(args[l]);
    const int g = l / 4, t = 4 * (l % 4);
    for (int i = 0; i < 4; ++i) {
      A[g][t + i] = byte_of<TA>(x.a[0], i);
      B[t + i][g] = byte_of<int8_t>(x.b[0], i);
    }
    const int c = 2 * (l % 4);
    D[g][c] = x.c[0];
    D[g][c + 1] = x.c[1];
  }
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      int64_t s = 0;
      for (int k = 0; k < 16; ++k) s += static_cast<int64_t>(A[i][k]) * B[k][j];
      D[i][j] = wrap_add(D[i][j], s);
    }
  }
  for (int l = 0; l < 32; ++l) {
    int* d = static_cast<MmaS8Arg*>(args[l])->d;
    const int g = l / 4, c = 2 * (l % 4);
    d[0] = D[g][c];
    d[1] = D[g][c + 1];
  }
}

}  // namespace host

/// \brief d = a x b + c, m16n8k32, 8-bit A (TA int8_t / uint8_t), int8 B, INT32 accumulators.
template <class TA>
inline void mma_m16n8k32(int (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], const int (&c)[4], MC_CALLER_LOC) {
  static_assert(std::is_same<TA, int8_t>::value || std::is_same<TA, uint8_t>::value, "mc::mma_m16n8k32: int8_t or uint8_t A");
  host::MmaS8Arg arg{d, a, b, c};
  host::warp_collective_full(&host::complete_mma_m16n8k32<TA>, &arg,
                             std::is_same<TA, int8_t>::value ? "mc::mma_m16n8k32 (s8)" : "mc::mma_m16n8k32 (u8)", mc_file,
                             mc_line);
}

/// \brief d = a x b + c, m8n8k16, 8-bit A (TA), int8 B, INT32 accumulators.
template <class TA>
inline void mma_m8n8k16(int (&d)[2], unsigned a, unsigned b, const int (&c)[2], MC_CALLER_LOC) {
  static_assert(std::is_same<TA, int8_t>::value || std::is_same<TA, uint8_t>::value, "mc::mma_m8n8k16: int8_t or uint8_t A");
  host::MmaS8Arg arg{d, &a, &b, c};
  host::warp_collective_full(&host::complete_mma_m8n8k16<TA>, &arg,
                             std::is_same<TA, int8_t>::value ? "mc::mma_m8n8k16 (s8)" : "mc::mma_m8n8k16 (u8)", mc_file,
                             mc_line);
}

}  // namespace mc

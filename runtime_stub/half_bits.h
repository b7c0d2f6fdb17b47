// runtime_stub/half_bits.h — IEEE binary16 <-> float on the bits: the one float/half conversion of
// modelc. The compiler (weights, casts, the reference's FP16 simulation), the generated program's
// tensor files (npy.h, cli.h) and the host emulation's __half (host/half.h) all use it, so a value
// rounds the same way everywhere, and as the GPU rounds it.
//
// Standalone (the C++17 standard library only): it ships in every generated folder. Integer
// arithmetic on the bits, so the FPU's rounding mode plays no part.
#pragma once

#include <cstdint>
#include <cstring>

namespace mc_half {

/// \brief The binary16 bits of `f`, rounded to nearest even, as CUDA's __float2half: results
/// below 2^-14 are subnormal (correctly rounded; 2^-25 and below round to zero), values from
/// 65520 (the midpoint between 65504 and 65536) up become Inf, and every NaN becomes the
/// canonical 0x7fff that the GPU gives.
inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<uint16_t>(ax == 0x7f800000u ? (sign | 0x7c00u) : 0x7fffu);
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to Inf
  if (ax >= 0x38800000u) {                                               // normal half
    // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a carry out of
    // the mantissa goes into the exponent, which is the right result.
    const uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u) - 0x38000000u;
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  if (ax <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: ties to even give 0
  // Subnormal: value = mant24 * 2^(exp-150); the half's unit is 2^-24.
  const uint32_t shift = 126u - (ax >> 23);  // 14..24
  const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

/// \brief The float value of binary16 bits (exact: every half is a float; NaN payloads kept).
inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    uint32_t m = mant;
    do {
      m <<= 1;
      ++e;
    } while (!(m & 0x400u));
    bits = sign | ((112u - static_cast<uint32_t>(e)) << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace mc_half

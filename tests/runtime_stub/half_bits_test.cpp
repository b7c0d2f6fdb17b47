// runtime_stub/half_bits.h: the one float <-> half conversion (the compiler's tensors, npy.h and
// cli.h, the host emulation's __half).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <limits>
#include <random>

#include "runtime_stub/half_bits.h"
#include "runtime_stub/host/half.h"

using mc_half::float_to_half_bits;
using mc_half::half_bits_to_float;

namespace {

uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// The value of non-NaN half bits, computed apart from the code under test.
double half_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double m = exp == 0x1f ? std::numeric_limits<double>::infinity()
                   : exp == 0  ? std::ldexp(mant, -24)
                               : std::ldexp(mant | 0x400, exp - 25);
  return (h & 0x8000) ? -m : m;
}

// Calls f(x) for the floats a float -> half conversion can get wrong: for every pair of
// neighbouring non-negative halves (the last pair is 65504 and 65536, where Inf starts) both
// ends, the midpoint (a tie) and the floats next to each, with both signs; then 2^21
// pseudo-random bit patterns (NaNs left out), every other one in half's range (subnormal results
// included).
template <class F>
void for_each_probe(F f) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = half_bits_to_float(static_cast<uint16_t>(h));
    const float hi = h + 1 < 0x7c00 ? half_bits_to_float(static_cast<uint16_t>(h + 1)) : 65536.0f;
    const float mid = (lo + hi) / 2;  // exact: 12 significant bits
    const float inf = std::numeric_limits<float>::infinity();
    for (float x : {lo, std::nextafter(lo, inf), std::nextafter(mid, 0.0f), mid, std::nextafter(mid, inf),
                    std::nextafter(hi, 0.0f)}) {
      f(x);
      f(-x);
    }
  }
  std::mt19937 rng(20240607);
  for (int i = 0; i < (1 << 21); ++i) {
    uint32_t x = static_cast<uint32_t>(rng());
    if (i % 2) x = (x & 0x80000000u) | (0x32800000u + x % (0x47800000u - 0x32800000u));  // 2^-26 .. 2^16
    if ((x & 0x7fffffffu) > 0x7f800000u) continue;                                        // NaN
    f(float_of(x));
  }
}

}  // namespace

TEST_CASE("half_bits: every one of the 65536 half bit patterns round-trips") {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t b = static_cast<uint16_t>(h);
    const float f = half_bits_to_float(b);
    CAPTURE(h);
    if ((b & 0x7fffu) > 0x7c00u) {  // NaN: the payload is kept in the float; back, the canonical NaN
      REQUIRE(bits_of(f) == ((b & 0x8000u) << 16 | 0x7f800000u | (b & 0x3ffu) << 13));
      REQUIRE(float_to_half_bits(f) == 0x7fff);
    } else {
      REQUIRE(static_cast<double>(f) == half_value(b));
      REQUIRE(std::signbit(f) == ((b & 0x8000u) != 0));
      REQUIRE(float_to_half_bits(f) == b);
    }
  }
}

TEST_CASE("half_bits: float -> half rounds to nearest even, subnormals and overflow included") {
  CHECK(float_to_half_bits(1.0f) == 0x3c00);
  CHECK(float_to_half_bits(-2.0f) == 0xc000);
  CHECK(float_to_half_bits(65504.0f) == 0x7bff);
  CHECK(float_to_half_bits(65519.0f) == 0x7bff);                      // below the midpoint to 65536
  CHECK(float_to_half_bits(65520.0f) == 0x7c00);                      // the midpoint ties to even: Inf
  CHECK(float_to_half_bits(-1e30f) == 0xfc00);
  CHECK(float_to_half_bits(std::ldexp(1.0f, -24)) == 0x0001);         // smallest subnormal
  CHECK(float_to_half_bits(std::ldexp(1.0f, -25)) == 0x0000);         // half of it: ties to even (0)
  CHECK(float_to_half_bits(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(float_to_half_bits(std::ldexp(3.0f, -25)) == 0x0002);         // 1.5 units: tie, to even
  CHECK(float_to_half_bits(std::ldexp(1023.0f, -24)) == 0x03ff);      // largest subnormal
  CHECK(float_to_half_bits(std::ldexp(2047.0f, -25)) == 0x0400);      // rounds up into the normals
  CHECK(float_to_half_bits(1.0f + 1.0f / 2048) == 0x3c00);            // tie, even stays
  CHECK(float_to_half_bits(1.0f + 3.0f / 2048) == 0x3c02);            // tie, odd rounds up
  CHECK(float_to_half_bits(-0.0f) == 0x8000);
  CHECK(float_to_half_bits(std::numeric_limits<float>::denorm_min()) == 0x0000);
  CHECK(float_to_half_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(float_to_half_bits(-std::numeric_limits<float>::infinity()) == 0xfc00);
  // Every NaN becomes the canonical 0x7fff, as on the GPU (ir/dtype.cpp and npy.h used to give
  // 0x7e00 with the sign: the only change the merge made).
  CHECK(float_to_half_bits(std::numeric_limits<float>::quiet_NaN()) == 0x7fff);
  CHECK(float_to_half_bits(-std::nanf("5")) == 0x7fff);
  CHECK(float_to_half_bits(float_of(0x7f800001u)) == 0x7fff);  // signalling

  // At every rounding boundary and on many floats, it equals the exact routine (host/half.h's
  // round_to_half: the value as a 128-bit integer, rounded once), which shares no code with it.
  int probes = 0;
  for_each_probe([&](float x) {
    ++probes;
    if (float_to_half_bits(x) != mc::host::double_to_half_bits(static_cast<double>(x))) {
      FAIL("float bits 0x" << std::hex << bits_of(x) << ": 0x" << float_to_half_bits(x) << ", exact 0x"
                           << mc::host::double_to_half_bits(static_cast<double>(x)));
    }
  });
  CHECK(probes > 0x7c00 * 12 + (1 << 20));
}

TEST_CASE("half_bits: float -> half gives what the conversions it replaced gave") {
  // FNV-1a over the half bits of every probe, as ir/dtype.cpp's float_to_half and npy.h's
  // float_to_half (identical on every float but NaN) computed it before they were merged into
  // half_bits.h. (They agreed with this conversion on all 2^32 non-NaN floats then; the probes
  // hold no NaN.)
  uint64_t digest = 14695981039346656037ull;
  for_each_probe([&](float x) {
    const uint16_t h = float_to_half_bits(x);
    for (int k = 0; k < 2; ++k) digest = (digest ^ ((h >> (8 * k)) & 0xffu)) * 1099511628211ull;
  });
  CHECK(digest == 0x98aa989b48720529ull);
}

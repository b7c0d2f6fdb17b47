// runtime_stub/host/half.h — bit-exact emulation of CUDA's __half and __half2 on the host.
//
// Part of the modelc runtime: copied into every generated folder, self-contained (no modelc headers).
// Every operation is correctly rounded to nearest even, as the GPU's half instructions are:
//   - conversions use integer arithmetic on the bits (no dependence on the FPU rounding mode);
//     float <-> half is half_bits.h, the conversion the compiler and npy.h use too;
//   - +, -, *, / and sqrt are computed in float and rounded to half: float's 24 bits are at least
//     2*11+2, so the double rounding is innocuous (the result equals a single correct rounding);
//   - fma is computed exactly in 128-bit integers, then rounded once.
// NaN results are the canonical 0x7fff, as on the GPU. hexp/hlog/... go through the host's libm,
// so they may differ from the GPU's approximations by an ulp.
//
// The class mirrors cuda_fp16.h's implicit conversions and operators, so code that compiles here
// compiles with nvcc too (and h + 1.0f is ambiguous in both).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../half_bits.h"

namespace mc {
namespace host {

/// \brief Rounding modes of the generic rounding routine.
enum class Round { nearest_even, toward_zero, down, up };

/// \brief Rounds (-1)^neg * mag * 2^exp2 to half bits. Exact for any mag (a 128-bit integer).
inline uint16_t round_to_half(bool neg, unsigned __int128 mag, int exp2, Round mode = Round::nearest_even) {
  const uint16_t sign = neg ? 0x8000u : 0u;
  if (mag == 0) return sign;
  int msb = 127;
  while (!(mag >> msb)) --msb;
  const int e = msb + exp2;                       // value in [2^e, 2^(e+1))
  const int lsb = e >= -14 ? e - 10 : -24;        // exponent of the result's last bit
  const int shift = lsb - exp2;                   // bits of mag dropped
  unsigned __int128 q;
  bool above_half = false, exactly_half = false, inexact = false;
  if (shift <= 0) {
    q = e > 15 ? 0 : mag << -shift;               // (overflow handled below, avoid a huge shift)
  } else if (shift >= 128) {                      // q is 0; only the comparison with half remains
    q = 0;
    inexact = true;
    const unsigned __int128 top = static_cast<unsigned __int128>(1) << 127;
    above_half = shift == 128 && mag > top;
    exactly_half = shift == 128 && mag == top;
  } else {
    q = mag >> shift;
    const unsigned __int128 rem = mag & ((static_cast<unsigned __int128>(1) << shift) - 1);
    const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
    inexact = rem != 0;
    above_half = rem > half;
    exactly_half = rem == half;
  }
  bool up = false;
  switch (mode) {
    case Round::nearest_even: up = above_half || (exactly_half && (q & 1)); break;
    case Round::toward_zero: up = false; break;
    case Round::down: up = inexact && neg; break;
    case Round::up: up = inexact && !neg; break;
  }
  const bool to_inf = mode == Round::nearest_even || (mode == Round::down && neg) || (mode == Round::up && !neg);
  if (e > 15) return sign | (to_inf ? 0x7c00u : 0x7bffu);
  q += up ? 1 : 0;
  // Subnormal results are q itself (q == 0x400 is the smallest normal); normal ones carry into the
  // exponent when q reaches 2^11.
  uint32_t bits = e < -14 ? static_cast<uint32_t>(q)
                                        : (static_cast<uint32_t>(e + 15) << 10) + static_cast<uint32_t>(q - 1024);
  if (bits >= 0x7c00u) bits = to_inf ? 0x7c00u : 0x7bffu;
  return static_cast<uint16_t>(sign | bits);
}

// float <-> half bits, round to nearest even: the one conversion (half_bits.h), shared with the
// compiler and npy.h. The overload below adds the other rounding modes.
using mc_half::float_to_half_bits;
using mc_half::half_bits_to_float;

/// \brief Splits a finite double into sign, 53-bit integer mantissa and exponent.
inline uint16_t double_to_half_bits(double d, Round mode = Round::nearest_even) {
  if (std::isnan(d)) return 0x7fffu;
  const bool neg = std::signbit(d);
  if (std::isinf(d)) return neg ? 0xfc00u : 0x7c00u;
  int e = 0;
  const double m = std::frexp(std::fabs(d), &e);  // d = m * 2^e, m in [0.5, 1)
  const uint64_t mag = static_cast<uint64_t>(std::ldexp(m, 53));
  return round_to_half(neg, mag, e - 53, mode);
}

inline uint16_t float_to_half_bits(float f, Round mode) {
  return mode == Round::nearest_even ? float_to_half_bits(f) : double_to_half_bits(f, mode);
}

/// \brief A finite half as an exact integer multiple of 2^-24 (all finite halves are).
inline __int128 half_bits_to_units(uint16_t h) {
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  const __int128 m = exp == 0 ? mant : static_cast<__int128>(mant | 0x400u) << (exp - 1);
  return (h & 0x8000u) ? -m : m;
}

inline bool half_bits_isnan(uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }
inline bool half_bits_isinf(uint16_t h) { return (h & 0x7fffu) == 0x7c00u; }

/// \brief a*b+c on half bits with one rounding (exact 128-bit intermediate).
inline uint16_t half_bits_fma(uint16_t a, uint16_t b, uint16_t c) {
  if (half_bits_isnan(a) || half_bits_isnan(b) || half_bits_isnan(c)) return 0x7fffu;
  if (half_bits_isinf(a) || half_bits_isinf(b) || half_bits_isinf(c)) {
    const float r = std::fma(half_bits_to_float(a), half_bits_to_float(b), half_bits_to_float(c));
    return float_to_half_bits(r);  // Inf or NaN: exact in float
  }
  // a*b in units of 2^-48; c scaled to the same unit.
  const __int128 s = half_bits_to_units(a) * half_bits_to_units(b) + half_bits_to_units(c) * (static_cast<__int128>(1) << 24);
  if (s == 0) {
    // Exact zero: +0 unless both the product and c are -0 / negative zero sums (IEEE: x + -x = +0).
    const bool pneg = ((a ^ b) & 0x8000u) != 0;
    const bool cneg = (c & 0x8000u) != 0;
    const bool prod_zero = (a & 0x7fffu) == 0 || (b & 0x7fffu) == 0;
    const bool c_zero = (c & 0x7fffu) == 0;
    return (prod_zero && c_zero && pneg && cneg) ? 0x8000u : 0u;
  }
  return round_to_half(s < 0, static_cast<unsigned __int128>(s < 0 ? -s : s), -48);
}

}  // namespace host
}  // namespace mc

/// \brief The raw bits of a half, as in cuda_fp16.h.
struct __half_raw {
  unsigned short x;
};
/// \brief The raw bits of a half2, as in cuda_fp16.h.
struct __half2_raw {
  unsigned short x, y;
};

struct __half;
inline __half __float2half(float f);
inline float __half2float(__half h);

/// \brief IEEE binary16, bit-exact with the GPU's (see the file comment).
struct alignas(2) __half {
 protected:
  unsigned short __x;

 public:
  __half() = default;
  constexpr __half(const __half_raw& r) : __x(r.x) {}
  __half& operator=(const __half_raw& r) { __x = r.x; return *this; }
  operator __half_raw() const { return __half_raw{__x}; }
  __half(float f) : __x(mc::host::float_to_half_bits(f)) {}
  __half(double d) : __x(mc::host::double_to_half_bits(d)) {}
  __half(short v) : __half(static_cast<float>(v)) {}
  __half(unsigned short v) : __half(static_cast<float>(v)) {}
  __half(int v) : __half(static_cast<double>(v)) {}
  __half(unsigned int v) : __half(static_cast<double>(v)) {}
  __half(long v) : __half(static_cast<long long>(v)) {}
  __half(unsigned long v) : __half(static_cast<unsigned long long>(v)) {}
  __half(long long v) : __x(mc::host::round_to_half(v < 0, static_cast<unsigned __int128>(v < 0 ? -static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v)), 0)) {}
  __half(unsigned long long v) : __x(mc::host::round_to_half(false, v, 0)) {}
  operator float() const { return mc::host::half_bits_to_float(__x); }
  __half& operator=(float f) { __x = mc::host::float_to_half_bits(f); return *this; }
  __half& operator=(double d) { __x = mc::host::double_to_half_bits(d); return *this; }
  __half& operator=(short v) { return *this = __half(v); }
  __half& operator=(unsigned short v) { return *this = __half(v); }
  __half& operator=(int v) { return *this = __half(v); }
  __half& operator=(unsigned int v) { return *this = __half(v); }
  __half& operator=(long long v) { return *this = __half(v); }
  __half& operator=(unsigned long long v) { return *this = __half(v); }
  // Conversions to integers round toward zero (saturating like the GPU's cvt.rzi; NaN gives 0).
  operator signed char() const { return static_cast<signed char>(to_int_rz(-128, 127)); }
  operator unsigned char() const { return static_cast<unsigned char>(to_int_rz(0, 255)); }
  operator char() const { return static_cast<char>(to_int_rz(static_cast<char>(-1) < 0 ? -128 : 0, static_cast<char>(-1) < 0 ? 127 : 255)); }
  operator short() const { return static_cast<short>(to_int_rz(-32768, 32767)); }
  operator unsigned short() const { return static_cast<unsigned short>(to_int_rz(0, 65535)); }
  operator int() const { return static_cast<int>(to_int_rz(INT32_MIN, INT32_MAX)); }
  operator unsigned int() const { return static_cast<unsigned int>(to_int_rz(0, UINT32_MAX)); }
  operator long() const { return static_cast<long>(to_int_rz(INT64_MIN, INT64_MAX)); }
  operator unsigned long() const { return static_cast<unsigned long>(to_int_rz(0, INT64_MAX)); }
  operator long long() const { return static_cast<long long>(to_int_rz(INT64_MIN, INT64_MAX)); }
  operator unsigned long long() const { return static_cast<unsigned long long>(to_int_rz(0, INT64_MAX)); }
  constexpr operator bool() const { return (__x & 0x7fffu) != 0u; }

 private:
  long long to_int_rz(long long lo, long long hi) const {
    const float f = mc::host::half_bits_to_float(__x);
    if (f != f) return 0;
    const float t = std::trunc(f);  // |f| <= 65504: exact in long long
    if (t < static_cast<float>(lo)) return lo;
    if (t > static_cast<float>(hi)) return hi;
    return static_cast<long long>(t);
  }
};

/// \brief Two halves (x low, y high), as in cuda_fp16.h.
struct alignas(4) __half2 {
  __half x, y;
  __half2() = default;
  constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
  __half2(const __half2_raw& r) : x(__half_raw{r.x}), y(__half_raw{r.y}) {}
  __half2& operator=(const __half2_raw& r) { x = __half_raw{r.x}; y = __half_raw{r.y}; return *this; }
  operator __half2_raw() const { return __half2_raw{__half_raw(x).x, __half_raw(y).x}; }
};

typedef __half half;
typedef __half2 half2;

// ---- bits and conversions --------------------------------------------------------------------
inline unsigned short __half_as_ushort(__half h) { return __half_raw(h).x; }
inline short __half_as_short(__half h) { return static_cast<short>(__half_raw(h).x); }
inline __half __ushort_as_half(unsigned short b) { return __half_raw{b}; }
inline __half __short_as_half(short b) { return __half_raw{static_cast<unsigned short>(b)}; }

inline __half __float2half(float f) { return __half_raw{mc::host::float_to_half_bits(f)}; }
inline __half __float2half_rn(float f) { return __float2half(f); }
inline __half __float2half_rz(float f) { return __half_raw{mc::host::float_to_half_bits(f, mc::host::Round::toward_zero)}; }
inline __half __float2half_rd(float f) { return __half_raw{mc::host::float_to_half_bits(f, mc::host::Round::down)}; }
inline __half __float2half_ru(float f) { return __half_raw{mc::host::float_to_half_bits(f, mc::host::Round::up)}; }
inline __half __double2half(double d) { return __half_raw{mc::host::double_to_half_bits(d)}; }
inline float __half2float(__half h) { return mc::host::half_bits_to_float(__half_raw(h).x); }
inline __half __int2half_rn(int v) { return __half(v); }
inline __half __uint2half_rn(unsigned v) { return __half(v); }
inline __half __ll2half_rn(long long v) { return __half(v); }
inline __half __short2half_rn(short v) { return __half(v); }
inline int __half2int_rz(__half h) { return static_cast<int>(h); }
inline int __half2int_rn(__half h) {
  const float f = __half2float(h);
  return f != f ? 0 : static_cast<int>(std::nearbyint(f));  // default FE mode: ties to even
}

inline __half2 make_half2(__half x, __half y) { return __half2(x, y); }
inline __half2 __halves2half2(__half lo, __half hi) { return __half2(lo, hi); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline __half2 __float2half2_rn(float f) { return __half2(__float2half(f), __float2half(f)); }
inline __half2 __floats2half2_rn(float lo, float hi) { return __half2(__float2half(lo), __float2half(hi)); }
inline __half __low2half(__half2 a) { return a.x; }
inline __half __high2half(__half2 a) { return a.y; }
inline float __low2float(__half2 a) { return __half2float(a.x); }
inline float __high2float(__half2 a) { return __half2float(a.y); }
inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
inline __half2 __lowhigh2highlow(__half2 a) { return __half2(a.y, a.x); }

// ---- arithmetic (correctly rounded) ------------------------------------------------------------
inline bool __hisnan(__half a) { return mc::host::half_bits_isnan(__half_as_ushort(a)); }
inline int __hisinf(__half a) {
  const unsigned short b = __half_as_ushort(a);
  return mc::host::half_bits_isinf(b) ? ((b & 0x8000u) ? -1 : 1) : 0;
}
inline __half __hadd(__half a, __half b) { return __float2half(__half2float(a) + __half2float(b)); }
inline __half __hsub(__half a, __half b) { return __float2half(__half2float(a) - __half2float(b)); }
inline __half __hmul(__half a, __half b) { return __float2half(__half2float(a) * __half2float(b)); }
inline __half __hdiv(__half a, __half b) { return __float2half(__half2float(a) / __half2float(b)); }
inline __half __hfma(__half a, __half b, __half c) {
  return __ushort_as_half(mc::host::half_bits_fma(__half_as_ushort(a), __half_as_ushort(b), __half_as_ushort(c)));
}
inline __half __hneg(__half a) { return __ushort_as_half(static_cast<unsigned short>(__half_as_ushort(a) ^ 0x8000u)); }
inline __half __habs(__half a) { return __ushort_as_half(static_cast<unsigned short>(__half_as_ushort(a) & 0x7fffu)); }
/// \brief Saturating forms clamp to [0, 1] (NaN gives 0), as on the GPU.
inline __half __hsat(__half a) {
  const float f = __half2float(a);
  return f != f ? __ushort_as_half(0) : f < 0.0f ? __ushort_as_half(0) : f > 1.0f ? __ushort_as_half(0x3c00u) : a;
}
inline __half __hadd_sat(__half a, __half b) { return __hsat(__hadd(a, b)); }
inline __half __hmul_sat(__half a, __half b) { return __hsat(__hmul(a, b)); }
inline __half __hfma_sat(__half a, __half b, __half c) { return __hsat(__hfma(a, b, c)); }
inline __half __hfma_relu(__half a, __half b, __half c) {
  const __half r = __hfma(a, b, c);
  return __hisnan(r) ? r : (__half_as_ushort(r) & 0x8000u) ? __ushort_as_half(0) : r;
}

// Comparisons: the ordered ones are false with a NaN, the ...u ones true.
inline bool __heq(__half a, __half b) { return __half2float(a) == __half2float(b); }
inline bool __hne(__half a, __half b) { return __half2float(a) < __half2float(b) || __half2float(a) > __half2float(b); }
inline bool __hlt(__half a, __half b) { return __half2float(a) < __half2float(b); }
inline bool __hle(__half a, __half b) { return __half2float(a) <= __half2float(b); }
inline bool __hgt(__half a, __half b) { return __half2float(a) > __half2float(b); }
inline bool __hge(__half a, __half b) { return __half2float(a) >= __half2float(b); }
inline bool __hequ(__half a, __half b) { return !__hne(a, b); }
inline bool __hneu(__half a, __half b) { return !__heq(a, b); }
inline bool __hltu(__half a, __half b) { return !__hge(a, b); }
inline bool __hleu(__half a, __half b) { return !__hgt(a, b); }
inline bool __hgtu(__half a, __half b) { return !__hle(a, b); }
inline bool __hgeu(__half a, __half b) { return !__hlt(a, b); }

/// \brief max/min: a NaN input yields the other one; +0 > -0 (CUDA's documented semantics).
inline __half __hmax(__half a, __half b) {
  if (__hisnan(a)) return __hisnan(b) ? __ushort_as_half(0x7fffu) : b;
  if (__hisnan(b)) return a;
  const float fa = __half2float(a), fb = __half2float(b);
  if (fa == fb) return (__half_as_ushort(a) & 0x8000u) ? b : a;
  return fa > fb ? a : b;
}
inline __half __hmin(__half a, __half b) {
  if (__hisnan(a)) return __hisnan(b) ? __ushort_as_half(0x7fffu) : b;
  if (__hisnan(b)) return a;
  const float fa = __half2float(a), fb = __half2float(b);
  if (fa == fb) return (__half_as_ushort(a) & 0x8000u) ? a : b;
  return fa < fb ? a : b;
}
/// \brief max/min that propagate NaN.
inline __half __hmax_nan(__half a, __half b) { return __hisnan(a) || __hisnan(b) ? __ushort_as_half(0x7fffu) : __hmax(a, b); }
inline __half __hmin_nan(__half a, __half b) { return __hisnan(a) || __hisnan(b) ? __ushort_as_half(0x7fffu) : __hmin(a, b); }

// Math through float (sqrt is correctly rounded; the transcendental ones follow the host's libm).
inline __half hsqrt(__half a) { return __float2half(std::sqrt(__half2float(a))); }
inline __half hrsqrt(__half a) { return __float2half(1.0f / std::sqrt(__half2float(a))); }
inline __half hrcp(__half a) { return __float2half(1.0f / __half2float(a)); }
inline __half hexp(__half a) { return __float2half(std::exp(__half2float(a))); }
inline __half hlog(__half a) { return __float2half(std::log(__half2float(a))); }
inline __half htanh(__half a) { return __float2half(std::tanh(__half2float(a))); }

// ---- half2: the same, lane by lane ------------------------------------------------------------
#define MC_HALF2_UNARY(name, op) \
  inline __half2 name(__half2 a) { return __half2(op(a.x), op(a.y)); }
#define MC_HALF2_BINARY(name, op) \
  inline __half2 name(__half2 a, __half2 b) { return __half2(op(a.x, b.x), op(a.y, b.y)); }
#define MC_HALF2_TERNARY(name, op) \
  inline __half2 name(__half2 a, __half2 b, __half2 c) { return __half2(op(a.x, b.x, c.x), op(a.y, b.y, c.y)); }
MC_HALF2_BINARY(__hadd2, __hadd)
MC_HALF2_BINARY(__hsub2, __hsub)
MC_HALF2_BINARY(__hmul2, __hmul)
MC_HALF2_BINARY(__h2div, __hdiv)
MC_HALF2_BINARY(__hadd2_sat, __hadd_sat)
MC_HALF2_BINARY(__hmul2_sat, __hmul_sat)
MC_HALF2_BINARY(__hmax2, __hmax)
MC_HALF2_BINARY(__hmin2, __hmin)
MC_HALF2_BINARY(__hmax2_nan, __hmax_nan)
MC_HALF2_BINARY(__hmin2_nan, __hmin_nan)
MC_HALF2_TERNARY(__hfma2, __hfma)
MC_HALF2_TERNARY(__hfma2_sat, __hfma_sat)
MC_HALF2_TERNARY(__hfma2_relu, __hfma_relu)
MC_HALF2_UNARY(__hneg2, __hneg)
MC_HALF2_UNARY(__habs2, __habs)
MC_HALF2_UNARY(h2sqrt, hsqrt)
MC_HALF2_UNARY(h2rsqrt, hrsqrt)
MC_HALF2_UNARY(h2rcp, hrcp)
MC_HALF2_UNARY(h2exp, hexp)
MC_HALF2_UNARY(h2log, hlog)
#undef MC_HALF2_UNARY
#undef MC_HALF2_BINARY
#undef MC_HALF2_TERNARY

inline __half2 __hisnan2(__half2 a) {
  return __half2(__hisnan(a.x) ? __ushort_as_half(0x3c00u) : __ushort_as_half(0), __hisnan(a.y) ? __ushort_as_half(0x3c00u) : __ushort_as_half(0));
}
#define MC_HALF2_COMPARE(name2, bname2, op)                                                          \
  inline __half2 name2(__half2 a, __half2 b) {                                                       \
    return __half2(op(a.x, b.x) ? __ushort_as_half(0x3c00u) : __ushort_as_half(0), op(a.y, b.y) ? __ushort_as_half(0x3c00u) : __ushort_as_half(0)); \
  }                                                                                                  \
  inline bool bname2(__half2 a, __half2 b) { return op(a.x, b.x) && op(a.y, b.y); }
MC_HALF2_COMPARE(__heq2, __hbeq2, __heq)
MC_HALF2_COMPARE(__hne2, __hbne2, __hne)
MC_HALF2_COMPARE(__hlt2, __hblt2, __hlt)
MC_HALF2_COMPARE(__hle2, __hble2, __hle)
MC_HALF2_COMPARE(__hgt2, __hbgt2, __hgt)
MC_HALF2_COMPARE(__hge2, __hbge2, __hge)
#undef MC_HALF2_COMPARE

// ---- operators, as cuda_fp16.hpp defines them --------------------------------------------------
inline __half operator+(const __half& a, const __half& b) { return __hadd(a, b); }
inline __half operator-(const __half& a, const __half& b) { return __hsub(a, b); }
inline __half operator*(const __half& a, const __half& b) { return __hmul(a, b); }
inline __half operator/(const __half& a, const __half& b) { return __hdiv(a, b); }
inline __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
inline __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
inline __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
inline __half& operator/=(__half& a, const __half& b) { return a = __hdiv(a, b); }
inline __half& operator++(__half& h) { return h += __half(__ushort_as_half(0x3c00u)); }
inline __half& operator--(__half& h) { return h -= __half(__ushort_as_half(0x3c00u)); }
inline __half operator++(__half& h, int) { const __half r = h; ++h; return r; }
inline __half operator--(__half& h, int) { const __half r = h; --h; return r; }
inline __half operator+(const __half& h) { return h; }
inline __half operator-(const __half& h) { return __hneg(h); }
inline bool operator==(const __half& a, const __half& b) { return __heq(a, b); }
inline bool operator!=(const __half& a, const __half& b) { return __hneu(a, b); }
inline bool operator>(const __half& a, const __half& b) { return __hgt(a, b); }
inline bool operator<(const __half& a, const __half& b) { return __hlt(a, b); }
inline bool operator>=(const __half& a, const __half& b) { return __hge(a, b); }
inline bool operator<=(const __half& a, const __half& b) { return __hle(a, b); }

inline __half2 operator+(const __half2& a, const __half2& b) { return __hadd2(a, b); }
inline __half2 operator-(const __half2& a, const __half2& b) { return __hsub2(a, b); }
inline __half2 operator*(const __half2& a, const __half2& b) { return __hmul2(a, b); }
inline __half2 operator/(const __half2& a, const __half2& b) { return __h2div(a, b); }
inline __half2& operator+=(__half2& a, const __half2& b) { return a = __hadd2(a, b); }
inline __half2& operator-=(__half2& a, const __half2& b) { return a = __hsub2(a, b); }
inline __half2& operator*=(__half2& a, const __half2& b) { return a = __hmul2(a, b); }
inline __half2& operator/=(__half2& a, const __half2& b) { return a = __h2div(a, b); }
inline __half2 operator+(const __half2& h) { return h; }
inline __half2 operator-(const __half2& h) { return __hneg2(h); }
inline bool operator==(const __half2& a, const __half2& b) { return __hbeq2(a, b); }
inline bool operator!=(const __half2& a, const __half2& b) { return !__heq(a.x, b.x) || !__heq(a.y, b.y); }
inline bool operator>(const __half2& a, const __half2& b) { return __hbgt2(a, b); }
inline bool operator<(const __half2& a, const __half2& b) { return __hblt2(a, b); }
inline bool operator>=(const __half2& a, const __half2& b) { return __hbge2(a, b); }
inline bool operator<=(const __half2& a, const __half2& b) { return __hble2(a, b); }

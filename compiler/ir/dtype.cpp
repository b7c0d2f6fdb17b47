#include "ir/dtype.h"

#include <cstring>

namespace modelc {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::float32: case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::float16: case DType::bfloat16: return 2;
    case DType::int8: case DType::uint8: case DType::boolean: return 1;
    case DType::undefined: return 0;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::boolean: return "bool";
    case DType::undefined: return "undefined";
  }
  return "undefined";
}

DType dtype_from_onnx(int code) {
  switch (code) {
    case 1: return DType::float32;
    case 2: return DType::uint8;
    case 3: return DType::int8;
    case 6: return DType::int32;
    case 7: return DType::int64;
    case 9: return DType::boolean;
    case 10: return DType::float16;
    case 16: return DType::bfloat16;
    default: return DType::undefined;
  }
}

std::string onnx_dtype_name(int code) {
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
                                "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (code >= 0 && code < static_cast<int>(sizeof(names) / sizeof(names[0]))) return names[code];
  return "type code " + std::to_string(code);
}

bool is_float(DType t) {
  return t == DType::float32 || t == DType::float16 || t == DType::bfloat16;
}

bool is_integer(DType t) {
  return t == DType::int8 || t == DType::uint8 || t == DType::int32 || t == DType::int64;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520: Inf
  const int exp = static_cast<int>(absx >> 23) - 127;
  if (exp >= -14) {  // normal half
    uint32_t mant = absx & 0x7fffffu;
    uint32_t h = (static_cast<uint32_t>(exp + 15) << 10) | (mant >> 13);
    const uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent correctly
    return static_cast<uint16_t>(sign | h);
  }
  if (exp < -25) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  // Subnormal: value = mant24 * 2^(exp-23); half subnormal unit is 2^-24.
  const uint32_t mant24 = (absx & 0x7fffffu) | 0x800000u;
  const int shift = -exp - 1;  // 14..24: bits to drop so the unit becomes 2^-24
  uint32_t h = mant24 >> shift;
  const uint32_t rest = mant24 & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t x;
  if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    x = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    x = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
    x = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bfloat16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace modelc

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

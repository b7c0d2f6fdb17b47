#include "ir/dtype.h"

#include <cmath>
#include <cstring>

namespace modelc {

namespace {

// The element types, one row each (ONNX code order but bool last: the order lists print).
const DTypeInfo kTypes[] = {
    {DType::float32, "float32", 4, DTypeKind::floating},
    {DType::float16, "float16", 2, DTypeKind::floating},
    {DType::bfloat16, "bfloat16", 2, DTypeKind::floating},
    {DType::float64, "float64", 8, DTypeKind::floating},
    {DType::int8, "int8", 1, DTypeKind::signed_int},
    {DType::uint8, "uint8", 1, DTypeKind::unsigned_int},
    {DType::int16, "int16", 2, DTypeKind::signed_int},
    {DType::uint16, "uint16", 2, DTypeKind::unsigned_int},
    {DType::int32, "int32", 4, DTypeKind::signed_int},
    {DType::uint32, "uint32", 4, DTypeKind::unsigned_int},
    {DType::int64, "int64", 8, DTypeKind::signed_int},
    {DType::uint64, "uint64", 8, DTypeKind::unsigned_int},
    {DType::boolean, "bool", 1, DTypeKind::boolean},
};

const DTypeInfo kUndefined = {DType::undefined, "undefined", 0, DTypeKind::none};

}  // namespace

const DTypeInfo& dtype_info(DType t) {
  for (const DTypeInfo& i : kTypes) {
    if (i.dtype == t) return i;
  }
  return kUndefined;
}

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> all = [] {
    std::vector<DType> v;
    for (const DTypeInfo& i : kTypes) v.push_back(i.dtype);
    return v;
  }();
  return all;
}

std::size_t dtype_size(DType t) { return dtype_info(t).size; }

const char* dtype_name(DType t) { return dtype_info(t).name; }

DType dtype_from_onnx(int code) {
  for (const DTypeInfo& i : kTypes) {
    if (static_cast<int>(i.dtype) == code) return i.dtype;
  }
  return DType::undefined;
}

std::string onnx_dtype_name(int code) {
  static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32",
                                "INT64", "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64",
                                "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (code >= 0 && code < static_cast<int>(sizeof(names) / sizeof(names[0]))) return names[code];
  return "type code " + std::to_string(code);
}

bool is_float(DType t) { return dtype_info(t).kind == DTypeKind::floating; }

bool is_narrow_float(DType t) { return is_float(t) && dtype_size(t) <= 4; }

bool is_signed_int(DType t) { return dtype_info(t).kind == DTypeKind::signed_int; }

bool is_unsigned_int(DType t) { return dtype_info(t).kind == DTypeKind::unsigned_int; }

bool is_integer(DType t) { return is_signed_int(t) || is_unsigned_int(t); }

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

float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);  // nearest even
  if (std::isnan(d) || std::isinf(f) || static_cast<double>(f) == d) return f;
  // Inexact: truncate toward zero, then set the last bit.
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t x;
  std::memcpy(&x, &f, 4);
  x |= 1u;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace modelc

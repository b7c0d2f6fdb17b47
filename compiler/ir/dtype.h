// compiler/ir/dtype.h — element types modelc supports, and BF16 conversion (FP16's is
// runtime_stub/half_bits.h, the one the generated code and the host emulation use too).
//
// Every fact about an element type (its name, size, kind) is one row of the table in dtype.cpp
// (dtype_info); the functions below read it. A new type is an enumerator here and a row there,
// plus its storage type in ir/tensor.cpp, runtime_stub/npy.h and templates/tensor_index.cuh.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace modelc {

/// \brief Element types of Values and Tensors. The numbers are ONNX's
/// TensorProto.DataType codes, so conversion from the protobuf is a cast.
enum class DType : int {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  bfloat16 = 16,
};

/// \brief What kind of number an element type holds.
enum class DTypeKind { none, floating, signed_int, unsigned_int, boolean };

/// \brief One row of the element-type table.
struct DTypeInfo {
  DType dtype;
  const char* name;  ///< "float32", "uint16", ... (what `inspect` prints; numpy's name but for bool)
  std::size_t size;  ///< bytes per element
  DTypeKind kind;
};

/// The row of `t` (a row of kind none, size 0, name "undefined" for DType::undefined).
const DTypeInfo& dtype_info(DType t);
/// Every supported element type, in the table's order (float32 first, bool last).
const std::vector<DType>& all_dtypes();

/// Bytes per element (0 for undefined).
std::size_t dtype_size(DType t);
/// "float32", "float16", ... (the names `inspect` prints and .npy headers map to).
const char* dtype_name(DType t);
/// The DType for an ONNX TensorProto.DataType code; DType::undefined when modelc does not support it.
DType dtype_from_onnx(int code);
/// ONNX's name of a TensorProto.DataType code ("DOUBLE", "STRING", ...), for error messages.
std::string onnx_dtype_name(int code);
bool is_float(DType t);     ///< float32, float16, bfloat16, float64
/// float32, float16, bfloat16: the float types the kernels compute in FP32 (float64 computes in
/// FP64), which fused epilogues and fused elementwise ops (FP32 math) may take.
bool is_narrow_float(DType t);
bool is_integer(DType t);   ///< the signed and unsigned integer types (not bool)
bool is_signed_int(DType t);    ///< int8, int16, int32, int64
bool is_unsigned_int(DType t);  ///< uint8, uint16, uint32, uint64

/// bfloat16 from float, round to nearest even.
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);
/// \brief double -> float rounded to odd (truncated, the last bit set when inexact): a float
/// that a second rounding to float16 or bfloat16 (nearest even) turns into the nearest-even
/// rounding of the double itself (no double rounding; float has more than 2 bits to spare).
float double_to_float_round_odd(double d);

}  // namespace modelc

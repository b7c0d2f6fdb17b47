// compiler/ir/dtype.h — element types modelc supports, and BF16 conversion (FP16's is
// runtime_stub/half_bits.h, the one the generated code and the host emulation use too).
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
  int32 = 6,
  int64 = 7,
  boolean = 9,
  float16 = 10,
  bfloat16 = 16,
};

/// Bytes per element (0 for undefined).
std::size_t dtype_size(DType t);
/// "float32", "float16", ... (the names `inspect` prints and .npy headers map to).
const char* dtype_name(DType t);
/// The DType for an ONNX TensorProto.DataType code; DType::undefined when modelc does not support it.
DType dtype_from_onnx(int code);
/// ONNX's name of a TensorProto.DataType code ("DOUBLE", "STRING", ...), for error messages.
std::string onnx_dtype_name(int code);
bool is_float(DType t);    ///< float32, float16, bfloat16
bool is_integer(DType t);  ///< int8, uint8, int32, int64 (not bool)

/// bfloat16 from float, round to nearest even.
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

}  // namespace modelc

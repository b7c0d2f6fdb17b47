// compiler/io/tensor_io.h — .npy and ONNX TensorProto (.pb) files as Tensors: an adapter over
// runtime_stub/npy.h, the codec the generated program uses too (one reader, one writer, the same
// bytes and the same checks on both sides). Its errors become Errors naming the file.
#pragma once

#include <string>

#include "ir/tensor.h"
#include "runtime_stub/npy.h"

namespace modelc {

/// \brief Reads a .npy file (format 1.0/2.0/3.0; C order; little-endian; the
/// dtypes of DType but bfloat16). Throws Error naming the file for anything else
/// (Fortran order, big-endian, unsupported dtype, truncated data).
Tensor read_npy(const std::string& path);
/// Writes `t` as .npy version 1.0, atomically (bool as '|b1', float16 as '<f2',
/// bfloat16 is refused: numpy has no such dtype).
void write_npy(const std::string& path, const Tensor& t);
/// Encodes / decodes .npy bytes (the functions above are these plus file I/O).
std::string encode_npy(const Tensor& t);
Tensor decode_npy(const std::string& bytes, const std::string& what);

/// Reads a serialized onnx.TensorProto (the ONNX test-data format): every dtype of DType.
Tensor read_tensor_pb(const std::string& path);

/// By extension: .npy or .pb; Error otherwise. Only a regular file is read (a FIFO, a device or
/// a directory is an Error at once), and no more than its size when opened.
Tensor read_tensor_file(const std::string& path);
/// The same for a file meant to hold a `dtype`[`shape`] tensor (a model's input): a file larger
/// than such a file can be (mc_npy::max_file_bytes) is an Error before it is read; for a bfloat16
/// input a .npy file holds float32, rounded to nearest even (mc_npy::read_input). The caller
/// compares the dtype and shape read with its own.
Tensor read_tensor_file(const std::string& path, DType dtype, const Shape& shape);

/// Writes `bytes` to `path` atomically: a temporary file in the same folder,
/// renamed over `path` once complete (a reader never sees a partial file).
/// Throws Error naming the file.
void write_file_atomic(const std::string& path, const std::string& bytes);

/// The same data as the runtime's array and back (the dtype codes are the same numbers).
mc_npy::Array to_array(const Tensor& t);
Tensor from_array(mc_npy::Array a);

}  // namespace modelc

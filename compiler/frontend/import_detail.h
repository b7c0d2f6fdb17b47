// compiler/frontend/import_detail.h — pieces of the ONNX frontend shared by its
// files (not a public interface: use onnx_import.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace onnx {
class ModelProto;
class TensorProto;
}  // namespace onnx

namespace modelc::detail {

/// The DType for an ONNX type code; Error "`what` has type DOUBLE, which
/// modelc does not support" otherwise.
DType checked_dtype(int code, const std::string& what);
/// numel * dtype size, with Errors for negative dims and absurd sizes.
int64_t checked_num_bytes(const Shape& shape, DType dtype, const std::string& what);

/// One tensor whose data lives in a file beside the model, checked but not read.
struct ExternalRef {
  onnx::TensorProto* tensor = nullptr;
  std::string what;      ///< "initializer 'w'" (for errors)
  std::string location;  ///< as written in the model
  std::string path;      ///< base_dir + location
  uint64_t offset = 0;
  uint64_t length = 0;
  bool initializer = false;  ///< a graph initializer (else a node attribute)
};

/// \brief Finds and checks every external-data reference of the main graph
/// (initializers and node tensor attributes) without reading any data:
/// location relative to `base_dir`, no absolute paths, no '..', no symlink
/// in any component, a regular file, offset/length in range, length equal
/// to the tensor's size. Throws Error naming `file`, the tensor and the data file.
std::vector<ExternalRef> find_external_data(onnx::ModelProto& m, const std::string& base_dir, const std::string& file);

/// Reads the ref.length bytes of one reference into `dst`.
void read_external_data(const ExternalRef& ref, const std::string& file, char* dst);

/// Reads each reference into its tensor's raw_data (the tensor is then an
/// ordinary embedded one).
void load_external_data(const std::vector<ExternalRef>& refs, const std::string& file);

}  // namespace modelc::detail

// compiler/frontend/onnx_import.h — .onnx file -> Graph.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ir/graph.h"

namespace onnx { class TensorProto; }

namespace modelc {

struct LoadOptions {
  /// --shape NAME=1x3x224x224 (repeatable): full static shapes for graph inputs.
  std::map<std::string, Shape> input_shapes;
  /// --batch N: value for the first dim of every input whose first dim is symbolic.
  int64_t batch = 0;
  /// Run ONNX's checker and shape inference (where libonnx knows the opset).
  bool onnx_checks = true;
};

/// \brief Loads a model: parses the protobuf (files up to protobuf's 2 GB
/// limit), resolves external data (relative to the model's folder; absolute
/// paths, '..' escapes, symlinks, out-of-range offsets/lengths and size
/// mismatches are refused), runs ONNX's checker and shape inference where the
/// opset is one libonnx knows, resolves symbolic dims from `opt`, imports
/// into the Graph IR and runs modelc's own shape inference
/// (ops::infer_graph). Throws Error naming the file, node or input at fault.
std::unique_ptr<Graph> load_onnx(const std::string& path, const LoadOptions& opt = {});

/// Same, from bytes already in memory (tests). `base_dir` resolves external data.
std::unique_ptr<Graph> load_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                       const std::string& display_name, const LoadOptions& opt = {});

/// A TensorProto's data (raw_data or the typed fields) as a Tensor. External
/// data must already have been loaded into raw_data. `what` names the tensor
/// in errors.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what);

/// Parses "1x3x224x224" (also "1,3,224,224"); Error on anything else.
Shape parse_shape(const std::string& s);

}  // namespace modelc

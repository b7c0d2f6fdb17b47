// compiler/frontend/onnx_import.h — .onnx file -> Graph.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/shape_inference.h"

namespace onnx { class TensorProto; }

namespace modelc {

/// The highest default-domain opset modelc accepts.
constexpr int kMaxOpset = 21;

struct LoadOptions {
  /// --shape NAME=1x3x224x224 (repeatable): full static shapes for graph inputs.
  std::map<std::string, Shape> input_shapes;
  /// --batch N: value for the first dim of every input whose first dim is symbolic. On a model
  /// that fixes its batch (no input's first dim is symbolic, and the inputs whose first dim it
  /// sets all fix the same one), a re-batch: those inputs get N as their first dim, and the graph
  /// imported so must compute item by item what the model at its own batch does
  /// (frontend/batch.h check_batch; Error naming the node that hard-codes the batch otherwise).
  /// A --shape whose first dim is N takes part in the re-batch where the model fixes another.
  int64_t batch = 0;
  /// Graph inputs fixed to these values: each becomes a constant instead of an
  /// input (a shape tensor fed as an input, as ONNX's node tests do: modelc
  /// needs it at compile time). Dtype and shape must match the declaration.
  std::map<std::string, Tensor> input_values;
  /// \brief --bind NAME=FILE (repeatable): graph inputs fixed to the data of a tensor file (.npy
  /// or ONNX .pb), which then join input_values (frontend/bind_inputs.cpp). Each argument is split
  /// at the '=' whose left part names a graph input (names and paths may contain '='). The file
  /// must hold the input's declared element type; its shape fixes the input's symbolic dims and
  /// must equal the declared ones (and --shape, when given for the input).
  std::vector<std::string> bind;
  /// Run ONNX's checker and shape inference (where libonnx knows the opset).
  bool onnx_checks = true;
  /// For `modelc inspect`: a node that is unsupported (unknown op or form,
  /// failed validation or shape rule, unsupported attribute) does not abort
  /// the load; it is listed in LoadResult::unsupported, and every value that
  /// depends on it is left without a type. The graph is then not verified.
  bool collect_unsupported = false;
};

/// What the model file says about itself (for `modelc inspect`).
struct ModelInfo {
  std::string file;
  int64_t ir_version = 0;
  std::string producer_name, producer_version;
  std::map<std::string, int64_t> opset_imports;  ///< domain ("" = default) -> version
  /// ONNX's checker and shape inference: "passed", or "skipped..." and why.
  std::string onnx_checks;
};

struct LoadResult {
  std::unique_ptr<Graph> graph;
  ModelInfo info;
  /// Only filled with LoadOptions::collect_unsupported.
  std::vector<ops::Unsupported> unsupported;
};

/// \brief Loads a model: parses the protobuf (a regular file up to protobuf's
/// 2 GB limit; FIFOs and devices are refused without waiting on them), checks
/// every TensorProto (detail::check_model_tensors), resolves external data
/// (relative to the model's folder; absolute paths, '..' escapes, symlinks,
/// out-of-range offsets/lengths and size mismatches are refused), runs ONNX's
/// checker and shape inference where the opset is one libonnx knows, resolves
/// symbolic dims from `opt` (no tensor of more than kMaxTensorElements
/// elements), imports into the Graph IR and runs modelc's own shape inference
/// (ops::infer_graph). Throws Error naming the file, node or input at fault.
std::unique_ptr<Graph> load_onnx(const std::string& path, const LoadOptions& opt = {});

/// Same, from bytes already in memory (tests). `base_dir` resolves external data.
std::unique_ptr<Graph> load_onnx_bytes(const std::string& bytes, const std::string& base_dir,
                                       const std::string& display_name, const LoadOptions& opt = {});

/// The same loads, with the model's metadata and (with collect_unsupported)
/// the unsupported nodes.
LoadResult load_onnx_model(const std::string& path, const LoadOptions& opt = {});
LoadResult load_onnx_model_bytes(const std::string& bytes, const std::string& base_dir,
                                 const std::string& display_name, const LoadOptions& opt = {});

/// A TensorProto's data (raw_data or the typed fields) as a Tensor, checked
/// (detail::check_tensor_proto) before anything is allocated. External data
/// must already have been loaded into raw_data. `what` names the tensor in errors.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what);

/// Parses "1x3x224x224" (also "1,3,224,224"); Error on anything else.
Shape parse_shape(const std::string& s);

/// The highest default-domain opset the linked libonnx has schemas for (17
/// for libonnx 1.12): ONNX's checker and shape inference run up to it.
int onnx_max_known_opset();

}  // namespace modelc

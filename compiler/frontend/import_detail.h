// compiler/frontend/import_detail.h — pieces of the ONNX frontend shared by its
// files (not a public interface: use onnx_import.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime_stub/regular_file.h"

namespace onnx {
class AttributeProto;
class GraphProto;
class ModelProto;
class NodeProto;
class TensorProto;
}  // namespace onnx

namespace modelc::detail {

/// \brief Checks every TensorProto of the model against onnx.proto before any ONNX library code
/// reads one (libonnx's checker and shape inference trust their sizes): graph initializers,
/// sparse initializers, node attributes ('t', 'tensors', sparse tensors) and, recursively,
/// every subgraph ('g', 'graphs': If, Loop, Scan bodies), model-local function and training
/// graph. See check_tensor_proto; external data is allowed only for the main graph's
/// initializers and node attributes (find_external_data checks it). Throws Error naming `file`
/// and the tensor ("node 'If_0' (If) attribute 'then_branch': initializer 'w'").
void check_model_tensors(const onnx::ModelProto& m, const std::string& file);

/// \brief One TensorProto against onnx.proto: a known data_type, dims >= 0, at most
/// kMaxTensorElements elements, at most one data field, and that field the dtype's own with one
/// value per element (two for complex), or raw_data of exactly elements x the dtype's size
/// (not for strings). A tensor with external data is checked up to its data. Nothing is allocated.
void check_tensor_proto(const onnx::TensorProto& t, const std::string& what);

/// The name modelc gives the node at `index` of its graph: its own, or OpType_index.
std::string node_name(const onnx::NodeProto& n, int index);

/// \brief Opens `path` through runtime_stub/regular_file.h, the one opener of files that users
/// and models name (a FIFO never blocks the open, a device is never read): `f` open, `f.size` its
/// size. Error "`what` is a FIFO (named pipe), not a regular file", "`what`: cannot open: REASON".
void open_regular_file(const std::string& path, const std::string& what, mc_io::File& f);

/// The DType for an ONNX type code; Error "`what` has type DOUBLE, which
/// modelc does not support" otherwise.
DType checked_dtype(int code, const std::string& what);
/// Error for a negative dim or more than kMaxTensorElements elements; `data_type` (an ONNX
/// code) names the element type in the message.
void check_shape(const Shape& shape, int data_type, const std::string& what);

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
/// (initializers and node tensor attributes; their dims were checked by check_model_tensors,
/// which must run first) without reading any data:
/// location relative to `base_dir`, no absolute paths, no '..', no symlink
/// in any component, a regular file, offset/length in range, length equal
/// to the tensor's size. Throws Error naming `file`, the tensor and the data file.
std::vector<ExternalRef> find_external_data(onnx::ModelProto& m, const std::string& base_dir, const std::string& file);

/// Reads the ref.length bytes of one reference into `dst`.
void read_external_data(const ExternalRef& ref, const std::string& file, char* dst);

/// Reads each reference into its tensor's raw_data (the tensor is then an
/// ordinary embedded one).
void load_external_data(const std::vector<ExternalRef>& refs, const std::string& file);

/// \brief The graph inputs LoadOptions::bind fixes, each read from its file and checked against
/// the input's declaration (element type; rank and fixed dims, and --shape when given), by input
/// name. Throws Error naming the argument, the input and the file: an argument that names no
/// graph input (listing the inputs), an initializer, an input bound twice or also given in
/// LoadOptions::input_values, a file that cannot be read, a type or shape that disagrees.
std::map<std::string, Tensor> bound_inputs(const onnx::GraphProto& g, const std::vector<std::string>& bind,
                                           const std::map<std::string, Tensor>& input_values,
                                           const std::map<std::string, Shape>& input_shapes,
                                           const std::string& file);
/// An attribute as the IR holds it (a graph attribute: its kind only; If and Loop bodies are read
/// by import_nodes). Error for a kind modelc does not support.
Attribute convert_attribute(const onnx::AttributeProto& a);

/// \brief The names a graph's nodes see: its own values, then the enclosing graph's (an If branch
/// or a Loop body reads the values of the graph around it by name).
struct Scope {
  std::unordered_map<std::string, Value*> values;
  const Scope* parent = nullptr;
  /// The value of that name, here or in an enclosing scope; null when none.
  Value* find(const std::string& name) const;
};

/// \brief What importing nodes needs beside them (onnx_import.cpp's import_graph makes it).
struct NodeImport {
  Graph& g;
  const std::map<std::string, int64_t>& opsets;
  bool collect_unsupported;  ///< LoadOptions::collect_unsupported: problems recorded, not thrown
  const std::string& file;
  std::map<const Node*, std::string>& problems;  ///< node -> why it is unsupported (collect mode)
  std::size_t inferred = 0;  ///< g's nodes before this one are typed (control flow's decisions)
};

/// \brief Imports the nodes of `graph` into ctx.g in order, each output into `scope` (a subgraph's
/// names made unique with `prefix`, e.g. "loop/2/"). If and Loop are inlined at compile time
/// (frontend/control_flow.cpp): If's branch by its constant condition, Loop's body once per
/// iteration while its constant trip count and condition say so; a condition or trip count computed
/// at run time is an Error naming the node (with collect_unsupported: a problem recorded for it).
void import_nodes(NodeImport& ctx, const onnx::GraphProto& graph, Scope& scope, const std::string& prefix);

}  // namespace modelc::detail

// compiler/frontend/model_tensors.cpp — every TensorProto of a model checked before any ONNX
// library code reads one.
//
// libonnx's checker and shape inference trust a tensor's sizes: its ParseData copies all of
// raw_data into a vector sized by raw_data's length / the element size (a heap overflow when the
// length is not a multiple), and shape rules index the values by the dims. So the walk covers
// every place the proto can hold a tensor, subgraphs and functions included (libonnx infers
// them too), before the first libonnx call in import_model.
#include "frontend/import_detail.h"
#include "onnx/onnx_pb.h"
#include "support/error.h"

namespace modelc::detail {

namespace {

class TensorWalk {
 public:
  explicit TensorWalk(std::string file) : file_(std::move(file)) {}

  // `where` prefixes every name ("" for the main graph); external data is find_external_data's
  // to read, which it does for the main graph only.
  void graph(const onnx::GraphProto& g, const std::string& where, bool main) {
    for (const auto& t : g.initializer()) tensor(t, where + "initializer '" + t.name() + "'", main);
    for (const auto& s : g.sparse_initializer()) sparse(s, where + "sparse initializer '" + s.values().name() + "'");
    nodes(g.node(), where, main);
  }

  void nodes(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& list, const std::string& where, bool main) {
    for (int k = 0; k < list.size(); ++k) {
      const onnx::NodeProto& n = list.Get(k);
      for (const auto& a : n.attribute()) {
        const std::string what = where + "node '" + node_name(n, k) + "' (" + n.op_type() + ") attribute '" +
                                 a.name() + "'";
        if (a.has_t()) tensor(a.t(), what, main);
        for (int i = 0; i < a.tensors_size(); ++i) tensor(a.tensors(i), what + " tensor " + std::to_string(i), main);
        if (a.has_sparse_tensor()) sparse(a.sparse_tensor(), what);
        for (int i = 0; i < a.sparse_tensors_size(); ++i) {
          sparse(a.sparse_tensors(i), what + " tensor " + std::to_string(i));
        }
        if (a.has_g()) graph(a.g(), what + ": ", false);
        for (int i = 0; i < a.graphs_size(); ++i) graph(a.graphs(i), what + " graph " + std::to_string(i) + ": ", false);
      }
    }
  }

 private:
  void tensor(const onnx::TensorProto& t, const std::string& what, bool external_ok) {
    try {
      check_tensor_proto(t, what);
    } catch (const Error& e) {
      throw fail(e.message(), e.hint());
    }
    if (t.data_location() == onnx::TensorProto::EXTERNAL && !external_ok) {
      throw fail(what + " has external data, which modelc reads only for the main graph's initializers and nodes",
                 "re-export the model with this tensor's data embedded");
    }
  }

  void sparse(const onnx::SparseTensorProto& s, const std::string& what) {
    tensor(s.values(), what + " values", false);
    tensor(s.indices(), what + " indices", false);
    try {
      check_shape(Shape(s.dims().begin(), s.dims().end()), s.values().data_type(), what);
    } catch (const Error& e) {
      throw fail(e.message(), e.hint());
    }
  }

  Error fail(const std::string& message, const std::string& hint = {}) const {
    Error::Where w;
    w.file = file_;
    return Error(w, message, hint);
  }

  std::string file_;
};

}  // namespace

std::string node_name(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
}

void check_model_tensors(const onnx::ModelProto& m, const std::string& file) {
  TensorWalk walk(file);
  walk.graph(m.graph(), "", true);
  for (const auto& f : m.functions()) walk.nodes(f.node(), "function '" + f.name() + "': ", false);
  for (int i = 0; i < m.training_info_size(); ++i) {
    const std::string where = "training_info " + std::to_string(i);
    walk.graph(m.training_info(i).initialization(), where + " initialization: ", false);
    walk.graph(m.training_info(i).algorithm(), where + " algorithm: ", false);
  }
}

}  // namespace modelc::detail

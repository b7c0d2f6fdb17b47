// compiler/ir/graph.h — the Graph IR: typed Values with static shapes, Nodes, constant data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "support/error.h"

namespace modelc {

class Node;

/// \brief An ONNX attribute value. `kind` says which member holds it.
struct Attribute {
  enum class Kind { f, i, s, t, floats, ints, strings, graph };
  Kind kind = Kind::i;
  double f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;

  static const char* kind_name(Kind k);
  std::string str() const;  ///< printable, e.g. "[1,1]" or "3" or "'relu'"
};

/// \brief A tensor in the graph: a graph input, a constant, or a node output.
/// Shapes are static once the frontend is done (symbolic dims resolved).
class Value {
 public:
  explicit Value(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return num_elements(shape_); }
  bool has_type() const { return dtype_ != DType::undefined; }
  void set_type(DType t, Shape s) { dtype_ = t; shape_ = std::move(s); }
  void set_dtype(DType t) { dtype_ = t; }
  void set_shape(Shape s) { shape_ = std::move(s); }
  /// "float32[1x3x224x224]"
  std::string type_str() const;

  /// Constant data (initializer, Constant node output, or value propagated
  /// from constant inputs during shape inference).
  bool is_constant() const { return constant_.has_value(); }
  const Tensor& constant() const { return *constant_; }
  /// Also sets dtype and shape from the tensor.
  void set_constant(Tensor t);
  void clear_constant() { constant_.reset(); }

  /// True for an initializer (a weight stored in the model), as opposed to
  /// data computed from constants.
  bool is_initializer() const { return initializer_; }
  void set_initializer(bool b) { initializer_ = b; }

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Node*>& users() const { return users_; }

  bool is_graph_input() const { return graph_input_; }
  bool is_graph_output() const { return graph_output_; }

 private:
  friend class Node;
  friend class Graph;
  std::string name_;
  DType dtype_ = DType::undefined;
  Shape shape_;
  std::optional<Tensor> constant_;
  bool initializer_ = false;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Node*> users_;  // one entry per use (a node using a value twice appears twice)
  bool graph_input_ = false;
  bool graph_output_ = false;
};

/// \brief One ONNX operator application. Optional inputs that are omitted are
/// null entries in inputs().
class Node {
 public:
  Node(std::string op, std::string name, int opset) : op_(std::move(op)), name_(std::move(name)), opset_(opset) {}

  const std::string& op() const { return op_; }
  const std::string& name() const { return name_; }
  const std::string& domain() const { return domain_; }
  void set_domain(std::string d) { domain_ = std::move(d); }
  int opset() const { return opset_; }
  void set_opset(int v) { opset_ = v; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  /// True when input i is present (not omitted, not past the end).
  bool has_input(int i) const { return i >= 0 && i < num_inputs() && inputs_[i] != nullptr; }
  bool has_output(int i) const { return i >= 0 && i < num_outputs() && outputs_[i] != nullptr; }
  /// Input i; throws Error naming the node when it is absent.
  Value& input(int i) const;
  Value& output(int i) const;
  Value* input_ptr(int i) const { return has_input(i) ? inputs_[i] : nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }

  /// Rewiring keeps every Value's users() in step.
  void set_input(int i, Value* v);
  void add_input(Value* v);
  void remove_input(int i);
  void set_output(int i, Value* v);
  void add_output(Value* v);

  // Attributes.
  const std::map<std::string, Attribute>& attrs() const { return attrs_; }
  bool has_attr(const std::string& name) const { return attrs_.count(name) != 0; }
  const Attribute* attr(const std::string& name) const;
  void set_attr(const std::string& name, Attribute a) { attrs_[name] = std::move(a); }
  void remove_attr(const std::string& name) { attrs_.erase(name); }
  // Typed getters: return the default when absent, throw Error (naming the
  // node and attribute) when present with the wrong kind.
  int64_t attr_int(const std::string& name, int64_t def) const;
  double attr_float(const std::string& name, double def) const;
  std::string attr_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> attr_ints(const std::string& name, const std::vector<int64_t>& def = {}) const;
  std::vector<double> attr_floats(const std::string& name, const std::vector<double>& def = {}) const;
  const Tensor* attr_tensor(const std::string& name) const;
  void set_attr_int(const std::string& name, int64_t v);
  void set_attr_float(const std::string& name, double v);
  void set_attr_string(const std::string& name, std::string v);
  void set_attr_ints(const std::string& name, std::vector<int64_t> v);
  void set_attr_floats(const std::string& name, std::vector<double> v);

  /// The ONNX nodes this node stands for, by name, when a pass folded or fused
  /// several into it (the report names them; ops::lookup accepts the internal
  /// "modelc" domain only on nodes that record them). Empty on a node as
  /// imported: it then covers itself alone.
  const std::vector<std::string>& covers() const { return covers_; }
  void set_covers(std::vector<std::string> c) { covers_ = std::move(c); }

  /// An Error whose context is this node (name, op, opset).
  [[nodiscard]] Error error(const std::string& message, const std::string& hint = {}) const;

 private:
  friend class Graph;
  std::string op_;
  std::string name_;
  std::string domain_;
  int opset_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Attribute> attrs_;
  std::vector<std::string> covers_;
};

/// \brief A model's graph. Owns its Values and Nodes; nodes() is kept in a
/// topological order (the verifier checks it).
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// A copy to rewrite separately: the same values (constant data shared until written), nodes,
  /// names and order, each value's readers in the same order.
  std::unique_ptr<Graph> clone() const;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  /// Opset of the default ONNX domain.
  int opset() const { return opset_; }
  void set_opset(int v) { opset_ = v; }

  /// A new Value; the name is made unique by suffixing when it is taken.
  Value* add_value(const std::string& name);
  Value* find_value(const std::string& name) const;
  /// A Value holding constant data (an initializer when `initializer`).
  Value* add_constant(const std::string& name, Tensor t, bool initializer = false);

  /// A new node appended at the end (or before `before` when given), with
  /// outputs already created. Node names are made unique like value names.
  Node* add_node(const std::string& op, const std::string& name, const std::vector<Value*>& inputs,
                 const std::vector<Value*>& outputs, Node* before = nullptr);
  /// Removes a node; its outputs must have no users left (or be unused).
  void remove_node(Node* n);
  /// Every use of `from` (node inputs and graph outputs) now reads `to`.
  void replace_all_uses(Value* from, Value* to);
  /// Values no node reads, not graph outputs: dropped. Nodes none of whose
  /// outputs are used: dropped. Returns the number of nodes removed.
  int remove_dead();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<Node*> nodes_of(const std::string& op) const;
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  void add_input(Value* v);
  void add_output(Value* v);
  void set_output(int i, Value* v);
  std::vector<Value*> values() const;

  /// Throws Error describing the first violation: a value without a type,
  /// a node input not defined before its use, two producers, a cycle or an
  /// out-of-order node, an output that is not produced.
  void verify() const;
  /// Readable text form, one node a line.
  std::string to_string(bool with_constants = false) const;

 private:
  std::string unique_value_name(const std::string& base) const;
  std::string name_;
  int opset_ = 0;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, int> node_names_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
};

}  // namespace modelc

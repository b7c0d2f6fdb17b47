#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "support/error.h"

namespace modelc {

// ---- Attribute -------------------------------------------------------------

const char* Attribute::kind_name(Kind k) {
  switch (k) {
    case Kind::f: return "float";
    case Kind::i: return "int";
    case Kind::s: return "string";
    case Kind::t: return "tensor";
    case Kind::floats: return "floats";
    case Kind::ints: return "ints";
    case Kind::strings: return "strings";
    case Kind::graph: return "graph";
  }
  return "?";
}

namespace {
std::string fmt_double(double d) {
  std::ostringstream os;
  os << d;
  return os.str();
}
template <class T, class F>
std::string list_str(const std::vector<T>& v, F f) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += f(v[i]);
  }
  return s + "]";
}
}  // namespace

std::string Attribute::str() const {
  switch (kind) {
    case Kind::f: return fmt_double(f);
    case Kind::i: return std::to_string(i);
    case Kind::s: return "'" + s + "'";
    case Kind::t: return "tensor " + std::string(dtype_name(t.dtype())) + "[" + shape_str(t.shape()) + "]";
    case Kind::floats: return list_str(floats, fmt_double);
    case Kind::ints: return list_str(ints, [](int64_t x) { return std::to_string(x); });
    case Kind::strings: return list_str(strings, [](const std::string& x) { return "'" + x + "'"; });
    case Kind::graph: return "<graph>";
  }
  return "?";
}

// ---- Value -----------------------------------------------------------------

std::string Value::type_str() const {
  return std::string(dtype_name(dtype_)) + "[" + (shape_.empty() ? "" : shape_str(shape_)) + "]";
}

void Value::set_constant(Tensor t) {
  dtype_ = t.dtype();
  shape_ = t.shape();
  constant_ = std::move(t);
}

// ---- Node ------------------------------------------------------------------

Error Node::error(const std::string& message, const std::string& hint) const {
  return Error(Error::Where{name_, op_, opset_, {}}, message, hint);
}

Value& Node::input(int i) const {
  if (!has_input(i)) throw error("input " + std::to_string(i) + " is missing");
  return *inputs_[i];
}

Value& Node::output(int i) const {
  if (!has_output(i)) throw error("output " + std::to_string(i) + " is missing");
  return *outputs_[i];
}

static void erase_one(std::vector<Node*>& v, Node* n) {
  auto it = std::find(v.begin(), v.end(), n);
  if (it != v.end()) v.erase(it);
}

void Node::set_input(int i, Value* v) {
  if (i >= num_inputs()) inputs_.resize(i + 1, nullptr);
  if (inputs_[i]) erase_one(inputs_[i]->users_, this);
  inputs_[i] = v;
  if (v) v->users_.push_back(this);
}

void Node::add_input(Value* v) { set_input(num_inputs(), v); }

void Node::remove_input(int i) {
  if (i < 0 || i >= num_inputs()) return;
  if (inputs_[i]) erase_one(inputs_[i]->users_, this);
  inputs_.erase(inputs_.begin() + i);
}

void Node::set_output(int i, Value* v) {
  if (i >= num_outputs()) outputs_.resize(i + 1, nullptr);
  if (outputs_[i] && outputs_[i]->producer_ == this) {
    outputs_[i]->producer_ = nullptr;
    outputs_[i]->producer_output_ = -1;
  }
  outputs_[i] = v;
  if (v) {
    v->producer_ = this;
    v->producer_output_ = i;
  }
}

void Node::add_output(Value* v) { set_output(num_outputs(), v); }

const Attribute* Node::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

namespace {
const Attribute* typed(const Node& n, const std::string& name, Attribute::Kind k) {
  const Attribute* a = n.attr(name);
  if (a && a->kind != k) {
    throw n.error("attribute '" + name + "' is " + Attribute::kind_name(a->kind) + ", expected " +
                  Attribute::kind_name(k));
  }
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& name, int64_t def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::i);
  return a ? a->i : def;
}
double Node::attr_float(const std::string& name, double def) const {
  const Attribute* a = attr(name);
  if (a && a->kind == Attribute::Kind::i) return static_cast<double>(a->i);  // tolerate ints for floats
  a = typed(*this, name, Attribute::Kind::f);
  return a ? a->f : def;
}
std::string Node::attr_string(const std::string& name, const std::string& def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::s);
  return a ? a->s : def;
}
std::vector<int64_t> Node::attr_ints(const std::string& name, const std::vector<int64_t>& def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::ints);
  return a ? a->ints : def;
}
std::vector<double> Node::attr_floats(const std::string& name, const std::vector<double>& def) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::floats);
  return a ? a->floats : def;
}
const Tensor* Node::attr_tensor(const std::string& name) const {
  const Attribute* a = typed(*this, name, Attribute::Kind::t);
  return a ? &a->t : nullptr;
}
void Node::set_attr_int(const std::string& name, int64_t v) {
  Attribute a; a.kind = Attribute::Kind::i; a.i = v; attrs_[name] = std::move(a);
}
void Node::set_attr_float(const std::string& name, double v) {
  Attribute a; a.kind = Attribute::Kind::f; a.f = v; attrs_[name] = std::move(a);
}
void Node::set_attr_string(const std::string& name, std::string v) {
  Attribute a; a.kind = Attribute::Kind::s; a.s = std::move(v); attrs_[name] = std::move(a);
}
void Node::set_attr_ints(const std::string& name, std::vector<int64_t> v) {
  Attribute a; a.kind = Attribute::Kind::ints; a.ints = std::move(v); attrs_[name] = std::move(a);
}
void Node::set_attr_floats(const std::string& name, std::vector<double> v) {
  Attribute a; a.kind = Attribute::Kind::floats; a.floats = std::move(v); attrs_[name] = std::move(a);
}

// ---- Graph -----------------------------------------------------------------

std::string Graph::unique_value_name(const std::string& base) const {
  if (!by_name_.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string n = base + "_" + std::to_string(k);
    if (!by_name_.count(n)) return n;
  }
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->name_ = name_;
  g->opset_ = opset_;
  g->node_names_ = node_names_;
  std::map<const Value*, Value*> value;
  std::map<const Node*, Node*> node;
  for (const auto& v : values_) {
    auto c = std::make_unique<Value>(v->name_);
    c->dtype_ = v->dtype_;
    c->shape_ = v->shape_;
    c->constant_ = v->constant_;
    c->initializer_ = v->initializer_;
    c->producer_output_ = v->producer_output_;
    c->graph_input_ = v->graph_input_;
    c->graph_output_ = v->graph_output_;
    value[v.get()] = c.get();
    g->by_name_[c->name_] = c.get();
    g->values_.push_back(std::move(c));
  }
  auto values_of = [&](const std::vector<Value*>& vs) {
    std::vector<Value*> r;
    for (const Value* v : vs) r.push_back(v ? value.at(v) : nullptr);
    return r;
  };
  for (const auto& n : nodes_) {
    auto c = std::make_unique<Node>(n->op_, n->name_, n->opset_);
    c->domain_ = n->domain_;
    c->inputs_ = values_of(n->inputs_);
    c->outputs_ = values_of(n->outputs_);
    c->attrs_ = n->attrs_;
    c->covers_ = n->covers_;
    node[n.get()] = c.get();
    g->nodes_.push_back(std::move(c));
  }
  for (const auto& v : values_) {
    Value* c = value.at(v.get());
    if (v->producer_) c->producer_ = node.at(v->producer_);
    for (const Node* u : v->users_) c->users_.push_back(node.at(u));
  }
  g->inputs_ = values_of(inputs_);
  g->outputs_ = values_of(outputs_);
  return g;
}

Value* Graph::add_value(const std::string& name) {
  auto v = std::make_unique<Value>(unique_value_name(name));
  Value* p = v.get();
  by_name_[p->name()] = p;
  values_.push_back(std::move(v));
  return p;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::add_constant(const std::string& name, Tensor t, bool initializer) {
  Value* v = add_value(name);
  v->set_constant(std::move(t));
  v->set_initializer(initializer);
  return v;
}

Node* Graph::add_node(const std::string& op, const std::string& name, const std::vector<Value*>& inputs,
                      const std::vector<Value*>& outputs, Node* before) {
  std::string n = name.empty() ? op : name;
  auto it = node_names_.find(n);
  if (it != node_names_.end()) {
    int k = ++it->second;
    std::string candidate;
    do { candidate = n + "_" + std::to_string(k++); } while (node_names_.count(candidate));
    it->second = k;
    n = candidate;
  }
  node_names_[n] = 0;
  auto node = std::make_unique<Node>(op, n, opset_);
  Node* p = node.get();
  for (Value* v : inputs) p->add_input(v);
  for (Value* v : outputs) p->add_output(v);
  if (before) {
    auto pos = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& u) { return u.get() == before; });
    nodes_.insert(pos, std::move(node));
  } else {
    nodes_.push_back(std::move(node));
  }
  return p;
}

void Graph::remove_node(Node* n) {
  for (int i = 0; i < n->num_inputs(); ++i) {
    if (n->inputs_[i]) erase_one(n->inputs_[i]->users_, n);
  }
  for (Value* v : n->outputs_) {
    if (v && v->producer_ == n) {
      v->producer_ = nullptr;
      v->producer_output_ = -1;
    }
  }
  node_names_.erase(n->name());
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& u) { return u.get() == n; }));
}

void Graph::replace_all_uses(Value* from, Value* to) {
  std::vector<Node*> users = from->users_;
  for (Node* u : users) {
    for (int i = 0; i < u->num_inputs(); ++i) {
      if (u->inputs_[i] == from) u->set_input(i, to);
    }
  }
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i] == from) set_output(static_cast<int>(i), to);
  }
}

int Graph::remove_dead() {
  int removed = 0;
  for (bool again = true; again;) {
    again = false;
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
      Node* n = it->get();
      bool used = false;
      for (Value* v : n->outputs_) used = used || (v && (!v->users_.empty() || v->graph_output_));
      if (!used) {
        remove_node(n);
        ++removed;
        again = true;
        break;
      }
    }
  }
  // Drop values nothing refers to (keeps by_name_ in step).
  std::vector<std::unique_ptr<Value>> kept;
  for (auto& v : values_) {
    if (v->users_.empty() && !v->producer_ && !v->graph_input_ && !v->graph_output_) {
      by_name_.erase(v->name());
    } else {
      kept.push_back(std::move(v));
    }
  }
  values_ = std::move(kept);
  return removed;
}

std::vector<Node*> Graph::nodes_of(const std::string& op) const {
  std::vector<Node*> r;
  for (const auto& n : nodes_) if (n->op() == op) r.push_back(n.get());
  return r;
}

void Graph::add_input(Value* v) {
  v->graph_input_ = true;
  inputs_.push_back(v);
}

void Graph::add_output(Value* v) {
  v->graph_output_ = true;
  outputs_.push_back(v);
}

void Graph::set_output(int i, Value* v) {
  Value* old = outputs_.at(i);
  outputs_[i] = v;
  old->graph_output_ = std::count(outputs_.begin(), outputs_.end(), old) > 0;
  v->graph_output_ = true;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> r;
  for (const auto& v : values_) r.push_back(v.get());
  return r;
}

void Graph::verify() const {
  std::set<const Value*> defined;
  std::set<const Value*> owned;
  for (const auto& v : values_) owned.insert(v.get());
  for (const Value* v : inputs_) {
    if (!v->has_type()) throw Error("graph input '" + v->name() + "' has no type");
    defined.insert(v);
  }
  for (const auto& v : values_) {
    if (v->is_constant() && !v->producer()) defined.insert(v.get());
  }
  std::set<const Node*> seen;
  for (const auto& up : nodes_) {
    const Node& n = *up;
    for (int i = 0; i < n.num_inputs(); ++i) {
      const Value* v = n.inputs_[i];
      if (!v) continue;
      if (!owned.count(v)) throw n.error("input " + std::to_string(i) + " is not a value of this graph");
      if (!defined.count(v)) {
        if (v->producer() && !seen.count(v->producer())) {
          throw n.error("input '" + v->name() + "' is produced by node '" + v->producer()->name() +
                        "', which comes later (the node order is not topological, or there is a cycle)");
        }
        throw n.error("input '" + v->name() + "' is not defined (no producer, not a graph input or constant)");
      }
      if (std::count(v->users_.begin(), v->users_.end(), &n) == 0) {
        throw n.error("value '" + v->name() + "' does not list this node among its users");
      }
    }
    for (int i = 0; i < n.num_outputs(); ++i) {
      const Value* v = n.outputs_[i];
      if (!v) continue;
      if (v->producer() != &n) throw n.error("output '" + v->name() + "' names another producer");
      if (defined.count(v)) throw n.error("output '" + v->name() + "' is defined twice");
      if (!v->has_type()) throw n.error("output '" + v->name() + "' has no type");
      for (int64_t d : v->shape()) {
        if (d < 0) throw n.error("output '" + v->name() + "' has a negative dimension: " + v->type_str());
      }
      defined.insert(v);
    }
    seen.insert(&n);
  }
  for (const Value* v : outputs_) {
    if (!defined.count(v)) throw Error("graph output '" + v->name() + "' is never produced");
  }
}

std::string Graph::to_string(bool with_constants) const {
  std::ostringstream os;
  os << "graph " << (name_.empty() ? "main" : name_) << " (opset " << opset_ << ")\n";
  for (const Value* v : inputs_) os << "  input  " << v->name() << ": " << v->type_str() << "\n";
  for (const auto& v : values_) {
    if (v->is_initializer() && !v->producer()) {
      os << "  weight " << v->name() << ": " << v->type_str() << "\n";
    } else if (with_constants && v->is_constant() && !v->producer()) {
      os << "  const  " << v->name() << ": " << v->type_str() << "\n";
    }
  }
  for (const auto& up : nodes_) {
    const Node& n = *up;
    os << "  ";
    for (int i = 0; i < n.num_outputs(); ++i) {
      if (i) os << ", ";
      os << (n.outputs_[i] ? n.outputs_[i]->name() + ": " + n.outputs_[i]->type_str() : "_");
    }
    os << " = " << (n.domain().empty() ? "" : n.domain() + ".") << n.op() << "(";
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (i) os << ", ";
      os << (n.inputs_[i] ? n.inputs_[i]->name() : "_");
    }
    os << ")";
    if (!n.attrs_.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [k, a] : n.attrs_) {
        os << (first ? "" : ", ") << k << "=" << a.str();
        first = false;
      }
      os << "}";
    }
    os << "  # " << n.name();
    if (!n.covers_.empty()) {
      os << " (covers";
      for (std::size_t i = 0; i < n.covers_.size(); ++i) os << (i ? ", " : " ") << n.covers_[i];
      os << ")";
    }
    os << "\n";
  }
  for (const Value* v : outputs_) os << "  output " << v->name() << ": " << v->type_str() << "\n";
  return os.str();
}

}  // namespace modelc

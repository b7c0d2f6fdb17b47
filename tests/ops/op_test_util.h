// tests/ops/op_test_util.h — what the op tests share: one-node graphs run on the reference
// interpreter, and tensor literals.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"

namespace modelc::op_test {

inline Tensor f32(Shape s, const std::vector<float>& v) { return Tensor::from_f32(std::move(s), v); }
inline Tensor i64(Shape s, const std::vector<int64_t>& v) { return Tensor::from_i64(DType::int64, std::move(s), v); }
inline std::vector<double> values(const Tensor& t) { return t.to_f64(); }

/// One node whose inputs are graph inputs (an empty Tensor: an omitted
/// optional input), so the interpreter evaluates it.
struct OneNode {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();
  Node* n = nullptr;
  TensorMap feeds;

  OneNode(const std::string& op, int opset, const std::vector<Tensor>& ins, int outs = 1) {
    g->set_opset(opset);
    std::vector<Value*> in, out;
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (!ins[i].defined()) {
        in.push_back(nullptr);
        continue;
      }
      Value* v = g->add_value("x" + std::to_string(i));
      v->set_type(ins[i].dtype(), ins[i].shape());
      g->add_input(v);
      feeds[v->name()] = ins[i];
      in.push_back(v);
    }
    for (int i = 0; i < outs; ++i) out.push_back(g->add_value("y" + std::to_string(i)));
    n = g->add_node(op, "node", in, out);
    for (Value* v : out) g->add_output(v);
  }
  std::vector<Tensor> run() {
    ops::infer_graph(*g);
    TensorMap r = run_reference(*g, feeds);
    std::vector<Tensor> v;
    for (Value* o : g->outputs()) v.push_back(r.at(o->name()));
    return v;
  }
  Tensor run1() { return run().at(0); }
  int64_t flops() {
    ops::infer_graph(*g);
    return ops::lookup(*n).flops(*n);
  }
};

/// A graph of one `op` node. Input 0 is the graph input "x"; the others are
/// constants (an undefined Tensor leaves that input out), except input
/// `runtime_input`, which becomes a second graph input.
struct ConstInputsNode {
  Graph g;
  Node* n = nullptr;
  TensorMap feeds;

  ConstInputsNode(const std::string& op, int opset, const Tensor& x, const std::vector<Tensor>& rest = {}, int outputs = 1,
          int runtime_input = -1) {
    g.set_opset(opset);
    std::vector<Value*> ins{graph_input("x", x)};
    for (std::size_t i = 0; i < rest.size(); ++i) {
      const std::string name = "in" + std::to_string(i + 1);
      if (!rest[i].defined()) ins.push_back(nullptr);
      else if (static_cast<int>(i + 1) == runtime_input) ins.push_back(graph_input(name, rest[i]));
      else ins.push_back(g.add_constant(name, rest[i], true));
    }
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(g.add_value("y" + std::to_string(i)));
    n = g.add_node(op, op, ins, outs);
    for (Value* o : outs) g.add_output(o);
  }

  Value* graph_input(const std::string& name, const Tensor& t) {
    Value* v = g.add_value(name);
    v->set_type(t.dtype(), t.shape());
    g.add_input(v);
    feeds[name] = t;
    return v;
  }

  std::vector<Tensor> run() {
    ops::infer_graph(g);
    const TensorMap r = run_reference(g, feeds);
    std::vector<Tensor> out;
    for (const Value* o : g.outputs()) out.push_back(r.at(o->name()));
    return out;
  }
  Tensor run1() { return run().at(0); }
  void infer() { ops::infer_graph(g); }
};

}  // namespace modelc::op_test

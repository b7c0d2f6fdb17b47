// compiler/frontend/control_flow.cpp — the node import (import_nodes, import_detail.h) and the
// inlining of If and Loop at compile time.
//
// modelc compiles static graphs, so control flow is decided while the model is imported:
//   If    its condition must be known at compile time (a constant, or computed from constants by
//         the shape rules: ops::infer_node); the branch it selects is imported in place of the node
//         (its values renamed "IF/then/NAME" or "IF/else/NAME") and the If's outputs are Identity
//         copies of the branch's outputs, so they keep their names.
//   Loop  its trip count M and its condition (each optional, not both absent) must be known at
//         compile time, and so must the condition its body computes after each iteration: the body is
//         imported once per iteration ("LOOP/3/NAME"), the iteration number and the condition as
//         constants, the loop-carried values threaded from one copy to the next; the scan outputs
//         are the iterations' values stacked along a new first dim (Reshape + Concat). At most
//         kMaxLoopIterations iterations.
// A condition or trip count computed at run time is an Error naming the node ("dynamic control
// flow"): there is no kernel for a branch the program would choose as it runs.
//
// Deciding needs the types and constant values of what the condition reads, so the nodes imported
// before an If / Loop are typed first (ops::infer_node, as ops::infer_graph does afterwards for the
// whole graph).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "frontend/import_detail.h"
#include "frontend/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "support/error.h"

namespace modelc::detail {

namespace {

/// Most iterations a Loop is unrolled to.
constexpr int64_t kMaxLoopIterations = 4096;
/// Most nodes the graph may hold after an unrolled iteration (a large body times many iterations).
constexpr std::size_t kMaxUnrolledNodes = std::size_t{1} << 20;

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

Error node_error(const NodeImport& ctx, const onnx::NodeProto& np, const std::string& name, const std::string& message,
                 const std::string& hint = {}) {
  Error::Where w;
  w.node = name;
  w.op = np.op_type();
  auto op = ctx.opsets.find("");
  w.opset = op == ctx.opsets.end() ? 0 : static_cast<int>(op->second);
  w.file = ctx.file;
  return Error(w, message, hint);
}

const char* const kDynamicHint =
    "modelc compiles static graphs: give the value at compile time (a constant, or a model input fixed to a value), "
    "or export the model with the control flow resolved (torch.onnx.export traces one path)";

// Types every node imported so far (and not yet typed), as ops::infer_graph would: the values a
// control-flow decision reads. Collecting unsupported nodes, a failure leaves the outputs untyped
// (import_graph's infer_collecting records it).
void infer_pending(NodeImport& ctx) {
  const auto& nodes = ctx.g.nodes();
  for (; ctx.inferred < nodes.size(); ++ctx.inferred) {
    Node& n = *nodes[ctx.inferred];
    if (ctx.problems.count(&n)) continue;
    bool typed = true;
    for (Value* v : n.inputs()) typed = typed && (!v || v->has_type());
    if (!typed) continue;
    try {
      ops::infer_node(n, ops::lookup(n));
    } catch (const Error& e) {
      if (!ctx.collect_unsupported) throw e.with_file(ctx.file);
      for (Value* o : n.outputs()) {
        if (!o) continue;
        o->clear_constant();
        o->set_type(DType::undefined, {});
      }
    }
  }
}

const onnx::GraphProto* graph_attr(const onnx::NodeProto& np, const char* name) {
  for (const auto& a : np.attribute()) {
    if (a.name() == name && a.has_g()) return &a.g();
  }
  return nullptr;
}

// The constant value of `v` (a node input named `what`), which must be known now: one element.
double known_scalar(NodeImport& ctx, const onnx::NodeProto& np, const std::string& node, const Value* v,
                    const char* what) {
  if (!v->has_type()) {
    throw node_error(ctx, np, node, fmt::format("its {} '{}' has no type (the node computing it failed)", what, v->name()));
  }
  if (!v->is_constant()) {
    throw node_error(ctx, np, node,
                     fmt::format("its {} '{}' is computed at run time: modelc resolves {} at compile time and cannot "
                                 "compile dynamic control flow",
                                 what, v->name(), np.op_type() == "If" ? "an If's branch" : "a Loop's iterations"),
                     kDynamicHint);
  }
  if (v->numel() != 1) {
    throw node_error(ctx, np, node, fmt::format("its {} '{}' has shape {}, expected one element", what, v->name(),
                                                shape_str(v->shape())));
  }
  return v->constant().to_f64().at(0);
}

// The subgraph's initializers as constants of the graph, in `scope`.
void import_initializers(NodeImport& ctx, const onnx::GraphProto& sub, Scope& scope, const std::string& prefix) {
  for (const auto& t : sub.initializer()) {
    Tensor data = tensor_from_proto(t, "initializer '" + t.name() + "' of a subgraph");
    scope.values[t.name()] = ctx.g.add_constant(prefix + t.name(), std::move(data), true);
  }
}

// The control-flow node's output `name` (in the enclosing scope, whose names carry `prefix`) as a
// copy of `v`: it keeps its name.
void bind_output(NodeImport& ctx, Scope& scope, const std::string& prefix, const std::string& name,
                 const std::string& node, Value* v) {
  if (name.empty()) return;
  Value* out = ctx.g.add_value(prefix + name);
  ctx.g.add_node("Identity", node + "/" + name, {v}, {out});
  scope.values[name] = out;
}

Value* find_output(NodeImport& ctx, const onnx::NodeProto& np, const std::string& node, const Scope& scope,
                   const std::string& name, const char* body) {
  Value* v = scope.find(name);
  if (!v) throw node_error(ctx, np, node, fmt::format("its {} has output '{}', which nothing defines", body, name));
  return v;
}

void inline_if(NodeImport& ctx, const onnx::NodeProto& np, const std::string& node, Scope& scope,
               const std::string& prefix) {
  if (np.input_size() != 1 || np.input(0).empty()) {
    throw node_error(ctx, np, node, "If takes one input, the condition");
  }
  Value* cond = scope.find(np.input(0));
  if (!cond) throw node_error(ctx, np, node, fmt::format("its condition '{}' is not defined", np.input(0)));
  infer_pending(ctx);
  const bool take_then = known_scalar(ctx, np, node, cond, "condition") != 0.0;
  const char* which = take_then ? "then_branch" : "else_branch";
  const onnx::GraphProto* branch = graph_attr(np, which);
  if (!branch) throw node_error(ctx, np, node, fmt::format("attribute '{}' (a graph) is missing", which));
  if (branch->output_size() != np.output_size()) {
    throw node_error(ctx, np, node,
                     fmt::format("its {} has {} outputs, the node {}", which, branch->output_size(), np.output_size()));
  }
  Scope inner;
  inner.parent = &scope;
  const std::string p = prefix + node + (take_then ? "/then/" : "/else/");
  import_initializers(ctx, *branch, inner, p);
  import_nodes(ctx, *branch, inner, p);
  for (int i = 0; i < np.output_size(); ++i) {
    bind_output(ctx, scope, prefix, np.output(i), node,
                find_output(ctx, np, node, inner, branch->output(i).name(), which));
  }
}

void inline_loop(NodeImport& ctx, const onnx::NodeProto& np, const std::string& node, Scope& scope,
                 const std::string& prefix) {
  const onnx::GraphProto* body = graph_attr(np, "body");
  if (!body) throw node_error(ctx, np, node, "attribute 'body' (a graph) is missing");
  const int carried = np.input_size() - 2;
  if (carried < 0) throw node_error(ctx, np, node, "Loop takes the trip count, the condition and the carried values");
  const int scans = body->output_size() - 1 - carried;
  if (body->input_size() != carried + 2 || scans < 0 || np.output_size() > carried + scans) {
    throw node_error(ctx, np, node,
                     fmt::format("its body has {} inputs and {} outputs for {} carried values (expected {} inputs, "
                                 "and at least {} outputs)",
                                 body->input_size(), body->output_size(), carried, carried + 2, carried + 1));
  }
  infer_pending(ctx);
  const bool has_m = !np.input(0).empty(), has_cond = !np.input(1).empty();
  if (!has_m && !has_cond) {
    throw node_error(ctx, np, node, "it has neither a trip count nor a condition: it would run forever");
  }
  for (int i = 0; i < 2; ++i) {
    if (!np.input(i).empty() && !scope.find(np.input(i))) {
      throw node_error(ctx, np, node, fmt::format("its input '{}' is not defined", np.input(i)));
    }
  }
  int64_t trip = kMaxLoopIterations + 1;
  if (has_m) {
    const double m = known_scalar(ctx, np, node, scope.find(np.input(0)), "trip count");
    trip = m < 0 ? 0 : static_cast<int64_t>(std::min<double>(m, static_cast<double>(kMaxLoopIterations + 1)));
  }
  bool cond = !has_cond || known_scalar(ctx, np, node, scope.find(np.input(1)), "condition") != 0.0;

  std::vector<Value*> state;
  for (int i = 0; i < carried; ++i) {
    Value* v = scope.find(np.input(2 + i));
    if (!v) throw node_error(ctx, np, node, fmt::format("its input '{}' is not defined", np.input(2 + i)));
    state.push_back(v);
  }
  std::vector<std::vector<Value*>> scanned(static_cast<std::size_t>(scans));
  int64_t it = 0;
  for (; it < trip && cond; ++it) {
    if (it == kMaxLoopIterations) {
      throw node_error(ctx, np, node,
                       fmt::format("it runs more than {} iterations; modelc unrolls loops at compile time, up to {}",
                                   kMaxLoopIterations, kMaxLoopIterations));
    }
    if (ctx.g.nodes().size() + static_cast<std::size_t>(body->node_size()) > kMaxUnrolledNodes) {
      throw node_error(ctx, np, node,
                       fmt::format("unrolling iteration {} of its body ({} nodes) would make the graph more than {} "
                                   "nodes",
                                   it, body->node_size(), kMaxUnrolledNodes));
    }
    Scope inner;
    inner.parent = &scope;
    const std::string p = prefix + node + "/" + std::to_string(it) + "/";
    const Shape iter_shape = body->input(0).type().tensor_type().shape().dim_size() == 1 ? Shape{1} : Shape{};
    const Shape cond_shape = body->input(1).type().tensor_type().shape().dim_size() == 1 ? Shape{1} : Shape{};
    inner.values[body->input(0).name()] =
        ctx.g.add_constant(p + body->input(0).name(), Tensor::from_i64(DType::int64, iter_shape, {it}));
    inner.values[body->input(1).name()] =
        ctx.g.add_constant(p + body->input(1).name(), Tensor::from_i64(DType::boolean, cond_shape, {cond ? 1 : 0}));
    for (int i = 0; i < carried; ++i) inner.values[body->input(2 + i).name()] = state[static_cast<std::size_t>(i)];
    import_initializers(ctx, *body, inner, p);
    import_nodes(ctx, *body, inner, p);
    infer_pending(ctx);
    cond = known_scalar(ctx, np, node, find_output(ctx, np, node, inner, body->output(0).name(), "body"),
                        "condition (as the body computes it)") != 0.0;
    for (int i = 0; i < carried; ++i) {
      state[static_cast<std::size_t>(i)] = find_output(ctx, np, node, inner, body->output(1 + i).name(), "body");
    }
    for (int k = 0; k < scans; ++k) {
      scanned[static_cast<std::size_t>(k)].push_back(
          find_output(ctx, np, node, inner, body->output(1 + carried + k).name(), "body"));
    }
  }
  for (int i = 0; i < carried && i < np.output_size(); ++i) {
    bind_output(ctx, scope, prefix, np.output(i), node, state[static_cast<std::size_t>(i)]);
  }
  for (int k = 0; k < scans && carried + k < np.output_size(); ++k) {
    const std::string& name = np.output(carried + k);
    if (name.empty()) continue;
    const std::vector<Value*>& parts = scanned[static_cast<std::size_t>(k)];
    if (parts.empty()) {
      throw node_error(ctx, np, node,
                       fmt::format("it runs no iteration, so the shape of its scan output '{}' is unknown", name));
    }
    // Each iteration's value as [1, ...], then one Concat along the new dim.
    std::vector<Value*> rows;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Value* part = parts[i];
      if (!part->has_type()) {
        throw node_error(ctx, np, node, fmt::format("its scan output '{}' has no type", part->name()));
      }
      Shape s{1};
      s.insert(s.end(), part->shape().begin(), part->shape().end());
      const std::string base = prefix + node + "/" + name + "/" + std::to_string(i);
      Value* shape = ctx.g.add_constant(base + "_shape", Tensor::from_i64(DType::int64, {static_cast<int64_t>(s.size())}, s));
      Value* row = ctx.g.add_value(base);
      ctx.g.add_node("Reshape", base, {part, shape}, {row});
      rows.push_back(row);
    }
    Value* out = ctx.g.add_value(prefix + name);
    Node* cat = ctx.g.add_node("Concat", prefix + node + "/" + name, rows, {out});
    cat->set_attr_int("axis", 0);
    scope.values[name] = out;
  }
}

}  // namespace

Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent) {
    auto it = s->values.find(name);
    if (it != s->values.end()) return it->second;
  }
  return nullptr;
}

void import_nodes(NodeImport& ctx, const onnx::GraphProto& graph, Scope& scope, const std::string& prefix) {
  Graph& g = ctx.g;
  for (int k = 0; k < graph.node_size(); ++k) {
    const onnx::NodeProto& np = graph.node(k);
    // Top-level nodes are named by import_model already; a subgraph's get the same rule.
    const std::string name = prefix.empty() ? np.name() : prefix + node_name(np, k);
    const bool control = is_default_domain(np.domain()) && (np.op_type() == "If" || np.op_type() == "Loop");
    std::string problem;
    if (control) {
      try {
        if (np.op_type() == "If") {
          inline_if(ctx, np, name, scope, prefix);
        } else {
          inline_loop(ctx, np, name, scope, prefix);
        }
        continue;
      } catch (const Error& e) {
        if (!ctx.collect_unsupported) throw;
        // Collecting: the node stays, unsupported, with the reason (its outputs are left untyped).
        problem = e.message();
      }
    }
    std::vector<Value*> ins, outs;
    for (const auto& i : np.input()) {
      if (i.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      Value* v = scope.find(i);  // the main graph's names are checked by check_names_and_sort
      if (!v) throw node_error(ctx, np, name, fmt::format("input '{}' is not defined before the node", i));
      ins.push_back(v);
    }
    for (const auto& o : np.output()) {
      Value* v = nullptr;
      if (!o.empty()) {
        v = g.add_value(prefix + o);
        scope.values[o] = v;
      }
      outs.push_back(v);
    }
    Node* n = g.add_node(np.op_type(), name, ins, outs);
    const std::string domain = is_default_domain(np.domain()) ? "" : np.domain();
    n->set_domain(domain);
    auto op = ctx.opsets.find(domain);
    n->set_opset(op == ctx.opsets.end() ? 0 : static_cast<int>(op->second));
    for (const auto& a : np.attribute()) {
      try {
        if (n->has_attr(a.name())) throw Error("attribute '" + a.name() + "' is given twice");
        n->set_attr(a.name(), convert_attribute(a));
      } catch (const Error& e) {
        if (!ctx.collect_unsupported) throw n->error(e.message(), e.hint()).with_file(ctx.file);
        ctx.problems.emplace(n, e.message());
      }
    }
    if (!problem.empty()) ctx.problems.emplace(n, problem);
  }
}

}  // namespace modelc::detail

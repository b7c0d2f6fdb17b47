#include "ops/shape_inference.h"

#include "ops/registry.h"

namespace modelc::ops {

namespace {

// Constant outputs larger than this are not materialised during inference
// (they stay computed at run time); shape subgraphs are tiny.
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

void propagate_constants(Node& n, const OpDef& def) {
  if (!def.eval) return;
  TensorRefs in;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) {
      in.push_back(nullptr);
      continue;
    }
    if (!n.input(i).is_constant()) return;
    in.push_back(&n.input(i).constant());
  }
  for (Value* o : n.outputs()) {
    if (o && o->numel() > kMaxFoldElements) return;
  }
  std::vector<Tensor> out = def.eval(n, in);
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (!n.has_output(i)) continue;
    Value& o = n.output(i);
    if (i >= static_cast<int>(out.size()) || out[i].dtype() != o.dtype() || out[i].shape() != o.shape()) {
      throw n.error("internal: reference evaluation gave " +
                    (i < static_cast<int>(out.size())
                         ? std::string(dtype_name(out[i].dtype())) + "[" + shape_str(out[i].shape()) + "]"
                         : std::string("no tensor")) +
                    " for output " + std::to_string(i) + ", shape inference said " + o.type_str());
    }
    o.set_constant(out[i]);
  }
}

}  // namespace

void infer_node(Node& n, const OpDef& def) {
  validate_node(n, def);
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.has_input(i) && !n.input(i).has_type()) {
      throw n.error("input '" + n.input(i).name() + "' has no type (it is not produced by an earlier node)");
    }
  }
  if (!def.infer) throw n.error("internal: op has no shape rule");
  def.infer(n);
  for (Value* o : n.outputs()) {
    if (!o) continue;
    for (int64_t d : o->shape()) {
      if (d < 0) throw n.error("inferred a negative dimension for output '" + o->name() + "': " + o->type_str());
    }
    check_size_limit(o->shape(), "output '" + o->name() + "' (" + o->type_str() + ")");
  }
  propagate_constants(n, def);
}

void infer_graph(Graph& g) {
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    const OpDef& def = lookup(n);
    try {
      infer_node(n, def);
    } catch (const Error& e) {
      throw e.with_node(n.name(), n.op(), n.opset());
    }
  }
}

std::vector<Unsupported> find_unsupported(const Graph& g) {
  std::vector<Unsupported> r;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    try {
      const OpDef& def = lookup(n);
      validate_node(n, def);
    } catch (const Error& e) {
      r.push_back({n.name(), n.op(), e.message(), e.hint()});
    }
  }
  return r;
}

}  // namespace modelc::ops

#include "reference/interpreter.h"

#include <random>
#include <unordered_map>

#include "ops/registry.h"

namespace modelc {

TensorMap run_reference(const Graph& g, const TensorMap& inputs, const NodeObserver& observer,
                        reference::Accumulation accumulation) {
  const reference::AccumulationScope scope(accumulation);
  std::unordered_map<const Value*, Tensor> env;
  for (const Value* v : g.inputs()) {
    auto it = inputs.find(v->name());
    if (it == inputs.end()) {
      if (v->is_constant()) continue;
      throw Error("input '" + v->name() + "' (" + v->type_str() + ") was not given");
    }
    const Tensor& t = it->second;
    if (t.dtype() != v->dtype() || t.shape() != v->shape()) {
      throw Error("input '" + v->name() + "' expects " + v->type_str() + ", got " + dtype_name(t.dtype()) + "[" +
                  shape_str(t.shape()) + "]");
    }
    env[v] = t;
  }
  for (const auto& [name, t] : inputs) {
    const Value* v = g.find_value(name);
    if (!v || !v->is_graph_input()) throw Error("'" + name + "' is not an input of the model");
  }

  // Last use of every value, so intermediates are freed as soon as possible.
  std::unordered_map<const Value*, std::size_t> last_use;
  for (std::size_t k = 0; k < g.nodes().size(); ++k) {
    for (const Value* v : g.nodes()[k]->inputs()) if (v) last_use[v] = k;
  }

  auto get = [&](const Value* v) -> const Tensor* {
    auto it = env.find(v);
    if (it != env.end()) return &it->second;
    if (v->is_constant()) return &v->constant();
    throw Error("internal: value '" + v->name() + "' has no data when it is read");
  };

  for (std::size_t k = 0; k < g.nodes().size(); ++k) {
    const Node& n = *g.nodes()[k];
    bool all_const = true;
    for (const Value* o : n.outputs()) all_const = all_const && (!o || o->is_constant());
    std::vector<Tensor> out;
    if (all_const && !observer) continue;
    if (all_const) {
      for (const Value* o : n.outputs()) out.push_back(o ? o->constant() : Tensor());
    } else {
      const ops::OpDef& def = ops::lookup(n);
      if (!def.eval) throw n.error("the reference interpreter cannot evaluate this op");
      ops::TensorRefs in;
      for (int i = 0; i < n.num_inputs(); ++i) in.push_back(n.has_input(i) ? get(&n.input(i)) : nullptr);
      try {
        out = def.eval(n, in);
      } catch (const Error& e) {
        throw e.with_node(n.name(), n.op(), n.opset());
      }
      for (int i = 0; i < n.num_outputs(); ++i) {
        if (!n.has_output(i)) continue;
        if (i >= static_cast<int>(out.size()) || out[i].shape() != n.output(i).shape() ||
            out[i].dtype() != n.output(i).dtype()) {
          throw n.error("internal: evaluation of output " + std::to_string(i) + " does not match its inferred type " +
                        n.output(i).type_str());
        }
        env[&n.output(i)] = out[i];
      }
    }
    if (observer) observer(n, out);
    for (const Value* v : n.inputs()) {
      if (v && last_use[v] == k && !v->is_graph_output()) env.erase(v);
    }
  }

  TensorMap result;
  for (const Value* v : g.outputs()) result[v->name()] = *get(v);
  return result;
}

TensorMap random_inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  TensorMap r;
  for (const Value* v : g.inputs()) {
    if (v->is_constant()) continue;
    const int64_t n = v->numel();
    if (is_float(v->dtype())) {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      std::vector<double> d(static_cast<std::size_t>(n));
      // Rounded to float first, as the generated program draws them (runtime_stub/cli.h), but for
      // float64, which takes the double as drawn.
      for (double& x : d) x = v->dtype() == DType::float64 ? u(rng) : static_cast<double>(static_cast<float>(u(rng)));
      r[v->name()] = Tensor::from_f64(v->dtype(), v->shape(), d);
    } else {
      std::uniform_int_distribution<int64_t> u(0, v->dtype() == DType::boolean ? 1 : 9);
      std::vector<int64_t> d(static_cast<std::size_t>(n));
      for (int64_t& x : d) x = u(rng);
      r[v->name()] = Tensor::from_i64(v->dtype(), v->shape(), d);
    }
  }
  return r;
}

}  // namespace modelc

// tests/templates/reduction_test_util.h — shared by the reduction template tests (reduce, softmax,
// normalization, topk): a one-node graph run by the reference interpreter, the family's plan and
// emit run on a hand-built Kernel, and the template instantiation run on the host emulation.
//
// Each case names its instantiation once with REDUCTION_TYPE(...): the macro gives both the type
// (to run on the emulation) and its spelling (which must equal what the family emits), so one case
// checks the emit function and the template together.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "schedule/families.h"
#include "schedule/tactics.h"
#include "codegen/family.h"
#include "ir/graph.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "schedule/schedule.h"

// The templates last: device.h defines CUDA's qualifiers as macros for the emulation.
#include "templates/normalization.cuh"
#include "templates/reduce.cuh"
#include "templates/softmax.cuh"
#include "templates/topk.cuh"

/// `using K = TYPE; kType = "TYPE"` (spelled as the family formats it).
#define REDUCTION_TYPE(...)  \
  using K = __VA_ARGS__;     \
  const std::string kType = #__VA_ARGS__

namespace reduction_test {

using namespace modelc;

/// A graph of one node: graph inputs for `inputs` (a default Tensor leaves that input out),
/// constants for `constants` (by input index), `outputs` outputs (empty names leave one out).
struct OneNode {
  Graph g;
  Node* n = nullptr;
  TensorMap feeds;

  OneNode(const std::string& op, int opset, const std::vector<Tensor>& inputs, int outputs = 1,
          const std::vector<std::pair<int, Tensor>>& constants = {}, const std::vector<bool>& output_present = {}) {
    g.set_opset(opset);
    std::vector<Value*> ins;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string name = "in" + std::to_string(i);
      if (!inputs[i].defined()) {
        ins.push_back(nullptr);
        continue;
      }
      Value* v = g.add_value(name);
      v->set_type(inputs[i].dtype(), inputs[i].shape());
      g.add_input(v);
      feeds[name] = inputs[i];
      ins.push_back(v);
    }
    for (const auto& [i, t] : constants) {
      if (static_cast<int>(ins.size()) <= i) ins.resize(static_cast<std::size_t>(i) + 1, nullptr);
      ins[static_cast<std::size_t>(i)] = g.add_constant("c" + std::to_string(i), t, true);
    }
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) {
      const bool present = output_present.empty() || output_present[static_cast<std::size_t>(i)];
      outs.push_back(present ? g.add_value("out" + std::to_string(i)) : nullptr);
    }
    n = g.add_node(op, op + "_node", ins, outs);
    for (Value* o : outs) if (o) g.add_output(o);
  }

  /// Reference outputs, in node output order (absent outputs: default Tensors).
  std::vector<Tensor> reference() {
    ops::infer_graph(g);
    const TensorMap r = run_reference(g, feeds);
    std::vector<Tensor> out;
    for (int i = 0; i < n->num_outputs(); ++i) out.push_back(n->has_output(i) ? r.at(n->output(i).name()) : Tensor());
    return out;
  }
};

inline TensorView dense_view(const Value& v) {
  TensorView t;
  t.value = v.name();
  t.dtype = v.dtype();
  t.shape = v.shape();
  t.strides = strides_of(t.shape);
  return t;
}

/// The Kernel lowering would make of the node: dense views of its inputs and outputs.
inline Kernel kernel_of(const Node& n, const std::string& family) {
  Kernel k;
  k.id = "k0";
  k.family = &family_facts(family);
  k.source.node = &n;
  k.op = {n.name(), n.op(), n.domain(), n.opset()};
  k.nodes = {n.name()};
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.has_input(i)) k.inputs.push_back(dense_view(n.input(i)));
    else k.inputs.push_back(TensorView{});
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (n.has_output(i)) k.outputs.push_back(dense_view(n.output(i)));
    else k.outputs.push_back(TensorView{});
  }
  for (TensorView& v : k.inputs) if (v.value.empty()) v.dtype = DType::undefined;
  for (TensorView& v : k.outputs) if (v.value.empty()) v.dtype = DType::undefined;
  return k;
}

/// Pointers are the value names; element types as the emitter spells them.
class FakeContext : public EmitContext {
 public:
  std::string ptr(const TensorView& v, bool is_const) const override {
    return std::string(is_const ? "const:" : "") + v.value;
  }
  std::string ctype(DType t) const override {
    switch (t) {
      case DType::float32: return "float";
      case DType::float16: return "__half";
      case DType::int64: return "int64_t";
      case DType::int32: return "int32_t";
      case DType::int8: return "int8_t";
      case DType::uint8: return "uint8_t";
      case DType::boolean: return "bool";
      default: return "?";
    }
  }
};

/// Runs the family's plan and emit on k; returns its launches.
inline KernelLaunches plan_and_emit(Kernel& k) {
  const KernelFamily* f = FamilyRegistry::instance().find(k.family_name());
  REQUIRE(f != nullptr);
  plan_kernel(k);
  choose_tactic(k, {Target{}});
  return f->emit(k, FakeContext());
}

/// Checks that the kernel is one launch of `type`, on every arch.
inline void check_emitted(const KernelLaunches& e, const std::string& type) {
  REQUIRE(e.launches.size() == 1);
  CHECK(e.launches[0].type == type);
  CHECK(e.launches[0].min_sm == 0);
}

/// Launches kernel<K> with Params{args...} on the emulation.
template <class K, class... Args>
void run_kernel(Args... args) {
  const cudaError_t e = mc::launch(mc::reduction::kernel<K>, dim3(K::kBlocks), dim3(K::kThreads), 0, nullptr,
                                   typename K::Params{args...});
  REQUIRE(e == cudaSuccess);
}

/// Values within atol + rtol * |want| (NaN matches NaN, infinities match exactly); integers exact.
inline void check_close(const Tensor& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  if (!is_float(want.dtype())) {
    const std::vector<int64_t> g = got.to_i64(), w = want.to_i64();
    for (std::size_t i = 0; i < w.size(); ++i) {
      INFO("element " << i);
      CHECK(g[i] == w[i]);
    }
    return;
  }
  const std::vector<double> g = got.to_f64(), w = want.to_f64();
  int bad = 0;
  for (std::size_t i = 0; i < w.size() && bad < 10; ++i) {
    bool ok;
    if (std::isnan(w[i])) ok = std::isnan(g[i]);
    else if (std::isinf(w[i])) ok = g[i] == w[i];
    else ok = std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]);
    if (!ok) {
      ++bad;
      INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

/// Floats uniform in [lo, hi), seeded.
inline Tensor random_f32(const Shape& s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = lo + (hi - lo) * static_cast<float>((x >> 40) & 0xffffff) / 16777216.0f;
  }
  return Tensor::from_f32(s, v);
}

inline Tensor ints(DType t, const Shape& s, const std::vector<int64_t>& v) { return Tensor::from_i64(t, s, v); }

/// A Tensor's data for the kernel (host memory is device memory on the emulation).
template <class T>
const T* in(const Tensor& t) {
  return reinterpret_cast<const T*>(t.raw());
}
template <class T>
T* out(Tensor& t) {
  return reinterpret_cast<T*>(t.mutable_raw());
}

}  // namespace reduction_test

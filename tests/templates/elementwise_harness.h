// tests/templates/elementwise_harness.h — what the elementwise and data-movement template tests
// share: a one-node graph run by the reference interpreter, seeded tensors, comparisons, and a
// launch on the host emulation (host memory is device memory there).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"
#include "templates/data_movement.cuh"
#include "templates/elementwise.cuh"
#include "templates/resize.cuh"

namespace ew_test {

using namespace modelc;

/// Tensor of `dtype` and `shape` with seeded values: floats uniform in [lo, hi), integers in
/// [lo, hi] (clamped to the type), bools 0/1.
inline Tensor random_tensor(DType dtype, const Shape& shape, uint32_t seed, double lo = -2.0, double hi = 2.0) {
  std::mt19937 rng(seed);
  std::vector<double> v(static_cast<std::size_t>(num_elements(shape)));
  if (is_float(dtype)) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (double& x : v) x = u(rng);
  } else if (dtype == DType::boolean) {
    for (double& x : v) x = static_cast<double>(rng() & 1u);
  } else {
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (double& x : v) x = static_cast<double>(u(rng));
  }
  return Tensor::from_f64(dtype, shape, v);
}

inline Tensor f32(Shape s, const std::vector<float>& v) { return Tensor::from_f32(std::move(s), v); }
inline Tensor i64(Shape s, const std::vector<int64_t>& v) { return Tensor::from_i64(DType::int64, std::move(s), v); }

/// A graph of one `op` node. Inputs are graph inputs (fed with the given tensors) unless their
/// index is in `constants`; an undefined Tensor leaves that input out.
struct OneNode {
  Graph g;
  Node* n = nullptr;
  TensorMap feeds;
  std::vector<Tensor> inputs;

  OneNode(const std::string& op, int opset, std::vector<Tensor> ins, const std::vector<int>& constants = {},
          int outputs = 1)
      : inputs(std::move(ins)) {
    g.set_opset(opset);
    std::vector<Value*> vs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string name = "x" + std::to_string(i);
      const bool constant = std::find(constants.begin(), constants.end(), static_cast<int>(i)) != constants.end();
      if (!inputs[i].defined()) {
        vs.push_back(nullptr);
      } else if (constant) {
        vs.push_back(g.add_constant(name, inputs[i], true));
      } else {
        Value* v = g.add_value(name);
        v->set_type(inputs[i].dtype(), inputs[i].shape());
        g.add_input(v);
        feeds[name] = inputs[i];
        vs.push_back(v);
      }
    }
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(g.add_value("y" + std::to_string(i)));
    n = g.add_node(op, op + "_node", vs, outs);
    for (Value* o : outs) g.add_output(o);
  }

  /// Infers shapes and runs the reference: the outputs in order.
  std::vector<Tensor> reference() {
    ops::infer_graph(g);
    const TensorMap r = run_reference(g, feeds);
    std::vector<Tensor> out;
    for (const Value* o : g.outputs()) out.push_back(r.at(o->name()));
    return out;
  }
  Tensor reference1() { return reference().at(0); }
};

/// A zero-filled output tensor like `like` (dtype and shape).
inline Tensor like(const Tensor& t) { return Tensor(t.dtype(), t.shape()); }

/// Values agree: NaN where the reference has NaN, equal infinities, else |got - want| <= atol + rtol |want|.
inline void check_close(const Tensor& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = got.to_f64(), w = want.to_f64();
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    bool ok;
    if (std::isnan(w[i]))
      ok = std::isnan(g[i]);
    else if (std::isinf(w[i]))
      ok = g[i] == w[i];
    else
      ok = std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]);
    if (!ok && ++bad <= 5) {
      INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
      CHECK(ok);
    }
  }
  CHECK(bad == 0);
}

/// Bytes agree (data movement and integer results).
inline void check_bits(const Tensor& got, const Tensor& want) {
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.nbytes() == want.nbytes());
  const std::size_t es = dtype_size(want.dtype());
  int bad = 0;
  for (std::size_t i = 0; i * es < want.nbytes(); ++i) {
    if (std::memcmp(got.raw() + i * es, want.raw() + i * es, es) != 0 && ++bad <= 5) {
      INFO("element " << i << ": got " << got.f64_at(static_cast<int64_t>(i)) << ", want "
                      << want.f64_at(static_cast<int64_t>(i)));
      CHECK(false);
    }
  }
  CHECK(bad == 0);
}

/// Runs kernel K on the host emulation.
template <class K>
void launch(void (*kernel)(typename K::Params), const typename K::Params& p) {
  REQUIRE(mc::launch(kernel, K::grid(), K::block(), 0, nullptr, p) == cudaSuccess);
}

/// Runs mc::ew::Elementwise<Op, Shape, Y, X...> with y = out and x = the given tensors' data.
template <class Op, class Shape, class Y, class... X>
void run_ew(Tensor& out, const std::vector<const Tensor*>& xs, Op op = Op{}) {
  using K = mc::ew::Elementwise<Op, Shape, Y, X...>;
  REQUIRE(static_cast<int>(xs.size()) == K::kInputs);
  typename K::Params p{out.mutable_raw(), {}, op};
  for (std::size_t i = 0; i < xs.size(); ++i) p.x[i] = xs[i]->raw();
  launch<K>(mc::ew::elementwise_kernel<K>, p);
}

}  // namespace ew_test

// tests/templates/linear_test_util.h — what gemm_test, conv_test and pool_test share: a one-node
// Graph run by the reference interpreter, the Kernel a lowering would give it (dense views), and
// launching a template kernel on the host emulation.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen/families/linear.h"
#include "../ops/op_test_util.h"
#include "ops/fused.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "schedule/families.h"
#include "templates/gemm.cuh"

namespace linear_test {

using namespace modelc;

/// One node whose inputs are graph inputs (tests/ops/op_test_util.h), and the kernel list_kernels
/// would make of it.
struct OneNode : modelc::op_test::OneNode {
  using modelc::op_test::OneNode::OneNode;

  /// Reference outputs (after shape inference).
  std::vector<Tensor> reference() { return run(); }

  /// The kernel list_kernels would make of the node: dense views of its inputs and outputs.
  Kernel kernel(const std::string& family) {
    ops::infer_graph(*g);
    Kernel k;
    k.id = "k0";
    k.family = &family_facts(family);
    k.source.node = n;
    k.op = {n->name(), n->op(), n->domain(), n->opset()};
    k.nodes = {n->name()};
    auto view = [](const Value* v) {
      TensorView t;
      if (!v) {
        t.dtype = DType::undefined;
        return t;
      }
      t.value = v->name();
      t.dtype = v->dtype();
      t.shape = v->shape();
      t.strides = strides_of(v->shape());
      return t;
    };
    for (const Value* v : n->inputs()) k.inputs.push_back(view(v));
    for (const Value* v : n->outputs()) k.outputs.push_back(view(v));
    return k;
  }
};

inline Tensor random(Shape s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(num_elements(s)));
  for (double& x : v) x = u(rng);
  return Tensor::from_f64(DType::float32, std::move(s), v);
}

/// Random values in [-scale, scale) that `storage` (float16, bfloat16) represents exactly, as float32:
/// the reference then sees what a kernel reading that storage sees.
inline Tensor random_in(DType storage, Shape s, uint64_t seed, double scale = 1.0) {
  std::vector<double> v = random(s, seed).to_f64();
  for (double& x : v) x *= scale;
  return Tensor::from_f64(DType::float32, std::move(s), v).cast(storage).cast(DType::float32);
}

/// Random floats with many exact ties (small integers), to exercise MaxPool's first-max rule.
inline Tensor random_ties(Shape s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-3, 3);
  std::vector<double> v(static_cast<std::size_t>(num_elements(s)));
  for (double& x : v) x = u(rng);
  return Tensor::from_f64(DType::float32, std::move(s), v);
}

/// View v (logical [N, C, spatial...]) as channels-last at channel pitch `pitch`: strides [S * pitch,
/// 1, spatial C-order * pitch...], as the layout stage stores it.
inline void make_channels_last(TensorView& v, int64_t pitch) {
  const std::size_t r = v.shape.size();
  int64_t s = pitch;
  v.strides.assign(r, 0);
  v.strides[1] = 1;
  for (std::size_t i = r; i-- > 2;) {
    v.strides[i] = s;
    s *= v.shape[i];
  }
  v.strides[0] = s;
}

inline std::vector<float> floats(const Tensor& t) {
  const std::vector<double> d = t.to_f64();
  return std::vector<float>(d.begin(), d.end());
}

/// A device buffer of n floats on the emulation, filled with NaN so that unwritten outputs show.
inline std::vector<float> output_buffer(int64_t n) {
  return std::vector<float>(static_cast<std::size_t>(n), std::nanf(""));
}

/// Launches mc::gemm::kernel<K> (the kernel of every template of these families) and waits.
template <class K>
void launch(const typename K::Params& p) {
  const cudaError_t e = mc::launch(mc::gemm::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p);
  REQUIRE(e == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

/// got matches want within rtol 1e-4, atol 1e-5 (FP32 accumulation against double).
inline void check_close(const std::vector<float>& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  const std::vector<double> w = want.to_f64();
  REQUIRE(got.size() == w.size());
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double d = std::abs(static_cast<double>(got[i]) - w[i]);
    if (!(d <= atol + rtol * std::abs(w[i]))) {
      if (++bad <= 5) {
        INFO("element " << i << ": got " << got[i] << ", want " << w[i]);
        CHECK(false);
      }
    }
  }
  CHECK(bad == 0);
}

/// NCHW <-> NHWC for the layout variants (dims: N, C, spatial...).
inline std::vector<float> to_nhwc(const std::vector<float>& x, const Shape& nchw) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) r[static_cast<std::size_t>((n * P + p) * C + c)] = x[static_cast<std::size_t>((n * C + c) * P + p)];
  return r;
}
inline std::vector<float> from_nhwc(const std::vector<float>& x, const Shape& nchw) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) r[static_cast<std::size_t>((n * C + c) * P + p)] = x[static_cast<std::size_t>((n * P + p) * C + c)];
  return r;
}

}  // namespace linear_test

namespace linear_test {

/// An EmitContext that names every view by its value (emit text checks).
struct NameContext : modelc::EmitContext {
  std::string ptr(const modelc::TensorView& v, bool is_const) const override {
    return std::string(is_const ? "const:" : "") + v.value;
  }
  std::string ctype(modelc::DType) const override { return "float"; }
};

/// An activation with its parameters.
inline modelc::ops::EpilogueActivation activation(modelc::ops::Activation kind, double alpha = 0, double beta = 0,
                                                  std::optional<double> min = std::nullopt,
                                                  std::optional<double> max = std::nullopt) {
  modelc::ops::EpilogueActivation a;
  a.kind = kind;
  a.alpha = alpha;
  a.beta = beta;
  a.min = min;
  a.max = max;
  return a;
}

/// Makes t's node (created with a Fused* op name) a node of the internal domain with an activation
/// and, when `residual` is not empty, a residual (input 3) at that position.
inline void fuse(OneNode& t, const modelc::ops::EpilogueActivation& act, const std::string& residual = "") {
  t.n->set_domain(modelc::ops::kModelcDomain);
  t.n->set_covers({"producer", "activation"});
  modelc::ops::set_activation(*t.n, act);
  if (!residual.empty()) t.n->set_attr_string("residual_position", residual);
}

}  // namespace linear_test

// compiler/ops/softmax.cpp — Softmax, LogSoftmax.
//
// Before opset 13 the input is coerced to 2-D at `axis` (default 1): rows are
// the dims before it, the softmax runs over all dims from it on. From opset 13
// it runs along the one dim `axis` (default -1). Both are evaluated as
// (outer, len, inner) with the softmax along len; numerically stable (the max
// is subtracted first).
#include "ops/softmax.h"

#include <algorithm>
#include <cmath>

#include "ops/common.h"
#include "reference/parallel.h"

namespace modelc::ops {
namespace {

struct SoftmaxLayout {
  int64_t outer = 1, len = 1, inner = 1;
};

SoftmaxLayout softmax_layout(const Node& n, const Shape& s) {
  const SoftmaxDims d = softmax_dims(n, static_cast<int64_t>(s.size()));
  SoftmaxLayout l;
  for (int64_t i = 0; i < d.axis; ++i) l.outer *= s[i];
  for (int64_t i = d.axis; i < d.end; ++i) l.len *= s[i];
  for (int64_t i = d.end; i < static_cast<int64_t>(s.size()); ++i) l.inner *= s[i];
  return l;
}

Tensor eval_softmax(const Node& n, const Tensor& X, bool log) {
  const SoftmaxLayout l = softmax_layout(n, X.shape());
  std::vector<double> x = X.to_f64();
  // Threads over the (outer, inner) lines (reference/parallel.h): each its own elements.
  reference::parallel_items(l.outer * l.inner, 3 * l.len, [&](int64_t line) {
    thread_local std::vector<double> e;
    e.resize(static_cast<std::size_t>(l.len));
    {
      const int64_t o = line / l.inner, i = line % l.inner;
      double* base = x.data() + o * l.len * l.inner + i;
      double mx = -INFINITY;
      for (int64_t k = 0; k < l.len; ++k) mx = std::max(mx, base[k * l.inner]);
      double sum = 0.0;
      for (int64_t k = 0; k < l.len; ++k) {
        e[k] = std::exp(base[k * l.inner] - mx);
        sum += e[k];
      }
      if (log) {
        const double lse = std::log(sum);
        for (int64_t k = 0; k < l.len; ++k) base[k * l.inner] = base[k * l.inner] - mx - lse;
      } else {
        for (int64_t k = 0; k < l.len; ++k) base[k * l.inner] = e[k] / sum;
      }
    }
  });
  return Tensor::from_f64(X.dtype(), X.shape(), x);
}

void validate_softmax(const Node& n) {
  if (n.input(0).has_type()) require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16});
}

void infer_softmax(Node& n) {
  softmax_layout(n, n.input(0).shape());  // checks axis
  infer_same_as_input(n);
}

}  // namespace

SoftmaxDims softmax_dims(const Node& n, int64_t rank) {
  SoftmaxDims d;
  d.coerced = n.opset() < 13;
  d.axis = normalize_axis(n, n.attr_int("axis", d.coerced ? 1 : -1), rank);
  d.end = d.coerced ? rank : d.axis + 1;
  return d;
}

MODELC_REGISTER_OP(Softmax)
    .since(1)
    .attrs({"axis"})
    .inputs(1, 1)
    .validate(validate_softmax)
    .infer(infer_softmax)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_softmax(n, *in[0], false)}; })
    .precision(Precision::fp32_compute)
    .kernel("softmax")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("softmax over the input coerced to 2-D at axis (default 1)");

MODELC_REGISTER_OP(Softmax)
    .since(13)
    .attrs({"axis"})
    .inputs(1, 1)
    .validate(validate_softmax)
    .infer(infer_softmax)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_softmax(n, *in[0], false)}; })
    .precision(Precision::fp32_compute)
    .kernel("softmax")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("softmax along one axis (default -1)");

MODELC_REGISTER_OP(LogSoftmax)
    .since(1)
    .attrs({"axis"})
    .inputs(1, 1)
    .validate(validate_softmax)
    .infer(infer_softmax)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_softmax(n, *in[0], true)}; })
    .precision(Precision::fp32_compute)
    .kernel("softmax")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("log of softmax over the input coerced to 2-D at axis (default 1)");

MODELC_REGISTER_OP(LogSoftmax)
    .since(13)
    .attrs({"axis"})
    .inputs(1, 1)
    .validate(validate_softmax)
    .infer(infer_softmax)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_softmax(n, *in[0], true)}; })
    .precision(Precision::fp32_compute)
    .kernel("softmax")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("log of softmax along one axis (default -1)");

}  // namespace modelc::ops

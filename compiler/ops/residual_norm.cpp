// compiler/ops/residual_norm.cpp — modelc.ResidualNorm (see residual_norm.h): attributes, shape
// rule, reference evaluation (double, as LayerNormalization's: the mean, then the mean of squared
// deviations; Y and Sum each rounded once to X's type) and facts.
#include "ops/residual_norm.h"

#include <cmath>
#include <string>

#include "ops/common.h"
#include "ops/normalization.h"
#include "ops/registry.h"

namespace modelc::ops {

namespace {

/// N, the row length: X's last dim (Error for a scalar X).
int64_t row_length(const Node& n) {
  const Value& x = n.input(kResidualNormX);
  if (x.rank() < 1) throw n.error("X ('" + x.name() + "') is a scalar; the op normalizes over its last dim");
  return x.shape().back();
}

/// A per-column input: N elements, every dim but the last 1.
void check_vector(const Node& n, int i, const char* what, int64_t N) {
  if (!n.has_input(i)) return;
  const Value& v = n.input(i);
  bool ok = v.numel() == N && (v.rank() == 0 ? N == 1 : v.shape().back() == N);
  for (int64_t d = 0; ok && d + 1 < v.rank(); ++d) ok = v.shape()[static_cast<std::size_t>(d)] == 1;
  if (!ok) {
    throw n.error(std::string("input ") + std::to_string(i) + " (" + what + ", '" + v.name() + "') is " + v.type_str() +
                  ", expected " + std::to_string(N) + " values (one per column)");
  }
  if (!is_float(v.dtype()) || v.dtype() == DType::float64) {
    throw n.error(std::string("input ") + std::to_string(i) + " (" + what + ") must be float32, float16 or bfloat16");
  }
}

void validate_residual_norm(const Node& n) {
  residual_norm_is_rms(n);
  norm_epsilon(n);
  if (!n.has_input(kResidualNormR)) throw n.error("input 1 (the residual R) is required");
  if (!n.has_input(kResidualNormGamma)) throw n.error("input 2 (Gamma) is required");
}

void infer_residual_norm(Node& n) {
  const Value& x = n.input(kResidualNormX);
  const Value& r = n.input(kResidualNormR);
  if (x.dtype() != DType::float32 && x.dtype() != DType::float16 && x.dtype() != DType::bfloat16) {
    throw n.error("X is " + x.type_str() + "; expected float32, float16 or bfloat16");
  }
  if (r.dtype() != x.dtype() || r.shape() != x.shape()) {
    throw n.error("input 1 (the residual, '" + r.name() + "') is " + r.type_str() + ", X is " + x.type_str() +
                  ": they must be the same");
  }
  const int64_t N = row_length(n);
  check_vector(n, kResidualNormBias, "the bias", N);
  check_vector(n, kResidualNormGamma, "Gamma", N);
  check_vector(n, kResidualNormBeta, "Beta", N);
  n.output(0).set_type(x.dtype(), x.shape());
  if (n.has_output(1)) n.output(1).set_type(x.dtype(), x.shape());
}

std::vector<Tensor> eval_residual_norm(const Node& n, const TensorRefs& in) {
  const Tensor& X = *in.at(kResidualNormX);
  const int64_t N = X.shape().back(), rows = N == 0 ? 0 : X.numel() / N;
  const std::vector<double> x = X.to_f64(), r = in.at(kResidualNormR)->to_f64(),
                            g = in.at(kResidualNormGamma)->to_f64();
  std::vector<double> bias, beta;
  if (in.size() > kResidualNormBias && in[kResidualNormBias]) bias = in[kResidualNormBias]->to_f64();
  if (in.size() > kResidualNormBeta && in[kResidualNormBeta]) beta = in[kResidualNormBeta]->to_f64();
  const bool rms = residual_norm_is_rms(n);
  const double eps = norm_epsilon(n);
  std::vector<double> h(x.size()), y(x.size());
  for (int64_t row = 0; row < rows; ++row) {
    double* hr = h.data() + row * N;
    double mean = 0.0;
    for (int64_t c = 0; c < N; ++c) {
      const std::size_t e = static_cast<std::size_t>(row * N + c);
      hr[c] = x[e] + r[e] + (bias.empty() ? 0.0 : bias[static_cast<std::size_t>(c)]);
      mean += rms ? hr[c] * hr[c] : hr[c];
    }
    mean /= static_cast<double>(N);
    double inv;
    if (rms) {
      inv = 1.0 / std::sqrt(mean + eps);
      mean = 0.0;
    } else {
      double var = 0.0;
      for (int64_t c = 0; c < N; ++c) var += (hr[c] - mean) * (hr[c] - mean);
      inv = 1.0 / std::sqrt(var / static_cast<double>(N) + eps);
    }
    for (int64_t c = 0; c < N; ++c) {
      y[static_cast<std::size_t>(row * N + c)] =
          (hr[c] - mean) * inv * g[static_cast<std::size_t>(c)] + (beta.empty() ? 0.0 : beta[static_cast<std::size_t>(c)]);
    }
  }
  std::vector<Tensor> out{Tensor::from_f64(X.dtype(), X.shape(), y)};
  if (n.has_output(1)) out.push_back(Tensor::from_f64(X.dtype(), X.shape(), h));
  return out;
}

int64_t flops_residual_norm(const Node& n) {
  const int64_t per = 7 + (n.has_input(kResidualNormBias) ? 1 : 0) + (n.has_input(kResidualNormBeta) ? 1 : 0);
  return per * n.input(kResidualNormX).numel();
}

}  // namespace

bool residual_norm_is_rms(const Node& n) {
  const std::string s = n.attr_string("norm", "layer");
  if (s != "layer" && s != "rms") throw n.error("attribute 'norm' is '" + s + "', expected 'layer' or 'rms'");
  return s == "rms";
}

// No kernel family yet (templates/residual_norm.cuh is wired into the schedule separately).
MODELC_REGISTER_OP(ResidualNorm)
    .domain(kModelcDomain)
    .since(1)
    .attrs({"epsilon", "norm"})
    .inputs(3, 5)
    .outputs(1, 2)
    .validate(validate_residual_norm)
    .infer(infer_residual_norm)
    .eval(eval_residual_norm)
    .precision(Precision::fp32_compute)
    .family("normalization")
    .flops(flops_residual_norm)
    .doc("X + R (+ bias) then LayerNorm or RMSNorm over the last dim, one pass (made by passes/fuse_attention)");

}  // namespace modelc::ops

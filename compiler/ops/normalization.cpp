// compiler/ops/normalization.cpp — BatchNormalization (inference),
// InstanceNormalization, LayerNormalization.
#include "ops/normalization.h"

#include <cmath>

#include "ops/common.h"
#include "reference/parallel.h"

namespace modelc::ops {
namespace {

void require_float_input(const Node& n, int i) {
  if (n.has_input(i) && n.input(i).has_type()) {
    require_dtype(n, i, {DType::float32, DType::float16, DType::bfloat16});
  }
}

void require_shape(const Node& n, int i, const char* what, const Shape& want, const std::string& why) {
  if (!n.has_input(i)) return;
  const Shape& s = n.input(i).shape();
  if (s != want) {
    throw n.error(std::string(what) + " ('" + n.input(i).name() + "') has shape " + shape_str(s) + ", expected " +
                  shape_str(want) + " (" + why + ")");
  }
}

// X (input 0, of shape `x`) has rank r or more.
void require_rank_at_least(const Node& n, const Shape& x, int64_t r) {
  if (static_cast<int64_t>(x.size()) < r) {
    throw n.error("input X ('" + n.input(0).name() + "') has shape " + shape_str(x) + ", expected rank " +
                  std::to_string(r) + " or more (N x C" + (r > 2 ? " x D1 x ...)" : " x ...)"));
  }
}

// ---- BatchNormalization ----------------------------------------------------

const char* const kTrainingUnsupported = "training mode is not supported";

void validate_batchnorm(const Node& n) {
  // Opset 6 says which mode with is_test, defaulting to training.
  if (n.opset() < 7 && n.attr_int("is_test", 0) == 0) {
    throw n.error(std::string(kTrainingUnsupported) + " (attribute 'is_test' is " +
                      std::to_string(n.attr_int("is_test", 0)) + ", opset 6 needs is_test=1 for inference)",
                  "export the model in eval mode (model.eval() before torch.onnx.export)");
  }
  if (n.attr_int("training_mode", 0) != 0) {
    throw n.error(std::string(kTrainingUnsupported) + " (attribute 'training_mode' is " +
                      std::to_string(n.attr_int("training_mode", 0)) + ")",
                  "export the model in eval mode (model.eval() before torch.onnx.export)");
  }
  for (int i = 1; i < n.num_outputs(); ++i) {
    if (n.has_output(i)) {
      throw n.error(std::string(kTrainingUnsupported) + " (output " + std::to_string(i) + " '" + n.output(i).name() +
                        "' is requested; inference gives only Y)",
                    "export the model in eval mode (model.eval() before torch.onnx.export)");
    }
  }
  const int64_t spatial = n.attr_int("spatial", 1);
  if (spatial != 0 && spatial != 1) {
    throw n.error("attribute 'spatial' is " + std::to_string(spatial) + ", expected 0 or 1");
  }
  norm_epsilon(n);
  n.attr_float("momentum", 0.9);
  for (int i = 0; i < 5; ++i) require_float_input(n, i);
}

// Parameters are per channel (shape [C]), or with spatial=0 (opset 7) per
// activation (shape [C, D1, ...]).
Shape batchnorm_param_shape(const Node& n) {
  const Shape& x = n.input(0).shape();
  if (n.attr_int("spatial", 1) == 0) return Shape(x.begin() + 1, x.end());
  return Shape{x[1]};
}

void infer_batchnorm(Node& n) {
  require_rank_at_least(n, n.input(0).shape(), 2);
  const Shape p = batchnorm_param_shape(n);
  const std::string why = n.attr_int("spatial", 1) == 0 ? "spatial=0: one value per activation" : "one value per channel";
  require_shape(n, 1, "scale", p, why);
  require_shape(n, 2, "B", p, why);
  require_shape(n, 3, "input_mean", p, why);
  require_shape(n, 4, "input_var", p, why);
  infer_same_as_input(n);
}

// Y = (X - mean) / sqrt(var + eps) * scale + B, as Y = X * a + b per parameter.
Tensor eval_batchnorm(const Node& n, const TensorRefs& in) {
  const double eps = norm_epsilon(n);
  const Shape& xs = in[0]->shape();
  const std::vector<double> scale = in[1]->to_f64(), bias = in[2]->to_f64(), mean = in[3]->to_f64(),
                            var = in[4]->to_f64();
  const int64_t P = static_cast<int64_t>(scale.size());
  std::vector<double> a(scale.size()), b(scale.size());
  for (std::size_t i = 0; i < scale.size(); ++i) {
    a[i] = scale[i] / std::sqrt(var[i] + eps);
    b[i] = bias[i] - mean[i] * a[i];
  }
  // Each batch item is P parameter groups of `inner` contiguous elements.
  const int64_t inner = num_elements(xs) / std::max<int64_t>(1, xs[0] * P);
  std::vector<double> x = in[0]->to_f64();
  // Threads over (batch item, parameter) slices (reference/parallel.h).
  reference::parallel_items(xs[0] * P, inner, [&](int64_t s) {
    const int64_t c = s % P;
    double* p = x.data() + s * inner;
    for (int64_t k = 0; k < inner; ++k) p[k] = p[k] * a[c] + b[c];
  });
  return Tensor::from_f64(in[0]->dtype(), xs, x);
}

// ---- InstanceNormalization -------------------------------------------------

void infer_instancenorm(Node& n) {
  instancenorm_axis(n, n.input(0).shape());
  const Shape c{n.input(0).shape()[1]};
  require_shape(n, 1, "scale", c, "one value per channel");
  require_shape(n, 2, "B", c, "one value per channel");
  infer_same_as_input(n);
}

// Per (n, c): Y = scale * (X - mean) / sqrt(var + eps) + B over the spatial dims.
Tensor eval_instancenorm(const Node& n, const TensorRefs& in) {
  const double eps = norm_epsilon(n);
  const Shape& xs = in[0]->shape();
  const std::vector<double> scale = in[1]->to_f64(), bias = in[2]->to_f64();
  const int64_t N = xs[0], C = xs[1], inner = num_elements(xs) / std::max<int64_t>(1, N * C);
  std::vector<double> x = in[0]->to_f64();
  reference::parallel_items(N * C, 3 * inner, [&](int64_t p) {
    double* v = x.data() + p * inner;
    double mean = 0.0;
    for (int64_t k = 0; k < inner; ++k) mean += v[k];
    mean /= static_cast<double>(inner);
    double var = 0.0;
    for (int64_t k = 0; k < inner; ++k) var += (v[k] - mean) * (v[k] - mean);
    var /= static_cast<double>(inner);
    const int64_t c = p % C;
    const double a = scale[c] / std::sqrt(var + eps);
    for (int64_t k = 0; k < inner; ++k) v[k] = (v[k] - mean) * a + bias[c];
  });
  return Tensor::from_f64(in[0]->dtype(), xs, x);
}

// ---- LayerNormalization ----------------------------------------------------

DType stash_dtype(const Node& n) {
  const int64_t st = n.attr_int("stash_type", 1);
  const DType t = dtype_from_onnx(static_cast<int>(st));
  if (!is_narrow_float(t)) {  // the normalization template computes in FP32: no float64 statistics
    throw n.error("attribute 'stash_type' is " + std::to_string(st) + " (" + onnx_dtype_name(static_cast<int>(st)) +
                  "), expected a float type modelc supports (1 = FLOAT, 10 = FLOAT16, 16 = BFLOAT16)");
  }
  return t;
}

void validate_layernorm(const Node& n) {
  stash_dtype(n);
  norm_epsilon(n);
  for (int i = 0; i < 3; ++i) require_float_input(n, i);
}

// Scale and B broadcast unidirectionally to X's shape.
void require_broadcasts_to(const Node& n, int i, const char* what, const Shape& x) {
  if (!n.has_input(i)) return;
  const Shape& s = n.input(i).shape();
  bool ok = s.size() <= x.size();
  for (std::size_t k = 0; ok && k < s.size(); ++k) {
    const int64_t t = x[x.size() - s.size() + k];
    ok = s[k] == 1 || s[k] == t;
  }
  if (!ok) {
    throw n.error(std::string(what) + " ('" + n.input(i).name() + "') has shape " + shape_str(s) +
                  ", which does not broadcast to X's shape " + shape_str(x));
  }
}

void infer_layernorm(Node& n) {
  const Shape& x = n.input(0).shape();
  const int64_t axis = layernorm_axis(n, static_cast<int64_t>(x.size()));
  require_broadcasts_to(n, 1, "Scale", x);
  require_broadcasts_to(n, 2, "B", x);
  infer_same_as_input(n);
  Shape stat(x.begin(), x.begin() + axis);
  stat.resize(x.size(), 1);
  const DType st = stash_dtype(n);
  for (int i = 1; i < 3; ++i) {
    if (n.has_output(i)) n.output(i).set_type(st, stat);
  }
}

// Over the trailing dims from `axis`: Y = (X - mean) * InvStdDev * Scale + B,
// InvStdDev = 1 / sqrt(var + eps) (population variance).
std::vector<Tensor> eval_layernorm(const Node& n, const TensorRefs& in) {
  const Shape& xs = in[0]->shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  const int64_t axis = layernorm_axis(n, rank);
  const double eps = norm_epsilon(n);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
  const int64_t inner = outer > 0 ? num_elements(xs) / outer : 0;
  std::vector<double> x = in[0]->to_f64();
  const std::vector<double> scale = in[1]->to_f64();
  const std::vector<int64_t> si = broadcast_index(in[1]->shape(), xs);
  std::vector<double> bias;
  std::vector<int64_t> bi;
  if (in.size() > 2 && in[2]) {
    bias = in[2]->to_f64();
    bi = broadcast_index(in[2]->shape(), xs);
  }
  std::vector<double> means(static_cast<std::size_t>(outer)), inv_std(static_cast<std::size_t>(outer));
  reference::parallel_items(outer, 3 * inner, [&](int64_t o) {
    double* v = x.data() + o * inner;
    double mean = 0.0;
    for (int64_t k = 0; k < inner; ++k) mean += v[k];
    mean /= static_cast<double>(inner);
    double var = 0.0;
    for (int64_t k = 0; k < inner; ++k) var += (v[k] - mean) * (v[k] - mean);
    var /= static_cast<double>(inner);
    const double r = 1.0 / std::sqrt(var + eps);
    for (int64_t k = 0; k < inner; ++k) {
      const std::size_t e = static_cast<std::size_t>(o * inner + k);
      v[k] = (v[k] - mean) * r * scale[si[e]] + (bias.empty() ? 0.0 : bias[bi[e]]);
    }
    means[o] = mean;
    inv_std[o] = r;
  });
  std::vector<Tensor> out{Tensor::from_f64(in[0]->dtype(), xs, x)};
  Shape stat(xs.begin(), xs.begin() + axis);
  stat.resize(xs.size(), 1);
  const DType st = stash_dtype(n);
  out.push_back(Tensor::from_f64(st, stat, means));
  out.push_back(Tensor::from_f64(st, stat, inv_std));
  return out;
}

}  // namespace

double norm_epsilon(const Node& n) { return n.attr_float("epsilon", 1e-5); }

int64_t layernorm_axis(const Node& n, int64_t rank) { return normalize_axis(n, n.attr_int("axis", -1), rank); }

int64_t instancenorm_axis(const Node& n, const Shape& x) {
  require_rank_at_least(n, x, 3);
  return 2;
}

MODELC_REGISTER_OP(BatchNormalization)
    .since(6)
    .attrs({"epsilon", "is_test", "momentum", "spatial"})
    .inputs(5, 5)
    .outputs(1, 5)
    .validate(validate_batchnorm)
    .infer(infer_batchnorm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_batchnorm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::normalization)
    .layout(Layout::channels)
    .kernel("elementwise")
    .family("normalization")
    .flops(flops_per_output(2))
    .doc("inference batch normalization (is_test=1) with running mean/var (spatial=0: per-activation parameters)");

MODELC_REGISTER_OP(BatchNormalization)
    .since(7)
    .attrs({"epsilon", "momentum", "spatial"})
    .inputs(5, 5)
    .outputs(1, 5)
    .validate(validate_batchnorm)
    .infer(infer_batchnorm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_batchnorm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::normalization)
    .layout(Layout::channels)
    .kernel("elementwise")
    .family("normalization")
    .flops(flops_per_output(2))
    .doc("inference batch normalization with running mean/var (spatial=0: per-activation parameters)");

MODELC_REGISTER_OP(BatchNormalization)
    .since(9)
    .attrs({"epsilon", "momentum"})
    .inputs(5, 5)
    .outputs(1, 5)
    .validate(validate_batchnorm)
    .infer(infer_batchnorm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_batchnorm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::normalization)
    .layout(Layout::channels)
    .kernel("elementwise")
    .family("normalization")
    .flops(flops_per_output(2))
    .doc("inference batch normalization with running mean/var, per channel");

MODELC_REGISTER_OP(BatchNormalization)
    .since(14)
    .attrs({"epsilon", "momentum", "training_mode"})
    .inputs(5, 5)
    .outputs(1, 3)
    .validate(validate_batchnorm)
    .infer(infer_batchnorm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_batchnorm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::normalization)
    .layout(Layout::channels)
    .kernel("elementwise")
    .family("normalization")
    .flops(flops_per_output(2))
    .doc("inference batch normalization with running mean/var, per channel (training_mode=0 only)");

MODELC_REGISTER_OP(InstanceNormalization)
    .since(6)
    .attrs({"epsilon"})
    .inputs(3, 3)
    .validate([](const Node& n) {
      norm_epsilon(n);
      for (int i = 0; i < 3; ++i) require_float_input(n, i);
    })
    .infer(infer_instancenorm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_instancenorm(n, in)}; })
    .precision(Precision::fp32_compute)
    .layout(Layout::channels)
    .kernel("instancenorm")
    .family("normalization")
    .flops(flops_per_output(5))
    .doc("per (batch, channel) normalization over the spatial dims, then scale and bias per channel");

MODELC_REGISTER_OP(LayerNormalization)
    .since(17)
    .attrs({"axis", "epsilon", "stash_type"})
    .inputs(2, 3)
    .outputs(1, 3)
    .validate(validate_layernorm)
    .infer(infer_layernorm)
    .eval(eval_layernorm)
    .precision(Precision::fp32_compute)
    .kernel("layernorm")
    .family("normalization")
    .flops(flops_per_output(5))
    .doc("normalization over the dims from 'axis' on, then Scale and B; optional Mean and InvStdDev outputs");

}  // namespace modelc::ops

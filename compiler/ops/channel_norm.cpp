// compiler/ops/channel_norm.cpp — GroupNormalization (opsets 18, 21) and LRN (1, 13): their
// attributes, shape rules and reference evaluation.
//
// FP16: both compute in FP32 on FP16 storage (Precision::fp32_compute), as the other
// normalizations do: the statistics and the power are computed in FP32 inside the kernel.
// Layout: both read X along its channels (Layout::channels: X is input 0, Y output 0); their
// families take every operand as a strided view, so a channels-last buffer is read in place.
#include "ops/channel_norm.h"

#include <cmath>

#include "ops/common.h"
#include "reference/parallel.h"

namespace modelc::ops {
namespace {

void require_floats(const Node& n, int count) {
  for (int i = 0; i < count; ++i) {
    if (n.has_input(i) && n.input(i).has_type()) require_dtype(n, i, {DType::float32, DType::float16, DType::bfloat16});
  }
}

void require_rank_at_least(const Node& n, const Shape& x, int64_t r, const char* form) {
  if (static_cast<int64_t>(x.size()) < r) {
    throw n.error("input X ('" + n.input(0).name() + "') has shape " + shape_str(x) + ", expected rank " +
                  std::to_string(r) + " or more (" + form + ")");
  }
}

// ---- GroupNormalization ------------------------------------------------------------------------

void validate_group_norm(const Node& n) {
  if (!n.has_attr("num_groups")) throw n.error("attribute 'num_groups' is required");
  if (n.attr_int("num_groups", 1) < 1) {
    throw n.error("attribute 'num_groups' is " + std::to_string(n.attr_int("num_groups", 1)) + ", expected 1 or more");
  }
  n.attr_float("epsilon", 1e-5);
  if (n.has_attr("stash_type")) {
    const int64_t st = n.attr_int("stash_type", 1);
    if (!is_float(dtype_from_onnx(static_cast<int>(st)))) {
      throw n.error("attribute 'stash_type' is " + std::to_string(st) +
                    ", expected a float type (1 = FLOAT, 10 = FLOAT16, 16 = BFLOAT16)");
    }
  }
  require_floats(n, 3);
}

void infer_group_norm(Node& n) {
  const Shape& x = n.input(0).shape();
  const GroupNorm g = group_norm(n, x);
  const Shape want{g.per_channel ? x[1] : g.groups};
  const char* why = g.per_channel ? "one value per channel" : "one value per group (opset 18; opset 21: per channel)";
  for (int i : {1, 2}) {
    const Value& v = n.input(i);
    if (v.shape() != want) {
      throw n.error(std::string(i == 1 ? "scale" : "bias") + " ('" + v.name() + "') has shape " + shape_str(v.shape()) +
                    ", expected " + shape_str(want) + " (" + why + ")");
    }
  }
  infer_same_as_input(n);
}

// Per (instance, group): the mean and population variance over the group's channels and the
// instance dims, then y = (x - mean) / sqrt(var + eps) * scale + bias.
Tensor eval_group_norm(const Node& n, const TensorRefs& in) {
  const Shape& xs = in[0]->shape();
  const GroupNorm g = group_norm(n, xs);
  const std::vector<double> scale = in[1]->to_f64(), bias = in[2]->to_f64();
  const int64_t N = xs[0];
  int64_t spatial = 1;
  for (std::size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
  const int64_t len = g.group_size * spatial;  // a group's elements, contiguous in NCHW
  std::vector<double> x = in[0]->to_f64();
  // Threads over (instance, group) slices (reference/parallel.h).
  reference::parallel_items(N * g.groups, 3 * len, [&](int64_t s) {
    {
      const int64_t k = s % g.groups;
      double* v = x.data() + s * len;
      double mean = 0.0;
      for (int64_t i = 0; i < len; ++i) mean += v[i];
      mean /= static_cast<double>(len);
      double var = 0.0;
      for (int64_t i = 0; i < len; ++i) var += (v[i] - mean) * (v[i] - mean);
      var /= static_cast<double>(len);
      const double inv = 1.0 / std::sqrt(var + g.epsilon);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t p = g.per_channel ? k * g.group_size + i / spatial : k;
        v[i] = (v[i] - mean) * inv * scale[static_cast<std::size_t>(p)] + bias[static_cast<std::size_t>(p)];
      }
    }
  });
  return Tensor::from_f64(in[0]->dtype(), xs, x);
}

// ---- LRN -----------------------------------------------------------------------------------------

Tensor eval_lrn(const Node& n, const TensorRefs& in) {
  const Shape& xs = in[0]->shape();
  const Lrn p = lrn(n);
  const int64_t N = xs[0], C = xs[1];
  int64_t spatial = 1;
  for (std::size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
  const std::vector<double> x = in[0]->to_f64();
  std::vector<double> y(x.size());
  reference::parallel_items(N * C, spatial * p.size, [&](int64_t bc) {
    {
      const int64_t b = bc / C, c = bc % C;
      const int64_t lo = std::max<int64_t>(0, c - p.before), hi = std::min<int64_t>(C - 1, c + p.after);
      for (int64_t s = 0; s < spatial; ++s) {
        double sq = 0.0;
        for (int64_t j = lo; j <= hi; ++j) {
          const double v = x[static_cast<std::size_t>((b * C + j) * spatial + s)];
          sq += v * v;
        }
        const std::size_t e = static_cast<std::size_t>((b * C + c) * spatial + s);
        y[e] = x[e] / std::pow(p.bias + p.alpha / static_cast<double>(p.size) * sq, p.beta);
      }
    }
  });
  return Tensor::from_f64(in[0]->dtype(), xs, y);
}

void infer_lrn(Node& n) {
  require_rank_at_least(n, n.input(0).shape(), 3, "N x C x D1 x ...");
  infer_same_as_input(n);
}

}  // namespace

GroupNorm group_norm(const Node& n, const Shape& x) {
  require_rank_at_least(n, x, 2, "N x C x D1 x ...");
  GroupNorm g;
  g.groups = n.attr_int("num_groups", 1);
  g.epsilon = n.attr_float("epsilon", 1e-5);
  g.per_channel = n.opset() >= 21;
  if (!n.has_attr("num_groups")) throw n.error("attribute 'num_groups' is required");
  if (g.groups < 1 || x[1] % g.groups != 0) {
    throw n.error("attribute 'num_groups' is " + std::to_string(g.groups) + ", which does not divide X's " +
                  std::to_string(x[1]) + " channels");
  }
  g.group_size = x[1] / g.groups;
  return g;
}

Lrn lrn(const Node& n) {
  if (!n.has_attr("size")) throw n.error("attribute 'size' is required");
  Lrn p;
  p.size = n.attr_int("size", 1);
  if (p.size < 1) throw n.error("attribute 'size' is " + std::to_string(p.size) + ", expected 1 or more");
  p.before = (p.size - 1) / 2;
  p.after = p.size - 1 - p.before;
  p.alpha = n.attr_float("alpha", 1e-4);
  p.beta = n.attr_float("beta", 0.75);
  p.bias = n.attr_float("bias", 1.0);
  return p;
}

MODELC_REGISTER_OP(GroupNormalization)
    .since(18)
    .attrs({"epsilon", "num_groups"})
    .inputs(3, 3)
    .validate(validate_group_norm)
    .infer(infer_group_norm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_group_norm(n, in)}; })
    .precision(Precision::fp32_compute)
    .layout(Layout::channels)
    .kernel("groupnorm")
    .family("normalization")
    .flops(flops_per_output(5))
    .doc("per (batch, group of C / num_groups channels) normalization, then scale and bias per group "
         "(the opset-18 form)");

MODELC_REGISTER_OP(GroupNormalization)
    .since(21)
    .attrs({"epsilon", "num_groups", "stash_type"})
    .inputs(3, 3)
    .validate(validate_group_norm)
    .infer(infer_group_norm)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_group_norm(n, in)}; })
    .precision(Precision::fp32_compute)
    .layout(Layout::channels)
    .kernel("groupnorm")
    .family("normalization")
    .flops(flops_per_output(5))
    .doc("per (batch, group of C / num_groups channels) normalization, then scale and bias per channel (opset 18: "
         "per group); statistics in FP32 or wider whatever stash_type says");

MODELC_REGISTER_OP(LRN)
    .since(1)
    .attrs({"alpha", "beta", "bias", "size"})
    .inputs(1, 1)
    .validate([](const Node& n) {
      lrn(n);
      require_floats(n, 1);
    })
    .infer(infer_lrn)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_lrn(n, in)}; })
    .precision(Precision::fp32_compute)
    .layout(Layout::channels)
    .kernel("lrn")
    .family("normalization")
    .flops([](const Node& n) { return n.output(0).numel() * (2 * lrn(n).size + 4); })
    .doc("local response normalization across 'size' neighbouring channels");

}  // namespace modelc::ops

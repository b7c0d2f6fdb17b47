// compiler/ops/attention.cpp — modelc.Attention (see attention.h): its attributes, shape rule,
// reference evaluation and facts.
//
// The reference computes every score, the softmax and the weighted sum in double from the inputs'
// values and rounds once to the output type: the fused kernel computes S and the softmax in FP32
// (rounding only P to the storage type before P V), so this is the closer model of it than a chain
// of rounded steps.
#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/common.h"
#include "ops/registry.h"

namespace modelc::ops {

namespace {

std::vector<int64_t> ints_attr(const Node& n, const char* name, std::size_t count) {
  if (!n.has_attr(name)) throw n.error(std::string("attribute '") + name + "' is missing");
  std::vector<int64_t> v = n.attr_ints(name);
  if (v.size() != count) {
    throw n.error(std::string("attribute '") + name + "' has " + std::to_string(v.size()) + " values, expected " +
                  std::to_string(count));
  }
  for (int64_t x : v) {
    if (x < 0) throw n.error(std::string("attribute '") + name + "' has a negative value");
  }
  return v;
}

int64_t positive_attr(const Node& n, const char* name) {
  if (!n.has_attr(name)) throw n.error(std::string("attribute '") + name + "' is missing");
  const int64_t v = n.attr_int(name, 0);
  if (v < 1) throw n.error(std::string("attribute '") + name + "' is " + std::to_string(v) + ", expected at least 1");
  return v;
}

HeadView head_view(const Node& n, const char* name) {
  const std::vector<int64_t> v = ints_attr(n, name, 4);
  return HeadView{v[0], v[1], v[2], v[3]};
}

BiasView bias_view(const Node& n, const char* name) {
  const std::vector<int64_t> v = ints_attr(n, name, 6);
  if (v[1] < 1) throw n.error(std::string("attribute '") + name + "': batches (its second value) must be at least 1");
  return BiasView{v[0], v[1], v[2], v[3], v[4], v[5]};
}

/// The last element a head view reaches (its strides are non-negative).
int64_t last_of(const HeadView& v, int64_t batch, int64_t heads, int64_t length, int64_t d) {
  return v.offset + (batch - 1) * v.stride_b + (heads - 1) * v.stride_h + (length - 1) * v.stride_s + (d - 1);
}

void check_reach(const Node& n, int input, const char* what, int64_t last) {
  if (!n.has_input(input) || !n.input(input).has_type()) return;
  const int64_t numel = n.input(input).numel();
  if (last >= numel) {
    throw n.error(std::string(what) + " reaches element " + std::to_string(last) + " of input " + std::to_string(input) +
                  " ('" + n.input(input).name() + "', " + std::to_string(numel) + " elements)");
  }
}

void validate_attention(const Node& n) { attention_spec(n); }

void infer_attention(Node& n) {
  const AttentionSpec s = attention_spec(n);
  const DType t = n.input(kAttentionQ).dtype();
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    const DType ti = n.input(i).dtype();
    if (i <= kAttentionV ? ti != t : !is_float(ti) || ti == DType::float64) {
      throw n.error("input " + std::to_string(i) + " ('" + n.input(i).name() + "') is " + n.input(i).type_str() +
                    (i <= kAttentionV ? "; Q, K and V must share one float type" : "; a bias term must be float32, float16 or bfloat16"));
    }
  }
  if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) {
    throw n.error(std::string("Q, K and V are ") + dtype_name(t) + "; expected float32, float16 or bfloat16");
  }
  n.output(0).set_type(t, s.output_shape);
}

std::vector<Tensor> eval_attention(const Node& n, const TensorRefs& in) {
  const AttentionSpec s = attention_spec(n);
  // Q, K and V are often one packed value: converted once.
  const std::vector<double> q = in.at(kAttentionQ)->to_f64();
  std::vector<double> k_own, v_own;
  const std::vector<double>* kp = &q;
  const std::vector<double>* vp = &q;
  if (in.at(kAttentionK) != in.at(kAttentionQ)) {
    k_own = in.at(kAttentionK)->to_f64();
    kp = &k_own;
  }
  if (in.at(kAttentionV) == in.at(kAttentionK)) {
    vp = kp;
  } else if (in.at(kAttentionV) != in.at(kAttentionQ)) {
    v_own = in.at(kAttentionV)->to_f64();
    vp = &v_own;
  }
  std::vector<std::vector<double>> bias;
  for (std::size_t t = 0; t < s.bias.size(); ++t) bias.push_back(in.at(kAttentionBias0 + t)->to_f64());

  const int64_t group = s.heads / s.kv_heads, D = s.head_dim, Skv = s.kv_length;
  std::vector<double> out(static_cast<std::size_t>(num_elements(s.output_shape)), 0.0);
  std::vector<double> score(static_cast<std::size_t>(Skv));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < s.q_length; ++i) {
        const int64_t qo = s.q.offset + b * s.q.stride_b + h * s.q.stride_h + i * s.q.stride_s;
        double mx = -INFINITY;
        for (int64_t j = 0; j < Skv; ++j) {
          const int64_t ko = s.k.offset + b * s.k.stride_b + hk * s.k.stride_h + j * s.k.stride_s;
          double dot = 0.0;
          for (int64_t d = 0; d < D; ++d) dot += q[static_cast<std::size_t>(qo + d)] * (*kp)[static_cast<std::size_t>(ko + d)];
          double x = s.scale * dot;
          for (std::size_t t = 0; t < s.bias.size(); ++t) {
            const BiasView& bv = s.bias[t];
            x += bias[t][static_cast<std::size_t>(bv.offset + (b % bv.batches) * bv.stride_b + h * bv.stride_h +
                                                  i * bv.stride_q + j * bv.stride_k)];
          }
          if (s.causal && j > i + s.causal_offset) x = -INFINITY;
          score[static_cast<std::size_t>(j)] = x;
          mx = std::max(mx, x);
        }
        double sum = 0.0;
        for (double& x : score) {
          x = std::exp(x - mx);  // every score -inf: mx -inf, exp(NaN): the row is NaN, as the unfused softmax
          sum += x;
        }
        const int64_t oo = s.o.offset + b * s.o.stride_b + h * s.o.stride_h + i * s.o.stride_s;
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0.0;
          for (int64_t j = 0; j < Skv; ++j) {
            const int64_t vo = s.v.offset + b * s.v.stride_b + hk * s.v.stride_h + j * s.v.stride_s + d;
            acc += score[static_cast<std::size_t>(j)] * (*vp)[static_cast<std::size_t>(vo)];
          }
          out[static_cast<std::size_t>(oo + d)] = acc / sum;
        }
      }
    }
  }
  return {Tensor::from_f64(n.output(0).dtype(), s.output_shape, out)};
}

int64_t flops_attention(const Node& n) {
  const AttentionSpec s = attention_spec(n);
  const int64_t scores = s.batch * s.heads * s.q_length * s.kv_length;
  return 4 * scores * s.head_dim + 5 * scores;  // two products; scale, bias, exp, sum, divide
}

}  // namespace

AttentionSpec attention_spec(const Node& n) {
  AttentionSpec s;
  s.batch = positive_attr(n, "batch");
  s.heads = positive_attr(n, "heads");
  s.kv_heads = n.has_attr("kv_heads") ? positive_attr(n, "kv_heads") : s.heads;
  if (s.heads % s.kv_heads != 0) {
    throw n.error("attribute 'kv_heads' (" + std::to_string(s.kv_heads) + ") does not divide 'heads' (" +
                  std::to_string(s.heads) + ")");
  }
  s.q_length = positive_attr(n, "q_length");
  s.kv_length = positive_attr(n, "kv_length");
  s.head_dim = positive_attr(n, "head_dim");
  s.q = head_view(n, "q_view");
  s.k = head_view(n, "k_view");
  s.v = head_view(n, "v_view");
  s.o = head_view(n, "o_view");
  s.scale = n.attr_float("scale", 1.0);
  if (!std::isfinite(s.scale)) throw n.error("attribute 'scale' is not finite");
  s.causal = n.attr_int("causal", 0) != 0;
  s.causal_offset = n.attr_int("causal_offset", 0);
  if (!n.has_attr("output_shape")) throw n.error("attribute 'output_shape' is missing");
  s.output_shape = n.attr_ints("output_shape");
  for (int64_t d : s.output_shape) {
    if (d < 0) throw n.error("attribute 'output_shape' has a negative dim");
  }
  for (int t = 0; t < 2; ++t) {
    const char* name = t == 0 ? "bias0_view" : "bias1_view";
    const bool given = n.has_input(kAttentionBias0 + t);
    if (given != n.has_attr(name)) {
      throw n.error(std::string("input ") + std::to_string(kAttentionBias0 + t) + (given ? " is given without" : " is absent but has") +
                    " attribute '" + name + "'");
    }
    if (given) s.bias.push_back(bias_view(n, name));
  }
  if (n.has_input(kAttentionBias0 + 1) && !n.has_input(kAttentionBias0)) {
    throw n.error("input 4 (the second bias term) is given without input 3");
  }

  check_reach(n, kAttentionQ, "q_view", last_of(s.q, s.batch, s.heads, s.q_length, s.head_dim));
  check_reach(n, kAttentionK, "k_view", last_of(s.k, s.batch, s.kv_heads, s.kv_length, s.head_dim));
  check_reach(n, kAttentionV, "v_view", last_of(s.v, s.batch, s.kv_heads, s.kv_length, s.head_dim));
  for (std::size_t t = 0; t < s.bias.size(); ++t) {
    const BiasView& b = s.bias[t];
    check_reach(n, kAttentionBias0 + static_cast<int>(t), t == 0 ? "bias0_view" : "bias1_view",
                b.offset + (b.batches - 1) * b.stride_b + (s.heads - 1) * b.stride_h + (s.q_length - 1) * b.stride_q +
                    (s.kv_length - 1) * b.stride_k);
  }
  // O covers the output exactly once: as many view elements as output elements, none twice.
  const int64_t numel = num_elements(s.output_shape);
  const int64_t count = s.batch * s.heads * s.q_length * s.head_dim;
  if (count != numel) {
    throw n.error("o_view has " + std::to_string(count) + " elements, 'output_shape' [" + shape_str(s.output_shape) +
                  "] " + std::to_string(numel));
  }
  if (last_of(s.o, s.batch, s.heads, s.q_length, s.head_dim) >= numel) {
    throw n.error("o_view reaches past the output's last element");
  }
  std::vector<bool> seen(static_cast<std::size_t>(numel), false);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.q_length; ++i)
        for (int64_t d = 0; d < s.head_dim; ++d) {
          const auto e = static_cast<std::size_t>(s.o.offset + b * s.o.stride_b + h * s.o.stride_h + i * s.o.stride_s + d);
          if (seen[e]) throw n.error("o_view writes output element " + std::to_string(e) + " twice");
          seen[e] = true;
        }
  return s;
}

void set_attention_spec(Node& n, const AttentionSpec& s) {
  n.set_attr_int("batch", s.batch);
  n.set_attr_int("heads", s.heads);
  n.set_attr_int("kv_heads", s.kv_heads);
  n.set_attr_int("q_length", s.q_length);
  n.set_attr_int("kv_length", s.kv_length);
  n.set_attr_int("head_dim", s.head_dim);
  auto head = [](const HeadView& v) { return std::vector<int64_t>{v.offset, v.stride_b, v.stride_h, v.stride_s}; };
  n.set_attr_ints("q_view", head(s.q));
  n.set_attr_ints("k_view", head(s.k));
  n.set_attr_ints("v_view", head(s.v));
  n.set_attr_ints("o_view", head(s.o));
  for (std::size_t t = 0; t < 2; ++t) {
    const char* name = t == 0 ? "bias0_view" : "bias1_view";
    if (t < s.bias.size()) {
      const BiasView& b = s.bias[t];
      n.set_attr_ints(name, {b.offset, b.batches, b.stride_b, b.stride_h, b.stride_q, b.stride_k});
    } else {
      n.remove_attr(name);
    }
  }
  n.set_attr_ints("output_shape", s.output_shape);
  n.set_attr_float("scale", s.scale);
  n.set_attr_int("causal", s.causal ? 1 : 0);
  n.set_attr_int("causal_offset", s.causal_offset);
}

// The kernel: the "attention" family (templates/attention.cuh; its descriptor schedule/attention.h,
// its printer codegen/families/attention.cpp), for FP16 / BF16 operands (passes/fuse_attention makes
// the op only in such compiles).
MODELC_REGISTER_OP(Attention)
    .domain(kModelcDomain)
    .since(1)
    .attrs({"batch", "heads", "kv_heads", "q_length", "kv_length", "head_dim", "q_view", "k_view", "v_view", "o_view",
            "bias0_view", "bias1_view", "output_shape", "scale", "causal", "causal_offset"})
    .inputs(3, 5)
    .validate(validate_attention)
    .infer(infer_attention)
    .eval(eval_attention)
    .precision(Precision::fp32_compute)
    .kernel("attention")
    .family("attention")
    .flops(flops_attention)
    .doc("softmax(scale Q K^T + bias terms [+ causal mask]) V over strided views of Q, K, V and O (made by "
         "passes/fuse_attention)");

}  // namespace modelc::ops

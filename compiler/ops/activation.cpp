// compiler/ops/activation.cpp — unary activations: Relu, LeakyRelu, PRelu, Elu,
// Selu, Sigmoid, HardSigmoid, HardSwish, Tanh, Softplus, Clip.
//
// PRelu 1 and 6 (slope shared or per channel) are normalized to the numpy
// form of PRelu 7 (slope reshaped to [C,1,...,1]) and evaluated by its rule.
//
// Float attributes (alpha, beta, gamma, Clip-6's min/max) are ONNX floats,
// read rounded to float32 (activation_attrs, clip_bounds). Values are computed
// in double and rounded once.
#include "ops/activation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/elementwise_rules.h"

namespace modelc::ops {
namespace {

double float_attr(const Node& n, const char* name, double def) {
  return static_cast<double>(static_cast<float>(n.attr_float(name, def)));
}

const Tensor* bound_tensor(const ClipBound& b) { return b.value ? &*b.value : nullptr; }

// Most activations: float16, float32 and float64, bfloat16 from the opset named per op.
const TypeRule kFloatTypes = {{1, kFloat16_32 | kFloat64}};
const TypeRule kFloatTypesBf16At13 = {{6, kFloat16_32 | kFloat64}, {13, kFloats | kFloat64}};

double sigmoid(double x) {
  // Split by sign so exp never overflows into inf/inf.
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

// ---- PRelu -----------------------------------------------------------------

// PRelu: slope broadcasts unidirectionally to X (the output has X's shape).
void infer_prelu(Node& n) {
  const Shape& x = n.input(0).shape();
  const Shape& slope = n.input(1).shape();
  bool ok = slope.size() <= x.size();
  for (std::size_t i = 0; ok && i < slope.size(); ++i) {
    const int64_t d = slope[slope.size() - 1 - i];
    ok = d == 1 || d == x[x.size() - 1 - i];
  }
  if (!ok) {
    throw n.error("input 1 ('slope', '" + n.input(1).name() + "') has shape " + shape_str(slope) +
                      ", which does not broadcast to X's shape " + shape_str(x),
                  "slope must broadcast unidirectionally to X, e.g. [C,1,1] for an NCHW input");
  }
  infer_same_as_input(n);
}

std::vector<Tensor> eval_prelu(const Node& n, const TensorRefs& in) {
  return {map_binary(
      n, *in[0], *in[1], [](double x, double s) { return x < 0 ? s * x : x; }, DType::undefined,
      [](int64_t x, int64_t s) { return x < 0 ? wrap_mul(s, x) : x; })};
}

void infer_prelu_legacy(Node& n) {
  legacy_slope_shape(n, n.input(0).shape(), n.input(1).shape());
  infer_same_as_input(n);
}

std::vector<Tensor> eval_prelu_legacy(const Node& n, const TensorRefs& in) {
  const Tensor slope = in[1]->reshaped(legacy_slope_shape(n, in[0]->shape(), in[1]->shape()));
  return eval_prelu(n, {in[0], &slope});
}

// ---- Clip ------------------------------------------------------------------

// y = min(max(x, lo), hi): when lo > hi every element becomes hi, as the spec
// says. A bound that is not given does not clip: ONNX's reference leaves the
// side unclipped (so +-inf inputs stay infinite), where the spec's wording
// ("defaults to numeric_limits lowest/max") would clamp infinities to the
// largest finite float.
Tensor clip(const Tensor& x, const Tensor* lo, const Tensor* hi) {
  if (!is_float(x.dtype())) {
    const int64_t l = lo ? lo->i64_at(0) : std::numeric_limits<int64_t>::min();
    const int64_t h = hi ? hi->i64_at(0) : std::numeric_limits<int64_t>::max();
    return map_unary_exact(x, nullptr, [l, h](int64_t v) {
      v = v < l ? l : v;
      return v > h ? h : v;
    });
  }
  const double l = lo ? lo->f64_at(0) : -std::numeric_limits<double>::infinity();
  const double h = hi ? hi->f64_at(0) : std::numeric_limits<double>::infinity();
  return map_unary(x, [l, h](double v) {  // NaN stays NaN: both comparisons are false
    v = v < l ? l : v;
    return v > h ? h : v;
  });
}

// Clip 11 takes min and max as optional scalar inputs of X's type.
void validate_clip11(const Node& n) {
  require_types(n, 0, {{11, kFloat16_32 | kFloat64}, {12, kFloat16_32 | kFloat64 | kInts}, {13, kNumeric}});
  const char* names[] = {"input", "min", "max"};
  for (int i = 1; i <= 2; ++i) {
    if (!n.has_input(i)) continue;
    require_same_type(n, 0, i);
    const Shape& s = n.input(i).shape();
    // The spec asks for a scalar; a one-element 1-D tensor is accepted too (as ONNX Runtime does).
    if (!(s.empty() || (s.size() == 1 && s[0] == 1))) {
      throw n.error("input " + std::to_string(i) + " ('" + names[i] + "', '" + n.input(i).name() +
                    "') must be a scalar, it has shape " + shape_str(s));
    }
  }
}

}  // namespace

// PRelu 1 and 6 do not broadcast the numpy way: a slope of one element is
// shared by every channel, otherwise it holds one value per channel (X's
// axis 1), as the test data exported at opset 6 shows (slope [C] on X
// [N,C,...]). Returns slope's shape in numpy form ([C,1,...,1], or a scalar).
Shape legacy_slope_shape(const Node& n, const Shape& x, const Shape& slope) {
  if (num_elements(slope) == 1) return {};
  if (x.size() >= 2 && slope.size() == 1 && slope[0] == x[1]) {
    Shape r(x.size() - 1, 1);
    r[0] = slope[0];
    return r;
  }
  throw n.error("input 1 ('slope', '" + n.input(1).name() + "') has shape " + shape_str(slope) + "; PRelu at opset " +
                    std::to_string(n.opset()) + " takes a slope of one element or one value per channel ([C] for X " +
                    shape_str(x) + ", C = X's dim 1)",
                "re-export the model at opset 7 or newer for numpy-style slope broadcasting");
}

ActivationAttrs activation_attrs(const Node& n) {
  ActivationAttrs a;
  const std::string& op = n.op();
  if (op == "LeakyRelu") {
    a.alpha = float_attr(n, "alpha", kLeakyReluAlpha);
  } else if (op == "Elu") {
    a.alpha = float_attr(n, "alpha", kEluAlpha);
  } else if (op == "Selu") {
    a.alpha = float_attr(n, "alpha", kSeluAlpha);
    a.gamma = float_attr(n, "gamma", kSeluGamma);
  } else if (op == "HardSigmoid") {
    a.alpha = float_attr(n, "alpha", kHardSigmoidAlpha);
    a.beta = float_attr(n, "beta", kHardSigmoidBeta);
  } else {
    throw n.error("internal: " + op + " has no activation attributes");
  }
  return a;
}

std::array<ClipBound, 2> clip_bounds(const Node& n) {
  std::array<ClipBound, 2> b;
  if (n.opset() < 11) {
    const char* names[] = {"min", "max"};
    for (int i = 0; i < 2; ++i) {
      if (!n.has_attr(names[i])) continue;
      b[i].given = true;
      b[i].value = Tensor::from_f64(DType::float32, {}, {float_attr(n, names[i], 0)});
    }
    return b;
  }
  for (int i = 0; i < 2; ++i) {
    if (!n.has_input(i + 1)) continue;
    const Value& v = n.input(i + 1);
    b[i].given = true;
    b[i].input = i + 1;
    if (v.is_constant()) b[i].value = v.constant();
  }
  return b;
}

MODELC_REGISTER_OP(Relu)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs({{6, kFloat16_32 | kFloat64},
                                {13, kFloats | kFloat64},
                                {14, kFloats | kFloat64 | kSignedInts}}))
    .infer(infer_same_as_input)
    .eval(eval_unary_exact([](double x) { return x > 0 ? x : 0.0; },
                           [](int64_t x) { return x > 0 ? x : int64_t{0}; }))
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(1))
    .doc("max(x, 0)");

MODELC_REGISTER_OP(LeakyRelu)
    .since(6)
    .attrs({"alpha"})
    .inputs(1, 1)
    .validate(same_type_inputs({{6, kFloat16_32 | kFloat64}, {16, kFloats | kFloat64}}))
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const double alpha = activation_attrs(n).alpha;
      return std::vector<Tensor>{map_unary(*in[0], [alpha](double x) { return x < 0 ? alpha * x : x; })};
    })
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(2))
    .doc("x < 0 ? alpha * x : x (alpha = 0.01)");

// PRelu 1 (with the no-effect 'consumed_inputs' hint) and 6: slope shared or
// per channel. No layout fact: the channel alignment is implicit in the form.
MODELC_REGISTER_OP(PRelu)
    .since(1)
    .attrs({"consumed_inputs"})
    .inputs(2, 2)
    .validate([](const Node& n) {
      same_type_inputs(kFloatTypes)(n);
      if (n.has_attr("consumed_inputs")) n.attr_ints("consumed_inputs");  // kind check
    })
    .infer(infer_prelu_legacy)
    .eval(eval_prelu_legacy)
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(2))
    .doc("x < 0 ? slope * x : x, slope of one element or one per channel (X's dim 1)");

MODELC_REGISTER_OP(PRelu)
    .since(6)
    .inputs(2, 2)
    .validate(same_type_inputs(kFloatTypes))
    .infer(infer_prelu_legacy)
    .eval(eval_prelu_legacy)
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(2))
    .doc("x < 0 ? slope * x : x, slope of one element or one per channel (X's dim 1)");

MODELC_REGISTER_OP(PRelu)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs({{7, kFloat16_32 | kFloat64},
                                {9, kFloat16_32 | kFloat64 | kInt32_64 | kUint32_64},
                                {16, kFloats | kFloat64 | kInt32_64 | kUint32_64}}))
    .infer(infer_prelu)
    .eval(eval_prelu)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(2))
    .doc("x < 0 ? slope * x : x, slope broadcast to X");

MODELC_REGISTER_OP(Elu)
    .since(6)
    .attrs({"alpha"})
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypes))
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const double alpha = activation_attrs(n).alpha;
      return std::vector<Tensor>{
          map_unary(*in[0], [alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; })};
    })
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(3))
    .doc("x < 0 ? alpha * (e^x - 1) : x (alpha = 1)");

MODELC_REGISTER_OP(Selu)
    .since(6)
    .attrs({"alpha", "gamma"})
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypes))
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const ActivationAttrs a = activation_attrs(n);
      const double alpha = a.alpha, gamma = a.gamma;
      return std::vector<Tensor>{map_unary(
          *in[0], [alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * (alpha * std::exp(x) - alpha); })};
    })
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("gamma * (x > 0 ? x : alpha * e^x - alpha)");

MODELC_REGISTER_OP(Sigmoid)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypesBf16At13))
    .infer(infer_same_as_input)
    .eval(eval_unary(sigmoid))
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("1 / (1 + e^-x)");

MODELC_REGISTER_OP(HardSigmoid)
    .since(6)
    .attrs({"alpha", "beta"})
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypes))
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const ActivationAttrs a = activation_attrs(n);
      const double alpha = a.alpha, beta = a.beta;
      return std::vector<Tensor>{map_unary(*in[0], [alpha, beta](double x) {
        return std::max(0.0, std::min(1.0, alpha * x + beta));
      })};
    })
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(4))
    .doc("max(0, min(1, alpha * x + beta)) (alpha = 0.2, beta = 0.5)");

MODELC_REGISTER_OP(HardSwish)
    .since(14)
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); }))
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(5))
    .doc("x * max(0, min(1, x / 6 + 0.5))");

MODELC_REGISTER_OP(Tanh)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypesBf16At13))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::tanh(x); }))
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(1))
    .doc("tanh(x)");

MODELC_REGISTER_OP(Softplus)
    .since(1)
    .inputs(1, 1)
    .validate(same_type_inputs(kFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary(softplus))
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(3))
    .doc("ln(e^x + 1)");

// Clip 6: bounds are float attributes.
MODELC_REGISTER_OP(Clip)
    .since(6)
    .attrs({"min", "max"})
    .inputs(1, 1)
    .validate([](const Node& n) {
      same_type_inputs({{6, kFloat16_32}})(n);
      n.attr_float("min", 0);  // kind checks
      n.attr_float("max", 0);
    })
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const std::array<ClipBound, 2> b = clip_bounds(n);
      return std::vector<Tensor>{clip(*in[0], bound_tensor(b[0]), bound_tensor(b[1]))};
    })
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(2))
    .doc("min(max(x, min), max), bounds as attributes");

// Clip 11: bounds are optional scalar inputs (integer types from 12).
MODELC_REGISTER_OP(Clip)
    .since(11)
    .inputs(1, 3)
    .validate(validate_clip11)
    .infer(infer_same_as_input)
    .eval([](const Node&, const TensorRefs& in) {
      return std::vector<Tensor>{clip(*in[0], in.size() > 1 ? in[1] : nullptr, in.size() > 2 ? in[2] : nullptr)};
    })
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(2))
    .doc("min(max(x, min), max), bounds as optional scalar inputs");

}  // namespace modelc::ops

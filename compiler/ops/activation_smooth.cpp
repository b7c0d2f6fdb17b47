// compiler/ops/activation_smooth.cpp — the smooth activations Softsign, Mish, Celu and Gelu.
//
// Each is an epilogue activation (Fusion::epilogue_activation; ops/fused.h Activation softsign,
// mish, celu, gelu and gelu_tanh): after a convolution or a matrix product it runs in the
// producer's epilogue, after an Add/Sub/Mul/Div or a BatchNormalization in its elementwise kernel
// (passes/fuse_elementwise), and alone as one elementwise kernel. FP16: fp16 for Softsign (a
// division on FP32 values of FP16 storage), fp32_compute for the transcendental ones.
//
// Gelu (opset 20) has two forms: 'approximate' = "none", 0.5 x (1 + erf(x / sqrt 2)), and "tanh",
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), the same functions as the fused epilogues'
// gelu and gelu_tanh that passes/activation_patterns matches in exporters' decompositions.
#include "ops/activation_smooth.h"

#include <cmath>

#include "ops/common.h"
#include "ops/elementwise_rules.h"

namespace modelc::ops {

double celu_alpha(const Node& n) {
  const double alpha = static_cast<double>(static_cast<float>(n.attr_float("alpha", kCeluAlpha)));
  if (alpha == 0) throw n.error("attribute 'alpha' is 0; Celu divides by it");
  return alpha;
}

bool gelu_approximates_tanh(const Node& n) {
  const std::string a = n.attr_string("approximate", "none");
  if (a != "none" && a != "tanh") throw n.error("attribute 'approximate' is '" + a + "'; it must be 'none' or 'tanh'");
  return a == "tanh";
}

double softsign(double x) { return x / (1.0 + std::fabs(x)); }

double mish(double x) {
  const double sp = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));  // ln(1 + e^x) without overflow
  return x * std::tanh(sp);
}

double celu(double x, double alpha) { return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)); }

namespace {

double gelu(double x, bool tanh_form) {
  if (!tanh_form) return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  const double k = 0.79788456080286535588;  // sqrt(2 / pi)
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace

MODELC_REGISTER_OP(Softsign)
    .since(1)
    .inputs(1, 1)
    .validate(same_type_inputs({{1, kFloat16_32}}))
    .infer(infer_same_as_input)
    .eval(eval_unary(softsign))
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(3))
    .doc("x / (1 + |x|)");

MODELC_REGISTER_OP(Mish)
    .since(18)
    .inputs(1, 1)
    .validate(same_type_inputs({{18, kFloat16_32}}))
    .infer(infer_same_as_input)
    .eval(eval_unary(mish))
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(5))
    .doc("x * tanh(ln(1 + e^x))");

MODELC_REGISTER_OP(Celu)
    .since(12)
    .attrs({"alpha"})
    .inputs(1, 1)
    .validate([](const Node& n) {
      same_type_inputs({{12, dtype_bit(DType::float32)}})(n);
      celu_alpha(n);
    })
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const double alpha = celu_alpha(n);
      return std::vector<Tensor>{map_unary(*in[0], [alpha](double x) { return celu(x, alpha); })};
    })
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(5))
    .doc("max(0, x) + min(0, alpha * (e^(x / alpha) - 1)) (alpha = 1)");

MODELC_REGISTER_OP(Gelu)
    .since(20)
    .attrs({"approximate"})
    .inputs(1, 1)
    .validate([](const Node& n) {
      same_type_inputs({{20, kFloats}})(n);
      gelu_approximates_tanh(n);
    })
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      const bool t = gelu_approximates_tanh(n);
      return std::vector<Tensor>{map_unary(*in[0], [t](double x) { return gelu(x, t); })};
    })
    .precision(Precision::fp32_compute)
    .fusion(Fusion::epilogue_activation)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("activation")
    .flops(flops_per_output(8))
    .doc("0.5 x (1 + erf(x / sqrt 2)); approximate = 'tanh': 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))");

}  // namespace modelc::ops

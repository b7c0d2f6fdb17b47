// compiler/ops/fused.cpp — FusedConv, FusedGemm, FusedMatMul: a producer and
// its epilogue, in the internal "modelc" domain (see fused.h for the inputs
// and attributes).
//
// Every rule of the producer is reused through the registry on a stand-alone
// copy of the producer node (its op, opset, attributes and input types):
// attribute checks, shape rule, FLOPs and the reference evaluation. The
// epilogue is then computed in double and rounded once to Y's type. When the
// fused node stores float16, the producer is evaluated in float32 (its float16
// inputs widened exactly): a tensor-core kernel accumulates in FP32 and rounds
// only at its output, so an FP16 intermediate would be a worse model of it.
#include "ops/fused.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "ops/activation.h"
#include "ops/activation_smooth.h"
#include "ops/common.h"

namespace modelc::ops {

namespace {

/// What a fused op takes beside its producer's inputs.
enum class Epilogue {
  bias_residual,         ///< Conv, Gemm: input 2 is the producer's own bias / C; a residual at input 3
  column_bias_residual,  ///< MatMul: alpha, a bias of N values at input 2, a residual at input 3
  activation_only,       ///< the elementwise ops: their own inputs, then the activation
};

struct FusedForm {
  const char* fused;
  const char* producer;
  int producer_inputs;  ///< inputs the producer itself reads (Conv: X, W, B; Gemm: A, B, C; MatMul: A, B)
  Epilogue epilogue;
};

constexpr FusedForm kForms[] = {
    {"FusedConv", "Conv", 3, Epilogue::bias_residual},
    {"FusedGemm", "Gemm", 3, Epilogue::bias_residual},
    {"FusedMatMul", "MatMul", 2, Epilogue::column_bias_residual},
    {"FusedBatchNormalization", "BatchNormalization", 5, Epilogue::activation_only},
    {"FusedAdd", "Add", 2, Epilogue::activation_only},
    {"FusedSub", "Sub", 2, Epilogue::activation_only},
    {"FusedMul", "Mul", 2, Epilogue::activation_only},
    {"FusedDiv", "Div", 2, Epilogue::activation_only},
};

const FusedForm* form_of_fused(const std::string& op) {
  for (const FusedForm& f : kForms) {
    if (op == f.fused) return &f;
  }
  return nullptr;
}

const char* const kEpilogueAttrs[] = {"activation",     "activation_alpha", "activation_beta",
                                      "activation_min", "activation_max",   "residual_position"};

bool is_epilogue_attr(const std::string& name) {
  for (const char* a : kEpilogueAttrs) {
    if (name == a) return true;
  }
  return false;
}

const FusedForm& form(const Node& n) {
  const FusedForm* f = form_of_fused(n.op());
  if (!f) throw n.error("internal: " + n.op() + " is not a fused op");
  return *f;
}

const OpDef& producer_def(const Node& n) {
  const FusedForm& f = form(n);
  const OpDef* d = OpRegistry::instance().find(f.producer, n.opset());
  if (!d) throw n.error(std::string("no form of ") + f.producer + " at opset " + std::to_string(n.opset()));
  return *d;
}

/// A stand-alone copy of the producer a fused node wraps: its op and opset,
/// the non-epilogue attributes, and inputs typed like the fused node's (float16
/// widened to float32 when `widen`). The values belong to this struct only, so
/// the graph is never touched.
struct ProducerCopy {
  std::vector<std::unique_ptr<Value>> values;
  std::unique_ptr<Node> node;
};

ProducerCopy producer_copy(const Node& n, bool widen) {
  const FusedForm& f = form(n);
  ProducerCopy p;
  p.node = std::make_unique<Node>(f.producer, n.name(), n.opset());
  for (const auto& [name, a] : n.attrs()) {
    // FusedMatMul's alpha is its own (MatMul has none); Gemm's is the producer's.
    if (!is_epilogue_attr(name) && !(name == "alpha" && f.epilogue == Epilogue::column_bias_residual)) {
      p.node->set_attr(name, a);
    }
  }
  int count = std::min(f.producer_inputs, n.num_inputs());
  while (count > 0 && !n.has_input(count - 1)) --count;  // no trailing omitted inputs
  for (int i = 0; i < count; ++i) {
    if (!n.has_input(i)) {
      p.node->add_input(nullptr);
      continue;
    }
    const Value& src = n.input(i);
    auto v = std::make_unique<Value>(src.name());
    const bool to_f32 = widen && src.dtype() == DType::float16;
    if (src.is_constant() && !to_f32) {
      v->set_constant(src.constant());
    } else {
      v->set_type(to_f32 ? DType::float32 : src.dtype(), src.shape());
    }
    p.node->add_input(v.get());
    p.values.push_back(std::move(v));
  }
  auto out = std::make_unique<Value>(n.has_output(0) ? n.output(0).name() : n.name());
  // The fused node's result type (a FLOPs rule per output element reads it; infer rewrites it).
  if (n.has_output(0)) out->set_type(n.output(0).dtype(), n.output(0).shape());
  p.node->add_output(out.get());
  p.values.push_back(std::move(out));
  return p;
}

double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

enum class ResidualPosition { none, before_activation, after_activation };

ResidualPosition residual_position(const Node& n) {
  if (form(n).epilogue == Epilogue::activation_only) {
    if (n.has_attr("residual_position")) throw n.error("attribute 'residual_position': " + n.op() + " takes no residual");
    return ResidualPosition::none;
  }
  const bool has_r = n.has_input(kFusedResidualInput);
  if (!n.has_attr("residual_position")) {
    if (has_r) {
      throw n.error("input 3 (the residual) is given without attribute 'residual_position'",
                    "set it to 'before_activation' or 'after_activation'");
    }
    return ResidualPosition::none;
  }
  const std::string s = n.attr_string("residual_position", "");
  ResidualPosition p;
  if (s == "before_activation") {
    p = ResidualPosition::before_activation;
  } else if (s == "after_activation") {
    p = ResidualPosition::after_activation;
  } else {
    throw n.error("attribute 'residual_position' is '" + s + "', expected 'before_activation' or 'after_activation'");
  }
  if (!has_r) throw n.error("attribute 'residual_position' is set but input 3 (the residual) is absent");
  return p;
}

void validate_fused(const Node& n) {
  activation_of_fused(n);
  residual_position(n);
  const OpDef& pd = producer_def(n);
  ProducerCopy p = producer_copy(n, false);
  validate_node(*p.node, pd);
}

void infer_fused(Node& n) {
  const OpDef& pd = producer_def(n);
  ProducerCopy p = producer_copy(n, false);
  pd.infer(*p.node);
  const Value& y = p.node->output(0);
  if (!is_narrow_float(y.dtype())) {
    throw n.error("the result is " + std::string(dtype_name(y.dtype())) +
                  "; fused epilogues take float32, float16 and bfloat16 only (they compute in FP32)");
  }
  const Epilogue epilogue = form(n).epilogue;
  if (epilogue == Epilogue::column_bias_residual && n.has_input(kFusedBiasInput)) {
    const Value& b = n.input(kFusedBiasInput);
    const Shape want{y.shape().empty() ? int64_t{1} : y.shape().back()};
    if (b.dtype() != y.dtype() || b.shape() != want || y.shape().empty()) {
      throw n.error("input 2 (the bias, '" + b.name() + "') is " + b.type_str() + ", expected " +
                    dtype_name(y.dtype()) + "[" + shape_str(want) + "] (one value per column of the result " +
                    y.type_str() + ")");
    }
  }
  if (epilogue != Epilogue::activation_only && n.has_input(kFusedResidualInput)) {
    const Value& r = n.input(kFusedResidualInput);
    if (r.dtype() != y.dtype() || r.shape() != y.shape()) {
      throw n.error("input 3 (the residual, '" + r.name() + "') is " + r.type_str() + ", the result is " +
                    y.type_str() + ": they must be the same");
    }
  }
  n.output(0).set_type(y.dtype(), y.shape());
}

std::vector<Tensor> eval_fused(const Node& n, const TensorRefs& in) {
  const OpDef& pd = producer_def(n);
  const FusedForm& f = form(n);
  const bool widen = n.output(0).dtype() == DType::float16;
  ProducerCopy p = producer_copy(n, widen);
  std::vector<Tensor> widened;
  widened.reserve(static_cast<std::size_t>(f.producer_inputs));
  TensorRefs pin;
  for (int i = 0; i < p.node->num_inputs() && i < static_cast<int>(in.size()); ++i) {
    if (in[i] && widen && in[i]->dtype() == DType::float16) {
      widened.push_back(in[i]->cast(DType::float32));
      pin.push_back(&widened.back());
    } else {
      pin.push_back(in[i]);
    }
  }
  const Tensor y = pd.eval(*p.node, pin).at(0);
  std::vector<double> v = y.to_f64();
  const std::size_t count = v.size();
  const bool column_bias = f.epilogue == Epilogue::column_bias_residual;
  if (column_bias) {  // FusedMatMul's alpha
    const double alpha = n.attr_float("alpha", 1.0);
    for (double& x : v) x *= alpha;
  }
  if (column_bias && in.size() > kFusedBiasInput && in[kFusedBiasInput]) {
    const std::vector<double> b = in[kFusedBiasInput]->to_f64();
    for (std::size_t i = 0; i < count; ++i) v[i] += b[i % b.size()];
  }
  const ResidualPosition rp = residual_position(n);
  std::vector<double> r;
  if (rp != ResidualPosition::none) r = in.at(kFusedResidualInput)->to_f64();
  if (rp == ResidualPosition::before_activation) {
    for (std::size_t i = 0; i < count; ++i) v[i] += r[i];
  }
  const EpilogueActivation act = activation_of_fused(n);
  if (act.kind != Activation::none) {
    for (double& x : v) x = apply_activation(act, x);
  }
  if (rp == ResidualPosition::after_activation) {
    for (std::size_t i = 0; i < count; ++i) v[i] += r[i];
  }
  return {Tensor::from_f64(n.output(0).dtype(), y.shape(), v)};
}

// Elementwise operations of the epilogue per output element (the producer's
// own bias is counted by its FLOPs rule).
int64_t activation_flops(Activation a) {
  switch (a) {
    case Activation::none: return 0;
    case Activation::relu: return 1;
    case Activation::clip: return 2;
    case Activation::leaky_relu: return 2;
    case Activation::sigmoid: return 4;
    case Activation::tanh: return 1;
    case Activation::hard_sigmoid: return 4;
    case Activation::hard_swish: return 5;
    case Activation::silu: return 5;
    case Activation::gelu: return 8;
    case Activation::gelu_tanh: return 10;
    case Activation::softsign: return 3;
    case Activation::mish: return 5;
    case Activation::celu: return 5;
  }
  return 0;
}

int64_t flops_fused(const Node& n) {
  const OpDef& pd = producer_def(n);
  ProducerCopy p = producer_copy(n, false);
  int64_t flops = pd.flops ? pd.flops(*p.node) : 0;
  int64_t per_element = activation_flops(activation_of_fused(n).kind);
  const Epilogue epilogue = form(n).epilogue;
  if (epilogue == Epilogue::column_bias_residual && n.has_input(kFusedBiasInput)) ++per_element;
  if (epilogue != Epilogue::activation_only && n.has_input(kFusedResidualInput)) ++per_element;
  return flops + per_element * n.output(0).numel();
}

std::vector<std::string> fused_attrs(std::vector<std::string> producer_attrs) {
  for (const char* a : kEpilogueAttrs) producer_attrs.push_back(a);
  return producer_attrs;
}

}  // namespace

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::clip: return "clip";
    case Activation::leaky_relu: return "leaky_relu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::tanh: return "tanh";
    case Activation::hard_sigmoid: return "hard_sigmoid";
    case Activation::hard_swish: return "hard_swish";
    case Activation::silu: return "silu";
    case Activation::gelu: return "gelu";
    case Activation::gelu_tanh: return "gelu_tanh";
    case Activation::softsign: return "softsign";
    case Activation::mish: return "mish";
    case Activation::celu: return "celu";
  }
  return "?";
}

std::optional<Activation> parse_activation(const std::string& name) {
  for (Activation a : {Activation::none, Activation::relu, Activation::clip, Activation::leaky_relu,
                       Activation::sigmoid, Activation::tanh, Activation::hard_sigmoid, Activation::hard_swish,
                       Activation::silu, Activation::gelu, Activation::gelu_tanh, Activation::softsign,
                       Activation::mish, Activation::celu}) {
    if (name == activation_name(a)) return a;
  }
  return std::nullopt;
}

double apply_activation(const EpilogueActivation& a, double x) {
  switch (a.kind) {
    case Activation::none: return x;
    case Activation::relu: return x > 0 ? x : 0.0;
    case Activation::clip:
      if (a.min && x < *a.min) x = *a.min;  // NaN stays NaN: the comparisons are false
      if (a.max && x > *a.max) x = *a.max;
      return x;
    case Activation::leaky_relu: return x < 0 ? a.alpha * x : x;
    case Activation::sigmoid: return sigmoid(x);
    case Activation::tanh: return std::tanh(x);
    case Activation::hard_sigmoid: return std::max(0.0, std::min(1.0, a.alpha * x + a.beta));
    case Activation::hard_swish: return x * std::max(0.0, std::min(1.0, a.alpha * x + a.beta));
    case Activation::silu: return x * sigmoid(x);
    case Activation::gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::gelu_tanh: {
      const double k = 0.79788456080286535588;  // sqrt(2 / pi)
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case Activation::softsign: return softsign(x);
    case Activation::mish: return mish(x);
    case Activation::celu: return celu(x, a.alpha);
  }
  return x;
}

std::optional<EpilogueActivation> epilogue_activation_of(const Node& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
  const OpDef* def = OpRegistry::instance().find(n.op(), n.opset());
  if (!def || def->fusion != Fusion::epilogue_activation) return std::nullopt;
  if (!n.has_input(0) || !is_narrow_float(n.input(0).dtype())) return std::nullopt;  // epilogues compute in FP32
  EpilogueActivation a;
  const std::string& op = n.op();
  if (op == "Relu") {
    a.kind = Activation::relu;
  } else if (op == "LeakyRelu") {
    a.kind = Activation::leaky_relu;
    a.alpha = activation_attrs(n).alpha;
  } else if (op == "Sigmoid") {
    a.kind = Activation::sigmoid;
  } else if (op == "Tanh") {
    a.kind = Activation::tanh;
  } else if (op == "HardSigmoid") {
    a.kind = Activation::hard_sigmoid;
    const ActivationAttrs attrs = activation_attrs(n);
    a.alpha = attrs.alpha;
    a.beta = attrs.beta;
  } else if (op == "HardSwish") {
    a.kind = Activation::hard_swish;
    a.alpha = kHardSwishAlpha;
    a.beta = kHardSwishBeta;
  } else if (op == "Clip") {
    a.kind = Activation::clip;
    const std::array<ClipBound, 2> bounds = clip_bounds(n);
    for (int i = 0; i < 2; ++i) {
      const ClipBound& b = bounds[i];
      if (!b.given) continue;
      if (!b.value || b.value->numel() != 1) return std::nullopt;
      (i == 0 ? a.min : a.max) = b.value->f64_at(0);
    }
  } else if (op == "Softsign") {
    a.kind = Activation::softsign;
  } else if (op == "Mish") {
    a.kind = Activation::mish;
  } else if (op == "Celu") {
    a.kind = Activation::celu;
    a.alpha = celu_alpha(n);
  } else if (op == "Gelu") {
    a.kind = gelu_approximates_tanh(n) ? Activation::gelu_tanh : Activation::gelu;
  } else {
    return std::nullopt;  // an activation without an epilogue form (Elu, Selu, Softplus)
  }
  return a;
}

void set_activation(Node& fused, const EpilogueActivation& a) {
  for (const char* k : {"activation_alpha", "activation_beta", "activation_min", "activation_max"}) {
    fused.remove_attr(k);
  }
  fused.set_attr_string("activation", activation_name(a.kind));
  switch (a.kind) {
    case Activation::leaky_relu:
    case Activation::celu: fused.set_attr_float("activation_alpha", a.alpha); break;
    case Activation::hard_sigmoid:
    case Activation::hard_swish:
      fused.set_attr_float("activation_alpha", a.alpha);
      fused.set_attr_float("activation_beta", a.beta);
      break;
    case Activation::clip:
      if (a.min) fused.set_attr_float("activation_min", *a.min);
      if (a.max) fused.set_attr_float("activation_max", *a.max);
      break;
    default: break;
  }
}

EpilogueActivation activation_of_fused(const Node& n) {
  EpilogueActivation a;
  const std::string name = n.attr_string("activation", "none");
  const std::optional<Activation> kind = parse_activation(name);
  if (!kind) {
    throw n.error("attribute 'activation' is '" + name +
                  "', expected none, relu, clip, leaky_relu, sigmoid, tanh, hard_sigmoid, hard_swish, silu, gelu, "
                  "gelu_tanh, softsign, mish or celu");
  }
  a.kind = *kind;
  const bool uses_alpha = a.kind == Activation::leaky_relu || a.kind == Activation::hard_sigmoid ||
                          a.kind == Activation::hard_swish || a.kind == Activation::celu;
  const bool uses_beta = a.kind == Activation::hard_sigmoid || a.kind == Activation::hard_swish;
  const bool uses_bounds = a.kind == Activation::clip;
  auto refuse = [&](const char* attr) {
    if (n.has_attr(attr)) {
      throw n.error(std::string("attribute '") + attr + "' does not apply to activation '" + name + "'");
    }
  };
  if (!uses_alpha) refuse("activation_alpha");
  if (!uses_beta) refuse("activation_beta");
  if (!uses_bounds) {
    refuse("activation_min");
    refuse("activation_max");
  }
  // The defaults of the ONNX op each activation stands for; the kinds without an alpha or a beta
  // carry HardSigmoid's (unused).
  const double def_alpha = a.kind == Activation::leaky_relu   ? kLeakyReluAlpha
                           : a.kind == Activation::hard_swish ? kHardSwishAlpha
                           : a.kind == Activation::celu       ? kCeluAlpha
                                                              : kHardSigmoidAlpha;
  a.alpha = n.attr_float("activation_alpha", def_alpha);
  a.beta = n.attr_float("activation_beta", a.kind == Activation::hard_swish ? kHardSwishBeta : kHardSigmoidBeta);
  if (n.has_attr("activation_min")) a.min = n.attr_float("activation_min", 0);
  if (n.has_attr("activation_max")) a.max = n.attr_float("activation_max", 0);
  return a;
}

std::string fused_op_for(const std::string& producer_op) {
  // The INT8 products carry their epilogue themselves (ops/quantize.h): fusing keeps the op.
  if (producer_op == "QConv" || producer_op == "QMatMul") return producer_op;
  for (const FusedForm& f : kForms) {
    if (producer_op == f.producer) return f.fused;
  }
  return {};
}

bool activation_only_fused(const std::string& fused_op) {
  const FusedForm* f = form_of_fused(fused_op);
  return f && f->epilogue == Epilogue::activation_only;
}

std::string producer_of_fused(const std::string& fused_op) {
  const FusedForm* f = form_of_fused(fused_op);
  return f ? f->producer : "";
}

MODELC_REGISTER_OP(FusedConv)
    .domain(kModelcDomain)
    .since(1)
    .attrs(fused_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}))
    .inputs(2, 4)
    .validate(validate_fused)
    .infer(infer_fused)
    .eval(eval_fused)
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .layout(Layout::channels, LayoutRoles{/*weight*/ 1, /*residual*/ kFusedResidualInput})
    .kernel("conv_depthwise")
    .kernel("conv")
    .family("conv")
    .flops(flops_fused)
    .doc("Conv with an epilogue: bias, activation, residual add (made by passes/fuse_epilogue)");

MODELC_REGISTER_OP(FusedGemm)
    .domain(kModelcDomain)
    .since(1)
    .attrs(fused_attrs({"alpha", "beta", "broadcast", "transA", "transB"}))
    .inputs(2, 4)
    .validate(validate_fused)
    .infer(infer_fused)
    .eval(eval_fused)
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .kernel("gemm")
    .family("gemm")
    .flops(flops_fused)
    .doc("Gemm with an epilogue: activation, residual add (made by passes/fuse_epilogue)");

MODELC_REGISTER_OP(FusedMatMul)
    .domain(kModelcDomain)
    .since(1)
    .attrs(fused_attrs({"alpha"}))
    .inputs(2, 4)
    .validate(validate_fused)
    .infer(infer_fused)
    .eval(eval_fused)
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .kernel("gemm")
    .family("gemm")
    .flops(flops_fused)
    .doc("MatMul with an epilogue: bias over the last dim, activation, residual add (made by passes/fuse_epilogue)");

// The elementwise forms (made by passes/fuse_elementwise): the op's own inputs and its activation,
// run by the elementwise template family as one kernel (templates/elementwise.cuh Activated).
MODELC_REGISTER_OP(FusedBatchNormalization)
    .domain(kModelcDomain)
    .since(1)
    .attrs(fused_attrs({"epsilon", "is_test", "momentum", "spatial", "training_mode"}))
    .inputs(5, 5)
    .validate(validate_fused)
    .infer(infer_fused)
    .eval(eval_fused)
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("elementwise")
    .family("normalization")
    .flops(flops_fused)
    .doc("inference BatchNormalization with an activation (a pre-activation BN + ReLU; made by passes/fuse_elementwise)");

#define MODELC_FUSED_BINARY(OP, WHAT)                                                      \
  MODELC_REGISTER_OP(Fused##OP)                                                            \
      .domain(kModelcDomain)                                                               \
      .since(1)                                                                            \
      .attrs(fused_attrs({}))                                                              \
      .inputs(2, 2)                                                                        \
      .validate(validate_fused)                                                            \
      .infer(infer_fused)                                                                  \
      .eval(eval_fused)                                                                    \
      .precision(Precision::fp16)                                                          \
      .layout(Layout::agnostic)                                                            \
      .kernel("elementwise")                                                               \
      .family("elementwise")                                                               \
      .flops(flops_fused)                                                                  \
      .doc(WHAT " (numpy broadcasting) with an activation (made by passes/fuse_elementwise)")

MODELC_FUSED_BINARY(Add, "A + B");
MODELC_FUSED_BINARY(Sub, "A - B");
MODELC_FUSED_BINARY(Mul, "A * B");
MODELC_FUSED_BINARY(Div, "A / B");

#undef MODELC_FUSED_BINARY

}  // namespace modelc::ops

// codegen/families/elementwise.cpp — the "elementwise" template family (templates/elementwise.cuh):
// unary math and activations (with templates/elementwise_math.cuh's trigonometry, Round, Sign,
// IsNaN, IsInf, Mod and smooth activations), binary arithmetic, comparisons and logic, the
// variadic Min/Max/Sum/Mean, Where, Cast/CastLike, Clip, PRelu, inference BatchNormalization,
// Identity (the copy the lowering asks for where a graph output needs its own buffer), and the
// fused elementwise ops (FusedBatchNormalization, FusedAdd, FusedSub, FusedMul, FusedDiv: the op,
// then its activation).
//
// Every op is one mc::ew::Elementwise launch over the output's shape: each input is an operand
// with numpy-broadcast strides (BatchNormalization's parameters align with the channel dim
// instead), the dims are collapsed, and the op is a functor whose members hold its attributes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/families/elementwise_util.h"
#include "ops/activation.h"
#include "ops/fused.h"
#include "schedule/elementwise.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

/// What one elementwise kernel computes.
struct OpSpec {
  std::string op;               ///< the Op type, e.g. "mc::ew::Clip<float, true, false>"
  std::string args;             ///< its members, e.g. "0.0f, 6.0f" (the op's attributes)
  std::vector<int> inputs;      ///< the node inputs that are operands, in the Op's argument order
  bool raw = false;             ///< values are copied as raw bits (Identity, Where, same-type Cast)
  bool condition = false;       ///< Where: operand 0 is the bool condition (not raw bits)
  bool channel_params = false;  ///< BatchNormalization: operands 1.. align with dims 1.. of X
  /// A fused elementwise op's activation (mc::ew::Activated<op, act>); none for the plain ops.
  ops::EpilogueActivation act;
};

std::string ew(const std::string& op) { return "mc::ew::" + op; }
std::string flags(bool lo, bool hi) { return std::string(lo ? "true" : "false") + ", " + (hi ? "true" : "false"); }

// "mc::ew::Clip<float, true, false>" -> "Clip"
std::string op_name(const std::string& type) {
  const std::string s = type.substr(type.rfind("::", type.find('<')) + 2);
  return s.substr(0, s.find('<'));
}

std::vector<int> present_inputs(const Kernel& k) {
  std::vector<int> r;
  for (int i = 0; i < static_cast<int>(k.inputs.size()); ++i) {
    if (k.inputs[i].dtype != DType::undefined) r.push_back(i);
  }
  return r;
}

// Clip: the bounds of the plan (ops::clip_bounds: attributes before opset 11, optional inputs from
// 11). When every given bound is known at compile time they are members of the Op, else the given
// bounds are operands.
OpSpec clip_spec(const Kernel& k, const std::array<ops::ClipBound, 2>& b) {
  const DType t = k.inputs[0].dtype;
  const bool lo = b[0].given, hi = b[1].given;
  if ((lo && !b[0].value) || (hi && !b[1].value)) {
    std::vector<int> ins{0};
    for (const ops::ClipBound& c : b) {
      if (c.given) ins.push_back(c.input);
    }
    return {ew("ClipInputs<" + flags(lo, hi) + ">"), "", ins};
  }
  auto bound = [&](const ops::ClipBound& c) -> std::string {
    if (t == DType::float64) return double_literal(c.value ? c.value->f64_at(0) : 0.0);
    if (is_float(t)) return float_literal(c.value ? c.value->f64_at(0) : 0.0);
    return int_literal(c.value ? c.value->i64_at(0) : 0);
  };
  return {ew("Clip<" + compute_type(t) + ", " + flags(lo, hi) + ">"), bound(b[0]) + ", " + bound(b[1]), {0}};
}

// The spec of the op a kernel runs (its plan's: the node's op, or the elementwise op a fused node
// (FusedBatchNormalization, FusedAdd, ...) wraps, with the attributes the fused node carries; an
// Identity for a kernel without a node).
OpSpec plain_op_spec(const Kernel& k, const ElementwisePlan& p) {
  const std::string& op = p.op;
  static const char* const kPlain[] = {
      "Neg",  "Abs",     "Sqrt",      "Exp",     "Log",         "Reciprocal",     "Floor", "Ceil", "Erf", "Not",
      "Relu", "Sigmoid", "HardSwish", "Tanh",    "Softplus",    "PRelu",          "Add",   "Sub",  "Mul", "Div",
      "Pow",  "Equal",   "Less",      "Greater", "LessOrEqual", "GreaterOrEqual", "And",   "Or",   "Xor", "Max",
      "Min",  "Sum",     "Mean",
      // ops/math.cpp, ops/activation_smooth.cpp (templates/elementwise_math.cuh)
      "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Round", "Sign", "IsNaN",
      "Softsign", "Mish"};
  for (const char* p : kPlain) {
    if (op == p) return {ew(op), "", present_inputs(k)};
  }
  if (op == "Identity" || op == "Dropout") return {ew("Identity"), "", {0}, true};
  if (op == "LeakyRelu" || op == "Elu") return {ew(op), float_literal(p.activation.alpha), {0}};
  if (op == "Selu") return {ew(op), float_literal(p.activation.alpha) + ", " + float_literal(p.activation.gamma), {0}};
  if (op == "HardSigmoid") {
    return {ew(op), float_literal(p.activation.alpha) + ", " + float_literal(p.activation.beta), {0}};
  }
  if (op == "Clip") return clip_spec(k, p.clip);
  if (op == "IsInf") return {ew("IsInf<" + flags(p.isinf.negative, p.isinf.positive) + ">"), "", {0}};
  if (op == "Mod") return {ew(std::string("Mod<") + (p.fmod ? "true" : "false") + ">"), "", {0, 1}};
  if (op == "Celu") return {ew(op), float_literal(p.celu_alpha), {0}};
  if (op == "Gelu") return {ew(p.gelu_tanh ? "GeluTanh" : "Gelu"), "", {0}};
  if (op == "Where") return {ew(op), "", {0, 1, 2}, true, true};
  if (op == "Cast" || op == "CastLike") {
    // The conversion is the store's; the same type on both sides is a copy of the bits.
    return {ew("Identity"), "", {0}, k.inputs[0].dtype == k.outputs[0].dtype};
  }
  if (op == "BatchNormalization") {
    return {ew("BatchNorm"), float_literal(p.epsilon), {0, 1, 2, 3, 4}, false, false, true};
  }
  throw kernel_error(k, "the elementwise template family has no kernel for op " + op);
}

OpSpec op_spec(const Kernel& k, const ElementwisePlan& p) {
  OpSpec spec = plain_op_spec(k, p);
  spec.act = p.act;
  return spec;
}

// The legacy broadcast before opset 7 (Add/Sub/Mul/Div/Pow with 'broadcast' and 'axis', PRelu's
// shared or per-channel slope) is the numpy form once B's view has the plan's shape for it
// (ops::legacy_numpy_shape): its own dims, then dims of length 1 (stride 0).
void legacy_to_numpy(const Shape& s, TensorView& b) {
  b.strides.resize(s.size(), 0);
  b.shape = s;
}

// BatchNormalization's parameters ([C] or, with spatial=0, [C, D1, ...]) align with dims 1.. of X.
Strides channel_strides(const TensorView& v, const Shape& out) {
  Strides s(out.size(), 0);
  for (std::size_t i = 0; i < v.shape.size() && i + 1 < out.size(); ++i) {
    if (v.shape[i] != 1) s[i + 1] = v.strides[i];
  }
  return s;
}

KernelLaunches emit_elementwise(const Kernel& k, const EmitContext& ctx) {
  if (k.outputs.empty() || k.inputs.empty()) throw kernel_error(k, "elementwise kernel without input or output");
  const ElementwisePlan& p = plan_of<ElementwisePlan>(k);
  const OpSpec spec = op_spec(k, p);
  const TensorView& y = k.outputs[0];
  std::vector<TensorView> inputs = k.inputs;
  if (p.legacy_b_shape && inputs.size() == 2) legacy_to_numpy(*p.legacy_b_shape, inputs[1]);
  Shape shape = y.shape;

  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to compute");

  Strides y_strides = y.strides;
  std::vector<Strides> x_strides;
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    const TensorView& v = inputs.at(static_cast<std::size_t>(spec.inputs[i]));
    if (v.dtype == DType::undefined) throw kernel_error(k, "input " + std::to_string(spec.inputs[i]) + " is missing");
    x_strides.push_back(spec.channel_params && i > 0 ? channel_strides(v, shape) : broadcast_strides(v, shape));
  }
  std::vector<Strides*> all{&y_strides};
  for (Strides& s : x_strides) all.push_back(&s);
  collapse(shape, all);
  // What the launch computes, in the terms of its template arguments.
  const bool activated = spec.act.kind != ops::Activation::none;
  const std::string act_name = ops::activation_name(spec.act.kind);
  std::string comment;
  if (spec.op == "mc::ew::Identity" && !spec.raw) {
    comment = "y = x0 converted to " + std::string(dtype_name(y.dtype)) + " over ";
  } else {
    comment = "y = " + (activated ? act_name + "(" : "") + op_name(spec.op) + "(";
    for (std::size_t i = 0; i < spec.inputs.size(); ++i) comment += (i ? ", x" : "x") + std::to_string(i);
    comment += activated ? ")) over " : ") over ";
  }
  comment += (shape.empty() ? std::string("one element") : shape_str(shape));
  if (spec.raw) comment += ", values as raw bits";

  // Operand types: the element types, or raw bits for copies (Where's condition stays bool).
  auto type_of = [&](const TensorView& v, bool value) {
    return spec.raw && value ? bits_type(v.dtype) : elem_type(v.dtype);
  };
  const std::string op_type = activated ? "mc::ew::Activated<" + spec.op + ", mc::Act::" + act_name + ">" : spec.op;
  Launch l;
  l.comment = comment;
  l.type = "mc::ew::Elementwise<" + op_type + ", " + dims(shape) + ",\n      mc::ew::Operand<" + type_of(y, true) + ", " +
           dims(y_strides) + ">";
  l.params.push_back({"y", ctx.ptr(y, false)});
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    const TensorView& v = inputs[static_cast<std::size_t>(spec.inputs[i])];
    l.type += ",\n      mc::ew::Operand<" + type_of(v, !(spec.condition && i == 0)) + ", " + dims(x_strides[i]) + ">";
    l.params.push_back({"x[" + std::to_string(i) + "]", ctx.ptr(v, true)});
  }
  l.type += ">";
  // The Op's attributes (an Op without any is default-constructed); an Activated op's are its op's
  // and the activation's parameters.
  if (!spec.args.empty()) l.params.push_back({activated ? "op.op" : "op", spec.op + "{" + spec.args + "}"});
  if (activated) activation_params(spec.act, "op.act", &l.params);
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(elementwise_family)
(KernelFamily{"elementwise", {"tensor_index.cuh", "elementwise.cuh"}, emit_elementwise});

}  // namespace modelc::codegen

// codegen/families/elementwise.cpp — the "elementwise" template family (templates/elementwise.cuh):
// unary math and activations, binary arithmetic, comparisons and logic, the variadic Min/Max/Sum/
// Mean, Where, Cast/CastLike, Clip, PRelu, inference BatchNormalization, and Identity (the copy the
// lowering asks for where a graph output needs its own buffer).
//
// Every op is one mc::ew::Elementwise launch over the output's shape: each input is an operand
// with numpy-broadcast strides (BatchNormalization's parameters align with the channel dim
// instead), the dims are collapsed, and the op is a functor whose members hold its attributes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/families/elementwise_util.h"
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
};

double float_attr(const Node& n, const char* name, double def) {
  return static_cast<double>(static_cast<float>(n.attr_float(name, def)));
}

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

// Clip: bounds as attributes (opset 6) or as optional scalar inputs (11+). Constant bounds become
// members of the Op; bounds computed at run time are operands.
OpSpec clip_spec(const Kernel& k) {
  const Node& n = *k.node;
  const DType t = k.inputs[0].dtype;
  if (n.opset() < 11) {
    const bool lo = n.has_attr("min"), hi = n.has_attr("max");
    return {ew("Clip<float, " + flags(lo, hi) + ">"),
            float_literal(lo ? float_attr(n, "min", 0) : 0) + ", " + float_literal(hi ? float_attr(n, "max", 0) : 0),
            {0}};
  }
  const bool lo = n.has_input(1), hi = n.has_input(2);
  if ((lo && !n.input(1).is_constant()) || (hi && !n.input(2).is_constant())) {
    std::vector<int> ins{0};
    if (lo) ins.push_back(1);
    if (hi) ins.push_back(2);
    return {ew("ClipInputs<" + flags(lo, hi) + ">"), "", ins};
  }
  auto bound = [&](int i) -> std::string {
    const bool given = n.has_input(i);
    if (is_float(t)) return float_literal(given ? n.input(i).constant().f64_at(0) : 0.0);
    return int_literal(given ? n.input(i).constant().i64_at(0) : 0);
  };
  return {ew("Clip<" + compute_type(t) + ", " + flags(lo, hi) + ">"), bound(1) + ", " + bound(2), {0}};
}

OpSpec op_spec(const Kernel& k) {
  if (!k.node) return {ew("Identity"), "", {0}, true};
  const Node& n = *k.node;
  const std::string& op = n.op();
  static const char* const kPlain[] = {
      "Neg",  "Abs",     "Sqrt",      "Exp",     "Log",         "Reciprocal",     "Floor", "Ceil", "Erf", "Not",
      "Relu", "Sigmoid", "HardSwish", "Tanh",    "Softplus",    "PRelu",          "Add",   "Sub",  "Mul", "Div",
      "Pow",  "Equal",   "Less",      "Greater", "LessOrEqual", "GreaterOrEqual", "And",   "Or",   "Xor", "Max",
      "Min",  "Sum",     "Mean"};
  for (const char* p : kPlain) {
    if (op == p) return {ew(op), "", present_inputs(k)};
  }
  if (op == "Identity" || op == "Dropout") return {ew("Identity"), "", {0}, true};
  if (op == "LeakyRelu") return {ew(op), float_literal(float_attr(n, "alpha", 0.01)), {0}};
  if (op == "Elu") return {ew(op), float_literal(float_attr(n, "alpha", 1.0)), {0}};
  if (op == "Selu") {
    return {ew(op),
            float_literal(float_attr(n, "alpha", 1.67326319217681884765625)) + ", " +
                float_literal(float_attr(n, "gamma", 1.05070102214813232421875)),
            {0}};
  }
  if (op == "HardSigmoid") {
    return {ew(op), float_literal(float_attr(n, "alpha", 0.2)) + ", " + float_literal(float_attr(n, "beta", 0.5)), {0}};
  }
  if (op == "Clip") return clip_spec(k);
  if (op == "Where") return {ew(op), "", {0, 1, 2}, true, true};
  if (op == "Cast" || op == "CastLike") {
    // The conversion is the store's; the same type on both sides is a copy of the bits.
    return {ew("Identity"), "", {0}, k.inputs[0].dtype == k.outputs[0].dtype};
  }
  if (op == "BatchNormalization") {
    return {ew("BatchNorm"), float_literal(n.attr_float("epsilon", 1e-5)), {0, 1, 2, 3, 4}, false, false, true};
  }
  throw kernel_error(k, "the elementwise template family has no kernel for op " + op);
}

// Add/Sub/Mul/Div (1, 6) and Pow (1) with broadcast=1 align B with A's dims from 'axis' on (the
// last dims when absent); PRelu 1 and 6 take a slope of one element or one per channel (dim 1).
// Both are the numpy form once B has trailing dims of length 1 (as compiler/ops normalizes them).
TensorView legacy_numpy_view(const Node& n, const TensorView& a, const TensorView& b) {
  const bool prelu = n.op() == "PRelu";
  if (!prelu && n.attr_int("broadcast", 0) == 0) return b;
  TensorView v = b;
  if (num_elements(b.shape) == 1) {
    v.shape.clear();
    v.strides.clear();
    return v;
  }
  const auto ra = static_cast<int64_t>(a.shape.size()), rb = static_cast<int64_t>(b.shape.size());
  const int64_t axis = prelu ? 1 : n.has_attr("axis") ? n.attr_int("axis", 0) : ra - rb;
  if (axis < 0 || axis + rb > ra) throw n.error("legacy broadcast: B does not fit A at axis " + std::to_string(axis));
  v.shape.resize(static_cast<std::size_t>(ra - axis), 1);
  v.strides.resize(static_cast<std::size_t>(ra - axis), 0);
  return v;
}

bool is_legacy_broadcast(const Node& n) {
  const std::string& op = n.op();
  if (op == "PRelu") return n.opset() < 7;
  return n.opset() < 7 && (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow");
}

// BatchNormalization's parameters ([C] or, with spatial=0, [C, D1, ...]) align with dims 1.. of X.
Strides channel_strides(const TensorView& v, const Shape& out) {
  Strides s(out.size(), 0);
  for (std::size_t i = 0; i < v.shape.size() && i + 1 < out.size(); ++i) {
    if (v.shape[i] != 1) s[i + 1] = v.strides[i];
  }
  return s;
}

void plan_elementwise(Kernel& k, const Target&) {
  if (k.outputs.empty()) return;
  const int64_t n = k.outputs[0].numel();
  k.tactic["block"] = 256;
  k.tactic["grid"] = n <= 0 ? 0 : std::min<int64_t>((n + 255) / 256, 4096);
  k.note = "broadcasting elementwise kernel, FP32 math, grid-stride loop";
}

KernelLaunches emit_elementwise(const Kernel& k, const EmitContext& ctx) {
  if (k.outputs.empty() || k.inputs.empty()) throw kernel_error(k, "elementwise kernel without input or output");
  const OpSpec spec = op_spec(k);
  const TensorView& y = k.outputs[0];
  std::vector<TensorView> inputs = k.inputs;
  if (k.node && is_legacy_broadcast(*k.node)) inputs.at(1) = legacy_numpy_view(*k.node, inputs.at(0), inputs.at(1));
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
  std::string comment;
  if (spec.op == "mc::ew::Identity" && !spec.raw) {
    comment = "y = x0 converted to " + std::string(dtype_name(y.dtype)) + " over ";
  } else {
    comment = "y = " + op_name(spec.op) + "(";
    for (std::size_t i = 0; i < spec.inputs.size(); ++i) comment += (i ? ", x" : "x") + std::to_string(i);
    comment += ") over ";
  }
  comment += (shape.empty() ? std::string("one element") : shape_str(shape));
  if (spec.raw) comment += ", values as raw bits";

  // Operand types: the element types, or raw bits for copies (Where's condition stays bool).
  auto type_of = [&](const TensorView& v, bool value) {
    return spec.raw && value ? bits_type(v.dtype) : elem_type(v.dtype);
  };
  Launch l;
  l.comment = comment;
  l.type = "mc::ew::Elementwise<" + spec.op + ", " + dims(shape) + ",\n      mc::ew::Operand<" + type_of(y, true) + ", " +
           dims(y_strides) + ">";
  l.params.push_back({"y", ctx.ptr(y, false)});
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    const TensorView& v = inputs[static_cast<std::size_t>(spec.inputs[i])];
    l.type += ",\n      mc::ew::Operand<" + type_of(v, !(spec.condition && i == 0)) + ", " + dims(x_strides[i]) + ">";
    l.params.push_back({"x[" + std::to_string(i) + "]", ctx.ptr(v, true)});
  }
  l.type += ">";
  // The Op's attributes; an Op without any is default-constructed.
  if (!spec.args.empty()) l.params.push_back({"op", spec.op + "{" + spec.args + "}"});
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(elementwise_family)
(KernelFamily{"elementwise", {"tensor_index.cuh", "elementwise.cuh"}, plan_elementwise, emit_elementwise});

}  // namespace modelc::codegen

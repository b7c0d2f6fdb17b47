// compiler/ops/elementwise.cpp — arithmetic and math elementwise ops: Add, Sub,
// Mul, Div, Pow, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Floor, Ceil, Erf; the
// variadic Min, Max, Sum, Mean; Where, Cast, CastLike. Also the shared type
// rules of elementwise_rules.h.
//
// Add/Sub/Mul/Div (1, 6) and Pow (1) have a legacy form with 'broadcast' and
// 'axis' attributes instead of numpy broadcasting; it is normalized to the
// numpy form (B reshaped with trailing 1s) and evaluated by the same rules.
//
// Numbers: float inputs are computed in double and rounded once to the output
// type (for + - * / and sqrt this is exactly the float32 result). Integer
// inputs are computed exactly in int64 and wrap to the output type the way a
// C cast does; integer division by zero is an Error, not a crash.
#include "ops/elementwise.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/common.h"
#include "ops/elementwise_rules.h"

namespace modelc::ops {

// ---- shared type rules (declared in elementwise_rules.h) --------------------

namespace {

std::string set_names(DTypeSet s) {
  std::string r;
  for (DType t : all_dtypes()) {
    if (s & dtype_bit(t)) r += std::string(r.empty() ? "" : ", ") + dtype_name(t);
  }
  return r.empty() ? "no type" : r;
}

std::string input_desc(const Node& n, int i) {
  return "input " + std::to_string(i) + " ('" + n.input(i).name() + "')";
}

}  // namespace

DTypeSet types_at(const TypeRule& rule, int opset) {
  DTypeSet s = 0;
  for (const auto& [since, set] : rule) {
    if (since <= opset) s = set;
  }
  return s;
}

void require_types(const Node& n, int i, const TypeRule& rule) {
  if (!n.has_input(i)) return;
  const DTypeSet s = types_at(rule, n.opset());
  const DType t = n.input(i).dtype();
  if (t != DType::undefined && (s & dtype_bit(t))) return;
  throw n.error(input_desc(n, i) + " is " + dtype_name(t) + "; " + n.op() + " at opset " +
                std::to_string(n.opset()) + " accepts " + set_names(s));
}

void require_same_type(const Node& n, int i, int j) {
  if (!n.has_input(i) || !n.has_input(j)) return;
  const DType a = n.input(i).dtype(), b = n.input(j).dtype();
  if (a == b) return;
  throw n.error(input_desc(n, i) + " is " + dtype_name(a) + " and " + input_desc(n, j) + " is " + dtype_name(b) +
                    "; " + n.op() + " needs both of the same type",
                "insert a Cast so that both inputs have one type");
}

ValidateFn same_type_inputs(TypeRule rule) {
  return [rule](const Node& n) {
    for (int i = 0; i < n.num_inputs(); ++i) {
      if (!n.has_input(i)) throw n.error("input " + std::to_string(i) + " is missing (it is not optional)");
    }
    for (int i = 1; i < n.num_inputs(); ++i) require_same_type(n, 0, i);
    for (int i = 0; i < n.num_inputs(); ++i) require_types(n, i, rule);
  };
}

Tensor map_unary_exact(const Tensor& x, const std::function<double(double)>& f,
                       const std::function<int64_t(int64_t)>& fi) {
  if (is_float(x.dtype())) return map_unary(x, f);
  std::vector<int64_t> v = x.to_i64();
  for (int64_t& e : v) e = fi(e);
  return Tensor::from_i64(x.dtype(), x.shape(), v);
}

EvalFn eval_unary(std::function<double(double)> f) {
  return [f](const Node&, const TensorRefs& in) { return std::vector<Tensor>{map_unary(*in[0], f)}; };
}

EvalFn eval_unary_exact(std::function<double(double)> f, std::function<int64_t(int64_t)> fi) {
  return [f, fi](const Node&, const TensorRefs& in) { return std::vector<Tensor>{map_unary_exact(*in[0], f, fi)}; };
}

// ---- the ops -----------------------------------------------------------------

namespace {

constexpr DTypeSet kNoBf16 = kAllTypes & ~kBf16;

// Add, Sub, Mul, Div: T is float16/32/64 and the 32- and 64-bit integers from 7, + bfloat16 from
// 13, every numeric type from 14.
const TypeRule kArithTypes = {{7, kFloat16_32 | kFloat64 | kInt32_64 | kUint32_64},
                              {13, kFloats | kFloat64 | kInt32_64 | kUint32_64},
                              {14, kNumeric}};

EvalFn eval_binary(std::function<double(double, double)> f, std::function<int64_t(int64_t, int64_t)> fi) {
  return [f, fi](const Node& n, const TensorRefs& in) {
    return std::vector<Tensor>{map_binary(n, *in[0], *in[1], f, DType::undefined, fi)};
  };
}

// Unsigned integer division (uint64: the int64 bit patterns would divide wrongly).
uint64_t uint_div(const Node& n, uint64_t a, uint64_t b) {
  if (b == 0) {
    throw n.error("integer division by zero (input 1, '" + n.input(1).name() + "', holds a 0)",
                  "integer division by zero is undefined in ONNX; check the divisor");
  }
  return a / b;
}

int64_t int_div(const Node& n, int64_t a, int64_t b) {
  if (b == 0) {
    throw n.error("integer division by zero (input 1, '" + n.input(1).name() + "', holds a 0)",
                  "integer division by zero is undefined in ONNX; check the divisor");
  }
  if (b == -1) return wrap_neg(a);  // INT64_MIN / -1 overflows in C++
  return a / b;                     // C++ truncates toward zero, as ONNX's integer Div does
}

// base^exp for integers, wrapping like repeated multiplication in the type.
// Negative exponents give the truncated value of 1 / base^-exp.
int64_t int_pow(const Node& n, int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) throw n.error("integer Pow of 0 to a negative exponent (division by zero)");
    if (base == 1) return 1;
    if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  int64_t r = 1;
  while (exp > 0) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

// NaN-propagating min/max (numpy's minimum/maximum, what ONNX's reference uses).
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : (b < a ? b : a); }
double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : (b > a ? b : a); }

std::vector<Tensor> eval_div(const Node& n, const TensorRefs& in) {
  return {map_binary(
      n, *in[0], *in[1], [](double a, double b) { return a / b; }, DType::undefined,
      [&n](int64_t a, int64_t b) { return int_div(n, a, b); }, [&n](uint64_t a, uint64_t b) { return uint_div(n, a, b); })};
}

// Integer base and exponent: exact. Otherwise pow in double, rounded
// (truncated for an integer base) to the base's type.
std::vector<Tensor> eval_pow(const Node& n, const TensorRefs& in) {
  return {map_binary(
      n, *in[0], *in[1], [](double a, double b) { return std::pow(a, b); }, in[0]->dtype(),
      [&n](int64_t a, int64_t b) { return int_pow(n, a, b); })};
}

const EvalFn eval_add = eval_binary([](double a, double b) { return a + b; }, wrap_add);
const EvalFn eval_sub = eval_binary([](double a, double b) { return a - b; }, wrap_sub);
const EvalFn eval_mul = eval_binary([](double a, double b) { return a * b; }, wrap_mul);

// ---- legacy broadcasting (Add/Sub/Mul/Div 1 and 6, Pow 1) --------------------

// Types before opset 7: Add/Sub/Mul/Div 1 and Pow 1 take floats; Add/Sub/Mul/Div
// 6 add the 32- and 64-bit integers.
const TypeRule kLegacyArithTypes = {{1, kFloat16_32 | kFloat64}, {6, kFloat16_32 | kFloat64 | kInt32_64 | kUint32_64}};
const TypeRule kLegacyPowTypes = {{1, kFloat16_32 | kFloat64}};

// 'broadcast' is 0 or 1; 'axis' (optional, an int) is checked against the
// shapes in legacy_b_shape; 'consumed_inputs' (opset 1) is a legacy
// optimization hint with no effect on the result.
ValidateFn validate_legacy_binary(TypeRule rule) {
  return [rule](const Node& n) {
    same_type_inputs(rule)(n);
    const int64_t broadcast = n.attr_int("broadcast", 0);
    if (broadcast != 0 && broadcast != 1) {
      throw n.error("attribute 'broadcast' is " + std::to_string(broadcast) + "; it must be 0 or 1");
    }
    if (n.has_attr("axis")) n.attr_int("axis", 0);  // kind check
    if (n.has_attr("consumed_inputs")) n.attr_ints("consumed_inputs");
  };
}

/// B's shape in numpy form for the legacy broadcast rule, checking it: with
/// broadcast=0 B must have A's shape; with broadcast=1 B is one element (of
/// rank <= A's) or its dims match A's dims from 'axis' on (suffix-aligned
/// when 'axis' is absent). The result is B's shape followed by 1s up to A's
/// rank, so numpy broadcasting of A and that shape gives A's shape and the
/// legacy alignment.
///
/// A B dim of 1 matches any A dim. The spec's text says "1-dim expansion
/// doesn't work yet", but ONNX's shipped opset-6 data expects it
/// (pytorch-operator/test_operator_add_size1_broadcast: A [2,3], B [2,1],
/// axis 0), and ONNX's 6 -> 7 version converter gives the same result (B
/// padded with trailing 1s, then numpy broadcasting). B never expands A.
Shape legacy_b_shape(const Node& n, const Shape& a, const Shape& b) {
  const std::string b_desc = input_desc(n, 1) + " (B) has shape " + shape_str(b);
  if (n.attr_int("broadcast", 0) == 0) {
    if (b != a) {
      throw n.error(b_desc + " and " + input_desc(n, 0) + " (A) has " + shape_str(a) + "; " + n.op() +
                        " at opset " + std::to_string(n.opset()) + " without broadcast=1 needs equal shapes",
                    "set attribute 'broadcast' to 1 to broadcast B onto A, or re-export the model at opset 7 or newer");
    }
    return b;
  }
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (rb > ra) {
    throw n.error(b_desc + ", of higher rank than " + input_desc(n, 0) + " (A) " + shape_str(a) +
                      "; legacy broadcasting (broadcast=1) only broadcasts B onto A");
  }
  int64_t axis = ra - rb;  // suffix matching
  if (n.has_attr("axis")) {
    axis = n.attr_int("axis", 0);
    if (axis < 0 || axis > ra - rb) {
      throw n.error("attribute 'axis' is " + std::to_string(axis) + "; B " + shape_str(b) + " aligned on A " +
                        shape_str(a) + " needs an axis in [0, " + std::to_string(ra - rb) + "]",
                    "legacy broadcasting places B's dims at A's dims axis, axis+1, ...");
    }
  }
  if (num_elements(b) == 1) return {};  // one element: any alignment gives the same result
  for (int64_t i = 0; i < rb; ++i) {
    if (b[i] != a[axis + i] && b[i] != 1) {
      throw n.error(b_desc + ", which does not match " + input_desc(n, 0) + " (A) " + shape_str(a) + " at axis " +
                        std::to_string(axis) + " (dim " + std::to_string(i) + " of B is " + std::to_string(b[i]) +
                        ", dim " + std::to_string(axis + i) + " of A is " + std::to_string(a[axis + i]) + ")",
                    "legacy broadcasting needs each of B's dims to equal A's dim from 'axis' on, or be 1; "
                    "set 'axis' or re-export the model at opset 7 or newer");
    }
  }
  Shape r = b;
  r.resize(static_cast<std::size_t>(ra - axis), 1);
  return r;
}

// C has A's shape and type.
void infer_legacy_binary(Node& n) {
  legacy_b_shape(n, n.input(0).shape(), n.input(1).shape());
  infer_same_as_input(n);
}

// The numpy-form evaluation with B reshaped to its numpy-form shape.
EvalFn with_legacy_broadcast(EvalFn eval) {
  return [eval](const Node& n, const TensorRefs& in) {
    const Tensor b = in[1]->reshaped(legacy_b_shape(n, in[0]->shape(), in[1]->shape()));
    return eval(n, {in[0], &b});
  };
}

void validate_pow(const Node& n) {
  if (n.opset() < 12) {
    require_same_type(n, 0, 1);
    require_types(n, 0, {{7, kFloat16_32 | kFloat64}});
    return;
  }
  // From 12 the exponent has its own type T1; the output takes the base's.
  require_types(n, 0, {{12, kFloat16_32 | kFloat64 | kInt32_64}, {13, kFloats | kFloat64 | kInt32_64}});
  require_types(n, 1, {{12, kFloat16_32 | kFloat64 | kInts}, {15, kNumeric}});
}

// ---- variadic Min, Max, Sum, Mean --------------------------------------------

// Before opset 8 the variadic ops take inputs of one shape; from 8 they broadcast.
void infer_variadic(Node& n) {
  if (n.opset() < 8) {
    for (int i = 1; i < n.num_inputs(); ++i) {
      if (n.input(i).shape() != n.input(0).shape()) {
        throw n.error(input_desc(n, i) + " has shape " + shape_str(n.input(i).shape()) + ", input 0 has " +
                          shape_str(n.input(0).shape()) + "; " + n.op() + " before opset 8 does not broadcast",
                      "re-export the model at opset 8 or newer");
      }
    }
  }
  infer_broadcast(n);
}

/// Folds every input into one output of the broadcast shape: in int64 with
/// `fi` for integer inputs (when given: Min and Max, which pick an argument; uint64 ordered as
/// unsigned numbers), else in double with `f`; Mean divides the double sum by the input count.
Tensor eval_variadic(const Node& n, const TensorRefs& in, const std::function<double(double, double)>& f,
                     const std::function<int64_t(int64_t, int64_t)>& fi, bool mean) {
  Shape s = in[0]->shape();
  for (std::size_t k = 1; k < in.size(); ++k) s = broadcast_shapes(n, s, in[k]->shape());
  const std::size_t total = static_cast<std::size_t>(num_elements(s));
  const DType dt = in[0]->dtype();
  if (fi && !is_float(dt)) {
    // uint64's order is its bit patterns' with the top bit flipped: flip, fold as int64, flip back
    // (Min and Max return one of their arguments).
    const int64_t flip = dt == DType::uint64 ? INT64_MIN : 0;
    std::vector<int64_t> acc(total);
    for (std::size_t k = 0; k < in.size(); ++k) {
      const std::vector<int64_t> v = in[k]->to_i64();
      const std::vector<int64_t> idx = broadcast_index(in[k]->shape(), s);
      for (std::size_t e = 0; e < total; ++e) {
        const int64_t x = v[idx[e]] ^ flip;
        acc[e] = k == 0 ? x : fi(acc[e], x);
      }
    }
    for (int64_t& a : acc) a ^= flip;
    return Tensor::from_i64(dt, s, acc);
  }
  std::vector<double> acc(total);
  for (std::size_t k = 0; k < in.size(); ++k) {
    const std::vector<double> v = in[k]->to_f64();
    const std::vector<int64_t> idx = broadcast_index(in[k]->shape(), s);
    for (std::size_t e = 0; e < total; ++e) acc[e] = k == 0 ? v[idx[e]] : f(acc[e], v[idx[e]]);
  }
  if (mean) {
    for (double& a : acc) a /= static_cast<double>(in.size());
  }
  return Tensor::from_f64(dt, s, acc);
}

FlopsFn flops_variadic(int64_t extra) {
  return [extra](const Node& n) { return (n.num_inputs() - 1 + extra) * n.output(0).numel(); };
}

// ---- Cast ------------------------------------------------------------------

DType cast_target(const Node& n) {
  if (!n.has_attr("to")) throw n.error("attribute 'to' is required");
  const int64_t code = n.attr_int("to", 0);
  const DType t = code >= 0 && code <= 1000 ? dtype_from_onnx(static_cast<int>(code)) : DType::undefined;
  if (t == DType::undefined) {
    const std::string name = code >= 0 && code <= 1000 ? onnx_dtype_name(static_cast<int>(code))
                                                       : "type code " + std::to_string(code);
    throw n.error("attribute 'to' is " + name + ", a type modelc does not support",
                  std::string("modelc supports ") + set_names(kAllTypes));
  }
  return t;
}

// Cast before 13 has no bfloat16 (on either side); saturate (19) only affects
// float8 targets, which modelc does not have, so it is accepted and has no effect.
void validate_cast(const Node& n) {
  const DType to = cast_target(n);
  require_types(n, 0, {{6, kNoBf16}, {13, kAllTypes}});
  if (n.opset() < 13 && to == DType::bfloat16) throw n.error("attribute 'to' is BFLOAT16, which Cast takes from opset 13");
  if (n.has_attr("saturate")) n.attr_int("saturate", 1);  // kind check
}

// The reference cast: float -> int truncates toward zero (saturating out of
// range, NaN -> 0), float -> bool is x != 0, int -> int wraps.
std::vector<Tensor> eval_cast_to(const Tensor& x, DType to) { return {x.cast(to)}; }

// ---- Where -----------------------------------------------------------------

void validate_where(const Node& n) {
  require_types(n, 0, {{9, kBool}});
  require_same_type(n, 1, 2);
  require_types(n, 1, {{9, kNoBf16}, {16, kAllTypes}});
  require_types(n, 2, {{9, kNoBf16}, {16, kAllTypes}});
}

void infer_where(Node& n) { n.output(0).set_type(n.input(1).dtype(), broadcast_inputs(n)); }

// Elements are copied as bytes, so every type (int64 included) is exact.
std::vector<Tensor> eval_where(const Node& n, const TensorRefs& in) {
  const Tensor &c = *in[0], &x = *in[1], &y = *in[2];
  const Shape s = broadcast_shapes(n, broadcast_shapes(n, c.shape(), x.shape()), y.shape());
  const std::vector<int64_t> ic = broadcast_index(c.shape(), s), ix = broadcast_index(x.shape(), s),
                             iy = broadcast_index(y.shape(), s);
  Tensor out(x.dtype(), s);
  const std::size_t es = dtype_size(x.dtype());
  uint8_t* o = out.mutable_raw();
  const uint8_t* cond = c.raw();
  for (std::size_t e = 0; e < ic.size(); ++e) {
    const bool pick_x = cond[ic[e]] != 0;
    const uint8_t* src = pick_x ? x.raw() + ix[e] * es : y.raw() + iy[e] * es;
    std::memcpy(o + e * es, src, es);
  }
  return {out};
}

}  // namespace

std::optional<Shape> legacy_numpy_shape(const Node& n, const Shape& a, const Shape& b) {
  if (n.opset() >= 7) return std::nullopt;
  const std::string& op = n.op();
  if (op == "PRelu") return legacy_slope_shape(n, a, b);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow") return legacy_b_shape(n, a, b);
  return std::nullopt;
}

// ---- binary arithmetic ------------------------------------------------------

MODELC_REGISTER_OP(Add)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kArithTypes))
    .infer(infer_broadcast)
    .eval(eval_add)
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_binary)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A + B, numpy broadcasting");

MODELC_REGISTER_OP(Sub)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kArithTypes))
    .infer(infer_broadcast)
    .eval(eval_sub)
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_binary)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A - B, numpy broadcasting");

MODELC_REGISTER_OP(Mul)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kArithTypes))
    .infer(infer_broadcast)
    .eval(eval_mul)
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_binary)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A * B, numpy broadcasting");

MODELC_REGISTER_OP(Div)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kArithTypes))
    .infer(infer_broadcast)
    .eval(eval_div)
    .precision(Precision::fp16)
    .fusion(Fusion::epilogue_binary)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A / B, numpy broadcasting; integers truncate toward zero");

MODELC_REGISTER_OP(Pow)
    .since(7)
    .inputs(2, 2)
    .validate(validate_pow)
    .infer(infer_broadcast)
    .eval(eval_pow)
    .precision(Precision::fp32_compute)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("X ^ Y, numpy broadcasting; from opset 12 Y may have another type than X");

// ---- binary arithmetic, legacy forms (before opset 7) -------------------------
//
// Opset 1 and 6 differ only in 'consumed_inputs' (1; no effect) and the types.
// No fusion or layout facts: B's alignment lives in attributes that passes do
// not read, so these nodes stay unfused and in NCHW until a pass rewrites
// them to the numpy form.

MODELC_REGISTER_OP(Add)
    .since(1)
    .attrs({"broadcast", "axis", "consumed_inputs"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_add))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A + B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Add)
    .since(6)
    .attrs({"broadcast", "axis"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_add))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A + B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Sub)
    .since(1)
    .attrs({"broadcast", "axis", "consumed_inputs"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_sub))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A - B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Sub)
    .since(6)
    .attrs({"broadcast", "axis"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_sub))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A - B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Mul)
    .since(1)
    .attrs({"broadcast", "axis", "consumed_inputs"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_mul))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A * B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Mul)
    .since(6)
    .attrs({"broadcast", "axis"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_mul))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A * B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Div)
    .since(1)
    .attrs({"broadcast", "axis", "consumed_inputs"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_div))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A / B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned)");

MODELC_REGISTER_OP(Div)
    .since(6)
    .attrs({"broadcast", "axis"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyArithTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_div))
    .precision(Precision::fp16)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A / B; broadcast=1 broadcasts B onto A at 'axis' (else suffix-aligned); integers truncate toward zero");

MODELC_REGISTER_OP(Pow)
    .since(1)
    .attrs({"broadcast", "axis"})
    .inputs(2, 2)
    .validate(validate_legacy_binary(kLegacyPowTypes))
    .infer(infer_legacy_binary)
    .eval(with_legacy_broadcast(eval_pow))
    .precision(Precision::fp32_compute)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("X ^ Y; broadcast=1 broadcasts Y onto X at 'axis' (else suffix-aligned)");

// ---- unary math ----------------------------------------------------------------

// Sqrt, Exp, Log, Reciprocal, Floor, Ceil (6) and Sigmoid, Tanh: float types, + bfloat16 from 13.
static const TypeRule kUnaryFloatTypes = {{6, kFloat16_32 | kFloat64}, {13, kFloats | kFloat64}};

MODELC_REGISTER_OP(Sqrt)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kUnaryFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::sqrt(x); }))
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("sqrt(x) (NaN for x < 0)");

MODELC_REGISTER_OP(Exp)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kUnaryFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::exp(x); }))
    .precision(Precision::fp32_compute)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("e^x");

MODELC_REGISTER_OP(Log)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kUnaryFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::log(x); }))
    .precision(Precision::fp32_compute)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("natural logarithm (-inf at 0, NaN below)");

MODELC_REGISTER_OP(Reciprocal)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kUnaryFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return 1.0 / x; }))
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("1 / x");

MODELC_REGISTER_OP(Floor)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kUnaryFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::floor(x); }))
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("largest integer <= x");

MODELC_REGISTER_OP(Ceil)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs(kUnaryFloatTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::ceil(x); }))
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("smallest integer >= x");

// Neg: the float and signed integer types from 6, + bfloat16 from 13.
MODELC_REGISTER_OP(Neg)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs({{6, kFloat16_32 | kFloat64 | kSignedInts}, {13, kFloats | kFloat64 | kSignedInts}}))
    .infer(infer_same_as_input)
    .eval(eval_unary_exact([](double x) { return -x; }, wrap_neg))
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("-x");

MODELC_REGISTER_OP(Abs)
    .since(6)
    .inputs(1, 1)
    .validate(same_type_inputs({{6, kFloat16_32 | kFloat64 | kInts}, {13, kNumeric}}))
    .infer(infer_same_as_input)
    .eval([](const Node& n, const TensorRefs& in) {
      if (is_unsigned_int(in[0]->dtype())) return std::vector<Tensor>{*in[0]};  // a uint64 may look negative as int64
      return eval_unary_exact([](double x) { return std::fabs(x); },
                              [](int64_t x) { return x < 0 ? wrap_neg(x) : x; })(n, in);
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("|x|");

// Erf takes every numeric type (an integer result is the truncated erf).
MODELC_REGISTER_OP(Erf)
    .since(9)
    .inputs(1, 1)
    .validate(same_type_inputs({{9, kFloat16_32 | kFloat64 | kInts}, {13, kNumeric}}))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::erf(x); }))
    .precision(Precision::fp32_compute)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("the Gauss error function");

// ---- variadic --------------------------------------------------------------------

// Min/Max: float types (6, 8), every numeric type from 12, + bfloat16 from 13.
static const TypeRule kMinMaxTypes = {{6, kFloat16_32 | kFloat64}, {12, kFloat16_32 | kFloat64 | kInts}, {13, kNumeric}};
// Sum/Mean: float types, + bfloat16 from 13.
static const TypeRule kSumTypes = {{6, kFloat16_32 | kFloat64}, {13, kFloats | kFloat64}};

MODELC_REGISTER_OP(Max)
    .since(6)
    .inputs(1, -1)
    .validate(same_type_inputs(kMinMaxTypes))
    .infer(infer_variadic)
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{eval_variadic(n, in, nan_max, [](int64_t a, int64_t b) { return a > b ? a : b; },
                                               false)};
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_variadic(0))
    .doc("elementwise maximum of the inputs (broadcasting from opset 8; NaN propagates)");

MODELC_REGISTER_OP(Min)
    .since(6)
    .inputs(1, -1)
    .validate(same_type_inputs(kMinMaxTypes))
    .infer(infer_variadic)
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{eval_variadic(n, in, nan_min, [](int64_t a, int64_t b) { return a < b ? a : b; },
                                               false)};
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_variadic(0))
    .doc("elementwise minimum of the inputs (broadcasting from opset 8; NaN propagates)");

MODELC_REGISTER_OP(Sum)
    .since(6)
    .inputs(1, -1)
    .validate(same_type_inputs(kSumTypes))
    .infer(infer_variadic)
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{eval_variadic(n, in, [](double a, double b) { return a + b; }, nullptr, false)};
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_variadic(0))
    .doc("elementwise sum of the inputs (broadcasting from opset 8)");

MODELC_REGISTER_OP(Mean)
    .since(6)
    .inputs(1, -1)
    .validate(same_type_inputs(kSumTypes))
    .infer(infer_variadic)
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{eval_variadic(n, in, [](double a, double b) { return a + b; }, nullptr, true)};
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_variadic(1))
    .doc("elementwise mean of the inputs (broadcasting from opset 8)");

// ---- Where, Cast -------------------------------------------------------------------

MODELC_REGISTER_OP(Where)
    .since(9)
    .moves_data()
    .inputs(3, 3)
    .validate(validate_where)
    .infer(infer_where)
    .eval(eval_where)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("condition ? X : Y, numpy broadcasting of the three");

MODELC_REGISTER_OP(Cast)
    .since(6)
    .moves_data()
    .view_when_same_type()
    .attrs({"to"})
    .inputs(1, 1)
    .validate(validate_cast)
    .infer([](Node& n) { n.output(0).set_type(cast_target(n), n.input(0).shape()); })
    .eval([](const Node& n, const TensorRefs& in) { return eval_cast_to(*in[0], cast_target(n)); })
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("converts to type 'to' (float -> int truncates toward zero, float -> bool is x != 0)");

MODELC_REGISTER_OP(Cast)
    .since(19)
    .moves_data()
    .view_when_same_type()
    .attrs({"to", "saturate"})
    .inputs(1, 1)
    .validate(validate_cast)
    .infer([](Node& n) { n.output(0).set_type(cast_target(n), n.input(0).shape()); })
    .eval([](const Node& n, const TensorRefs& in) { return eval_cast_to(*in[0], cast_target(n)); })
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("converts to type 'to'; 'saturate' only concerns float8 types, so it has no effect here");

// CastLike (15): the target type is input 1's; saturate from 19.
static void validate_cast_like(const Node& n) {
  require_types(n, 0, {{15, kAllTypes}});
  require_types(n, 1, {{15, kAllTypes}});
  if (n.has_attr("saturate")) n.attr_int("saturate", 1);
}

MODELC_REGISTER_OP(CastLike)
    .since(15)
    .moves_data()
    .view_when_same_type()
    .inputs(2, 2)
    .validate(validate_cast_like)
    .infer([](Node& n) { n.output(0).set_type(n.input(1).dtype(), n.input(0).shape()); })
    .eval([](const Node&, const TensorRefs& in) { return eval_cast_to(*in[0], in[1]->dtype()); })
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("converts input 0 to the type of input 1");

MODELC_REGISTER_OP(CastLike)
    .since(19)
    .moves_data()
    .view_when_same_type()
    .attrs({"saturate"})
    .inputs(2, 2)
    .validate(validate_cast_like)
    .infer([](Node& n) { n.output(0).set_type(n.input(1).dtype(), n.input(0).shape()); })
    .eval([](const Node&, const TensorRefs& in) { return eval_cast_to(*in[0], in[1]->dtype()); })
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("converts input 0 to the type of input 1; 'saturate' only concerns float8 types");

}  // namespace modelc::ops

// compiler/ops/math.cpp — elementwise math beside ops/elementwise.cpp: the trigonometric and
// hyperbolic functions (Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh), Round,
// Sign, IsNaN, IsInf and Mod.
//
// Every one runs in the elementwise template family (templates/elementwise.cuh, one functor each:
// FP32 math on float16 storage too). The reference computes in double and rounds once to the output
// type; integers (Sign, Mod) are exact in int64.
//
// FP16 policy: the transcendental functions are fp32_compute (FP16 storage, FP32 arithmetic in the
// kernel, as Exp and Tanh); Round and Sign are exact on FP16 values (fp16); IsNaN and IsInf read
// FP16 storage and write bool (fp16: their input may be stored in FP16); Mod follows its inputs
// (fp16: the remainder of two float16 values is a float16 value, computed in FP32 exactly).
#include "ops/math.h"

#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/elementwise_rules.h"

namespace modelc::ops {

bool mod_is_fmod(const Node& n) {
  const int64_t f = n.attr_int("fmod", 0);
  if (f != 0 && f != 1) throw n.error("attribute 'fmod' is " + std::to_string(f) + "; it must be 0 or 1");
  return f == 1;
}

IsInfDetect isinf_detect(const Node& n) {
  IsInfDetect d;
  const int64_t neg = n.attr_int("detect_negative", 1), pos = n.attr_int("detect_positive", 1);
  if ((neg != 0 && neg != 1) || (pos != 0 && pos != 1)) {
    throw n.error("attributes 'detect_negative' and 'detect_positive' must be 0 or 1 (they are " +
                  std::to_string(neg) + " and " + std::to_string(pos) + ")");
  }
  d.negative = neg == 1;
  d.positive = pos == 1;
  return d;
}

int64_t int_mod(const Node& n, int64_t a, int64_t b, bool fmod) {
  if (b == 0) {
    throw n.error("integer Mod by zero (input 1, '" + n.input(1).name() + "', holds a 0)",
                  "the remainder of an integer division by zero is undefined; check the divisor");
  }
  if (b == -1) return 0;  // INT64_MIN % -1 overflows in C++; the remainder is 0 either way
  const int64_t r = a % b;  // C++: the sign of the dividend (fmod = 1)
  if (fmod || r == 0 || (r < 0) == (b < 0)) return r;
  return r + b;  // fmod = 0: the sign of the divisor, as Python's %
}

namespace {

double float_mod(double a, double b) { return std::fmod(a, b); }

// The trigonometric and hyperbolic functions take float16, float and double (which modelc has
// not); no bfloat16 form.
const TypeRule kTrigTypes = {{7, kFloat16_32}};

#define MODELC_TRIG(NAME, SINCE, FN, DOC)                 \
  MODELC_REGISTER_OP(NAME)                                \
      .since(SINCE)                                       \
      .inputs(1, 1)                                       \
      .validate(same_type_inputs(kTrigTypes))             \
      .infer(infer_same_as_input)                         \
      .eval(eval_unary([](double x) { return FN(x); }))   \
      .precision(Precision::fp32_compute)                 \
      .layout(Layout::agnostic)                           \
      .kernel("elementwise")                              \
      .family("elementwise")                              \
      .flops(flops_per_output(1))                         \
      .doc(DOC);

MODELC_TRIG(Sin, 7, std::sin, "sine (radians)")
MODELC_TRIG(Cos, 7, std::cos, "cosine (radians)")
MODELC_TRIG(Tan, 7, std::tan, "tangent (radians)")
MODELC_TRIG(Asin, 7, std::asin, "arcsine (NaN outside [-1, 1])")
MODELC_TRIG(Acos, 7, std::acos, "arccosine (NaN outside [-1, 1])")
MODELC_TRIG(Atan, 7, std::atan, "arctangent")
MODELC_TRIG(Sinh, 9, std::sinh, "hyperbolic sine")
MODELC_TRIG(Cosh, 9, std::cosh, "hyperbolic cosine")
MODELC_TRIG(Asinh, 9, std::asinh, "inverse hyperbolic sine")
MODELC_TRIG(Acosh, 9, std::acosh, "inverse hyperbolic cosine (NaN below 1)")
MODELC_TRIG(Atanh, 9, std::atanh, "inverse hyperbolic tangent (+-inf at +-1, NaN beyond)")

#undef MODELC_TRIG

double sign_of(double x) {
  if (x > 0) return 1.0;
  if (x < 0) return -1.0;
  return x;  // 0 and NaN stay (numpy's sign)
}

// Mod: every numeric type (float ones only with fmod = 1), + bfloat16 from 13.
void validate_mod(const Node& n) {
  same_type_inputs({{10, kFloat16_32 | kFloat64 | kInts}, {13, kFloats | kFloat64 | kInts}})(n);
  const bool fmod = mod_is_fmod(n);
  if (!fmod && is_float(n.input(0).dtype())) {
    throw n.error("attribute 'fmod' is 0 for " + std::string(dtype_name(n.input(0).dtype())) +
                      " inputs; the spec requires fmod = 1 for floating-point Mod",
                  "set fmod = 1 (the remainder takes the sign of the dividend, as C's fmod)");
  }
}

std::vector<Tensor> eval_mod(const Node& n, const TensorRefs& in) {
  const bool fmod = mod_is_fmod(n);
  return {map_binary(n, *in[0], *in[1], float_mod, DType::undefined,
                     [&n, fmod](int64_t a, int64_t b) { return int_mod(n, a, b, fmod); })};
}

}  // namespace

MODELC_REGISTER_OP(Round)
    .since(11)
    .inputs(1, 1)
    .validate(same_type_inputs({{11, kFloat16_32}}))
    .infer(infer_same_as_input)
    .eval(eval_unary([](double x) { return std::nearbyint(x); }))  // the default mode: half to even
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("nearest integer, halves to even");

MODELC_REGISTER_OP(Sign)
    .since(9)
    .inputs(1, 1)
    .validate(same_type_inputs({{9, kFloat16_32 | kInts}, {13, kFloats | kInts}}))
    .infer(infer_same_as_input)
    .eval(eval_unary_exact(sign_of, [](int64_t x) { return x > 0 ? int64_t{1} : x < 0 ? int64_t{-1} : int64_t{0}; }))
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("-1, 0 or 1 by the sign of x (NaN stays NaN)");

MODELC_REGISTER_OP(IsNaN)
    .since(9)
    .inputs(1, 1)
    .validate(same_type_inputs({{9, kFloat16_32}, {13, kFloats}}))
    .infer([](Node& n) { n.output(0).set_type(DType::boolean, n.input(0).shape()); })
    .eval([](const Node&, const TensorRefs& in) {
      return std::vector<Tensor>{map_unary(*in[0], [](double x) { return std::isnan(x) ? 1.0 : 0.0; }, DType::boolean)};
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("x is NaN (bool)");

// IsInf 10 takes float and double; 20 adds float16 and bfloat16.
MODELC_REGISTER_OP(IsInf)
    .since(10)
    .attrs({"detect_negative", "detect_positive"})
    .inputs(1, 1)
    .validate([](const Node& n) {
      same_type_inputs({{10, dtype_bit(DType::float32)}, {20, kFloats}})(n);
      isinf_detect(n);
    })
    .infer([](Node& n) { n.output(0).set_type(DType::boolean, n.input(0).shape()); })
    .eval([](const Node& n, const TensorRefs& in) {
      const IsInfDetect d = isinf_detect(n);
      return std::vector<Tensor>{map_unary(
          *in[0], [d](double x) { return std::isinf(x) && (x > 0 ? d.positive : d.negative) ? 1.0 : 0.0; },
          DType::boolean)};
    })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("x is +inf or -inf (bool; detect_positive, detect_negative)");

MODELC_REGISTER_OP(Mod)
    .since(10)
    .attrs({"fmod"})
    .inputs(2, 2)
    .validate(validate_mod)
    .infer(infer_broadcast)
    .eval(eval_mod)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("remainder, numpy broadcasting: the divisor's sign (fmod = 0, integers) or the dividend's (fmod = 1)");

}  // namespace modelc::ops

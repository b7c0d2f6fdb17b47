// compiler/ops/logical.cpp — comparisons (Equal, Less, Greater, LessOrEqual,
// GreaterOrEqual) and boolean ops (Not, And, Or, Xor). Every output is bool,
// and every one broadcasts numpy-style (Not is unary). Integer comparisons are
// exact in int64; float comparisons follow IEEE (NaN compares unequal).
#include <cmath>
#include <functional>

#include "ops/common.h"
#include "ops/elementwise_rules.h"

namespace modelc::ops {
namespace {

// `fu` compares uint64 values (their order is not their bit patterns' as int64).
EvalFn eval_compare(bool (*f)(double, double), bool (*fi)(int64_t, int64_t),
                    bool (*fu)(uint64_t, uint64_t) = nullptr) {
  std::function<uint64_t(uint64_t, uint64_t)> unsigned_compare;
  if (fu) unsigned_compare = [fu](uint64_t a, uint64_t b) -> uint64_t { return fu(a, b) ? 1 : 0; };
  return [f, fi, unsigned_compare](const Node& n, const TensorRefs& in) {
    return std::vector<Tensor>{map_binary(
        n, *in[0], *in[1], [f](double a, double b) { return f(a, b) ? 1.0 : 0.0; }, DType::boolean,
        [fi](int64_t a, int64_t b) -> int64_t { return fi(a, b) ? 1 : 0; }, unsigned_compare)};
  };
}

// Equal: bool/int32/int64 (7), + the other numeric types (11), + bfloat16 (13).
const TypeRule kEqualTypes = {{7, kBool | kInt32_64}, {11, kBool | kInts | kFloat16_32 | kFloat64}, {13, kAllTypes}};
// Less/Greater: floats (7), + integers (9), + bfloat16 (13).
const TypeRule kOrderTypes = {{7, kFloat16_32 | kFloat64}, {9, kFloat16_32 | kFloat64 | kInts}, {13, kNumeric}};
// LessOrEqual/GreaterOrEqual: numeric (12), + bfloat16 (16).
const TypeRule kOrderEqTypes = {{12, kFloat16_32 | kFloat64 | kInts}, {16, kNumeric}};
const TypeRule kBoolTypes = {{1, kBool}};

}  // namespace

MODELC_REGISTER_OP(Equal)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kEqualTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a == b; }, [](int64_t a, int64_t b) { return a == b; },
                       [](uint64_t a, uint64_t b) { return a == b; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A == B (bool), numpy broadcasting");

MODELC_REGISTER_OP(Less)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kOrderTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a < b; }, [](int64_t a, int64_t b) { return a < b; },
                       [](uint64_t a, uint64_t b) { return a < b; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A < B (bool), numpy broadcasting");

MODELC_REGISTER_OP(Greater)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kOrderTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a > b; }, [](int64_t a, int64_t b) { return a > b; },
                       [](uint64_t a, uint64_t b) { return a > b; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A > B (bool), numpy broadcasting");

MODELC_REGISTER_OP(LessOrEqual)
    .since(12)
    .inputs(2, 2)
    .validate(same_type_inputs(kOrderEqTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a <= b; }, [](int64_t a, int64_t b) { return a <= b; },
                       [](uint64_t a, uint64_t b) { return a <= b; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A <= B (bool), numpy broadcasting");

MODELC_REGISTER_OP(GreaterOrEqual)
    .since(12)
    .inputs(2, 2)
    .validate(same_type_inputs(kOrderEqTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a >= b; }, [](int64_t a, int64_t b) { return a >= b; },
                       [](uint64_t a, uint64_t b) { return a >= b; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .flops(flops_per_output(1))
    .doc("A >= B (bool), numpy broadcasting");

MODELC_REGISTER_OP(Not)
    .since(1)
    .inputs(1, 1)
    .validate(same_type_inputs(kBoolTypes))
    .infer(infer_same_as_input)
    .eval(eval_unary_exact([](double x) { return x == 0 ? 1.0 : 0.0; }, [](int64_t x) -> int64_t { return x == 0; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("logical not (bool)");

MODELC_REGISTER_OP(And)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kBoolTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a != 0 && b != 0; },
                       [](int64_t a, int64_t b) { return a != 0 && b != 0; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("logical and (bool), numpy broadcasting");

MODELC_REGISTER_OP(Or)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kBoolTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return a != 0 || b != 0; },
                       [](int64_t a, int64_t b) { return a != 0 || b != 0; }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("logical or (bool), numpy broadcasting");

MODELC_REGISTER_OP(Xor)
    .since(7)
    .inputs(2, 2)
    .validate(same_type_inputs(kBoolTypes))
    .infer(infer_broadcast_bool)
    .eval(eval_compare([](double a, double b) { return (a != 0) != (b != 0); },
                       [](int64_t a, int64_t b) { return (a != 0) != (b != 0); }))
    .precision(Precision::never)
    .layout(Layout::agnostic)
    .kernel("elementwise")
    .family("elementwise")
    .doc("logical exclusive or (bool), numpy broadcasting");

}  // namespace modelc::ops

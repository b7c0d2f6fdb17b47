// Tests of compiler/ops/elementwise.cpp and logical.cpp: arithmetic, math,
// variadic ops, Where, Cast, comparisons and boolean ops.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "ir/graph.h"
#include "ops/elementwise.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"

using namespace modelc;

namespace {

using Attrs = std::function<void(Node&)>;

/// One node `op` at `opset` whose inputs are graph inputs fed with `ins` (an
/// undefined Tensor is an omitted input). Runs shape inference and the
/// reference interpreter; returns output 0 and checks it matches inference.
Tensor run_op(const std::string& op, int opset, const std::vector<Tensor>& ins, const Attrs& attrs = nullptr) {
  Graph g;
  g.set_opset(opset);
  std::vector<Value*> vals;
  TensorMap feeds;
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i].defined()) {
      vals.push_back(nullptr);
      continue;
    }
    Value* v = g.add_value(std::string(1, static_cast<char>('A' + i)));
    v->set_type(ins[i].dtype(), ins[i].shape());
    g.add_input(v);
    feeds[v->name()] = ins[i];
    vals.push_back(v);
  }
  Value* y = g.add_value("Y");
  Node* n = g.add_node(op, "node", vals, {y});
  if (attrs) attrs(*n);
  g.add_output(y);
  ops::infer_graph(g);
  TensorMap out = run_reference(g, feeds);
  const Tensor& t = out.at("Y");
  REQUIRE(t.dtype() == y->dtype());
  REQUIRE(t.shape() == y->shape());
  return t;
}

/// The Error message of running the op (empty when it does not throw).
std::string error_of(const std::string& op, int opset, const std::vector<Tensor>& ins, const Attrs& attrs = nullptr) {
  try {
    run_op(op, opset, ins, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_f32(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_i64(DType::int64, std::move(s), v); }
Tensor i32(Shape s, std::vector<int64_t> v) { return Tensor::from_i64(DType::int32, std::move(s), v); }
Tensor typed(DType t, Shape s, std::vector<double> v) { return Tensor::from_f64(t, std::move(s), v); }
Tensor boolean(Shape s, std::vector<int64_t> v) { return Tensor::from_i64(DType::boolean, std::move(s), v); }

void check_close(const Tensor& t, const std::vector<double>& want, double tol = 1e-6) {
  const std::vector<double> got = t.to_f64();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK_MESSAGE(std::isnan(got[i]), "element " << i);
    } else if (std::isinf(want[i])) {
      CHECK_MESSAGE(got[i] == want[i], "element " << i);
    } else {
      CHECK_MESSAGE(got[i] == doctest::Approx(want[i]).epsilon(tol), "element " << i);
    }
  }
}

constexpr int64_t kBig = (int64_t{1} << 53) + 1;  // not representable as a double
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("Add/Sub/Mul/Div: float values with numpy broadcasting") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = f32({3}, {10, 20, 40});
  Tensor y = run_op("Add", 14, {a, b});
  CHECK(y.shape() == Shape{2, 3});
  check_close(y, {11, 22, 43, 14, 25, 46});
  check_close(run_op("Sub", 14, {a, b}), {-9, -18, -37, -6, -15, -34});
  check_close(run_op("Mul", 7, {a, b}), {10, 40, 120, 40, 100, 240});
  check_close(run_op("Div", 13, {a, b}), {0.1, 0.1, 0.075, 0.4, 0.25, 0.15});
  // [2,1] with [1,3] broadcast both ways.
  Tensor z = run_op("Add", 14, {f32({2, 1}, {1, 2}), f32({1, 3}, {10, 20, 30})});
  CHECK(z.shape() == Shape{2, 3});
  check_close(z, {11, 21, 31, 12, 22, 32});
  // Float division by zero follows IEEE.
  check_close(run_op("Div", 14, {f32({3}, {1, -1, 0}), f32({1}, {0})}), {kInf, -kInf, kNaN});
  // float16 inputs stay float16.
  Tensor h = run_op("Add", 14, {typed(DType::float16, {2}, {1.5, 2}), typed(DType::float16, {2}, {0.25, 1})});
  CHECK(h.dtype() == DType::float16);
  check_close(h, {1.75, 3});
}

TEST_CASE("Integer arithmetic is exact in int64 and wraps like the type") {
  CHECK(run_op("Add", 14, {i64({1}, {kBig}), i64({1}, {1})}).to_i64() == std::vector<int64_t>{kBig + 1});
  CHECK(run_op("Sub", 14, {i64({1}, {kBig}), i64({1}, {2})}).to_i64() == std::vector<int64_t>{kBig - 2});
  CHECK(run_op("Mul", 14, {i64({2}, {kBig, 3037000499}), i64({2}, {1, 3037000499})}).to_i64() ==
        std::vector<int64_t>{kBig, 9223372030926249001});
  // int32 overflow wraps (as ONNX Runtime and numpy do).
  CHECK(run_op("Add", 14, {i32({1}, {2147483647}), i32({1}, {1})}).to_i64() == std::vector<int64_t>{-2147483648});
  // uint8 from opset 14.
  CHECK(run_op("Sub", 14, {typed(DType::uint8, {2}, {3, 200}), typed(DType::uint8, {2}, {5, 100})}).to_i64() ==
        std::vector<int64_t>{254, 100});
  // Integer Div truncates toward zero.
  CHECK(run_op("Div", 14, {i64({6}, {7, -7, 7, -7, 5, -5}), i64({6}, {2, 2, -2, -2, -1, -1})}).to_i64() ==
        std::vector<int64_t>{3, -3, -3, 3, -5, 5});
  CHECK(run_op("Div", 7, {i32({3}, {9, -9, 1}), i32({1}, {4})}).to_i64() == std::vector<int64_t>{2, -2, 0});
  CHECK(run_op("Div", 14, {i64({1}, {kBig}), i64({1}, {1})}).to_i64() == std::vector<int64_t>{kBig});
  // INT64_MIN / -1 does not trap: it wraps.
  const int64_t lo = std::numeric_limits<int64_t>::min();
  CHECK(run_op("Div", 14, {i64({1}, {lo}), i64({1}, {-1})}).to_i64() == std::vector<int64_t>{lo});
}

TEST_CASE("Integer division by zero is an Error, at run time and when folding constants") {
  const std::string msg = error_of("Div", 14, {i64({2}, {1, 2}), i64({2}, {1, 0})});
  CHECK(msg.find("division by zero") != std::string::npos);
  CHECK_THROWS_AS(run_op("Div", 14, {i32({1}, {1}), i32({1}, {0})}), Error);

  Graph g;
  g.set_opset(14);
  Value* a = g.add_constant("a", i64({1}, {5}));
  Value* b = g.add_constant("b", i64({1}, {0}));
  Value* y = g.add_value("y");
  g.add_node("Div", "div", {a, b}, {y});
  g.add_output(y);
  CHECK_THROWS_AS(ops::infer_graph(g), Error);
}

TEST_CASE("Binary arithmetic: type checks name both inputs; type sets follow the opset") {
  const std::string msg = error_of("Add", 14, {f32({1}, {1}), i64({1}, {1})});
  CHECK(msg.find("'A'") != std::string::npos);
  CHECK(msg.find("'B'") != std::string::npos);
  CHECK(msg.find("float32") != std::string::npos);
  CHECK(msg.find("int64") != std::string::npos);
  CHECK_THROWS_AS(run_op("Mul", 14, {i32({1}, {1}), i64({1}, {1})}), Error);
  // int8 from 14, bfloat16 from 13; bool never.
  const Tensor i8 = typed(DType::int8, {1}, {1});
  CHECK_THROWS_AS(run_op("Add", 13, {i8, i8}), Error);
  CHECK(run_op("Add", 14, {i8, i8}).to_i64() == std::vector<int64_t>{2});
  const Tensor bf = typed(DType::bfloat16, {1}, {1});
  CHECK_THROWS_AS(run_op("Mul", 12, {bf, bf}), Error);
  CHECK(run_op("Mul", 13, {bf, bf}).dtype() == DType::bfloat16);
  CHECK_THROWS_AS(run_op("Add", 14, {boolean({1}, {1}), boolean({1}, {1})}), Error);
  // Shapes that do not broadcast; wrong input count; an opset before 7.
  CHECK_THROWS_AS(run_op("Add", 14, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}), Error);
  CHECK_THROWS_AS(run_op("Add", 14, {f32({1}, {1})}), Error);
  // The legacy broadcast attribute of Add-6 is not an attribute of Add-7.
  CHECK_THROWS_AS(run_op("Add", 7, {f32({1}, {1}), f32({1}, {1})}, [](Node& n) { n.set_attr_int("broadcast", 1); }),
                  Error);
}

// ---- legacy forms: Add/Sub/Mul/Div 1 and 6, Pow 1 ---------------------------------

namespace {
Attrs legacy(int64_t broadcast, std::optional<int64_t> axis = std::nullopt) {
  return [broadcast, axis](Node& n) {
    n.set_attr_int("broadcast", broadcast);
    if (axis) n.set_attr_int("axis", *axis);
  };
}
}  // namespace

TEST_CASE("Legacy Add/Sub/Mul/Div (1, 6): broadcast=0 needs equal shapes; 1 aligns B at axis or suffix") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // broadcast=0 (the default): equal shapes, elementwise.
  check_close(run_op("Add", 6, {a, f32({2, 3}, {10, 20, 30, 40, 50, 60})}), {11, 22, 33, 44, 55, 66});
  check_close(run_op("Mul", 1, {a, a}), {1, 4, 9, 16, 25, 36});
  // Suffix matching: B [3] runs along A's last dim.
  Tensor y = run_op("Sub", 6, {a, f32({3}, {1, 2, 3})}, legacy(1));
  CHECK(y.shape() == Shape{2, 3});
  check_close(y, {0, 0, 0, 3, 3, 3});
  // axis=0: B [2] runs along A's first dim (numpy would align it with the last).
  check_close(run_op("Add", 6, {a, f32({2}, {10, 20})}, legacy(1, 0)), {11, 12, 13, 24, 25, 26});
  check_close(run_op("Div", 6, {a, f32({2}, {2, 4})}, legacy(1, 0)), {0.5, 1, 1.5, 1, 1.25, 1.5});
  // A [2,3,2], B [3] at axis 1 (per-channel): B becomes [3,1].
  const Tensor c = f32({2, 3, 2}, {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2});
  check_close(run_op("Mul", 6, {c, f32({3}, {1, 10, 100})}, legacy(1, 1)),
              {1, 1, 10, 10, 100, 100, 2, 2, 20, 20, 200, 200});
  // B [3,2] at axis 1 equals the suffix.
  check_close(run_op("Add", 6, {c, f32({3, 2}, {0, 1, 2, 3, 4, 5})}, legacy(1, 1)),
              {1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7});
  // B's 1-sized dims expand, as ONNX's opset-6 test data expects: [2,1] and [1,3] at axis 0 of [2,3].
  check_close(run_op("Add", 6, {a, f32({2, 1}, {10, 20})}, legacy(1, 0)), {11, 12, 13, 24, 25, 26});
  check_close(run_op("Add", 6, {a, f32({1, 3}, {10, 20, 30})}, legacy(1, 0)), {11, 22, 33, 14, 25, 36});
  // One-element B (a scalar, or [1,1]) broadcasts everywhere.
  check_close(run_op("Add", 6, {a, f32({}, {1})}, legacy(1)), {2, 3, 4, 5, 6, 7});
  check_close(run_op("Mul", 1, {a, f32({1, 1}, {2})}, legacy(1)), {2, 4, 6, 8, 10, 12});
  // Integers from 6, exact (Div truncates); opset 1 is floats only.
  CHECK(run_op("Div", 6, {i64({2, 2}, {7, -7, kBig, 9}), i64({2}, {2, 3})}, legacy(1, 0)).to_i64() ==
        std::vector<int64_t>{3, -3, kBig / 3, 3});
  CHECK(run_op("Add", 6, {i32({2}, {1, 2}), i32({2}, {3, 4})}).dtype() == DType::int32);
  CHECK_THROWS_AS(run_op("Add", 1, {i32({2}, {1, 2}), i32({2}, {3, 4})}), Error);
  CHECK_THROWS_AS(run_op("Add", 6, {typed(DType::bfloat16, {1}, {1}), typed(DType::bfloat16, {1}, {1})}), Error);
  // consumed_inputs is an opset-1 attribute only.
  const Attrs consumed = [](Node& n) { n.set_attr_ints("consumed_inputs", {0, 0}); };
  check_close(run_op("Sub", 1, {a, a}, consumed), {0, 0, 0, 0, 0, 0});
  CHECK_THROWS_AS(run_op("Sub", 6, {a, a}, consumed), Error);
}

TEST_CASE("Legacy Add/Sub/Mul/Div: shapes that do not fit are Errors naming the input or attribute") {
  const Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // broadcast=0 with unequal shapes, even numpy-broadcastable ones.
  std::string msg = error_of("Add", 6, {a, f32({3}, {1, 2, 3})});
  CHECK(msg.find("'B'") != std::string::npos);
  CHECK(msg.find("broadcast") != std::string::npos);
  CHECK_THROWS_AS(run_op("Mul", 1, {a, f32({1}, {2})}), Error);
  CHECK_THROWS_AS(run_op("Div", 6, {a, f32({2, 3, 1}, {1, 2, 3, 4, 5, 6})}, legacy(0)), Error);
  // B does not fit at the axis: [3] at axis 0 of [2,3]; [2] as a suffix of [2,3].
  msg = error_of("Add", 6, {a, f32({3}, {1, 2, 3})}, legacy(1, 0));
  CHECK(msg.find("'B'") != std::string::npos);
  CHECK(msg.find("axis 0") != std::string::npos);
  CHECK_THROWS_AS(run_op("Add", 6, {a, f32({2}, {1, 2})}, legacy(1)), Error);
  // B never expands A: A [2,1] with B [2,3].
  CHECK_THROWS_AS(run_op("Sub", 6, {f32({2, 1}, {1, 2}), a}, legacy(1)), Error);
  CHECK_THROWS_AS(run_op("Sub", 6, {f32({2, 1}, {1, 2}), f32({3}, {1, 2, 3})}, legacy(1, 1)), Error);
  // axis out of range (B would run past A's last dim), negative, B of higher rank.
  msg = error_of("Add", 6, {a, f32({3}, {1, 2, 3})}, legacy(1, 2));
  CHECK(msg.find("'axis'") != std::string::npos);
  CHECK_THROWS_AS(run_op("Add", 6, {a, f32({3}, {1, 2, 3})}, legacy(1, -1)), Error);
  CHECK_THROWS_AS(run_op("Add", 6, {f32({3}, {1, 2, 3}), a}, legacy(1)), Error);
  // 'broadcast' other than 0/1, or of the wrong kind.
  CHECK(error_of("Add", 6, {a, a}, legacy(2)).find("'broadcast'") != std::string::npos);
  CHECK_THROWS_AS(run_op("Add", 6, {a, a}, [](Node& n) { n.set_attr_string("broadcast", "yes"); }), Error);
  CHECK_THROWS_AS(run_op("Add", 6, {a, a}, [](Node& n) { n.set_attr_float("axis", 1.5); }), Error);
  // One type for A and B.
  CHECK_THROWS_AS(run_op("Add", 6, {a, i32({2, 3}, {1, 2, 3, 4, 5, 6})}), Error);
}

TEST_CASE("Legacy Pow (1): same broadcast rule, floats only") {
  check_close(run_op("Pow", 1, {f32({1, 2, 2}, {2, 3, 4, 5}), f32({1, 2, 2}, {2, 2, 0.5, 1})}), {4, 9, 2, 5});
  check_close(run_op("Pow", 6, {f32({2, 2}, {2, 3, 4, 5}), f32({2}, {2, 3})}, legacy(1, 0)), {4, 9, 64, 125});
  check_close(run_op("Pow", 1, {f32({2, 2}, {2, 3, 4, 5}), f32({2}, {2, 3})}, legacy(1)), {4, 27, 16, 125});
  CHECK_THROWS_AS(run_op("Pow", 6, {f32({2, 2}, {2, 3, 4, 5}), f32({2}, {2, 3})}), Error);
  CHECK_THROWS_AS(run_op("Pow", 1, {i64({1}, {2}), i64({1}, {2})}), Error);
  // Pow-1 never had consumed_inputs.
  const Attrs consumed = [](Node& n) { n.set_attr_ints("consumed_inputs", {0}); };
  CHECK_THROWS_AS(run_op("Pow", 1, {f32({1}, {2}), f32({1}, {2})}, consumed), Error);
}

TEST_CASE("Legacy forms: registered at 1 and 6, no fusion or layout facts") {
  const auto& r = ops::OpRegistry::instance();
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    REQUIRE_MESSAGE(r.find(op, 1), op);
    CHECK_MESSAGE(r.find(op, 5)->since == 1, op);
    CHECK_MESSAGE(r.find(op, 6)->since == 6, op);
    CHECK_MESSAGE(r.find(op, 7)->since == 7, op);
    CHECK_MESSAGE(r.find(op, 6)->fusion == ops::Fusion::none, op);
    CHECK_MESSAGE(r.find(op, 6)->layout == ops::Layout::unset, op);
    CHECK_MESSAGE(r.find(op, 6)->precision == ops::Precision::fp16, op);
    CHECK_MESSAGE(r.find(op, 6)->kernels == std::vector<std::string>{"elementwise"}, op);
  }
  CHECK(r.find("Pow", 6)->since == 1);
  CHECK(r.find("Pow", 6)->precision == ops::Precision::fp32_compute);
}

TEST_CASE("Pow: same types before 12, mixed base/exponent types from 12, exact integers") {
  check_close(run_op("Pow", 7, {f32({3}, {2, 4, -2}), f32({3}, {3, 0.5, 2})}), {8, 2, 4});
  check_close(run_op("Pow", 13, {f32({3}, {1, 2, 3}), f32({}, {2})}), {1, 4, 9});
  // Opset 7 needs one type; 12 lets the exponent differ, the output has the base's type.
  CHECK_THROWS_AS(run_op("Pow", 11, {f32({2}, {2, 3}), i64({2}, {2, 3})}), Error);
  Tensor fi = run_op("Pow", 12, {f32({2}, {2, 3}), i64({2}, {2, 3})});
  CHECK(fi.dtype() == DType::float32);
  check_close(fi, {4, 27});
  // Integer base, float exponent: computed in double, truncated to the base's type.
  Tensor ifl = run_op("Pow", 12, {i32({3}, {2, 3, 4}), f32({3}, {0.5, 1.5, 2})});
  CHECK(ifl.dtype() == DType::int32);
  CHECK(ifl.to_i64() == std::vector<int64_t>{1, 5, 16});
  // Integer powers are exact (3^39 needs 62 bits).
  CHECK(run_op("Pow", 15, {i64({2}, {3, -2}), i64({2}, {39, 3})}).to_i64() ==
        std::vector<int64_t>{4052555153018976267, -8});
  CHECK(run_op("Pow", 15, {i64({4}, {2, 1, -1, -1}), i64({4}, {-1, -5, -3, -2})}).to_i64() ==
        std::vector<int64_t>{0, 1, -1, 1});
  CHECK_THROWS_AS(run_op("Pow", 15, {i64({1}, {0}), i64({1}, {-1})}), Error);
  // Base of a type Pow does not take (int8 base), exponent of bool.
  CHECK_THROWS_AS(run_op("Pow", 15, {typed(DType::int8, {1}, {2}), i64({1}, {2})}), Error);
  CHECK_THROWS_AS(run_op("Pow", 15, {f32({1}, {2}), boolean({1}, {1})}), Error);
  // bfloat16 exponent only from 15.
  CHECK_THROWS_AS(run_op("Pow", 14, {f32({1}, {2}), typed(DType::bfloat16, {1}, {2})}), Error);
  check_close(run_op("Pow", 15, {f32({1}, {2}), typed(DType::bfloat16, {1}, {2})}), {4});
}

TEST_CASE("Unary math ops") {
  check_close(run_op("Sqrt", 13, {f32({3}, {4, 2, -1})}), {2, 1.41421356, kNaN});
  check_close(run_op("Exp", 13, {f32({3}, {0, 1, -1})}), {1, 2.718281828, 0.367879441});
  check_close(run_op("Log", 13, {f32({3}, {1, 2.718281828f, 0})}), {0, 1, -kInf});
  check_close(run_op("Reciprocal", 13, {f32({3}, {2, -4, 0})}), {0.5, -0.25, kInf});
  check_close(run_op("Floor", 13, {f32({4}, {1.5, -1.5, 2, -0.2f})}), {1, -2, 2, -1});
  check_close(run_op("Ceil", 13, {f32({4}, {1.5, -1.5, 2, -0.2f})}), {2, -1, 2, -0});
  check_close(run_op("Erf", 13, {f32({3}, {0, 1, -0.5})}), {0, 0.842700793, -0.520499878});
  check_close(run_op("Neg", 13, {f32({2}, {1.5, -2})}), {-1.5, 2});
  check_close(run_op("Abs", 13, {f32({2}, {1.5, -2})}), {1.5, 2});
  // Neg/Abs on integers are exact.
  CHECK(run_op("Neg", 13, {i64({2}, {kBig, -5})}).to_i64() == std::vector<int64_t>{-kBig, 5});
  CHECK(run_op("Abs", 13, {i64({2}, {-kBig, 5})}).to_i64() == std::vector<int64_t>{kBig, 5});
  CHECK(run_op("Abs", 6, {typed(DType::int8, {2}, {-7, 7})}).to_i64() == std::vector<int64_t>{7, 7});
  // Types: Neg takes no unsigned type; Sqrt no integers; bfloat16 from 13.
  CHECK_THROWS_AS(run_op("Neg", 13, {typed(DType::uint8, {1}, {1})}), Error);
  CHECK_THROWS_AS(run_op("Sqrt", 13, {i64({1}, {4})}), Error);
  CHECK_THROWS_AS(run_op("Exp", 12, {typed(DType::bfloat16, {1}, {0})}), Error);
  check_close(run_op("Exp", 13, {typed(DType::bfloat16, {1}, {0})}), {1});
  // Erf takes integers (the truncated erf).
  CHECK(run_op("Erf", 13, {i32({2}, {0, 9})}).to_i64() == std::vector<int64_t>{0, 1});
  // Unary ops take one input and no attributes.
  CHECK_THROWS_AS(run_op("Exp", 13, {f32({1}, {0}), f32({1}, {0})}), Error);
  CHECK_THROWS_AS(run_op("Exp", 13, {f32({1}, {0})}, [](Node& n) { n.set_attr_float("alpha", 1); }), Error);
  CHECK_THROWS_AS(run_op("Erf", 8, {f32({1}, {0})}), Error);
}

TEST_CASE("Min/Max/Sum/Mean: variadic, broadcasting from opset 8") {
  const Tensor a = f32({2, 2}, {1, 5, 3, -1});
  const Tensor b = f32({2}, {2, 4});
  const Tensor c = f32({1}, {0});
  Tensor mx = run_op("Max", 8, {a, b, c});
  CHECK(mx.shape() == Shape{2, 2});
  check_close(mx, {2, 5, 3, 4});
  check_close(run_op("Min", 13, {a, b, c}), {0, 0, 0, -1});
  check_close(run_op("Sum", 8, {a, b, c}), {3, 9, 5, 3});
  check_close(run_op("Mean", 13, {a, b, c}), {1, 3, 5.0 / 3, 1});
  check_close(run_op("Sum", 13, {a}), {1, 5, 3, -1});
  check_close(run_op("Mean", 13, {a}), {1, 5, 3, -1});
  // NaN propagates through Min/Max.
  check_close(run_op("Max", 13, {f32({2}, {NAN, 1}), f32({2}, {1, NAN})}), {kNaN, kNaN});
  // Opset 6: one shape for all inputs.
  check_close(run_op("Max", 6, {a, a}), {1, 5, 3, -1});
  const std::string msg = error_of("Sum", 7, {a, b});
  CHECK(msg.find("does not broadcast") != std::string::npos);
  // Integers from 12 (exact), not before; Sum/Mean never.
  CHECK_THROWS_AS(run_op("Max", 11, {i64({1}, {1}), i64({1}, {2})}), Error);
  CHECK(run_op("Max", 12, {i64({2}, {kBig, 0}), i64({2}, {kBig - 1, -3})}).to_i64() ==
        std::vector<int64_t>{kBig, 0});
  CHECK(run_op("Min", 13, {i64({2}, {kBig, 0}), i64({1}, {kBig - 1})}).to_i64() ==
        std::vector<int64_t>{kBig - 1, 0});
  CHECK_THROWS_AS(run_op("Sum", 13, {i64({1}, {1}), i64({1}, {2})}), Error);
  // One type for all inputs; at least one input; no input may be omitted.
  CHECK_THROWS_AS(run_op("Max", 13, {a, typed(DType::float16, {1}, {0})}), Error);
  CHECK_THROWS_AS(run_op("Sum", 13, {}), Error);
  CHECK_THROWS_AS(run_op("Sum", 13, {a, Tensor(), b}), Error);
  CHECK_THROWS_AS(run_op("Min", 13, {a, f32({3}, {1, 2, 3})}), Error);
}

TEST_CASE("Where: broadcast of three, exact for every type") {
  const Tensor cond = boolean({2, 1}, {1, 0});
  Tensor y = run_op("Where", 9, {cond, f32({1, 3}, {1, 2, 3}), f32({}, {-1})});
  CHECK(y.shape() == Shape{2, 3});
  check_close(y, {1, 2, 3, -1, -1, -1});
  Tensor z = run_op("Where", 16, {boolean({3}, {1, 0, 1}), i64({3}, {kBig, 2, 3}), i64({1}, {-kBig})});
  CHECK(z.to_i64() == std::vector<int64_t>{kBig, -kBig, 3});
  CHECK(run_op("Where", 9, {boolean({2}, {0, 1}), boolean({2}, {1, 1}), boolean({2}, {0, 0})}).to_i64() ==
        std::vector<int64_t>{0, 1});
  // Condition must be bool; X and Y of one type; bfloat16 from 16; shapes must broadcast.
  CHECK_THROWS_AS(run_op("Where", 9, {f32({1}, {1}), f32({1}, {1}), f32({1}, {2})}), Error);
  const std::string msg = error_of("Where", 9, {boolean({1}, {1}), f32({1}, {1}), i64({1}, {2})});
  CHECK(msg.find("'B'") != std::string::npos);
  CHECK(msg.find("'C'") != std::string::npos);
  const Tensor bf = typed(DType::bfloat16, {1}, {1});
  CHECK_THROWS_AS(run_op("Where", 15, {boolean({1}, {1}), bf, bf}), Error);
  CHECK(run_op("Where", 16, {boolean({1}, {1}), bf, bf}).dtype() == DType::bfloat16);
  CHECK_THROWS_AS(run_op("Where", 9, {boolean({2}, {1, 0}), f32({3}, {1, 2, 3}), f32({1}, {0})}), Error);
  CHECK_THROWS_AS(run_op("Where", 8, {boolean({1}, {1}), f32({1}, {1}), f32({1}, {2})}), Error);
}

TEST_CASE("Cast: truncation toward zero, float to bool is x != 0, unsupported 'to' named") {
  auto to = [](int64_t code) { return [code](Node& n) { n.set_attr_int("to", code); }; };
  Tensor t = run_op("Cast", 13, {f32({5}, {-1.7f, 1.7f, 2.5f, -0.5f, 100.9f})}, to(6));
  CHECK(t.dtype() == DType::int32);
  CHECK(t.to_i64() == std::vector<int64_t>{-1, 1, 2, 0, 100});
  CHECK(run_op("Cast", 9, {f32({3}, {-3.9f, 0.9f, 7})}, to(7)).to_i64() == std::vector<int64_t>{-3, 0, 7});
  Tensor b = run_op("Cast", 13, {f32({5}, {0, -0.0f, 0.5f, -2, NAN})}, to(9));
  CHECK(b.dtype() == DType::boolean);
  CHECK(b.to_i64() == std::vector<int64_t>{0, 0, 1, 1, 1});
  check_close(run_op("Cast", 13, {boolean({2}, {1, 0})}, to(1)), {1, 0});
  // int64 -> int32 wraps; int -> bool is x != 0; float32 -> float16 rounds to nearest.
  CHECK(run_op("Cast", 13, {i64({2}, {int64_t{1} << 32 | 5, -1})}, to(6)).to_i64() == std::vector<int64_t>{5, -1});
  CHECK(run_op("Cast", 13, {i64({3}, {0, -3, kBig})}, to(9)).to_i64() == std::vector<int64_t>{0, 1, 1});
  Tensor h = run_op("Cast", 13, {f32({2}, {1.0f + 1.0f / 2048, 65520})}, to(10));
  CHECK(h.dtype() == DType::float16);
  check_close(h, {1, kInf});
  CHECK(run_op("Cast", 21, {i64({1}, {kBig})}, to(7)).to_i64() == std::vector<int64_t>{kBig});
  // 'to' not supported by modelc: an Error naming 'to' and the ONNX type.
  const std::string msg = error_of("Cast", 13, {f32({1}, {1})}, to(14));
  CHECK(msg.find("'to'") != std::string::npos);
  CHECK(msg.find("COMPLEX64") != std::string::npos);
  CHECK(error_of("Cast", 13, {f32({1}, {1})}, to(8)).find("STRING") != std::string::npos);
  CHECK_THROWS_AS(run_op("Cast", 13, {f32({1}, {1})}, to(-4)), Error);
  CHECK_THROWS_AS(run_op("Cast", 13, {f32({1}, {1})}, to(123456789012)), Error);
  CHECK(error_of("Cast", 13, {f32({1}, {1})}).find("'to'") != std::string::npos);  // missing
  CHECK_THROWS_AS(run_op("Cast", 13, {f32({1}, {1})}, [](Node& n) { n.set_attr_float("to", 1); }), Error);
  // bfloat16 from 13.
  CHECK_THROWS_AS(run_op("Cast", 12, {f32({1}, {1})}, to(16)), Error);
  CHECK(run_op("Cast", 13, {f32({1}, {1})}, to(16)).dtype() == DType::bfloat16);
  // 'saturate' from 19 (no effect without float8), unknown before.
  auto sat = [](Node& n) {
    n.set_attr_int("to", 1);
    n.set_attr_int("saturate", 0);
  };
  check_close(run_op("Cast", 19, {i32({1}, {3})}, sat), {3});
  CHECK_THROWS_AS(run_op("Cast", 13, {i32({1}, {3})}, sat), Error);
}

TEST_CASE("CastLike takes the type of its second input") {
  Tensor y = run_op("CastLike", 15, {f32({2}, {-2.5f, 3.5f}), i64({}, {0})});
  CHECK(y.dtype() == DType::int64);
  CHECK(y.shape() == Shape{2});
  CHECK(y.to_i64() == std::vector<int64_t>{-2, 3});
  CHECK_THROWS_AS(run_op("CastLike", 14, {f32({1}, {1}), i64({}, {0})}), Error);
}

TEST_CASE("Comparisons: bool outputs, exact integers, broadcasting, opset type sets") {
  Tensor eq = run_op("Equal", 11, {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 4})});
  CHECK(eq.dtype() == DType::boolean);
  CHECK(eq.shape() == Shape{2, 2});
  CHECK(eq.to_i64() == std::vector<int64_t>{1, 0, 0, 1});
  // int64 values a double cannot tell apart.
  CHECK(run_op("Equal", 7, {i64({2}, {kBig, 3}), i64({2}, {kBig - 1, 3})}).to_i64() == std::vector<int64_t>{0, 1});
  CHECK(run_op("Less", 13, {i64({1}, {kBig - 1}), i64({1}, {kBig})}).to_i64() == std::vector<int64_t>{1});
  CHECK(run_op("Equal", 7, {boolean({2}, {1, 0}), boolean({2}, {1, 1})}).to_i64() == std::vector<int64_t>{1, 0});
  const Tensor x = f32({4}, {1, 2, 3, NAN});
  const Tensor two = f32({}, {2});
  CHECK(run_op("Less", 7, {x, two}).to_i64() == std::vector<int64_t>{1, 0, 0, 0});
  CHECK(run_op("Greater", 7, {x, two}).to_i64() == std::vector<int64_t>{0, 0, 1, 0});
  CHECK(run_op("LessOrEqual", 12, {x, two}).to_i64() == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(run_op("GreaterOrEqual", 16, {x, two}).to_i64() == std::vector<int64_t>{0, 1, 1, 0});
  CHECK(run_op("Equal", 13, {x, x}).to_i64() == std::vector<int64_t>{1, 1, 1, 0});
  // Type sets: Equal on floats from 11; Less on integers from 9; *OrEqual from 12.
  CHECK_THROWS_AS(run_op("Equal", 10, {x, x}), Error);
  CHECK_THROWS_AS(run_op("Less", 8, {i64({1}, {1}), i64({1}, {2})}), Error);
  CHECK(run_op("Greater", 9, {i64({1}, {3}), i64({1}, {2})}).to_i64() == std::vector<int64_t>{1});
  CHECK_THROWS_AS(run_op("LessOrEqual", 11, {x, x}), Error);
  CHECK_THROWS_AS(run_op("Less", 13, {boolean({1}, {1}), boolean({1}, {0})}), Error);
  const std::string msg = error_of("Greater", 13, {x, i64({1}, {2})});
  CHECK(msg.find("'A'") != std::string::npos);
  CHECK(msg.find("'B'") != std::string::npos);
}

TEST_CASE("Not/And/Or/Xor on bool with broadcasting") {
  const Tensor a = boolean({2, 2}, {0, 0, 1, 1});
  const Tensor b = boolean({2}, {0, 1});
  CHECK(run_op("Not", 1, {b}).to_i64() == std::vector<int64_t>{1, 0});
  CHECK(run_op("And", 7, {a, b}).to_i64() == std::vector<int64_t>{0, 0, 0, 1});
  CHECK(run_op("Or", 7, {a, b}).to_i64() == std::vector<int64_t>{0, 1, 1, 1});
  CHECK(run_op("Xor", 7, {a, b}).to_i64() == std::vector<int64_t>{0, 1, 1, 0});
  CHECK(run_op("Or", 7, {a, b}).dtype() == DType::boolean);
  CHECK_THROWS_AS(run_op("And", 7, {f32({1}, {1}), f32({1}, {0})}), Error);
  CHECK_THROWS_AS(run_op("Not", 13, {i32({1}, {1})}), Error);
  CHECK_THROWS_AS(run_op("Or", 7, {boolean({3}, {1, 0, 1}), boolean({2}, {1, 0})}), Error);
}

TEST_CASE("Constant inputs are folded during shape inference") {
  Graph g;
  g.set_opset(14);
  Value* a = g.add_constant("a", i64({2}, {2, 3}));
  Value* b = g.add_constant("b", i64({}, {4}));
  Value* y = g.add_value("y");
  g.add_node("Mul", "mul", {a, b}, {y});
  Value* z = g.add_value("z");
  g.add_node("Cast", "cast", {y}, {z})->set_attr_int("to", 1);
  g.add_output(z);
  ops::infer_graph(g);
  REQUIRE(y->is_constant());
  CHECK(y->constant().to_i64() == std::vector<int64_t>{8, 12});
  REQUIRE(z->is_constant());
  CHECK(z->dtype() == DType::float32);
  check_close(z->constant(), {8, 12});
}

TEST_CASE("Elementwise facts: precision, fusion, layout, kernel, family, FLOPs") {
  const auto& r = ops::OpRegistry::instance();
  const ops::OpDef* add = r.find("Add", 21);
  REQUIRE(add);
  CHECK(add->precision == ops::Precision::fp16);
  CHECK(add->fusion == ops::Fusion::epilogue_binary);
  CHECK(add->layout == ops::Layout::agnostic);
  CHECK(add->kernels == std::vector<std::string>{"elementwise"});
  CHECK(add->family == "elementwise");
  for (const char* op : {"Exp", "Log", "Pow", "Erf"}) {
    REQUIRE(r.find(op, 21));
    CHECK_MESSAGE(r.find(op, 21)->precision == ops::Precision::fp32_compute, op);
  }
  for (const char* op : {"Equal", "Less", "Greater", "Not", "And", "Cast"}) {
    REQUIRE(r.find(op, 21));
    CHECK_MESSAGE(r.find(op, 21)->precision == ops::Precision::never, op);
  }
  for (const char* op : {"Sub", "Mul", "Div"}) CHECK(r.find(op, 21)->fusion == ops::Fusion::epilogue_binary);
  CHECK(r.find("Cast", 18)->since == 6);
  CHECK(r.find("Cast", 19)->since == 19);
  CHECK(r.find("Max", 7)->since == 6);
  CHECK(r.find("Where", 8) == nullptr);

  Graph g;
  g.set_opset(14);
  Value* a = g.add_value("a");
  a->set_type(DType::float32, {2, 3});
  g.add_input(a);
  Value* y = g.add_value("y");
  Node* n = g.add_node("Add", "add", {a, a}, {y});
  Value* z = g.add_value("z");
  Node* s = g.add_node("Sum", "sum", {a, a, y}, {z});
  g.add_output(z);
  ops::infer_graph(g);
  CHECK(add->flops(*n) == 6);
  CHECK(r.find("Sum", 14)->flops(*s) == 12);
}

TEST_CASE("legacy_numpy_shape: B's numpy-form shape for the forms before opset 7, none for the others") {
  Value a("A"), b("B");
  a.set_type(DType::float32, {2, 3, 4});
  b.set_type(DType::float32, {3});
  Node add("Add", "add", 6);
  add.add_input(&a);
  add.add_input(&b);
  CHECK_THROWS_WITH_AS(ops::legacy_numpy_shape(add, {2, 3, 4}, {3}), doctest::Contains("needs equal shapes"), Error);
  CHECK(ops::legacy_numpy_shape(add, {2, 3, 4}, {2, 3, 4}) == Shape{2, 3, 4});  // broadcast=0: B as it is
  add.set_attr_int("broadcast", 1);
  CHECK(ops::legacy_numpy_shape(add, {2, 3, 4}, {4}) == Shape{4});  // suffix
  CHECK(ops::legacy_numpy_shape(add, {2, 3, 4}, {1}) == Shape{});   // one element
  add.set_attr_int("axis", 1);
  CHECK(ops::legacy_numpy_shape(add, {2, 3, 4}, {3}) == Shape{3, 1});
  CHECK_THROWS_WITH_AS(ops::legacy_numpy_shape(add, {2, 3, 4}, {4}), doctest::Contains("node 'add'"), Error);

  Node pow1("Pow", "pow", 1);
  pow1.add_input(&a);
  pow1.add_input(&b);
  pow1.set_attr_int("broadcast", 1);
  pow1.set_attr_int("axis", 0);
  CHECK(ops::legacy_numpy_shape(pow1, {2, 3}, {2}) == Shape{2, 1});

  Node prelu("PRelu", "prelu", 6);
  prelu.add_input(&a);
  prelu.add_input(&b);
  CHECK(ops::legacy_numpy_shape(prelu, {2, 3, 4}, {3}) == Shape{3, 1});  // one slope per channel
  CHECK(ops::legacy_numpy_shape(prelu, {2, 3, 4}, {1}) == Shape{});       // one shared slope
  CHECK_THROWS_WITH_AS(ops::legacy_numpy_shape(prelu, {2, 3, 4}, {4}), doctest::Contains("one value per channel"),
                       Error);

  CHECK_FALSE(ops::legacy_numpy_shape(Node("Add", "add7", 7), {2, 3}, {3}));  // numpy broadcasting
  CHECK_FALSE(ops::legacy_numpy_shape(Node("PRelu", "prelu7", 7), {2, 3}, {3}));
  CHECK_FALSE(ops::legacy_numpy_shape(Node("Equal", "eq", 1), {2, 3}, {3}));
}

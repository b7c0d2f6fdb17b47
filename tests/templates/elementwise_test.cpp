// The elementwise templates (templates/elementwise.cuh) on the host emulation against the reference
// interpreter: broadcasting through strides, every op family (math, activations, arithmetic with
// integer semantics, comparisons, logic, variadic, Where, Cast, Clip, PRelu, BatchNormalization),
// float16/bfloat16/int64/bool, strided outputs and the grid-stride loop.
#include <limits>

#include "tests/templates/elementwise_harness.h"

using namespace ew_test;
using mc::ew::Operand;
using mc::ix::bf16;
using mc::ix::Dims;

namespace {

// One float32 unary op over a 2x3x4 tensor, values in [lo, hi).
template <class Op>
void unary_f32(const std::string& op, int opset, Op functor = Op{}, double lo = -3, double hi = 3,
               std::vector<std::pair<std::string, double>> attrs = {}) {
  CAPTURE(op);
  const Tensor x = random_tensor(DType::float32, {2, 3, 4}, 7, lo, hi);
  OneNode c(op, opset, {x});
  for (const auto& [name, value] : attrs) c.n->set_attr_float(name, value);
  const Tensor want = c.reference1();
  Tensor got = like(want);
  using F = Operand<float, Dims<1>>;
  run_ew<Op, Dims<24>, F, F>(got, {&x}, functor);
  check_close(got, want);
}

}  // namespace

TEST_CASE("elementwise: index helpers") {
  using S = Dims<2, 3, 4>;
  static_assert(S::rank == 3 && S::numel == 24 && S::at(1) == 3);
  static_assert(Dims<>::numel == 1 && Dims<>::rank == 0);
  static_assert(mc::ix::inner_size<S>(0) == 12 && mc::ix::inner_size<S>(2) == 1);
  static_assert(mc::ix::extent<S, Dims<0, -4, 1>>() == 12);
  static_assert(std::is_same_v<mc::ix::index_t<S, Dims<12, 4, 1>>, int32_t>);
  static_assert(std::is_same_v<mc::ix::index_t<Dims<3, int64_t{1} << 30>, Dims<int64_t{1} << 30, 1>>, int64_t>);
  // offset() is C order over the shape, with the given strides.
  CHECK(mc::ix::offset<S, Dims<12, 4, 1>>(23) == 23);
  CHECK(mc::ix::offset<S, Dims<1, 2, 6>>(23) == 1 + 2 * 2 + 3 * 6);
  CHECK(mc::ix::offset<S, Dims<0, -4, 1>>(13) == -4 * 0 + 1);
  CHECK(mc::ix::offset<Dims<>, Dims<>>(0) == 0);
  CHECK(mc::ix::coord<S, 1>(23) == 2);
  CHECK(mc::ix::grid_for(0) == 1);
  CHECK(mc::ix::grid_for(257) == 2);
  CHECK(mc::ix::grid_for(int64_t{1} << 40) == 4096);
}

TEST_CASE("elementwise: Add broadcasts through zero strides") {
  const Tensor a = random_tensor(DType::float32, {2, 3, 4}, 1);
  const Tensor b = random_tensor(DType::float32, {3, 1}, 2);
  OneNode c("Add", 14, {a, b});
  const Tensor want = c.reference1();
  Tensor got = like(want);
  run_ew<mc::ew::Add, Dims<2, 3, 4>, Operand<float, Dims<12, 4, 1>>, Operand<float, Dims<12, 4, 1>>,
         Operand<float, Dims<0, 1, 0>>>(got, {&a, &b});
  check_close(got, want);
}

TEST_CASE("elementwise: a strided (transposed) output and a scalar operand") {
  const Tensor a = random_tensor(DType::float32, {3, 4}, 3);
  const Tensor s = f32({}, {0.5f});
  OneNode c("Mul", 14, {a, s});
  const Tensor want = c.reference1();  // 3x4
  Tensor got(DType::float32, {4, 3});  // y written transposed: element (i, j) at j * 3 + i
  run_ew<mc::ew::Mul, Dims<3, 4>, Operand<float, Dims<1, 3>>, Operand<float, Dims<4, 1>>, Operand<float, Dims<0, 0>>>(
      got, {&a, &s});
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) CHECK(got.f64_at(j * 3 + i) == want.f64_at(i * 4 + j));
  }
}

TEST_CASE("elementwise: the grid-stride loop covers more elements than one launch has threads") {
  constexpr int64_t n = 4096 * 256 + 1000;
  const Tensor a = random_tensor(DType::float32, {n}, 4);
  const Tensor b = random_tensor(DType::float32, {1}, 5);
  OneNode c("Sub", 14, {a, b});
  const Tensor want = c.reference1();
  Tensor got = like(want);
  run_ew<mc::ew::Sub, Dims<n>, Operand<float, Dims<1>>, Operand<float, Dims<1>>, Operand<float, Dims<0>>>(got,
                                                                                                          {&a, &b});
  check_close(got, want);
}

TEST_CASE("elementwise: integer arithmetic wraps and divides toward zero") {
  SUBCASE("int64 Add/Sub/Mul wrap around") {
    const int64_t big = std::numeric_limits<int64_t>::max();
    const Tensor a = i64({4}, {big, -big - 1, 7, -9});
    const Tensor b = i64({4}, {1, -1, -3, big});
    using I = Operand<int64_t, Dims<1>>;
    for (const char* op : {"Add", "Sub", "Mul"}) {
      CAPTURE(op);
      OneNode c(op, 14, {a, b});
      const Tensor want = c.reference1();
      Tensor got = like(want);
      if (std::string(op) == "Add") run_ew<mc::ew::Add, Dims<4>, I, I, I>(got, {&a, &b});
      if (std::string(op) == "Sub") run_ew<mc::ew::Sub, Dims<4>, I, I, I>(got, {&a, &b});
      if (std::string(op) == "Mul") run_ew<mc::ew::Mul, Dims<4>, I, I, I>(got, {&a, &b});
      check_bits(got, want);
    }
  }
  SUBCASE("int8 Mul wraps in the element type") {
    const Tensor a = Tensor::from_i64(DType::int8, {4}, {100, -100, 127, -128});
    const Tensor b = Tensor::from_i64(DType::int8, {4}, {3, 3, 127, -1});
    OneNode c("Mul", 14, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using I = Operand<int8_t, Dims<1>>;
    run_ew<mc::ew::Mul, Dims<4>, I, I, I>(got, {&a, &b});
    check_bits(got, want);
  }
  SUBCASE("int32 Div truncates toward zero, broadcasting the divisor") {
    const Tensor a = Tensor::from_i64(DType::int32, {2, 3}, {7, -7, 7, -7, 0, INT32_MIN});
    const Tensor b = Tensor::from_i64(DType::int32, {3}, {2, 2, -2});
    OneNode c("Div", 14, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    run_ew<mc::ew::Div, Dims<2, 3>, Operand<int32_t, Dims<3, 1>>, Operand<int32_t, Dims<3, 1>>,
           Operand<int32_t, Dims<0, 1>>>(got, {&a, &b});
    check_bits(got, want);
  }
  SUBCASE("uint8 Sub wraps below zero") {
    const Tensor a = Tensor::from_i64(DType::uint8, {3}, {1, 200, 0});
    const Tensor b = Tensor::from_i64(DType::uint8, {3}, {2, 100, 255});
    OneNode c("Sub", 14, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using U = Operand<uint8_t, Dims<1>>;
    run_ew<mc::ew::Sub, Dims<3>, U, U, U>(got, {&a, &b});
    check_bits(got, want);
  }
}

TEST_CASE("elementwise: Pow on every pairing of float and integer base and exponent") {
  SUBCASE("float ^ float") {
    const Tensor a = random_tensor(DType::float32, {6}, 8, 0.1, 3);
    const Tensor b = random_tensor(DType::float32, {6}, 9, -2, 2);
    OneNode c("Pow", 15, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using F = Operand<float, Dims<1>>;
    run_ew<mc::ew::Pow, Dims<6>, F, F, F>(got, {&a, &b});
    check_close(got, want);
  }
  SUBCASE("float ^ int64") {
    const Tensor a = f32({5}, {2.0f, -1.5f, 0.5f, 3.0f, -2.0f});
    const Tensor b = i64({5}, {3, 2, -2, 0, 5});
    OneNode c("Pow", 15, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    run_ew<mc::ew::Pow, Dims<5>, Operand<float, Dims<1>>, Operand<float, Dims<1>>, Operand<int64_t, Dims<1>>>(got,
                                                                                                              {&a, &b});
    check_close(got, want);
  }
  SUBCASE("int64 ^ int64, negative exponents included") {
    const Tensor a = i64({7}, {2, -3, 1, -1, -1, 5, 3});
    const Tensor b = i64({7}, {10, 3, -4, -3, -2, -1, 41});
    OneNode c("Pow", 15, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using I = Operand<int64_t, Dims<1>>;
    run_ew<mc::ew::Pow, Dims<7>, I, I, I>(got, {&a, &b});
    check_bits(got, want);
  }
  SUBCASE("int32 ^ float truncates") {
    const Tensor a = Tensor::from_i64(DType::int32, {4}, {2, 9, 10, -8});
    const Tensor b = f32({4}, {0.5f, 0.5f, 1.5f, 2.0f});
    OneNode c("Pow", 15, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    run_ew<mc::ew::Pow, Dims<4>, Operand<int32_t, Dims<1>>, Operand<int32_t, Dims<1>>, Operand<float, Dims<1>>>(
        got, {&a, &b});
    check_bits(got, want);
  }
}

TEST_CASE("elementwise: unary math") {
  unary_f32<mc::ew::Neg>("Neg", 13);
  unary_f32<mc::ew::Abs>("Abs", 13);
  unary_f32<mc::ew::Sqrt>("Sqrt", 13, {}, 0, 5);
  unary_f32<mc::ew::Sqrt>("Sqrt", 13, {}, -1, 0);  // NaN
  unary_f32<mc::ew::Exp>("Exp", 13);
  unary_f32<mc::ew::Log>("Log", 13, {}, 0.01, 5);
  unary_f32<mc::ew::Reciprocal>("Reciprocal", 13, {}, 0.5, 3);
  unary_f32<mc::ew::Floor>("Floor", 13);
  unary_f32<mc::ew::Ceil>("Ceil", 13);
  unary_f32<mc::ew::Erf>("Erf", 13);
  SUBCASE("integer Neg, Abs, Erf, Relu") {
    const Tensor x = Tensor::from_i64(DType::int8, {5}, {-128, -3, 0, 2, 127});
    using I = Operand<int8_t, Dims<1>>;
    for (const char* op : {"Neg", "Abs", "Erf", "Relu"}) {
      CAPTURE(op);
      OneNode c(op, 14, {x});
      const Tensor want = c.reference1();
      Tensor got = like(want);
      const std::string o = op;
      if (o == "Neg") run_ew<mc::ew::Neg, Dims<5>, I, I>(got, {&x});
      if (o == "Abs") run_ew<mc::ew::Abs, Dims<5>, I, I>(got, {&x});
      if (o == "Erf") run_ew<mc::ew::Erf, Dims<5>, I, I>(got, {&x});
      if (o == "Relu") run_ew<mc::ew::Relu, Dims<5>, I, I>(got, {&x});
      check_bits(got, want);
    }
  }
  SUBCASE("float16 Exp rounds to half") {
    const Tensor x = random_tensor(DType::float16, {8}, 10, -4, 4);
    OneNode c("Exp", 13, {x});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using H = Operand<__half, Dims<1>>;
    run_ew<mc::ew::Exp, Dims<8>, H, H>(got, {&x});
    check_close(got, want, 1e-3, 1e-5);
  }
  SUBCASE("bfloat16 Sqrt rounds to bfloat16") {
    const Tensor x = random_tensor(DType::bfloat16, {8}, 11, 0, 100);
    OneNode c("Sqrt", 13, {x});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using B = Operand<bf16, Dims<1>>;
    run_ew<mc::ew::Sqrt, Dims<8>, B, B>(got, {&x});
    check_close(got, want, 1e-2, 1e-5);
  }
}

TEST_CASE("elementwise: activations") {
  unary_f32<mc::ew::Relu>("Relu", 14);
  unary_f32<mc::ew::LeakyRelu>("LeakyRelu", 16, {0.1f}, -3, 3, {{"alpha", 0.1}});
  unary_f32<mc::ew::Elu>("Elu", 6, {0.7f}, -3, 3, {{"alpha", 0.7}});
  unary_f32<mc::ew::Selu>("Selu", 6, {1.5f, 2.0f}, -3, 3, {{"alpha", 1.5}, {"gamma", 2.0}});
  unary_f32<mc::ew::Sigmoid>("Sigmoid", 13, {}, -30, 30);
  unary_f32<mc::ew::HardSigmoid>("HardSigmoid", 6, {0.25f, 0.4f}, -5, 5, {{"alpha", 0.25}, {"beta", 0.4}});
  unary_f32<mc::ew::HardSwish>("HardSwish", 14, {}, -5, 5);
  unary_f32<mc::ew::Tanh>("Tanh", 13);
  unary_f32<mc::ew::Softplus>("Softplus", 1, {}, -20, 20);
  unary_f32<mc::ew::Clip<float, true, true>>("Clip", 6, {-0.5f, 0.75f}, -3, 3, {{"min", -0.5}, {"max", 0.75}});
  unary_f32<mc::ew::Clip<float, false, true>>("Clip", 6, {0.0f, 0.75f}, -3, 3, {{"max", 0.75}});
  SUBCASE("Clip 13 with constant integer bounds") {
    const Tensor x = i64({5}, {-9, -1, 0, 4, 99});
    OneNode c("Clip", 13, {x, i64({}, {-2}), i64({}, {5})}, {1, 2});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using I = Operand<int64_t, Dims<1>>;
    run_ew<mc::ew::Clip<int64_t, true, true>, Dims<5>, I, I>(got, {&x}, {-2, 5});
    check_bits(got, want);
  }
  SUBCASE("Clip 13 with a bound computed at run time (only max), infinities kept below") {
    const Tensor x = f32({4}, {-std::numeric_limits<float>::infinity(), -1, 2, std::numeric_limits<float>::infinity()});
    const Tensor hi = f32({}, {1.5f});
    const Tensor none;
    OneNode c("Clip", 13, {x, none, hi});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    run_ew<mc::ew::ClipInputs<false, true>, Dims<4>, Operand<float, Dims<1>>, Operand<float, Dims<1>>,
           Operand<float, Dims<0>>>(got, {&x, &hi});
    check_close(got, want);
  }
  SUBCASE("PRelu with a per-channel slope") {
    const Tensor x = random_tensor(DType::float32, {2, 3, 2, 2}, 12);
    const Tensor slope = random_tensor(DType::float32, {3, 1, 1}, 13);
    OneNode c("PRelu", 16, {x, slope});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    // Collapsed: [2, 3, 4] with the slope varying along dim 1 only.
    run_ew<mc::ew::PRelu, Dims<2, 3, 4>, Operand<float, Dims<12, 4, 1>>, Operand<float, Dims<12, 4, 1>>,
           Operand<float, Dims<0, 1, 0>>>(got, {&x, &slope});
    check_close(got, want);
  }
}

TEST_CASE("elementwise: comparisons and logic give bool") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = f32({2, 3}, {1, 2, nan, -1, 5, 0});
  const Tensor b = f32({3}, {2, 2, 1});
  using Y = Operand<bool, Dims<3, 1>>;
  using A = Operand<float, Dims<3, 1>>;
  using B = Operand<float, Dims<0, 1>>;
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    CAPTURE(op);
    OneNode c(op, 16, {a, b});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    const std::string o = op;
    if (o == "Equal") run_ew<mc::ew::Equal, Dims<2, 3>, Y, A, B>(got, {&a, &b});
    if (o == "Less") run_ew<mc::ew::Less, Dims<2, 3>, Y, A, B>(got, {&a, &b});
    if (o == "Greater") run_ew<mc::ew::Greater, Dims<2, 3>, Y, A, B>(got, {&a, &b});
    if (o == "LessOrEqual") run_ew<mc::ew::LessOrEqual, Dims<2, 3>, Y, A, B>(got, {&a, &b});
    if (o == "GreaterOrEqual") run_ew<mc::ew::GreaterOrEqual, Dims<2, 3>, Y, A, B>(got, {&a, &b});
    check_bits(got, want);
  }
  SUBCASE("int64 Equal") {
    const Tensor x = i64({4}, {1, -5, 1ll << 60, 3});
    const Tensor z = i64({4}, {1, 5, (1ll << 60) + 1, 3});
    OneNode c("Equal", 13, {x, z});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using I = Operand<int64_t, Dims<1>>;
    run_ew<mc::ew::Equal, Dims<4>, Operand<bool, Dims<1>>, I, I>(got, {&x, &z});
    check_bits(got, want);
  }
  SUBCASE("And, Or, Xor, Not") {
    const Tensor p = Tensor::from_i64(DType::boolean, {2, 2}, {0, 0, 1, 1});
    const Tensor q = Tensor::from_i64(DType::boolean, {2}, {0, 1});
    using Bo = Operand<bool, Dims<2, 1>>;
    using Q = Operand<bool, Dims<0, 1>>;
    for (const char* op : {"And", "Or", "Xor"}) {
      CAPTURE(op);
      OneNode c(op, 7, {p, q});
      const Tensor want = c.reference1();
      Tensor got = like(want);
      const std::string o = op;
      if (o == "And") run_ew<mc::ew::And, Dims<2, 2>, Bo, Bo, Q>(got, {&p, &q});
      if (o == "Or") run_ew<mc::ew::Or, Dims<2, 2>, Bo, Bo, Q>(got, {&p, &q});
      if (o == "Xor") run_ew<mc::ew::Xor, Dims<2, 2>, Bo, Bo, Q>(got, {&p, &q});
      check_bits(got, want);
    }
    OneNode c("Not", 1, {p});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    run_ew<mc::ew::Not, Dims<2, 2>, Bo, Bo>(got, {&p});
    check_bits(got, want);
  }
}

TEST_CASE("elementwise: Where copies raw bits with three-way broadcasting") {
  const Tensor cond = Tensor::from_i64(DType::boolean, {2, 1}, {1, 0});
  SUBCASE("int64") {
    const Tensor x = i64({2, 3}, {1, 2, 3, 4, 5, (1ll << 62) + 1});
    const Tensor y = i64({}, {-7});
    OneNode c("Where", 16, {cond, x, y});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using V = Operand<uint64_t, Dims<3, 1>>;
    run_ew<mc::ew::Where, Dims<2, 3>, V, Operand<bool, Dims<1, 0>>, V, Operand<uint64_t, Dims<0, 0>>>(got,
                                                                                                      {&cond, &x, &y});
    check_bits(got, want);
  }
  SUBCASE("float16, NaN payloads kept") {
    Tensor x(DType::float16, {2, 3});
    uint16_t* h = x.mutable_data<uint16_t>();
    for (int i = 0; i < 6; ++i) h[i] = static_cast<uint16_t>(0x7c01 + i);  // signalling NaNs
    const Tensor y = random_tensor(DType::float16, {3}, 14);
    OneNode c("Where", 16, {cond, x, y});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    using V = Operand<uint16_t, Dims<3, 1>>;
    run_ew<mc::ew::Where, Dims<2, 3>, V, Operand<bool, Dims<1, 0>>, V, Operand<uint16_t, Dims<0, 1>>>(got,
                                                                                                      {&cond, &x, &y});
    check_bits(got, want);
  }
}

TEST_CASE("elementwise: variadic Max, Min, Sum, Mean") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = f32({2, 3}, {1, nan, 3, -4, 5, 6});
  const Tensor b = f32({3}, {2, 0, nan});
  const Tensor d = f32({2, 1}, {-1, 10});
  using Y = Operand<float, Dims<3, 1>>;
  using A = Operand<float, Dims<3, 1>>;
  using B = Operand<float, Dims<0, 1>>;
  using D = Operand<float, Dims<1, 0>>;
  for (const char* op : {"Max", "Min", "Sum", "Mean"}) {
    CAPTURE(op);
    OneNode c(op, 13, {a, b, d});
    const Tensor want = c.reference1();
    Tensor got = like(want);
    const std::string o = op;
    if (o == "Max") run_ew<mc::ew::Max, Dims<2, 3>, Y, A, B, D>(got, {&a, &b, &d});
    if (o == "Min") run_ew<mc::ew::Min, Dims<2, 3>, Y, A, B, D>(got, {&a, &b, &d});
    if (o == "Sum") run_ew<mc::ew::Sum, Dims<2, 3>, Y, A, B, D>(got, {&a, &b, &d});
    if (o == "Mean") run_ew<mc::ew::Mean, Dims<2, 3>, Y, A, B, D>(got, {&a, &b, &d});
    check_close(got, want);
  }
  SUBCASE("one input, and integers") {
    const Tensor x = Tensor::from_i64(DType::int32, {3}, {5, -2, 7});
    const Tensor z = Tensor::from_i64(DType::int32, {3}, {1, 9, 7});
    using I = Operand<int32_t, Dims<1>>;
    OneNode c1("Max", 13, {x});
    Tensor got1 = like(c1.reference1());
    run_ew<mc::ew::Max, Dims<3>, I, I>(got1, {&x});
    check_bits(got1, c1.reference1());
    OneNode c2("Min", 13, {x, z});
    Tensor got2 = like(c2.reference1());
    run_ew<mc::ew::Min, Dims<3>, I, I, I>(got2, {&x, &z});
    check_bits(got2, c2.reference1());
  }
}

TEST_CASE("elementwise: Cast rounds and saturates as the reference") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor f = f32({12}, {0.0f, -0.0f, 1.9f, -1.9f, 127.5f, 128.0f, -129.7f, 300.0f, 3e9f, -3e19f, inf, nan});
  auto cast = [](const Tensor& x, DType to) {
    OneNode c("Cast", 19, {x});
    c.n->set_attr_int("to", static_cast<int64_t>(to));
    return c.reference1();
  };
  using F = Operand<float, Dims<1>>;
  SUBCASE("float32 to every integer type and bool") {
    Tensor g8 = like(cast(f, DType::int8)), gu8 = like(cast(f, DType::uint8)), g32 = like(cast(f, DType::int32)),
           g64 = like(cast(f, DType::int64)), gb = like(cast(f, DType::boolean));
    run_ew<mc::ew::Identity, Dims<12>, Operand<int8_t, Dims<1>>, F>(g8, {&f});
    run_ew<mc::ew::Identity, Dims<12>, Operand<uint8_t, Dims<1>>, F>(gu8, {&f});
    run_ew<mc::ew::Identity, Dims<12>, Operand<int32_t, Dims<1>>, F>(g32, {&f});
    run_ew<mc::ew::Identity, Dims<12>, Operand<int64_t, Dims<1>>, F>(g64, {&f});
    run_ew<mc::ew::Identity, Dims<12>, Operand<bool, Dims<1>>, F>(gb, {&f});
    check_bits(g8, cast(f, DType::int8));
    check_bits(gu8, cast(f, DType::uint8));
    check_bits(g32, cast(f, DType::int32));
    check_bits(g64, cast(f, DType::int64));
    check_bits(gb, cast(f, DType::boolean));
  }
  SUBCASE("float32 to float16 and bfloat16 (round to nearest even), and back") {
    const Tensor x = random_tensor(DType::float32, {64}, 15, -70000, 70000);
    Tensor h = like(cast(x, DType::float16)), bf = like(cast(x, DType::bfloat16));
    run_ew<mc::ew::Identity, Dims<64>, Operand<__half, Dims<1>>, F>(h, {&x});
    run_ew<mc::ew::Identity, Dims<64>, Operand<bf16, Dims<1>>, F>(bf, {&x});
    check_bits(h, cast(x, DType::float16));
    check_bits(bf, cast(x, DType::bfloat16));
    Tensor back = like(cast(h, DType::float32));
    run_ew<mc::ew::Identity, Dims<64>, F, Operand<__half, Dims<1>>>(back, {&h});
    check_bits(back, cast(h, DType::float32));
    Tensor h2 = like(cast(bf, DType::float16));
    run_ew<mc::ew::Identity, Dims<64>, Operand<__half, Dims<1>>, Operand<bf16, Dims<1>>>(h2, {&bf});
    check_bits(h2, cast(bf, DType::float16));
  }
  SUBCASE("integers: wrap between integer types, round to float, bool is != 0") {
    const Tensor x = i64({6}, {0, 1, -1, 300, (1ll << 40) + 3, (1ll << 62) + 1});
    Tensor g8 = like(cast(x, DType::int8)), g32 = like(cast(x, DType::int32)), gf = like(cast(x, DType::float32)),
           gh = like(cast(x, DType::float16)), gb = like(cast(x, DType::boolean));
    using I = Operand<int64_t, Dims<1>>;
    run_ew<mc::ew::Identity, Dims<6>, Operand<int8_t, Dims<1>>, I>(g8, {&x});
    run_ew<mc::ew::Identity, Dims<6>, Operand<int32_t, Dims<1>>, I>(g32, {&x});
    run_ew<mc::ew::Identity, Dims<6>, Operand<float, Dims<1>>, I>(gf, {&x});
    run_ew<mc::ew::Identity, Dims<6>, Operand<__half, Dims<1>>, I>(gh, {&x});
    run_ew<mc::ew::Identity, Dims<6>, Operand<bool, Dims<1>>, I>(gb, {&x});
    check_bits(g8, cast(x, DType::int8));
    check_bits(g32, cast(x, DType::int32));
    check_bits(gf, cast(x, DType::float32));
    check_bits(gh, cast(x, DType::float16));
    check_bits(gb, cast(x, DType::boolean));
    const Tensor b = Tensor::from_i64(DType::boolean, {3}, {1, 0, 1});
    Tensor bf = like(cast(b, DType::float32)), bi = like(cast(b, DType::int64));
    run_ew<mc::ew::Identity, Dims<3>, F, Operand<bool, Dims<1>>>(bf, {&b});
    run_ew<mc::ew::Identity, Dims<3>, I, Operand<bool, Dims<1>>>(bi, {&b});
    check_bits(bf, cast(b, DType::float32));
    check_bits(bi, cast(b, DType::int64));
  }
  SUBCASE("float16 to int32 truncates") {
    const Tensor h = random_tensor(DType::float16, {16}, 16, -100, 100);
    Tensor g = like(cast(h, DType::int32));
    run_ew<mc::ew::Identity, Dims<16>, Operand<int32_t, Dims<1>>, Operand<__half, Dims<1>>>(g, {&h});
    check_bits(g, cast(h, DType::int32));
  }
}

TEST_CASE("elementwise: BatchNormalization as a per-channel affine") {
  const Tensor x = random_tensor(DType::float32, {2, 3, 2, 2}, 17);
  const Tensor scale = random_tensor(DType::float32, {3}, 18);
  const Tensor bias = random_tensor(DType::float32, {3}, 19);
  const Tensor mean = random_tensor(DType::float32, {3}, 20);
  const Tensor var = random_tensor(DType::float32, {3}, 21, 0.1, 2);
  OneNode c("BatchNormalization", 15, {x, scale, bias, mean, var}, {1, 2, 3, 4});
  c.n->set_attr_float("epsilon", 1e-3);
  const Tensor want = c.reference1();
  Tensor got = like(want);
  using X = Operand<float, Dims<12, 4, 1>>;
  using P = Operand<float, Dims<0, 1, 0>>;
  run_ew<mc::ew::BatchNorm, Dims<2, 3, 4>, X, X, P, P, P, P>(got, {&x, &scale, &bias, &mean, &var}, {1e-3f});
  check_close(got, want);
}

TEST_CASE("elementwise: Identity copies any dtype bit for bit, through strides") {
  const Tensor x = random_tensor(DType::float16, {3, 4}, 22);
  Tensor got(DType::float16, {3, 4});
  // Reverse both dims of x.
  using K =
      mc::ew::Elementwise<mc::ew::Identity, Dims<3, 4>, Operand<uint16_t, Dims<4, 1>>, Operand<uint16_t, Dims<-4, -1>>>;
  typename K::Params p{got.mutable_raw(), {x.raw() + 11 * 2}, {}};
  launch<K>(mc::ew::elementwise_kernel<K>, p);
  for (int i = 0; i < 12; ++i) {
    CHECK(got.data<uint16_t>()[i] == x.data<uint16_t>()[11 - i]);
  }
}

TEST_CASE("elementwise: float64, int16, uint16, uint32 and uint64 compute as the reference") {
  auto cast = [](const Tensor& x, DType to) {
    OneNode c("Cast", 19, {x});
    c.n->set_attr_int("to", static_cast<int64_t>(to));
    return c.reference1();
  };
  SUBCASE("float64 math in double: what float32 would round is kept") {
    const Tensor a = Tensor::from_f64(DType::float64, {4}, {1.0 / 3, 1e-300, 1e300, -2.5});
    const Tensor b = Tensor::from_f64(DType::float64, {4}, {3.0, 1e-10, 10.0, 0.1});
    using D = Operand<double, Dims<1>>;
    for (const char* op : {"Mul", "Div", "Max", "Sub"}) {
      CAPTURE(op);
      OneNode c(op, 14, {a, b});
      const Tensor want = c.reference1();
      Tensor got = like(want);
      if (std::string(op) == "Mul") run_ew<mc::ew::Mul, Dims<4>, D, D, D>(got, {&a, &b});
      if (std::string(op) == "Div") run_ew<mc::ew::Div, Dims<4>, D, D, D>(got, {&a, &b});
      if (std::string(op) == "Max") run_ew<mc::ew::Max, Dims<4>, D, D, D>(got, {&a, &b});
      if (std::string(op) == "Sub") run_ew<mc::ew::Sub, Dims<4>, D, D, D>(got, {&a, &b});
      check_bits(got, want);  // + - * / and max are exact in double, as in the reference
    }
    OneNode sq("Sqrt", 13, {b});
    Tensor got = like(sq.reference1());
    run_ew<mc::ew::Sqrt, Dims<4>, D, D>(got, {&b});
    check_bits(got, sq.reference1());
    OneNode e("Exp", 13, {a});
    Tensor ge = like(e.reference1());
    run_ew<mc::ew::Exp, Dims<4>, D, D>(ge, {&a});
    check_close(ge, e.reference1());
    CHECK(ge.f64_at(1) == 1.0);  // exp(1e-300) in double
  }
  SUBCASE("uint64 orders and divides as unsigned numbers, beyond INT64_MAX") {
    Tensor a(DType::uint64, {4}), b(DType::uint64, {4});
    const uint64_t av[] = {uint64_t{1} << 62, (uint64_t{1} << 63) + 10, 7, ~uint64_t{0}};
    const uint64_t bv[] = {uint64_t{1} << 63, 3, 9, 2};
    std::memcpy(a.mutable_raw(), av, 32);
    std::memcpy(b.mutable_raw(), bv, 32);
    using U = Operand<uint64_t, Dims<1>>;
    for (const char* op : {"Max", "Min", "Div", "Add", "Mul", "Less", "Greater"}) {
      CAPTURE(op);
      OneNode c(op, 14, {a, b});
      const Tensor want = c.reference1();
      Tensor got = like(want);
      using B = Operand<bool, Dims<1>>;
      if (std::string(op) == "Max") run_ew<mc::ew::Max, Dims<4>, U, U, U>(got, {&a, &b});
      if (std::string(op) == "Min") run_ew<mc::ew::Min, Dims<4>, U, U, U>(got, {&a, &b});
      if (std::string(op) == "Div") run_ew<mc::ew::Div, Dims<4>, U, U, U>(got, {&a, &b});
      if (std::string(op) == "Add") run_ew<mc::ew::Add, Dims<4>, U, U, U>(got, {&a, &b});
      if (std::string(op) == "Mul") run_ew<mc::ew::Mul, Dims<4>, U, U, U>(got, {&a, &b});
      if (std::string(op) == "Less") run_ew<mc::ew::Less, Dims<4>, B, U, U>(got, {&a, &b});
      if (std::string(op) == "Greater") run_ew<mc::ew::Greater, Dims<4>, B, U, U>(got, {&a, &b});
      check_bits(got, want);
    }
    OneNode mx("Max", 13, {a, b});
    CHECK(mx.reference1().to_f64()[0] == 9223372036854775808.0);  // 2^63 > 2^62 unsigned
  }
  SUBCASE("int16 and uint16, uint32 wrap in their type") {
    const Tensor a = Tensor::from_i64(DType::int16, {3}, {32767, -32768, 100});
    const Tensor b = Tensor::from_i64(DType::int16, {3}, {1, -1, -300});
    using S = Operand<int16_t, Dims<1>>;
    OneNode c("Add", 14, {a, b});
    Tensor got = like(c.reference1());
    run_ew<mc::ew::Add, Dims<3>, S, S, S>(got, {&a, &b});
    check_bits(got, c.reference1());
    const Tensor u = Tensor::from_i64(DType::uint16, {3}, {1, 65535, 300});
    const Tensor v = Tensor::from_i64(DType::uint16, {3}, {2, 1, 7});
    using W = Operand<uint16_t, Dims<1>>;
    OneNode d("Sub", 14, {u, v});
    Tensor gd = like(d.reference1());
    run_ew<mc::ew::Sub, Dims<3>, W, W, W>(gd, {&u, &v});
    check_bits(gd, d.reference1());
    const Tensor x = Tensor::from_i64(DType::uint32, {3}, {4294967295, 3, 0});
    using X = Operand<uint32_t, Dims<1>>;
    OneNode m("Mul", 14, {x, x});
    Tensor gm = like(m.reference1());
    run_ew<mc::ew::Mul, Dims<3>, X, X, X>(gm, {&x, &x});
    check_bits(gm, m.reference1());
    OneNode p("Pow", 15, {f32({3}, {2.0f, 0.5f, 3.0f}), x});  // float base, uint32 exponent
    Tensor gp = like(p.reference1());
    const Tensor base = f32({3}, {2.0f, 0.5f, 3.0f});
    run_ew<mc::ew::Pow, Dims<3>, Operand<float, Dims<1>>, Operand<float, Dims<1>>, X>(gp, {&base, &x});
    check_close(gp, p.reference1());
  }
  SUBCASE("Cast to and from float64, int16, uint16, uint32, uint64") {
    const Tensor d = Tensor::from_f64(DType::float64, {8}, {0.0, -1.9, 70000.5, -40000.0, 1e20, -1e20, 1.0 / 3,
                                                            1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
    using D = Operand<double, Dims<1>>;
    Tensor g16 = like(cast(d, DType::int16)), gu16 = like(cast(d, DType::uint16)), gu32 = like(cast(d, DType::uint32)),
           gu64 = like(cast(d, DType::uint64)), gf = like(cast(d, DType::float32)), gh = like(cast(d, DType::float16)),
           gbf = like(cast(d, DType::bfloat16));
    run_ew<mc::ew::Identity, Dims<8>, Operand<int16_t, Dims<1>>, D>(g16, {&d});
    run_ew<mc::ew::Identity, Dims<8>, Operand<uint16_t, Dims<1>>, D>(gu16, {&d});
    run_ew<mc::ew::Identity, Dims<8>, Operand<uint32_t, Dims<1>>, D>(gu32, {&d});
    run_ew<mc::ew::Identity, Dims<8>, Operand<uint64_t, Dims<1>>, D>(gu64, {&d});
    run_ew<mc::ew::Identity, Dims<8>, Operand<float, Dims<1>>, D>(gf, {&d});
    run_ew<mc::ew::Identity, Dims<8>, Operand<__half, Dims<1>>, D>(gh, {&d});
    run_ew<mc::ew::Identity, Dims<8>, Operand<bf16, Dims<1>>, D>(gbf, {&d});
    check_bits(g16, cast(d, DType::int16));
    check_bits(gu16, cast(d, DType::uint16));
    check_bits(gu32, cast(d, DType::uint32));
    check_bits(gu64, cast(d, DType::uint64));
    check_bits(gf, cast(d, DType::float32));
    check_bits(gh, cast(d, DType::float16));  // one rounding from double (no tie through float)
    check_bits(gbf, cast(d, DType::bfloat16));
    CHECK(gh.f64_at(7) == 1.0 + std::ldexp(1.0, -10));
    // Back: uint64 beyond 2^63 and int16 to double, float and half.
    Tensor u(DType::uint64, {2});
    const uint64_t uv[] = {(uint64_t{1} << 63) + (uint64_t{1} << 11), 65519};
    std::memcpy(u.mutable_raw(), uv, 16);
    Tensor ud = like(cast(u, DType::float64)), uf = like(cast(u, DType::float32)), uh = like(cast(u, DType::float16)),
           ui = like(cast(u, DType::int16));
    using U = Operand<uint64_t, Dims<1>>;
    run_ew<mc::ew::Identity, Dims<2>, D, U>(ud, {&u});
    run_ew<mc::ew::Identity, Dims<2>, Operand<float, Dims<1>>, U>(uf, {&u});
    run_ew<mc::ew::Identity, Dims<2>, Operand<__half, Dims<1>>, U>(uh, {&u});
    run_ew<mc::ew::Identity, Dims<2>, Operand<int16_t, Dims<1>>, U>(ui, {&u});
    check_bits(ud, cast(u, DType::float64));
    check_bits(uf, cast(u, DType::float32));
    check_bits(uh, cast(u, DType::float16));
    check_bits(ui, cast(u, DType::int16));
    CHECK(ud.f64_at(0) > 9.2e18);
  }
}

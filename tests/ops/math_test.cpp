// Tests of compiler/ops/math.cpp and activation_smooth.cpp: the trigonometric and hyperbolic
// functions, Round, Sign, IsNaN, IsInf, Mod; Softsign, Mish, Celu, Gelu (both forms) and their
// epilogue forms (ops/fused.h).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "op_test_util.h"
#include "ops/activation_smooth.h"
#include "ops/fused.h"
#include "ops/math.h"
#include "ops/registry.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void check_close(const Tensor& t, const std::vector<double>& want, double eps = 1e-6) {
  const std::vector<double> got = t.to_f64();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
    }
  }
}

Tensor unary(const std::string& op, int opset, const Tensor& x, const std::function<void(Node&)>& attrs = nullptr) {
  OneNode t(op, opset, {x});
  if (attrs) attrs(*t.n);
  return t.run1();
}

}  // namespace

TEST_CASE("trigonometric and hyperbolic functions") {
  const Tensor x = f32({4}, {-0.5f, 0, 0.25f, 0.75f});
  const std::vector<std::pair<const char*, double (*)(double)>> fns = {
      {"Sin", std::sin},   {"Cos", std::cos},   {"Tan", std::tan},     {"Asin", std::asin},
      {"Acos", std::acos}, {"Atan", std::atan}, {"Sinh", std::sinh},   {"Cosh", std::cosh},
      {"Asinh", std::asinh}, {"Atanh", std::atanh}};
  for (const auto& [op, f] : fns) {
    const std::string what(op);  // CAPTURE of a structured binding is C++20 (clang refuses it)
    CAPTURE(what);
    std::vector<double> want;
    for (double v : x.to_f64()) want.push_back(f(v));
    check_close(unary(op, 9, x), want);
  }
  check_close(unary("Acosh", 9, f32({3}, {1, 2, 0.5f})), {0, std::acosh(2.0), NAN});
  check_close(unary("Asin", 7, f32({1}, {2})), {NAN});
  // float16 in, float16 out
  const Tensor h = unary("Cos", 7, Tensor::from_f64(DType::float16, {1}, {0.5}));
  CHECK(h.dtype() == DType::float16);
  CHECK(h.to_f64()[0] == doctest::Approx(std::cos(0.5)).epsilon(1e-3));
  // no integer form
  CHECK(error_of([] { unary("Sin", 7, i64({1}, {1})); }).find("accepts float32, float16") != std::string::npos);
}

TEST_CASE("Round halves to even; Sign; IsNaN; IsInf with its detect attributes") {
  check_close(unary("Round", 11, f32({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f, NAN})),
              {0, 2, 2, -0.0, -2, 2, -3, NAN});
  check_close(unary("Sign", 9, f32({4}, {-3, 0, 0.1f, NAN})), {-1, 0, 1, NAN});
  CHECK(unary("Sign", 13, i64({3}, {-7, 0, 9})).to_i64() == std::vector<int64_t>{-1, 0, 1});
  const Tensor nan = unary("IsNaN", 13, f32({3}, {NAN, 1, INFINITY}));
  CHECK(nan.dtype() == DType::boolean);
  CHECK(nan.to_i64() == std::vector<int64_t>{1, 0, 0});
  const Tensor inf = f32({4}, {INFINITY, -INFINITY, NAN, 1});
  CHECK(unary("IsInf", 10, inf).to_i64() == std::vector<int64_t>{1, 1, 0, 0});
  CHECK(unary("IsInf", 10, inf, [](Node& n) { n.set_attr_int("detect_negative", 0); }).to_i64() ==
        std::vector<int64_t>{1, 0, 0, 0});
  CHECK(unary("IsInf", 10, inf, [](Node& n) { n.set_attr_int("detect_positive", 0); }).to_i64() ==
        std::vector<int64_t>{0, 1, 0, 0});
  CHECK(error_of([&] { unary("IsInf", 10, inf, [](Node& n) { n.set_attr_int("detect_positive", 2); }); })
            .find("must be 0 or 1") != std::string::npos);
  // IsInf 10 has no float16 form; 20 has
  const Tensor h = Tensor::from_f64(DType::float16, {1}, {1});
  CHECK(error_of([&] { unary("IsInf", 10, h); }).find("accepts float32") != std::string::npos);
  CHECK(unary("IsInf", 20, h).to_i64() == std::vector<int64_t>{0});
}

TEST_CASE("Mod: the divisor's sign (fmod 0, integers) or the dividend's (fmod 1); broadcasting") {
  const Tensor a = i64({4}, {-4, 7, 5, -5}), b = i64({4}, {3, -3, 3, -3});
  {
    OneNode t("Mod", 13, {a, b});
    CHECK(t.run1().to_i64() == std::vector<int64_t>{2, -2, 2, -2});  // Python's %
  }
  {
    OneNode t("Mod", 13, {a, b});
    t.n->set_attr_int("fmod", 1);
    CHECK(t.run1().to_i64() == std::vector<int64_t>{-1, 1, 2, -2});  // C's %
  }
  {  // INT64_MIN % -1 is 0, not a trap
    OneNode t("Mod", 13, {i64({1}, {INT64_MIN}), i64({1}, {-1})});
    CHECK(t.run1().to_i64() == std::vector<int64_t>{0});
  }
  {  // floats need fmod = 1: C's fmod
    OneNode t("Mod", 13, {f32({2, 2}, {-4.5f, 7, 5.25f, -1}), f32({2}, {2, -3})});
    t.n->set_attr_int("fmod", 1);
    check_close(t.run1(), {-0.5, 1, 1.25, -1});
  }
  {
    OneNode t("Mod", 13, {f32({1}, {1}), f32({1}, {2})});
    CHECK(error_of([&] { t.run(); }).find("requires fmod = 1") != std::string::npos);
  }
  {
    OneNode t("Mod", 13, {i64({2}, {1, 2}), i64({2}, {1, 0})});
    const std::string e = error_of([&] { t.run(); });
    CHECK(e.find("Mod by zero") != std::string::npos);
    CHECK(e.find("node") != std::string::npos);
  }
  {
    OneNode t("Mod", 13, {i64({1}, {1}), i64({1}, {1})});
    t.n->set_attr_int("fmod", 3);
    CHECK(error_of([&] { t.run(); }).find("'fmod' is 3") != std::string::npos);
  }
}

TEST_CASE("Softsign, Mish, Celu, Gelu values") {
  const Tensor x = f32({5}, {-30, -1.5f, 0, 0.5f, 30});
  std::vector<double> soft, mish, celu, gelu, gelu_tanh;
  for (double v : x.to_f64()) {
    soft.push_back(v / (1 + std::fabs(v)));
    mish.push_back(v * std::tanh(std::log1p(std::exp(v))));
    celu.push_back(std::max(0.0, v) + std::min(0.0, 2.0 * (std::exp(v / 2.0) - 1)));
    gelu.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    gelu_tanh.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  check_close(unary("Softsign", 1, x), soft);
  check_close(unary("Mish", 18, x), mish);
  check_close(unary("Celu", 12, x, [](Node& n) { n.set_attr_float("alpha", 2.0); }), celu);
  check_close(unary("Gelu", 20, x), gelu);
  check_close(unary("Gelu", 20, x, [](Node& n) { n.set_attr_string("approximate", "tanh"); }), gelu_tanh);
  CHECK(error_of([&] { unary("Gelu", 20, x, [](Node& n) { n.set_attr_string("approximate", "fast"); }); })
            .find("'approximate' is 'fast'") != std::string::npos);
  CHECK(error_of([&] { unary("Celu", 12, x, [](Node& n) { n.set_attr_float("alpha", 0); }); })
            .find("'alpha' is 0") != std::string::npos);
  // Gelu is an opset-20 op: at 17 it is unsupported
  CHECK(error_of([&] { unary("Gelu", 17, x); }).find("Gelu") != std::string::npos);
}

TEST_CASE("the smooth activations are epilogue activations with the same function") {
  const std::vector<std::tuple<const char*, int, std::function<void(Node&)>, ops::Activation>> cases = {
      {"Softsign", 1, nullptr, ops::Activation::softsign},
      {"Mish", 18, nullptr, ops::Activation::mish},
      {"Celu", 12, [](Node& n) { n.set_attr_float("alpha", 0.5); }, ops::Activation::celu},
      {"Gelu", 20, nullptr, ops::Activation::gelu},
      {"Gelu", 20, [](Node& n) { n.set_attr_string("approximate", "tanh"); }, ops::Activation::gelu_tanh},
  };
  const Tensor x = f32({6}, {-4, -1, -0.25f, 0, 0.75f, 3});
  for (const auto& [op, opset, attrs, kind] : cases) {
    const std::string what(op);  // CAPTURE of a structured binding is C++20 (clang refuses it)
    CAPTURE(what);
    OneNode t(op, opset, {x});
    if (attrs) attrs(*t.n);
    const std::vector<double> y = t.run1().to_f64();
    const std::optional<ops::EpilogueActivation> a = ops::epilogue_activation_of(*t.n);
    REQUIRE(a);
    CHECK(a->kind == kind);
    CHECK(ops::parse_activation(ops::activation_name(kind)) == kind);
    for (std::size_t i = 0; i < y.size(); ++i) {
      CHECK(static_cast<float>(ops::apply_activation(*a, x.to_f64()[i])) == doctest::Approx(y[i]).epsilon(1e-6));
    }
    // the fused node's attributes give the activation back
    Node fused("FusedConv", "f", 17);
    ops::set_activation(fused, *a);
    const ops::EpilogueActivation back = ops::activation_of_fused(fused);
    CHECK(back.kind == kind);
    if (kind == ops::Activation::celu) CHECK(back.alpha == 0.5);
  }
}

TEST_CASE("math ops: facts") {
  const auto& reg = ops::OpRegistry::instance();
  for (const char* op : {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                         "Mish", "Celu", "Gelu"}) {
    CAPTURE(op);
    const ops::OpDef* d = reg.find(op, 20);
    REQUIRE(d);
    CHECK(d->precision == ops::Precision::fp32_compute);
    CHECK(d->layout == ops::Layout::agnostic);
    CHECK(d->kernels == std::vector<std::string>{"elementwise"});
  }
  for (const char* op : {"Round", "Sign", "IsNaN", "IsInf", "Mod", "Softsign"}) {
    CAPTURE(op);
    CHECK(reg.find(op, 20)->precision == ops::Precision::fp16);
  }
  for (const char* op : {"Softsign", "Mish", "Celu", "Gelu"}) {
    CHECK(reg.find(op, 20)->fusion == ops::Fusion::epilogue_activation);
  }
}

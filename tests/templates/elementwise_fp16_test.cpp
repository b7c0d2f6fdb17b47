// templates/elementwise.cuh with FP16 storage: the __half2 pair path (Elementwise::kPairs) gives
// the scalar path's bits, falls back to it for odd counts, strided operands and unaligned
// pointers; fp32_compute ops (Sigmoid, Exp, Tanh) compute in FP32 and round once at the store.
#include <cmath>
#include <cstring>

#include "tests/templates/elementwise_harness.h"

using namespace ew_test;
using mc::ew::Operand;
using mc::ix::Dims;

namespace {

using H1 = Operand<__half, Dims<1>>;
using H0 = Operand<__half, Dims<0>>;

float half_value(const Tensor& t, std::size_t i) {
  uint16_t b;
  std::memcpy(&b, t.raw() + 2 * i, 2);
  return __half2float(__half_raw{b});
}

}  // namespace

TEST_CASE("elementwise fp16: the __half2 pair path") {
  static_assert(mc::ew::Elementwise<mc::ew::Add, Dims<1000>, H1, H1, H0>::kPairs);
  static_assert(!mc::ew::Elementwise<mc::ew::Add, Dims<999>, H1, H1, H0>::kPairs, "odd count: scalar");
  static_assert(!mc::ew::Elementwise<mc::ew::Add, Dims<2, 500>, Operand<__half, Dims<500, 1>>,
                                     Operand<__half, Dims<500, 1>>, Operand<__half, Dims<0, 0>>>::kPairs,
                "rank 2: scalar");
  static_assert(!mc::ew::Elementwise<mc::ew::Add, Dims<1000>, H1, H1, Operand<float, Dims<1>>>::kPairs,
                "a float operand: scalar");
  static_assert(!mc::ew::Elementwise<mc::ew::Relu, Dims<500>, H1, Operand<__half, Dims<2>>>::kPairs,
                "strided operand: scalar");

  const Tensor a = random_tensor(DType::float16, {1000}, 21, -8, 8);
  const Tensor b = random_tensor(DType::float16, {1}, 22, -8, 8);
  OneNode c("Add", 14, {a, b});
  const Tensor want = c.reference1();

  Tensor pairs = like(want);
  run_ew<mc::ew::Add, Dims<1000>, H1, H1, H0>(pairs, {&a, &b});
  check_close(pairs, want, 1e-3, 1e-5);

  // The same sums through the scalar loop (a 2-D shape): the same bits.
  Tensor scalar = like(want);
  run_ew<mc::ew::Add, Dims<2, 500>, Operand<__half, Dims<500, 1>>, Operand<__half, Dims<500, 1>>,
         Operand<__half, Dims<0, 0>>>(scalar, {&a, &b});
  check_bits(pairs, scalar);

  // Unaligned pointers (one element in): the scalar loop serves, results still right.
  std::vector<uint16_t> in(1001), out(1001);
  std::memcpy(in.data() + 1, a.raw(), 2000);
  using K = mc::ew::Elementwise<mc::ew::Add, Dims<1000>, H1, H1, H0>;
  K::Params p{out.data() + 1, {in.data() + 1, b.raw()}, mc::ew::Add{}};
  launch<K>(mc::ew::elementwise_kernel<K>, p);
  CHECK(std::memcmp(out.data() + 1, pairs.raw(), 2000) == 0);
}

TEST_CASE("elementwise fp16: fp32_compute ops compute in FP32 and round once") {
  const Tensor x = random_tensor(DType::float16, {64}, 23, -12, 12);
  Tensor sig = Tensor(DType::float16, {64}), tanh_ = sig, exp_ = sig;
  run_ew<mc::ew::Sigmoid, Dims<64>, H1, H1>(sig, {&x});
  run_ew<mc::ew::Tanh, Dims<64>, H1, H1>(tanh_, {&x});
  run_ew<mc::ew::Exp, Dims<64>, H1, H1>(exp_, {&x});
  for (std::size_t i = 0; i < 64; ++i) {
    const double v = half_value(x, i);
    CAPTURE(v);
    // One rounding of the FP32 result: within half an FP16 ulp (plus FP32 math's few ulps).
    auto close = [](double got, double want) { return std::fabs(got - want) <= std::fabs(want) * (1.0 / 2048 + 1e-6) + 1e-7; };
    CHECK(close(half_value(sig, i), 1.0 / (1.0 + std::exp(-v))));
    CHECK(close(half_value(tanh_, i), std::tanh(v)));
    const double e = std::exp(v);
    if (e < 65504) CHECK(close(half_value(exp_, i), e));
  }
}

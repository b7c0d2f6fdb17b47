#include <doctest/doctest.h>

#include "ir/dtype.h"
#include "ir/tensor.h"

using namespace modelc;

TEST_CASE("float16 conversion rounds to nearest even, handles subnormals and overflow") {
  CHECK(float_to_half(1.0f) == 0x3c00);
  CHECK(float_to_half(-2.0f) == 0xc000);
  CHECK(float_to_half(65504.0f) == 0x7bff);
  CHECK(float_to_half(65519.0f) == 0x7bff);   // below the midpoint to 65536
  CHECK(float_to_half(65520.0f) == 0x7c00);   // the midpoint rounds to even: Inf
  CHECK(float_to_half(5.9604645e-8f) == 0x0001);  // smallest subnormal
  CHECK(float_to_half(2.9802322e-8f) == 0x0000);  // exactly half of it: ties to even (0)
  CHECK(float_to_half(2.9802326e-8f) == 0x0001);  // just above half
  CHECK(float_to_half(6.097555e-5f) == 0x03ff);   // largest subnormal
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3c00);  // tie, even stays
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3c02);  // tie, odd rounds up
  CHECK(half_to_float(0x0001) == doctest::Approx(5.9604645e-8f));
  CHECK(half_to_float(0x3555) == doctest::Approx(0.33325195f));
  for (uint32_t h = 0; h < 0x7c00; ++h) CHECK(float_to_half(half_to_float(static_cast<uint16_t>(h))) == h);
}

TEST_CASE("tensor conversions") {
  Tensor t = Tensor::from_f64(DType::int32, {2, 2}, {1.7, -1.7, 3e10, -3e10});
  CHECK(t.to_i64() == std::vector<int64_t>{1, -1, INT32_MAX, INT32_MIN});
  Tensor b = t.cast(DType::boolean);
  CHECK(b.to_i64() == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(shape_str({1, 3, 224, 224}) == "1x3x224x224");
  CHECK(strides_of({2, 3, 4}) == std::vector<int64_t>{12, 4, 1});
  CHECK_THROWS(t.reshaped({3}));
}

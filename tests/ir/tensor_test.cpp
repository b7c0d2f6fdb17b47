#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/dtype.h"
#include "ir/tensor.h"

using namespace modelc;

TEST_CASE("float16 tensors convert as the generated code does (runtime_stub/half_bits.h)") {
  const std::vector<double> v = {1.0, 65519.0, 65520.0, std::ldexp(1.0, -25), -0.0, std::nan("")};
  const Tensor h = Tensor::from_f64(DType::float32, {6}, v).cast(DType::float16);
  std::vector<uint16_t> bits(6);
  std::memcpy(bits.data(), h.raw(), 12);
  CHECK(bits == std::vector<uint16_t>{0x3c00, 0x7bff, 0x7c00, 0x0000, 0x8000, 0x7fff});
  const std::vector<double> back = Tensor(DType::float16, {2}, {0x01, 0x00, 0x55, 0x35}).to_f64();
  CHECK(back == std::vector<double>{std::ldexp(1.0, -24), 0.333251953125});
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

TEST_CASE("num_elements: a zero dim gives 0 and a product past int64 saturates") {
  CHECK(num_elements({}) == 1);
  CHECK(num_elements({2, 3, 4}) == 24);
  CHECK(num_elements({int64_t{1} << 62, int64_t{1} << 62, 0}) == 0);  // no overflow before the 0
  CHECK(num_elements({int64_t{1} << 40, int64_t{1} << 40}) == std::numeric_limits<int64_t>::max());
}

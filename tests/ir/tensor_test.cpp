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

TEST_CASE("float64, int16, uint16, uint32 and uint64 tensors: storage, conversions and Cast") {
  CHECK(dtype_size(DType::float64) == 8);
  CHECK(dtype_size(DType::uint16) == 2);
  CHECK(std::string(dtype_name(DType::uint32)) == "uint32");
  CHECK(dtype_from_onnx(11) == DType::float64);
  CHECK(dtype_from_onnx(13) == DType::uint64);
  CHECK(dtype_from_onnx(8) == DType::undefined);  // STRING
  CHECK(is_float(DType::float64));
  CHECK_FALSE(is_narrow_float(DType::float64));
  CHECK(is_unsigned_int(DType::uint64));
  CHECK(is_signed_int(DType::int16));
  CHECK(all_dtypes().size() == 13);

  // float64 keeps what float32 would round.
  const Tensor d = Tensor::from_f64(DType::float64, {2}, {1.0 / 3, 1e300});
  CHECK(d.to_f64() == std::vector<double>{1.0 / 3, 1e300});
  CHECK(d.cast(DType::float32).to_f64()[1] == std::numeric_limits<double>::infinity());
  // Saturating, truncating float -> integer; integer -> integer wraps.
  CHECK(Tensor::from_f64(DType::int16, {3}, {40000, -40000.5, -1.9}).to_i64() == std::vector<int64_t>{32767, -32768, -1});
  CHECK(Tensor::from_f64(DType::uint16, {2}, {-5, 70000}).to_i64() == std::vector<int64_t>{0, 65535});
  CHECK(Tensor::from_i64(DType::int16, {1}, {65537}).to_i64() == std::vector<int64_t>{1});
  CHECK(Tensor::from_i64(DType::uint32, {1}, {-1}).to_i64() == std::vector<int64_t>{4294967295});
  // uint64 beyond INT64_MAX: its value as double, its bit pattern as int64, exact through Casts.
  const uint64_t big = (uint64_t{1} << 63) + (uint64_t{1} << 12);
  Tensor u(DType::uint64, {1});
  std::memcpy(u.mutable_raw(), &big, 8);
  CHECK(u.to_f64()[0] == 9223372036854779904.0);
  CHECK(u.to_i64()[0] == static_cast<int64_t>(big));
  CHECK(u.cast(DType::float32).to_f64()[0] == static_cast<double>(static_cast<float>(big)));
  CHECK(u.cast(DType::int64).cast(DType::uint64).to_f64() == u.to_f64());
  CHECK(u.cast(DType::uint8).to_i64()[0] == 0);  // wraps: the low byte
  CHECK(Tensor::from_f64(DType::float64, {1}, {1.8e19}).cast(DType::uint64).to_f64()[0] == 1.8e19);
  CHECK(Tensor::from_f64(DType::float64, {1}, {1e20}).cast(DType::uint64).to_i64()[0] == -1);  // saturates at 2^64-1

  // A double becomes float16 / bfloat16 in one rounding: 1 + 2^-11 + 2^-40 is just above the tie
  // between 1 and 1 + 2^-10 (float16), so it rounds up; through float (1 + 2^-11, a tie) it
  // would round to even, down to 1.
  const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  const Tensor h = Tensor::from_f64(DType::float64, {1}, {above_tie}).cast(DType::float16);
  CHECK(h.to_f64()[0] == 1.0 + std::ldexp(1.0, -10));
  CHECK(Tensor::from_f64(DType::float16, {1}, {above_tie}).to_f64()[0] == 1.0 + std::ldexp(1.0, -10));
  const double bf_above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  CHECK(Tensor::from_f64(DType::bfloat16, {1}, {bf_above_tie}).to_f64()[0] == 1.0 + std::ldexp(1.0, -7));
  CHECK(double_to_float_round_odd(above_tie) == static_cast<float>(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -23)));
  CHECK(double_to_float_round_odd(0.5) == 0.5f);
  CHECK(std::isnan(double_to_float_round_odd(std::nan(""))));
}

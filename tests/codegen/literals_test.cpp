// codegen/literals: the one spelling of float, double, int and bit-pattern literals every family
// prints (elementwise attributes, gemm epilogues, normalization epsilons, resize taps).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "codegen/literals.h"

using namespace modelc;

TEST_CASE("float_literal: the shortest text that reads back as the float nearest to v") {
  CHECK(float_literal(0.0) == "0.0f");
  CHECK(float_literal(-0.0) == "-0.0f");
  CHECK(float_literal(6.0) == "6.0f");
  CHECK(float_literal(0.01) == "0.01f");
  CHECK(float_literal(1e-5) == "1e-05f");
  CHECK(float_literal(1.0 / 6.0) == "0.16666667f");
  CHECK(float_literal(1.67326319217681884765625) == "1.6732632f");
  CHECK(float_literal(16777216.0) == "16777216.0f");
  CHECK(float_literal(1e8) == "1e+08f");
  CHECK(float_literal(std::numeric_limits<float>::max()) == "3.4028235e+38f");
  CHECK(float_literal(std::nan("")) == "NAN");
  CHECK(float_literal(-INFINITY) == "-INFINITY");
  CHECK(float_literal(1e39) == "INFINITY");  // beyond float's range: the nearest float is infinite
}

TEST_CASE("double_literal, int_literal, bits_literal") {
  CHECK(double_literal(0.1) == "0.1");
  CHECK(double_literal(0.1 + 0.2) == "0.30000000000000004");
  CHECK(double_literal(2.0) == "2.0");
  CHECK(double_literal(INFINITY) == "INFINITY");
  CHECK(int_literal(-7) == "-7");
  CHECK(int_literal(int64_t{1} << 40) == "1099511627776ll");
  CHECK(int_literal(std::numeric_limits<int64_t>::min()) == "INT64_MIN");
  CHECK(bits_literal(Tensor::from_f64(DType::float16, {}, {1.0})) == "0x3c00");
  CHECK(bits_literal(Tensor::from_f64(DType::float32, {}, {1.0})) == "0x3f800000u");
  CHECK(bits_literal(Tensor::from_i64(DType::int64, {}, {-1})) == "0xffffffffffffffffull");
}

TEST_CASE("valid_utf8: well-formed UTF-8 is kept, every other byte becomes U+FFFD") {
  const std::string r = "\xef\xbf\xbd";  // U+FFFD
  CHECK(valid_utf8("plain ascii */ \"\\") == "plain ascii */ \"\\");
  CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  CHECK(valid_utf8("a\xff" "b") == "a" + r + "b");
  CHECK(valid_utf8("\xc3(") == r + "(");                       // a lead byte without its continuation
  CHECK(valid_utf8("\xc0\xaf") == r + r);                      // overlong
  CHECK(valid_utf8("\xed\xa0\x80") == r + r + r);              // a surrogate
  CHECK(valid_utf8("\xf4\x90\x80\x80") == r + r + r + r);      // above U+10FFFF
  CHECK(valid_utf8("x\xe2\x82") == "x" + r + r);               // cut at the end
  CHECK(valid_utf8(std::string("a\0b", 3)) == std::string("a\0b", 3));
}

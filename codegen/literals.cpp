// codegen/literals.cpp — see literals.h.
#include "codegen/literals.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace modelc {

std::string float_literal(double v) {
  const float f = static_cast<float>(v);
  if (std::isnan(f)) return "NAN";
  if (std::isinf(f)) return f > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  for (int digits = 6; digits <= 9; ++digits) {  // the shortest text that reads back as f
    std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

std::string double_literal(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string int_literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "INT64_MIN";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "ll" : "");
}

std::string bits_literal(const Tensor& t) {
  uint64_t bits = 0;
  const std::size_t size = dtype_size(t.dtype());
  std::memcpy(&bits, t.raw(), size);  // little-endian: the low bytes
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx%s", static_cast<int>(2 * size), static_cast<unsigned long long>(bits),
                size == 8   ? "ull"
                : size == 4 ? "u"
                            : "");
  return buf;
}

}  // namespace modelc

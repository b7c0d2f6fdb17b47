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

std::string valid_utf8(const std::string& s) {
  std::string r;
  r.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto byte = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
    const unsigned char b = byte(0);
    // Length of the sequence b starts, and the range of its second byte (RFC 3629: no overlong
    // forms, no surrogates, nothing above U+10FFFF).
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b < 0x80) {
      n = 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
      n = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      n = 3;
      if (b == 0xe0) lo = 0xa0;
      if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      n = 4;
      if (b == 0xf0) lo = 0x90;
      if (b == 0xf4) hi = 0x8f;
    }
    bool ok = n > 0;
    for (std::size_t k = 1; ok && k < n; ++k) {
      const unsigned char c = byte(k);
      ok = k == 1 ? c >= lo && c <= hi : c >= 0x80 && c <= 0xbf;
    }
    if (ok) {
      r.append(s, i, n);
      i += n;
    } else {
      r += "\xef\xbf\xbd";  // U+FFFD
      ++i;
    }
  }
  return r;
}

// The Params fields of an activation's parameters, under `field` ("epilogue.act"): those it uses.
void activation_params(const ops::EpilogueActivation& act, const std::string& field, std::vector<LaunchParam>* params) {
  switch (act.kind) {
    case ops::Activation::leaky_relu:
    case ops::Activation::celu: params->push_back({field + ".alpha", float_literal(act.alpha)}); break;
    case ops::Activation::hard_sigmoid:
    case ops::Activation::hard_swish:
      params->push_back({field + ".alpha", float_literal(act.alpha)});
      params->push_back({field + ".beta", float_literal(act.beta)});
      break;
    case ops::Activation::clip:
      if (act.min) params->push_back({field + ".min", float_literal(*act.min)});
      if (act.max) params->push_back({field + ".max", float_literal(*act.max)});
      break;
    default: break;
  }
}

}  // namespace modelc

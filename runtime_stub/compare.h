// runtime_stub/compare.h — compares an output with its expected value, the same way in a generated
// program (`./NAME --compare-dir DIR`) and in `modelc verify`. Header-only, standalone (uses npy.h).
//
// For every element, with g the value computed and w the expected one (both as double):
//   mismatch      |g - w| > atol + rtol * |w| (numpy.isclose); for integer and bool outputs any
//                 difference; NaN matches only NaN, an infinity only the same infinity
//   max_abs       max |g - w| over the elements where both are finite
//   max_rel       max |g - w| / |w| over the elements where both are finite and w != 0
//   rel_l2        ||g - w||_2 / ||w||_2 over the finite elements (||g - w||_2 when ||w||_2 is 0)
// PASS: same dtype, same shape, no mismatch.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "npy.h"

namespace mc_npy {

/// \brief The result of compare().
struct Comparison {
  bool pass = false;
  std::string problem;          ///< dtype or shape disagreement ("" when they agree)
  std::size_t count = 0;        ///< elements compared
  std::size_t mismatches = 0;
  double max_abs = 0, max_rel = 0, rel_l2 = 0;
  std::size_t first_mismatch = 0;  ///< flat index of the first mismatch (when mismatches > 0)
  double first_got = 0, first_want = 0;
};

namespace detail {

inline double element(const Array& a, std::size_t i) {
  const unsigned char* p = a.data.data() + i * dtype_size(a.dtype);
  switch (a.dtype) {
    case kFloat32: { float f; std::memcpy(&f, p, 4); return f; }
    case kFloat16: { uint16_t h; std::memcpy(&h, p, 2); return mc_half::half_bits_to_float(h); }
    case kBfloat16: {  // the high half of a float32
      const uint32_t x = static_cast<uint32_t>(p[0] | p[1] << 8) << 16;
      float f;
      std::memcpy(&f, &x, 4);
      return f;
    }
    case kFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    case kInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case kInt64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case kInt16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case kUint16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case kUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case kUint64: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case kInt8: return static_cast<int8_t>(*p);
    case kUint8: return *p;
    case kBool: return *p ? 1.0 : 0.0;
    default: return 0;
  }
}

}  // namespace detail

/// \brief Elements of `got` that are NaN or infinite where `want` (same dtype and shape) is finite: what
/// a relative-L2 verdict adds to the error (verify, ./NAME --compare-dir --max-rel-l2, the self-test).
/// 0 for arrays that disagree in dtype, shape or size, or hold no floating-point values.
inline std::size_t new_nonfinite(const Array& got, const Array& want) {
  if (got.shape != want.shape || got.dtype != want.dtype) return 0;
  if (got.dtype != kFloat32 && got.dtype != kFloat16 && got.dtype != kBfloat16 && got.dtype != kFloat64) return 0;
  const std::size_t count = got.numel();
  if (got.data.size() != count * dtype_size(got.dtype) || want.data.size() != got.data.size()) return 0;
  std::size_t n = 0;
  for (std::size_t i = 0; i < count; ++i) n += std::isfinite(detail::element(want, i)) && !std::isfinite(detail::element(got, i));
  return n;
}

/// \brief Compares `got` with `want` (see the file comment for the definitions).
inline Comparison compare(const Array& got, const Array& want, double rtol, double atol) {
  Comparison c;
  if (got.dtype != want.dtype) {
    c.problem = "dtype differs: got " + type_str(got.dtype, got.shape) + ", expected " + type_str(want.dtype, want.shape);
    return c;
  }
  if (got.shape != want.shape) {
    c.problem = "shape differs: got " + type_str(got.dtype, got.shape) + ", expected " + type_str(want.dtype, want.shape);
    return c;
  }
  const std::size_t esize = dtype_size(got.dtype);
  if (esize == 0 || got.data.size() != got.numel() * esize || want.data.size() != want.numel() * esize) {
    c.problem = "malformed arrays";
    return c;
  }
  const bool exact = got.dtype != kFloat32 && got.dtype != kFloat16 && got.dtype != kBfloat16 && got.dtype != kFloat64;
  c.count = got.numel();
  double diff2 = 0, want2 = 0;
  for (std::size_t i = 0; i < c.count; ++i) {
    bool bad;
    double g, w;
    if (got.dtype == kInt64 || got.dtype == kUint64) {  // exactly, beyond 2^53 too
      uint64_t gi, wi;
      std::memcpy(&gi, got.data.data() + i * 8, 8);
      std::memcpy(&wi, want.data.data() + i * 8, 8);
      g = got.dtype == kInt64 ? static_cast<double>(static_cast<int64_t>(gi)) : static_cast<double>(gi);
      w = got.dtype == kInt64 ? static_cast<double>(static_cast<int64_t>(wi)) : static_cast<double>(wi);
      bad = gi != wi;
    } else {
      g = detail::element(got, i);
      w = detail::element(want, i);
      if (exact) {
        bad = g != w;
      } else if (std::isnan(g) || std::isnan(w)) {
        bad = !(std::isnan(g) && std::isnan(w));
      } else if (std::isinf(g) || std::isinf(w)) {
        bad = g != w;
      } else {
        bad = std::fabs(g - w) > atol + rtol * std::fabs(w);
      }
    }
    if (std::isfinite(g) && std::isfinite(w)) {
      const double d = std::fabs(g - w);
      if (d > c.max_abs) c.max_abs = d;
      if (w != 0 && d / std::fabs(w) > c.max_rel) c.max_rel = d / std::fabs(w);
      diff2 += d * d;
      want2 += w * w;
    }
    if (bad) {
      if (c.mismatches == 0) {
        c.first_mismatch = i;
        c.first_got = g;
        c.first_want = w;
      }
      ++c.mismatches;
    }
  }
  c.rel_l2 = want2 > 0 ? std::sqrt(diff2 / want2) : std::sqrt(diff2);
  c.pass = c.mismatches == 0;
  return c;
}

/// \brief The multi-index of flat index `i` in `shape`: "[0,3,1]".
inline std::string index_str(const std::vector<int64_t>& shape, std::size_t i) {
  std::string s;
  for (std::size_t k = shape.size(); k-- > 0;) {
    const uint64_t d = shape[k] > 0 ? static_cast<uint64_t>(shape[k]) : 1;
    s = std::to_string(i % d) + (s.empty() ? "" : ",") + s;
    i = static_cast<std::size_t>(i / d);
  }
  return "[" + s + "]";
}

/// \brief One report line: "NAME  float32[1x10]  max_abs 1.2e-07  max_rel ...  PASS", and for a
/// failure the first mismatch ("first mismatch at [0,3]: got 1.5, expected 1.25").
inline std::string comparison_line(const std::string& name, const Array& want, const Comparison& c) {
  char buf[512];
  if (!c.problem.empty()) return name + "  " + c.problem + "  FAIL";
  std::snprintf(buf, sizeof buf, "  max_abs %.3g  max_rel %.3g  rel_l2 %.3g  mismatches %zu/%zu  %s", c.max_abs,
                c.max_rel, c.rel_l2, c.mismatches, c.count, c.pass ? "PASS" : "FAIL");
  std::string line = name + "  " + type_str(want.dtype, want.shape) + buf;
  if (c.mismatches) {
    std::snprintf(buf, sizeof buf, " (first mismatch at %s: got %.9g, expected %.9g)",
                  index_str(want.shape, c.first_mismatch).c_str(), c.first_got, c.first_want);
    line += buf;
  }
  return line;
}

}  // namespace mc_npy

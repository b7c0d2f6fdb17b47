// compiler/cli/commands/verdict.cpp — see verdict.h.
#include "cli/commands/verdict.h"

#include <algorithm>
#include <cmath>

#include "runtime_stub/compare.h"

namespace modelc::cli {

RangeCheck range_check(const mc_npy::Array& got, const mc_npy::Array& want, double factor) {
  RangeCheck r;
  const bool floats = want.dtype == mc_npy::kFloat32 || want.dtype == mc_npy::kFloat16 || want.dtype == mc_npy::kFloat64;
  const std::size_t n = want.numel();
  if (!(factor > 0) || !floats || got.shape != want.shape || got.dtype != want.dtype ||
      got.data.size() != want.data.size() || want.data.size() != n * mc_npy::dtype_size(want.dtype)) {
    return r;
  }
  r.applies = true;
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    const double w = mc_npy::detail::element(want, i);
    if (std::isfinite(w)) {
      lo = std::min(lo, w);
      hi = std::max(hi, w);
    }
  }
  r.range = hi >= lo ? hi - lo : 0;
  r.tolerance = factor * r.range;
  bool special_ok = true;  // NaN and Inf where want has them
  bool first = true;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = mc_npy::detail::element(got, i), w = mc_npy::detail::element(want, i);
    if (!std::isfinite(w)) {
      special_ok = special_ok && (std::isnan(w) ? std::isnan(g) : g == w);
      continue;
    }
    const double d = std::isfinite(g) ? std::fabs(g - w) : INFINITY;
    if (first || d > r.worst) {
      r.worst = d;
      r.worst_index = i;
      first = false;
    }
  }
  r.pass = special_ok && r.worst <= r.tolerance;
  return r;
}

double default_range_tol(bool fp16, bool bf16, bool int8) {
  if (int8 || bf16) return 0.0078125;  // 2^-7
  if (fp16) return 0.0009765625;       // 2^-10
  return 1e-5;
}

}  // namespace modelc::cli

// compiler/cli/commands/verdict.h: verify's range rule, on arrays built here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cli/commands/verdict.h"

using namespace modelc::cli;

namespace {

mc_npy::Array f32(const std::vector<float>& v) {
  mc_npy::Array a;
  a.dtype = mc_npy::kFloat32;
  a.shape = {static_cast<int64_t>(v.size())};
  a.data.resize(v.size() * 4);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

}  // namespace

TEST_CASE("verdict: the range rule passes a near-zero map whose relative L2 error is large") {
  // A [0, 1] probability map, mostly 0: tiny absolute differences near 0 are a large relative error.
  std::vector<float> want(100, 0.0f), got(100, 0.0f);
  want[7] = 1.0f;
  got[7] = 0.9999f;
  for (int i = 0; i < 100; i += 3) got[i] += 1.8e-4f;  // 1.8e-4 off, as issue 28's detector
  const RangeCheck r = range_check(f32(got), f32(want), default_range_tol(true, false, false));
  CHECK(r.applies);
  CHECK(r.range == doctest::Approx(1.0));
  CHECK(r.tolerance == doctest::Approx(0.0009765625));
  CHECK(r.worst == doctest::Approx(1.8e-4).epsilon(1e-3));
  CHECK(r.pass);

  // One element 1% off (a kernel's output scaled by 1.01): fails, naming it.
  got[7] = 1.01f;
  const RangeCheck bad = range_check(f32(got), f32(want), default_range_tol(true, false, false));
  CHECK_FALSE(bad.pass);
  CHECK(bad.worst_index == 7);
  CHECK(bad.worst == doctest::Approx(0.01).epsilon(1e-3));
}

TEST_CASE("verdict: NaN and Inf must match; a NaN where the reference is finite fails; integers never apply") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  CHECK(range_check(f32({nan, inf, 1, 2}), f32({nan, inf, 1, 2}), 1e-3).pass);
  CHECK_FALSE(range_check(f32({0, inf, 1, 2}), f32({nan, inf, 1, 2}), 1e-3).pass);
  CHECK_FALSE(range_check(f32({nan, -inf, 1, 2}), f32({nan, inf, 1, 2}), 1e-3).pass);
  const RangeCheck n = range_check(f32({nan, 2}), f32({1, 2}), 1e-3);
  CHECK_FALSE(n.pass);
  CHECK(std::isinf(n.worst));
  CHECK(n.worst_index == 0);
  // A constant reference: a tolerance of 0, so only exact values pass.
  CHECK(range_check(f32({3, 3}), f32({3, 3}), 1e-3).pass);
  CHECK_FALSE(range_check(f32({3, 3.0001f}), f32({3, 3}), 1e-3).pass);
  // Off, a dtype or shape mismatch, integers: the rule does not apply.
  CHECK_FALSE(range_check(f32({1, 2}), f32({1, 2}), 0).applies);
  CHECK_FALSE(range_check(f32({1, 2, 3}), f32({1, 2}), 1e-3).applies);
  mc_npy::Array ints = f32({1, 2});
  ints.dtype = mc_npy::kInt32;
  CHECK_FALSE(range_check(ints, ints, 1e-3).applies);
}

TEST_CASE("verdict: the default factors are each precision's rounding at 1.0") {
  CHECK(default_range_tol(false, false, false) == 1e-5);
  CHECK(default_range_tol(true, false, false) == std::ldexp(1.0, -10));
  CHECK(default_range_tol(false, true, false) == std::ldexp(1.0, -7));
  CHECK(default_range_tol(true, false, true) == std::ldexp(1.0, -7));
}

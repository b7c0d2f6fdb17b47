// tests/passes/graph_data.h — data for the pass tests: deterministic inputs and weights, and the
// check that a pass left a graph output's values as they were.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/interpreter.h"

namespace modelc::test {

/// sin(scale * (i + 1)) for element i of a float32 tensor of shape s.
inline Tensor ramp(Shape s, double scale) {
  std::vector<double> d(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::sin(scale * static_cast<double>(i + 1));
  return Tensor::from_f64(DType::float32, s, d);
}

/// max |a - b| / max |a| over the elements (a NaN in either gives infinity).
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64(), y = b.to_f64();
  REQUIRE(x.size() == y.size());
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) || std::isnan(y[i])) return INFINITY;
    num = std::max(num, std::fabs(x[i] - y[i]));
    den = std::max(den, std::fabs(x[i]));
  }
  return den == 0 ? num : num / den;
}

/// Output `name` of two runs agrees within 1e-6 per element.
inline void check_same(const TensorMap& a, const TensorMap& b, const std::string& name = "Y") {
  const std::vector<double> x = a.at(name).to_f64(), y = b.at(name).to_f64();
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) <= 1e-6);
}

}  // namespace modelc::test

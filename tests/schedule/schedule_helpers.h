// tests/schedule/schedule_helpers.h — what the schedule tests that build graphs by hand share.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/schedule.h"

namespace modelc::test {

/// Adds a constant `name` of type t[s] to g, values sin(0.37 * (i + 1)).
inline Value* sine_weight(Graph& g, const std::string& name, Shape s, DType t = DType::float32) {
  std::vector<double> d(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::sin(0.37 * static_cast<double>(i + 1));
  return g.add_constant(name, Tensor::from_f64(t, s, d), true);
}

/// The kernel that runs node `node` (a test failure when none does).
inline const Kernel& kernel_of(const Schedule& s, const std::string& node) {
  for (const Kernel& k : s.kernels) {
    if (k.node && k.node->name() == node) return k;
  }
  FAIL("no kernel for node " << node);
  return s.kernels.front();
}

}  // namespace modelc::test

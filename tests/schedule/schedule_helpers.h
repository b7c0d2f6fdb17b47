// tests/schedule/schedule_helpers.h — what the schedule tests that build graphs by hand share.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "schedule/layout.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"

namespace modelc::test {

/// Adds a constant `name` of type t[s] to g, values sin(0.37 * (i + 1)).
inline Value* sine_weight(Graph& g, const std::string& name, Shape s, DType t = DType::float32) {
  std::vector<double> d(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::sin(0.37 * static_cast<double>(i + 1));
  return g.add_constant(name, Tensor::from_f64(t, s, d), true);
}

/// What a test network's first layers read: x as it is, or (`fp16`) x through a Cast to float16
/// ("x16", node "cast"), as the precision pass would leave it.
inline Value* network_input(Graph& g, Value* x, bool fp16) {
  if (!fp16) return x;
  Value* in = g.add_value("x16");
  g.add_node("Cast", "cast", {x}, {in})->set_attr_int("to", 10);
  return in;
}

/// Lowering options for the tests: name "t", sm_75, the given layout mode, --fp16 or not.
inline LowerOptions layout_options(LayoutMode mode, bool fp16) {
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_75"};
  o.layout = mode;
  o.passes.fp16 = fp16;
  return o;
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

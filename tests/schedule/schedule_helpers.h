// tests/schedule/schedule_helpers.h — what the schedule tests that build graphs by hand share.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "pipeline/pipeline.h"
#include "schedule/layout.h"
#include "schedule/schedule.h"
#include "schedule/stages.h"
#include "schedule/views.h"

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
    if (k.source.node && k.source.node->name() == node) return k;
  }
  FAIL("no kernel for node " << node);
  return s.kernels.front();
}

/// The index of the buffer holding value `value` (its own value, a view or a slice of it); a test
/// failure when none does.
inline int buffer_index(const Schedule& s, const std::string& value) {
  for (std::size_t b = 0; b < s.buffers.size(); ++b) {
    const Buffer& buf = s.buffers[b];
    if (buf.value && buf.value->name() == value) return static_cast<int>(b);
    for (const ViewStep& st : buf.views) {
      if (st.value->name() == value) return static_cast<int>(b);
    }
  }
  FAIL("no buffer holds " << value);
  return -1;
}
inline const Buffer& buffer_of(const Schedule& s, const std::string& value) {
  return s.buffers.at(static_cast<std::size_t>(buffer_index(s, value)));
}

/// The step that makes `value` in its buffer; null when it is the buffer's own value.
inline const ViewStep* step_of(const Schedule& s, const std::string& value) {
  for (const ViewStep& st : buffer_of(s, value).views) {
    if (st.value->name() == value) return &st;
  }
  return nullptr;
}

/// The stage's test: the Schedule as the stages before `stage` leave it (run the stage on it with
/// run_schedule_stage, which records it and verifies with --verify-each).
inline Schedule before(Graph& g, const LowerOptions& o, const std::string& stage) { return lower_before(g, o, stage); }

}  // namespace modelc::test

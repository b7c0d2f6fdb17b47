// tests/ir/graph_input.h — a graph input for tests that build graphs by hand.
#pragma once

#include "ir/graph.h"

namespace modelc::test {

/// Adds a graph input `name` of type t[s] to g.
inline Value* input(Graph& g, const char* name, Shape s, DType t = DType::float32) {
  Value* v = g.add_value(name);
  v->set_type(t, std::move(s));
  g.add_input(v);
  return v;
}

}  // namespace modelc::test

// tests/codegen/sample_graph.h — the small model the product tests emit: views, weights, arena
// reuse and output copies, on the test family (test_families.h).
//   x[2,3,4] -> Relu -> r -> Reshape[6,4] -> Add(W) -> a -> Mul(a, a) -> m -> Sub(m, W2) -> y
//   outputs: y, x (a copy of the input), a (the Add writes it), C (a constant: copied)
#pragma once

#include <memory>

#include "ir/graph.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "tests/codegen/test_families.h"

namespace modelc::test {

inline std::unique_ptr<Graph> sample_graph(int relus = 1) {
  auto g = std::make_unique<Graph>();
  g->set_opset(17);
  Value* x = g->add_value("x");
  x->set_type(DType::float32, {2, 3, 4});
  g->add_input(x);
  auto weight = [&](const char* name, Shape s, float base, float step) {
    std::vector<float> d(static_cast<std::size_t>(num_elements(s)));
    for (std::size_t i = 0; i < d.size(); ++i) d[i] = base + step * static_cast<float>(i);
    return g->add_constant(name, Tensor::from_f32(s, d), true);
  };
  Value* prev = x;
  for (int i = 0; i < relus; ++i) {
    Value* r = g->add_value("r" + std::to_string(i));
    g->add_node("Relu", "relu" + std::to_string(i), {prev}, {r});
    prev = r;
  }
  Value* v = g->add_value("v");
  g->add_node("Reshape", "reshape", {prev, g->add_constant("shape", Tensor::from_i64(DType::int64, {2}, {6, 4}), true)},
              {v});
  Value* a = g->add_value("a");
  g->add_node("Add", "add", {v, weight("W", {6, 4}, -2.0f, 0.25f)}, {a});
  Value* m = g->add_value("m");
  g->add_node("Mul", "mul", {a, a}, {m});
  Value* y = g->add_value("y");
  g->add_node("Sub", "sub", {m, weight("W2", {6, 4}, 1.0f, -0.125f)}, {y});
  g->add_output(y);
  g->add_output(x);
  g->add_output(a);
  g->add_output(weight("C", {5}, 3.0f, 1.0f));
  ops::infer_graph(*g);
  return g;
}

inline LowerOptions sample_options(const std::string& name = "sample", std::vector<std::string> archs = {"sm_75"}) {
  register_test_families();
  LowerOptions o;
  o.name = name;
  o.archs = std::move(archs);
  o.family_substitutes["elementwise"] = "test_elementwise";
  return o;
}

}  // namespace modelc::test

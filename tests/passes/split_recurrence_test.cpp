// passes/split_recurrence: LSTM / GRU / RNN become their input projection (a MatMul on the GEMM
// family) and the recurrence form reading it; constant weights are transposed at compile time, a
// computed W goes through a Transpose; the reference output does not change (the projection is
// rounded to float once, hence the tolerance).
#include <doctest/doctest.h>

#include <cmath>

#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

Tensor wave(Shape s, double scale, double phase) {
  std::vector<double> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.9 * static_cast<double>(i) + phase);
  return Tensor::from_f64(DType::float32, std::move(s), v);
}

// Runs the stage with the verifier; the outputs must not change.
bool split(Graph& g) {
  ops::infer_graph(g);
  const TensorMap in = random_inputs(g, 3);
  const TensorMap before = run_reference(g, in);
  PassOptions o;
  o.verify_each = true;
  const bool changed = run_graph_stage(g, o, "split_recurrence");
  const TensorMap after = run_reference(g, in);
  for (const auto& entry : before) {
    const std::vector<double> x = entry.second.to_f64(), y = after.at(entry.first).to_f64();
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) <= 1e-5 * (1 + std::fabs(x[i])));
  }
  return changed;
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& up : g.nodes()) n += up->op() == op;
  return n;
}

}  // namespace

TEST_CASE("split_recurrence: a bidirectional LSTM with constant weights") {
  Graph g;
  g.set_opset(14);
  Value* x = input(g, "x", {5, 2, 3});
  std::vector<Value*> ins{x, g.add_constant("W", wave({2, 16, 3}, 0.5, 0.1), true),
                          g.add_constant("R", wave({2, 16, 4}, 0.5, 0.2), true),
                          g.add_constant("B", wave({2, 32}, 0.3, 0.3), true)};
  Value* y = g.add_value("Y");
  Value* yh = g.add_value("Y_h");
  Node* n = g.add_node("LSTM", "lstm", ins, {y, yh});
  n->set_attr_string("direction", "bidirectional");
  g.add_output(y);
  g.add_output(yh);
  CHECK(split(g));
  CHECK(count(g, "LSTM") == 0);
  CHECK(count(g, "LSTMRecurrence") == 1);
  CHECK(count(g, "MatMul") == 1);
  CHECK(count(g, "Transpose") == 0);  // W transposed at compile time
  for (const auto& up : g.nodes()) {
    if (up->op() == "LSTMRecurrence") {
      CHECK(up->domain() == ops::kModelcDomain);
      CHECK(up->name() == "lstm");
      CHECK(up->covers() == std::vector<std::string>{"lstm"});
      CHECK(up->input(0).shape() == Shape{2, 5, 2, 16});
      CHECK_FALSE(up->has_input(1));
    }
    if (up->op() == "MatMul") CHECK(up->covers() == std::vector<std::string>{"lstm"});
  }
  CHECK(g.outputs()[0]->name() == "Y");
}

TEST_CASE("split_recurrence: GRU with W computed at run time, batch-major (layout 1); RNN of opset 7") {
  Graph g;
  g.set_opset(14);
  Value* x = input(g, "x", {2, 4, 3});
  Value* w = input(g, "W", {1, 9, 3});
  Value* out = g.add_value("Y_h");
  Node* n = g.add_node("GRU", "gru", {x, w, g.add_constant("R", wave({1, 9, 3}, 0.5, 0.4), true)}, {nullptr, out});
  n->set_attr_int("layout", 1);
  n->set_attr_int("linear_before_reset", 1);
  g.add_output(out);
  CHECK(split(g));
  CHECK(count(g, "GRURecurrence") == 1);
  CHECK(count(g, "Transpose") == 1);
  for (const auto& up : g.nodes()) {
    if (up->op() == "GRURecurrence") CHECK(up->input(0).shape() == Shape{1, 2, 4, 9});  // [D, B, S, 3H]
  }

  Graph r;
  r.set_opset(7);
  Value* rx = input(r, "x", {3, 1, 2});
  Value* rout = r.add_value("Y");
  r.add_node("RNN", "rnn",
             {rx, r.add_constant("W", wave({1, 4, 2}, 0.5, 0.5), true), r.add_constant("R", wave({1, 4, 4}, 0.5, 0.6), true)},
             {rout});
  r.add_output(rout);
  CHECK(split(r));
  CHECK(count(r, "RNNRecurrence") == 1);
}

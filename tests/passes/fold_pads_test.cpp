// passes/fold_pads: Pads of all zeros disappear; zero Pads of the spatial dims fold into the Conv or
// AveragePool reading them (structure and results); the Pads it must keep.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/ir/graph_input.h"
#include "tests/passes/graph_data.h"

using namespace modelc;
using modelc::test::check_same;
using modelc::test::input;
using modelc::test::ramp;

namespace {

/// X [1, 2, 5, 5] -> Pad(pads, mode, fill) -> `op` (Conv with a [3, 2, 3, 3] weight, or a 3x3
/// AveragePool / MaxPool, stride 1) -> Y.
struct PadNet {
  Graph g;
  Value* x;
  Node* pad;
  Node* op;
  PadNet(std::vector<int64_t> pads, const std::string& consumer, const std::string& mode = "constant",
         float fill = 0) {
    g.set_opset(17);
    x = input(g, "X", {1, 2, 5, 5});
    Value *p = g.add_value("p"), *y = g.add_value("Y");
    const int64_t n = static_cast<int64_t>(pads.size());
    Value* pv = g.add_constant("pads", Tensor::from_i64(DType::int64, {n}, pads), true);
    Value* fv = g.add_constant("fill", Tensor::from_f32({}, {fill}), true);
    pad = g.add_node("Pad", "pad", {x, pv, fv}, {p});
    pad->set_attr_string("mode", mode);
    if (consumer == "Conv") {
      op = g.add_node("Conv", "conv", {p, g.add_constant("W", ramp({3, 2, 3, 3}, 0.37), true)}, {y});
    } else {
      op = g.add_node(consumer, "pool", {p}, {y});
      op->set_attr_ints("kernel_shape", {3, 3});
    }
    g.add_output(y);
    ops::infer_graph(g);
  }
};

TensorMap feeds() { return {{"X", ramp({1, 2, 5, 5}, 0.71)}}; }

}  // namespace

TEST_CASE("fold_pads: a zero Pad of the spatial dims folds into the Conv's pads") {
  PadNet m({0, 0, 1, 2, 0, 0, 1, 0}, "Conv");
  m.op->set_attr_ints("pads", {0, 1, 0, 1});
  ops::infer_graph(m.g);
  const TensorMap before = run_reference(m.g, feeds());
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(m.g, o, "fold_pads"));
  REQUIRE(m.g.nodes().size() == 1);
  CHECK(m.g.nodes()[0].get() == m.op);
  CHECK(&m.op->input(0) == m.x);
  CHECK(m.op->attr_ints("pads") == std::vector<int64_t>{1, 3, 1, 1});
  check_same(run_reference(m.g, feeds()), before);
  CHECK_FALSE(fold_pads(m.g, o));
}

TEST_CASE("fold_pads: a zero Pad before an AveragePool becomes its pads, counted") {
  PadNet m({0, 0, 1, 1, 0, 0, 1, 1}, "AveragePool");  // torch's AvgPool2d(3, 1, padding=1) as exported
  const TensorMap before = run_reference(m.g, feeds());
  CHECK(fold_pads(m.g, PassOptions{}));
  REQUIRE(m.g.nodes().size() == 1);
  CHECK(&m.op->input(0) == m.x);
  CHECK(m.op->attr_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(m.op->attr_int("count_include_pad", 0) == 1);
  check_same(run_reference(m.g, feeds()), before);
}

TEST_CASE("fold_pads: a Pad of all zeros disappears, whatever its mode and reader") {
  PadNet m({0, 0, 0, 0, 0, 0, 0, 0}, "MaxPool", "reflect");
  const TensorMap before = run_reference(m.g, feeds());
  CHECK(fold_pads(m.g, PassOptions{}));
  REQUIRE(m.g.nodes().size() == 1);
  CHECK(&m.op->input(0) == m.x);
  check_same(run_reference(m.g, feeds()), before);
}

TEST_CASE("fold_pads keeps Pads that are not zero padding of the spatial dims for a Conv / AveragePool") {
  auto kept = [](PadNet& m) {
    CHECK_FALSE(fold_pads(m.g, PassOptions{}));
    CHECK(m.g.nodes().size() == 2);
    CHECK(&m.op->input(0) == &m.pad->output(0));
  };
  SUBCASE("fill 1") {
    PadNet m({0, 0, 1, 1, 0, 0, 1, 1}, "Conv", "constant", 1.0f);
    kept(m);
  }
  SUBCASE("reflect") {
    PadNet m({0, 0, 1, 1, 0, 0, 1, 1}, "Conv", "reflect");
    kept(m);
  }
  SUBCASE("the channels padded") {
    PadNet m({0, 1, 1, 1, 0, 0, 1, 1}, "AveragePool");
    kept(m);
  }
  SUBCASE("a crop") {
    PadNet m({0, 0, -1, 1, 0, 0, 1, 1}, "Conv");
    kept(m);
  }
  SUBCASE("MaxPool pads with -inf, not zeros") {
    PadNet m({0, 0, 1, 1, 0, 0, 1, 1}, "MaxPool");
    kept(m);
  }
  SUBCASE("an AveragePool with pads of its own it does not count") {
    PadNet m({0, 0, 1, 1, 0, 0, 1, 1}, "AveragePool");
    m.op->set_attr_ints("pads", {1, 0, 0, 0});
    ops::infer_graph(m.g);
    kept(m);
  }
  SUBCASE("a second reader") {
    PadNet m({0, 0, 1, 1, 0, 0, 1, 1}, "Conv");
    Value* r = m.g.add_value("R");
    m.g.add_node("Relu", "relu", {&m.pad->output(0)}, {r});
    m.g.add_output(r);
    ops::infer_graph(m.g);
    CHECK_FALSE(fold_pads(m.g, PassOptions{}));
    CHECK(&m.op->input(0) == &m.pad->output(0));
  }
}

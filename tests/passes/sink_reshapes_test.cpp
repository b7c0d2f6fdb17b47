// passes/sink_reshapes: an Add reading a Gemm through a Reshape and a Transpose of unit dims moves
// before them (structure and results), so fuse_epilogue takes it as the Gemm's residual; the
// chains it must leave alone.
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

/// X [4, 6] -> Gemm (W [6, 8], C [8]) -> G [4, 8] -> Reshape [4, 1, 8] -> Transpose `perm` -> T;
/// Y = Add(R, T), R an input of T's shape (torch's MultiheadAttention output and its residual).
struct ResidualNet {
  Graph g;
  Value *r, *gemm_out, *y;
  Node* add;
  explicit ResidualNet(std::vector<int64_t> perm = {1, 0, 2}, Shape r_shape = {}) {
    g.set_opset(17);
    Value* x = input(g, "X", {4, 6});
    gemm_out = g.add_value("G");
    Value *rs = g.add_value("rs"), *t = g.add_value("T");
    y = g.add_value("Y");
    g.add_node("Gemm", "gemm",
               {x, g.add_constant("W", ramp({6, 8}, 0.37), true), g.add_constant("C", ramp({8}, 0.53), true)},
               {gemm_out});
    g.add_node("Reshape", "reshape", {gemm_out, g.add_constant("s", Tensor::from_i64(DType::int64, {3}, {4, 1, 8}), true)},
               {rs});
    g.add_node("Transpose", "transpose", {rs}, {t})->set_attr_ints("perm", perm);
    ops::infer_graph(g);
    r = input(g, "R", r_shape.empty() ? t->shape() : r_shape);
    add = g.add_node("Add", "add", {r, t}, {y});
    g.add_output(y);
    ops::infer_graph(g);
  }
  TensorMap feeds() const { return {{"X", ramp({4, 6}, 0.71)}, {"R", ramp(r->shape(), 0.29)}}; }
};

}  // namespace

TEST_CASE("sink_reshapes: a residual Add reading a Gemm through a Reshape and a unit-dim Transpose") {
  ResidualNet m;
  const TensorMap before = run_reference(m.g, m.feeds());
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(m.g, o, "sink_reshapes"));
  // Gemm -> Add(Reshape(R), G) -> Reshape -> Y: the Add reads the Gemm's output itself.
  CHECK(&m.add->input(1) == m.gemm_out);
  CHECK(m.add->output(0).shape() == Shape{4, 8});
  REQUIRE(m.add->input(0).producer());
  CHECK(m.add->input(0).producer()->op() == "Reshape");
  CHECK(&m.add->input(0).producer()->input(0) == m.r);
  REQUIRE(m.y->producer());
  CHECK(m.y->producer()->op() == "Reshape");
  CHECK(m.g.nodes_of("Transpose").empty());
  CHECK(m.y->shape() == Shape{1, 4, 8});
  check_same(run_reference(m.g, m.feeds()), before);
  CHECK_FALSE(sink_reshapes(m.g, o));

  // fuse_epilogue now takes the Add as the Gemm's residual.
  CHECK(run_graph_stage(m.g, o, "fuse_epilogue"));
  const std::vector<Node*> fused = m.g.nodes_of("FusedGemm");
  REQUIRE(fused.size() == 1);
  CHECK(fused[0]->num_inputs() == 4);
  CHECK(m.g.nodes_of("Add").empty());
  check_same(run_reference(m.g, m.feeds()), before);
}

TEST_CASE("sink_reshapes leaves an Add whose reshaped operand is no producer's sole output, or broadcasts") {
  auto kept = [](ResidualNet& m) {
    CHECK_FALSE(sink_reshapes(m.g, PassOptions{}));
    CHECK(m.add->output(0).shape() == m.y->shape());
    CHECK(&m.add->input(0) == m.r);
  };
  SUBCASE("a Transpose that moves elements") {
    ResidualNet m({2, 1, 0});
    kept(m);
  }
  SUBCASE("R broadcasts") {
    ResidualNet m({1, 0, 2}, {1, 1, 8});
    kept(m);
  }
  SUBCASE("the Gemm's output has another reader") {
    ResidualNet m;
    Value* z = m.g.add_value("Z");
    m.g.add_node("Relu", "relu", {m.gemm_out}, {z});
    ops::infer_graph(m.g);
    m.g.add_output(z);
    kept(m);
  }
  SUBCASE("the reshape's output is a graph output") {
    ResidualNet m;
    m.g.add_output(&m.add->input(1));
    kept(m);
  }
}

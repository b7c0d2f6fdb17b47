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

namespace {

/// A [1, 4, 4, 8] -> MatMul (W [8, 6]) -> Add (bias [6]) -> Transpose (0, 3, 1, 2) -> T [1, 6, 4, 4];
/// Y = Add(T, R), R an input [1, 6, 4, 4] (a ConvNeXt block's residual); with `reread`, Y is read by
/// a Transpose (0, 2, 3, 1) to Z (the downsampling LayerNorm2d after the block).
struct BlockEnd {
  Graph g;
  Node* add;
  Value* y;
  explicit BlockEnd(bool reread = false, const char* producer = "MatMul") {
    g.set_opset(17);
    const bool matmul = std::string(producer) == "MatMul";
    Value* a = input(g, "A", {1, 4, 4, matmul ? 8 : 6});
    Value *m = g.add_value("m"), *biased = g.add_value("biased"), *t = g.add_value("T");
    y = g.add_value("Y");
    if (matmul) {
      g.add_node("MatMul", "mm", {a, g.add_constant("W", ramp({8, 6}, 0.37), true)}, {m});
    } else {
      g.add_node(producer, "mm", {a}, {m});
    }
    g.add_node("Add", "bias", {m, g.add_constant("b", ramp({6}, 0.53), true)}, {biased});
    g.add_node("Transpose", "back", {biased}, {t})->set_attr_ints("perm", {0, 3, 1, 2});
    ops::infer_graph(g);
    add = g.add_node("Add", "add", {t, input(g, "R", {1, 6, 4, 4})}, {y});
    if (reread) {
      Value* z = g.add_value("Z");
      g.add_node("Transpose", "to_last", {y}, {z})->set_attr_ints("perm", {0, 2, 3, 1});
      g.add_output(z);
    } else {
      g.add_output(y);
    }
    ops::infer_graph(g);
  }
  TensorMap feeds() const { return {{"A", ramp({1, 4, 4, 8}, 0.71)}, {"R", ramp({1, 6, 4, 4}, 0.29)}}; }
};

}  // namespace

TEST_CASE("sink_reshapes: a residual Add after a MatMul's NHWC -> NCHW Transpose moves before it, R transposed") {
  BlockEnd m;
  const TensorMap before = run_reference(m.g, m.feeds());
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(m.g, o, "sink_reshapes"));
  // Add(biased, Transpose (0, 2, 3, 1) (R)) -> Transpose (0, 3, 1, 2) -> Y.
  CHECK(m.add->input(0).name() == "biased");
  REQUIRE(m.add->input(1).producer());
  CHECK(m.add->input(1).producer()->op() == "Transpose");
  CHECK(m.add->input(1).producer()->attr_ints("perm") == std::vector<int64_t>{0, 2, 3, 1});
  CHECK(m.add->input(1).producer()->input(0).name() == "R");
  CHECK(m.add->output(0).shape() == Shape{1, 4, 4, 6});
  REQUIRE(m.y->producer());
  CHECK(m.y->producer()->op() == "Transpose");
  CHECK(m.y->producer()->attr_ints("perm") == std::vector<int64_t>{0, 3, 1, 2});
  check_same(run_reference(m.g, m.feeds()), before);
  // fuse_epilogue takes the bias and the residual into the product.
  CHECK(run_graph_stage(m.g, o, "fuse_epilogue"));
  const std::vector<Node*> fused = m.g.nodes_of("FusedMatMul");
  REQUIRE(fused.size() == 1);
  CHECK(fused[0]->num_inputs() == 4);
  CHECK(m.g.nodes_of("Add").empty());
  check_same(run_reference(m.g, m.feeds()), before);
}

TEST_CASE("sink_reshapes: the sunk result's Transpose and a Transpose back after it cancel into an Identity") {
  BlockEnd m(true);
  const TensorMap before = run_reference(m.g, m.feeds());
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(m.g, o, "sink_reshapes"));
  const std::vector<Node*> t = m.g.nodes_of("Transpose");
  REQUIRE(t.size() == 1);  // R's
  CHECK(t[0]->input(0).name() == "R");
  REQUIRE(m.g.nodes_of("Identity").size() == 1);
  CHECK(&m.g.nodes_of("Identity")[0]->input(0) == &m.add->output(0));
  check_same(run_reference(m.g, m.feeds()), before, "Z");
}

TEST_CASE("sink_reshapes leaves an Add after a Transpose of no product, or of another permutation") {
  PassOptions o;
  o.verify_each = true;
  BlockEnd relu(false, "Relu");
  CHECK_FALSE(run_graph_stage(relu.g, o, "sink_reshapes"));
  BlockEnd other;
  other.g.nodes_of("Transpose")[0]->set_attr_ints("perm", {0, 3, 2, 1});
  ops::infer_graph(other.g);
  CHECK_FALSE(run_graph_stage(other.g, o, "sink_reshapes"));
}

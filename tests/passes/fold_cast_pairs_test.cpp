// passes/fold_cast_pairs: Cast pairs from FP16 around an op that computes in FP32 on FP16 storage
// fold into the op (structure and results); the pairs it must keep.
#include <doctest/doctest.h>

#include <cmath>

#include "ops/shape_inference.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

Node* cast(Graph& g, const char* name, Value* from, Value* to, DType t) {
  Node* c = g.add_node("Cast", name, {from}, {to});
  c->set_attr_int("to", static_cast<int64_t>(t));
  return c;
}

/// x16 -> Cast32 -> Resize (2x, linear) -> Cast16 -> Y, a graph output; x16 -> Cast32 -> Softmax,
/// read by two Casts to float16: Z (a graph output) and one feeding Relu -> R.
struct Islands {
  Graph g;
  Value* x;
  Islands() {
    g.set_opset(17);
    x = input(g, "X", {1, 2, 3, 3}, DType::float16);
    Value *x32 = g.add_value("x32"), *up = g.add_value("up"), *y = g.add_value("Y");
    cast(g, "to32", x, x32, DType::float32);
    Value* roi = g.add_constant("roi", Tensor::from_f32({0}, {}), true);
    Value* scales = g.add_constant("scales", Tensor::from_f32({4}, {1, 1, 2, 2}), true);
    g.add_node("Resize", "resize", {x32, roi, scales}, {up})->set_attr_string("mode", "linear");
    cast(g, "resize_to16", up, y, DType::float16);
    Value *p = g.add_value("p"), *z = g.add_value("Z"), *p16 = g.add_value("p16"), *r = g.add_value("R");
    g.add_node("Softmax", "softmax", {x32}, {p})->set_attr_int("axis", 1);
    cast(g, "softmax_to16", p, z, DType::float16);
    cast(g, "softmax_to16_relu", p, p16, DType::float16);
    g.add_node("Relu", "relu", {p16}, {r});
    g.add_output(y);
    g.add_output(z);
    g.add_output(r);
    ops::infer_graph(g);
  }
};

TensorMap feeds() {
  std::vector<float> v(18);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  return {{"X", Tensor::from_f32({1, 2, 3, 3}, v).cast(DType::float16)}};
}

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& up : g.nodes()) n += up->op() == op;
  return n;
}

void check_close(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64(), y = b.to_f64();
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(x[i] - y[i]) <= 1e-3 * (1 + std::fabs(y[i])));
}

}  // namespace

TEST_CASE("fold_cast_pairs folds the Casts around Resize and Softmax into them") {
  Islands m;
  const TensorMap in = feeds();
  const TensorMap before = run_reference(m.g, in);
  PassOptions o;
  o.verify_each = true;
  CHECK(run_graph_stage(m.g, o, "fold_cast_pairs"));
  CHECK(count(m.g, "Cast") == 0);
  REQUIRE(m.g.nodes().size() == 3);
  const Node& resize = *m.g.outputs()[0]->producer();
  CHECK(resize.op() == "Resize");
  CHECK(&resize.input(0) == m.x);  // reads the float16 input itself
  CHECK(m.g.outputs()[0]->name() == "Y");
  CHECK(m.g.outputs()[0]->dtype() == DType::float16);
  // Softmax writes Z (the graph output keeps its name), which the Relu reads too.
  const Node& softmax = *m.g.outputs()[1]->producer();
  CHECK(softmax.op() == "Softmax");
  CHECK(m.g.outputs()[1]->name() == "Z");
  CHECK(&m.g.outputs()[2]->producer()->input(0) == m.g.outputs()[1]);
  const TensorMap after = run_reference(m.g, in);
  for (const char* y : {"Y", "Z", "R"}) {
    CHECK(after.at(y).dtype() == DType::float16);
    check_close(after.at(y), before.at(y));
  }
  CHECK_FALSE(fold_cast_pairs(m.g, o));
}

TEST_CASE("fold_cast_pairs keeps a pair whose op is pinned, computes in FP16, or has an FP32 reader") {
  SUBCASE("--keep-fp32 names the op") {
    Islands m;
    PassOptions o;
    o.keep_fp32 = {"resize"};
    CHECK(fold_cast_pairs(m.g, o));  // Softmax still folds
    CHECK(m.g.outputs()[0]->producer()->op() == "Cast");
    CHECK(count(m.g, "Cast") == 2);  // the pair around the Resize
  }
  SUBCASE("an op that computes in FP16 (Relu: Precision::fp16)") {
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "X", {4}, DType::float16);
    Value *x32 = g.add_value("x32"), *r = g.add_value("r"), *y = g.add_value("Y");
    cast(g, "to32", x, x32, DType::float32);
    g.add_node("Relu", "relu", {x32}, {r});
    cast(g, "to16", r, y, DType::float16);
    g.add_output(y);
    ops::infer_graph(g);
    CHECK_FALSE(fold_cast_pairs(g, PassOptions{}));
  }
  SUBCASE("the op's FP32 output is also a graph output, or an input is FP32 from elsewhere") {
    Graph g;
    g.set_opset(17);
    Value* x = input(g, "X", {2, 4}, DType::float16);
    Value* w = input(g, "W", {2, 4});
    Value *x32 = g.add_value("x32"), *p = g.add_value("P"), *y = g.add_value("Y"), *q = g.add_value("q"),
          *z = g.add_value("Z");
    cast(g, "to32", x, x32, DType::float32);
    g.add_node("Softmax", "softmax", {x32}, {p});
    cast(g, "to16", p, y, DType::float16);
    g.add_node("Pow", "pow", {x32, w}, {q});
    cast(g, "pow_to16", q, z, DType::float16);
    g.add_output(p);
    g.add_output(y);
    g.add_output(z);
    ops::infer_graph(g);
    CHECK_FALSE(fold_cast_pairs(g, PassOptions{}));
    CHECK(count(g, "Cast") == 3);
  }
}

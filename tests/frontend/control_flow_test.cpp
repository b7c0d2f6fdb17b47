// If and Loop resolved at compile time (compiler/frontend/control_flow.cpp): the branch a known
// condition selects replaces the If, a Loop's body is inlined per iteration (nested control flow,
// outer-scope reads, scan outputs, a while condition the body computes), outputs keep their names,
// and a condition or trip count computed at run time is an Error naming the node (or, collecting
// unsupported nodes, a listed problem).
#include <doctest/doctest.h>

#include <string>

#include "frontend/onnx_import.h"
#include "onnx_builder.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::test;

namespace {

LoadResult load(const onnx::ModelProto& m, LoadOptions opt = {}) {
  return load_onnx_model_bytes(serialize(m), ".", "test.onnx", opt);
}

onnx::TensorProto scalar(const std::string& name, int type, int64_t v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  if (type == onnx::TensorProto::BOOL) {
    t.add_int32_data(static_cast<int32_t>(v));
  } else {
    t.add_int64_data(v);
  }
  return t;
}

onnx::AttributeProto* graph_attr(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
  return a;
}

// A branch computing out = OP(x) from the outer x.
onnx::GraphProto branch(const std::string& op, const std::string& out) {
  onnx::ModelProto m = empty_model();
  add_node(m, op, {"x"}, {out});
  add_output(m, out, {"2"});
  onnx::GraphProto g = m.graph();
  g.set_name(op);
  return g;
}

// y = If(cond, Neg(x), Relu(x)), with cond the graph input `cond` (bool scalar) or an initializer.
onnx::ModelProto if_model(bool cond_initializer, bool cond) {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"2"});
  if (cond_initializer) {
    *m.mutable_graph()->add_initializer() = scalar("cond", onnx::TensorProto::BOOL, cond ? 1 : 0);
  } else {
    add_input(m, "cond", {}, onnx::TensorProto::BOOL);
  }
  add_output(m, "y", {"2"});
  auto* n = add_node(m, "If", {"cond"}, {"y"}, "choose");
  graph_attr(n, "then_branch", branch("Neg", "t"));
  graph_attr(n, "else_branch", branch("Relu", "e"));
  return m;
}

bool has_op(const Graph& g, const std::string& op) {
  for (const auto& n : g.nodes()) {
    if (n->op() == op) return true;
  }
  return false;
}

// Loop(trip, cond, acc) with body: acc_out = acc_in + x (outer), cond_out = Less(i + 1, limit)
// (or cond_in when limit < 0), scan = acc_out.
onnx::ModelProto loop_model(int64_t trips, int64_t limit, bool trip_input = false, bool scan = true) {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"2"});
  if (trip_input) {
    add_input(m, "trips", {}, onnx::TensorProto::INT64);
  } else {
    *m.mutable_graph()->add_initializer() = scalar("trips", onnx::TensorProto::INT64, trips);
  }
  *m.mutable_graph()->add_initializer() = float_tensor("acc0", {2}, {0, 0});
  add_output(m, "acc", {"2"});
  if (scan) add_output(m, "accs", {"", "2"});
  onnx::ModelProto b = empty_model();
  add_input(b, "i", {}, onnx::TensorProto::INT64);
  add_input(b, "cond_in", {}, onnx::TensorProto::BOOL);
  add_input(b, "acc_in", {"2"});
  add_node(b, "Add", {"acc_in", "x"}, {"acc_out"});
  if (limit >= 0) {
    *b.mutable_graph()->add_initializer() = scalar("one", onnx::TensorProto::INT64, 1);
    *b.mutable_graph()->add_initializer() = scalar("limit", onnx::TensorProto::INT64, limit);
    add_node(b, "Add", {"i", "one"}, {"next"});
    add_node(b, "Less", {"next", "limit"}, {"cond_out"});
  } else {
    add_node(b, "Identity", {"cond_in"}, {"cond_out"});
  }
  add_output(b, "cond_out", {}, onnx::TensorProto::BOOL);
  add_output(b, "acc_out", {"2"});
  if (scan) {
    add_node(b, "Identity", {"acc_out"}, {"scan"});
    add_output(b, "scan", {"2"});
  }
  auto* n = add_node(m, "Loop", {"trips", "", "acc0"}, scan ? std::vector<std::string>{"acc", "accs"}
                                                             : std::vector<std::string>{"acc"}, "repeat");
  graph_attr(n, "body", b.graph());
  return m;
}

}  // namespace

TEST_CASE("If: a known condition inlines its branch; the output keeps its name") {
  for (bool cond : {true, false}) {
    INFO("cond " << cond);
    auto g = load(if_model(true, cond)).graph;
    CHECK_FALSE(has_op(*g, "If"));
    CHECK(has_op(*g, cond ? "Neg" : "Relu"));
    CHECK_FALSE(has_op(*g, cond ? "Relu" : "Neg"));
    REQUIRE(g->outputs().size() == 1);
    CHECK(g->outputs()[0]->name() == "y");
    const TensorMap r = run_reference(*g, {{"x", Tensor::from_f32({2}, {-1.5f, 2.0f})}});
    CHECK(r.at("y").to_f64() == (cond ? std::vector<double>{1.5, -2.0} : std::vector<double>{0.0, 2.0}));
  }
  // A condition fed as an input and fixed to a value, as the node tests bind it.
  LoadOptions opt;
  opt.input_values["cond"] = Tensor::from_i64(DType::boolean, {}, {0});
  auto g = load(if_model(false, false), opt).graph;
  CHECK(has_op(*g, "Relu"));
  CHECK_FALSE(has_op(*g, "If"));
}

TEST_CASE("If: a condition computed at run time is an Error naming the node") {
  try {
    load(if_model(false, false));
    FAIL("expected an Error");
  } catch (const Error& e) {
    const std::string w = e.what();
    CHECK(w.find("choose") != std::string::npos);
    CHECK(w.find("If") != std::string::npos);
    CHECK(w.find("condition 'cond' is computed at run time") != std::string::npos);
  }
  // Collecting (modelc inspect): the If is listed, not thrown.
  LoadOptions opt;
  opt.collect_unsupported = true;
  const LoadResult r = load(if_model(false, false), opt);
  REQUIRE(r.unsupported.size() == 1);
  CHECK(r.unsupported[0].node == "choose");
  CHECK(r.unsupported[0].reason.find("computed at run time") != std::string::npos);
}

TEST_CASE("Loop: a constant trip count unrolls the body, reading the outer scope; scans are stacked") {
  auto g = load(loop_model(3, -1)).graph;
  CHECK_FALSE(has_op(*g, "Loop"));
  const TensorMap r = run_reference(*g, {{"x", Tensor::from_f32({2}, {1.0f, -2.0f})}});
  CHECK(r.at("acc").to_f64() == std::vector<double>{3, -6});
  CHECK(r.at("accs").shape() == Shape{3, 2});
  CHECK(r.at("accs").to_f64() == std::vector<double>{1, -2, 2, -4, 3, -6});
  // The body's nodes are named after the loop and the iteration.
  bool named = false;
  for (const auto& n : g->nodes()) named = named || n->name().rfind("repeat/2/", 0) == 0;
  CHECK(named);
}

TEST_CASE("Loop: the condition the body computes stops it early; none: zero iterations keep the state") {
  auto g = load(loop_model(100, 2)).graph;  // i + 1 < 2: iterations 0 and 1
  const TensorMap r = run_reference(*g, {{"x", Tensor::from_f32({2}, {1.0f, 1.0f})}});
  CHECK(r.at("acc").to_f64() == std::vector<double>{2, 2});
  CHECK(r.at("accs").shape() == Shape{2, 2});

  auto z = load(loop_model(0, -1, false, /*scan=*/false)).graph;  // no scan output: its shape would be unknown
  const TensorMap rz = run_reference(*z, {{"x", Tensor::from_f32({2}, {1.0f, 1.0f})}});
  CHECK(rz.at("acc").to_f64() == std::vector<double>{0, 0});
}

TEST_CASE("Loop: a trip count computed at run time, or too many iterations, is an Error naming the node") {
  try {
    load(loop_model(0, -1, /*trip_input=*/true));
    FAIL("expected an Error");
  } catch (const Error& e) {
    const std::string w = e.what();
    CHECK(w.find("repeat") != std::string::npos);
    CHECK(w.find("trip count 'trips' is computed at run time") != std::string::npos);
  }
  try {
    load(loop_model(5000, -1));
    FAIL("expected an Error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("more than 4096 iterations") != std::string::npos);
  }
}

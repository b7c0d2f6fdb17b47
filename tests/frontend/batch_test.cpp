// frontend/batch.h and LoadOptions::batch on a model that fixes its batch: a re-batch where the
// graph computes item by item, a clear Error naming the node where it hard-codes the batch.
#include <doctest/doctest.h>

#include <functional>

#include "frontend/batch.h"
#include "frontend/onnx_import.h"
#include "ops/registry.h"
#include "reference/interpreter.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::unique_ptr<Graph> load(const onnx::ModelProto& m, int64_t batch = 0) {
  LoadOptions o;
  o.batch = batch;
  return load_onnx_bytes(serialize(m), ".", "test.onnx", o);
}

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(v.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
  return t;
}

// x[1, 3, 4] -> Reshape(shape) -> r -> Softmax(axis) -> y.
onnx::ModelProto reshape_softmax(const std::vector<int64_t>& shape, const std::vector<std::string>& out_dims,
                                 int64_t axis = -1) {
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"1", "3", "4"});
  *m.mutable_graph()->add_initializer() = int64_tensor("shape", shape);
  add_node(m, "Reshape", {"x", "shape"}, {"r"}, "reshape");
  onnx::NodeProto* s = add_node(m, "Softmax", {"r"}, {"y"}, "softmax");
  auto* a = s->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(axis);
  add_output(m, "y", out_dims);
  return m;
}

}  // namespace

TEST_CASE("--batch on a model that fixes its batch re-batches it where the graph keeps the items apart") {
  // Relu [2, 3]: batch 5.
  auto g = load(relu_model({"2", "3"}), 5);
  CHECK(g->inputs()[0]->shape() == Shape{5, 3});
  CHECK(g->outputs()[0]->shape() == Shape{5, 3});
  // The same batch: nothing to do.
  CHECK(load(relu_model({"2", "3"}), 2)->inputs()[0]->shape() == Shape{2, 3});

  // A Reshape that keeps the batch first (-1 there) and a Softmax over the last dim: fine.
  g = load(reshape_softmax({-1, 12}, {"1", "12"}), 4);
  CHECK(g->outputs()[0]->shape() == Shape{4, 12});
  // The reference at batch 4 computes each item as the model at batch 1 does.
  const auto one = load(reshape_softmax({-1, 12}, {"1", "12"}));
  TensorMap feeds4 = random_inputs(*g, 3);
  const TensorMap out4 = run_reference(*g, feeds4);
  const std::vector<double> x4 = feeds4.at("x").to_f64(), y4 = out4.at("y").to_f64();
  for (int b = 0; b < 4; ++b) {
    std::vector<double> xb(x4.begin() + b * 12, x4.begin() + (b + 1) * 12);
    TensorMap f;
    f["x"] = Tensor::from_f64(DType::float32, {1, 3, 4}, xb);
    const std::vector<double> yb = run_reference(*one, f).at("y").to_f64();
    for (int i = 0; i < 12; ++i) CHECK(yb[i] == doctest::Approx(y4[b * 12 + i]).epsilon(1e-6));
  }
}

TEST_CASE("--batch on a model that hard-codes its batch is an Error naming the node") {
  // Reshape to a constant [1, 12]: 4 x 12 elements do not fit (ONNX's or modelc's shape rule).
  std::string e = error_of([] { load(reshape_softmax({1, 12}, {"1", "12"}), 4); });
  CHECK(has(e, "--batch 4 (the model fixes batch 1)"));
  CHECK(has(e, "reshape"));
  CHECK(has(e, "dynamic_axes"));

  // Reshape to [1, -1]: the batch goes into the Softmax's dim: it would mix the items.
  e = error_of([] { load(reshape_softmax({1, -1}, {"1", "12"}), 4); });
  CHECK(has(e, "--batch 4 (the model fixes batch 1)"));
  CHECK(has(e, "node 'softmax' (Softmax"));
  CHECK(has(e, "works along axis -1"));
  CHECK(has(e, "would combine the items of a batch"));

  // Softmax along the batch itself.
  e = error_of([] { load(reshape_softmax({-1, 12}, {"1", "12"}, 0), 3); });
  CHECK(has(e, "works along axis 0"));

  // A reduction over the batch: its output does not hold it.
  onnx::ModelProto r = empty_model(13);
  add_input(r, "x", {"2", "4"});
  onnx::NodeProto* n = add_node(r, "ReduceMean", {"x"}, {"y"}, "mean");
  auto* axes = n->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(0);
  add_output(r, "y", {"1", "4"});
  e = error_of([&] { load(r, 8); });
  CHECK(has(e, "node 'mean' (ReduceMean"));
  CHECK(has(e, "it reads input 'x', which holds the batch in dim 0"));
  CHECK(has(e, "none of its outputs does"));

  // A Concat with a constant along the batch: not the batch times a constant.
  onnx::ModelProto c = empty_model(13);
  add_input(c, "x", {"1", "2"});
  *c.mutable_graph()->add_initializer() = float_tensor("k", {1, 2}, {1, 2});
  onnx::NodeProto* cat = add_node(c, "Concat", {"x", "k"}, {"y"}, "cat");
  auto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  add_output(c, "y", {"2", "2"});
  e = error_of([&] { load(c, 3); });
  CHECK(has(e, "'y' (output of node 'cat', Concat) is [2x2] at batch 1 and [4x2] at batch 3"));
}

TEST_CASE("--batch re-batches only a model whose inputs all fix one batch") {
  // Two inputs that fix different first dims: which is the batch is not clear.
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"1", "3"});
  add_input(m, "w", {"3", "3"});
  add_node(m, "MatMul", {"x", "w"}, {"y"});
  add_output(m, "y", {"1", "3"});
  std::string e = error_of([&] { load(m, 4); });
  CHECK(has(e, "fixes its inputs' first dims to different sizes ('w' 3, 'x' 1)"));
  CHECK(has(e, "--shape"));
  // With w's shape given, x is the batch.
  LoadOptions o;
  o.batch = 4;
  o.input_shapes["w"] = {3, 3};
  auto g = load_onnx_bytes(serialize(m), ".", "test.onnx", o);
  CHECK(g->inputs()[0]->shape() == Shape{4, 3});
  CHECK(g->outputs()[0]->shape() == Shape{4, 3});
  // A --shape asking for --batch's first dim takes part in the re-batch...
  LoadOptions s;
  s.batch = 4;
  s.input_shapes["x"] = {4, 3};
  s.input_shapes["w"] = {3, 3};
  CHECK(load_onnx_bytes(serialize(m), ".", "test.onnx", s)->inputs()[0]->shape() == Shape{4, 3});
  // ... and without --batch it is refused, saying how to re-batch.
  LoadOptions no_batch;
  no_batch.input_shapes["x"] = {4, 3};
  e = error_of([&] { load_onnx_bytes(serialize(m), ".", "test.onnx", no_batch); });
  CHECK(has(e, "the model fixes it to 1"));
  CHECK(has(e, "--batch 4 re-batches"));

  // A symbolic batch: --batch sets it and leaves a fixed input alone.
  onnx::ModelProto sym = empty_model(13);
  add_input(sym, "x", {"N", "3"});
  add_input(sym, "w", {"3", "3"});
  add_node(sym, "MatMul", {"x", "w"}, {"y"});
  add_output(sym, "y", {"N", "3"});
  g = load(sym, 6);
  CHECK(g->inputs()[0]->shape() == Shape{6, 3});
  CHECK(g->inputs()[1]->shape() == Shape{3, 3});
}

TEST_CASE("check_batch: where the inputs and outputs hold the batch") {
  // x[B, 3] -> Transpose -> [3, B] -> Relu: the output holds the batch in dim 1; a constant output none.
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"N", "3"});
  add_node(m, "Transpose", {"x"}, {"t"}, "transpose");
  add_node(m, "Relu", {"t"}, {"y"});
  *m.mutable_graph()->add_initializer() = float_tensor("k", {2}, {1, 2});
  add_node(m, "Relu", {"k"}, {"z"});
  add_output(m, "y", {"3", "N"});
  add_output(m, "z", {"2"});
  const auto a = load(m, 2), b = load(m, 5);
  const BatchLayout l = check_batch(*a, 2, *b, 5, "batch profiles 2,5");
  CHECK(l.inputs == std::vector<int>{0});
  CHECK(l.outputs == std::vector<int>{1, -1});
  CHECK(has(error_of([&] { check_batch(*a, 2, *b, 2, "x"); }), "internal"));
}

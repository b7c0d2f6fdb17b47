// Views and shape math: Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout,
// Shape, Size, ConstantOfShape, Constant, Range.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <memory>

#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;

namespace {

// A one-node graph at a given opset: inputs are graph inputs (fed at run
// time) or constants; every output is a graph output.
class Case {
 public:
  explicit Case(int opset) { g_->set_opset(opset); }
  Case& in(const std::string& name, const Tensor& t) {
    Value* v = g_->add_value(name);
    v->set_type(t.dtype(), t.shape());
    g_->add_input(v);
    feeds_[name] = t;
    ins_.push_back(v);
    return *this;
  }
  Case& cst(const std::string& name, const Tensor& t) {
    ins_.push_back(g_->add_constant(name, t));
    return *this;
  }
  Case& none() {
    ins_.push_back(nullptr);
    return *this;
  }
  Node& node(const std::string& op, int outputs = 1) {
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(g_->add_value("y" + std::to_string(i)));
    node_ = g_->add_node(op, op, ins_, outs);
    for (Value* o : outs) g_->add_output(o);
    return *node_;
  }
  void infer() { ops::infer_graph(*g_); }
  std::vector<Tensor> run() {
    infer();
    TensorMap r = run_reference(*g_, feeds_);
    std::vector<Tensor> out;
    for (Value* o : g_->outputs()) out.push_back(r.at(o->name()));
    return out;
  }
  Tensor run1() { return run().at(0); }
  Node& n() { return *node_; }
  Value& out(int i = 0) { return n().output(i); }

 private:
  std::unique_ptr<Graph> g_ = std::make_unique<Graph>();
  std::vector<Value*> ins_;
  TensorMap feeds_;
  Node* node_ = nullptr;
};

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_f32(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_i64(DType::int64, std::move(s), v); }
Tensor iota(Shape s) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(s), v);
}
std::vector<float> vals(const Tensor& t) {
  REQUIRE(t.dtype() == DType::float32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
Tensor f16_bits(Shape s, std::vector<uint16_t> bits) {
  std::vector<uint8_t> bytes(bits.size() * 2);
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  return Tensor(DType::float16, std::move(s), bytes);
}
std::vector<uint16_t> bits16(const Tensor& t) {
  std::vector<uint16_t> v(static_cast<std::size_t>(t.numel()));
  if (!v.empty()) std::memcpy(v.data(), t.raw(), v.size() * 2);
  return v;
}
Attribute tensor_attr(const Tensor& t) {
  Attribute a;
  a.kind = Attribute::Kind::t;
  a.t = t;
  return a;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

constexpr int64_t kBig = (int64_t{1} << 53) + 1;  // not representable as a double
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

}  // namespace

// ---- Reshape ------------------------------------------------------------------

TEST_CASE("Reshape: 0 copies a dim, -1 is inferred, bytes are kept") {
  Case c(13);
  c.in("x", iota({2, 3, 4})).cst("shape", i64({3}, {0, -1, 2})).node("Reshape");
  const Tensor y = c.run1();
  CHECK(y.shape() == Shape{2, 6, 2});
  CHECK(vals(y) == vals(iota({24})));

  Case h(5);
  h.in("x", f16_bits({2, 2}, {0x7d01, 0x8000, 0xfc00, 0x0001})).cst("shape", i64({1}, {-1})).node("Reshape");
  CHECK(bits16(h.run1()) == std::vector<uint16_t>{0x7d01, 0x8000, 0xfc00, 0x0001});

  Case big(13);
  big.cst("x", i64({2, 1}, {kBig, kMin})).cst("shape", i64({1}, {2})).node("Reshape");
  big.infer();
  CHECK(big.out().constant().to_i64() == std::vector<int64_t>{kBig, kMin});
}

TEST_CASE("Reshape allowzero (opset 14): 0 is a real zero") {
  Case c(14);
  c.in("x", iota({0, 3})).cst("shape", i64({2}, {3, 0})).node("Reshape").set_attr_int("allowzero", 1);
  CHECK(c.run1().shape() == Shape{3, 0});

  Case copy(14);  // allowzero=0: the 0 copies input dim 1
  copy.in("x", iota({2, 3})).cst("shape", i64({2}, {3, 0})).node("Reshape");
  CHECK_THROWS_AS(copy.infer(), Error);  // 3x3 != 6 elements

  Case both(14);
  both.in("x", iota({0, 3})).cst("shape", i64({2}, {0, -1})).node("Reshape").set_attr_int("allowzero", 1);
  CHECK(has(error_of([&] { both.infer(); }), "allowzero"));

  Case old(13);
  old.in("x", iota({2})).cst("shape", i64({1}, {2})).node("Reshape").set_attr_int("allowzero", 1);
  CHECK(has(error_of([&] { old.infer(); }), "'allowzero'"));
}

TEST_CASE("Reshape rejects bad shapes") {
  auto bad = [](std::vector<int64_t> shape, Shape in = {2, 3}) {
    Case c(13);
    c.in("x", iota(in)).cst("shape", i64({static_cast<int64_t>(shape.size())}, shape)).node("Reshape");
    return error_of([&] { c.infer(); });
  };
  CHECK(has(bad({-1, -1}), "'shape'"));
  CHECK(has(bad({4, 2}), "cannot reshape"));
  CHECK(has(bad({-1, 4}), "cannot reshape"));
  CHECK(has(bad({1, 1, 0}), "'shape'"));  // 0 past the input's rank
  CHECK(has(bad({-2, 3}), "'shape'"));
  CHECK(has(bad({0, -1}, {0, 3}), "'shape'"));  // -1 with the others multiplying to 0
  CHECK(has(bad({kMax, kMax}), "'shape'"));     // overflow

  Case runtime(13);
  runtime.in("x", iota({2})).in("shape", i64({1}, {2})).node("Reshape");
  CHECK(has(error_of([&] { runtime.infer(); }), "shape"));

  Case i32(13);
  i32.in("x", iota({2})).cst("shape", Tensor::from_i64(DType::int32, {1}, {2})).node("Reshape");
  CHECK_THROWS_AS(i32.infer(), Error);
}

TEST_CASE("Shape feeds Reshape at import: the shape chain resolves without data") {
  Graph g;
  g.set_opset(13);
  Value* x = g.add_value("x");
  x->set_type(DType::float32, {2, 3});
  g.add_input(x);
  Value* like = g.add_value("like");
  like->set_type(DType::float32, {3, 2});
  g.add_input(like);
  Value* s = g.add_value("s");
  Value* y = g.add_value("y");
  g.add_node("Shape", "shape", {like}, {s});
  g.add_node("Reshape", "reshape", {x, s}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  CHECK(s->is_constant());
  CHECK(s->constant().to_i64() == std::vector<int64_t>{3, 2});
  CHECK(y->shape() == Shape{3, 2});
  const TensorMap r = run_reference(g, {{"x", iota({2, 3})}, {"like", iota({3, 2})}});
  CHECK(vals(r.at("y")) == std::vector<float>{0, 1, 2, 3, 4, 5});
}

// ---- Flatten ------------------------------------------------------------------

TEST_CASE("Flatten: axis in [0, rank], negative from opset 11") {
  auto shape_of = [](int opset, int64_t axis) {
    Case c(opset);
    c.in("x", iota({2, 3, 4})).node("Flatten").set_attr_int("axis", axis);
    return c.run1().shape();
  };
  CHECK(shape_of(13, 0) == Shape{1, 24});
  CHECK(shape_of(13, 3) == Shape{24, 1});
  CHECK(shape_of(13, -1) == Shape{6, 4});
  CHECK(shape_of(11, -3) == Shape{1, 24});

  Case def(1);
  def.in("x", iota({2, 3, 4})).node("Flatten");
  CHECK(def.run1().shape() == Shape{2, 12});

  Case neg(9);
  neg.in("x", iota({2, 3})).node("Flatten").set_attr_int("axis", -1);
  CHECK(has(error_of([&] { neg.infer(); }), "'axis'"));

  Case range(13);
  range.in("x", iota({2, 3})).node("Flatten").set_attr_int("axis", 3);
  CHECK(has(error_of([&] { range.infer(); }), "'axis'"));
}

// ---- Squeeze / Unsqueeze ------------------------------------------------------

TEST_CASE("Squeeze: attribute before 13, input from 13, all 1s when absent") {
  Case all(13);
  all.in("x", iota({1, 3, 1, 2})).node("Squeeze");
  CHECK(all.run1().shape() == Shape{3, 2});

  Case attr(11);
  attr.in("x", iota({1, 3, 1})).node("Squeeze").set_attr_ints("axes", {-1});
  CHECK(attr.run1().shape() == Shape{1, 3});

  Case input(13);
  input.in("x", iota({1, 3, 1})).cst("axes", i64({1}, {0})).node("Squeeze");
  const Tensor y = input.run1();
  CHECK(y.shape() == Shape{3, 1});
  CHECK(vals(y) == std::vector<float>{0, 1, 2});

  Case notone(13);
  notone.in("x", iota({1, 3})).cst("axes", i64({1}, {1})).node("Squeeze");
  CHECK(has(error_of([&] { notone.infer(); }), "'axes'"));

  Case neg(10);
  neg.in("x", iota({1, 3})).node("Squeeze").set_attr_ints("axes", {-2});
  CHECK(has(error_of([&] { neg.infer(); }), "'axes'"));

  Case attr13(13);
  attr13.in("x", iota({1, 3})).node("Squeeze").set_attr_ints("axes", {0});
  CHECK(has(error_of([&] { attr13.infer(); }), "'axes'"));

  Case dup(13);
  dup.in("x", iota({1, 3})).cst("axes", i64({2}, {0, -2})).node("Squeeze");
  CHECK(has(error_of([&] { dup.infer(); }), "'axes'"));
}

TEST_CASE("Unsqueeze: axes index the output, unsorted and negative") {
  Case c(13);
  c.in("x", iota({3, 4})).cst("axes", i64({2}, {2, 0})).node("Unsqueeze");
  CHECK(c.run1().shape() == Shape{1, 3, 1, 4});

  Case neg(13);
  neg.in("x", iota({3})).cst("axes", i64({2}, {-1, 0})).node("Unsqueeze");
  CHECK(neg.run1().shape() == Shape{1, 3, 1});

  Case attr(11);
  attr.in("x", iota({3})).node("Unsqueeze").set_attr_ints("axes", {0, -1});
  CHECK(attr.run1().shape() == Shape{1, 3, 1});

  Case scalar(13);
  scalar.in("x", f32({}, {7})).cst("axes", i64({1}, {0})).node("Unsqueeze");
  const Tensor s = scalar.run1();
  CHECK(s.shape() == Shape{1});
  CHECK(vals(s) == std::vector<float>{7});

  Case missing(11);
  missing.in("x", iota({3})).node("Unsqueeze");
  CHECK(has(error_of([&] { missing.infer(); }), "'axes'"));

  Case oldneg(10);
  oldneg.in("x", iota({3})).node("Unsqueeze").set_attr_ints("axes", {-1});
  CHECK(has(error_of([&] { oldneg.infer(); }), "'axes'"));

  Case range(13);
  range.in("x", iota({3})).cst("axes", i64({1}, {2})).node("Unsqueeze");
  CHECK(has(error_of([&] { range.infer(); }), "'axes'"));

  Case dup(13);
  dup.in("x", iota({3})).cst("axes", i64({2}, {0, 0})).node("Unsqueeze");
  CHECK(has(error_of([&] { dup.infer(); }), "'axes'"));
}

// ---- Identity / Dropout -------------------------------------------------------

TEST_CASE("Identity and Dropout pass the input through") {
  Case id(16);
  id.in("x", f16_bits({2}, {0x7d01, 0x8000})).node("Identity");
  CHECK(bits16(id.run1()) == std::vector<uint16_t>{0x7d01, 0x8000});

  Case d7(7);  // mask of the input's type before opset 10
  d7.in("x", iota({2, 2})).node("Dropout", 2).set_attr_float("ratio", 0.3);
  const auto y7 = d7.run();
  CHECK(vals(y7[0]) == std::vector<float>{0, 1, 2, 3});
  CHECK(vals(y7[1]) == std::vector<float>{1, 1, 1, 1});

  Case d10(10);
  d10.in("x", iota({3})).node("Dropout", 2);
  const auto y10 = d10.run();
  CHECK(y10[1].dtype() == DType::boolean);
  CHECK(y10[1].to_i64() == std::vector<int64_t>{1, 1, 1});

  Case d12(13);
  d12.in("x", iota({3})).cst("ratio", f32({}, {0.5f})).cst("training_mode", Tensor::from_i64(DType::boolean, {}, {0}));
  d12.node("Dropout", 2).set_attr_int("seed", 0);
  const auto y12 = d12.run();
  CHECK(vals(y12[0]) == std::vector<float>{0, 1, 2});
  CHECK(y12[1].to_i64() == std::vector<int64_t>{1, 1, 1});

  Case d6(6);
  d6.in("x", iota({2})).node("Dropout").set_attr_int("is_test", 1);
  CHECK(vals(d6.run1()) == std::vector<float>{0, 1});

  Case is_test7(7);  // is_test left the op at opset 7
  is_test7.in("x", iota({2})).node("Dropout").set_attr_int("is_test", 1);
  CHECK(has(error_of([&] { is_test7.infer(); }), "'is_test'"));
}

TEST_CASE("Dropout training mode is an error") {
  Case on(12);
  on.in("x", iota({3})).none().cst("training_mode", Tensor::from_i64(DType::boolean, {}, {1})).node("Dropout");
  const std::string e = error_of([&] { on.infer(); });
  CHECK(has(e, "training mode is not supported"));
  CHECK(has(e, "'training_mode'"));

  Case runtime(12);
  runtime.in("x", iota({3})).none().in("t", Tensor::from_i64(DType::boolean, {}, {0})).node("Dropout");
  CHECK(has(error_of([&] { runtime.infer(); }), "'training_mode'"));

  Case half(12);  // a ratio other than 0 computed at run time: still an error
  half.in("x", iota({3})).cst("ratio", f32({}, {0.5f})).cst("training_mode", Tensor::from_i64(DType::boolean, {}, {1}));
  half.node("Dropout");
  CHECK(has(error_of([&] { half.infer(); }), "training mode is not supported"));
}

TEST_CASE("Dropout in training mode with a constant ratio of 0 is the identity (torchvision's swin_t)") {
  Case z(13);
  z.in("x", iota({3})).cst("ratio", f32({}, {0.0f})).cst("training_mode", Tensor::from_i64(DType::boolean, {}, {1}));
  z.node("Dropout", 2);
  const auto y = z.run();
  CHECK(vals(y[0]) == std::vector<float>{0, 1, 2});
  CHECK(y[1].to_i64() == std::vector<int64_t>{1, 1, 1});
}

// ---- Shape / Size -------------------------------------------------------------

TEST_CASE("Shape and Size are constants even for a run-time input") {
  Case s(13);
  s.in("x", iota({2, 3, 4})).node("Shape");
  s.infer();
  REQUIRE(s.out().is_constant());
  CHECK(s.out().constant().dtype() == DType::int64);
  CHECK(s.out().constant().to_i64() == std::vector<int64_t>{2, 3, 4});
  CHECK(s.run1().to_i64() == std::vector<int64_t>{2, 3, 4});

  auto sliced = [](int64_t start, std::optional<int64_t> end) {
    Case c(15);
    Node& n = c.in("x", iota({2, 3, 4})).node("Shape");
    n.set_attr_int("start", start);
    if (end) n.set_attr_int("end", *end);
    c.infer();
    return c.out().constant().to_i64();
  };
  CHECK(sliced(1, std::nullopt) == std::vector<int64_t>{3, 4});
  CHECK(sliced(-1, std::nullopt) == std::vector<int64_t>{4});
  CHECK(sliced(0, -1) == std::vector<int64_t>{2, 3});
  CHECK(sliced(-10, 10) == std::vector<int64_t>{2, 3, 4});  // clamped
  CHECK(sliced(2, 1).empty());

  Case old(14);
  old.in("x", iota({2})).node("Shape").set_attr_int("start", 1);
  CHECK(has(error_of([&] { old.infer(); }), "'start'"));

  Case z(13);
  z.in("x", iota({2, 0, 5})).node("Size");
  z.infer();
  REQUIRE(z.out().is_constant());
  CHECK(z.out().shape().empty());
  CHECK(z.out().constant().to_i64() == std::vector<int64_t>{0});

  Case sz(1);
  sz.in("x", iota({2, 3})).node("Size");
  CHECK(sz.run1().to_i64() == std::vector<int64_t>{6});
}

// ---- ConstantOfShape ----------------------------------------------------------

TEST_CASE("ConstantOfShape: value attribute, default float 0") {
  Case def(9);
  def.cst("s", i64({2}, {2, 3})).node("ConstantOfShape");
  def.infer();
  REQUIRE(def.out().is_constant());
  CHECK(def.out().constant().dtype() == DType::float32);
  CHECK(vals(def.out().constant()) == std::vector<float>(6, 0.0f));

  Case big(20);
  big.cst("s", i64({1}, {3})).node("ConstantOfShape").set_attr("value", tensor_attr(i64({1}, {kBig})));
  CHECK(big.run1().to_i64() == std::vector<int64_t>{kBig, kBig, kBig});

  Case h(9);
  h.cst("s", i64({1}, {2})).node("ConstantOfShape").set_attr("value", tensor_attr(f16_bits({1}, {0x7d01})));
  CHECK(bits16(h.run1()) == std::vector<uint16_t>{0x7d01, 0x7d01});

  Case scalar(9);
  scalar.cst("s", i64({0}, {})).node("ConstantOfShape");
  CHECK(scalar.run1().shape().empty());

  Case zero(9);
  zero.cst("s", i64({2}, {0, 4})).node("ConstantOfShape");
  CHECK(zero.run1().shape() == Shape{0, 4});

  Case neg(9);
  neg.cst("s", i64({1}, {-1})).node("ConstantOfShape");
  CHECK(has(error_of([&] { neg.infer(); }), "negative"));

  Case two(9);
  two.cst("s", i64({1}, {2})).node("ConstantOfShape").set_attr("value", tensor_attr(f32({2}, {1, 2})));
  CHECK(has(error_of([&] { two.infer(); }), "'value'"));

  Case runtime(9);
  runtime.in("s", i64({1}, {2})).node("ConstantOfShape");
  CHECK(has(error_of([&] { runtime.infer(); }), "constant"));

  Case overflow(9);
  overflow.cst("s", i64({2}, {kMax, 4})).node("ConstantOfShape");
  CHECK_THROWS_AS(overflow.infer(), Error);
}

// ---- Constant -----------------------------------------------------------------

TEST_CASE("Constant: value, value_float(s), value_int(s); output is constant") {
  Case v(9);
  v.node("Constant").set_attr("value", tensor_attr(i64({2}, {kBig, kMin})));
  v.infer();
  REQUIRE(v.out().is_constant());
  CHECK(v.out().constant().to_i64() == std::vector<int64_t>{kBig, kMin});
  CHECK(v.run1().to_i64() == std::vector<int64_t>{kBig, kMin});

  Case f(12);
  f.node("Constant").set_attr_float("value_float", 2.5);
  f.infer();
  CHECK(f.out().dtype() == DType::float32);
  CHECK(f.out().shape().empty());
  CHECK(vals(f.out().constant()) == std::vector<float>{2.5f});

  Case fs(13);
  fs.node("Constant").set_attr_floats("value_floats", {1, 2});
  fs.infer();
  CHECK(vals(fs.out().constant()) == std::vector<float>{1, 2});

  Case i(12);
  i.node("Constant").set_attr_int("value_int", kMax);
  i.infer();
  CHECK(i.out().dtype() == DType::int64);
  CHECK(i.out().shape().empty());
  CHECK(i.out().constant().to_i64() == std::vector<int64_t>{kMax});

  Case is(12);
  is.node("Constant").set_attr_ints("value_ints", {kBig, 3});
  is.infer();
  CHECK(is.out().constant().to_i64() == std::vector<int64_t>{kBig, 3});
}

TEST_CASE("Constant rejects sparse, string, missing and doubled values") {
  Case sparse(13);
  Attribute a;
  a.kind = Attribute::Kind::t;
  sparse.node("Constant").set_attr("sparse_value", a);
  CHECK(has(error_of([&] { sparse.infer(); }), "'sparse_value'"));

  Case str(13);
  str.node("Constant").set_attr_string("value_string", "hi");
  CHECK(has(error_of([&] { str.infer(); }), "'value_string'"));

  Case strs(13);
  Attribute ss;
  ss.kind = Attribute::Kind::strings;
  ss.strings = {"a"};
  strs.node("Constant").set_attr("value_strings", ss);
  CHECK(has(error_of([&] { strs.infer(); }), "'value_strings'"));

  Case none(13);
  none.node("Constant");
  CHECK_THROWS_AS(none.infer(), Error);

  Case two(13);
  Node& n = two.node("Constant");
  n.set_attr_int("value_int", 1);
  n.set_attr_float("value_float", 1);
  CHECK(has(error_of([&] { two.infer(); }), "'value_float'"));

  Case early(11);  // value_float arrived at opset 12
  early.node("Constant").set_attr_float("value_float", 1);
  CHECK(has(error_of([&] { early.infer(); }), "'value_float'"));
}

// ---- Range --------------------------------------------------------------------

TEST_CASE("Range: int and float, exact int64 at the extremes") {
  Case i(11);
  i.cst("s", i64({}, {10})).cst("l", i64({}, {4})).cst("d", i64({}, {-3})).node("Range");
  i.infer();
  REQUIRE(i.out().is_constant());
  CHECK(i.out().constant().to_i64() == std::vector<int64_t>{10, 7});

  Case i32(11);
  auto t32 = [](int64_t v) { return Tensor::from_i64(DType::int32, {}, {v}); };
  i32.cst("s", t32(0)).cst("l", t32(5)).cst("d", t32(2)).node("Range");
  const Tensor r32 = i32.run1();
  CHECK(r32.dtype() == DType::int32);
  CHECK(r32.to_i64() == std::vector<int64_t>{0, 2, 4});

  Case f(11);
  f.cst("s", f32({}, {1})).cst("l", f32({}, {2})).cst("d", f32({}, {0.25f})).node("Range");
  CHECK(vals(f.run1()) == std::vector<float>{1, 1.25f, 1.5f, 1.75f});

  Case ext(11);  // (2^64 - 1) / (2^63 - 1) rounds up to 3 elements, no overflow
  ext.cst("s", i64({}, {kMin})).cst("l", i64({}, {kMax})).cst("d", i64({}, {kMax})).node("Range");
  CHECK(ext.run1().to_i64() == std::vector<int64_t>{kMin, -1, kMax - 1});

  Case ext_neg(11);
  ext_neg.cst("s", i64({}, {kMax})).cst("l", i64({}, {kMin})).cst("d", i64({}, {kMin})).node("Range");
  CHECK(ext_neg.run1().to_i64() == std::vector<int64_t>{kMax, -1});

  Case empty(11);
  empty.cst("s", i64({}, {5})).cst("l", i64({}, {1})).cst("d", i64({}, {1})).node("Range");
  CHECK(empty.run1().shape() == Shape{0});
}

TEST_CASE("Range rejects zero delta, run-time inputs, mixed dtypes, huge lengths") {
  Case zero(11);
  zero.cst("s", i64({}, {0})).cst("l", i64({}, {4})).cst("d", i64({}, {0})).node("Range");
  CHECK(has(error_of([&] { zero.infer(); }), "'delta'"));

  Case fzero(11);
  fzero.cst("s", f32({}, {0})).cst("l", f32({}, {4})).cst("d", f32({}, {0})).node("Range");
  CHECK(has(error_of([&] { fzero.infer(); }), "'delta'"));

  Case runtime(11);
  runtime.in("s", i64({}, {0})).cst("l", i64({}, {4})).cst("d", i64({}, {1})).node("Range");
  CHECK(has(error_of([&] { runtime.infer(); }), "'start'"));

  Case mixed(11);
  mixed.cst("s", i64({}, {0})).cst("l", f32({}, {4})).cst("d", i64({}, {1})).node("Range");
  CHECK(has(error_of([&] { mixed.infer(); }), "'limit'"));

  Case huge(11);
  huge.cst("s", i64({}, {0})).cst("l", i64({}, {kMax})).cst("d", i64({}, {1})).node("Range");
  CHECK_THROWS_AS(huge.infer(), Error);

  Case fhuge(11);
  fhuge.cst("s", f32({}, {0})).cst("l", f32({}, {1e30f})).cst("d", f32({}, {1})).node("Range");
  CHECK_THROWS_AS(fhuge.infer(), Error);

  Case vec(11);
  vec.cst("s", i64({2}, {0, 1})).cst("l", i64({}, {4})).cst("d", i64({}, {1})).node("Range");
  CHECK(has(error_of([&] { vec.infer(); }), "'start'"));
}

TEST_CASE("infer_node: types the outputs, folds a node of constant inputs, names untyped inputs") {
  Graph g;
  g.set_opset(13);
  // One node reading `in`, inferred on its own; returns its output.
  auto infer = [&g](const std::string& op, Value* in) {
    Value* out = g.add_value(op + "_out");
    Node* n = g.add_node(op, op, {in}, {out});
    ops::infer_node(*n, ops::lookup(*n));
    return out;
  };
  Value* x = g.add_value("x");
  x->set_type(DType::float32, {2, 3});
  const Value* relu = infer("Relu", x);
  CHECK(relu->shape() == Shape{2, 3});
  CHECK_FALSE(relu->is_constant());  // x is computed at run time
  const Value* sqrt = infer("Sqrt", g.add_constant("c", Tensor::from_f32({2}, {1, 4})));
  REQUIRE(sqrt->is_constant());
  CHECK(sqrt->constant().to_f64() == std::vector<double>{1, 2});
  CHECK_THROWS_WITH_AS(infer("Size", g.add_value("untyped")), doctest::Contains("input 'untyped' has no type"), Error);
}

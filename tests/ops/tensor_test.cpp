// Data movement ops: Concat, Split, Slice, Gather, Transpose.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>
#include <memory>

#include "ops/shape_inference.h"
#include "ops/tensor.h"
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

 private:
  std::unique_ptr<Graph> g_ = std::make_unique<Graph>();
  std::vector<Value*> ins_;
  TensorMap feeds_;
  Node* node_ = nullptr;
};

Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_f32(std::move(s), v); }
Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_i64(DType::int64, std::move(s), v); }
Tensor i32(Shape s, std::vector<int64_t> v) { return Tensor::from_i64(DType::int32, std::move(s), v); }
Tensor iota(Shape s) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(std::move(s), v);
}
std::vector<float> vals(const Tensor& t) {
  REQUIRE(t.dtype() == DType::float32);
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}
// float16 from raw bit patterns (NaN payloads and -0 show any double round trip).
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

// ---- Concat -------------------------------------------------------------------

TEST_CASE("Concat joins along the axis, negative axes from opset 11") {
  Case c(13);
  c.in("a", iota({2, 2})).in("b", f32({2, 1}, {10, 11})).node("Concat").set_attr_int("axis", -1);
  const Tensor y = c.run1();
  CHECK(y.shape() == Shape{2, 3});
  CHECK(vals(y) == std::vector<float>{0, 1, 10, 2, 3, 11});

  Case c0(4);
  c0.in("a", iota({1, 2})).in("b", iota({2, 2})).node("Concat").set_attr_int("axis", 0);
  CHECK(vals(c0.run1()) == std::vector<float>{0, 1, 0, 1, 2, 3});

  Case old(10);
  old.in("a", iota({2})).in("b", iota({2})).node("Concat").set_attr_int("axis", -1);
  CHECK(has(error_of([&] { old.infer(); }), "'axis'"));
}

TEST_CASE("Concat keeps zero-size inputs and rejects bad shapes, dtypes, axes") {
  Case z(13);
  z.in("a", iota({2, 0})).in("b", iota({2, 1})).node("Concat").set_attr_int("axis", 1);
  CHECK(vals(z.run1()) == std::vector<float>{0, 1});

  Case dims(13);
  dims.in("a", iota({2, 2})).in("b", iota({3, 1})).node("Concat").set_attr_int("axis", 1);
  CHECK_THROWS_AS(dims.infer(), Error);

  Case rank(13);
  rank.in("a", iota({2, 2})).in("b", iota({4})).node("Concat").set_attr_int("axis", 0);
  CHECK_THROWS_AS(rank.infer(), Error);

  Case dt(13);
  dt.in("a", iota({2})).in("b", i64({2}, {1, 2})).node("Concat").set_attr_int("axis", 0);
  CHECK(has(error_of([&] { dt.infer(); }), "dtype"));

  Case noaxis(13);
  noaxis.in("a", iota({2})).node("Concat");
  CHECK(has(error_of([&] { noaxis.infer(); }), "'axis'"));

  Case range(13);
  range.in("a", iota({2})).node("Concat").set_attr_int("axis", 1);
  CHECK(has(error_of([&] { range.infer(); }), "'axis'"));

  Case scalar(13);
  scalar.in("a", f32({}, {1})).node("Concat").set_attr_int("axis", 0);
  CHECK_THROWS_AS(scalar.infer(), Error);
}

// ---- Split --------------------------------------------------------------------

TEST_CASE("Split before opset 13: the split attribute, or equal parts") {
  Case c(11);
  Node& n = c.in("x", iota({2, 3})).node("Split", 2);
  n.set_attr_int("axis", -1);
  n.set_attr_ints("split", {1, 2});
  const auto y = c.run();
  CHECK(y[0].shape() == Shape{2, 1});
  CHECK(vals(y[0]) == std::vector<float>{0, 3});
  CHECK(vals(y[1]) == std::vector<float>{1, 2, 4, 5});

  Case eq(2);
  eq.in("x", iota({4})).node("Split", 2);
  const auto e = eq.run();
  CHECK(vals(e[0]) == std::vector<float>{0, 1});
  CHECK(vals(e[1]) == std::vector<float>{2, 3});

  Case sum(11);
  sum.in("x", iota({4})).node("Split", 2).set_attr_ints("split", {1, 2});
  CHECK(has(error_of([&] { sum.infer(); }), "'split'"));

  Case neg(11);
  neg.in("x", iota({4})).node("Split", 2).set_attr_ints("split", {-1, 5});
  CHECK(has(error_of([&] { neg.infer(); }), "'split'"));

  Case count(11);
  count.in("x", iota({4})).node("Split", 2).set_attr_ints("split", {4});
  CHECK(has(error_of([&] { count.infer(); }), "'split'"));

  // A negative axis counts from the back before 11 too, as ONNX's shape
  // inference of Split-2 does (models exported at opset 6 use -1).
  Case negaxis(10);
  negaxis.in("x", iota({2, 4})).node("Split", 2).set_attr_int("axis", -1);
  const auto na = negaxis.run();
  CHECK(na[0].shape() == Shape{2, 2});
  CHECK(vals(na[1]) == std::vector<float>{2, 3, 6, 7});
  Case badaxis(10);
  badaxis.in("x", iota({4})).node("Split", 2).set_attr_int("axis", -2);
  CHECK(has(error_of([&] { badaxis.infer(); }), "'axis'"));
}

TEST_CASE("Split from opset 13: the split input, zero-size parts, uneven needs split") {
  Case c(13);
  c.in("x", iota({5})).cst("split", i64({3}, {2, 0, 3})).node("Split", 3);
  const auto y = c.run();
  CHECK(vals(y[0]) == std::vector<float>{0, 1});
  CHECK(y[1].shape() == Shape{0});
  CHECK(vals(y[2]) == std::vector<float>{2, 3, 4});

  Case uneven(13);
  uneven.in("x", iota({5})).node("Split", 2);
  CHECK_THROWS_AS(uneven.infer(), Error);

  Case attr(13);
  attr.in("x", iota({4})).node("Split", 2).set_attr_ints("split", {2, 2});
  CHECK(has(error_of([&] { attr.infer(); }), "'split'"));  // an attribute no longer

  Case runtime(13);
  runtime.in("x", iota({4})).in("split", i64({2}, {2, 2})).node("Split", 2);
  CHECK(has(error_of([&] { runtime.infer(); }), "split"));
}

TEST_CASE("Split from opset 18: num_outputs with a smaller last chunk") {
  Case c(18);
  Node& n = c.in("x", iota({2, 8})).node("Split", 3);
  n.set_attr_int("axis", 1);
  n.set_attr_int("num_outputs", 3);
  const auto y = c.run();
  CHECK(y[0].shape() == Shape{2, 3});
  CHECK(y[1].shape() == Shape{2, 3});
  CHECK(y[2].shape() == Shape{2, 2});
  CHECK(vals(y[0]) == std::vector<float>{0, 1, 2, 8, 9, 10});
  CHECK(vals(y[2]) == std::vector<float>{6, 7, 14, 15});

  Case both(18);
  both.in("x", iota({4})).cst("split", i64({2}, {2, 2})).node("Split", 2).set_attr_int("num_outputs", 2);
  CHECK(has(error_of([&] { both.infer(); }), "'num_outputs'"));

  Case neither(18);
  neither.in("x", iota({4})).node("Split", 2);
  CHECK(has(error_of([&] { neither.infer(); }), "'num_outputs'"));

  Case mismatch(18);
  mismatch.in("x", iota({4})).node("Split", 2).set_attr_int("num_outputs", 3);
  CHECK(has(error_of([&] { mismatch.infer(); }), "'num_outputs'"));

  Case toomany(18);  // ceil(5/4) = 2: 2+2+2 > 5, no valid last chunk
  toomany.in("x", iota({5})).node("Split", 4).set_attr_int("num_outputs", 4);
  CHECK(has(error_of([&] { toomany.infer(); }), "'num_outputs'"));

  Case at17(17);
  at17.in("x", iota({4})).node("Split", 2).set_attr_int("num_outputs", 2);
  CHECK(has(error_of([&] { at17.infer(); }), "'num_outputs'"));
}

// ---- Slice --------------------------------------------------------------------

TEST_CASE("Slice before opset 10: starts/ends/axes attributes, clamped") {
  Case c(9);
  Node& n = c.in("x", iota({3, 4})).node("Slice");
  n.set_attr_ints("starts", {1, -3});
  n.set_attr_ints("ends", {1000, -1});
  n.set_attr_ints("axes", {0, 1});
  const Tensor y = c.run1();
  CHECK(y.shape() == Shape{2, 2});
  CHECK(vals(y) == std::vector<float>{5, 6, 9, 10});

  Case noaxes(1);
  Node& m = noaxes.in("x", iota({3, 4})).node("Slice");
  m.set_attr_ints("starts", {2});
  m.set_attr_ints("ends", {3});
  CHECK(vals(noaxes.run1()) == std::vector<float>{8, 9, 10, 11});

  Case missing(9);
  missing.in("x", iota({3})).node("Slice").set_attr_ints("starts", {0});
  CHECK(has(error_of([&] { missing.infer(); }), "'ends'"));

  Case negaxis(9);
  Node& k = negaxis.in("x", iota({3})).node("Slice");
  k.set_attr_ints("starts", {0});
  k.set_attr_ints("ends", {1});
  k.set_attr_ints("axes", {-1});
  CHECK(has(error_of([&] { negaxis.infer(); }), "'axes'"));
}

TEST_CASE("Slice from opset 10: inputs with steps, negative steps, INT_MAX/INT_MIN") {
  Case c(13);
  c.in("x", iota({3, 4}))
      .cst("starts", i64({2}, {0, 1}))
      .cst("ends", i64({2}, {kMax, 4}))
      .cst("axes", i64({2}, {0, -1}))
      .cst("steps", i64({2}, {2, 2}));
  c.node("Slice");
  CHECK(vals(c.run1()) == std::vector<float>{1, 3, 9, 11});

  // Full reverse: start INT_MAX clamps to dim-1, end INT_MIN clamps to -1.
  Case rev(13);
  rev.in("x", iota({5})).cst("starts", i64({1}, {kMax})).cst("ends", i64({1}, {kMin}));
  rev.cst("axes", i64({1}, {0})).cst("steps", i64({1}, {-2}));
  rev.node("Slice");
  CHECK(vals(rev.run1()) == std::vector<float>{4, 2, 0});

  // Per the spec, a negative-step start is clamped into [0, dim-1]: -10 -> 0.
  Case clamp(13);
  clamp.in("x", iota({5})).cst("starts", i64({1}, {-10})).cst("ends", i64({1}, {-10}));
  clamp.none().cst("steps", i64({1}, {-1}));
  clamp.node("Slice");
  CHECK(vals(clamp.run1()) == std::vector<float>{0});

  // Steps of magnitude INT64_MIN must not overflow.
  Case huge(13);
  huge.in("x", iota({5})).cst("starts", i64({1}, {4})).cst("ends", i64({1}, {kMin}));
  huge.cst("axes", i64({1}, {0})).cst("steps", i64({1}, {kMin}));
  huge.node("Slice");
  CHECK(vals(huge.run1()) == std::vector<float>{4});

  // Out-of-bounds start: empty; int32 starts/ends are fine.
  Case empty(11);
  empty.in("x", iota({2, 3})).cst("starts", i32({1}, {1000})).cst("ends", i32({1}, {1001})).cst("axes", i32({1}, {1}));
  empty.node("Slice");
  CHECK(empty.run1().shape() == Shape{2, 0});
}

TEST_CASE("Slice rejects bad steps, axes and lengths") {
  auto make = [](int opset, Tensor starts, Tensor ends, std::optional<Tensor> axes, std::optional<Tensor> steps) {
    auto c = std::make_unique<Case>(opset);
    c->in("x", iota({3, 4})).cst("starts", starts).cst("ends", ends);
    if (axes) c->cst("axes", *axes); else c->none();
    if (steps) c->cst("steps", *steps);
    c->node("Slice");
    return c;
  };
  CHECK(has(error_of([&] { make(13, i64({1}, {0}), i64({1}, {2}), std::nullopt, i64({1}, {0}))->infer(); }), "'steps'"));
  CHECK(has(error_of([&] { make(13, i64({2}, {0, 0}), i64({2}, {1, 1}), i64({2}, {1, -1}), std::nullopt)->infer(); }),
            "'axes'"));
  CHECK(has(error_of([&] { make(13, i64({2}, {0, 0}), i64({1}, {1}), std::nullopt, std::nullopt)->infer(); }),
            "'ends'"));
  CHECK(has(error_of([&] { make(13, i64({1}, {0}), i64({1}, {1}), i64({1}, {2}), std::nullopt)->infer(); }), "'axes'"));
  CHECK(has(error_of([&] { make(10, i64({1}, {0}), i64({1}, {1}), i64({1}, {-1}), std::nullopt)->infer(); }),
            "opset 11"));
  CHECK_NOTHROW(make(11, i64({1}, {0}), i64({1}, {1}), i64({1}, {-1}), std::nullopt)->infer());
  CHECK_THROWS_AS(make(13, f32({1}, {0}), f32({1}, {1}), std::nullopt, std::nullopt)->infer(), Error);

  Case runtime(13);
  runtime.in("x", iota({3})).in("starts", i64({1}, {0})).cst("ends", i64({1}, {1}));
  runtime.node("Slice");
  CHECK(has(error_of([&] { runtime.infer(); }), "starts"));
}

// ---- Gather -------------------------------------------------------------------

TEST_CASE("Gather picks along the axis; negative and multi-dim indices") {
  Case c(13);
  c.in("x", iota({3, 2})).in("i", i64({2, 2}, {2, 0, -1, 1})).node("Gather");
  const Tensor y = c.run1();
  CHECK(y.shape() == Shape{2, 2, 2});
  CHECK(vals(y) == std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3});

  Case ax(11);
  ax.in("x", iota({2, 3})).in("i", i32({}, {2})).node("Gather").set_attr_int("axis", -1);
  const Tensor s = ax.run1();
  CHECK(s.shape() == Shape{2});
  CHECK(vals(s) == std::vector<float>{2, 5});

  Case oob(13);
  oob.in("x", iota({3})).in("i", i64({1}, {3})).node("Gather");
  CHECK(has(error_of([&] { oob.run(); }), "'indices'"));

  Case oob_neg(13);
  oob_neg.in("x", iota({3})).in("i", i64({1}, {-4})).node("Gather");
  CHECK_THROWS_AS(oob_neg.run(), Error);

  Case negaxis(10);
  negaxis.in("x", iota({3})).in("i", i64({1}, {0})).node("Gather").set_attr_int("axis", -1);
  CHECK(has(error_of([&] { negaxis.infer(); }), "'axis'"));

  Case badaxis(13);
  badaxis.in("x", iota({3})).in("i", i64({1}, {0})).node("Gather").set_attr_int("axis", 1);
  CHECK(has(error_of([&] { badaxis.infer(); }), "'axis'"));

  Case floatidx(13);
  floatidx.in("x", iota({3})).in("i", f32({1}, {0})).node("Gather");
  CHECK_THROWS_AS(floatidx.infer(), Error);
}

// ---- Transpose ----------------------------------------------------------------

TEST_CASE("Transpose: perm, default reverse, bad perm") {
  Case c(13);
  c.in("x", iota({2, 3, 4})).node("Transpose").set_attr_ints("perm", {1, 2, 0});
  const Tensor y = c.run1();
  CHECK(y.shape() == Shape{3, 4, 2});
  // y[j][k][i] = x[i][j][k] = 12i + 4j + k
  const std::vector<float> v = vals(y);
  CHECK(v[0] == 0);
  CHECK(v[1] == 12);
  CHECK(v[2] == 1);
  CHECK(v[(2 * 4 + 3) * 2 + 1] == 12 + 8 + 3);

  Case def(1);
  def.in("x", iota({2, 3})).node("Transpose");
  const Tensor d = def.run1();
  CHECK(d.shape() == Shape{3, 2});
  CHECK(vals(d) == std::vector<float>{0, 3, 1, 4, 2, 5});

  for (const std::vector<int64_t>& perm : {std::vector<int64_t>{0, 0, 1}, {0, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    Case bad(13);
    bad.in("x", iota({2, 3, 4})).node("Transpose").set_attr_ints("perm", perm);
    CHECK(has(error_of([&] { bad.infer(); }), "'perm'"));
  }
}

// ---- bit-exactness --------------------------------------------------------------

TEST_CASE("data movement copies float16 and int64 bit-exactly") {
  // A signalling NaN with a payload, -0, an infinity, a subnormal: a round
  // trip through float or double would change some of them.
  const std::vector<uint16_t> h = {0x7d01, 0x8000, 0xfc00, 0x0001, 0x3c00, 0xfe7f};
  const Tensor x16 = f16_bits({2, 3}, h);

  Case cat(13);
  cat.in("a", x16).in("b", x16).node("Concat").set_attr_int("axis", 0);
  std::vector<uint16_t> twice = h;
  twice.insert(twice.end(), h.begin(), h.end());
  CHECK(bits16(cat.run1()) == twice);

  Case tr(13);
  tr.in("x", x16).node("Transpose");
  CHECK(bits16(tr.run1()) == std::vector<uint16_t>{0x7d01, 0x0001, 0x8000, 0x3c00, 0xfc00, 0xfe7f});

  Case sl(13);
  sl.in("x", x16).cst("s", i64({1}, {-1})).cst("e", i64({1}, {kMin})).cst("a", i64({1}, {1})).cst("st", i64({1}, {-1}));
  sl.node("Slice");
  CHECK(bits16(sl.run1()) == std::vector<uint16_t>{0xfc00, 0x8000, 0x7d01, 0xfe7f, 0x3c00, 0x0001});

  Case ga(13);
  ga.in("x", x16).in("i", i64({1}, {1})).node("Gather").set_attr_int("axis", 0);
  CHECK(bits16(ga.run1()) == std::vector<uint16_t>{0x0001, 0x3c00, 0xfe7f});

  Case sp(13);
  sp.in("x", x16).cst("split", i64({2}, {1, 2})).node("Split", 2).set_attr_int("axis", 1);
  const auto parts = sp.run();
  CHECK(bits16(parts[0]) == std::vector<uint16_t>{0x7d01, 0x0001});
  CHECK(bits16(parts[1]) == std::vector<uint16_t>{0x8000, 0xfc00, 0x3c00, 0xfe7f});

  // int64 beyond 2^53, through constant folding (all inputs constant).
  Case big(13);
  big.cst("a", i64({2}, {kBig, kMin})).cst("b", i64({1}, {kMax})).node("Concat").set_attr_int("axis", 0);
  big.infer();
  CHECK(big.n().output(0).is_constant());
  CHECK(big.n().output(0).constant().to_i64() == std::vector<int64_t>{kBig, kMin, kMax});

  Case bg(13);
  bg.in("x", i64({3}, {kBig, -kBig, kMax})).in("i", i64({2}, {2, 0})).node("Gather");
  CHECK(bg.run1().to_i64() == std::vector<int64_t>{kMax, kBig});

  // bool through Transpose keeps its dtype.
  Case bl(13);
  bl.in("x", Tensor::from_i64(DType::boolean, {2, 1}, {1, 0})).node("Transpose");
  const Tensor b = bl.run1();
  CHECK(b.dtype() == DType::boolean);
  CHECK(b.to_i64() == std::vector<int64_t>{1, 0});
}

TEST_CASE("concat_axis, gather_axis: required or defaulted, negative from opset 11") {
  Node c("Concat", "cat", 11);
  CHECK_THROWS_WITH_AS(ops::concat_axis(c, 3), doctest::Contains("attribute 'axis' is required"), Error);
  c.set_attr_int("axis", -1);
  CHECK(ops::concat_axis(c, 3) == 2);
  c.set_opset(4);
  CHECK_THROWS_WITH_AS(ops::concat_axis(c, 3), doctest::Contains("allowed from opset 11"), Error);

  Node g("Gather", "gather", 13);
  CHECK(ops::gather_axis(g, {4, 5}) == 0);
  g.set_attr_int("axis", -1);
  CHECK(ops::gather_axis(g, {4, 5}) == 1);
  CHECK_THROWS_WITH_AS(ops::gather_axis(g, {}), doctest::Contains("is a scalar"), Error);
  g.set_attr_int("axis", 2);
  CHECK_THROWS_WITH_AS(ops::gather_axis(g, {4, 5}), doctest::Contains("node 'gather'"), Error);
}

TEST_CASE("split_parts: the split attribute (before 13), the split input (13), equal parts, num_outputs (18)") {
  Value x("x"), lengths("split"), y0("y0"), y1("y1"), y2("y2");
  x.set_type(DType::float32, {2, 7});
  lengths.set_constant(Tensor::from_i64(DType::int64, {3}, {1, 2, 4}));
  auto node = [&](int opset) {
    auto n = std::make_unique<Node>("Split", "split", opset);
    n->add_input(&x);
    for (Value* y : {&y0, &y1, &y2}) n->add_output(y);
    n->set_attr_int("axis", -1);
    return n;
  };
  auto n2 = node(2);
  n2->set_attr_ints("split", {3, 3, 1});
  ops::SplitParts p = ops::split_parts(*n2, {2, 7});
  CHECK(p.axis == 1);
  CHECK(p.sizes == std::vector<int64_t>{3, 3, 1});

  auto n13 = node(13);
  CHECK_THROWS_WITH_AS(ops::split_parts(*n13, {2, 7}), doctest::Contains("3 equal parts"), Error);
  CHECK(ops::split_parts(*n13, {2, 6}).sizes == std::vector<int64_t>{2, 2, 2});
  const std::vector<int64_t> given{7, 0, 0};
  CHECK(ops::split_parts(*n13, {2, 7}, &given).sizes == given);
  n13->add_input(&lengths);
  CHECK(ops::split_parts(*n13, {2, 7}).sizes == std::vector<int64_t>{1, 2, 4});
  CHECK_THROWS_WITH_AS(ops::split_parts(*n13, {2, 8}), doctest::Contains("does not add up"), Error);

  auto n18 = node(18);
  n18->set_attr_int("num_outputs", 3);
  CHECK(ops::split_parts(*n18, {2, 7}).sizes == std::vector<int64_t>{3, 3, 1});  // ceil(7 / 3), the last smaller
}

TEST_CASE("slice_params and slice_ranges: both forms, negative and clamped bounds, negative steps, errors") {
  Node a("Slice", "slice1", 1);
  a.set_attr_ints("starts", {-2, 0});
  a.set_attr_ints("ends", {100, -1});
  a.set_attr_ints("axes", {1, -3});
  CHECK_THROWS_WITH_AS(ops::slice_ranges(a, {4, 5, 6}, ops::slice_params(a)), doctest::Contains("from opset 11"), Error);
  a.set_attr_ints("axes", {1, 0});
  std::vector<ops::SliceRange> r = ops::slice_ranges(a, {4, 5, 6}, ops::slice_params(a));
  REQUIRE(r.size() == 2);
  CHECK(r[0].axis == 1);
  CHECK(r[0].start == 3);  // -2 from the end of 5
  CHECK(r[0].count == 2);  // the end clamped to 5
  CHECK(r[1].axis == 0);
  CHECK(r[1].count == 3);

  Value x("x"), starts("starts"), ends("ends"), axes("axes"), steps("steps");
  x.set_type(DType::float32, {10});
  starts.set_constant(Tensor::from_i64(DType::int64, {1}, {8}));
  ends.set_constant(Tensor::from_i64(DType::int64, {1}, {std::numeric_limits<int64_t>::min()}));
  steps.set_constant(Tensor::from_i64(DType::int64, {1}, {-3}));
  axes.set_type(DType::int64, {1});  // computed at run time
  Node b("Slice", "slice13", 13);
  for (Value* v : {&x, &starts, &ends}) b.add_input(v);
  b.add_input(nullptr);
  b.add_input(&steps);
  const ops::SliceParams p = ops::slice_params(b);
  r = ops::slice_ranges(b, {10}, p);
  REQUIRE(r.size() == 1);
  CHECK(r[0].start == 8);
  CHECK(r[0].step == -3);
  CHECK(r[0].count == 3);  // 8, 5, 2

  std::vector<int64_t> strides{2};  // every other element of a larger buffer
  CHECK(ops::slice_view(r, strides) == 16);
  CHECK(strides == std::vector<int64_t>{-6});
  std::vector<ops::SliceRange> one{{0, 4, 1000, 1}};
  strides = {3};
  CHECK(ops::slice_view(one, strides) == 12);
  CHECK(strides == std::vector<int64_t>{0});  // one element: the huge step is never applied

  ops::SliceParams bad = p;
  bad.steps = std::vector<int64_t>{0};
  CHECK_THROWS_WITH_AS(ops::slice_ranges(b, {10}, bad), doctest::Contains("has a 0 step"), Error);
  bad = p;
  bad.axes = std::vector<int64_t>{0, 0};
  CHECK_THROWS_WITH_AS(ops::slice_ranges(b, {10}, bad), doctest::Contains("node 'slice13'"), Error);
  b.set_input(3, &axes);
  CHECK_THROWS_WITH_AS(ops::slice_params(b), doctest::Contains("must be a constant"), Error);
}

TEST_CASE("transpose_perm: the attribute, the reversed default, non-permutations refused") {
  Node t("Transpose", "t", 13);
  CHECK(ops::transpose_perm(t, 3) == std::vector<int64_t>{2, 1, 0});
  t.set_attr_ints("perm", {0, 2, 1});
  CHECK(ops::transpose_perm(t, 3) == std::vector<int64_t>{0, 2, 1});
  CHECK_THROWS_WITH_AS(ops::transpose_perm(t, 4), doctest::Contains("has 3 values"), Error);
  t.set_attr_ints("perm", {0, 0, 1});
  CHECK_THROWS_WITH_AS(ops::transpose_perm(t, 3), doctest::Contains("not a permutation"), Error);
}

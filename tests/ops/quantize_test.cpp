// compiler/ops/quantize.cpp and int8_products.cpp: the reference semantics of the quantization ops
// (rounding half to even, saturation, per-axis scales, DynamicQuantizeLinear's range with 0, the
// integer products with zero points) and of modelc's QConv / QMatMul epilogue; errors name the node.
#include <doctest/doctest.h>

#include <cmath>

#include "op_test_util.h"
#include "ops/quantize.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor u8(Shape s, const std::vector<int64_t>& v) { return Tensor::from_i64(DType::uint8, std::move(s), v); }
Tensor s8(Shape s, const std::vector<int64_t>& v) { return Tensor::from_i64(DType::int8, std::move(s), v); }

}  // namespace

TEST_CASE("quantize: round half to even, saturation, NaN") {
  CHECK(ops::saturate_round(2.5, DType::uint8) == 2);
  CHECK(ops::saturate_round(3.5, DType::uint8) == 4);
  CHECK(ops::saturate_round(-2.5, DType::int8) == -2);
  CHECK(ops::saturate_round(300, DType::uint8) == 255);
  CHECK(ops::saturate_round(-300, DType::int8) == -128);
  CHECK(ops::saturate_round(std::nan(""), DType::int8) == 0);
  CHECK(ops::quantize_value(1.0f, 2.0f, 10, DType::uint8) == 10);   // 0.5 -> 0, + 10
  CHECK(ops::quantize_value(3.0f, 2.0f, 10, DType::uint8) == 12);   // 1.5 -> 2
  CHECK(ops::quantize_value(-1000.0f, 1.0f, 0, DType::uint8) == 0);
}

TEST_CASE("QuantizeLinear: per tensor and per axis; the zero point's type is the output's") {
  OneNode q("QuantizeLinear", 13, {f32({6}, {0, 2, 3, 1000, -254, -1000}), f32({}, {2}), u8({}, {128})});
  CHECK(values(q.run1()) == std::vector<double>{128, 129, 130, 255, 1, 0});
  CHECK(q.g->outputs()[0]->dtype() == DType::uint8);
  OneNode n("QuantizeLinear", 13, {f32({2, 3}, {-3, -2.5, 0.5, 1.5, 250, -250}), f32({}, {1}), s8({}, {-1})});
  CHECK(values(n.run1()) == std::vector<double>{-4, -3, -1, 1, 127, -128});
  // Per axis 1: scales 1, 2, 4 over dim 1.
  OneNode a("QuantizeLinear", 13, {f32({1, 3, 2}, {1, 2, 4, 8, 16, 32}), f32({3}, {1, 2, 4}), u8({3}, {0, 1, 2})});
  CHECK(values(a.run1()) == std::vector<double>{1, 2, 3, 5, 6, 10});
  // No zero point: uint8, zero point 0.
  OneNode z("QuantizeLinear", 10, {f32({2}, {3, -3}), f32({}, {1})});
  CHECK(values(z.run1()) == std::vector<double>{3, 0});
  // A per-axis scale whose length is not the axis': an error naming the node.
  OneNode bad("QuantizeLinear", 13, {f32({1, 3, 2}, {1, 2, 4, 8, 16, 32}), f32({2}, {1, 2})});
  CHECK_THROWS_WITH_AS(bad.run1(), doctest::Contains("has 2 values, dim 1 of the input has 3"), Error);
}

TEST_CASE("DequantizeLinear: (x - zero point) * scale, per tensor and per axis, int32 without zero point") {
  OneNode d("DequantizeLinear", 13, {u8({4}, {0, 3, 128, 255}), f32({}, {2}), u8({}, {128})});
  CHECK(values(d.run1()) == std::vector<double>{-256, -250, 0, 254});
  OneNode a("DequantizeLinear", 13, {s8({1, 2, 2}, {-1, 1, 10, 20}), f32({2}, {0.5, 2}), s8({2}, {1, 0})});
  CHECK(values(a.run1()) == std::vector<double>{-1, 0, 20, 40});
  OneNode i("DequantizeLinear", 13, {Tensor::from_i64(DType::int32, {2}, {-7, 1000}), f32({}, {0.25})});
  CHECK(values(i.run1()) == std::vector<double>{-1.75, 250});
}

TEST_CASE("DynamicQuantizeLinear: the range includes 0; scale (max - min) / 255 and the zero point from it") {
  OneNode d("DynamicQuantizeLinear", 11, {f32({6}, {0, 2, -3, -2.5, 1.34, 0.5})}, 3);
  const std::vector<Tensor> r = d.run();
  const float scale = (2.0f - -3.0f) / 255.0f;
  CHECK(r[1].f64_at(0) == doctest::Approx(scale));
  CHECK(r[2].i64_at(0) == 153);
  CHECK(values(r[0]) == std::vector<double>{153, 255, 0, 26, 221, 179});
  // All positive: min is 0, zero point 0.
  OneNode p("DynamicQuantizeLinear", 11, {f32({3}, {1, 2, 3})}, 3);
  const std::vector<Tensor> q = p.run();
  CHECK(q[2].i64_at(0) == 0);
  CHECK(values(q[0]) == std::vector<double>{85, 170, 255});
}

TEST_CASE("ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul: zero points, per-channel weights, requantization") {
  // x 1x1x3x3 (uint8), w 1x1x2x2, zero point 1: sum (x - 1) w.
  const Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  OneNode c("ConvInteger", 10, {x, w, u8({}, {1})});
  CHECK(values(c.run1()) == std::vector<double>{12, 16, 24, 28});
  OneNode cp("ConvInteger", 10, {x, w, u8({}, {1})});
  cp.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor padded = cp.run1();
  CHECK(padded.shape() == Shape{1, 1, 4, 4});
  CHECK(padded.i64_at(0) == 1);  // only x[0][0] - 1 = 1 inside: the padding is a real zero
  // MatMulInteger with per-column zero points of B.
  OneNode m("MatMulInteger", 10, {u8({2, 2}, {1, 2, 3, 4}), u8({2, 2}, {5, 6, 7, 8}), u8({}, {1}), u8({2}, {5, 6})});
  CHECK(values(m.run1()) == std::vector<double>{2, 2, 6, 6});
  // QLinearMatMul: the ONNX test's first row, y = saturate(round(acc * sa sb / sy) + zy).
  OneNode q("QLinearMatMul", 10,
            {u8({1, 4}, {208, 236, 0, 238}), f32({1}, {0.0066f}), u8({1}, {113}),
             u8({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}), f32({1}, {0.00705f}), u8({1}, {114}),
             f32({1}, {0.0107f}), u8({1}, {118})});
  CHECK(values(q.run1()) == std::vector<double>{168, 115, 255});
  // QLinearConv: identity 1x1 weights (w 2 with scale 0.5): y = round(x ... ) with a bias.
  OneNode ql("QLinearConv", 10,
             {s8({1, 1, 1, 3}, {-10, 0, 7}), f32({}, {1}), s8({}, {0}), s8({2, 1, 1, 1}, {2, -2}), f32({2}, {0.5f, 0.25f}),
              s8({2}, {0, 0}), f32({}, {1}), s8({}, {0}), Tensor::from_i64(DType::int32, {2}, {1, 0})});
  CHECK(values(ql.run1()) == std::vector<double>{-10, 0, 8, 5, 0, -4});
}

namespace {

/// A QConv / QMatMul with X a graph input and the other operands constants.
struct QNode {
  Graph g;
  Node* n = nullptr;
  TensorMap feeds;
  QNode(const std::string& op, const Tensor& x, const std::vector<Tensor>& rest) {
    g.set_opset(17);
    Value* xv = g.add_value("x");
    xv->set_type(x.dtype(), x.shape());
    g.add_input(xv);
    feeds["x"] = x;
    std::vector<Value*> in{xv};
    for (std::size_t i = 0; i < rest.size(); ++i) in.push_back(rest[i].defined() ? g.add_constant("c" + std::to_string(i), rest[i]) : nullptr);
    Value* y = g.add_value("y");
    n = g.add_node(op, "q", in, {y});
    n->set_domain(ops::kModelcDomain);
    n->set_covers({"q"});
    g.add_output(y);
  }
  Tensor run() {
    ops::infer_graph(g);
    return run_reference(g, feeds).at("y");
  }
};

}  // namespace

TEST_CASE("QMatMul / QConv: the epilogue in float32 (scales, bias, activation, residual), quantized, raw, zero points") {
  // A [2, 3] x B^T, B [2, 3]: acc = [[6, 0], [15, 0]] for A = [[1,2,3],[4,5,6]], B = [[1,1,1],[1,-2,1]].
  const Tensor a = s8({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = s8({2, 3}, {1, 1, 1, 1, -2, 1});
  QNode raw("QMatMul", a, {b});
  raw.n->set_attr_int("to", static_cast<int64_t>(DType::int32));
  CHECK(values(raw.run()) == std::vector<double>{6, 0, 15, 0});
  QNode f("QMatMul", a, {b, f32({2}, {0.5f, -1}), Tensor(), f32({2}, {2, 1})});
  f.n->set_attr_float("x_scale", 0.5);
  f.n->set_attr_string("activation", "relu");
  // v = acc * 0.5 * ws + bias: [6*1 + 0.5, 0*0.5 - 1] = [6.5, -1] -> relu [6.5, 0]; [15.5, -1] -> [15.5, 0].
  CHECK(values(f.run()) == std::vector<double>{6.5, 0, 15.5, 0});
  QNode q("QMatMul", a, {b, f32({2}, {0.5f, -1}), Tensor(), f32({2}, {2, 1})});
  q.n->set_attr_float("x_scale", 0.5);
  q.n->set_attr_int("to", static_cast<int64_t>(DType::int8));
  q.n->set_attr_float("y_scale", 0.25);
  // [6.5, -1, 15.5, -1] / 0.25 = [26, -4, 62, -4].
  CHECK(values(q.run()) == std::vector<double>{26, -4, 62, -4});
  // A zero point needs w_sum, which must be the weights' sum.
  QNode z("QMatMul", a, {b, Tensor(), Tensor(), Tensor(), Tensor(), Tensor::from_i64(DType::int32, {2}, {3, 0})});
  z.n->set_attr_int("to", static_cast<int64_t>(DType::int32));
  z.n->set_attr_int("x_zero_point", 1);
  // sum (a - 1) b: row 0 [0,1,2].[1,1,1] = 3, [0,1,2].[1,-2,1] = 0; row 1 [3,4,5] -> 12, 0.
  CHECK(values(z.run()) == std::vector<double>{3, 0, 12, 0});
  QNode zbad("QMatMul", a, {b, Tensor(), Tensor(), Tensor(), Tensor(), Tensor::from_i64(DType::int32, {2}, {4, 0})});
  zbad.n->set_attr_int("to", static_cast<int64_t>(DType::int32));
  zbad.n->set_attr_int("x_zero_point", 1);
  CHECK_THROWS_WITH_AS(zbad.run(), doctest::Contains("w_sum"), Error);
  QNode nozp("QMatMul", a, {b});
  nozp.n->set_attr_int("to", static_cast<int64_t>(DType::int32));
  nozp.n->set_attr_int("x_zero_point", 1);
  CHECK_THROWS_WITH_AS(nozp.run(), doctest::Contains("needs input 6 (w_sum)"), Error);
  // QConv: 1x1 conv of 2 channels = per-pixel QMatMul.
  QNode c("QConv", s8({1, 3, 1, 2}, {1, 4, 2, 5, 3, 6}), {s8({2, 3, 1, 1}, {1, 1, 1, 1, -2, 1})});
  c.n->set_attr_int("to", static_cast<int64_t>(DType::int32));
  CHECK(values(c.run()) == std::vector<double>{6, 15, 0, 0});
  QNode y("QConv", s8({1, 3, 1, 2}, {1, 4, 2, 5, 3, 6}), {s8({2, 3, 1, 1}, {1, 1, 1, 1, -2, 1})});
  CHECK_THROWS_WITH_AS(y.run(), doctest::Contains("x_scale"), Error);
}

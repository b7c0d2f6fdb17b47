// LSTM, GRU, RNN: one step by hand, the recurrence form (modelc.*Recurrence on XW) against the ONNX
// form, sequence_lens and directions, and the errors bad attributes and shapes give.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "op_test_util.h"
#include "ops/rnn.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor wave(Shape s, double scale, double phase) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(scale * std::sin(0.7 * static_cast<double>(i) + phase));
  return Tensor::from_f32(std::move(s), v);
}

void set_strings(Node& n, const std::string& name, std::vector<std::string> v) {
  Attribute a;
  a.kind = Attribute::Kind::strings;
  a.strings = std::move(v);
  n.set_attr(name, a);
}

std::string error_of(OneNode& t) {
  try {
    t.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// X * W^T per direction as the recurrence form's XW [D, S, B, G*H] (layout 0).
Tensor projection(const Tensor& x, const Tensor& w) {
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const int64_t S = xs[0], B = xs[1], I = xs[2], D = ws[0], GH = ws[1];
  const std::vector<double> xv = x.to_f64(), wv = w.to_f64();
  std::vector<double> out(static_cast<std::size_t>(D * S * B * GH));
  for (int64_t d = 0; d < D; ++d)
    for (int64_t t = 0; t < S * B; ++t)
      for (int64_t j = 0; j < GH; ++j) {
        double s = 0;
        for (int64_t i = 0; i < I; ++i) s += xv[static_cast<std::size_t>(t * I + i)] * wv[static_cast<std::size_t>((d * GH + j) * I + i)];
        out[static_cast<std::size_t>((d * S * B + t) * GH + j)] = s;
      }
  return Tensor::from_f64(DType::float32, {D, S, B, GH}, out);
}

}  // namespace

TEST_CASE("RNN: one step by hand, default Tanh, biases Wb + Rb, initial state") {
  // S=1, B=1, I=2, H=1: h = tanh(x.W + h0 * R + Wb + Rb)
  OneNode t("RNN", 14,
            {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {0.5f, -0.25f}), f32({1, 1, 1}, {2}), f32({1, 2}, {0.1f, 0.2f}),
             Tensor(), f32({1, 1, 1}, {0.5f})},
            2);
  t.n->set_attr_int("hidden_size", 1);
  const std::vector<Tensor> y = t.run();
  const double want = std::tanh(1 * 0.5 + 2 * -0.25 + 0.5 * 2 + 0.1 + 0.2);
  CHECK(y[0].shape() == Shape{1, 1, 1, 1});
  CHECK(y[0].to_f64()[0] == doctest::Approx(want));
  CHECK(y[1].to_f64()[0] == doctest::Approx(want));
}

TEST_CASE("LSTM / GRU / RNN: the recurrence form on XW equals the ONNX form") {
  const int64_t S = 4, B = 3, I = 5, H = 6;
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    const ops::RnnCell cell = ops::rnn_cell(op);
    const int64_t G = cell == ops::RnnCell::lstm ? 4 : cell == ops::RnnCell::gru ? 3 : 1;
    const Tensor x = wave({S, B, I}, 1.0, 0.1), w = wave({2, G * H, I}, 0.4, 0.2), r = wave({2, G * H, H}, 0.4, 0.3);
    const Tensor b = wave({2, 2 * G * H}, 0.3, 0.4), h0 = wave({2, B, H}, 0.5, 0.5);
    const Tensor lens = Tensor::from_i64(DType::int32, {B}, {4, 2, 3});
    const int outs = cell == ops::RnnCell::lstm ? 3 : 2;
    std::vector<Tensor> full{x, w, r, b, lens, h0};
    std::vector<Tensor> rec{projection(x, w), Tensor(), r, b, lens, h0};
    if (cell == ops::RnnCell::lstm) {
      for (auto* v : {&full, &rec}) {
        v->push_back(wave({2, B, H}, 0.5, 0.6));
        v->push_back(wave({2, 3 * H}, 0.3, 0.7));
      }
    }
    OneNode a(op, 14, full, outs);
    a.n->set_attr_string("direction", "bidirectional");
    OneNode c(ops::recurrence_op(cell), 14, rec, outs);
    c.n->set_domain(ops::kModelcDomain);
    c.n->set_covers({"node"});
    c.n->set_attr_string("direction", "bidirectional");
    if (cell == ops::RnnCell::gru) {
      a.n->set_attr_int("linear_before_reset", 1);
      c.n->set_attr_int("linear_before_reset", 1);
    }
    const std::vector<Tensor> ya = a.run(), yc = c.run();
    for (int k = 0; k < outs; ++k) {
      INFO(op << " output " << k);
      const std::vector<double> u = ya[static_cast<std::size_t>(k)].to_f64(), v = yc[static_cast<std::size_t>(k)].to_f64();
      REQUIRE(u.size() == v.size());
      for (std::size_t i = 0; i < u.size(); ++i) CHECK(u[i] == doctest::Approx(v[i]).epsilon(1e-5));
    }
    // sequence_lens: batch item 1 runs 2 steps; Y is 0 at its steps 2 and 3 in both directions.
    const std::vector<double> y = ya[0].to_f64();
    for (int64_t t = 2; t < S; ++t)
      for (int64_t d = 0; d < 2; ++d)
        for (int64_t u = 0; u < H; ++u) CHECK(y[static_cast<std::size_t>(((t * 2 + d) * B + 1) * H + u)] == 0.0);
  }
}

TEST_CASE("LSTM: layout 1 is layout 0 transposed") {
  const Tensor x0 = wave({3, 2, 4}, 1.0, 0.2), w = wave({1, 12, 4}, 0.5, 0.1), r = wave({1, 12, 3}, 0.5, 0.3);
  std::vector<double> xv = x0.to_f64(), x1v(xv.size());
  for (int t = 0; t < 3; ++t)
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 4; ++i) x1v[static_cast<std::size_t>((b * 3 + t) * 4 + i)] = xv[static_cast<std::size_t>((t * 2 + b) * 4 + i)];
  OneNode a("LSTM", 14, {x0, w, r}, 2);
  OneNode b("LSTM", 14, {Tensor::from_f64(DType::float32, {2, 3, 4}, x1v), w, r}, 2);
  b.n->set_attr_int("layout", 1);
  const std::vector<Tensor> ya = a.run(), yb = b.run();
  CHECK(yb[0].shape() == Shape{2, 3, 1, 3});
  CHECK(yb[1].shape() == Shape{2, 1, 3});
  const std::vector<double> y0 = ya[0].to_f64(), y1 = yb[0].to_f64();
  for (int t = 0; t < 3; ++t)
    for (int n = 0; n < 2; ++n)
      for (int u = 0; u < 3; ++u) CHECK(y1[static_cast<std::size_t>((n * 3 + t) * 3 + u)] == doctest::Approx(y0[static_cast<std::size_t>((t * 2 + n) * 3 + u)]));
}

TEST_CASE("recurrent ops: errors name the node and what is wrong") {
  const Tensor x = wave({2, 1, 3}, 1, 0), w = wave({1, 4, 3}, 1, 0), r = wave({1, 4, 1}, 1, 0);
  {
    OneNode t("LSTM", 14, {x, w, r}, 2);
    t.n->set_attr_string("direction", "sideways");
    CHECK(error_of(t).find("'direction' is 'sideways'") != std::string::npos);
  }
  {
    OneNode t("LSTM", 14, {x, w, r}, 2);
    set_strings(*t.n, "activations", {"Sigmoid", "Tanh"});
    CHECK(error_of(t).find("has 2 names, expected 3") != std::string::npos);
  }
  {
    OneNode t("LSTM", 14, {x, w, r}, 2);
    set_strings(*t.n, "activations", {"Sigmoid", "Tanh", "Swish"});
    CHECK(error_of(t).find("activation 'Swish'") != std::string::npos);
  }
  {
    OneNode t("LSTM", 14, {x, wave({1, 8, 3}, 1, 0), r}, 2);  // W of a hidden size 2
    CHECK(error_of(t).find("W (") != std::string::npos);
  }
  {
    OneNode t("GRU", 14, {x, wave({1, 3, 3}, 1, 0), wave({1, 3, 1}, 1, 0), Tensor(),
                          Tensor::from_i64(DType::int64, {1}, {2})}, 2);  // sequence_lens must be int32
    CHECK_THROWS_AS(t.run(), Error);
  }
  {
    OneNode t("RNN", 7, {x, wave({1, 1, 3}, 1, 0), wave({1, 1, 1}, 1, 0)}, 2);
    t.n->set_attr_int("layout", 1);  // opset 14's
    CHECK(error_of(t).find("'layout' is not supported") != std::string::npos);
  }
  {
    OneNode t("RNN", 14, {x, wave({1, 1, 3}, 1, 0), wave({1, 1, 1}, 1, 0)}, 2);
    t.n->set_attr_float("clip", -1.0);
    CHECK(error_of(t).find("'clip'") != std::string::npos);
  }
}

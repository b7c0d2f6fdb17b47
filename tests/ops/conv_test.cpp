// Conv and ConvTranspose: shapes, hand-computed values, a naive reference
// over attribute combinations, FLOPs, facts, and errors.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <random>

#include "op_test_util.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "support/error.h"

using namespace modelc;
using namespace modelc::op_test;

namespace {

Tensor iota(Shape s, float start = 0) {
  std::vector<float> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from_f32(std::move(s), v);
}
Tensor random(Shape s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(num_elements(s)));
  for (double& x : v) x = u(rng);
  return Tensor::from_f64(DType::float32, std::move(s), v);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-4) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
  }
}

// Direct 2-D convolution, written from the definition.
std::vector<double> naive_conv2d(const Tensor& X, const Tensor& W, const Tensor* B, int64_t group,
                                 std::array<int64_t, 2> s, std::array<int64_t, 2> d, std::array<int64_t, 4> p,
                                 Shape& out) {
  const Shape& xs = X.shape();
  const Shape& ws = W.shape();
  const int64_t N = xs[0], C = xs[1], H = xs[2], Wd = xs[3], M = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = (H + p[0] + p[2] - ((KH - 1) * d[0] + 1)) / s[0] + 1;
  const int64_t OW = (Wd + p[1] + p[3] - ((KW - 1) * d[1] + 1)) / s[1] + 1;
  out = {N, M, OH, OW};
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = B ? B->f64_at(m) : 0.0;
          const int64_t g = m / (M / group);
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * s[0] - p[0] + kh * d[0], iw = ow * s[1] - p[1] + kw * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                acc += X.f64_at(((n * C + g * Cg + c) * H + ih) * Wd + iw) * W.f64_at(((m * Cg + c) * KH + kh) * KW + kw);
              }
          y.push_back(acc);
        }
  return y;
}

}  // namespace

TEST_CASE("Conv 2-D: valid, bias, pads and strides by hand") {
  OneNode a("Conv", 13, {iota({1, 1, 3, 3}), f32({1, 1, 2, 2}, {1, 1, 1, 1})});
  Tensor y = a.run1();
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK(values(y) == std::vector<double>{8, 12, 20, 24});

  OneNode b("Conv", 13, {iota({1, 1, 3, 3}), f32({1, 1, 2, 2}, {1, 1, 1, 1}), f32({1}, {0.5f})});
  CHECK(values(b.run1()) == std::vector<double>{8.5, 12.5, 20.5, 24.5});

  // 3x3 ones, pads 1, stride 2: windows centred on the corners.
  OneNode c("Conv", 11, {iota({1, 1, 3, 3}), f32({1, 1, 3, 3}, std::vector<float>(9, 1.0f))});
  c.n->set_attr_ints("pads", {1, 1, 1, 1});
  c.n->set_attr_ints("strides", {2, 2});
  y = c.run1();
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK(values(y) == std::vector<double>{8, 12, 20, 24});
}

TEST_CASE("Conv dilations, groups, 1-D") {
  OneNode a("Conv", 11, {iota({1, 1, 5, 5}), f32({1, 1, 2, 2}, {1, 1, 1, 1})});
  a.n->set_attr_ints("dilations", {2, 2});
  Tensor y = a.run1();
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  CHECK(values(y) == std::vector<double>{24, 28, 32, 44, 48, 52, 64, 68, 72});

  OneNode g("Conv", 11, {f32({1, 2, 1, 2}, {1, 1, 2, 2}), f32({2, 1, 1, 1}, {3, 5})});
  g.n->set_attr_int("group", 2);
  CHECK(values(g.run1()) == std::vector<double>{3, 3, 10, 10});

  OneNode d("Conv", 11, {f32({1, 1, 5}, {1, 2, 3, 4, 5}), f32({1, 1, 3}, {1, 0, -1})});
  y = d.run1();
  CHECK(y.shape() == Shape{1, 1, 3});
  CHECK(values(y) == std::vector<double>{-2, -2, -2});
}

TEST_CASE("Conv auto_pad: SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start, VALID none") {
  const Tensor x = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor w = f32({1, 1, 1, 2}, {1, 10});
  OneNode up("Conv", 11, {x, w});
  up.n->set_attr_string("auto_pad", "SAME_UPPER");
  CHECK(values(up.run1()) == std::vector<double>{21, 32, 43, 4});
  OneNode lo("Conv", 11, {x, w});
  lo.n->set_attr_string("auto_pad", "SAME_LOWER");
  CHECK(values(lo.run1()) == std::vector<double>{10, 21, 32, 43});
  OneNode va("Conv", 11, {x, w});
  va.n->set_attr_string("auto_pad", "VALID");
  va.n->set_attr_ints("strides", {1, 2});
  Tensor y = va.run1();
  CHECK(y.shape() == Shape{1, 1, 1, 2});
  CHECK(values(y) == std::vector<double>{21, 43});
  OneNode s2("Conv", 11, {iota({1, 1, 5, 5}), f32({1, 1, 3, 3}, std::vector<float>(9, 1.0f))});
  s2.n->set_attr_string("auto_pad", "SAME_UPPER");
  s2.n->set_attr_ints("strides", {2, 2});
  CHECK(s2.run1().shape() == Shape{1, 1, 3, 3});  // ceil(5 / 2)
}

TEST_CASE("Conv matches a direct implementation over strides, pads, dilations and groups") {
  struct Case {
    Shape x, w;
    int64_t group;
    std::array<int64_t, 2> s, d;
    std::array<int64_t, 4> p;
  };
  const Case cases[] = {
      {{2, 4, 7, 8}, {6, 2, 3, 3}, 2, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{1, 3, 9, 10}, {4, 3, 3, 2}, 1, {2, 3}, {1, 2}, {0, 2, 1, 0}},
      {{1, 6, 8, 8}, {6, 1, 3, 3}, 6, {2, 2}, {2, 1}, {2, 1, 1, 2}},  // depthwise
      {{1, 3, 11, 9}, {2, 3, 7, 7}, 1, {2, 2}, {1, 1}, {3, 3, 3, 3}},
      {{1, 8, 5, 5}, {4, 8, 1, 1}, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}},
  };
  uint64_t seed = 1;
  for (const Case& c : cases) {
    const Tensor x = random(c.x, seed++), w = random(c.w, seed++), b = random({c.w[0]}, seed++);
    OneNode n("Conv", 11, {x, w, b});
    n.n->set_attr_int("group", c.group);
    n.n->set_attr_ints("strides", {c.s[0], c.s[1]});
    n.n->set_attr_ints("dilations", {c.d[0], c.d[1]});
    n.n->set_attr_ints("pads", {c.p[0], c.p[1], c.p[2], c.p[3]});
    Shape want_shape;
    const std::vector<double> want = naive_conv2d(x, w, &b, c.group, c.s, c.d, c.p, want_shape);
    const Tensor y = n.run1();
    CHECK(y.shape() == want_shape);
    check_close(values(y), want);
  }
}

TEST_CASE("Conv 3-D and kernel_shape") {
  OneNode a("Conv", 11, {f32({1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), f32({1, 1, 2, 2, 2}, std::vector<float>(8, 1.0f))});
  a.n->set_attr_ints("kernel_shape", {2, 2, 2});
  const Tensor y = a.run1();
  CHECK(y.shape() == Shape{1, 1, 1, 1, 1});
  CHECK(values(y) == std::vector<double>{36});
}

TEST_CASE("Conv FLOPs and facts") {
  OneNode a("Conv", 11, {random({2, 4, 8, 8}, 1), random({6, 2, 3, 3}, 2), random({6}, 3)});
  a.n->set_attr_int("group", 2);
  a.n->set_attr_ints("pads", {1, 1, 1, 1});
  // 2 * N * M * H * W * (C / group) * kh * kw + bias
  CHECK(a.flops() == 2 * 2 * 6 * 64 * 2 * 9 + 2 * 6 * 64);
  const ops::OpDef& d = ops::lookup(*a.n);
  CHECK(d.precision == ops::Precision::fp16);
  CHECK(d.fusion == ops::Fusion::producer);
  CHECK(d.layout == ops::Layout::channels);
  CHECK(d.family == "conv");
}

TEST_CASE("Conv errors name the attribute or input at fault") {
  auto conv = [](Shape x, Shape w, const std::function<void(Node&)>& set, std::vector<Tensor> extra = {}) {
    std::vector<Tensor> ins{random(x, 1), random(w, 2)};
    for (Tensor& t : extra) ins.push_back(t);
    OneNode n("Conv", 11, ins);
    if (set) set(*n.n);
    n.run();
  };
  CHECK_NOTHROW(conv({1, 4, 5, 5}, {2, 2, 3, 3}, [](Node& n) { n.set_attr_int("group", 2); }));
  CHECK_THROWS_AS(conv({1, 3, 5, 5}, {2, 1, 3, 3}, [](Node& n) { n.set_attr_int("group", 2); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {3, 2, 3, 3}, [](Node& n) { n.set_attr_int("group", 2); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 3, 3, 3}, nullptr), Error);       // W dim 1 != C
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3}, nullptr), Error);           // W rank
  CHECK_THROWS_AS(conv({4, 5}, {2, 4}, nullptr), Error);                    // X rank 2
  CHECK_THROWS_AS(conv({1, 4, 2, 2}, {2, 4, 3, 3}, nullptr), Error);        // empty output
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_ints("pads", {1, 1}); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_ints("pads", {1, 1, -1, 1}); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_ints("strides", {1}); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_ints("strides", {0, 1}); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_int("group", 0); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_ints("kernel_shape", {2, 2}); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_string("auto_pad", "SAME"); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, [](Node& n) { n.set_attr_int("bogus", 1); }), Error);
  CHECK_THROWS_AS(conv({1, 4, 5, 5}, {2, 4, 3, 3}, nullptr, {random({3}, 3)}), Error);  // bias shape
  CHECK_THROWS_AS(conv({1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}, nullptr), Error);       // 4 spatial dims
  try {
    conv({1, 3, 5, 5}, {2, 1, 3, 3}, [](Node& n) { n.set_attr_int("group", 2); });
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("group") != std::string::npos);
  }
  // Integer data is not a Conv type.
  OneNode i("Conv", 11, {Tensor::from_i64(DType::int32, {1, 1, 2, 2}, {1, 2, 3, 4}),
                         Tensor::from_i64(DType::int32, {1, 1, 1, 1}, {1})});
  CHECK_THROWS_AS(i.run(), Error);
}

TEST_CASE("ConvTranspose: strides, pads, output_padding, output_shape, groups") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  OneNode s1("ConvTranspose", 11, {x, ones});
  Tensor y = s1.run1();
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  CHECK(values(y) == std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4});

  OneNode s2("ConvTranspose", 11, {x, ones});
  s2.n->set_attr_ints("strides", {2, 2});
  y = s2.run1();
  CHECK(y.shape() == Shape{1, 1, 4, 4});
  CHECK(values(y) == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  OneNode p("ConvTranspose", 11, {x, ones});
  p.n->set_attr_ints("pads", {1, 1, 1, 1});
  y = p.run1();
  CHECK(y.shape() == Shape{1, 1, 1, 1});
  CHECK(values(y) == std::vector<double>{10});

  // output_padding adds a row and column at the end that only the bias reaches.
  OneNode op("ConvTranspose", 11, {x, ones, f32({1}, {0.5f})});
  op.n->set_attr_ints("strides", {2, 2});
  op.n->set_attr_ints("output_padding", {1, 1});
  y = op.run1();
  CHECK(y.shape() == Shape{1, 1, 5, 5});
  CHECK(values(y)[4] == 0.5);
  CHECK(values(y)[0] == 1.5);

  // output_shape (spatial, or with N and C) sets the size and derives the pads.
  for (const std::vector<int64_t>& os : {std::vector<int64_t>{5, 5}, std::vector<int64_t>{1, 1, 5, 5}}) {
    OneNode o("ConvTranspose", 11, {x, ones});
    o.n->set_attr_ints("strides", {2, 2});
    o.n->set_attr_ints("output_shape", os);
    y = o.run1();
    CHECK(y.shape() == Shape{1, 1, 5, 5});
    CHECK(values(y)[0] == 1);   // NOTSET: the extra pad is at the end
    CHECK(values(y)[24] == 0);
  }
  OneNode up("ConvTranspose", 11, {x, ones});
  up.n->set_attr_ints("strides", {2, 2});
  up.n->set_attr_ints("output_shape", {3, 3});
  up.n->set_attr_string("auto_pad", "SAME_UPPER");
  y = up.run1();  // total pad 1: SAME_UPPER puts it at the end
  CHECK(values(y) == std::vector<double>{1, 1, 2, 1, 1, 2, 3, 3, 4});

  // SAME_UPPER without output_shape: output = input * stride.
  OneNode same("ConvTranspose", 11, {x, f32({1, 1, 3, 3}, std::vector<float>(9, 1.0f))});
  same.n->set_attr_ints("strides", {2, 2});
  same.n->set_attr_string("auto_pad", "SAME_UPPER");
  CHECK(same.run1().shape() == Shape{1, 1, 4, 4});

  // Groups: W is C x (M / group) x k; each group sees its own channels.
  OneNode g("ConvTranspose", 11, {f32({1, 2, 1, 1}, {1, 2}), f32({2, 2, 1, 1}, {1, 2, 3, 4})});
  g.n->set_attr_int("group", 2);
  y = g.run1();
  CHECK(y.shape() == Shape{1, 4, 1, 1});
  CHECK(values(y) == std::vector<double>{1, 2, 6, 8});

  // 1-D with dilation: taps at 0 and 2.
  OneNode d("ConvTranspose", 11, {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {1, 10})});
  d.n->set_attr_ints("dilations", {2});
  y = d.run1();
  CHECK(y.shape() == Shape{1, 1, 4});
  CHECK(values(y) == std::vector<double>{1, 2, 10, 20});
}

TEST_CASE("ConvTranspose FLOPs and errors") {
  OneNode a("ConvTranspose", 11, {random({1, 4, 3, 3}, 1), random({4, 3, 2, 2}, 2)});
  a.n->set_attr_ints("strides", {2, 2});
  CHECK(a.flops() == 2 * 1 * 4 * 9 * 3 * 4);
  auto convt = [](Shape x, Shape w, const std::function<void(Node&)>& set) {
    OneNode n("ConvTranspose", 11, {random(x, 1), random(w, 2)});
    if (set) set(*n.n);
    n.run();
  };
  CHECK_THROWS_AS(convt({1, 4, 3, 3}, {3, 3, 2, 2}, nullptr), Error);  // W dim 0 != C
  CHECK_THROWS_AS(convt({1, 4, 3, 3}, {4, 3, 2, 2}, [](Node& n) { n.set_attr_ints("output_shape", {5}); }), Error);
  CHECK_THROWS_AS(convt({1, 4, 3, 3}, {4, 3, 2, 2}, [](Node& n) { n.set_attr_ints("output_padding", {1}); }), Error);
  CHECK_THROWS_AS(convt({1, 4, 3, 3}, {4, 3, 2, 2}, [](Node& n) { n.set_attr_ints("pads", {2, 2, 2, 2}); }), Error);
  CHECK_THROWS_AS(convt({1, 3, 3, 3}, {3, 3, 2, 2}, [](Node& n) { n.set_attr_int("group", 2); }), Error);
}

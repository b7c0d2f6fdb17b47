// templates/pool.cuh with an operand prologue (conv.cuh's ChannelPrologue: act(x scale[c] +
// shift[c]) and squeeze-and-excite's gate[n][c], what fuse_prologue folds into a pool: DenseNet's
// norm5 + ReLU before its global average pool) on the host emulation. The expected output is the
// reference interpreter's pool of X transformed on the host the way the prologue defines it
// (std::fmaf, the ReLU, the gate, one rounding to T), per element; each case also checks that the
// mistakes the template could make would have been caught: no prologue at all, and, for a padded
// AveragePool with count_include_pad, padded taps taken as act(0 scale + shift) (the BN's value of
// a zero) instead of the pool's own zero. Cases: a padded windowed AveragePool (NCHW and NHWC,
// batch 2 with the gate), a padded MaxPool with a negative scale (the maximum moves), and the
// global pools: FP16 NHWC at a channel pitch wider than the channels (DenseNet's norm5 reads the
// last Concat's buffer), FP32 NCHW (a warp per plane).
#include <cmath>

#include "linear_test_util.h"
#include "narrow_float_test_util.h"
#include "templates/pool.cuh"

using namespace linear_test;
using mc::conv::Dims3;
using mc::conv::Layout;
using mc::pool::Kind;

namespace {

/// The prologue's operands: scale and shift per channel (the scale's sign alternates), gate per
/// (image, channel), all exact in FP16.
struct Operands {
  std::vector<float> scale, shift, gate;
  Operands(int64_t N, int64_t C) {
    for (int64_t c = 0; c < C; ++c) {
      scale.push_back(static_cast<float>((c % 2 ? -1.0 : 1.0) * (0.5 + 0.125 * static_cast<double>(c))));
      shift.push_back(static_cast<float>(0.25 + 0.0625 * static_cast<double>(c % 3)));  // > 0: act(0 s + b) != 0
    }
    for (int64_t i = 0; i < N * C; ++i) gate.push_back(static_cast<float>(0.75 + 0.125 * static_cast<double>(i % 4)));
  }
};

/// Element e of channel c of image n through the prologue (Affine and Relu, times the gate where Gate),
/// rounded to T.
template <class T, bool Gate>
double through(const Operands& o, double e, int64_t C, int64_t n, int64_t c) {
  float f = std::fmaf(static_cast<float>(e), o.scale[static_cast<std::size_t>(c)], o.shift[static_cast<std::size_t>(c)]);
  f = f > 0.0f ? f : 0.0f;
  if (Gate) f *= o.gate[static_cast<std::size_t>(n * C + c)];
  return narrow_float::to_d(narrow_float::to_t<T>(f));
}

/// X (NCHW) through the prologue, every element.
template <class T, bool Gate>
Tensor transformed(const Tensor& x, const Operands& o) {
  const Shape& s = x.shape();
  const int64_t N = s[0], C = s[1], P = num_elements(s) / (N * C);
  std::vector<double> v = x.to_f64();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) {
        double& e = v[static_cast<std::size_t>((n * C + c) * P + p)];
        e = through<T, Gate>(o, e, C, n, c);
      }
  return Tensor::from_f64(DType::float32, s, v);
}

/// How many elements of got lie outside check_close's bound around want.
int outside(const std::vector<float>& got, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  const std::vector<double> w = want.to_f64();
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) bad += !(std::abs(static_cast<double>(got[i]) - w[i]) <= atol + rtol * std::abs(w[i]));
  return bad;
}

/// Runs Pool<float, Sh, L, kKind, ..., Pro> on x (NCHW) with the prologue's operands; Y as NCHW.
template <class Sh, Layout L, Kind kKind, class Pro>
std::vector<float> run_pool(const Tensor& x, const Shape& y_shape, const Operands& o) {
  using K = mc::pool::Pool<float, Sh, L, kKind, false, false, 128, 0, 0, Pro>;
  std::vector<float> xs = floats(x);
  if (L == Layout::nhwc) xs = to_nhwc(xs, x.shape());
  std::vector<float> y = output_buffer(num_elements(y_shape));
  typename K::Params p;
  p.X = xs.data();
  p.Y = y.data();
  p.prologue.scale = o.scale.data();
  p.prologue.shift = o.shift.data();
  p.prologue.gate = o.gate.empty() ? nullptr : o.gate.data();
  launch<K>(p);
  return L == Layout::nhwc ? from_nhwc(y, y_shape) : y;
}

}  // namespace

TEST_CASE("pool prologue: a padded AveragePool (count_include_pad) of relu(x scale + shift) gate, NCHW and NHWC") {
  const Tensor x = random({2, 5, 7, 8}, 21);
  const Operands o(2, 5);
  // The reference: AveragePool 3x3, stride 2, pads 1, count_include_pad, of the transformed X.
  auto pool = [](const Tensor& in, bool padded) {
    OneNode t("AveragePool", 11, {in});
    t.n->set_attr_ints("kernel_shape", {3, 3});
    t.n->set_attr_ints("strides", {2, 2});
    if (padded) t.n->set_attr_ints("pads", {1, 1, 1, 1});
    t.n->set_attr_int("count_include_pad", 1);
    return t.reference()[0];
  };
  const Tensor want = pool(transformed<float, true>(x, o), true);
  REQUIRE(want.shape() == Shape{2, 5, 4, 4});
  // The mutant: padded taps through the prologue too (X padded with zeros, then transformed).
  std::vector<double> padded(2 * 5 * 9 * 10, 0.0);
  const std::vector<double> xv = x.to_f64();
  for (int64_t nc = 0; nc < 10; ++nc)
    for (int64_t h = 0; h < 7; ++h)
      for (int64_t w = 0; w < 8; ++w) padded[static_cast<std::size_t>((nc * 9 + h + 1) * 10 + w + 1)] = xv[static_cast<std::size_t>((nc * 7 + h) * 8 + w)];
  const Tensor mutant = pool(transformed<float, true>(Tensor::from_f64(DType::float32, {2, 5, 9, 10}, padded), o), false);
  REQUIRE(mutant.shape() == want.shape());
  const Tensor plain = pool(x, true);

  using Sh = mc::pool::Shape<2, 5, Dims3<1, 7, 8>, Dims3<1, 3, 3>, Dims3<1, 4, 4>, Dims3<1, 2, 2>, Dims3<0, 1, 1>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  using Pro = mc::conv::ChannelPrologue<float, true, true, true, /*gate pitch*/ 5>;
  for (const std::vector<float>& got : {run_pool<Sh, Layout::nchw, Kind::average_include_pad, Pro>(x, want.shape(), o),
                                        run_pool<Sh, Layout::nhwc, Kind::average_include_pad, Pro>(x, want.shape(), o)}) {
    check_close(got, want);
    CHECK(outside(got, mutant) > 0);  // the border outputs would differ
    CHECK(outside(got, plain) > 0);
  }
}

TEST_CASE("pool prologue: a padded MaxPool of x scale + shift, a negative scale moving the maximum") {
  const Tensor x = random({1, 4, 9, 8}, 22);
  Operands o(1, 4);
  o.gate.clear();
  OneNode t("MaxPool", 12, {x});
  t.n->set_attr_ints("kernel_shape", {3, 3});
  t.n->set_attr_ints("strides", {2, 2});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor plain = t.reference()[0];
  // No ReLU here: the transform without it (the affine map alone), as the prologue computes it.
  const Shape& s = x.shape();
  std::vector<double> v = x.to_f64();
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t p = 0; p < 72; ++p) {
      double& e = v[static_cast<std::size_t>(c * 72 + p)];
      e = std::fmaf(static_cast<float>(e), o.scale[static_cast<std::size_t>(c)], o.shift[static_cast<std::size_t>(c)]);
    }
  OneNode tt("MaxPool", 12, {Tensor::from_f64(DType::float32, s, v)});
  tt.n->set_attr_ints("kernel_shape", {3, 3});
  tt.n->set_attr_ints("strides", {2, 2});
  tt.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor want = tt.reference()[0];
  using Sh = mc::pool::Shape<1, 4, Dims3<1, 9, 8>, Dims3<1, 3, 3>, Dims3<1, 5, 4>, Dims3<1, 2, 2>, Dims3<0, 1, 1>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  using Pro = mc::conv::ChannelPrologue<float, true, false, false>;
  for (const std::vector<float>& got : {run_pool<Sh, Layout::nchw, Kind::max, Pro>(x, want.shape(), o),
                                        run_pool<Sh, Layout::nhwc, Kind::max, Pro>(x, want.shape(), o)}) {
    check_close(got, want, 0, 0);  // a maximum of values computed the same way: exact
    CHECK(outside(got, plain) > 0);
  }
}

TEST_CASE("pool prologue: FP16 NHWC GlobalAveragePool at a channel pitch wider than C (DenseNet's norm5 + ReLU)") {
  constexpr int N = 2, C = 12, P = 9, kPitch = 16;
  const Operands o(N, C);
  // X [N, 3, 3, pitch 16]: channels 12..15 hold NaN (another Concat input's channels in DenseNet's
  // buffer: never read).
  std::vector<__half> x(static_cast<std::size_t>(N * P * kPitch), __float2half(std::nanf("")));
  const std::vector<__half> data = narrow_float::random_t<__half>(static_cast<std::size_t>(N * P * C), 23, 2.0);
  for (int n = 0; n < N; ++n)
    for (int p = 0; p < P; ++p)
      for (int c = 0; c < C; ++c) x[static_cast<std::size_t>((n * P + p) * kPitch + c)] = data[static_cast<std::size_t>((n * P + p) * C + c)];
  using Pro = mc::conv::ChannelPrologue<__half, true, true, false>;
  using K = mc::pool::GlobalPool<__half, N, C, P, Layout::nhwc, false, 128, kPitch, 0, Pro>;
  std::vector<__half> y(static_cast<std::size_t>(N * C), __float2half(std::nanf("")));
  K::Params p;
  p.X = x.data();
  p.Y = y.data();
  p.prologue.scale = o.scale.data();
  p.prologue.shift = o.shift.data();
  launch<K>(p);
  int bad = 0, plain_match = 0;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c) {
      double sum = 0, plain = 0;
      for (int q = 0; q < P; ++q) {
        const double e = narrow_float::to_d(data[static_cast<std::size_t>((n * P + q) * C + c)]);
        sum += through<__half, false>(o, e, C, n, c);
        plain += e;
      }
      const double want = sum / P, got = narrow_float::to_d(y[static_cast<std::size_t>(n * C + c)]);
      const double tol = std::abs(want) / 1024 + 1e-6;  // one FP16 rounding of the mean
      if (!(std::abs(got - want) <= tol) && ++bad <= 5) {
        INFO("n " << n << " c " << c << ": got " << got << ", want " << want);
        CHECK(false);
      }
      plain_match += std::abs(got - plain / P) <= tol;
    }
  CHECK(bad == 0);
  CHECK(plain_match < N * C);
}

TEST_CASE("pool prologue: FP32 NCHW GlobalMaxPool of x gate (the SE form), a warp per plane") {
  const Tensor x = random({2, 3, 5, 7}, 24);
  Operands o(2, 3);
  using Pro = mc::conv::ChannelPrologue<float, false, false, true, /*gate pitch*/ 3>;
  using K = mc::pool::GlobalPool<float, 2, 3, 35, Layout::nchw, true, 128, 0, 0, Pro>;
  std::vector<double> v = x.to_f64();
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t q = 0; q < 35; ++q) v[static_cast<std::size_t>(i * 35 + q)] *= o.gate[static_cast<std::size_t>(i)];
  OneNode t("GlobalMaxPool", 1, {Tensor::from_f64(DType::float32, x.shape(), v)});
  const Tensor want = t.reference()[0];
  std::vector<float> xs = floats(x), y = output_buffer(6);
  K::Params p;
  p.X = xs.data();
  p.Y = y.data();
  p.prologue.gate = o.gate.data();
  launch<K>(p);
  check_close(y, want, 1e-6, 0);
  OneNode plain("GlobalMaxPool", 1, {x});
  CHECK(outside(y, plain.reference()[0]) > 0);
}

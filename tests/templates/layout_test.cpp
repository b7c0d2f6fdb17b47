// The channels-last templates with a padded channel pitch (compiler/schedule/layout.h) on the host
// emulation against the reference: pools (windowed and global) and depthwise convolutions read X
// with pitch Cp >= C and write Y with its own pitch; the padded channels of X hold NaN (they must
// not be read) and those of Y must stay untouched. Also kernel_layout, which the families use to
// pick the layout and the pitches from a kernel's views.
#include "linear_test_util.h"
#include "schedule/layout.h"
#include "templates/conv_depthwise.cuh"
#include "templates/pool.cuh"

using namespace linear_test;
using mc::conv::Dims3;
using mc::conv::Layout;
using mc::pool::Kind;

namespace {

/// NCHW data -> channels-last with pitch `pitch`; the padded channels hold NaN.
std::vector<float> to_pitched(const std::vector<float>& x, const Shape& nchw, int64_t pitch) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(static_cast<std::size_t>(N * P * pitch), std::nanf(""));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p)
        r[static_cast<std::size_t>((n * P + p) * pitch + c)] = x[static_cast<std::size_t>((n * C + c) * P + p)];
  return r;
}

constexpr float kUntouched = 12345.0f;

/// Channels-last with pitch `pitch` -> NCHW; checks that the padded channels still hold kUntouched.
std::vector<float> from_pitched(const std::vector<float>& y, const Shape& nchw, int64_t pitch) {
  const int64_t N = nchw[0], C = nchw[1], P = num_elements(nchw) / (N * C);
  std::vector<float> r(static_cast<std::size_t>(N * C * P));
  int written = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t c = 0; c < pitch; ++c) {
        const float v = y[static_cast<std::size_t>((n * P + p) * pitch + c)];
        if (c < C) {
          r[static_cast<std::size_t>((n * C + c) * P + p)] = v;
        } else {
          written += v != kUntouched;
        }
      }
  CHECK(written == 0);
  return r;
}

template <class Sh, Kind kKind, int kPX, int kPY>
void check_pool(OneNode& t) {
  const Tensor want = t.reference()[0];
  using K = mc::pool::Pool<float, Sh, Layout::nhwc, kKind, false, false, 128, kPX, kPY>;
  const std::vector<float> x = to_pitched(floats(t.feeds.at("x0")), t.feeds.at("x0").shape(), kPX);
  std::vector<float> y(static_cast<std::size_t>(want.numel() / Sh::kC * kPY), kUntouched);
  launch<K>({x.data(), y.data(), nullptr});
  check_close(from_pitched(y, want.shape(), kPY), want);
}

template <int kN, int kC, int kInner, bool kMax, int kPX, int kPY>
void check_global(OneNode& t) {
  const Tensor want = t.reference()[0];
  using K = mc::pool::GlobalPool<float, kN, kC, kInner, Layout::nhwc, kMax, 128, kPX, kPY>;
  const std::vector<float> x = to_pitched(floats(t.feeds.at("x0")), t.feeds.at("x0").shape(), kPX);
  std::vector<float> y(static_cast<std::size_t>(kN * kPY), kUntouched);
  launch<K>({x.data(), y.data()});
  check_close(from_pitched(y, want.shape(), kPY), want);
}

}  // namespace

TEST_CASE("layout templates: pools NHWC with padded channel pitches") {
  SUBCASE("MaxPool 3x3 s2 p1, C 3 read at pitch 8, written at pitch 8") {
    OneNode t("MaxPool", 12, {random({2, 3, 9, 8}, 31)});
    t.n->set_attr_ints("kernel_shape", {3, 3});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    using Sh = mc::pool::Shape<2, 3, Dims3<1, 9, 8>, Dims3<1, 3, 3>, Dims3<1, 5, 4>, Dims3<1, 2, 2>, Dims3<0, 1, 1>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_pool<Sh, Kind::max, 8, 8>(t);
    check_pool<Sh, Kind::max, 8, 3>(t);
  }
  SUBCASE("AveragePool 2x2 s2, C 5 at pitch 8 in, dense out") {
    OneNode t("AveragePool", 11, {random({1, 5, 6, 6}, 32)});
    t.n->set_attr_ints("kernel_shape", {2, 2});
    t.n->set_attr_ints("strides", {2, 2});
    using Sh = mc::pool::Shape<1, 5, Dims3<1, 6, 6>, Dims3<1, 2, 2>, Dims3<1, 3, 3>, Dims3<1, 2, 2>, Dims3<0, 0, 0>,
                               Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
    check_pool<Sh, Kind::average_exclude_pad, 8, 5>(t);
    check_pool<Sh, Kind::average_exclude_pad, 5, 8>(t);
  }
  SUBCASE("global pools, C 5 at pitch 8, more planes than one block") {
    OneNode avg("GlobalAveragePool", 1, {random({2, 5, 7, 9}, 33)});
    check_global<2, 5, 63, false, 8, 8>(avg);
    check_global<2, 5, 63, false, 5, 5>(avg);
    OneNode mx("GlobalMaxPool", 1, {random({3, 70, 2, 3}, 34)});
    check_global<3, 70, 6, true, 72, 70>(mx);
  }
}

TEST_CASE("layout templates: depthwise convolution NHWC with padded channel pitches") {
  OneNode t("Conv", 11, {random({2, 6, 9, 7}, 35), random({6, 1, 3, 3}, 36), random({6}, 37)});
  t.n->set_attr_int("group", 6);
  t.n->set_attr_ints("strides", {2, 2});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  const Tensor want = t.reference()[0];
  using Sh = mc::conv::Shape<2, 6, 6, 6, Dims3<1, 9, 7>, Dims3<1, 3, 3>, Dims3<1, 5, 4>, Dims3<1, 2, 2>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  using K = mc::conv::ConvDepthwise<float, float, Sh, Layout::nhwc, mc::gemm::EpilogueBias<float>, 128, 8, 16>;
  const std::vector<float> x = to_pitched(floats(t.feeds.at("x0")), t.feeds.at("x0").shape(), 8);
  const std::vector<float> w = floats(t.feeds.at("x1")), bias = floats(t.feeds.at("x2"));
  std::vector<float> y(static_cast<std::size_t>(want.numel() / 6 * 16), kUntouched);
  launch<K>({x.data(), w.data(), y.data(), {bias.data()}});
  check_close(from_pitched(y, want.shape(), 16), want);
}

TEST_CASE("layout: kernel_layout reads the layout and the pitches from a kernel's views") {
  OneNode t("Conv", 11, {random({1, 3, 5, 5}, 38), random({4, 3, 3, 3}, 39)});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  Kernel k = t.kernel("conv");
  CHECK_FALSE(kernel_layout(k).channels_last);
  k.inputs[0].strides = channels_last_strides(k.inputs[0].shape, 8);
  k.outputs[0].strides = channels_last_strides(k.outputs[0].shape, 4);
  // W must be OHWI with X's pitch.
  CHECK_THROWS_WITH(kernel_layout(k), doctest::Contains("is not OHWI with channel pitch 8"));
  k.inputs[1].strides = channels_last_strides(k.inputs[1].shape, 8);
  const KernelLayout l = kernel_layout(k);
  CHECK(l.channels_last);
  CHECK(l.x_pitch == 8);
  CHECK(l.y_pitch == 4);
  CHECK(l.w == WeightStorage{8, 72});
  // FP16 X and W with 3 channels (tensor-core operands): W must be compact, rows of 27 -> 32.
  Kernel h = k;
  for (TensorView* v : {&h.inputs[0], &h.inputs[1], &h.outputs[0]}) v->dtype = DType::float16;
  CHECK_THROWS_WITH(kernel_layout(h), doctest::Contains("is not OHWI with channel pitch 3 in rows of 32"));
  h.inputs[1].strides = weight_strides(h.inputs[1].shape, WeightStorage{3, 32, true});
  CHECK(kernel_layout(h).w == WeightStorage{3, 32, true});
  // A view that is neither layout.
  k.outputs[0].strides = {100, 1, 20, 2};
  CHECK_THROWS_WITH(kernel_layout(k), doctest::Contains("is not channels-last"));
}

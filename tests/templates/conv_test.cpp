// templates/conv.cuh, conv_depthwise.cuh and conv_transpose.cuh on the host emulation against the
// reference interpreter: strides, dilations, asymmetric pads, auto_pad, groups, 1-D / 2-D / 3-D,
// bias, every tile configuration, NCHW and NHWC. Each case also checks that the families'
// geometry (codegen/families/conv.cpp) yields the template arguments instantiated here.
#include "schedule/families.h"
#include "schedule/tactics.h"
#include "linear_test_util.h"
#include "tests/codegen/launch_text.h"
#include "templates/conv.cuh"
#include "templates/conv_depthwise.cuh"
#include "templates/conv_transpose.cuh"

using namespace linear_test;
using mc::conv::Dims3;
using mc::conv::Layout;

namespace {

using T128x64 = mc::gemm::Tile<128, 64, 8, 8, 8>;
using T64x128 = mc::gemm::Tile<64, 128, 8, 8, 8>;
using T64x64 = mc::gemm::Tile<64, 64, 8, 4, 8>;
using T32x32 = mc::gemm::Tile<32, 32, 8, 4, 2>;
using TSkinnyM = mc::gemm::Tile<16, 64, 16, 2, 4>;
using TSkinnyN = mc::gemm::Tile<64, 16, 16, 4, 2>;

template <class D>
std::array<int64_t, 3> arr() {
  return {D::kD, D::kH, D::kW};
}

/// The families' geometry equals the template's Shape.
template <class Sh>
void check_geometry(const modelc::linear::ConvGeometry& g) {
  CHECK(g.N == Sh::kN);
  CHECK(g.C == Sh::kC);
  CHECK(g.M == Sh::kM);
  CHECK(g.G == Sh::kG);
  CHECK(g.in == arr<typename Sh::InDims>());
  CHECK(g.kernel == arr<typename Sh::KernelDims>());
  CHECK(g.out == arr<typename Sh::OutDims>());
  CHECK(g.stride == arr<typename Sh::StrideDims>());
  CHECK(g.pad == arr<typename Sh::PadDims>());
  CHECK(g.dilation == arr<typename Sh::DilationDims>());
}

/// Runs a convolution kernel K (Conv, ConvDepthwise or ConvTranspose; bias epilogue when the
/// node has B) in layout L: the test converts X, W (OHWI for nhwc Conv) and Y.
template <class K, Layout L, bool kOhwi = true>
std::vector<float> run(OneNode& t, const Tensor& want) {
  const Shape xs = t.feeds.at("x0").shape(), ws = t.feeds.at("x1").shape();
  std::vector<float> x = floats(t.feeds.at("x0")), w = floats(t.feeds.at("x1"));
  if (L == Layout::nhwc) {
    x = to_nhwc(x, xs);
    // [M][Cg][k...] -> [M][k...][Cg]: the same permutation as NCHW -> NHWC with (M, Cg) as (N, C).
    if (kOhwi) w = to_nhwc(w, ws);
  }
  std::vector<float> bias;
  if (t.feeds.count("x2")) bias = floats(t.feeds.at("x2"));
  std::vector<float> y = output_buffer(want.numel());
  launch<K>({x.data(), w.data(), y.data(), {bias.data()}});
  return L == Layout::nhwc ? from_nhwc(y, want.shape()) : y;
}

template <class K, Layout L, bool kOhwi = true>
std::vector<float> run_no_bias(OneNode& t, const Tensor& want) {
  const Shape xs = t.feeds.at("x0").shape(), ws = t.feeds.at("x1").shape();
  std::vector<float> x = floats(t.feeds.at("x0")), w = floats(t.feeds.at("x1"));
  if (L == Layout::nhwc) {
    x = to_nhwc(x, xs);
    if (kOhwi) w = to_nhwc(w, ws);
  }
  std::vector<float> y = output_buffer(want.numel());
  launch<K>({x.data(), w.data(), y.data(), {}});
  return L == Layout::nhwc ? from_nhwc(y, want.shape()) : y;
}

template <class Sh, class Tl, Layout L>
using ConvBias = mc::conv::Conv<float, float, Sh, L, Tl, mc::gemm::EpilogueBias<float>>;
template <class Sh, class Tl, Layout L>
using ConvPlain = mc::conv::Conv<float, float, Sh, L, Tl, mc::gemm::EpilogueIdentity>;

}  // namespace

TEST_CASE("conv template: 2-D, strides, dilations, asymmetric pads, bias, every tile, NCHW and NHWC") {
  OneNode t("Conv", 11, {random({2, 3, 11, 9}, 1), random({5, 3, 3, 3}, 2), random({5}, 3)});
  t.n->set_attr_ints("pads", {1, 0, 2, 1});
  t.n->set_attr_ints("strides", {2, 1});
  t.n->set_attr_ints("dilations", {1, 2});
  const Tensor want = t.reference()[0];
  REQUIRE(want.shape() == Shape{2, 5, 6, 6});
  using Sh = mc::conv::Shape<2, 3, 5, 1, Dims3<1, 11, 9>, Dims3<1, 3, 3>, Dims3<1, 6, 6>, Dims3<1, 2, 1>,
                             Dims3<0, 1, 0>, Dims3<1, 1, 2>>;
  check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
  check_close(run<ConvBias<Sh, T128x64, Layout::nchw>, Layout::nchw>(t, want), want);
  check_close(run<ConvBias<Sh, T64x128, Layout::nchw>, Layout::nchw>(t, want), want);
  check_close(run<ConvBias<Sh, T64x64, Layout::nchw>, Layout::nchw>(t, want), want);
  check_close(run<ConvBias<Sh, T32x32, Layout::nchw>, Layout::nchw>(t, want), want);
  check_close(run<ConvBias<Sh, TSkinnyM, Layout::nchw>, Layout::nchw>(t, want), want);
  check_close(run<ConvBias<Sh, TSkinnyN, Layout::nchw>, Layout::nchw>(t, want), want);
  check_close(run<ConvBias<Sh, T64x64, Layout::nhwc>, Layout::nhwc>(t, want), want);
  check_close(run<ConvBias<Sh, TSkinnyM, Layout::nhwc>, Layout::nhwc>(t, want), want);
}

TEST_CASE("conv template: groups with auto_pad SAME_UPPER / SAME_LOWER") {
  SUBCASE("group 2, SAME_UPPER, stride 2, no bias") {
    OneNode t("Conv", 11, {random({1, 6, 7, 8}, 4), random({4, 3, 3, 2}, 5)});
    t.n->set_attr_int("group", 2);
    t.n->set_attr_string("auto_pad", "SAME_UPPER");
    t.n->set_attr_ints("strides", {2, 2});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 6, 4, 2, Dims3<1, 7, 8>, Dims3<1, 3, 2>, Dims3<1, 4, 4>, Dims3<1, 2, 2>,
                               Dims3<0, 1, 0>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run_no_bias<ConvPlain<Sh, TSkinnyM, Layout::nchw>, Layout::nchw>(t, want), want);
    check_close(run_no_bias<ConvPlain<Sh, T32x32, Layout::nchw>, Layout::nchw>(t, want), want);
    check_close(run_no_bias<ConvPlain<Sh, T32x32, Layout::nhwc>, Layout::nhwc>(t, want), want);
  }
  SUBCASE("SAME_LOWER, stride 2, odd padding total") {
    OneNode t("Conv", 11, {random({1, 2, 5, 8}, 6), random({3, 2, 3, 3}, 7), random({3}, 8)});
    t.n->set_attr_string("auto_pad", "SAME_LOWER");
    t.n->set_attr_ints("strides", {2, 2});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 2, 3, 1, Dims3<1, 5, 8>, Dims3<1, 3, 3>, Dims3<1, 3, 4>, Dims3<1, 2, 2>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run<ConvBias<Sh, TSkinnyM, Layout::nchw>, Layout::nchw>(t, want), want);
  }
  SUBCASE("group 3 with 2 channels per group, 40 output channels (several row tiles per group)") {
    OneNode t("Conv", 11, {random({1, 6, 5, 5}, 9), random({120, 2, 1, 1}, 10), random({120}, 11)});
    t.n->set_attr_int("group", 3);
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 6, 120, 3, Dims3<1, 5, 5>, Dims3<1, 1, 1>, Dims3<1, 5, 5>, Dims3<1, 1, 1>,
                               Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run<ConvBias<Sh, TSkinnyM, Layout::nchw>, Layout::nchw>(t, want), want);
    check_close(run<ConvBias<Sh, T32x32, Layout::nhwc>, Layout::nhwc>(t, want), want);
  }
}

TEST_CASE("conv template: 1-D and 3-D") {
  SUBCASE("1-D: stride 2, pads 1/0, dilation 2") {
    OneNode t("Conv", 11, {random({2, 4, 13}, 12), random({6, 4, 3}, 13)});
    t.n->set_attr_ints("strides", {2});
    t.n->set_attr_ints("pads", {1, 0});
    t.n->set_attr_ints("dilations", {2});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<2, 4, 6, 1, Dims3<1, 1, 13>, Dims3<1, 1, 3>, Dims3<1, 1, 5>, Dims3<1, 1, 2>,
                               Dims3<0, 0, 1>, Dims3<1, 1, 2>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run_no_bias<ConvPlain<Sh, TSkinnyM, Layout::nchw>, Layout::nchw>(t, want), want);
    check_close(run_no_bias<ConvPlain<Sh, T32x32, Layout::nhwc>, Layout::nhwc>(t, want), want);
  }
  SUBCASE("3-D: pads 1, bias") {
    OneNode t("Conv", 11, {random({1, 2, 4, 5, 5}, 14), random({3, 2, 2, 3, 3}, 15), random({3}, 16)});
    t.n->set_attr_ints("pads", {1, 1, 1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 2, 3, 1, Dims3<4, 5, 5>, Dims3<2, 3, 3>, Dims3<5, 5, 5>, Dims3<1, 1, 1>,
                               Dims3<1, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    check_close(run<ConvBias<Sh, TSkinnyM, Layout::nchw>, Layout::nchw>(t, want), want);
    check_close(run<ConvBias<Sh, T64x64, Layout::nhwc>, Layout::nhwc>(t, want), want);
  }
}

TEST_CASE("conv_depthwise template: multiplier 1 and 2, NCHW and NHWC; plan picks it") {
  SUBCASE("group == C == M, stride 2, pads 1, bias") {
    OneNode t("Conv", 11, {random({2, 6, 9, 7}, 20), random({6, 1, 3, 3}, 21), random({6}, 22)});
    t.n->set_attr_int("group", 6);
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<2, 6, 6, 6, Dims3<1, 9, 7>, Dims3<1, 3, 3>, Dims3<1, 5, 4>, Dims3<1, 2, 2>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    modelc::Kernel k = t.kernel(modelc::family_for(*t.n));
    CHECK(k.family_name() == "conv_depthwise");
    check_geometry<Sh>(modelc::linear::conv_geometry(k));
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::Target{}});
    CHECK(k.note.find("depthwise") != std::string::npos);
    using Epi = mc::gemm::EpilogueBias<float>;
    check_close(run<mc::conv::ConvDepthwise<float, float, Sh, Layout::nchw, Epi>, Layout::nchw>(t, want), want);
    check_close(run<mc::conv::ConvDepthwise<float, float, Sh, Layout::nhwc, Epi>, Layout::nhwc>(t, want), want);
  }
  SUBCASE("channel multiplier 2, dilation 2, pads 2, no bias") {
    OneNode t("Conv", 11, {random({1, 3, 6, 6}, 23), random({6, 1, 3, 3}, 24)});
    t.n->set_attr_int("group", 3);
    t.n->set_attr_ints("dilations", {2, 2});
    t.n->set_attr_ints("pads", {2, 2, 2, 2});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 3, 6, 3, Dims3<1, 6, 6>, Dims3<1, 3, 3>, Dims3<1, 6, 6>, Dims3<1, 1, 1>,
                               Dims3<0, 2, 2>, Dims3<1, 2, 2>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(t.kernel("conv")));
    using Epi = mc::gemm::EpilogueIdentity;
    check_close(run_no_bias<mc::conv::ConvDepthwise<float, float, Sh, Layout::nchw, Epi>, Layout::nchw>(t, want), want);
    check_close(run_no_bias<mc::conv::ConvDepthwise<float, float, Sh, Layout::nhwc, Epi>, Layout::nhwc>(t, want), want);
  }
  SUBCASE("a grouped conv with several channels per group stays an implicit GEMM") {
    OneNode t("Conv", 11, {random({1, 4, 5, 5}, 25), random({4, 2, 3, 3}, 26)});
    t.n->set_attr_int("group", 2);
    modelc::Kernel k = t.kernel(modelc::family_for(*t.n));
    CHECK(k.family_name() == "conv");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::Target{}});
    CHECK(modelc::linear::tile_of(k).bm == 16);
  }
}

namespace {

template <class Sh, Layout L>
using TransposeBias = mc::conv::ConvTranspose<float, float, Sh, L, mc::gemm::EpilogueBias<float>>;
template <class Sh, Layout L>
using TransposePlain = mc::conv::ConvTranspose<float, float, Sh, L, mc::gemm::EpilogueIdentity>;

}  // namespace

TEST_CASE("conv_transpose template: strides, pads, output_padding, output_shape, groups, dilations, 1-D") {
  SUBCASE("stride 2, asymmetric pads, output_padding 1, bias, NCHW and NHWC") {
    OneNode t("ConvTranspose", 11, {random({1, 4, 5, 6}, 30), random({4, 3, 3, 3}, 31), random({3}, 32)});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("pads", {1, 0, 0, 1});
    t.n->set_attr_ints("output_padding", {1, 1});
    const Tensor want = t.reference()[0];
    REQUIRE(want.shape() == Shape{1, 3, 11, 13});
    using Sh = mc::conv::Shape<1, 4, 3, 1, Dims3<1, 5, 6>, Dims3<1, 3, 3>, Dims3<1, 11, 13>, Dims3<1, 2, 2>,
                               Dims3<0, 1, 0>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_transpose_geometry(t.kernel("conv_transpose")));
    check_close(run<TransposeBias<Sh, Layout::nchw>, Layout::nchw>(t, want), want);
    // W keeps ONNX's [C][Mg][k...] layout in NHWC.
    check_close(run<TransposeBias<Sh, Layout::nhwc>, Layout::nhwc, false>(t, want), want);
  }
  SUBCASE("group 2, dilations 2x1, strides 1x2") {
    OneNode t("ConvTranspose", 11, {random({2, 4, 4, 5}, 33), random({4, 2, 2, 3}, 34)});
    t.n->set_attr_int("group", 2);
    t.n->set_attr_ints("dilations", {2, 1});
    t.n->set_attr_ints("strides", {1, 2});
    const Tensor want = t.reference()[0];
    REQUIRE(want.shape() == Shape{2, 4, 6, 11});
    using Sh = mc::conv::Shape<2, 4, 4, 2, Dims3<1, 4, 5>, Dims3<1, 2, 3>, Dims3<1, 6, 11>, Dims3<1, 1, 2>,
                               Dims3<0, 0, 0>, Dims3<1, 2, 1>>;
    check_geometry<Sh>(modelc::linear::conv_transpose_geometry(t.kernel("conv_transpose")));
    check_close(run_no_bias<TransposePlain<Sh, Layout::nchw>, Layout::nchw>(t, want), want);
  }
  SUBCASE("output_shape (pads generated), and SAME_UPPER") {
    OneNode t("ConvTranspose", 11, {random({1, 2, 3, 3}, 35), random({2, 2, 3, 3}, 36)});
    t.n->set_attr_ints("strides", {2, 2});
    t.n->set_attr_ints("output_shape", {6, 6});
    const Tensor want = t.reference()[0];
    using Sh = mc::conv::Shape<1, 2, 2, 1, Dims3<1, 3, 3>, Dims3<1, 3, 3>, Dims3<1, 6, 6>, Dims3<1, 2, 2>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_transpose_geometry(t.kernel("conv_transpose")));
    check_close(run_no_bias<TransposePlain<Sh, Layout::nchw>, Layout::nchw>(t, want), want);

    OneNode u("ConvTranspose", 11, {random({1, 2, 3, 3}, 37), random({2, 2, 3, 3}, 38)});
    u.n->set_attr_ints("strides", {2, 2});
    u.n->set_attr_string("auto_pad", "SAME_UPPER");
    const Tensor want_u = u.reference()[0];
    using ShU = mc::conv::Shape<1, 2, 2, 1, Dims3<1, 3, 3>, Dims3<1, 3, 3>, Dims3<1, 6, 6>, Dims3<1, 2, 2>,
                                Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
    check_geometry<ShU>(modelc::linear::conv_transpose_geometry(u.kernel("conv_transpose")));
    check_close(run_no_bias<TransposePlain<ShU, Layout::nchw>, Layout::nchw>(u, want_u), want_u);
  }
  SUBCASE("1-D, stride 3, pads 2/1") {
    OneNode t("ConvTranspose", 11, {random({1, 3, 7}, 39), random({3, 2, 4}, 40), random({2}, 41)});
    t.n->set_attr_ints("strides", {3});
    t.n->set_attr_ints("pads", {2, 1});
    const Tensor want = t.reference()[0];
    REQUIRE(want.shape() == Shape{1, 2, 19});
    using Sh = mc::conv::Shape<1, 3, 2, 1, Dims3<1, 1, 7>, Dims3<1, 1, 4>, Dims3<1, 1, 19>, Dims3<1, 1, 3>,
                               Dims3<0, 0, 2>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_transpose_geometry(t.kernel("conv_transpose")));
    check_close(run<TransposeBias<Sh, Layout::nchw>, Layout::nchw>(t, want), want);
  }
}

TEST_CASE("conv templates: FusedConv epilogues (bias, activation, residual) for the implicit GEMM and depthwise") {
  using modelc::ops::Activation;
  SUBCASE("implicit GEMM: bias + residual before relu (a ResNet block's end)") {
    OneNode t("FusedConv", 11, {random({1, 4, 7, 6}, 60), random({6, 4, 3, 3}, 61), random({6}, 62),
                                random({1, 6, 7, 6}, 63)});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    fuse(t, activation(Activation::relu), "before_activation");
    const Tensor want = t.reference()[0];
    modelc::Kernel k = t.kernel("conv");
    using Sh = mc::conv::Shape<1, 4, 6, 1, Dims3<1, 7, 6>, Dims3<1, 3, 3>, Dims3<1, 7, 6>, Dims3<1, 1, 1>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(k));
    using Epi = mc::gemm::EpilogueFused<float, mc::gemm::Strides<0, 0, 0, 1, 0>, true, mc::gemm::Act::relu,
                                        mc::gemm::Residual::before_activation>;
    const std::vector<float> x = floats(t.feeds.at("x0")), w = floats(t.feeds.at("x1")), b = floats(t.feeds.at("x2")),
                             r = floats(t.feeds.at("x3"));
    std::vector<float> y = output_buffer(want.numel());
    using K = mc::conv::Conv<float, float, Sh, Layout::nchw, T32x32, Epi>;
    launch<K>({x.data(), w.data(), y.data(), {1.0f, 1.0f, b.data(), r.data(), {0, 0, -INFINITY, INFINITY}}});
    check_close(y, want);
    const modelc::KernelFamily* f = modelc::FamilyRegistry::instance().find("conv");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::Target{}});
    const modelc::KernelLaunches e = f->emit(k, NameContext{});
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::gemm::EpilogueFused<float, mc::gemm::Strides<0, 0, 0, 1, 0>, true, "
                                  "mc::gemm::Act::relu, mc::gemm::Residual::before_activation>") != std::string::npos);
    CHECK(e.launches[0].comment.find("+ bias + relu + residual (before_activation)") != std::string::npos);
    // A ReLU's epilogue sets the bias and the residual, no activation parameters.
    CHECK(modelc::test::launch_text(e).find("epilogue.bias = const:x2;\nepilogue.residual = const:x3;\n") != std::string::npos);
    CHECK(modelc::test::launch_text(e).find("epilogue.act") == std::string::npos);
  }
  SUBCASE("depthwise: hard_swish, no bias") {
    OneNode t("FusedConv", 11, {random({1, 5, 6, 6}, 64), random({5, 1, 3, 3}, 65)});
    t.n->set_attr_int("group", 5);
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    fuse(t, activation(Activation::hard_swish, 1.0 / 6, 0.5));
    const Tensor want = t.reference()[0];
    modelc::Kernel k = t.kernel(modelc::family_for(*t.n));
    CHECK(k.family_name() == "conv_depthwise");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::Target{}});
    using Sh = mc::conv::Shape<1, 5, 5, 5, Dims3<1, 6, 6>, Dims3<1, 3, 3>, Dims3<1, 6, 6>, Dims3<1, 1, 1>,
                               Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::conv_geometry(k));
    using Epi = mc::gemm::EpilogueFused<float, mc::gemm::Strides<0, 0, 0, 1, 0>, false, mc::gemm::Act::hard_swish,
                                        mc::gemm::Residual::none>;
    const std::vector<float> x = floats(t.feeds.at("x0")), w = floats(t.feeds.at("x1"));
    std::vector<float> y = output_buffer(want.numel());
    using K = mc::conv::ConvDepthwise<float, float, Sh, Layout::nchw, Epi>;
    launch<K>({x.data(), w.data(), y.data(), {1.0f, 1.0f, nullptr, nullptr, {1.0f / 6, 0.5f, -INFINITY, INFINITY}}});
    check_close(y, want);
    const modelc::KernelLaunches e = modelc::FamilyRegistry::instance().find("conv_depthwise")->emit(k, NameContext{});
    REQUIRE(e.launches.size() == 1);
    CHECK(e.launches[0].type.find("mc::gemm::Act::hard_swish") != std::string::npos);
    const std::string text = modelc::test::launch_text(e);
    CHECK(text.find("epilogue.act.alpha = 0.16666667f;\nepilogue.act.beta = 0.5f;\n") != std::string::npos);
    CHECK(text.find("epilogue.bias") == std::string::npos);
  }
}

// templates/pool.cuh on the host emulation against the reference interpreter: MaxPool with Indices
// (both storage orders, ties, windows entirely in the padding), ceil_mode, dilations, auto_pad,
// AveragePool with and without count_include_pad, 1-D / 2-D / 3-D, the global pools, NCHW and
// NHWC. Each case also checks that pool_geometry (codegen/families/conv.cpp) yields the template
// arguments instantiated here.
#include "schedule/families.h"
#include "schedule/tactics.h"
#include "linear_test_util.h"
#include "templates/pool.cuh"

using namespace linear_test;
using mc::conv::Dims3;
using mc::conv::Layout;
using mc::pool::Kind;

namespace {

template <class D>
std::array<int64_t, 3> arr() {
  return {D::kD, D::kH, D::kW};
}

template <class Sh>
void check_geometry(const modelc::linear::ConvGeometry& g) {
  CHECK(g.N == Sh::kN);
  CHECK(g.C == Sh::kC);
  CHECK(g.in == arr<typename Sh::InDims>());
  CHECK(g.kernel == arr<typename Sh::KernelDims>());
  CHECK(g.out == arr<typename Sh::OutDims>());
  CHECK(g.stride == arr<typename Sh::StrideDims>());
  CHECK(g.pad == arr<typename Sh::PadDims>());
  CHECK(g.pad_end == arr<typename Sh::PadEndDims>());
  CHECK(g.dilation == arr<typename Sh::DilationDims>());
}

/// Runs Pool<...> in layout L; returns Y (NCHW) and fills *indices when the kernel writes them.
template <class Sh, Layout L, Kind kKind, bool kIndices = false, bool kColumnMajor = false>
std::vector<float> run_pool(OneNode& t, const Tensor& want, std::vector<int64_t>* indices = nullptr) {
  using K = mc::pool::Pool<float, Sh, L, kKind, kIndices, kColumnMajor>;
  std::vector<float> x = floats(t.feeds.at("x0"));
  if (L == Layout::nhwc) x = to_nhwc(x, t.feeds.at("x0").shape());
  std::vector<float> y = output_buffer(want.numel());
  std::vector<int64_t> ind(static_cast<std::size_t>(want.numel()), -7);
  launch<K>({x.data(), y.data(), kIndices ? ind.data() : nullptr});
  if (L == Layout::nhwc) {
    y = from_nhwc(y, want.shape());
    // Indices are flat NCHW positions whatever the layout; only their order in memory changes.
    std::vector<float> as_float(ind.begin(), ind.end());
    as_float = from_nhwc(as_float, want.shape());
    ind.assign(as_float.begin(), as_float.end());
  }
  if (indices) *indices = ind;
  return y;
}

void check_indices(const std::vector<int64_t>& got, const Tensor& want) {
  const std::vector<int64_t> w = want.to_i64();
  REQUIRE(got.size() == w.size());
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (got[i] != w[i] && ++bad <= 5) {
      INFO("index " << i << ": got " << got[i] << ", want " << w[i]);
      CHECK(false);
    }
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("pool template: MaxPool with Indices (both storage orders, ties), NCHW and NHWC") {
  OneNode t("MaxPool", 12, {random_ties({2, 3, 9, 8}, 1)}, 2);
  t.n->set_attr_ints("kernel_shape", {3, 3});
  t.n->set_attr_ints("strides", {2, 2});
  t.n->set_attr_ints("pads", {1, 1, 1, 1});
  using Sh = mc::pool::Shape<2, 3, Dims3<1, 9, 8>, Dims3<1, 3, 3>, Dims3<1, 5, 4>, Dims3<1, 2, 2>, Dims3<0, 1, 1>,
                             Dims3<0, 1, 1>, Dims3<1, 1, 1>>;
  SUBCASE("row-major indices") {
    const std::vector<Tensor> want = t.reference();
    check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
    std::vector<int64_t> ind;
    check_close(run_pool<Sh, Layout::nchw, Kind::max, true>(t, want[0], &ind), want[0], 0, 0);
    check_indices(ind, want[1]);
    check_close(run_pool<Sh, Layout::nhwc, Kind::max, true>(t, want[0], &ind), want[0], 0, 0);
    check_indices(ind, want[1]);
  }
  SUBCASE("storage_order 1: column-major indices") {
    t.n->set_attr_int("storage_order", 1);
    const std::vector<Tensor> want = t.reference();
    std::vector<int64_t> ind;
    check_close(run_pool<Sh, Layout::nchw, Kind::max, true, true>(t, want[0], &ind), want[0], 0, 0);
    check_indices(ind, want[1]);
  }
}

TEST_CASE("pool template: MaxPool ceil_mode with dilations; 1-D SAME_UPPER; windows in the padding") {
  SUBCASE("ceil_mode, dilations 2x1, strides 3x2") {
    OneNode t("MaxPool", 12, {random({1, 2, 10, 7}, 2)}, 2);
    t.n->set_attr_ints("kernel_shape", {2, 3});
    t.n->set_attr_ints("strides", {3, 2});
    t.n->set_attr_ints("dilations", {2, 1});
    t.n->set_attr_int("ceil_mode", 1);
    const std::vector<Tensor> want = t.reference();
    REQUIRE(want[0].shape() == Shape{1, 2, 4, 3});
    using Sh = mc::pool::Shape<1, 2, Dims3<1, 10, 7>, Dims3<1, 2, 3>, Dims3<1, 4, 3>, Dims3<1, 3, 2>, Dims3<0, 0, 0>,
                               Dims3<0, 0, 0>, Dims3<1, 2, 1>>;
    check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
    std::vector<int64_t> ind;
    check_close(run_pool<Sh, Layout::nchw, Kind::max, true>(t, want[0], &ind), want[0], 0, 0);
    check_indices(ind, want[1]);
  }
  SUBCASE("1-D, SAME_UPPER, stride 3, no Indices") {
    OneNode t("MaxPool", 12, {random({2, 3, 11}, 3)});
    t.n->set_attr_ints("kernel_shape", {4});
    t.n->set_attr_ints("strides", {3});
    t.n->set_attr_string("auto_pad", "SAME_UPPER");
    const Tensor want = t.reference()[0];
    using Sh = mc::pool::Shape<2, 3, Dims3<1, 1, 11>, Dims3<1, 1, 4>, Dims3<1, 1, 4>, Dims3<1, 1, 3>, Dims3<0, 0, 1>,
                               Dims3<0, 0, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
    check_close(run_pool<Sh, Layout::nchw, Kind::max>(t, want), want, 0, 0);
  }
  SUBCASE("pads wider than the window: windows entirely in the padding give 0 and index -1") {
    OneNode t("MaxPool", 12, {random({1, 1, 3}, 4)}, 2);
    t.n->set_attr_ints("kernel_shape", {2});
    t.n->set_attr_ints("pads", {2, 2});
    const std::vector<Tensor> want = t.reference();
    using Sh = mc::pool::Shape<1, 1, Dims3<1, 1, 3>, Dims3<1, 1, 2>, Dims3<1, 1, 6>, Dims3<1, 1, 1>, Dims3<0, 0, 2>,
                               Dims3<0, 0, 2>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
    std::vector<int64_t> ind;
    check_close(run_pool<Sh, Layout::nchw, Kind::max, true>(t, want[0], &ind), want[0], 0, 0);
    check_indices(ind, want[1]);
    CHECK(ind[0] == -1);
  }
}

TEST_CASE("pool template: AveragePool with and without count_include_pad, ceil_mode, 3-D, dilations") {
  SUBCASE("2-D asymmetric pads, ceil_mode: the last window runs past the end padding") {
    for (int include : {0, 1}) {
      OneNode t("AveragePool", 11, {random({1, 2, 7, 8}, 5)});
      t.n->set_attr_ints("kernel_shape", {3, 3});
      t.n->set_attr_ints("strides", {2, 2});
      t.n->set_attr_ints("pads", {1, 2, 0, 1});
      t.n->set_attr_int("ceil_mode", 1);
      t.n->set_attr_int("count_include_pad", include);
      const Tensor want = t.reference()[0];
      REQUIRE(want.shape() == Shape{1, 2, 4, 5});
      using Sh = mc::pool::Shape<1, 2, Dims3<1, 7, 8>, Dims3<1, 3, 3>, Dims3<1, 4, 5>, Dims3<1, 2, 2>, Dims3<0, 1, 2>,
                                 Dims3<0, 0, 1>, Dims3<1, 1, 1>>;
      check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
      if (include) {
        check_close(run_pool<Sh, Layout::nchw, Kind::average_include_pad>(t, want), want);
        check_close(run_pool<Sh, Layout::nhwc, Kind::average_include_pad>(t, want), want);
      } else {
        check_close(run_pool<Sh, Layout::nchw, Kind::average_exclude_pad>(t, want), want);
        check_close(run_pool<Sh, Layout::nhwc, Kind::average_exclude_pad>(t, want), want);
      }
    }
  }
  SUBCASE("3-D, count_include_pad") {
    OneNode t("AveragePool", 11, {random({1, 2, 5, 6, 4}, 6)});
    t.n->set_attr_ints("kernel_shape", {2, 3, 2});
    t.n->set_attr_ints("strides", {2, 2, 1});
    t.n->set_attr_ints("pads", {0, 1, 0, 1, 1, 1});
    t.n->set_attr_int("count_include_pad", 1);
    const Tensor want = t.reference()[0];
    using Sh = mc::pool::Shape<1, 2, Dims3<5, 6, 4>, Dims3<2, 3, 2>, Dims3<3, 3, 4>, Dims3<2, 2, 1>, Dims3<0, 1, 0>,
                               Dims3<1, 1, 1>, Dims3<1, 1, 1>>;
    check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
    check_close(run_pool<Sh, Layout::nchw, Kind::average_include_pad>(t, want), want);
  }
  SUBCASE("opset 19 dilations") {
    OneNode t("AveragePool", 19, {random({1, 3, 9, 9}, 7)});
    t.n->set_attr_ints("kernel_shape", {2, 2});
    t.n->set_attr_ints("dilations", {3, 2});
    t.n->set_attr_ints("pads", {1, 1, 1, 1});
    const Tensor want = t.reference()[0];
    using Sh = mc::pool::Shape<1, 3, Dims3<1, 9, 9>, Dims3<1, 2, 2>, Dims3<1, 8, 9>, Dims3<1, 1, 1>, Dims3<0, 1, 1>,
                               Dims3<0, 1, 1>, Dims3<1, 3, 2>>;
    check_geometry<Sh>(modelc::linear::pool_geometry(t.kernel("pool")));
    check_close(run_pool<Sh, Layout::nchw, Kind::average_exclude_pad>(t, want), want);
  }
}

namespace {

template <int kN, int kC, int kInner, Layout L, bool kMax>
void check_global(OneNode& t) {
  const Tensor want = t.reference()[0];
  using K = mc::pool::GlobalPool<float, kN, kC, kInner, L, kMax>;
  std::vector<float> x = floats(t.feeds.at("x0"));
  if (L == Layout::nhwc) x = to_nhwc(x, t.feeds.at("x0").shape());
  std::vector<float> y = output_buffer(want.numel());
  launch<K>({x.data(), y.data()});
  check_close(y, want);
}

}  // namespace

TEST_CASE("pool template: GlobalAveragePool and GlobalMaxPool, planes not a multiple of the warps") {
  OneNode avg("GlobalAveragePool", 1, {random({2, 5, 7, 9}, 8)});
  check_global<2, 5, 63, Layout::nchw, false>(avg);
  check_global<2, 5, 63, Layout::nhwc, false>(avg);
  OneNode mx("GlobalMaxPool", 1, {random({2, 5, 7, 9}, 9)});
  check_global<2, 5, 63, Layout::nchw, true>(mx);
  check_global<2, 5, 63, Layout::nhwc, true>(mx);
  OneNode one("GlobalAveragePool", 1, {random({3, 2, 5}, 10)});
  check_global<3, 2, 5, Layout::nchw, false>(one);
}

TEST_CASE("pool family: plan notes") {
  OneNode t("MaxPool", 12, {random({1, 2, 6, 6}, 11)});
  t.n->set_attr_ints("kernel_shape", {2, 2});
  modelc::Kernel k = t.kernel("pool");
  modelc::plan_kernel(k);
  modelc::choose_tactic(k, {modelc::Target{}});
  CHECK(k.note.find("k2x2 s1x1 p0x0 d1x1") != std::string::npos);
  CHECK(std::get<modelc::DirectTactic>(k.tactic).threads == 128);
}

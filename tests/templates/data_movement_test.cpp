// The data-movement families against the reference interpreter, bit for bit: the plans
// (schedule/copy.h, schedule/data_movement.h) of Transpose, Slice (negative steps, clamping, both forms),
// Expand, Tile, DepthToSpace/SpaceToDepth, Concat, Split, Pad (every mode, negative pads, axes),
// Gather and Resize (every mode and coordinate transformation), applied on the host; and the
// kernels of templates/data_movement.cuh and resize.cuh on the host emulation for float16, int64,
// bool and float data.
#include "schedule/data_movement.h"

#include <functional>
#include <memory>

#include "codegen/families/elementwise_util.h"
#include "tests/templates/elementwise_harness.h"

using namespace ew_test;
using namespace modelc::codegen;
using mc::ix::Dims;

namespace {

TensorView view_of(const Tensor& t) {
  TensorView v;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.strides = strides_of(t.shape());
  return v;
}

Tensor run_copy(const StridedCopy& c, const Tensor& x, const Tensor& want) {
  Tensor y = like(want);
  apply_copy(c, x.raw(), y.mutable_raw(), dtype_size(x.dtype()));
  return y;
}

Tensor iota(DType t, const Shape& s) {
  std::vector<int64_t> v(static_cast<std::size_t>(num_elements(s)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i) + 1;
  return t == DType::boolean ? random_tensor(t, s, 99) : Tensor::from_i64(t, s, v);
}

// Host evaluation of a Pad plan (what mc::dm::Pad computes).
Tensor apply_pad(const PadPlan& p, const Tensor& x, const Tensor& want) {
  Tensor y = like(want);
  const Shape& out = want.shape();
  const std::size_t r = out.size(), es = dtype_size(x.dtype());
  const std::vector<int64_t> xs = strides_of(x.shape());
  std::vector<int64_t> c(r, 0);
  for (int64_t i = 0; i < want.numel(); ++i) {
    int64_t at = 0;
    bool fill = false;
    for (std::size_t d = 0; d < r; ++d) {
      const int64_t lo = p.lo[d], m = p.kept[d], j = c[d] - std::max<int64_t>(p.begin[d], 0);
      int64_t s;
      if (j >= 0 && j < m)
        s = lo + j;
      else if (p.mode == "constant")
        s = -1;
      else if (p.mode == "edge")
        s = lo + (j < 0 ? 0 : m - 1);
      else if (p.mode == "wrap")
        s = lo + ((j % m) + m) % m;
      else if (m == 1)
        s = lo;
      else {
        const int64_t period = 2 * (m - 1);
        int64_t q = ((j % period) + period) % period;
        s = lo + (q >= m ? period - q : q);
      }
      if (s < 0)
        fill = true;
      else
        at += s * xs[d];
    }
    std::memcpy(y.mutable_raw() + i * es, fill ? p.fill.raw() : x.raw() + at * es, es);
    for (std::size_t d = r; d-- > 0;) {
      if (++c[d] < out[d]) break;
      c[d] = 0;
    }
  }
  return y;
}

// Host evaluation of a Resize plan in double (what mc::dm::Resize computes, nested the same way).
Tensor apply_resize(const ResizePlan& p, const Tensor& x, const Tensor& want) {
  const Shape& out = want.shape();
  const std::size_t r = out.size();
  const std::vector<double> xv = x.to_f64();
  const std::vector<int64_t> xs = strides_of(x.shape());
  std::vector<double> y(static_cast<std::size_t>(want.numel()));
  std::vector<int64_t> c(r, 0);
  std::function<double(int, int64_t)> sample = [&](int d, int64_t base) -> double {
    if (d < 0) return xv[static_cast<std::size_t>(base)];
    const auto u = static_cast<std::size_t>(d);
    if (p.taps[u] == 0) return sample(d - 1, base + c[u] * xs[u]);
    double acc = 0;
    for (int64_t k = 0; k < p.taps[u]; ++k) {
      const auto& t = p.table[static_cast<std::size_t>(p.start[u] + c[u] * p.taps[u] + k)];
      if (t.first >= 0) acc += t.second * sample(d - 1, base + t.first * xs[u]);
    }
    return acc;
  };
  for (std::size_t i = 0; i < y.size(); ++i) {
    bool outside = false;
    for (std::size_t d = 0; d < r; ++d) {
      if (p.taps[d] > 0 && p.table[static_cast<std::size_t>(p.start[d] + c[d] * p.taps[d])].first == -2) outside = true;
    }
    y[i] = outside ? p.extrapolation : sample(static_cast<int>(r) - 1, 0);
    for (std::size_t d = r; d-- > 0;) {
      if (++c[d] < out[d]) break;
      c[d] = 0;
    }
  }
  return Tensor::from_f64(want.dtype(), out, y);
}

}  // namespace

// ---- plans ---------------------------------------------------------------------------------------

TEST_CASE("data movement plans: Transpose, every permutation of a 3-D tensor and the default") {
  const Tensor x = iota(DType::int64, {2, 3, 4});
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0},
                                                   {2, 0, 1}, {2, 1, 0}, {}};
  for (const auto& perm : perms) {
    OneNode c("Transpose", 13, {x});
    if (!perm.empty()) c.n->set_attr_ints("perm", perm);
    const Tensor want = c.reference1();
    check_bits(run_copy(transpose_plan(*c.n, view_of(x), view_of(want)), x, want), want);
  }
}

TEST_CASE("data movement plans: Slice with steps, negative steps, clamping and both forms") {
  const Tensor x = iota(DType::float16, {5, 6, 4});
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {
      {{1, 0}, {4, 6}, {0, 1}, {1, 2}},
      {{-1}, {-1000}, {1}, {-1}},           // whole axis backward
      {{4, 5}, {0, 1}, {0, -2}, {-2, -3}},  // negative steps on two axes
      {{0}, {100}, {2}, {3}},               // end clamped
      {{2, -3}, {2, 100}, {0, 2}, {1, 1}},  // empty
      {{10}, {-10}, {0}, {-1}},             // start clamped from above
      {{1}, {2}, {1}, {INT64_MAX}},         // one element, huge step
  };
  for (const Case& k : cases) {
    OneNode c(
        "Slice", 13,
        {x, i64({static_cast<int64_t>(k.starts.size())}, k.starts), i64({static_cast<int64_t>(k.ends.size())}, k.ends),
         i64({static_cast<int64_t>(k.axes.size())}, k.axes), i64({static_cast<int64_t>(k.steps.size())}, k.steps)},
        {1, 2, 3, 4});
    const Tensor want = c.reference1();
    check_bits(run_copy(slice_plan(*c.n, view_of(x), view_of(want)), x, want), want);
  }
  SUBCASE("opset 1 attributes") {
    OneNode c("Slice", 1, {x});
    c.n->set_attr_ints("starts", {1, -3});
    c.n->set_attr_ints("ends", {3, 1000});
    c.n->set_attr_ints("axes", {0, 2});
    const Tensor want = c.reference1();
    check_bits(run_copy(slice_plan(*c.n, view_of(x), view_of(want)), x, want), want);
  }
}

TEST_CASE("data movement plans: Expand, Tile, DepthToSpace, SpaceToDepth") {
  SUBCASE("Expand") {
    const Tensor x = iota(DType::int32, {3, 1});
    OneNode c("Expand", 13, {x, i64({3}, {2, 1, 4})}, {1});
    const Tensor want = c.reference1();
    check_bits(run_copy(expand_plan(view_of(x), view_of(want)), x, want), want);
  }
  SUBCASE("Tile") {
    const Tensor x = iota(DType::boolean, {2, 3});
    OneNode c("Tile", 13, {x, i64({2}, {3, 2})}, {1});
    const Tensor want = c.reference1();
    check_bits(run_copy(tile_plan(view_of(x), view_of(want)), x, want), want);
  }
  for (const char* mode : {"DCR", "CRD"}) {
    CAPTURE(mode);
    const Tensor x = iota(DType::float32, {2, 8, 2, 3});
    OneNode c("DepthToSpace", 13, {x});
    c.n->set_attr_int("blocksize", 2);
    c.n->set_attr_string("mode", mode);
    const Tensor want = c.reference1();
    check_bits(run_copy(depth_space_plan(*c.n, view_of(x), view_of(want)), x, want), want);
  }
  SUBCASE("SpaceToDepth") {
    const Tensor x = iota(DType::uint8, {1, 2, 6, 4});
    OneNode c("SpaceToDepth", 13, {x});
    c.n->set_attr_int("blocksize", 2);
    const Tensor want = c.reference1();
    check_bits(run_copy(depth_space_plan(*c.n, view_of(x), view_of(want)), x, want), want);
  }
}

TEST_CASE("data movement plans: Concat and Split") {
  SUBCASE("Concat along a negative axis, with an empty input") {
    const Tensor a = iota(DType::int64, {2, 3, 1}), b = iota(DType::int64, {2, 3, 2}), e(DType::int64, {2, 3, 0});
    OneNode c("Concat", 13, {a, e, b});
    c.n->set_attr_int("axis", -1);
    const Tensor want = c.reference1();
    Tensor y = like(want);
    const std::vector<StridedCopy> copies = concat_plan(*c.n, {view_of(a), view_of(e), view_of(b)}, view_of(want));
    const Tensor* ins[] = {&a, &e, &b};
    for (std::size_t i = 0; i < copies.size(); ++i) apply_copy(copies[i], ins[i]->raw(), y.mutable_raw(), 8);
    check_bits(y, want);
  }
  struct Case {
    int opset;
    std::vector<int64_t> split;  // empty: equal parts
    int outputs;
    int64_t len;
  };
  for (const Case& k : std::vector<Case>{{2, {1, 4}, 2, 5}, {13, {2, 0, 3}, 3, 5}, {13, {}, 3, 6}, {18, {}, 3, 7}}) {
    CAPTURE(k.opset);
    const Tensor x = iota(DType::float32, {2, k.len});
    std::vector<Tensor> ins{x};
    std::vector<int> constants;
    if (k.opset >= 13 && !k.split.empty()) {
      ins.push_back(i64({static_cast<int64_t>(k.split.size())}, k.split));
      constants.push_back(1);
    }
    OneNode c("Split", k.opset, ins, constants, k.outputs);
    c.n->set_attr_int("axis", 1);
    if (k.opset < 13 && !k.split.empty()) c.n->set_attr_ints("split", k.split);
    if (k.opset >= 18) c.n->set_attr_int("num_outputs", k.outputs);
    const std::vector<Tensor> want = c.reference();
    std::vector<TensorView> ys;
    for (const Tensor& w : want) ys.push_back(view_of(w));
    const std::vector<StridedCopy> copies = split_plan(*c.n, view_of(x), ys);
    REQUIRE(copies.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) check_bits(run_copy(copies[i], x, want[i]), want[i]);
  }
}

TEST_CASE("data movement plans: Pad in every mode and form") {
  const Tensor x = iota(DType::int32, {3, 4});
  for (const char* mode : {"constant", "edge", "reflect", "wrap"}) {
    CAPTURE(mode);
    for (const auto& pads : std::vector<std::vector<int64_t>>{{1, 2, 2, 3}, {0, -1, 5, 1}, {-1, 7, 0, -2}}) {
      OneNode c("Pad", 19, {x, i64({4}, pads), Tensor::from_i64(DType::int32, {}, {-5})}, {1, 2});
      c.n->set_attr_string("mode", mode);
      const Tensor want = c.reference1();
      check_bits(apply_pad(pad_plan(*c.n, view_of(x), view_of(want)), x, want), want);
    }
  }
  SUBCASE("opset 2 attributes with a fill value") {
    const Tensor f = iota(DType::float16, {2, 3});
    OneNode c("Pad", 2, {f});
    c.n->set_attr_ints("pads", {1, 0, 0, 2});
    c.n->set_attr_float("value", 1.5);
    const Tensor want = c.reference1();
    const PadPlan p = pad_plan(*c.n, view_of(f), view_of(want));
    CHECK(bits_literal(p.fill) == "0x3e00");
    check_bits(apply_pad(p, f, want), want);
  }
  SUBCASE("opset 18 axes") {
    OneNode c("Pad", 18, {x, i64({2}, {2, 1}), Tensor(), i64({1}, {-1})}, {1, 3});
    c.n->set_attr_string("mode", "reflect");
    const Tensor want = c.reference1();
    check_bits(apply_pad(pad_plan(*c.n, view_of(x), view_of(want)), x, want), want);
  }
  SUBCASE("a fill value computed at run time") {
    OneNode c("Pad", 11, {x, i64({4}, {1, 1, 1, 1}), Tensor::from_i64(DType::int32, {}, {7})}, {1});
    const Tensor want = c.reference1();
    const PadPlan p = pad_plan(*c.n, view_of(x), view_of(want));
    CHECK(p.fill_input == 2);
  }
}

TEST_CASE("data movement plans: Gather splits the data around the axis") {
  const Tensor x = iota(DType::int64, {2, 5, 3, 2});
  OneNode c("Gather", 13, {x, i64({2, 2}, {4, -1, 0, 2})});
  c.n->set_attr_int("axis", 1);
  const Tensor want = c.reference1();
  const GatherPlan p = gather_plan(*c.n, view_of(x), view_of(want));
  CHECK(p.outer == Shape{2});
  CHECK(p.inner == Shape{6});
  CHECK(p.x_inner_strides == Strides{1});
  CHECK(p.axis_len == 5);
  CHECK(p.x_axis_stride == 6);
}

TEST_CASE("data movement plans: Resize taps reproduce the reference in every mode") {
  const Tensor x = random_tensor(DType::float32, {1, 2, 4, 5}, 31);
  struct Case {
    std::string mode, coord, nearest;
    std::vector<double> scales;
    std::vector<int64_t> sizes;
    bool exclude_outside = false;
  };
  std::vector<Case> cases;
  for (const char* coord :
       {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"}) {
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      cases.push_back({mode, coord, "round_prefer_floor", {1, 1, 2.0, 0.6}, {}});
      cases.push_back({mode, coord, "round_prefer_ceil", {}, {1, 2, 3, 8}});
    }
  }
  for (const char* nearest : {"floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}) {
    cases.push_back({"nearest", "asymmetric", nearest, {1, 1, 1.5, 2.5}, {}});
  }
  cases.push_back({"cubic", "half_pixel", "floor", {1, 1, 0.5, 1.7}, {}, true});
  cases.push_back({"linear", "align_corners", "floor", {}, {1, 2, 1, 1}});  // one output row
  for (const Case& k : cases) {
    CAPTURE(k.mode);
    CAPTURE(k.coord);
    CAPTURE(k.nearest);
    std::vector<Tensor> ins{
        x, Tensor(), k.scales.empty() ? Tensor() : f32({4}, std::vector<float>(k.scales.begin(), k.scales.end())),
        k.sizes.empty() ? Tensor() : i64({4}, k.sizes)};
    OneNode c("Resize", 19, ins, {1, 2, 3});
    c.n->set_attr_string("mode", k.mode);
    c.n->set_attr_string("coordinate_transformation_mode", k.coord);
    c.n->set_attr_string("nearest_mode", k.nearest);
    if (k.exclude_outside) c.n->set_attr_int("exclude_outside", 1);
    const Tensor want = c.reference1();
    check_close(apply_resize(resize_plan(*c.n, view_of(x), view_of(want)), x, want), want, 1e-6, 1e-7);
  }
  SUBCASE("tf_crop_and_resize extrapolates outside the box; axes and keep_aspect_ratio_policy") {
    const Tensor roi = f32({4}, {0.2f, -0.3f, 0.9f, 1.4f});
    OneNode c("Resize", 19, {x, roi, Tensor(), i64({2}, {3, 7})}, {1, 3});
    c.n->set_attr_string("mode", "linear");
    c.n->set_attr_string("coordinate_transformation_mode", "tf_crop_and_resize");
    c.n->set_attr_float("extrapolation_value", -9.0);
    c.n->set_attr_ints("axes", {2, 3});
    const Tensor want = c.reference1();
    check_close(apply_resize(resize_plan(*c.n, view_of(x), view_of(want)), x, want), want, 1e-6, 1e-7);
    OneNode d("Resize", 19, {x, Tensor(), Tensor(), i64({2}, {6, 6})}, {3});
    d.n->set_attr_string("mode", "cubic");
    d.n->set_attr_ints("axes", {3, 2});
    d.n->set_attr_string("keep_aspect_ratio_policy", "not_larger");
    const Tensor want2 = d.reference1();
    check_close(apply_resize(resize_plan(*d.n, view_of(x), view_of(want2)), x, want2), want2, 1e-6, 1e-7);
  }
  SUBCASE("Upsample 7 and 9, Resize 10, integer data") {
    const Tensor xi = iota(DType::int32, {1, 1, 3, 3});
    OneNode u7("Upsample", 7, {xi});
    u7.n->set_attr_floats("scales", {1, 1, 2, 1.5});
    u7.n->set_attr_string("mode", "linear");
    const Tensor w7 = u7.reference1();
    check_bits(apply_resize(resize_plan(*u7.n, view_of(xi), view_of(w7)), xi, w7), w7);
    OneNode u9("Upsample", 9, {xi, f32({4}, {1, 1, 3, 2})}, {1});
    const Tensor w9 = u9.reference1();
    check_bits(apply_resize(resize_plan(*u9.n, view_of(xi), view_of(w9)), xi, w9), w9);
    OneNode r10("Resize", 10, {x, f32({4}, {1, 1, 0.5f, 0.6f})}, {1});
    const Tensor w10 = r10.reference1();
    check_close(apply_resize(resize_plan(*r10.n, view_of(x), view_of(w10)), x, w10), w10, 1e-6, 1e-7);
  }
}

// ---- kernels on the emulation --------------------------------------------------------------------

TEST_CASE("data movement kernels: Copy transposes and slices backward, float16 and int64") {
  SUBCASE("Transpose perm (2, 0, 1) of float16 2x3x4") {
    const Tensor x = random_tensor(DType::float16, {2, 3, 4}, 41);
    OneNode c("Transpose", 13, {x});
    c.n->set_attr_ints("perm", {2, 0, 1});
    const Tensor want = c.reference1();
    StridedCopy plan = transpose_plan(*c.n, view_of(x), view_of(want));
    collapse(plan.shape, {&plan.y_strides, &plan.x_strides});
    REQUIRE(plan.shape == Shape{4, 6});
    REQUIRE(plan.x_strides == Strides{1, 4});
    REQUIRE(plan.y_strides == Strides{6, 1});
    Tensor y = like(want);
    using K = mc::dm::Copy<uint16_t, Dims<4, 6>, Dims<6, 1>, Dims<1, 4>>;
    launch<K>(mc::dm::copy_kernel<K>, {y.mutable_raw(), x.raw()});
    check_bits(y, want);
  }
  SUBCASE("Slice 4:0:-2 and ::-1 of int64") {
    const Tensor x = iota(DType::int64, {5, 3});
    OneNode c("Slice", 13, {x, i64({2}, {4, -1}), i64({2}, {0, -100}), i64({2}, {0, 1}), i64({2}, {-2, -1})},
              {1, 2, 3, 4});
    const Tensor want = c.reference1();
    const StridedCopy plan = slice_plan(*c.n, view_of(x), view_of(want));
    REQUIRE(plan.shape == Shape{2, 3});
    REQUIRE(plan.x_strides == Strides{-6, -1});
    REQUIRE(plan.x_offset == 14);
    Tensor y = like(want);
    using K = mc::dm::Copy<uint64_t, Dims<2, 3>, Dims<3, 1>, Dims<-6, -1>>;
    launch<K>(mc::dm::copy_kernel<K>, {y.mutable_raw(), x.data<int64_t>() + 14});
    check_bits(y, want);
  }
}

TEST_CASE("data movement kernels: Pad in every mode, bool and float data") {
  const Tensor x = random_tensor(DType::float32, {3, 4}, 42);
  auto pad = [&](const char* mode, const std::vector<int64_t>& pads) {
    auto c = std::make_unique<OneNode>("Pad", 19, std::vector<Tensor>{x, i64({4}, pads), f32({}, {2.5f})},
                                       std::vector<int>{1, 2});
    c->n->set_attr_string("mode", mode);
    return c;
  };
  SUBCASE("constant with a crop") {
    auto c = pad("constant", {1, -1, 0, 2});
    const Tensor want = c->reference1();
    const PadPlan p = pad_plan(*c->n, view_of(x), view_of(want));
    REQUIRE(p.lo == std::vector<int64_t>{0, 1});
    REQUIRE(p.kept == std::vector<int64_t>{3, 3});
    Tensor y = like(want);
    using K = mc::dm::Pad<uint32_t, mc::dm::PadMode::constant, Dims<4, 5>, Dims<5, 1>, Dims<4, 1>, Dims<0, 1>,
                          Dims<3, 3>, Dims<1, -1>>;
    launch<K>(mc::dm::pad_kernel<K>, {y.mutable_raw(), x.raw(), nullptr, 0x40200000u});
    check_bits(y, want);
    // The same fill read from a tensor at run time.
    Tensor y2 = like(want);
    const Tensor fill = f32({}, {2.5f});
    launch<K>(mc::dm::pad_kernel<K>, {y2.mutable_raw(), x.raw(), fill.raw(), 0u});
    check_bits(y2, want);
  }
  SUBCASE("reflect") {
    auto c = pad("reflect", {2, 3, 2, 5});
    const Tensor want = c->reference1();
    Tensor y = like(want);
    using K = mc::dm::Pad<uint32_t, mc::dm::PadMode::reflect, Dims<7, 12>, Dims<12, 1>, Dims<4, 1>, Dims<0, 0>,
                          Dims<3, 4>, Dims<2, 3>>;
    launch<K>(mc::dm::pad_kernel<K>, {y.mutable_raw(), x.raw(), nullptr, 0u});
    check_bits(y, want);
  }
  SUBCASE("edge and wrap") {
    for (const char* mode : {"edge", "wrap"}) {
      CAPTURE(mode);
      auto c = pad(mode, {4, 0, 1, 9});
      const Tensor want = c->reference1();
      Tensor y = like(want);
      if (std::string(mode) == "edge") {
        using K = mc::dm::Pad<uint32_t, mc::dm::PadMode::edge, Dims<8, 13>, Dims<13, 1>, Dims<4, 1>, Dims<0, 0>,
                              Dims<3, 4>, Dims<4, 0>>;
        launch<K>(mc::dm::pad_kernel<K>, {y.mutable_raw(), x.raw(), nullptr, 0u});
      } else {
        using K = mc::dm::Pad<uint32_t, mc::dm::PadMode::wrap, Dims<8, 13>, Dims<13, 1>, Dims<4, 1>, Dims<0, 0>,
                              Dims<3, 4>, Dims<4, 0>>;
        launch<K>(mc::dm::pad_kernel<K>, {y.mutable_raw(), x.raw(), nullptr, 0u});
      }
      check_bits(y, want);
    }
  }
  SUBCASE("bool, constant true") {
    const Tensor b = random_tensor(DType::boolean, {5}, 43);
    OneNode c("Pad", 13, {b, i64({2}, {2, 1}), Tensor::from_i64(DType::boolean, {}, {1})}, {1, 2});
    const Tensor want = c.reference1();
    const PadPlan p = pad_plan(*c.n, view_of(b), view_of(want));
    REQUIRE(bits_literal(p.fill) == "0x01");
    Tensor y = like(want);
    using K = mc::dm::Pad<uint8_t, mc::dm::PadMode::constant, Dims<8>, Dims<1>, Dims<1>, Dims<0>, Dims<5>, Dims<2>>;
    launch<K>(mc::dm::pad_kernel<K>, {y.mutable_raw(), b.raw(), nullptr, 0x01});
    check_bits(y, want);
  }
}

TEST_CASE("data movement kernels: Gather with int32 and negative int64 indices") {
  const Tensor x = random_tensor(DType::float16, {2, 5, 3}, 44);
  SUBCASE("axis 1, int64 indices 2x2 with negatives") {
    OneNode c("Gather", 13, {x, i64({2, 2}, {4, -1, 0, -5})});
    c.n->set_attr_int("axis", 1);
    const Tensor want = c.reference1();  // 2 x 2x2 x 3
    Tensor y = like(want);
    using K = mc::dm::Gather<uint16_t, int64_t, Dims<2>, Dims<15>, 5, 3, Dims<3>, Dims<1>, Dims<4>, Dims<1>, Dims<24>,
                             Dims<1>>;
    const Tensor& idx = c.inputs[1];
    launch<K>(mc::dm::gather_kernel<K>, {y.mutable_raw(), x.raw(), idx.raw()});
    check_bits(y, want);
  }
  SUBCASE("axis 0, a scalar int32 index") {
    const Tensor idx = Tensor::from_i64(DType::int32, {}, {1});
    OneNode c("Gather", 13, {x, idx});
    const Tensor want = c.reference1();  // 5x3
    Tensor y = like(want);
    using K =
        mc::dm::Gather<uint16_t, int32_t, Dims<>, Dims<>, 2, 15, Dims<15>, Dims<1>, Dims<>, Dims<>, Dims<15>, Dims<1>>;
    launch<K>(mc::dm::gather_kernel<K>, {y.mutable_raw(), x.raw(), idx.raw()});
    check_bits(y, want);
  }
}

namespace {
std::vector<mc::dm::Tap<float>> g_taps_f;
std::vector<mc::dm::Tap<double>> g_taps_d;
struct TableF {
  static const mc::dm::Tap<float>* taps() { return g_taps_f.data(); }
};
struct TableD {
  static const mc::dm::Tap<double>* taps() { return g_taps_d.data(); }
};
}  // namespace

TEST_CASE("data movement kernels: Resize through tap tables") {
  SUBCASE("cubic half_pixel, float32, 1x2x4x5 -> 1x2x8x3") {
    const Tensor x = random_tensor(DType::float32, {1, 2, 4, 5}, 45);
    OneNode c("Resize", 13, {x, Tensor(), f32({4}, {1, 1, 2, 0.6f})}, {2});
    c.n->set_attr_string("mode", "cubic");
    const Tensor want = c.reference1();
    const ResizePlan p = resize_plan(*c.n, view_of(x), view_of(want));
    REQUIRE(p.taps == std::vector<int64_t>{0, 0, 4, 4});
    REQUIRE(p.start == std::vector<int64_t>{0, 0, 0, 32});
    g_taps_f.clear();
    for (const auto& t : p.table) g_taps_f.push_back({t.first, static_cast<float>(t.second)});
    Tensor y = like(want);
    using K = mc::dm::Resize<float, float, TableF, Dims<1, 2, 8, 3>, Dims<48, 24, 3, 1>, Dims<40, 20, 5, 1>,
                             Dims<0, 0, 4, 4>, Dims<0, 0, 0, 32>>;
    launch<K>(mc::dm::resize_kernel<K>, {y.mutable_raw(), x.raw(), 0.0f});
    check_close(y, want);
  }
  SUBCASE("linear tf_crop_and_resize on float16, extrapolating") {
    const Tensor x = random_tensor(DType::float16, {3, 4}, 46);
    OneNode c("Resize", 13, {x, f32({4}, {-0.2f, 0.1f, 0.9f, 1.3f}), Tensor(), i64({2}, {4, 5})}, {1, 3});
    c.n->set_attr_string("mode", "linear");
    c.n->set_attr_string("coordinate_transformation_mode", "tf_crop_and_resize");
    c.n->set_attr_float("extrapolation_value", 7.0);
    const Tensor want = c.reference1();
    const ResizePlan p = resize_plan(*c.n, view_of(x), view_of(want));
    REQUIRE(p.taps == std::vector<int64_t>{2, 2});
    REQUIRE(p.start == std::vector<int64_t>{0, 8});
    g_taps_f.clear();
    for (const auto& t : p.table) g_taps_f.push_back({t.first, static_cast<float>(t.second)});
    Tensor y = like(want);
    using K = mc::dm::Resize<__half, float, TableF, Dims<4, 5>, Dims<5, 1>, Dims<4, 1>, Dims<2, 2>, Dims<0, 8>>;
    launch<K>(mc::dm::resize_kernel<K>, {y.mutable_raw(), x.raw(), 7.0f});
    check_close(y, want, 1e-3, 1e-3);
  }
  SUBCASE("nearest on int64 accumulates in double") {
    const Tensor x = i64({2, 3}, {1, 2, 3, (1ll << 40) + 1, 5, -6});
    OneNode c("Resize", 13, {x, Tensor(), Tensor(), i64({2}, {2, 7})}, {3});
    c.n->set_attr_string("nearest_mode", "ceil");
    const Tensor want = c.reference1();
    const ResizePlan p = resize_plan(*c.n, view_of(x), view_of(want));
    REQUIRE(p.taps == std::vector<int64_t>{0, 1});
    g_taps_d.clear();
    for (const auto& t : p.table) g_taps_d.push_back({t.first, t.second});
    Tensor y = like(want);
    using K = mc::dm::Resize<int64_t, double, TableD, Dims<2, 7>, Dims<7, 1>, Dims<3, 1>, Dims<0, 1>, Dims<0, 0>>;
    launch<K>(mc::dm::resize_kernel<K>, {y.mutable_raw(), x.raw(), 0.0});
    check_bits(y, want);
  }
}

TEST_CASE("data movement kernels: TiledCopy transposes the inner dims through shared memory") {
  SUBCASE("float16 2x3x40x50, perm (0, 1, 3, 2): tiles cut at the edges") {
    const Tensor x = random_tensor(DType::float16, {2, 3, 40, 50}, 47);
    OneNode c("Transpose", 13, {x});
    c.n->set_attr_ints("perm", {0, 1, 3, 2});
    const Tensor want = c.reference1();  // 2x3x50x40
    Tensor y = like(want);
    // A batch of 6 (stride 2000 in both); x is contiguous along its last dim, y's dim 2: P is y's dim
    // 2 (length 50), Q y's dim 3 (length 40).
    using K = mc::dm::TiledCopy<uint16_t, Dims<6>, Dims<2000>, Dims<2000>, 50, 40, 40, 1, 1, 50>;
    launch<K>(mc::dm::tiled_copy_kernel<K>, {y.mutable_raw(), x.raw()});
    check_bits(y, want);
  }
  SUBCASE("int64 NCHW -> NHWC 1x33x9x10") {
    const Tensor x = iota(DType::int64, {1, 33, 9, 10});
    OneNode c("Transpose", 13, {x});
    c.n->set_attr_ints("perm", {0, 2, 3, 1});
    const Tensor want = c.reference1();  // 1x9x10x33
    Tensor y = like(want);
    // y [90, 33] (HW, C): P = HW (x stride 1, y stride 33), Q = C (x stride 90, y stride 1).
    using K = mc::dm::TiledCopy<uint64_t, Dims<>, Dims<>, Dims<>, 90, 33, 33, 1, 1, 90>;
    launch<K>(mc::dm::tiled_copy_kernel<K>, {y.mutable_raw(), x.raw()});
    check_bits(y, want);
  }
}

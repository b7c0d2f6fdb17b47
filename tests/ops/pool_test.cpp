// MaxPool (with Indices), AveragePool, GlobalAveragePool, GlobalMaxPool:
// output sizes (ceil_mode, auto_pad), values by hand, opset forms, errors.
#include <doctest/doctest.h>

#include <functional>
#include <memory>

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

void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

std::vector<Tensor> pool(const std::string& op, int opset, const Tensor& x, const std::function<void(Node&)>& set,
                         int outs = 1) {
  OneNode n(op, opset, {x}, outs);
  if (set) set(*n.n);
  return n.run();
}

}  // namespace

TEST_CASE("MaxPool: values, Indices row- and column-major") {
  const Tensor x = iota({1, 2, 4, 4});
  auto k2s2 = [](Node& n) {
    n.set_attr_ints("kernel_shape", {2, 2});
    n.set_attr_ints("strides", {2, 2});
  };
  std::vector<Tensor> out = pool("MaxPool", 12, x, k2s2, 2);
  CHECK(out[0].shape() == Shape{1, 2, 2, 2});
  CHECK(values(out[0]) == std::vector<double>{5, 7, 13, 15, 21, 23, 29, 31});
  CHECK(out[1].dtype() == DType::int64);
  CHECK(out[1].to_i64() == std::vector<int64_t>{5, 7, 13, 15, 21, 23, 29, 31});
  out = pool("MaxPool", 8, x, [&](Node& n) {
    k2s2(n);
    n.set_attr_int("storage_order", 1);
  }, 2);
  CHECK(out[1].to_i64() == std::vector<int64_t>{5, 13, 7, 15, 21, 29, 23, 31});
  // The first maximum wins a tie.
  out = pool("MaxPool", 12, f32({1, 1, 1, 4}, {2, 2, 1, 3}), [](Node& n) { n.set_attr_ints("kernel_shape", {1, 2}); }, 2);
  CHECK(out[1].to_i64() == std::vector<int64_t>{0, 1, 3});
  // uint8 data stays uint8 (opset 12).
  out = pool("MaxPool", 12, Tensor::from_i64(DType::uint8, {1, 1, 3}, {7, 200, 3}),
             [](Node& n) { n.set_attr_ints("kernel_shape", {2}); });
  CHECK(out[0].dtype() == DType::uint8);
  CHECK(out[0].to_i64() == std::vector<int64_t>{200, 200});
}

TEST_CASE("MaxPool output size: ceil_mode, its last-window rule, dilations, auto_pad") {
  const Tensor x = f32({1, 1, 5}, {1, 5, 2, 4, 3});
  auto k2s2 = [](Node& n) {
    n.set_attr_ints("kernel_shape", {2});
    n.set_attr_ints("strides", {2});
  };
  CHECK(values(pool("MaxPool", 10, x, k2s2)[0]) == std::vector<double>{5, 4});
  CHECK(values(pool("MaxPool", 10, x, [&](Node& n) {
          k2s2(n);
          n.set_attr_int("ceil_mode", 1);
        })[0]) == std::vector<double>{5, 4, 3});
  // pads 1: ceil would give 4 windows, but the 4th would start in the end padding.
  const Tensor y = pool("MaxPool", 10, x, [&](Node& n) {
    k2s2(n);
    n.set_attr_int("ceil_mode", 1);
    n.set_attr_ints("pads", {1, 1});
  })[0];
  CHECK(y.shape() == Shape{1, 1, 3});
  CHECK(values(y) == std::vector<double>{1, 5, 4});
  CHECK(values(pool("MaxPool", 10, f32({1, 1, 6}, {1, 2, 3, 4, 5, 6}), [](Node& n) {
          n.set_attr_ints("kernel_shape", {2});
          n.set_attr_ints("dilations", {2});
        })[0]) == std::vector<double>{3, 4, 5, 6});
  const Tensor row = f32({1, 1, 1, 4}, {1, 3, 2, 4});
  auto same = [&](const char* mode) {
    return values(pool("MaxPool", 11, row, [&](Node& n) {
      n.set_attr_ints("kernel_shape", {1, 2});
      n.set_attr_string("auto_pad", mode);
    })[0]);
  };
  CHECK(same("SAME_UPPER") == std::vector<double>{3, 3, 4, 4});
  CHECK(same("SAME_LOWER") == std::vector<double>{1, 3, 3, 4});
  CHECK(same("VALID") == std::vector<double>{3, 3, 4});
  // 3-D.
  const Tensor y3 = pool("MaxPool", 11, iota({1, 1, 2, 2, 2}), [](Node& n) { n.set_attr_ints("kernel_shape", {2, 2, 2}); })[0];
  CHECK(y3.shape() == Shape{1, 1, 1, 1, 1});
  CHECK(values(y3) == std::vector<double>{7});
}

TEST_CASE("AveragePool: count_include_pad, ceil_mode, auto_pad, dilations") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  auto k2p1 = [](Node& n) {
    n.set_attr_ints("kernel_shape", {2, 2});
    n.set_attr_ints("pads", {1, 1, 1, 1});
  };
  Tensor y = pool("AveragePool", 11, x, k2p1)[0];
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  check_close(values(y), {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});
  y = pool("AveragePool", 7, x, [&](Node& n) {
    k2p1(n);
    n.set_attr_int("count_include_pad", 1);
  })[0];
  check_close(values(y), {0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1});
  check_close(values(pool("AveragePool", 1, x, k2p1)[0]), {1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4});

  // ceil_mode with count_include_pad: the part of the last window past the end
  // (padding) is not counted.
  y = pool("AveragePool", 10, f32({1, 1, 5}, {1, 2, 3, 4, 5}), [](Node& n) {
    n.set_attr_ints("kernel_shape", {2});
    n.set_attr_ints("strides", {2});
    n.set_attr_int("ceil_mode", 1);
    n.set_attr_int("count_include_pad", 1);
  })[0];
  check_close(values(y), {1.5, 3.5, 5});

  const Tensor row = f32({1, 1, 1, 4}, {1, 2, 3, 4});
  auto same = [&](const char* mode, int include) {
    return values(pool("AveragePool", 11, row, [&](Node& n) {
      n.set_attr_ints("kernel_shape", {1, 2});
      n.set_attr_string("auto_pad", mode);
      n.set_attr_int("count_include_pad", include);
    })[0]);
  };
  check_close(same("SAME_UPPER", 0), {1.5, 2.5, 3.5, 4});
  check_close(same("SAME_LOWER", 0), {1, 1.5, 2.5, 3.5});
  check_close(same("SAME_UPPER", 1), {1.5, 2.5, 3.5, 2});

  auto dil = [](Node& n) {
    n.set_attr_ints("kernel_shape", {2});
    n.set_attr_ints("dilations", {2});
  };
  check_close(values(pool("AveragePool", 19, f32({1, 1, 6}, {1, 2, 3, 4, 5, 6}), dil)[0]), {2, 3, 4, 5});
  CHECK_THROWS_AS(pool("AveragePool", 18, f32({1, 1, 6}, {1, 2, 3, 4, 5, 6}), dil), Error);
}

TEST_CASE("GlobalAveragePool and GlobalMaxPool") {
  const Tensor x = f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = pool("GlobalAveragePool", 1, x, nullptr)[0];
  CHECK(y.shape() == Shape{1, 2, 1, 1});
  check_close(values(y), {2.5, 6.5});
  y = pool("GlobalMaxPool", 1, x, nullptr)[0];
  CHECK(values(y) == std::vector<double>{4, 8});
  y = pool("GlobalAveragePool", 13, f32({2, 1, 3}, {1, 2, 3, -3, 0, 0}), nullptr)[0];
  CHECK(y.shape() == Shape{2, 1, 1});
  check_close(values(y), {2, -1});
  CHECK_THROWS_AS(pool("GlobalMaxPool", 1, f32({3}, {1, 2, 3}), nullptr), Error);
  OneNode f("GlobalAveragePool", 1, {x});
  CHECK(f.flops() == 8);
}

TEST_CASE("Pool FLOPs, facts and errors") {
  OneNode f("MaxPool", 12, {iota({1, 2, 4, 4})});
  f.n->set_attr_ints("kernel_shape", {2, 2});
  f.n->set_attr_ints("strides", {2, 2});
  CHECK(f.flops() == 2 * 4 * 4);
  const ops::OpDef& d = ops::lookup(*f.n);
  CHECK(d.layout == ops::Layout::channels);
  CHECK(d.precision == ops::Precision::fp16);
  CHECK(d.family == "pool");

  const Tensor x = iota({1, 1, 4, 4});
  auto err = [&](const std::string& op, int opset, const std::function<void(Node&)>& set, int outs = 1,
                 const Tensor* input = nullptr) {
    CHECK_THROWS_AS(pool(op, opset, input ? *input : x, set, outs), Error);
  };
  auto k2 = [](Node& n) { n.set_attr_ints("kernel_shape", {2, 2}); };
  err("MaxPool", 12, nullptr);                                                         // kernel_shape missing
  err("MaxPool", 12, [](Node& n) { n.set_attr_ints("kernel_shape", {2}); });           // wrong length
  err("MaxPool", 12, [](Node& n) { n.set_attr_ints("kernel_shape", {0, 2}); });
  err("MaxPool", 12, [&](Node& n) { k2(n); n.set_attr_ints("pads", {1, 1}); });
  err("MaxPool", 12, [&](Node& n) { k2(n); n.set_attr_ints("pads", {1, 1, -1, 1}); });
  err("MaxPool", 12, [&](Node& n) { k2(n); n.set_attr_int("ceil_mode", 2); });
  err("MaxPool", 12, [&](Node& n) { k2(n); n.set_attr_string("auto_pad", "SAME"); });
  err("MaxPool", 12, [&](Node& n) { k2(n); n.set_attr_ints("strides", {1, 0}); });
  err("MaxPool", 12, [](Node& n) { n.set_attr_ints("kernel_shape", {5, 5}); });        // window > input
  err("MaxPool", 7, [&](Node& n) { k2(n); n.set_attr_int("storage_order", 0); });      // not in opset 7
  err("MaxPool", 7, k2, 2);                                                             // no Indices before opset 8
  err("MaxPool", 9, [&](Node& n) { k2(n); n.set_attr_int("ceil_mode", 1); });          // ceil_mode from opset 10
  const Tensor rank2 = iota({4, 4});
  err("MaxPool", 12, [](Node& n) { n.set_attr_ints("kernel_shape", {2}); }, 1, &rank2);
  const Tensor rank6 = iota({1, 1, 2, 2, 2, 2});
  err("MaxPool", 12, [](Node& n) { n.set_attr_ints("kernel_shape", {1, 1, 1, 1}); }, 1, &rank6);
  const Tensor ints = Tensor::from_i64(DType::int32, {1, 1, 2, 2}, {1, 2, 3, 4});
  err("AveragePool", 11, k2, 1, &ints);
  err("AveragePool", 11, [&](Node& n) { k2(n); n.set_attr_int("count_include_pad", 3); });
  err("AveragePool", 11, [&](Node& n) { k2(n); n.set_attr_ints("dilations", {1, 1}); });  // dilations from 19
}

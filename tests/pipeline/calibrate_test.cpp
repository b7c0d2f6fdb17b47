// pipeline/calibrate.h at scale: samples read one at a time from a folder (the same table as the
// same samples held in memory), --calibrate-max's first N, progress after every sample, the same
// table for any thread count, and the float32 path's table against the float64 path's: the
// differences README and reference/kernels.h document (max |x| within float32 rounding, a
// histogram threshold at most one bin away).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "io/tensor_io.h"
#include "ops/shape_inference.h"
#include "passes/calibration.h"
#include "pipeline/calibrate.h"
#include "reference/parallel.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;

namespace {

std::vector<double> randoms(int64_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return v;
}

/// x [1, 8, 12, 12] -> Conv 3x3 (24) -> Relu -> Conv 3x3 stride 2 (16) -> Relu -> GAP -> Flatten -> Gemm (10).
struct Net {
  Graph g;
  Net() {
    g.set_opset(17);
    Value* x = g.add_value("x");
    x->set_type(DType::float32, {1, 8, 12, 12});
    g.add_input(x);
    auto w = [&](const char* name, Shape s, uint64_t seed) {
      return g.add_constant(name, Tensor::from_f64(DType::float32, s, randoms(num_elements(s), seed, -0.3, 0.3)), true);
    };
    Value* c1 = g.add_value("c1");
    g.add_node("Conv", "conv1", {x, w("w1", {24, 8, 3, 3}, 1), w("b1", {24}, 2)}, {c1})->set_attr_ints("pads", {1, 1, 1, 1});
    Value* r1 = g.add_value("r1");
    g.add_node("Relu", "relu1", {c1}, {r1});
    Value* c2 = g.add_value("c2");
    Node* conv2 = g.add_node("Conv", "conv2", {r1, w("w2", {16, 24, 3, 3}, 3)}, {c2});
    conv2->set_attr_ints("pads", {1, 1, 1, 1});
    conv2->set_attr_ints("strides", {2, 2});
    Value* r2 = g.add_value("r2");
    g.add_node("Relu", "relu2", {c2}, {r2});
    Value* p = g.add_value("p");
    g.add_node("GlobalAveragePool", "gap", {r2}, {p});
    Value* f = g.add_value("f");
    g.add_node("Flatten", "flatten", {p}, {f});
    Value* y = g.add_value("y");
    g.add_node("Gemm", "fc", {f, w("wf", {10, 16}, 4), w("bf", {10}, 5)}, {y})->set_attr_int("transB", 1);
    g.add_output(y);
    ops::infer_graph(g);
  }
};

Tensor sample(uint64_t seed) { return Tensor::from_f64(DType::float32, {1, 8, 12, 12}, randoms(8 * 144, seed, -2, 2)); }

void check_same(const CalibrationTable& a, const CalibrationTable& b) {
  REQUIRE(a.order == b.order);
  for (const std::string& name : a.order) {
    INFO(name);
    CHECK(a.tensors.at(name).threshold == b.tensors.at(name).threshold);
    CHECK(a.tensors.at(name).max == b.tensors.at(name).max);
  }
}

struct Threads {
  explicit Threads(int n) { reference::set_threads(n); }
  ~Threads() { reference::set_threads(0); }
};

}  // namespace

TEST_CASE("calibrate: a folder read one sample at a time gives the table of the samples in memory") {
  Net net;
  test::TempDir dir;
  std::filesystem::create_directories(dir / "samples");
  CalibrationData memory;
  memory.source = "memory";
  for (int i = 0; i < 5; ++i) {
    const Tensor t = sample(10 + static_cast<uint64_t>(i));
    write_npy(dir / ("samples/s" + std::to_string(i) + ".npy"), t);
    memory.samples.push_back({{"x", t}});
  }
  const CalibrationData folder = load_calibration_data(net.g, dir / "samples");
  CHECK(folder.size() == 5);
  CHECK(folder.samples.empty());  // nothing read yet
  PassOptions o;
  for (CalibrationMethod m : {CalibrationMethod::entropy, CalibrationMethod::max}) {
    std::vector<std::pair<int, int64_t>> seen;
    const CalibrationTable a = calibrate(net.g, o, folder, m, reference::Accumulation::f64,
                                         [&](int pass, int passes, int64_t done, int64_t samples) {
                                           CHECK(samples == 5);
                                           CHECK(passes == (m == CalibrationMethod::max ? 1 : 2));
                                           seen.emplace_back(pass, done);
                                         });
    const CalibrationTable b = calibrate(net.g, o, memory, m);
    check_same(a, b);
    CHECK(a.samples == 5);
    // Progress after every sample of every pass, in order.
    const int passes = m == CalibrationMethod::max ? 1 : 2;
    REQUIRE(seen.size() == static_cast<std::size_t>(5 * passes));
    for (int p = 0; p < passes; ++p) {
      for (int i = 0; i < 5; ++i) CHECK(seen[static_cast<std::size_t>(p * 5 + i)] == std::make_pair(p + 1, int64_t{i + 1}));
    }
  }

  // --calibrate-max 2: the first two files, as a folder of only those two.
  const CalibrationData two = load_calibration_data(net.g, dir / "samples", 2);
  CHECK(two.size() == 2);
  CHECK(two.source.find("2 samples of 5, --calibrate-max") != std::string::npos);
  CalibrationData first_two;
  first_two.samples = {memory.samples[0], memory.samples[1]};
  check_same(calibrate(net.g, o, two, CalibrationMethod::entropy), calibrate(net.g, o, first_two, CalibrationMethod::entropy));
  // random:N with a maximum: the first seeds.
  CHECK(load_calibration_data(net.g, "random:10", 3).size() == 3);
  check_same(calibrate(net.g, o, load_calibration_data(net.g, "random:10", 3), CalibrationMethod::percentile),
             calibrate(net.g, o, load_calibration_data(net.g, "random:3"), CalibrationMethod::percentile));

  // A file of the wrong shape is named when its turn comes.
  write_npy(dir / "samples/s9.npy", Tensor::from_f32({1, 3}, {1, 2, 3}));
  const CalibrationData bad = load_calibration_data(net.g, dir / "samples");
  CHECK_THROWS_WITH_AS(calibrate(net.g, o, bad, CalibrationMethod::max), doctest::Contains("s9.npy"), Error);
}

TEST_CASE("calibrate: the same table for any thread count; the float32 path within the documented differences") {
  Net net;
  const CalibrationData data = load_calibration_data(net.g, "random:6");
  PassOptions o;
  for (CalibrationMethod m : {CalibrationMethod::entropy, CalibrationMethod::percentile, CalibrationMethod::max}) {
    INFO(calibration_method_name(m));
    CalibrationTable one, four;
    {
      Threads t(1);
      one = calibrate(net.g, o, data, m);
    }
    {
      Threads t(4);
      four = calibrate(net.g, o, data, m);
    }
    check_same(one, four);
    CHECK(one.to_json() == four.to_json());
    const CalibrationTable f32 = calibrate(net.g, o, data, m, reference::Accumulation::f32);
    REQUIRE(f32.order == one.order);
    for (const std::string& name : one.order) {
      INFO(name);
      const TensorCalibration& a = one.tensors.at(name);
      const TensorCalibration& b = f32.tensors.at(name);
      // max |x|: float32 accumulation moves a value by its rounding, a few units in the 7th digit.
      CHECK(std::fabs(a.max - b.max) <= 1e-5 * a.max);
      // The threshold: the same bin (so within max's difference), or the next one over.
      CHECK(std::fabs(a.threshold - b.threshold) <= 1e-5 * a.max + 1.01 * a.max / kCalibrationBins);
    }
  }
}

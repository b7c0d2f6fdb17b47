// --int8 and its calibration flags on the compile command, verify and run-reference: usage errors
// (exit 2), missing or bad calibration (exit 1, naming the flag or the file, nothing written), and
// what reaches the folder (the cache beside the output, the report's INT8 section).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "io/tensor_io.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

TEST_CASE("--int8: usage errors, a missing or bad calibration, nothing written") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(conv_relu_model(16, 8)));
  Result r = run_modelc(dir, "m.onnx --calibrate random:2");  // needs --int8
  CHECK(r.code == 2);
  CHECK(has(r.err, "--int8"));
  r = run_modelc(dir, "m.onnx --int8 --calibration kl");
  CHECK(r.code == 2);
  r = run_modelc(dir, "m.onnx --int8 --calibrate random:2 --calibration-cache c.json");
  CHECK(r.code == 2);
  r = run_modelc(dir, "m.onnx --int8");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--int8 needs calibration data or a calibration cache"));
  CHECK(has(r.err, "--calibrate random:N"));
  r = run_modelc(dir, "m.onnx --int8 --calibrate random:zero");
  CHECK(r.code == 1);
  CHECK(has(r.err, "N must be a whole number"));
  r = run_modelc(dir, "m.onnx --int8 --calibrate nowhere");
  CHECK(r.code == 1);
  CHECK(has(r.err, "nowhere"));
  r = run_modelc(dir, "m.onnx --int8 --calibration-cache missing.json");
  CHECK(r.code == 1);
  CHECK(has(r.err, "missing.json"));
  write_bytes(dir / "bad.json", "{\"tensors\": []}");
  r = run_modelc(dir, "m.onnx --int8 --calibration-cache bad.json");
  CHECK(r.code == 1);
  CHECK(has(r.err, "bad.json"));
  CHECK(has(r.err, "not a modelc calibration cache"));
  // A folder of samples of the wrong shape: the file is named.
  std::filesystem::create_directories(dir / "samples");
  write_npy(dir / "samples/a.npy", Tensor::from_f32({1, 3}, {1, 2, 3}));
  r = run_modelc(dir, "m.onnx --int8 --calibrate samples");
  CHECK(r.code == 1);
  CHECK(has(r.err, "a.npy"));
  CHECK(has(r.err, "float32[1x16x8x8]"));
  r = run_modelc(dir, "run-reference m.onnx --layers");  // needs --fp16 or --int8
  CHECK(r.code == 2);
  r = run_modelc(dir, "m.onnx --keep-fp32 conv");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--int8"));
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
}

TEST_CASE("--int8: the cache beside the output, the report's INT8 section, run-reference --int8 --layers") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(conv_relu_model(16, 8)));
  std::filesystem::create_directories(dir / "samples");
  for (int i = 0; i < 3; ++i) {
    std::vector<float> v(16 * 64);
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(((j * (i + 3)) % 17) / 17.0 - 0.3);
    write_npy(dir / ("samples/" + std::to_string(i) + ".npy"), Tensor::from_f32({1, 16, 8, 8}, v));
  }
  Result r = run_modelc(dir, "m.onnx --int8 --calibrate samples --calibration percentile -o out");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "calibration cache:"));
  CHECK_FALSE(has(r.err, "calibration: pass"));  // progress only on a terminal
  // --calibrate-max: the first samples only, said so in the cache's source; a usage error without
  // --calibrate or below 1.
  r = run_modelc(dir, "m.onnx --int8 --calibrate samples --calibrate-max 2 -o two");
  REQUIRE(r.code == 0);
  CHECK(has(read_bytes(dir / "two/m_calibration.json"), "\"samples\": 2"));
  CHECK(has(read_bytes(dir / "two/m_calibration.json"), "2 samples of 3, --calibrate-max"));
  CHECK(run_modelc(dir, "m.onnx --int8 --calibration-cache c.json --calibrate-max 2").code == 2);
  CHECK(run_modelc(dir, "m.onnx --int8 --calibrate samples --calibrate-max 0").code == 2);
  CHECK(run_modelc(dir, "run-reference m.onnx --int8 --calibrate samples --calibrate-max 1 -o one").code == 0);
  const std::string cache = read_bytes(dir / "out/m_calibration.json");
  CHECK(has(cache, "\"method\": \"percentile\""));
  CHECK(has(cache, "\"samples\": 3"));
  const std::string md = read_bytes(dir / "out/report.md");
  CHECK(has(md, "## INT8 (--int8)"));
  CHECK(has(md, "| conv | Conv |"));
  CHECK(has(md, "INT8"));
  const std::string json = read_bytes(dir / "out/report.json");
  CHECK(has(json, "\"family\": \"conv_int8\""));
  CHECK(has(json, "\"precision\": \"INT8\""));
  // The same cache: the same folder, byte for byte (the cache file included).
  r = run_modelc(dir, "m.onnx --int8 --calibration-cache out/m_calibration.json -o again");
  REQUIRE(r.code == 0);
  for (const char* f : {"m.cu", "report.json", "report.md", "m_calibration.json", "m_weights.h"}) {
    CHECK_MESSAGE(read_bytes(dir / (std::string("out/") + f)) == read_bytes(dir / (std::string("again/") + f)), f);
  }
  r = run_modelc(dir, "run-reference m.onnx --int8 --calibration-cache out/m_calibration.json --layers -o ref");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "layers (INT8 simulation against FP32"));
  CHECK(has(r.out, "QConv conv -> y"));
  CHECK(has(r.out, "int8 simulation: 1 of 1 convolutions / matrix products in INT8"));
}

// --bf16 on the compile command, run-reference and verify (usage rules, the code and the report's
// precision section), and a BF16 model through the CLI: bfloat16 inputs read from float32 .npy
// files (rounded to nearest even) or bfloat16 .pb files, bfloat16 outputs written as float32 .npy.
#include <doctest/doctest.h>

#include <filesystem>

#include "io/tensor_io.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

namespace {

// x[2,3] -> Relu 'relu' -> Sigmoid 'sig' -> y (float32)
onnx::ModelProto two_node_model() {
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"2", "3"});
  add_output(m, "y", {"2", "3"});
  add_node(m, "Relu", {"x"}, {"r"}, "relu");
  add_node(m, "Sigmoid", {"r"}, {"y"}, "sig");
  return m;
}

// x[4] bfloat16 -> Relu -> y[4] bfloat16: a BF16 model.
onnx::ModelProto bf16_model() {
  onnx::ModelProto m = empty_model(14);
  add_input(m, "x", {"4"}, onnx::TensorProto::BFLOAT16);
  add_output(m, "y", {"4"}, onnx::TensorProto::BFLOAT16);
  add_node(m, "Relu", {"x"}, {"y"}, "relu");
  return m;
}

}  // namespace

TEST_CASE("--bf16: usage rules on the compile command, run-reference and verify") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(two_node_model()));
  for (const char* args : {"m.onnx --fp16 --bf16", "m.onnx --bf16 --winograd always", "m.onnx --bf16 --io-fp16",
                           "m.onnx --bf16 --fp16-accumulate", "run-reference m.onnx --fp16 --bf16",
                           "verify m.onnx --emulate --bf16 --fp16", "run-reference m.onnx --keep-fp32 sig -o r"}) {
    CAPTURE(args);
    const Result r = run_modelc(dir, args);
    CHECK(r.code == 2);
  }
  Result r = run_modelc(dir, "m.onnx --keep-fp32 sig");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--keep-fp32: needs --fp16, --bf16 or --int8"));
  r = run_modelc(dir, "--help");
  CHECK(has(r.out, "--bf16"));
  r = run_modelc(dir, "run-reference --help");
  CHECK(has(r.out, "--bf16"));
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
}

TEST_CASE("--bf16 reaches the code and the report; --keep-fp32 pins a node; run-reference --bf16 simulates it") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(two_node_model()));
  Result r = run_modelc(dir, "m.onnx --bf16 --keep-fp32 sig -o bf16");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string md = read_bytes(dir / "bf16/report.md");
  CHECK(has(md, "## Precision (--bf16)"));
  CHECK(has(md, "1 nodes store BF16"));
  CHECK(has(md, "casts at BF16/FP32 boundaries"));
  CHECK(has(md, "| sig | Sigmoid | pinned by --keep-fp32 |"));
  const std::string js = read_bytes(dir / "bf16/report.json");
  CHECK(has(js, "\"bf16\": true"));
  CHECK(has(js, "\"type\": \"bfloat16\""));
  CHECK(has(read_bytes(dir / "bf16/m.cu"), "mc::bf16"));
  CHECK_FALSE(has(read_bytes(dir / "bf16/m.cu"), "__half"));

  write_npy(dir / "x.npy", Tensor::from_f32({2, 3}, {-1.0f, 0.3f, 2.5f, 0.1f, -0.2f, 7.0f}));
  r = run_modelc(dir, "run-reference m.onnx --bf16 --layers --input x=x.npy -o ref");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "bf16 simulation: 2 nodes in BF16"));
  CHECK(has(r.out, "layers (BF16 simulation against FP32"));
  const Tensor y = read_npy(dir / "ref/y.npy");
  CHECK(y.dtype() == DType::float32);  // the graph output stays FP32
}

TEST_CASE("a BF16 model: bfloat16 inputs from float32 .npy (rounded) or .pb, outputs written as float32 .npy") {
  TempDir dir;
  write_bytes(dir / "b.onnx", serialize(bf16_model()));
  // 1 + 2^-8 is a tie: to even, 1; 1 + 3 x 2^-8 rounds up to 1 + 2^-6.
  write_npy(dir / "x.npy", Tensor::from_f32({4}, {1.00390625f, 1.01171875f, -3.0f, 0.5f}));
  Result r = run_modelc(dir, "run-reference b.onnx --input x=x.npy -o ref");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "bfloat16[4]  -> "));
  CHECK(has(r.out, "(as float32)"));
  const Tensor y = read_npy(dir / "ref/y.npy");
  CHECK(y.dtype() == DType::float32);
  CHECK(y.to_f64() == std::vector<double>{1.0, 1.015625, 0.0, 0.5});

  // The same values as a bfloat16 .pb.
  onnx::TensorProto pb;
  pb.set_data_type(onnx::TensorProto::BFLOAT16);
  pb.add_dims(4);
  for (int v : {0x3f80, 0x3f82, 0xc040, 0x3f00}) pb.add_int32_data(v);
  write_bytes(dir / "x.pb", pb.SerializeAsString());
  r = run_modelc(dir, "run-reference b.onnx --input x=x.pb -o ref_pb");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(read_npy(dir / "ref_pb/y.npy").to_f64() == y.to_f64());

  // A float16 file is not a bfloat16 input.
  write_npy(dir / "h.npy", Tensor::from_f32({4}, {1, 2, 3, 4}).cast(DType::float16));
  r = run_modelc(dir, "run-reference b.onnx --input x=h.npy -o bad");
  CHECK(r.code == 1);
  CHECK(has(r.err, "expects bfloat16[4]"));
  CHECK_FALSE(std::filesystem::exists(dir / "bad"));

  // It compiles as it is: bfloat16 kernels, no precision pass.
  r = run_modelc(dir, "b.onnx -o out_b");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(read_bytes(dir / "out_b/b.cu"), "mc::bf16"));
  CHECK_FALSE(has(read_bytes(dir / "out_b/report.md"), "## Precision"));
}

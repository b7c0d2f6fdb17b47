// `--bind NAME=FILE` on every command that loads a model (run-reference, inspect, the compile
// command, verify): a graph input fixed to a file's data becomes a compile-time constant, exactly
// what LoadOptions::input_values does for the conformance runners; its errors name the input and
// the file, exit 1 (2 for a malformed argument).
#include <doctest/doctest.h>

#include <filesystem>

#include "io/tensor_io.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

namespace {

// y = Reshape(x, shape): x float32[2x3], shape int64[2] a graph input (as ONNX's node tests feed it).
onnx::ModelProto reshape_model(const std::vector<std::string>& shape_dims = {"2"},
                               const std::vector<std::string>& y_dims = {"a", "b"}) {
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"2", "3"});
  add_input(m, "shape", shape_dims, onnx::TensorProto::INT64);
  add_output(m, "y", y_dims);
  add_node(m, "Reshape", {"x", "shape"}, {"y"}, "reshape");
  *m.mutable_graph()->add_initializer() = float_tensor("w", {1}, {2});
  add_node(m, "Identity", {"w"}, {"w_copy"});
  add_output(m, "w_copy", {"1"});
  return m;
}

void write_case(const TempDir& dir) {
  write_bytes(dir / "m.onnx", serialize(reshape_model()));
  write_npy(dir / "x.npy", Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  write_npy(dir / "shape.npy", Tensor::from_i64(DType::int64, {2}, {3, 2}));
}

}  // namespace

TEST_CASE("cli --bind: the error without it names the option; with it the input is a constant") {
  TempDir dir;
  write_case(dir);
  Result r = run_modelc(dir, "run-reference m.onnx --input x=x.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "'shape'"));
  CHECK(has(r.err, "hint: 'shape' is a graph input: bind it to its value with --bind shape=FILE"));

  r = run_modelc(dir, "run-reference m.onnx --input x=x.npy --bind shape=shape.npy -o out");
  REQUIRE(r.code == 0);
  const Tensor y = read_npy(dir / "out/y.npy");
  CHECK(y.shape() == Shape{3, 2});
  CHECK(y.to_f64() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(has(r.out, "x  float32[2x3]"));
  CHECK_FALSE(has(r.out, "shape  int64"));  // no longer an input

  // The same through an ONNX TensorProto file.
  onnx::TensorProto pb;
  pb.set_data_type(onnx::TensorProto::INT64);
  pb.add_dims(2);
  pb.add_int64_data(6);
  pb.add_int64_data(1);
  write_bytes(dir / "shape.pb", pb.SerializeAsString());
  r = run_modelc(dir, "run-reference m.onnx --input x=x.npy --bind shape=shape.pb -o out_pb");
  REQUIRE(r.code == 0);
  CHECK(read_npy(dir / "out_pb/y.npy").shape() == Shape{6, 1});

  r = run_modelc(dir, "inspect m.onnx");
  CHECK(r.code == 1);
  CHECK(has(r.out + r.err, "--bind shape=FILE"));
  r = run_modelc(dir, "inspect m.onnx --bind shape=shape.npy");
  CHECK(r.code == 0);
  CHECK(has(r.out, "float32[3x2]"));
  CHECK(has(r.out, "unsupported nodes: none"));

  // The compile command: the emitted program has one input, x; Reshape folds into a view.
  r = run_modelc(dir, "m.onnx -o prog --name bound");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--bind shape=FILE"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "prog"));
  r = run_modelc(dir, "m.onnx -o prog --name bound --bind shape=shape.npy");
  REQUIRE(r.code == 0);
  const std::string header = read_bytes(dir / "prog/bound.h");
  CHECK(has(header, "input  x  float32[2x3]"));
  CHECK_FALSE(has(header, "input  shape"));
  CHECK(has(header, "output y  float32[3x2]"));

  // verify: the emitted program on the host emulation against the reference, both with the
  // bound input; a bad --bind is an error before any build.
  r = run_modelc(dir, "verify m.onnx --emulate --bind shape=shape.npy");
  CHECK(r.code == 0);
  CHECK(has(r.out, "y  float32[3x2]"));
  CHECK(has(r.out, "PASS: 2 of 2 outputs match"));
  r = run_modelc(dir, "verify m.onnx --emulate --bind shape=nope.npy");
  CHECK(r.code == 1);
  CHECK(has(r.err, "nope.npy"));
}

TEST_CASE("cli --bind: wrong names, files, types and shapes are clear errors") {
  TempDir dir;
  write_case(dir);
  write_npy(dir / "shape32.npy", Tensor::from_i64(DType::int32, {2}, {3, 2}));
  write_npy(dir / "shape3.npy", Tensor::from_i64(DType::int64, {3}, {1, 3, 2}));
  write_bytes(dir / "garbage.npy", "not a tensor file");

  Result r = run_modelc(dir, "run-reference m.onnx --bind nope=shape.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--bind names 'nope', which is not an input of the model (inputs: 'x', 'shape')"));
  r = run_modelc(dir, "run-reference m.onnx --bind w=shape.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--bind names 'w', which is a constant (initializer), not an input"));
  r = run_modelc(dir, "run-reference m.onnx --bind shape=missing.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "missing.npy"));
  CHECK(has(r.err, "--bind input 'shape'"));
  r = run_modelc(dir, "run-reference m.onnx --bind shape=garbage.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "garbage.npy"));
  r = run_modelc(dir, "run-reference m.onnx --bind shape=shape32.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "file 'shape32.npy': --bind input 'shape': the file holds int32[2], the model declares int64[2]"));
  CHECK(has(r.err, "hint: convert the data to int64"));
  r = run_modelc(dir, "run-reference m.onnx --bind shape=shape3.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "the file holds int64[3], the model declares int64[2]"));
  r = run_modelc(dir, "run-reference m.onnx --bind shape=shape.npy --bind shape=shape.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--bind gives input 'shape' twice"));
  r = run_modelc(dir, "run-reference m.onnx --bind shape=shape.npy --shape shape=3 -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--shape gives 3"));
  // A bound input is no longer an input: --input for it says so.
  r = run_modelc(dir, "run-reference m.onnx --bind shape=shape.npy --input shape=shape.npy -o out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--input names 'shape', which is a constant"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "out"));

  // Malformed arguments are usage errors, on every command.
  for (const char* cmd : {"run-reference m.onnx", "inspect m.onnx", "m.onnx", "verify m.onnx --emulate"}) {
    CAPTURE(cmd);
    CHECK(run_modelc(dir, std::string(cmd) + " --bind shape").code == 2);
    CHECK(run_modelc(dir, std::string(cmd) + " --bind =shape.npy").code == 2);
    CHECK(run_modelc(dir, std::string(cmd) + " --bind shape=").code == 2);
  }
}

TEST_CASE("cli --bind: a bound input's file gives its symbolic dims") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(reshape_model({"N"}, {"a", "b", "c"})));
  write_npy(dir / "x.npy", Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  write_npy(dir / "shape3.npy", Tensor::from_i64(DType::int64, {3}, {1, 3, 2}));
  write_npy(dir / "shape_2d.npy", Tensor::from_i64(DType::int64, {1, 3}, {1, 3, 2}));
  Result r = run_modelc(dir, "run-reference m.onnx --input x=x.npy --bind shape=shape3.npy -o out");
  REQUIRE(r.code == 0);
  CHECK(read_npy(dir / "out/y.npy").shape() == Shape{1, 3, 2});
  r = run_modelc(dir, "run-reference m.onnx --input x=x.npy --bind shape=shape_2d.npy -o out2");
  CHECK(r.code == 1);
  CHECK(has(r.err, "the file holds int64[1x3], the model declares int64[?]"));
}

// The modelc command's usage errors (exit 2): the nearest flag or command for a mistyped one, the
// valid names for a bad --arch or stage; --bind takes what --input takes (a float32 .npy for a
// bfloat16 input).
#include <doctest/doctest.h>

#include <sstream>

#include "io/tensor_io.h"
#include "support/build_paths.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

TEST_CASE("cli: an unknown flag or command is a usage error naming the nearest one") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(relu_model()));
  Result r = run_modelc(dir, "m.onnx --fp61");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--fp61: did you mean --fp16?"));
  r = run_modelc(dir, "inspect m.onnx --verbos");
  CHECK(r.code == 2);
  CHECK(has(r.err, "did you mean --verbose?"));
  r = run_modelc(dir, "verify m.onnx --emualte");
  CHECK(r.code == 2);
  CHECK(has(r.err, "did you mean --emulate?"));
  r = run_modelc(dir, "run-reference m.onnx --layer --fp16");
  CHECK(r.code == 2);
  CHECK(has(r.err, "did you mean --layers?"));
  r = run_modelc(dir, "inpsect m.onnx");
  CHECK(r.code == 2);
  CHECK(has(r.err, "unknown command 'inpsect' (did you mean inspect?)"));
  // Nothing near: no suggestion, still a usage error.
  r = run_modelc(dir, "m.onnx --completely-unrelated-words");
  CHECK(r.code == 2);
  CHECK_FALSE(has(r.err, "did you mean"));
}

TEST_CASE("cli: a bad --arch or stage name is a usage error listing the valid ones") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(relu_model()));
  Result r = run_modelc(dir, "m.onnx --arch sm_7 -o out");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--arch 'sm_7' is not a GPU architecture modelc targets"));
  CHECK(has(r.err, "sm_XX with XX >= 75"));
  r = run_modelc(dir, "m.onnx --arch sm_75,gtx1080 -o out");
  CHECK(r.code == 2);
  r = run_modelc(dir, "verify m.onnx --emulate --arch sm_60");
  CHECK(r.code == 2);
  CHECK(has(r.err, "sm_XX with XX >= 75"));
  r = run_modelc(dir, "verify m.onnx --emulate --arch sm_75,sm_90");  // verify runs on one GPU
  CHECK(r.code == 2);
  CHECK(has(r.err, "verify takes one architecture"));
  r = run_modelc(dir, "m.onnx --disable-pass fuse_epilog -o out");
  CHECK(r.code == 2);
  CHECK(has(r.err, "no stage named 'fuse_epilog'"));
  CHECK(has(r.err, "fuse_epilogue"));  // the stages that can be disabled are listed
  r = run_modelc(dir, "m.onnx --print-after nope -o out");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--print-after: no stage named 'nope'"));
  CHECK(has(r.err, "memory_plan"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "out"));
}

TEST_CASE("cli --bind: a bfloat16 input takes a float32 .npy, as --input does (rounded to nearest even)") {
  TempDir dir;
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"4"}, onnx::TensorProto::BFLOAT16);
  add_input(m, "s", {"2"}, onnx::TensorProto::INT64);
  add_output(m, "y", {"2", "2"}, onnx::TensorProto::BFLOAT16);
  add_node(m, "Reshape", {"x", "s"}, {"y"}, "reshape");
  write_bytes(dir / "m.onnx", serialize(m));
  // 1 + 2^-8 + 2^-9 rounds up to 1 + 2^-7 in bfloat16; 3.0 and -0.5 are exact.
  write_npy(dir / "x.npy", Tensor::from_f64(DType::float32, {4}, {1.0 + 1.0 / 256 + 1.0 / 512, 3.0, -0.5, 0.0}));
  write_npy(dir / "s.npy", Tensor::from_f64(DType::int64, {2}, {2, 2}));
  Result r = run_modelc(dir, "run-reference m.onnx --bind x=x.npy --bind s=s.npy -o out");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const Tensor y = read_npy(dir / "out/y.npy");  // a bfloat16 output, written as float32
  CHECK(y.shape() == Shape{2, 2});
  CHECK(y.to_f64() == std::vector<double>{1.0 + 1.0 / 128, 3.0, -0.5, 0.0});
  // --input takes the same file.
  r = run_modelc(dir, "run-reference m.onnx --input x=x.npy --bind s=s.npy -o out_input");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(read_npy(dir / "out_input/y.npy").to_f64() == y.to_f64());
  // A float64 file is still refused, naming the types.
  write_npy(dir / "x64.npy", Tensor::from_f64(DType::float64, {4}, {1, 2, 3, 4}));
  r = run_modelc(dir, "run-reference m.onnx --bind x=x64.npy --bind s=s.npy -o out64");
  CHECK(r.code == 1);
  CHECK(has(r.err, "holds float64"));
}

TEST_CASE("docs/CLI.md documents every flag each command's --help prints") {
  TempDir dir;
  const std::string doc = read_bytes(std::string(build_source_dir()) + "/docs/CLI.md");
  REQUIRE(!doc.empty());
  int flags = 0;
  for (const char* cmd : {"", "inspect", "run-reference", "list-ops", "verify", "resources", "passes"}) {
    const Result r = run_modelc(dir, std::string(cmd) + " --help");
    REQUIRE(r.code == 0);
    // CLI11's option lines: "  -o,--out DIR ..." / "  --fp16 ..."; each name on them.
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) {
      const std::size_t start = line.find_first_not_of(' ');
      if (start == std::string::npos || line[start] != '-') continue;
      std::string names = line.substr(start, line.find(' ', start) - start);
      std::istringstream parts(names);
      std::string name;
      while (std::getline(parts, name, ',')) {
        if (name.empty() || name[0] != '-') continue;
        ++flags;
        INFO("modelc ", cmd, " --help lists ", name);
        CHECK(has(doc, "`" + name));
      }
    }
  }
  CHECK(flags > 40);  // the parsing found the flags (a change of --help's format must not pass this)
}

// --fp16, --fp16-accumulate, --io-fp16, --keep-fp32 on the compile command and `modelc verify`:
// usage errors, bad node names, what reaches the folder (FP16 code, the report's precision section).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "cli/commands/commands.h"
#include "codegen/family.h"
#include "passes/pass.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

namespace {

// x[2,3] -> Relu 'relu' -> Sigmoid 'sig' -> y
onnx::ModelProto two_node_model() {
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"2", "3"});
  add_output(m, "y", {"2", "3"});
  add_node(m, "Relu", {"x"}, {"r"}, "relu");
  add_node(m, "Sigmoid", {"r"}, {"y"}, "sig");
  return m;
}

}  // namespace

TEST_CASE("precision flags: apply_precision_flags fills PassOptions") {
  cli::PrecisionFlags f;
  f.fp16 = true;
  f.io_fp16 = true;
  f.keep_fp32 = {"a", " b ", "a"};
  PassOptions o;
  cli::apply_precision_flags(f, o);
  CHECK(o.fp16);
  CHECK(o.io_fp16);
  CHECK_FALSE(o.fp16_accumulate);
  CHECK(o.keep_fp32 == std::vector<std::string>{"a", "b"});
  f.keep_fp32 = {"a", ""};
  CHECK_THROWS_WITH_AS(cli::apply_precision_flags(f, o), doctest::Contains("--keep-fp32: an empty node name"), Error);
  CHECK(PassOptions{}.fuse_epilogue);  // on by default
}

TEST_CASE("precision flags: usage errors and unknown nodes on the compile command and verify") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(two_node_model()));
  Result r = run_modelc(dir, "m.onnx --keep-fp32 relu");  // needs --fp16
  CHECK(r.code == 2);
  CHECK(has(r.err, "--fp16"));
  r = run_modelc(dir, "m.onnx --io-fp16");
  CHECK(r.code == 2);
  r = run_modelc(dir, "m.onnx --fp16-accumulate");
  CHECK(r.code == 2);
  r = run_modelc(dir, "m.onnx --fp16 --keep-fp32 relu,nope --keep-fp32 nada");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--keep-fp32: no node named 'nada', 'nope' in the model"));
  CHECK(has(r.err, "hint: "));
  r = run_modelc(dir, "verify m.onnx --emulate --keep-fp32 relu");
  CHECK(r.code == 2);
  r = run_modelc(dir, "verify m.onnx --emulate --fp16 --keep-fp32 nope");
  CHECK(r.code == 1);
  CHECK(has(r.err, "no node named 'nope'"));
  r = run_modelc(dir, "--help");
  CHECK(has(r.out, "--fp16"));
  CHECK(has(r.out, "--keep-fp32"));
  r = run_modelc(dir, "m.onnx --layout nhwc");
  CHECK(r.code == 2);
  CHECK(has(r.err, "nhwc"));
  r = run_modelc(dir, "verify m.onnx --emulate --layout channels_last");
  CHECK(r.code == 2);
  r = run_modelc(dir, "verify --help");
  CHECK(has(r.out, "--layout"));
  CHECK(has(r.out, "--fp16"));
  CHECK(has(r.out, "--max-rel-l2"));
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
}

TEST_CASE("precision flags: --fp16 reaches the code and the report; --keep-fp32 pins a node") {
  REQUIRE(FamilyRegistry::instance().find("elementwise"));
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(two_node_model()));
  Result r = run_modelc(dir, "m.onnx --fp16 --keep-fp32 sig -o fp16");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string md = read_bytes(dir / "fp16/report.md");
  CHECK(has(md, "## Precision (--fp16)"));
  CHECK(has(md, "| sig | Sigmoid | pinned by --keep-fp32 |"));
  CHECK(has(md, "1 nodes store FP16"));
  const std::string js = read_bytes(dir / "fp16/report.json");
  CHECK(has(js, "\"precision\""));
  CHECK(has(js, "\"fp16_nodes\": 1"));
  CHECK(has(read_bytes(dir / "fp16/m.cu"), "__half"));
  r = run_modelc(dir, "m.onnx --fp16 --layout nchw -o fp16_nchw");
  CHECK_MESSAGE(r.code == 0, r.err);
  r = run_modelc(dir, "m.onnx -o fp32");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK_FALSE(has(read_bytes(dir / "fp32/report.md"), "Precision"));
  CHECK_FALSE(has(read_bytes(dir / "fp32/report.json"), "\"precision\""));
  CHECK_FALSE(has(read_bytes(dir / "fp32/m.cu"), "__half"));
}

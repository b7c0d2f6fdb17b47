// The default command, `modelc MODEL.onnx ...`: flags, errors, and the folder it writes.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "cli/commands/commands.h"
#include "codegen/family.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

TEST_CASE("compile command: flags are checked before anything is written") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(relu_model({"2", "3"})));
  // A bad --arch or stage name is a usage error (exit 2) naming the valid ones.
  Result r = run_modelc(dir, "m.onnx --arch sm_70");
  CHECK(r.code == 2);
  CHECK(has(r.err, "sm_70"));
  CHECK(has(r.err, "sm_XX with XX >= 75"));
  CHECK(has(r.err, "hint: "));
  r = run_modelc(dir, "m.onnx --arch ''");
  CHECK(r.code == 2);
  r = run_modelc(dir, "m.onnx --name 9lives");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--name '9lives'"));
  r = run_modelc(dir, "m.onnx --name int");
  CHECK(r.code == 1);
  r = run_modelc(dir, "m.onnx --disable-pass no_such_pass");
  CHECK(r.code == 2);
  CHECK(has(r.err, "no_such_pass"));
  r = run_modelc(dir, "m.onnx --print-after no_such_pass");
  CHECK(r.code == 2);
  r = run_modelc(dir, "--disable-pass simplify,no_such_pass m.onnx");  // the model is not taken as a pass
  CHECK(r.code == 2);
  CHECK(has(r.err, "'no_such_pass'"));
  r = run_modelc(dir, "m.onnx --shape x");
  CHECK(r.code == 2);
  r = run_modelc(dir, "--help");
  CHECK(r.code == 0);
  CHECK(has(r.out, "--arch"));
  CHECK(has(r.out, "--weights-file"));
  CHECK(has(r.out, "inspect"));
  CHECK_FALSE(std::filesystem::exists(dir / "out"));
}

TEST_CASE("compile command: writes out/NAME, or names the nodes no family runs") {
  TempDir dir;
  write_bytes(dir / "my-model.onnx", serialize(relu_model({"2", "3"})));
  const Result r = run_modelc(dir, "my-model.onnx --arch sm_90,sm_75 --print-after simplify");
  CHECK(has(r.err, "// after simplify"));
  if (!FamilyRegistry::instance().find("elementwise")) {
    CHECK(r.code == 1);
    CHECK(has(r.err, "no code generator for template family 'elementwise'"));
    CHECK_FALSE(std::filesystem::exists(dir / "out"));
    return;
  }
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "wrote out/my_model (sm_75,sm_90)"));
  for (const char* f : {"my_model.h", "my_model.cu", "my_model_main.cu", "my_model_weights.S", "Makefile",
                        "report.json", "runtime/runtime.h"}) {
    CHECK_MESSAGE(std::filesystem::exists(dir / ("out/my_model/" + std::string(f))), f);
  }
  CHECK(has(read_bytes(dir / "out/my_model/Makefile"), "ARCHS ?= 75 90"));
}

TEST_CASE("compile command: default names and arch lists") {
  CHECK(cli::default_model_name("dir/my-model.v2.onnx") == "my_model_v2");
  CHECK(cli::default_model_name("3d.onnx") == "m_3d");
  CHECK(cli::default_model_name("int.onnx") == "int_model");
  CHECK_NOTHROW(cli::check_model_name("resnet50"));
  CHECK_THROWS_AS(cli::check_model_name("a-b"), Error);
  CHECK_THROWS_AS(cli::check_model_name(""), Error);
  CHECK(cli::checked_archs("sm_90, sm_75,sm_90", true) == std::vector<std::string>{"sm_75", "sm_90"});
  CHECK(cli::checked_archs("sm_75,", true) == std::vector<std::string>{"sm_75"});
  CHECK_THROWS_AS(cli::checked_archs(",", true), Error);
  CHECK_THROWS_AS(cli::checked_archs("sm_61", true), Error);
  if (!cli::find_nvcc_path().empty()) CHECK_THROWS_WITH_AS(cli::checked_archs("sm_76", true), doctest::Contains("can target"), Error);
}

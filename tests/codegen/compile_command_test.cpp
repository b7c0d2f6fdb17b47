// The default command, `modelc MODEL.onnx ...`: flags, errors, and the folder it writes.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "codegen/family.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string quoted(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

Result run_modelc(const TempDir& dir, const std::string& args) {
  const std::string binary = std::string(MODELC_BINARY_DIR) + "/modelc";
  REQUIRE_MESSAGE(std::filesystem::exists(binary), "build the modelc binary first: ", binary);
  const std::string cmd = "cd " + quoted(dir.str()) + " && " + quoted(binary) + " " + args + " >" +
                          quoted(dir / ".stdout") + " 2>" + quoted(dir / ".stderr");
  const int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_bytes(dir / ".stdout");
  r.err = read_bytes(dir / ".stderr");
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("compile command: flags are checked before anything is written") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(relu_model({"2", "3"})));
  Result r = run_modelc(dir, "m.onnx --arch sm_70");
  CHECK(r.code == 1);
  CHECK(has(r.err, "sm_70"));
  CHECK(has(r.err, "hint: "));
  r = run_modelc(dir, "m.onnx --arch ''");
  CHECK(r.code == 1);
  r = run_modelc(dir, "m.onnx --name 9lives");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--name '9lives'"));
  r = run_modelc(dir, "m.onnx --name int");
  CHECK(r.code == 1);
  r = run_modelc(dir, "m.onnx --disable-pass no_such_pass");
  CHECK(r.code == 1);
  CHECK(has(r.err, "no_such_pass"));
  r = run_modelc(dir, "m.onnx --print-after no_such_pass");
  CHECK(r.code == 1);
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

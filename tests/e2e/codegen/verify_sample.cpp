// tests/e2e/codegen/verify_sample.cpp — `modelc verify` (cli::verify_model) end to end on the host
// emulation, independent of the real template families: a small ONNX model (Relu, Add of a
// weight, Mul; an output name that needs sanitizing) lowered onto the test family of
// tests/codegen/test_families.h. Checks:
//   - random inputs: every output PASSes, exit 0; the folder kept with --keep has the inputs,
//     the program's outputs and the reference's outputs, and the program reruns the comparison;
//   - --inputs DIR: the given data is used (the reference outputs follow it);
//   - a family that computes wrong results: FAIL lines with the first mismatch, exit 3 (kExitMismatch);
//   - a bad --inputs file: an Error naming the input and the file.
// usage: verify_sample WORK_DIR
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "cli/commands/commands.h"
#include "codegen/family.h"
#include "schedule/families.h"
#include "io/tensor_io.h"
#include "support/error.h"
#include "tests/codegen/test_families.h"
#include "tests/frontend/onnx_builder.h"

namespace fs = std::filesystem;
using namespace modelc;

namespace {

int failures = 0;

void check(bool ok, const std::string& what, const std::string& context = "") {
  std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
  if (!ok) {
    ++failures;
    if (!context.empty()) std::cout << "---- output:\n" << context << "----\n";
  }
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A family like test_elementwise whose results are off by 0.5: verify must catch it.
void register_wrong_family() {
  if (FamilyRegistry::instance().find("test_wrong")) return;
  KernelFamily f = *FamilyRegistry::instance().find("test_elementwise");
  f.name = "test_wrong";
  const auto emit = f.emit;
  f.emit = [emit](const Kernel& k, const EmitContext& ctx) {
    KernelLaunches e = emit(k, ctx);
    const std::string from = "p.y[i] = p.a[i] + p.b[i];";
    const std::size_t at = e.declarations.find(from);
    if (at != std::string::npos) e.declarations.replace(at, from.size(), "p.y[i] = p.a[i] + p.b[i] + 0.5f;");
    return e;
  };
  FamilyRegistry::instance().add(std::move(f));
  FamilyFacts facts = family_facts("test_elementwise");
  facts.name = "test_wrong";
  register_family(std::move(facts));
}

std::string run_verify(cli::VerifyOptions v, int* code, std::string* error = nullptr) {
  std::ostringstream out;
  try {
    *code = cli::verify_model(v, out);
  } catch (const Error& e) {
    *code = -1;
    if (error) *error = e.what();
  }
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: verify_sample WORK_DIR\n";
    return 2;
  }
  const fs::path work = fs::absolute(argv[1]);
  fs::remove_all(work);
  fs::create_directories(work);
  test::register_test_families();
  register_wrong_family();

  // x[2,3,4] -> Relu -> Add(W) -> "y:0";  Mul(x, x) -> z
  onnx::ModelProto m = test::empty_model(13);
  test::add_input(m, "x", {"2", "3", "4"});
  test::add_output(m, "y:0", {"2", "3", "4"});
  test::add_output(m, "z", {"2", "3", "4"});
  std::vector<float> w(24);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.125f * static_cast<float>(i) - 1.0f;
  *m.mutable_graph()->add_initializer() = test::float_tensor("W", {2, 3, 4}, w);
  test::add_node(m, "Relu", {"x"}, {"r"});
  test::add_node(m, "Add", {"r", "W"}, {"y:0"});
  test::add_node(m, "Mul", {"x", "x"}, {"z"});
  const std::string model = (work / "sample.onnx").string();
  test::write_bytes(model, test::serialize(m));

  cli::VerifyOptions v;
  v.model = model;
  v.emulate = true;
  v.jobs = 2;
  v.family_substitutes = {{"elementwise", "test_elementwise"}};
  v.keep = (work / "sample").string();

  // 1. Random inputs: PASS.
  int code = 0;
  std::string err;
  std::string out = run_verify(v, &code, &err);
  check(code == 0, "random inputs: exit 0", out + err);
  check(has(out, "y:0  float32[2x3x4]  max_abs 0  max_rel 0  rel_l2 0  mismatches 0/24  PASS"), "y:0 passes exactly", out);
  check(has(out, "z  float32[2x3x4]"), "z compared", out);
  check(has(out, "PASS: 2 of 2 outputs match the reference"), "summary line", out);
  const fs::path kept = v.keep;
  check(fs::exists(kept / "verify/inputs/x.npy") && fs::exists(kept / "verify/outputs/y_0.npy") &&
            fs::exists(kept / "verify/reference/y_0.npy") && fs::exists(kept / "sample_emu"),
        "--keep keeps the folder, the inputs, the outputs and the reference");
  // The kept program reruns the comparison on its own.
  const std::string rerun = "'" + (kept / "sample_emu").string() + "' --input x='" + (kept / "verify/inputs/x.npy").string() +
                            "' --output-dir '" + (work / "rerun").string() + "' --compare-dir '" +
                            (kept / "verify/reference").string() + "' >'" + (work / "rerun.log").string() + "' 2>&1";
  const int status = std::system(rerun.c_str());
  check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the kept program's --compare-dir passes",
        test::read_bytes((work / "rerun.log").string()));

  // 2. --inputs DIR.
  fs::create_directories(work / "inputs");
  std::vector<float> x(24);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 10.0f;
  write_npy((work / "inputs/x.npy").string(), Tensor::from_f32({2, 3, 4}, x));
  cli::VerifyOptions given = v;
  given.inputs_dir = (work / "inputs").string();
  out = run_verify(given, &code, &err);
  check(code == 0, "--inputs: exit 0", out + err);
  check(has(out, "inputs from " + given.inputs_dir), "--inputs: says where the inputs came from", out);
  const Tensor ref = read_npy((kept / "verify/reference/z.npy").string());
  check(ref.to_f64()[0] == 100.0, "--inputs: the reference ran on the given data");

  // 3. Wrong results: FAIL, exit 3 (a failed comparison, not an error).
  cli::VerifyOptions wrong = v;
  wrong.family_substitutes = {{"elementwise", "test_wrong"}};
  wrong.keep = (work / "wrong").string();
  out = run_verify(wrong, &code, &err);
  check(code == cli::kExitMismatch, "wrong family: exit 3", out + err);
  check(has(out, "y:0  float32[2x3x4]  max_abs 0.5") && has(out, "mismatches 24/24  FAIL (first mismatch at [0,0,0]"),
        "wrong family: y:0 FAILs with its first mismatch", out);
  check(has(out, "z  float32[2x3x4]  max_abs 0  max_rel 0  rel_l2 0  mismatches 0/24  PASS"), "wrong family: z passes",
        out);
  check(has(out, "FAIL: 1 of 2 outputs match the reference"), "wrong family: summary", out);

  // 4. A bad --inputs file.
  write_npy((work / "inputs/x.npy").string(), Tensor::from_f32({4, 6}, x));
  out = run_verify(given, &code, &err);
  check(code == -1 && has(err, "input 'x' expects float32[2x3x4], the file holds float32[4x6]") &&
            has(err, (work / "inputs/x.npy").string()),
        "bad --inputs file: an Error naming the input and the file", out + err);
  fs::remove(work / "inputs/x.npy");
  out = run_verify(given, &code, &err);
  check(code == -1 && has(err, "--inputs: no file for input 'x'"), "missing --inputs file: an Error", out + err);

  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " check(s)" : std::string("all checks passed")) << "\n";
  return failures ? 1 : 0;
}

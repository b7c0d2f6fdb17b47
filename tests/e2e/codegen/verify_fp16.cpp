// tests/e2e/codegen/verify_fp16.cpp — `modelc verify --fp16` (cli::verify_model with the
// precision flags) end to end on the host emulation with the real template families:
//   - a small model (Relu, Add of a weight, Softmax, Sigmoid, Mul): PASS at the FP16 defaults
//     (rel L2 <= 1e-2, rtol 1e-2, atol 1e-3), the report says what ran in FP16, with the weight
//     that was clamped to 65504 named;
//   - the same with --io-fp16: the program reads an FP16 input file and still passes;
//   - a model whose FP16 storage overflows (x * 1e4 * 1e4 * 1e-8: finite in FP32, Inf in FP16):
//     FAIL, with the NaN/Inf count; with --keep-fp32 on the Mul nodes it PASSes;
//   - --keep-fp32 naming no node of the model: an Error naming it.
// usage: verify_fp16 WORK_DIR
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "cli/commands/commands.h"
#include "io/tensor_io.h"
#include "support/error.h"
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

std::string run_verify(const cli::VerifyOptions& v, int* code, std::string* error) {
  std::ostringstream out;
  error->clear();
  try {
    *code = cli::verify_model(v, out);
  } catch (const Error& e) {
    *code = -1;
    *error = e.what();
  }
  return out.str();
}

// The FP16 defaults register_verify sets for --fp16.
cli::VerifyOptions fp16_options(const std::string& model, const fs::path& keep) {
  cli::VerifyOptions v;
  v.model = model;
  v.emulate = true;
  v.jobs = 2;
  v.keep = keep.string();
  v.precision.fp16 = true;
  v.rtol = 1e-2;
  v.atol = 1e-3;
  v.max_rel_l2 = 1e-2;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: verify_fp16 WORK_DIR\n";
    return 2;
  }
  const fs::path work = fs::absolute(argv[1]);
  fs::remove_all(work);
  fs::create_directories(work);
  int code = 0;
  std::string err;

  // x[2,3,8] -> Relu -> Add(W) -> Softmax -> y;  Sigmoid(x) * x -> z.  W holds 1e5 (clamped).
  {
    onnx::ModelProto m = test::empty_model(13);
    test::add_input(m, "x", {"2", "3", "8"});
    test::add_output(m, "y", {"2", "3", "8"});
    test::add_output(m, "z", {"2", "3", "8"});
    std::vector<float> w(8);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.25f * static_cast<float>(i) - 1.0f;
    std::vector<float> big = {1e5f};
    *m.mutable_graph()->add_initializer() = test::float_tensor("W", {8}, w);
    *m.mutable_graph()->add_initializer() = test::float_tensor("Big", {1}, big);
    test::add_node(m, "Relu", {"x"}, {"r"}, "relu");
    test::add_node(m, "Add", {"r", "W"}, {"a"}, "add");
    test::add_node(m, "Softmax", {"a"}, {"y"}, "softmax");
    test::add_node(m, "Sigmoid", {"x"}, {"s"}, "sigmoid");
    test::add_node(m, "Mul", {"s", "x"}, {"z0"}, "mul");
    test::add_node(m, "Min", {"z0", "Big"}, {"z"}, "min");  // Big is clamped to 65504, min() unchanged
    const std::string model = (work / "small.onnx").string();
    test::write_bytes(model, test::serialize(m));

    cli::VerifyOptions v = fp16_options(model, work / "small");
    std::string out = run_verify(v, &code, &err);
    check(code == 0, "small --fp16: exit 0", out + err);
    check(has(out, "in FP16 (--fp16) against the FP32 reference"), "small --fp16: says FP16", out);
    check(has(out, "rel L2 <= 0.01 and no NaN/Inf where the reference is finite"), "small --fp16: the criterion", out);
    check(has(out, "NaN/Inf where the reference is finite: 0"), "small --fp16: the NaN/Inf count", out);
    check(has(out, "PASS: 2 of 2 outputs match the reference"), "small --fp16: summary", out);
    const std::string md = test::read_bytes((work / "small/report.md").string());
    check(has(md, "## Precision (--fp16)") && has(md, "| Big") && has(md, "values clamped to +-65504"),
          "small --fp16: report.md has the precision section with the clamped weight", md);
    const std::string js = test::read_bytes((work / "small/report.json").string());
    check(has(js, "\"precision\"") && has(js, "\"clamped\": 1"), "small --fp16: report.json has it too", js);
    check(has(test::read_bytes((work / "small/small.cu").string()), "__half"), "small --fp16: the code stores __half");

    // --io-fp16: FP16 input files and outputs.
    cli::VerifyOptions io = fp16_options(model, work / "small_io");
    io.precision.io_fp16 = true;
    out = run_verify(io, &code, &err);
    check(code == 0, "small --io-fp16: exit 0", out + err);
    check(read_npy((work / "small_io/verify/inputs/x.npy").string()).dtype() == DType::float16,
          "small --io-fp16: the program's input file is float16");
    check(read_npy((work / "small_io/verify/outputs/y.npy").string()).dtype() == DType::float16,
          "small --io-fp16: the program's output is float16");

    // An unknown --keep-fp32 node.
    cli::VerifyOptions bad = fp16_options(model, work / "bad");
    bad.precision.keep_fp32 = {"relu", "no_such_node"};
    out = run_verify(bad, &code, &err);
    check(code == -1 && has(err, "--keep-fp32: no node named 'no_such_node'"), "--keep-fp32 unknown node: an Error",
          out + err);
  }

  // x * 1e4 * 1e4 * 1e-8: 1e8 is Inf in FP16 storage, finite in FP32.
  {
    onnx::ModelProto m = test::empty_model(13);
    test::add_input(m, "x", {"4", "8"});
    test::add_output(m, "y", {"4", "8"});
    *m.mutable_graph()->add_initializer() = test::float_tensor("k", {1}, {1e4f});
    *m.mutable_graph()->add_initializer() = test::float_tensor("tiny", {1}, {1e-8f});
    test::add_node(m, "Mul", {"x", "k"}, {"a"}, "mul1");
    test::add_node(m, "Mul", {"a", "k"}, {"b"}, "mul2");
    test::add_node(m, "Mul", {"b", "tiny"}, {"y"}, "mul3");
    const std::string model = (work / "overflow.onnx").string();
    test::write_bytes(model, test::serialize(m));

    cli::VerifyOptions v = fp16_options(model, work / "overflow");
    std::string out = run_verify(v, &code, &err);
    check(code == cli::kExitMismatch, "overflow --fp16: exit 3", out + err);
    check(has(out, "NaN/Inf where the reference is finite: ") && !has(out, "NaN/Inf where the reference is finite: 0"),
          "overflow --fp16: Inf counted", out);
    check(has(out, "FAIL: 0 of 1 outputs match the reference"), "overflow --fp16: summary", out);

    cli::VerifyOptions kept = fp16_options(model, work / "overflow_kept");
    kept.precision.keep_fp32 = {"mul2", "mul3"};
    out = run_verify(kept, &code, &err);
    check(code == 0, "overflow --fp16 --keep-fp32 mul2,mul3: exit 0", out + err);
    const std::string md = test::read_bytes((work / "overflow_kept/report.md").string());
    check(has(md, "| mul2 | Mul | pinned by --keep-fp32 |"), "overflow --keep-fp32: the report says why", md);
  }

  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " check(s)" : std::string("all checks passed")) << "\n";
  return failures ? 1 : 0;
}

// The `modelc` binary: exit codes and messages, on small models the tests
// write to a temporary folder.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include "cli/commands/commands.h"
#include "io/tensor_io.h"
#include "pipeline/pipeline.h"
#include "support/build_paths.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

TEST_CASE("cli: usage errors exit 2, help exits 0") {
  TempDir dir;
  Result r = run_modelc(dir, "");
  CHECK(r.code == 2);
  CHECK(has(r.err, "error: no command given"));
  r = run_modelc(dir, "frobnicate");
  CHECK(r.code == 2);
  CHECK(has(r.err, "error: unknown command 'frobnicate'"));
  CHECK(has(r.err, "hint: "));
  r = run_modelc(dir, "model.onnx");  // the compile command: a missing file is an error, not usage
  CHECK(r.code == 1);
  CHECK(has(r.err, "model.onnx"));
  r = run_modelc(dir, "--help");
  CHECK(r.code == 0);
  CHECK(has(r.out, "inspect"));
  CHECK(has(r.out, "run-reference"));
  CHECK(has(r.out, "list-ops"));
  r = run_modelc(dir, "inspect --help");
  CHECK(r.code == 0);
  CHECK(has(r.out, "--shape"));
  r = run_modelc(dir, "inspect");
  CHECK(r.code == 2);
  r = run_modelc(dir, "inspect m.onnx --shape x");
  CHECK(r.code == 2);
  CHECK(has(r.err, "NAME=DIMS"));
  r = run_modelc(dir, "inspect m.onnx --shape x=2x0");
  CHECK(r.code == 2);
  r = run_modelc(dir, "inspect m.onnx --shape x=2 --shape x=3");
  CHECK(r.code == 2);
  CHECK(has(r.err, "twice"));
  r = run_modelc(dir, "inspect m.onnx --batch 0");
  CHECK(r.code == 2);
  r = run_modelc(dir, "inspect m.onnx --no-such-flag");
  CHECK(r.code == 2);
}

TEST_CASE("cli: inspect") {
  TempDir dir;
  onnx::ModelProto m = relu_model({"N", "3"});
  *m.mutable_graph()->add_initializer() = float_tensor("w", {3}, {1, 2, 3});
  add_node(m, "Relu", {"w"}, {"rw"}, "weights_relu");
  add_output(m, "rw", {"3"});
  write_bytes(dir / "m.onnx", serialize(m));

  Result r = run_modelc(dir, "inspect m.onnx --batch 2");
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(has(r.out, "float32[2x3]"));
  CHECK(has(r.out, "opset 13"));
  CHECK(has(r.out, "Relu"));
  CHECK(has(r.out, "parameters: 3 in 1 initializers"));
  CHECK(has(r.out, "activation"));
  CHECK(has(r.out, "unsupported nodes: none"));
  r = run_modelc(dir, "inspect m.onnx --shape x=5x3 --verbose");
  CHECK(r.code == 0);
  CHECK(has(r.out, "float32[5x3]"));
  CHECK(has(r.out, "= Relu(x)"));

  r = run_modelc(dir, "inspect m.onnx");
  CHECK(r.code == 1);
  CHECK(has(r.err, "error: file 'm.onnx': input shapes are not fully known: input 'x': 'N' (dim 0)"));
  CHECK(has(r.err, "hint: "));

  onnx::ModelProto u = relu_model();
  add_node(u, "Unknown", {"y"}, {"z"}, "mystery");
  add_output(u, "z", {"2", "3"});
  write_bytes(dir / "u.onnx", serialize(u));
  r = run_modelc(dir, "inspect u.onnx --no-onnx-checks");
  CHECK(r.code == 1);
  CHECK(has(r.out, "unsupported nodes: 1"));
  CHECK(has(r.out, "node 'mystery' (Unknown, opset 13): operator Unknown is not supported"));
}

TEST_CASE("cli: broken, missing and escaping models give a clear error and exit 1") {
  TempDir dir;
  const std::string good = serialize(relu_model());
  write_bytes(dir / "cut.onnx", good.substr(0, good.size() / 2));
  write_bytes(dir / "junk.onnx", "\x08\x07\x12\x03" "abc" "\xff\xff\xff");
  Result r = run_modelc(dir, "inspect cut.onnx");
  CHECK(r.code == 1);
  CHECK(has(r.err, "error: file 'cut.onnx': not a valid ONNX model"));
  r = run_modelc(dir, "inspect junk.onnx");
  CHECK(r.code == 1);
  CHECK(has(r.err, "error: file 'junk.onnx'"));
  r = run_modelc(dir, "run-reference missing.onnx");
  CHECK(r.code == 1);
  CHECK(has(r.err, "error: file 'missing.onnx': the model: cannot open: No such file or directory"));
  // Not regular files: a FIFO (opening it would wait for a writer forever) and /dev/zero.
  REQUIRE(::mkfifo((dir / "fifo.onnx").c_str(), 0600) == 0);
  std::filesystem::create_symlink("/dev/zero", dir.path / "zero.onnx");
  for (const char* cmd : {"inspect fifo.onnx", "fifo.onnx -o out", "run-reference zero.onnx -o out"}) {
    INFO(cmd);
    r = run_modelc(dir, cmd);
    CHECK(r.code == 1);
    CHECK(has(r.err, "error: file '"));
    CHECK(has(r.err, "the model is a "));
    CHECK_FALSE(std::filesystem::exists(dir.path / "out"));
  }

  std::filesystem::create_directory(dir.path / "model");
  write_bytes(dir / "secret.bin", std::string(16, '\0'));
  onnx::ModelProto m = empty_model();
  add_output(m, "y", {"4"});
  add_node(m, "Relu", {"w"}, {"y"});
  onnx::TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("../secret.bin");
  write_bytes(dir / "model/m.onnx", serialize(m));
  r = run_modelc(dir, "inspect model/m.onnx");
  CHECK(r.code == 1);
  CHECK(has(r.err, "error: file 'model/m.onnx': initializer 'w': external data file '../secret.bin' has a '..' component"));
  CHECK(has(r.err, "hint: external data must be a plain file inside the model's folder"));
}

TEST_CASE("cli: run-reference writes outputs only after a successful run") {
  TempDir dir;
  onnx::ModelProto m = relu_model({"2", "2"});
  m.mutable_graph()->mutable_output(0)->set_name("out/0:y");
  m.mutable_graph()->mutable_node(0)->set_output(0, "out/0:y");
  write_bytes(dir / "m.onnx", serialize(m));
  write_npy(dir / "x.npy", Tensor::from_f32({2, 2}, {1, -1, -2, 2}));
  write_npy(dir / "bad.npy", Tensor::from_f32({4}, {1, -1, -2, 2}));

  Result r = run_modelc(dir, "run-reference m.onnx --input x=x.npy -o results");
  CHECK(r.code == 0);
  CHECK(has(r.out, "results/out_0_y.npy"));
  CHECK(read_npy(dir / "results/out_0_y.npy").to_f64() == std::vector<double>{1, 0, 0, 2});

  r = run_modelc(dir, "run-reference m.onnx --input x=bad.npy -o failed");
  CHECK(r.code == 1);
  CHECK(has(r.err, "error: file 'bad.npy': input 'x' expects float32[2x2], the file holds float32[4]"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "failed"));
  r = run_modelc(dir, "run-reference m.onnx --input nope=x.npy -o failed");
  CHECK(r.code == 1);
  CHECK(has(r.err, "'nope'"));
  r = run_modelc(dir, "run-reference m.onnx --input x=missing.npy -o failed");
  CHECK(r.code == 1);
  CHECK(has(r.err, "missing.npy"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "failed"));

  // Seeded random inputs: same seed, same outputs.
  CHECK(run_modelc(dir, "run-reference m.onnx -o r1 --seed 7").code == 0);
  CHECK(run_modelc(dir, "run-reference m.onnx -o r2 --seed 7").code == 0);
  CHECK(read_bytes(dir / "r1/out_0_y.npy") == read_bytes(dir / "r2/out_0_y.npy"));
}

TEST_CASE("cli: run-reference --fp16 writes the FP16 simulation's outputs and their error against FP32") {
  TempDir dir;
  onnx::ModelProto m = relu_model({"2", "2"});
  m.mutable_graph()->mutable_node(0)->set_name("act");
  write_bytes(dir / "m.onnx", serialize(m));
  // 1.0001 and 2049 are not float16 values: they become 1 and 2048 (ties to even).
  write_npy(dir / "x.npy", Tensor::from_f32({2, 2}, {1.0001f, -1, -2, 2049}));

  Result r = run_modelc(dir, "run-reference m.onnx --input x=x.npy -o half --fp16 --layers");
  REQUIRE(r.code == 0);
  CHECK(read_npy(dir / "half/y.npy").to_f64() == std::vector<double>{1, 0, 0, 2048});
  CHECK(has(r.out, "fp16 simulation: 1 nodes in FP16"));
  // ||(1e-4, 0, 0, 1)|| / ||(1.0001, 0, 0, 2049)|| = 4.880e-04
  CHECK(has(r.out, "  y  rel_l2 4.880e-04  max_abs 1.000e+00  nan/inf 0"));
  CHECK(has(r.out, "Relu act -> y_fp16 float16  rel_l2 4.880e-04"));

  // Pinned to FP32: the values pass through unrounded, error 0.
  r = run_modelc(dir, "run-reference m.onnx --input x=x.npy -o pinned --fp16 --keep-fp32 act");
  REQUIRE(r.code == 0);
  const std::vector<double> pinned = read_npy(dir / "pinned/y.npy").to_f64();
  CHECK(pinned[0] == static_cast<double>(1.0001f));
  CHECK(pinned[3] == 2049);
  CHECK(has(r.out, "0 nodes in FP16, 1 float nodes in FP32"));
  CHECK(has(r.out, "  y  rel_l2 0.000e+00"));

  r = run_modelc(dir, "run-reference m.onnx --input x=x.npy -o bad --fp16 --keep-fp32 nope");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--keep-fp32: no node named 'nope'"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "bad"));
  CHECK(run_modelc(dir, "run-reference m.onnx -o r --layers").code == 2);  // --layers needs --fp16
  CHECK(run_modelc(dir, "run-reference m.onnx -o r --keep-fp32 act").code == 2);
}

TEST_CASE("cli: list-ops") {
  TempDir dir;
  Result r = run_modelc(dir, "list-ops");
  CHECK(r.code == 0);
  CHECK(has(r.out, "Relu"));
  r = run_modelc(dir, "list-ops --markdown");
  CHECK(r.code == 0);
  CHECK(r.out == cli::list_ops_text(true));
  CHECK(has(r.out, "| Relu |"));
}

TEST_CASE("cli: resources") {
  TempDir dir;
  Result r = run_modelc(dir, "--help");
  CHECK(has(r.out, "resources"));
  r = run_modelc(dir, "resources");
  CHECK(r.code == 2);  // DIR is required
  r = run_modelc(dir, "resources no_such_folder");
  CHECK(r.code == 1);
  CHECK(has(r.err, "no_such_folder has no report.json"));
  std::filesystem::create_directories(dir.path / "out/build/sm_75");
  write_bytes(dir / "out/report.json",
              R"({"generator": "modelc", "model": "m", "archs": ["sm_75"], "parts": 0,
                  "kernels": [{"id": "k0", "family": "gemm", "engine": "tensor_core", "launches": ["m_k0"]}]})");
  r = run_modelc(dir, "resources out");
  CHECK(r.code == 1);
  CHECK(has(r.err, "no ptxas -v log"));
  CHECK(has(r.err, "make -C out objs"));
  write_bytes(dir / "out/build/sm_75/m.ptxas", "ptxas info    : Compiling entry function 'm_k0' for 'sm_75'\n"
                                               "ptxas info    : Used 32 registers, used 1 barriers, 512 bytes smem\n");
  r = run_modelc(dir, "resources out");
  CHECK(r.code == 0);
  CHECK(has(r.out, "resources: 1 of 1 kernels with registers and shared memory for sm_75 (ptxas -v)"));
  CHECK(has(read_bytes(dir / "out/report.md"), "| k0 | gemm | tensor_core | 32 / 512 / 0 / 0 |"));
  r = run_modelc(dir, "resources out --check");  // no PTX kept: the tensor-core kernel's MMAs unknown
  CHECK(r.code == 1);
  CHECK(has(r.out, "check FAILED (1):\n  k0 sm_75: no PTX for sm_75"));
}

TEST_CASE("docs/operators.md is the output of `modelc list-ops --markdown`") {
  const std::string committed = read_bytes(std::string(build_source_dir()) + "/docs/operators.md");
  CHECK_MESSAGE(committed == cli::list_ops_text(true),
                "docs/operators.md is out of date: run `./build/modelc list-ops --markdown > docs/operators.md`");
}

TEST_CASE("cli: modelc passes lists the pipeline; the stage flags take its names") {
  TempDir dir;
  Result r = run_modelc(dir, "passes");
  REQUIRE(r.code == 0);
  for (const modelc::Stage& s : modelc::pipeline()) CHECK(has(r.out, " " + std::string(s.name) + " ("));
  write_bytes(dir / "m.onnx", serialize(relu_model({"2", "2"})));

  r = run_modelc(dir, "m.onnx -o out --print-after memory_plan,tactics --verify-each");
  REQUIRE(r.code == 0);
  CHECK(has(r.err, "// after memory_plan\n"));
  CHECK(has(r.err, "arena: 0 bytes"));  // X and Y are the caller's buffers
  CHECK(has(r.err, "// after tactics\n"));
  CHECK(has(r.err, "  k0 elementwise Relu"));

  r = run_modelc(dir, "m.onnx -o bad --disable-pass layout");
  CHECK(r.code == 2);  // a usage error, listing the stages
  CHECK(has(r.err, "--disable-pass: stage 'layout' is needed to build a program"));
  CHECK(has(r.err, "fold_boundary_casts"));  // the hint lists the optional stages
  r = run_modelc(dir, "m.onnx -o bad --print-after no_such_stage");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--print-after: no stage named 'no_such_stage'"));
  CHECK(has(r.err, "memory_plan"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "bad"));
}

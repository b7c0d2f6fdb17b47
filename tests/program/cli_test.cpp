// runtime_stub/cli.h: the generated program's command line, run on the host emulation with a
// hand-written model behind the C API table (inputs X float32[2x3], K int64[2]; outputs
// "Y:0" = 2 X on a kernel, "K out" = K + 1).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/tensor_io.h"
#include "ir/graph.h"
#include "reference/interpreter.h"
#include "tests/frontend/onnx_builder.h"
#include "tests/runtime_stub/hostile_files.h"
#include "runtime_stub/cli.h"

using modelc::test::TempDir;

namespace {

// ---- the fake model -------------------------------------------------------------------------------

struct FakeCtx {
  std::string error;
  int fail_run = 0;
};
int g_fail_run = 0;  // set by a test: the next contexts' runs fail with this code

__global__ void twice_kernel(const float* x, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = 2.0f * x[i];
}
__global__ void plus_one_kernel(const int64_t* k, int64_t* out, int n) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < n) out[i] = k[i] + 1;
}

const int64_t kShapeX[] = {2, 3};
const int64_t kShapeK[] = {2};

int fake_create(void** ctx, int device) {
  auto* c = new FakeCtx;
  *ctx = c;
  c->fail_run = g_fail_run;
  if (device != 0) {
    c->error = "no CUDA device " + std::to_string(device) + " (1 device)";
    return 3;
  }
  return 0;
}
int fake_run(void* ctx, const void* const* in, void* const* out, cudaStream_t stream) {
  auto* c = static_cast<FakeCtx*>(ctx);
  if (c->fail_run) {
    c->error = "fake_run: cudaErrorLaunchFailure at fake.cu:12";
    return c->fail_run;
  }
  mc::launch(twice_kernel, dim3(1), dim3(32), 0, stream, static_cast<const float*>(in[0]), static_cast<float*>(out[0]),
             6);
  mc::launch(plus_one_kernel, dim3(1), dim3(32), 0, stream, static_cast<const int64_t*>(in[1]),
             static_cast<int64_t*>(out[1]), 2);
  return 0;
}
int fake_run_host(void* ctx, const void* const* in, void* const* out) {
  return fake_run(ctx, in, out, nullptr);  // host memory is device memory on the emulation
}
int fake_create_with_weights(void** ctx, int device, const char* path) {
  const int rc = fake_create(ctx, device);
  if (rc == 0 && std::string(path ? path : "fake_weights.bin") != "good.bin") {
    static_cast<FakeCtx*>(*ctx)->error = std::string("cannot open the weights file '") + (path ? path : "fake_weights.bin") + "'";
    return mc_cli::kCreateWeightsFile;
  }
  return rc;
}
const char* fake_error(const void* ctx) { return static_cast<const FakeCtx*>(ctx)->error.c_str(); }
void fake_destroy(void* ctx) { delete static_cast<FakeCtx*>(ctx); }
int two() { return 2; }
const char* in_name(int i) { return i == 0 ? "X" : "K"; }
int in_dtype(int i) { return i == 0 ? 1 : 7; }
int in_rank(int i) { return i == 0 ? 2 : 1; }
const int64_t* in_shape(int i) { return i == 0 ? kShapeX : kShapeK; }
const char* out_name(int i) { return i == 0 ? "Y:0" : "K out"; }
size_t no_workspace() { return 0; }

// The fields by name: mc_cli::Model's order is runtime_stub/c_api.def's.
mc_cli::Model fake_model() {
  mc_cli::Model m;
  m.name = "fake";
  m.create = fake_create;
  m.run = fake_run;
  m.run_host = fake_run_host;
  m.error = fake_error;
  m.destroy = fake_destroy;
  m.num_inputs = two;
  m.num_outputs = two;
  m.input_name = in_name;
  m.input_dtype = in_dtype;
  m.input_rank = in_rank;
  m.input_shape = in_shape;
  m.output_name = out_name;
  m.output_dtype = in_dtype;
  m.output_rank = in_rank;
  m.output_shape = in_shape;
  m.workspace_bytes = no_workspace;
  return m;
}
const mc_cli::Model kFake = fake_model();

// ---- running mc_cli::main with captured output -----------------------------------------------------

struct Result {
  int code = -1;
  std::string out, err;
};

Result run_cli(const TempDir& dir, std::vector<std::string> args, const mc_cli::Model& model = kFake) {
  args.insert(args.begin(), "./fake");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const int saved_out = ::dup(1), saved_err = ::dup(2);
  const int fo = ::open((dir / ".stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int fe = ::open((dir / ".stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fo, 1);
  ::dup2(fe, 2);
  Result r;
  r.code = mc_cli::main(static_cast<int>(args.size()), argv.data(), model);
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(saved_out, 1);
  ::dup2(saved_err, 2);
  ::close(fo);
  ::close(fe);
  ::close(saved_out);
  ::close(saved_err);
  r.out = modelc::test::read_bytes(dir / ".stdout");
  r.err = modelc::test::read_bytes(dir / ".stderr");
  return r;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

mc_cli::Args parse(std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return mc_cli::parse_args(static_cast<int>(argv.size()), argv.data());
}

std::string usage_error(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const mc_cli::Failure& f) {
    CHECK(f.code == mc_cli::kExitUsage);
    return f.message;
  }
  return "(no error)";
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> r;
  if (!std::filesystem::exists(dir)) return r;
  for (const auto& e : std::filesystem::directory_iterator(dir)) r.push_back(e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

void write_tensor(const std::string& path, const modelc::Tensor& t) { modelc::write_npy(path, t); }

// A run that must be refused: its arguments and what stderr must say.
struct Refused {
  std::vector<std::string> args;
  std::string message;
};

// Each run, with --output-dir DIR/out: exit 1, the message, and no output folder.
void check_refused(const TempDir& dir, const std::vector<Refused>& runs) {
  const std::string out = dir / "out";
  for (const Refused& c : runs) {
    std::vector<std::string> args = c.args;
    args.push_back("--output-dir");
    args.push_back(out);
    const Result r = run_cli(dir, args);
    CAPTURE(r.err);
    CHECK(r.code == 1);
    CHECK(has(r.err, c.message));
    CHECK(!std::filesystem::exists(out));
  }
}

}  // namespace

TEST_CASE("cli.h: argument parsing") {
  mc_cli::Args a = parse({});
  CHECK(a.inputs.empty());
  CHECK(a.output_dir == ".");
  CHECK(a.bench == 0);
  CHECK(a.warmup == 10);
  CHECK(a.rtol == 1e-3);
  CHECK(a.atol == 1e-5);
  a = parse({"--input", "x=a.npy", "--input=y=b=c.pb", "--output-dir", "o", "--seed=42", "--device", "1",
             "--weights", "w.bin", "--bench",
             "5", "--warmup=0", "--compare-dir", "ref", "--rtol", "0.5", "--atol=1e-7"});
  CHECK(a.inputs == std::vector<std::string>{"x=a.npy", "y=b=c.pb"});
  CHECK(a.output_dir == "o");
  CHECK(a.seed == 42);
  CHECK(a.device == 1);
  CHECK(a.weights == "w.bin");
  CHECK(a.bench == 5);
  CHECK(a.warmup == 0);
  CHECK(a.compare_dir == "ref");
  CHECK(a.rtol == 0.5);
  CHECK(a.atol == 1e-7);
  CHECK(parse({"-h"}).help);
  CHECK(parse({"--help"}).help);

  CHECK(usage_error({"--frob"}) == "unknown option '--frob'");
  CHECK(has(usage_error({"x.npy"}), "unexpected argument 'x.npy'"));
  CHECK(usage_error({"--input"}) == "--input needs a value");
  CHECK(has(usage_error({"--input", "x.npy"}), "is not NAME=FILE"));
  CHECK(has(usage_error({"--bench", "0"}), "--bench expects an integer in [1,"));
  CHECK(has(usage_error({"--bench", "10x"}), "got '10x'"));
  CHECK(has(usage_error({"--warmup", "-1"}), "--warmup expects"));
  CHECK(has(usage_error({"--seed", "-3"}), "non-negative integer"));
  CHECK(has(usage_error({"--seed", "99999999999999999999999"}), "non-negative integer"));
  CHECK(has(usage_error({"--device", "abc"}), "--device expects"));
  CHECK(has(usage_error({"--compare-dir", "r", "--rtol", "nan"}), "non-negative number"));
  CHECK(has(usage_error({"--compare-dir", "r", "--atol", "-1"}), "non-negative number"));
  CHECK(usage_error({"--rtol", "1"}) == "--rtol needs --compare-dir DIR");
  CHECK(has(usage_error({"--output-dir="}), "is empty"));
  CHECK(has(usage_error({"--help=1"}), "takes no value"));
}

TEST_CASE("cli.h: random inputs are run-reference's (mt19937_64, the same distributions)") {
  modelc::Graph g;
  modelc::Value* x = g.add_value("X");
  x->set_type(modelc::DType::float32, {2, 3});
  modelc::Value* k = g.add_value("K");
  k->set_type(modelc::DType::int64, {2});
  g.add_input(x);
  g.add_input(k);
  for (uint64_t seed : {0u, 1u, 12345u}) {
    const modelc::TensorMap want = modelc::random_inputs(g, seed);
    const std::vector<mc_npy::Array> got = mc_cli::random_inputs(kFake, seed);
    REQUIRE(got.size() == 2);
    const modelc::Tensor& wx = want.at("X");
    const modelc::Tensor& wk = want.at("K");
    CHECK(got[0].data == std::vector<unsigned char>(wx.raw(), wx.raw() + wx.nbytes()));
    CHECK(got[1].data == std::vector<unsigned char>(wk.raw(), wk.raw() + wk.nbytes()));
  }
}

TEST_CASE("cli.h: a run writes every output as DIR/<sanitized name>.npy; --compare-dir passes and fails") {
  TempDir dir;
  write_tensor(dir / "x.npy", modelc::Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  write_tensor(dir / "k.npy", modelc::Tensor::from_i64(modelc::DType::int64, {2}, {10, -3}));
  Result r = run_cli(dir, {"--input", "X=" + dir / "x.npy", "--input", "K=" + dir / "k.npy", "--output-dir",
                           dir / "out/nested"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "X  float32[2x3]  <- " + dir / "x.npy"));
  CHECK(has(r.out, "Y:0  float32[2x3]  -> " + dir / "out/nested/Y_0.npy"));
  CHECK(files_in(dir / "out/nested") == std::vector<std::string>{"K_out.npy", "Y_0.npy"});
  const modelc::Tensor y = modelc::read_npy(dir / "out/nested/Y_0.npy");
  CHECK(y.to_f64() == std::vector<double>{2, 4, 6, 8, 10, 12});
  CHECK(modelc::read_npy(dir / "out/nested/K_out.npy").to_i64() == std::vector<int64_t>{11, -2});

  // Compare with itself: PASS, exit 0.
  r = run_cli(dir, {"--input", "X=" + dir / "x.npy", "--input", "K=" + dir / "k.npy", "--output-dir", dir / "o2",
                    "--compare-dir", dir / "out/nested"});
  CHECK(r.code == 0);
  CHECK(has(r.out, "Y:0  float32[2x3]  max_abs 0  max_rel 0  rel_l2 0  mismatches 0/6  PASS"));
  CHECK(has(r.out, "PASS: 2 of 2 outputs passed"));

  // A different expected Y: exit 3, the outputs are still written.
  write_tensor(dir / "out/nested/Y_0.npy", modelc::Tensor::from_f32({2, 3}, {2, 4, 6, 8, 10, 13}));
  r = run_cli(dir, {"--input", "X=" + dir / "x.npy", "--input", "K=" + dir / "k.npy", "--output-dir", dir / "o3",
                    "--compare-dir", dir / "out/nested", "--atol", "0.5", "--rtol", "0"});
  CHECK(r.code == 3);
  CHECK(has(r.out, "mismatches 1/6  FAIL (first mismatch at [1,2]: got 12, expected 13)"));
  CHECK(has(r.out, "FAIL: 1 of 2 outputs passed"));
  CHECK(files_in(dir / "o3").size() == 2);
  // Within the tolerance: PASS.
  r = run_cli(dir, {"--input", "X=" + dir / "x.npy", "--input", "K=" + dir / "k.npy", "--output-dir", dir / "o4",
                    "--compare-dir", dir / "out/nested", "--atol", "1"});
  CHECK(r.code == 0);
}

TEST_CASE("cli.h: random inputs by default, --seed changes them, --bench prints percentiles") {
  TempDir dir;
  Result r = run_cli(dir, {"--output-dir", dir / "a", "--seed", "3"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "X  float32[2x3]  <- random (seed 3)"));
  r = run_cli(dir, {"--output-dir", dir / "b", "--seed", "3", "--bench", "4", "--warmup", "1"});
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "bench  4 runs after 1 warmup"));
  CHECK(has(r.out, "median "));
  CHECK(has(r.out, "p10 "));
  CHECK(has(r.out, "p90 "));
  CHECK(modelc::test::read_bytes(dir / "a/Y_0.npy") == modelc::test::read_bytes(dir / "b/Y_0.npy"));
  r = run_cli(dir, {"--output-dir", dir / "c", "--seed", "4"});
  CHECK(modelc::test::read_bytes(dir / "a/Y_0.npy") != modelc::test::read_bytes(dir / "c/Y_0.npy"));
  // The default output folder is the working directory.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  r = run_cli(dir, {});
  std::filesystem::current_path(cwd);
  CHECK(r.code == 0);
  CHECK(std::filesystem::exists(dir / "Y_0.npy"));
  r = run_cli(dir, {"--help"});
  CHECK(r.code == 0);
  CHECK(has(r.out, "usage: ./fake"));
  CHECK(has(r.out, "exit codes: 0 ok, 1 usage or bad input file, 2 runtime/CUDA error, 3 comparison failed"));
}

TEST_CASE("cli.h: a bad input file is exit 1 with a clear message and no output file") {
  TempDir dir;
  write_tensor(dir / "x.npy", modelc::Tensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  write_tensor(dir / "x23.npy", modelc::Tensor::from_f32({3, 2}, {1, 2, 3, 4, 5, 6}));
  write_tensor(dir / "xi.npy", modelc::Tensor::from_i64(modelc::DType::int32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  const std::string good = modelc::test::read_bytes(dir / "x.npy");
  modelc::test::write_bytes(dir / "xt.npy", good.substr(0, good.size() - 3));
  modelc::test::write_bytes(dir / "x.txt", "1 2 3");
  const std::vector<Refused> cases = {
      {{"--input", "X=" + dir / "x23.npy"},
       "error: input 'X' expects float32[2x3], the file '" + dir / "x23.npy" + "' holds float32[3x2]"},
      {{"--input", "X=" + dir / "xi.npy"},
       "error: input 'X' expects float32[2x3], the file '" + dir / "xi.npy" +
           "' holds int32[2x3] (convert the data to float32)"},
      {{"--input", "X=" + dir / "xt.npy"},
       "error: input 'X': " + dir / "xt.npy" + ": truncated .npy file: float32[2x3] needs 24 data bytes, the file has 21"},
      {{"--input", "X=" + dir / "missing.npy"}, "error: input 'X': " + dir / "missing.npy" + ": cannot open"},
      {{"--input", "X=" + dir / "x.txt"}, "unknown tensor file type"},
      {{"--input", "Z=" + dir / "x.npy"},
       "error: --input names 'Z', which is not an input of the model (inputs: 'X' float32[2x3], 'K' int64[2])"},
      {{"--input", "X=" + dir / "x.npy", "--input", "X=" + dir / "x.npy"}, "gives input 'X' twice"},
      {{"--input", "X=" + dir / "x.npy", "--compare-dir", dir / "nowhere"},
       "error: expected output 'Y:0': " + dir / "nowhere/Y_0.npy" + ": cannot open"},
      {{"--bogus"}, "error: unknown option '--bogus'\nhint: ./fake --help lists the options"},
      {{"--weights", dir / "w.bin"},
       "error: --weights: the weights of 'fake' are embedded in this program (it was compiled without --weights-file)"},
  };
  check_refused(dir, cases);
}

TEST_CASE("cli.h: a FIFO, /dev/zero, an oversized or over-promising input file is exit 1 at once, naming the file") {
  TempDir dir;
  const modelc::test::Deadline deadline(20);
  std::vector<Refused> cases;
  for (const std::string ext : {".npy", ".pb"}) {
    for (const modelc::test::HostileFile& h : modelc::test::hostile_files(dir, ext)) {
      cases.push_back({{"--input", "X=" + h.path}, "error: input 'X': " + h.path + ": " + h.kind});
    }
  }
  cases.push_back({{"--compare-dir", dir.str()}, "error: expected output 'Y:0': " + dir / "Y_0.npy" + ": is a FIFO"});
  REQUIRE(::mkfifo((dir / "Y_0.npy").c_str(), 0600) == 0);
  // A header promising 2^40 elements, 16 bytes of data.
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }\n";
  modelc::test::write_bytes(dir / "huge_header.npy", std::string("\x93NUMPY\x01\x00", 8) +
                                                         static_cast<char>(header.size()) + '\0' + header +
                                                         std::string(16, '\0'));
  cases.push_back({{"--input", "X=" + dir / "huge_header.npy"},
                   "error: input 'X': " + dir / "huge_header.npy" +
                       ": truncated .npy file: float32[1099511627776] needs 4398046511104 data bytes, the file has 16"});
  // Far more than X float32[2x3] needs.
  write_tensor(dir / "large.npy", modelc::Tensor::from_f64(modelc::DType::float32, {100000}, std::vector<double>(100000, 1)));
  cases.push_back({{"--input", "X=" + dir / "large.npy"},
                   "error: input 'X': " + dir / "large.npy" +
                       ": is 400128 bytes, more than a .npy file of a float32[2x3] tensor can be (65569 bytes)"});
  // A .pb whose dims multiply past any file.
  std::string pb("\x10\x01", 2);  // data_type float32
  for (int i = 0; i < 4; ++i) pb += std::string("\x08\x80\x80\x40", 4);  // dims: 2^20
  pb += std::string("\x4a\x18", 2) + std::string(24, '\0');  // raw_data: 24 bytes
  modelc::test::write_bytes(dir / "huge_dims.pb", pb);
  cases.push_back({{"--input", "X=" + dir / "huge_dims.pb"},
                   "error: input 'X': " + dir / "huge_dims.pb" + ": shape 1048576x1048576x1048576x1048576 is too large"});
  check_refused(dir, cases);
}

TEST_CASE("cli.h: create and run failures are exit 2 with the model's error string, a weights file's 1") {
  TempDir dir;
  Result r = run_cli(dir, {"--device", "7", "--output-dir", dir / "out"});
  CHECK(r.code == 2);
  CHECK(has(r.err, "error: fake_create (device 7) failed (code 3): no CUDA device 7 (1 device)"));
  g_fail_run = 1;
  r = run_cli(dir, {"--output-dir", dir / "out"});
  g_fail_run = 0;
  CHECK(r.code == 2);
  CHECK(has(r.err, "error: fake_run_host failed (code 1): fake_run: cudaErrorLaunchFailure at fake.cu:12"));
  CHECK(!std::filesystem::exists(dir / "out"));
  // A model compiled with --weights-file: --weights picks the file; one the model cannot use is a
  // bad input file.
  mc_cli::Model with_file = kFake;
  with_file.create_with_weights = fake_create_with_weights;
  r = run_cli(dir, {"--weights", "bad.bin", "--output-dir", dir / "out"}, with_file);
  CHECK(r.code == 1);
  CHECK(!std::filesystem::exists(dir / "out"));
  CHECK(has(r.err, "error: fake_create (device 0) failed (code 5): cannot open the weights file 'bad.bin'"));
  r = run_cli(dir, {"--weights", "good.bin", "--output-dir", dir / "out"}, with_file);
  CHECK(r.code == 0);
  std::filesystem::remove_all(dir / "out");
  // An output folder that cannot be created.
  modelc::test::write_bytes(dir / "file", "x");
  r = run_cli(dir, {"--output-dir", dir / "file/sub"});
  CHECK(r.code == 2);
  CHECK(has(r.err, "cannot create the output folder"));
}

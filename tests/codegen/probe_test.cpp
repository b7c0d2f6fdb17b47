// runtime_stub/runtime.h's runs kernel by kernel (a probe around each kernel: MC_KERNEL_BEGIN / END)
// and what they serve: Context::time_kernels (--profile), Context::run_taps (--taps: each kernel's
// tensors, gathered from how the kernel stores them into the graph's dense layout), and
// runtime_stub/self_test.h (NAME_self_test); on the host emulation, with a hand-written model.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "codegen/emitter.h"  // before runtime.h: the emulation's macros must not reach it
#include "self_test.h"

namespace {

// t = 2 x stored column-major with a pitch (element (i, j) of the 2x3 t at j * 4 + i, after 64
// bytes), then y = t + 1 dense into the output: kernel 0 writes the way a channels-last, padded
// layout does, so a tap must gather it back.
constexpr int kRows = 2, kCols = 3, kPitch = 4;
constexpr size_t kTOffset = 64;

__global__ void twice_strided(const float* x, const float* w, float* t) {
  const int k = static_cast<int>(threadIdx.x);
  if (k < kRows * kCols) t[(k % kCols) * kPitch + k / kCols] = w[0] * x[k];
}
__global__ void plus_one(const float* t, float* y) {
  const int k = static_cast<int>(threadIdx.x);
  if (k < kRows * kCols) y[k] = t[(k % kCols) * kPitch + k / kCols] + 1.0f;
}

int enqueue(mc::Status& mc_status, const mc::Bindings& mc_bindings, cudaStream_t stream) {
  const float* x = static_cast<const float*>(mc_bindings.inputs[0]);
  const float* w = reinterpret_cast<const float*>(mc_bindings.weights);
  float* t = reinterpret_cast<float*>(mc_bindings.arena + kTOffset);
  float* y = static_cast<float*>(mc_bindings.outputs[0]);
  MC_KERNEL_BEGIN(0, stream);
  MC_LAUNCH(twice_strided, dim3(1), dim3(32), 0, x, w, t);
  MC_KERNEL_END(0, stream);
  MC_KERNEL_BEGIN(1, stream);
  MC_LAUNCH(plus_one, dim3(1), dim3(32), 0, t, y);
  MC_KERNEL_END(1, stream);
  return 0;
}

const int64_t kShape[] = {kRows, kCols};
const int64_t kTapDims[] = {kRows, kCols, 1, kPitch, kRows, kCols, kCols, 1};
const mc::TapInfo kTaps[] = {{0, "t", 1, 2, kTapDims + 0, kTapDims + 2, mc::kTapArena, 0, kTOffset},
                             {1, "y", 1, 2, kTapDims + 4, kTapDims + 6, mc::kTapOutput, 0, 0}};
const char* const kIds[] = {"k0", "k1"};
const mc::Profile kProfile[] = {{1, 256, enqueue, 1, 0, nullptr, 2, kIds, 2, kTaps}};
const mc::TensorInfo kIn[] = {{"x", 1, 2, kShape, kRows * kCols * 4}};
const mc::TensorInfo kOut[] = {{"y", 1, 2, kShape, kRows * kCols * 4}};
const float kW[64] = {2.0f};  // w[0] = 2

mc::ModelInfo model_info(uint64_t checksum) {
  return mc::ModelInfo{"probe", "75", 75, 256, sizeof kW, checksum, reinterpret_cast<const unsigned char*>(kW),
                       "probe_weights.bin", 1, kIn, 1, kOut, 1, kProfile};
}

uint64_t weights_checksum() { return mc::checksum64(reinterpret_cast<const unsigned char*>(kW), sizeof kW); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<float> inputs() {
  std::vector<float> x(kRows * kCols);
  for (int k = 0; k < kRows * kCols; ++k) x[static_cast<size_t>(k)] = static_cast<float>(k) - 2.5f;
  return x;
}

}  // namespace

TEST_CASE("probe: nothing of it in the captured graph; the kernels' launches alone") {
  // The enqueue function captured as create() captures it (no probe): its two launches, nothing else.
  std::vector<unsigned char> arena(256), weights(sizeof kW), io(2 * sizeof(float) * kRows * kCols);
  const void* in[] = {io.data()};
  void* out[] = {io.data() + sizeof(float) * kRows * kCols};
  cudaStream_t stream;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  const mc::Bindings b{arena.data(), weights.data(), in, out, 75};
  mc::Status status;
  REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(enqueue(status, b, stream) == 0);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(stream, &graph) == cudaSuccess);
  size_t nodes = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess);
  CHECK(nodes == 2);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_CASE("probe: taps gathered into the graph's layout, each right after its kernel") {
  const mc::ModelInfo info = model_info(weights_checksum());
  mc::Context ctx(info);
  REQUIRE_MESSAGE(ctx.create(0, nullptr) == mc::kOk, std::string(ctx.error()));
  const std::vector<float> x = inputs();
  std::vector<float> y(kRows * kCols, 0.0f), t(kRows * kCols, -1.0f), y_tap(kRows * kCols, -1.0f);
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  void* taps[] = {t.data(), y_tap.data()};
  REQUIRE_MESSAGE(ctx.run_taps(1, in, out, taps) == mc::kOk, std::string(ctx.error()));
  for (size_t k = 0; k < x.size(); ++k) {
    CHECK(t[k] == 2.0f * x[k]);  // row-major, though the kernel stored it column-major with a pitch
    CHECK(y_tap[k] == 2.0f * x[k] + 1.0f);
    CHECK(y[k] == 2.0f * x[k] + 1.0f);  // the run's outputs too
  }
  // A null tap is left out; the others still come.
  std::fill(y_tap.begin(), y_tap.end(), -1.0f);
  void* some[] = {nullptr, y_tap.data()};
  REQUIRE(ctx.run_taps(1, in, out, some) == mc::kOk);
  CHECK(y_tap[1] == 2.0f * x[1] + 1.0f);
  CHECK(ctx.run_taps(1, in, out, nullptr) == mc::kBadArgument);
  CHECK(has(ctx.error(), "the taps array is null"));
  CHECK(ctx.run_taps(2, in, out, taps) == mc::kBadArgument);  // a batch the model does not run
  // The normal run is the graph's, unchanged by the probed ones.
  std::fill(y.begin(), y.end(), 0.0f);
  REQUIRE(ctx.run_host(in, out) == mc::kOk);
  CHECK(y[5] == 2.0f * x[5] + 1.0f);
}

TEST_CASE("probe: kernel times, one per kernel") {
  const mc::ModelInfo info = model_info(weights_checksum());
  mc::Context ctx(info);
  REQUIRE(ctx.create(0, nullptr) == mc::kOk);
  const std::vector<float> x = inputs();
  const void* in[] = {x.data()};
  float us[3] = {-1.0f, -1.0f, -7.0f};
  REQUIRE_MESSAGE(ctx.time_kernels(1, in, 3, us) == mc::kOk, std::string(ctx.error()));
  CHECK(us[0] >= 0.0f);
  CHECK(us[1] >= 0.0f);
  CHECK(us[2] == -7.0f);  // two kernels: nothing written past them
  CHECK(ctx.time_kernels(1, in, 0, us) == mc::kBadArgument);
  CHECK(has(ctx.error(), "runs is 0"));
  CHECK(ctx.time_kernels(1, in, 1, nullptr) == mc::kBadArgument);
  const void* none[] = {nullptr};
  CHECK(ctx.time_kernels(1, none, 1, us) == mc::kBadArgument);
  CHECK(has(ctx.error(), "input 0 ('x') is a null pointer"));
}

TEST_CASE("self-test: the weights' checksum and the compiled-in outputs") {
  const std::vector<float> x = inputs();
  std::vector<float> y(x.size());
  for (size_t k = 0; k < x.size(); ++k) y[k] = 2.0f * x[k] + 1.0f;
  const unsigned char* in[] = {reinterpret_cast<const unsigned char*>(x.data())};
  const unsigned char* want[] = {reinterpret_cast<const unsigned char*>(y.data())};
  const mc::SelfTestData data = {in, want, 1e-3, 1e-5, 0, "two inputs by hand"};
  char report[4096];
  {
    const mc::ModelInfo info = model_info(weights_checksum());
    mc::Context ctx(info);
    REQUIRE(ctx.create(0, nullptr) == mc::kOk);
    uint64_t sum = 0;
    REQUIRE(ctx.device_weights_checksum(&sum) == mc::kOk);
    CHECK(sum == weights_checksum());
    CHECK(mc::self_test(ctx, info, data, report, sizeof report) == mc::kOk);
    const std::string r = report;
    CHECK(has(r, "self-test of probe\n"));
    CHECK(has(r, ", as compiled\n"));
    CHECK(has(r, "  input: two inputs by hand\n"));
    CHECK(has(r, "    y  float32[2x3]  max_abs 0"));
    CHECK(r.size() > 5);
    CHECK(r.substr(r.size() - 5) == "PASS\n");
    // An output off by one element fails, naming it.
    std::vector<float> off = y;
    off[4] += 0.5f;
    const unsigned char* want_off[] = {reinterpret_cast<const unsigned char*>(off.data())};
    const mc::SelfTestData wrong = {in, want_off, 1e-3, 1e-5, 0, "by hand"};
    CHECK(mc::self_test(ctx, info, wrong, report, sizeof report) == mc::kSelfTestFailed);
    CHECK(has(report, "mismatches 1/6  FAIL (first mismatch at [1,1]"));
    CHECK(has(report, "\nFAIL\n"));
    // Within a relative L2 limit it passes (the --fp16 tolerance).
    const mc::SelfTestData l2 = {in, want_off, 1e-3, 1e-5, 0.2, "by hand"};
    CHECK(mc::self_test(ctx, info, l2, report, sizeof report) == mc::kOk);
    // Without data, the weights alone; a short report is cut, NUL-terminated.
    const mc::SelfTestData none = {nullptr, nullptr, 0, 0, 0, "compiled with --no-self-test-data"};
    CHECK(mc::self_test(ctx, info, none, report, sizeof report) == mc::kOk);
    CHECK(has(report, "outputs: not checked (compiled with --no-self-test-data)"));
    char small[8];
    CHECK(mc::self_test(ctx, info, none, small, sizeof small) == mc::kOk);
    CHECK(std::string(small) == "self-te");
  }
  {
    // Weights on the device that are not the compiled ones (another blob linked in).
    const mc::ModelInfo info = model_info(weights_checksum() ^ 1);
    mc::Context ctx(info);
    REQUIRE(ctx.create(0, nullptr) == mc::kOk);
    CHECK(mc::self_test(ctx, info, data, report, sizeof report) == mc::kSelfTestFailed);
    CHECK(has(report, ": they differ\n"));
    CHECK(has(report, "\nFAIL\n"));
  }
  {
    // A context that was not created: an error, not a verdict.
    const mc::ModelInfo info = model_info(weights_checksum());
    mc::Context ctx(info);
    CHECK(mc::self_test(ctx, info, data, report, sizeof report) == mc::kBadArgument);
    CHECK(has(report, "error: model probe: the context was not created"));
  }
}

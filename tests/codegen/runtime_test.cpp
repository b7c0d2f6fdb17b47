// runtime_stub/runtime.h on the host emulation: create / run / run_host, the CUDA graph, the
// weights file checks, the compute-capability check, and errors that name what failed.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/emitter.h"  // before runtime.h: the emulation's macros must not reach it
#include "tests/codegen/sample_graph.h"
#include "tests/runtime_stub/hostile_files.h"

#include "runtime.h"

namespace {

// y[i] = x[i] * w[i] + 1, through the arena: t = x * w (arena), y = t + 1.
__global__ void mul_kernel(const float* x, const float* w, float* t, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) t[i] = x[i] * w[i];
}
__global__ void add_one_kernel(const float* t, float* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = t[i] + 1.0f;
}
__global__ void deadlock_kernel(float* y) {
  if (threadIdx.x == 0) return;  // thread 0 leaves; the others wait for it forever
  __syncthreads();
  y[threadIdx.x] = 1.0f;
}

constexpr int kN = 10;
int g_block = 32;  // the block size the enqueue uses (a test sets an invalid one)

int enqueue(mc::Status& mc_status, const mc::Bindings& b, cudaStream_t stream) {
  const float* x = static_cast<const float*>(b.inputs[0]);
  const float* w = reinterpret_cast<const float*>(b.weights + 256);
  float* t = reinterpret_cast<float*>(b.arena + 0);
  float* y = static_cast<float*>(b.outputs[0]);
  MC_LAUNCH(mul_kernel, dim3(1), dim3(g_block), 0, x, w, t, kN);
  MC_LAUNCH(add_one_kernel, dim3(1), dim3(g_block), 0, t, y, kN);
  return 0;
}

int enqueue_deadlock(mc::Status& mc_status, const mc::Bindings& b, cudaStream_t stream) {
  MC_LAUNCH(deadlock_kernel, dim3(1), dim3(32), 0, static_cast<float*>(b.outputs[0]));
  return 0;
}

const int64_t kShape[] = {kN};
const mc::TensorInfo kIn[] = {{"x", 1, 1, kShape, kN * 4}};
const mc::TensorInfo kOut[] = {{"y", 1, 1, kShape, kN * 4}};

std::vector<unsigned char> weights_blob() {
  std::vector<unsigned char> b(256 + kN * 4, 0);
  for (int i = 0; i < kN; ++i) {
    const float v = 0.5f * static_cast<float>(i);
    std::memcpy(b.data() + 256 + 4 * i, &v, 4);
  }
  return b;
}

// One profile (batch 1: the tensors' shapes as they are).
const mc::Profile kToyProfile[] = {{1, 256, enqueue, 1, 0, nullptr, 0, nullptr, 0, nullptr}};
const mc::Profile kDeadlockProfile[] = {{1, 256, enqueue_deadlock, 1, 0, nullptr, 0, nullptr, 0, nullptr}};

mc::ModelInfo model_info(const std::vector<unsigned char>& blob, bool embedded, const mc::Profile* profile = kToyProfile) {
  return mc::ModelInfo{"toy", "75_86", 86, 256, blob.size(), mc::checksum64(blob.data(), blob.size()),
                       embedded ? blob.data() : nullptr, "toy_weights.bin", 1, kIn, 1, kOut, 1, profile};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void check_outputs(const std::vector<float>& x, const std::vector<float>& y) {
  for (int i = 0; i < kN; ++i) CHECK(y[i] == x[i] * 0.5f * static_cast<float>(i) + 1.0f);
}

}  // namespace

TEST_CASE("runtime: create, run_host and run (graph replay, new pointers captured again)") {
  const std::vector<unsigned char> blob = weights_blob();
  const mc::ModelInfo info = model_info(blob, true);
  mc::Context ctx(info);
  REQUIRE_MESSAGE(ctx.create(0, nullptr) == mc::kOk, std::string(ctx.error()));
  CHECK(std::string(ctx.error()).empty());
  CHECK(ctx.create(0, nullptr) == mc::kBadArgument);  // twice

  std::vector<float> x(kN), y(kN, 0.0f);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<float>(i) - 3.0f;
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  for (int rep = 0; rep < 3; ++rep) {
    std::fill(y.begin(), y.end(), 0.0f);
    REQUIRE_MESSAGE(ctx.run_host(in, out) == mc::kOk, std::string(ctx.error()));
    check_outputs(x, y);
  }

  // Device pointers (emulated device memory), two sets: each set is captured once.
  float *dx[2], *dy[2];
  for (int s = 0; s < 2; ++s) {
    REQUIRE(cudaMalloc(&dx[s], kN * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&dy[s], kN * 4) == cudaSuccess);
  }
  cudaStream_t stream;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  for (int rep = 0; rep < 4; ++rep) {
    const int s = rep % 2;
    std::vector<float> xs(kN);
    for (int i = 0; i < kN; ++i) xs[i] = static_cast<float>(rep * 10 + i);
    REQUIRE(cudaMemcpy(dx[s], xs.data(), kN * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    const void* din[] = {dx[s]};
    void* dout[] = {dy[s]};
    REQUIRE_MESSAGE(ctx.run(din, dout, stream) == mc::kOk, std::string(ctx.error()));
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    std::vector<float> ys(kN);
    REQUIRE(cudaMemcpy(ys.data(), dy[s], kN * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    check_outputs(xs, ys);
  }
  cudaStreamDestroy(stream);
  for (int s = 0; s < 2; ++s) {
    cudaFree(dx[s]);
    cudaFree(dy[s]);
  }

  // Bad arguments name what is wrong.
  const void* null_in[] = {nullptr};
  CHECK(ctx.run_host(null_in, out) == mc::kBadArgument);
  CHECK(has(ctx.error(), "input 0 ('x') is a null pointer"));
  CHECK(ctx.run_host(in, nullptr) == mc::kBadArgument);
  CHECK(ctx.run_host(in, out) == mc::kOk);
  CHECK(std::string(ctx.error()).empty());  // the error is the last call's
}

TEST_CASE("runtime: bad devices, and calls on a context that was not created") {
  const std::vector<unsigned char> blob = weights_blob();
  const mc::ModelInfo info = model_info(blob, true);
  mc::Context ctx(info);
  CHECK(ctx.create(7, nullptr) == mc::kBadArgument);
  CHECK(has(ctx.error(), "device 7 does not exist"));
  std::vector<float> x(kN), y(kN);
  const void* in[] = {x.data()};
  void* out[] = {y.data()};
  CHECK(ctx.run_host(in, out) == mc::kBadArgument);
  CHECK(has(ctx.error(), "not created"));
}

TEST_CASE("runtime: the weights file is checked: missing, wrong size, wrong data") {
  namespace fs = std::filesystem;
  const std::vector<unsigned char> blob = weights_blob();
  const mc::ModelInfo info = model_info(blob, false);
  const fs::path dir = fs::temp_directory_path() / ("modelc_runtime_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "toy_weights.bin").string();
  auto write = [&](const std::vector<unsigned char>& bytes) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  };
  {
    mc::Context ctx(info);
    CHECK(ctx.create(0, path.c_str()) == mc::kWeightsFile);
    CHECK(has(ctx.error(), "the weights file " + path + ": cannot open: No such file or directory"));
  }
  {
    std::vector<unsigned char> shorter(blob.begin(), blob.end() - 4);
    write(shorter);
    mc::Context ctx(info);
    CHECK(ctx.create(0, path.c_str()) == mc::kWeightsFile);
    CHECK(has(ctx.error(), "holds " + std::to_string(blob.size() - 4) + " bytes"));
    std::vector<unsigned char> longer = blob;
    longer.push_back(1);
    write(longer);
    mc::Context ctx2(info);  // a context is created once: a new one
    CHECK(ctx2.create(0, path.c_str()) == mc::kWeightsFile);
    CHECK(has(ctx2.error(), "holds " + std::to_string(blob.size() + 1) + " bytes; model toy expects " +
                                std::to_string(blob.size())));
  }
  {
    // Not a regular file: refused at once (a FIFO would block, /dev/zero never end).
    const modelc::test::TempDir hostile_dir;
    const modelc::test::Deadline deadline(20);
    for (const modelc::test::HostileFile& h : modelc::test::hostile_files(hostile_dir, ".bin")) {
      mc::Context ctx(info);
      CHECK(ctx.create(0, h.path.c_str()) == mc::kWeightsFile);
      CHECK(has(ctx.error(), "the weights file " + h.path + ": " + h.kind));
    }
  }
  {
    std::vector<unsigned char> other = blob;
    other[260] ^= 1;
    write(other);
    mc::Context ctx(info);
    CHECK(ctx.create(0, path.c_str()) == mc::kWeightsFile);
    CHECK(has(ctx.error(), "checksum"));
  }
  {
    write(blob);
    mc::Context ctx(info);
    REQUIRE_MESSAGE(ctx.create(0, path.c_str()) == mc::kOk, std::string(ctx.error()));
    std::vector<float> x(kN, 2.0f), y(kN);
    const void* in[] = {x.data()};
    void* out[] = {y.data()};
    REQUIRE(ctx.run_host(in, out) == mc::kOk);
    check_outputs(x, y);
  }
  fs::remove_all(dir);
}

TEST_CASE("runtime: a failed launch names the expression, file and line; a kernel fault is an error") {
  const std::vector<unsigned char> blob = weights_blob();
  {
    g_block = 4096;  // more threads than a block may have
    const mc::ModelInfo info = model_info(blob, true);
    mc::Context ctx(info);
    CHECK(ctx.create(0, nullptr) == mc::kCudaError);
    g_block = 32;
    const std::string e = ctx.error();
    CHECK(has(e, "mc::launch_on(stream, mul_kernel"));
    CHECK(has(e, "runtime_test.cpp:"));
    CHECK(has(e, "cudaErrorInvalidConfiguration"));
  }
  {
    const mc::ModelInfo info = model_info(blob, true, kDeadlockProfile);
    mc::Context ctx(info);
    REQUIRE(ctx.create(0, nullptr) == mc::kOk);  // captured, not run yet
    std::vector<float> x(kN), y(kN);
    const void* in[] = {x.data()};
    void* out[] = {y.data()};
    CHECK(ctx.run_host(in, out) == mc::kCudaError);
    CHECK(has(ctx.error(), "fault"));
  }
}

TEST_CASE("runtime: which compute capabilities a binary runs on") {
  const std::vector<int> a = mc::parse_archs("75_90");
  CHECK(a == std::vector<int>{75, 90});
  CHECK(mc::parse_archs("100_120") == std::vector<int>{100, 120});
  CHECK(mc::arch_supported(7, 5, a, 90));
  CHECK_FALSE(mc::arch_supported(8, 6, a, 90));  // no sm_8x image, PTX needs 9.0+
  CHECK(mc::arch_supported(9, 0, a, 90));
  CHECK(mc::arch_supported(12, 0, a, 90));       // PTX runs on newer GPUs
  CHECK_FALSE(mc::arch_supported(12, 0, a, 0));  // without PTX it does not
  CHECK(mc::arch_supported(8, 9, {86}, 0));      // SASS: same major, newer minor
  CHECK_FALSE(mc::arch_supported(8, 0, {86}, 0));
  CHECK(mc::arch_list(a, 90) == "sm_75, sm_90 and PTX for compute_90");
  // sm_90a (the Hopper engine): its SASS runs on compute capability 9.0 only, and no PTX comes of it
  const std::vector<int> h = mc::parse_archs("80_90a");
  CHECK(h == std::vector<int>{80, 90 | mc::kArchSpecific});
  CHECK(mc::arch_supported(9, 0, h, 80));
  CHECK(mc::arch_supported(9, 0, {90 | mc::kArchSpecific}, 0));
  CHECK_FALSE(mc::arch_supported(10, 0, {90 | mc::kArchSpecific}, 0));  // not on a newer major
  CHECK_FALSE(mc::arch_supported(9, 1, {90 | mc::kArchSpecific}, 0));   // nor a newer minor
  CHECK(mc::arch_supported(10, 0, h, 80));                               // the PTX of sm_80 does
  CHECK(mc::arch_list(h, 80) == "sm_80, sm_90a and PTX for compute_80");
}

TEST_CASE("runtime: the checksum the emitter compiles in is the one create computes") {
  auto g = modelc::test::sample_graph();
  const modelc::Schedule s = modelc::lower(*g, modelc::test::sample_options());
  modelc::EmitOptions o;
  o.format = false;
  const std::string cu = modelc::render_model(s, o).at("sample.cu");
  const std::string blob = modelc::weights_blob(s);
  char want[32];
  std::snprintf(want, sizeof want, "0x%016llxull",
                static_cast<unsigned long long>(
                    mc::checksum64(reinterpret_cast<const unsigned char*>(blob.data()), blob.size())));
  CHECK(has(cu, want));
  // Words, then a partial word.
  const unsigned char bytes[11] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  uint64_t h = 1469598103934665603ull;
  h = (h ^ 0x0807060504030201ull) * 1099511628211ull;
  for (int i = 8; i < 11; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  CHECK(mc::checksum64(bytes, 11) == h);
}

// ---- batch profiles ------------------------------------------------------------------------------

namespace {

// A toy model with batch profiles 2 and 4: x[B, 3] (batched) and s[1] (not) -> y[B, 3] = x * s + 1
// (through the arena) and z[2]: the sum of every element of x the profile's kernels see (the
// padded rows included, so z shows what the padding holds) and the profile's batch (which one ran).
constexpr int kCols = 3;
__global__ void scale_kernel(const float* x, const float* s, float* t, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) t[i] = x[i] * s[0];
}
__global__ void sum_kernel(const float* x, float* z, int n) {
  if (threadIdx.x != 0) return;
  float sum = 0;
  for (int i = 0; i < n; ++i) sum += x[i];
  z[0] = sum;
  z[1] = static_cast<float>(n / kCols);
}
template <int kBatch>
int enqueue_batch(mc::Status& mc_status, const mc::Bindings& b, cudaStream_t stream) {
  const float* x = static_cast<const float*>(b.inputs[0]);
  const float* s = static_cast<const float*>(b.inputs[1]);
  float* t = reinterpret_cast<float*>(b.arena + 0);
  MC_LAUNCH(scale_kernel, dim3(1), dim3(32), 0, x, s, t, kBatch * kCols);
  MC_LAUNCH(add_one_kernel, dim3(1), dim3(32), 0, t, static_cast<float*>(b.outputs[0]), kBatch * kCols);
  MC_LAUNCH(sum_kernel, dim3(1), dim3(32), 0, x, static_cast<float*>(b.outputs[1]), kBatch * kCols);
  return 0;
}

const int64_t kShapeXB[] = {4, kCols};
const int64_t kShapeS[] = {1};
const int64_t kShapeZ[] = {2};
const mc::TensorInfo kInB[] = {{"x", 1, 2, kShapeXB, 4 * kCols * 4, 1}, {"s", 1, 1, kShapeS, 4, 0}};
const mc::TensorInfo kOutB[] = {{"y", 1, 2, kShapeXB, 4 * kCols * 4, 1}, {"z", 1, 1, kShapeZ, 8, 0}};
const mc::Profile kProfiles24[] = {{2, 2 * kCols * 4, enqueue_batch<2>, 1, 0, nullptr, 0, nullptr, 0, nullptr},
                                   {4, 4 * kCols * 4, enqueue_batch<4>, 1, 0, nullptr, 0, nullptr, 0, nullptr}};

mc::ModelInfo profiled_info() {
  return mc::ModelInfo{"toyb", "75_86", 86, 4 * kCols * 4, 0, mc::checksum64(nullptr, 0), nullptr, "toyb_weights.bin",
                       2, kInB, 2, kOutB, 2, kProfiles24};
}

}  // namespace

TEST_CASE("runtime: batch profiles: the smallest that holds the batch runs it, inputs padded with zeros, outputs trimmed") {
  const mc::ModelInfo info = profiled_info();
  CHECK(mc::profile_for(info, 0) == -1);
  CHECK(mc::profile_for(info, 1) == 0);
  CHECK(mc::profile_for(info, 2) == 0);
  CHECK(mc::profile_for(info, 3) == 1);
  CHECK(mc::profile_for(info, 4) == 1);
  CHECK(mc::profile_for(info, 5) == -1);
  CHECK(mc::bytes_at(info, kInB[0], 3) == 3 * kCols * 4);
  CHECK(mc::bytes_at(info, kInB[1], 3) == 4);

  mc::Context ctx(info);
  REQUIRE_MESSAGE(ctx.create(0, nullptr) == mc::kOk, std::string(ctx.error()));
  const float s = 2.0f;
  // Largest first: the context's own input buffer then holds 4 rows of ones; a smaller batch on the
  // same profile must see zeros in the rows it does not give.
  for (int64_t batch : {4, 3, 2, 1, 3}) {
    std::vector<float> x(static_cast<std::size_t>(batch * kCols), 1.0f), y(4 * kCols, -7.0f), z(2, -7.0f);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i % 5);
    const void* in[] = {x.data(), &s};
    void* out[] = {y.data(), z.data()};
    REQUIRE_MESSAGE(ctx.run_host_batch(batch, in, out) == mc::kOk, std::string(ctx.error()));
    float sum = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(y[i] == x[i] * s + 1.0f);
      sum += x[i];
    }
    for (std::size_t i = x.size(); i < y.size(); ++i) CHECK(y[i] == -7.0f);  // trimmed: nothing written past the batch
    CHECK(z[0] == sum);                        // the padded rows are zeros
    CHECK(z[1] == (batch <= 2 ? 2.0f : 4.0f));  // the smallest profile that holds the batch ran
  }

  // Device pointers: at a profile's own batch the caller's buffers, below it the context's.
  cudaStream_t stream;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  for (int64_t batch : {3, 4, 2, 1}) {
    float *dx, *ds, *dy, *dz;
    const std::size_t n = static_cast<std::size_t>(batch * kCols);
    REQUIRE(cudaMalloc(&dx, n * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&ds, 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&dy, n * 4) == cudaSuccess);
    REQUIRE(cudaMalloc(&dz, 8) == cudaSuccess);
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) - 2.0f;
    REQUIRE(cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice) == cudaSuccess);
    REQUIRE(cudaMemcpy(ds, &s, 4, cudaMemcpyHostToDevice) == cudaSuccess);
    const void* in[] = {dx, ds};
    void* out[] = {dy, dz};
    REQUIRE_MESSAGE(ctx.run_batch(batch, in, out, stream) == mc::kOk, std::string(ctx.error()));
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    std::vector<float> y(n), z(2);
    REQUIRE(cudaMemcpy(y.data(), dy, n * 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    REQUIRE(cudaMemcpy(z.data(), dz, 8, cudaMemcpyDeviceToHost) == cudaSuccess);
    float sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      CHECK(y[i] == x[i] * s + 1.0f);
      sum += x[i];
    }
    CHECK(z[0] == sum);
    CHECK(z[1] == (batch <= 2 ? 2.0f : 4.0f));
    for (float* p : {dx, ds, dy, dz}) cudaFree(p);
  }
  cudaStreamDestroy(stream);

  // Batches no profile holds.
  std::vector<float> x(5 * kCols), y(5 * kCols), z(2);
  const void* in[] = {x.data(), &s};
  void* out[] = {y.data(), z.data()};
  CHECK(ctx.run_host_batch(5, in, out) == mc::kBadArgument);
  CHECK(has(ctx.error(), "batch 5 is outside the batch profiles of model toyb (2, 4): it runs batches 1 to 4"));
  CHECK(ctx.run_host_batch(0, in, out) == mc::kBadArgument);
  CHECK(ctx.run_host(in, out) == mc::kOk);  // the largest profile's batch

  // A model with one profile runs its own batch only.
  const std::vector<unsigned char> blob = weights_blob();
  const mc::ModelInfo one = model_info(blob, true);
  mc::Context single(one);
  REQUIRE(single.create(0, nullptr) == mc::kOk);
  std::vector<float> x1(kN), y1(kN);
  const void* in1[] = {x1.data()};
  void* out1[] = {y1.data()};
  CHECK(single.run_host_batch(1, in1, out1) == mc::kOk);
  CHECK(single.run_host_batch(2, in1, out1) == mc::kBadArgument);
  CHECK(has(single.error(), "model toy runs batch 1 only, not 2"));
}

namespace {

// Profile::zeroed_*: scratch that must be zero when a run starts (the small-M products' split-K
// tickets). Profile 0 (batch 1) reads its tickets at arena bytes [256, 272) into z and leaves them
// zero, as the kernels do; profile 1 (batch 2) has an activation there and writes 7s over it.
__global__ void read_tickets_kernel(unsigned* tickets, float* z) {
  if (threadIdx.x != 0) return;
  z[0] = static_cast<float>(tickets[0] + tickets[1] + tickets[2] + tickets[3]);
  for (int i = 0; i < 4; ++i) tickets[i] = 0;
}
__global__ void scribble_kernel(unsigned* a, float* z) {
  if (threadIdx.x < 4) a[threadIdx.x] = 7u;
  if (threadIdx.x == 0) z[0] = -1.0f;
}
int enqueue_tickets(mc::Status& mc_status, const mc::Bindings& b, cudaStream_t stream) {
  MC_LAUNCH(read_tickets_kernel, dim3(1), dim3(32), 0, reinterpret_cast<unsigned*>(b.arena + 256),
            static_cast<float*>(b.outputs[0]));
  return 0;
}
int enqueue_scribble(mc::Status& mc_status, const mc::Bindings& b, cudaStream_t stream) {
  MC_LAUNCH(scribble_kernel, dim3(1), dim3(32), 0, reinterpret_cast<unsigned*>(b.arena + 256),
            static_cast<float*>(b.outputs[0]));
  return 0;
}

const int64_t kShapeT[] = {2};
const int64_t kShapeTz[] = {1};
const mc::TensorInfo kInT[] = {{"x", 1, 1, kShapeT, 8, 1}};
const mc::TensorInfo kOutT[] = {{"z", 1, 1, kShapeTz, 4, 0}};
const mc::Profile kTicketProfiles[] = {{1, 512, enqueue_tickets, 1, 0, nullptr, 0, nullptr, 0, nullptr, 256, 16},
                                       {2, 512, enqueue_scribble, 1, 0, nullptr, 0, nullptr, 0, nullptr}};

}  // namespace

TEST_CASE("runtime: a profile's zeroed scratch is zero at create and again after another profile's run") {
  const mc::ModelInfo info{"toyt", "75_86", 86, 512, 0, mc::checksum64(nullptr, 0), nullptr, "toyt_weights.bin",
                           1, kInT, 1, kOutT, 2, kTicketProfiles};
  mc::Context ctx(info);
  REQUIRE_MESSAGE(ctx.create(0, nullptr) == mc::kOk, std::string(ctx.error()));
  std::vector<float> x(2, 0.0f), z(1, -9.0f);
  const void* in[] = {x.data()};
  void* out[] = {z.data()};
  // Profile 0, profile 0 (its graph replayed), profile 1 scribbling over the tickets, profile 0.
  for (int64_t batch : {1, 1, 2, 1, 2, 2, 1}) {
    CAPTURE(batch);
    REQUIRE_MESSAGE(ctx.run_host_batch(batch, in, out) == mc::kOk, std::string(ctx.error()));
    CHECK(z[0] == (batch == 1 ? 0.0f : -1.0f));
  }
  // The same through the caller's stream (device pointers: the graph captured for them).
  float *dx, *dz;
  REQUIRE(cudaMalloc(&dx, 8) == cudaSuccess);
  REQUIRE(cudaMalloc(&dz, 4) == cudaSuccess);
  cudaStream_t stream;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  for (int64_t batch : {2, 1}) {
    const void* din[] = {dx};
    void* dout[] = {dz};
    REQUIRE_MESSAGE(ctx.run_batch(batch, din, dout, stream) == mc::kOk, std::string(ctx.error()));
    REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
    float got = -9.0f;
    REQUIRE(cudaMemcpy(&got, dz, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(got == (batch == 1 ? 0.0f : -1.0f));
  }
  cudaStreamDestroy(stream);
  cudaFree(dx);
  cudaFree(dz);
}

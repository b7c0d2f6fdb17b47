// runtime_stub/runtime.h — the tiny runtime of a generated model (header only, copied into
// every output folder as runtime/runtime.h).
//
// NAME.cu describes its model in one mc::ModelInfo (tensors, arena and weights sizes, the archs
// compiled, and per batch profile the function that enqueues its kernels) and keeps one
// mc::Context per NAME_ctx:
//   create    checks that a device exists, that its compute capability has an image in the binary,
//             and that its memory suffices; uploads the weights; allocates the arena (the largest
//             profile's; each profile's zeroed scratch zeroed: Profile::zeroed_*) and the context's own input/output buffers (at the largest batch), and the
//             model's other streams and events (a model whose branches run concurrently:
//             Profile::num_streams); captures each profile's run, with its fork to those streams and
//             their join back, into a CUDA graph (first raising the shared memory limit of the
//             kernels that need more than 48 KiB: Profile::prepare).
//   run_batch replays the graph of the smallest profile whose batch is at least `batch` on the
//             caller's stream (device pointers; enqueues only). At a profile's own batch it runs on
//             the caller's buffers: the graph holds the pointers it was captured with, so new
//             input/output pointers are captured once more (keep the same buffers between runs to
//             only replay). Below it, the inputs are copied into the context's buffers and padded
//             with zeros along their first dim, and the outputs' first `batch` items copied back
//             (TensorInfo::batched says which tensors hold the batch).
//   run       run_batch at the largest profile's batch (a model with one profile: its batch).
//   run_host_batch / run_host  copy host inputs in (padded), replay, copy the outputs out, wait.
// Every CUDA call is checked (MC_CHECK): the context's error string then names the expression,
// the file and line, and CUDA's message. The arena is the context's: one context runs one
// inference at a time (use a context per concurrent stream). No global state.
//
// In the generated code, functions that use MC_CHECK / MC_LAUNCH return int (0 = ok) and have
// `mc::Status& mc_status` in scope; MC_LAUNCH also needs `stream`.
#pragma once

// Standard headers before device.h: the host emulation's qualifier macros must not reach them.
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>
#if defined(__linux__)
#include <unistd.h>
#endif

#include "regular_file.h"  // standard and POSIX headers only

#include "device.h"

namespace mc {

/// Return codes of the C API.
enum Code : int {
  kOk = 0,
  kCudaError = 1,
  kBadArgument = 2,
  kNoDevice = 3,     ///< no device, or its compute capability has no image in the binary
  kOutOfMemory = 4,
  kWeightsFile = 5,
  kSelfTestFailed = 6,  ///< NAME_self_test: the weights or an output differ from what was compiled
};

/// \brief The error state of a context: the code and message of the last failure.
struct Status {
  int code = kOk;
  std::string message;
  int fail(int c, std::string m) {
    code = c;
    message = std::move(m);
    return c;
  }
  void clear() {
    code = kOk;
    message.clear();
  }
};

/// \brief Records a failed CUDA call: "EXPR failed at FILE:LINE: cudaErrorX: message".
inline int cuda_fail(Status& s, cudaError_t e, const char* expr, const char* file, int line) {
  int code = kCudaError;
  if (e == cudaErrorMemoryAllocation) code = kOutOfMemory;
  if (e == cudaErrorNoDevice) code = kNoDevice;
#if defined(__CUDACC__)
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoKernelImageForDevice) code = kNoDevice;
#endif
  const char* base = std::strrchr(file, '/');
  return s.fail(code, std::string(expr) + " failed at " + (base ? base + 1 : file) + ":" + std::to_string(line) +
                          ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace mc

/// \brief Checks a CUDA runtime call; on failure records it in mc_status and returns its code.
#define MC_CHECK(expr)                                                                \
  do {                                                                                \
    const cudaError_t mc_check_error_ = (expr);                                       \
    if (mc_check_error_ != cudaSuccess) {                                             \
      return ::mc::cuda_fail(mc_status, mc_check_error_, #expr, __FILE__, __LINE__);  \
    }                                                                                 \
  } while (0)

/// \brief MC_LAUNCH(kernel, grid, block, dynamic_smem_bytes, args...): launches on `stream`
/// through mc::launch (never <<<>>>), checked like MC_CHECK. The kernel may be a template-id
/// with commas: everything is one macro argument list.
#define MC_LAUNCH(...) MC_CHECK(::mc::launch_on(stream, __VA_ARGS__))
/// \brief MC_LAUNCH on stream `s` (a kernel on one of the context's other streams).
#define MC_LAUNCH_ON(s, ...) MC_CHECK(::mc::launch_on(s, __VA_ARGS__))

/// \brief Before and after the launches of kernel `k` (its index in the profile) on stream `s`, in
/// an enqueue function: the run's probe sees the kernel (mc::Probe); nothing happens without one,
/// as in every run the CUDA graph captured.
#define MC_KERNEL_BEGIN(k, s) MC_KERNEL_PROBE_(begin, k, s)
#define MC_KERNEL_END(k, s) MC_KERNEL_PROBE_(end, k, s)
#define MC_KERNEL_PROBE_(event, k, s)                                                             \
  do {                                                                                            \
    if (mc_bindings.probe) {                                                                      \
      if (const int mc_probe_error_ = mc_bindings.probe->event(mc_status, k, s)) return mc_probe_error_; \
    }                                                                                             \
  } while (0)

namespace mc {

/// mc::launch with the stream first (what MC_LAUNCH expands to).
template <class... KArgs, class... Args>
inline cudaError_t launch_on(cudaStream_t stream, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                             size_t dynamic_smem_bytes, Args&&... args) {
  return launch(kernel, grid, block, dynamic_smem_bytes, stream, std::forward<Args>(args)...);
}

/// \brief Sees a run kernel by kernel: the enqueue functions call begin before a kernel's launches
/// and end after them (MC_KERNEL_BEGIN / MC_KERNEL_END, on the kernel's stream) when
/// Bindings::probe is set. Only the runs outside the CUDA graph set it (Context::time_kernels and
/// run_taps): a captured graph has none of it, so the normal run pays nothing for it. `kernel` is
/// the kernel's index in its profile (Profile::kernel_ids).
class Probe {
 public:
  virtual ~Probe() = default;
  virtual int begin(Status& mc_status, int kernel, cudaStream_t stream) = 0;
  virtual int end(Status& mc_status, int kernel, cudaStream_t stream) = 0;
};

/// \brief The buffers a run reads and writes (what the emitted code's pointers are built from).
struct Bindings {
  unsigned char* arena;
  const unsigned char* weights;
  const void* const* inputs;
  void* const* outputs;
  /// The device's SM number (major * 10 + minor, e.g. 75, 90): a kernel planned per --arch
  /// launches the tactic of the newest planned arch not above it.
  int sm = 0;
  /// Several streams (ModelInfo::num_streams > 1): streams[0] is the stream the run is enqueued
  /// on, streams[1..] the context's own; events[] the context's events (disable-timing).
  const cudaStream_t* streams = nullptr;
  const cudaEvent_t* events = nullptr;
  /// A run kernel by kernel (outside the CUDA graph): who sees each kernel; null otherwise.
  Probe* probe = nullptr;
};

/// Enqueues every kernel of the model on `stream` (NAME.cu; the parts when split).
using EnqueueFn = int (*)(Status& mc_status, const Bindings& bindings, cudaStream_t stream);

/// Prepares the model's kernels on the current device before the first capture (raises the
/// dynamic shared memory limit of the kernels that launch with more than 48 KiB).
using PrepareFn = int (*)(Status& mc_status);

/// \brief One model input or output (its shape and bytes at the largest profile's batch).
struct TensorInfo {
  const char* name;
  int dtype;             ///< ONNX TensorProto code
  int rank;
  const int64_t* shape;
  size_t bytes;
  /// 1: the first dim is the batch times a constant (batch profiles): at batch b it is
  /// shape[0] / B * b and the tensor bytes / B * b, B the largest profile's batch. 0: the same
  /// shape at every batch (and every tensor of a model with one profile).
  int batched = 0;
};

/// \brief Where a tap's tensor lies when its kernel has run: in the arena, or in a model output.
enum TapSpace : int { kTapArena = 0, kTapOutput = 1 };

/// \brief A tensor a kernel writes (a tap: Context::run_taps copies it after the kernel), as the
/// graph's value: its name, dtype and shape, and where the kernel writes its elements (a strided
/// view: channels-last and padded channels, a slice of an elided Concat's buffer), so the copy is
/// brought back to the graph's dense layout.
struct TapInfo {
  int kernel;             ///< the writer's index in the profile
  const char* name;       ///< the graph value
  int dtype;              ///< ONNX TensorProto code
  int rank;
  const int64_t* shape;   ///< the value's shape (rank dims)
  const int64_t* strides; ///< elements between neighbours along each dim, as stored
  int space;              ///< TapSpace
  int index;              ///< the output's index (kTapOutput)
  size_t offset;          ///< bytes from the start of the arena / output
};

/// \brief One batch profile: the model's kernels planned for one batch size (--batch 1,8,32 gives
/// three), with its own arena plan, streams and events.
struct Profile {
  int64_t batch;
  size_t arena_bytes;     ///< this profile's plan (the context's arena is ModelInfo::arena_bytes)
  EnqueueFn enqueue;
  int num_streams;        ///< the caller's and num_streams - 1 of the context's own (schedule/streams.h)
  int num_events;
  PrepareFn prepare;      ///< null when no kernel needs preparing
  int num_kernels;        ///< the kernels enqueue runs, in order
  const char* const* kernel_ids;  ///< their ids (report.json's "id": "k7"), num_kernels of them
  int num_taps;           ///< the tensors the kernels write, in the order they are written
  const TapInfo* taps;
  /// Arena bytes [zeroed_offset, zeroed_offset + zeroed_bytes): scratch that must be zero when a
  /// run starts and that every run leaves zero (the small-M products' split-K tickets). Zeroed at
  /// create; another profile's run may write there (the profiles share the arena), so a run of
  /// this profile after another's zeroes it again first (Context::enter). 0 bytes: none.
  size_t zeroed_offset = 0;
  size_t zeroed_bytes = 0;
};

/// \brief Everything the runtime needs to know about the model (one static instance in NAME.cu).
struct ModelInfo {
  const char* name;
  const char* archs;                      ///< SASS images in the binary: "75_86" (ascending, '_' between)
  int ptx_arch;                           ///< PTX embedded for this arch (0: none)
  size_t arena_bytes;                     ///< the largest of the profiles' arenas: one serves them all
  size_t weights_bytes;
  uint64_t weights_checksum;              ///< checksum64() of the blob (checked when read from a file)
  const unsigned char* embedded_weights;  ///< null when the weights are read from a file
  const char* weights_file;               ///< default file name ("NAME_weights.bin"), next to the executable
  int num_inputs;
  const TensorInfo* inputs;
  int num_outputs;
  const TensorInfo* outputs;
  int num_profiles;                       ///< at least 1
  const Profile* profiles;                ///< ascending batch
};

/// \brief The profile a run of `batch` items uses: the smallest whose batch is at least `batch`;
/// -1 when none is (batch < 1, or above the largest profile's). A model with one profile runs its
/// own batch only: nothing tells which of its tensors hold the batch.
inline int profile_for(const ModelInfo& m, int64_t batch) {
  if (batch < 1 || m.num_profiles < 1) return -1;
  if (m.num_profiles == 1) return batch == m.profiles[0].batch ? 0 : -1;
  for (int p = 0; p < m.num_profiles; ++p) {
    if (m.profiles[p].batch >= batch) return p;
  }
  return -1;
}

/// \brief The bytes of tensor `t` at `batch` items (batch <= the largest profile's).
inline size_t bytes_at(const ModelInfo& m, const TensorInfo& t, int64_t batch) {
  if (!t.batched) return t.bytes;
  const int64_t largest = m.profiles[m.num_profiles - 1].batch;
  return t.bytes / static_cast<size_t>(largest) * static_cast<size_t>(batch);
}

/// "1, 8, 32": the profiles' batches.
inline std::string profile_list(const ModelInfo& m) {
  std::string s;
  for (int p = 0; p < m.num_profiles; ++p) s += (p ? ", " : "") + std::to_string(m.profiles[p].batch);
  return s;
}

/// \brief The bytes of one element of ONNX dtype `code` (0 for a code the runtime does not know).
inline size_t dtype_bytes(int code) {
  switch (code) {
    case 1: case 6: case 12: return 4;   // float32, int32, uint32
    case 2: case 3: case 9: return 1;    // uint8, int8, bool
    case 4: case 5: case 10: case 16: return 2;  // uint16, int16, float16, bfloat16
    case 7: case 11: case 13: return 8;  // int64, float64, uint64
    default: return 0;
  }
}

/// \brief Copies a strided view of device memory (its first element at `device`; `shape` and
/// `strides` in elements of `esize` bytes) into `out`, densely, row-major over the shape: the stretch
/// of memory the strides span is read once into `staging`, then gathered. The taps' copy and the
/// tuning driver's (runtime/tune.h) read of a candidate's outputs.
inline cudaError_t copy_view_to_host(const unsigned char* device, int rank, const int64_t* shape, const int64_t* strides,
                                     size_t esize, std::vector<unsigned char>& staging, unsigned char* out) {
  size_t n = 1, span = 1;  // elements; elements from the first to the last one the strides reach
  for (int d = 0; d < rank; ++d) {
    n *= static_cast<size_t>(shape[d]);
    span += static_cast<size_t>(shape[d] - 1) * static_cast<size_t>(strides[d]);
  }
  if (n == 0) return cudaSuccess;
  staging.resize(span * esize);
  const cudaError_t e = cudaMemcpy(staging.data(), device, span * esize, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return e;
  std::vector<int64_t> at(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < n; ++i) {  // row-major over the shape, each element from its stride
    size_t from = 0;
    for (int d = 0; d < rank; ++d) from += static_cast<size_t>(at[static_cast<size_t>(d)]) * static_cast<size_t>(strides[d]);
    std::memcpy(out + i * esize, staging.data() + from * esize, esize);
    for (int d = rank - 1; d >= 0 && ++at[static_cast<size_t>(d)] == shape[d]; --d) at[static_cast<size_t>(d)] = 0;
  }
  return cudaSuccess;
}

/// \brief The elements of a tap (the product of its dims).
inline size_t tap_elements(const TapInfo& t) {
  size_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= static_cast<size_t>(t.shape[d]);
  return n;
}

/// \brief The weights checksum: FNV-1a 64 over little-endian 64-bit words (then over the
/// bytes of a last partial word). modelc's emitter computes the same.
inline uint64_t checksum64(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | p[i + static_cast<size_t>(b)];
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/// \brief Marks an arch-specific image in parse_archs' numbers: 90 | kArchSpecific is sm_90a, whose
/// SASS (wgmma, setmaxnreg: the Hopper engine) runs on compute capability 9.0 only.
constexpr int kArchSpecific = 1 << 16;

/// "75_86" -> {75, 86}; "75_90a" -> {75, 90 | kArchSpecific}.
inline std::vector<int> parse_archs(const char* archs) {
  std::vector<int> r;
  int v = -1;
  for (const char* p = archs; ; ++p) {
    if (*p >= '0' && *p <= '9') {
      v = (v < 0 ? 0 : v * 10) + (*p - '0');
    } else if (*p == 'a' && v >= 0) {
      v |= kArchSpecific;
    } else {
      if (v >= 0) r.push_back(v);
      v = -1;
      if (!*p) break;
    }
  }
  return r;
}

/// "sm_75, sm_86" (+ " and PTX for compute_86"); an arch-specific image is "sm_90a".
inline std::string arch_list(const std::vector<int>& archs, int ptx_arch) {
  std::string s;
  for (size_t i = 0; i < archs.size(); ++i)
    s += (i ? ", sm_" : "sm_") + std::to_string(archs[i] & ~kArchSpecific) + ((archs[i] & kArchSpecific) ? "a" : "");
  if (ptx_arch > 0) s += " and PTX for compute_" + std::to_string(ptx_arch);
  return s;
}

/// \brief Whether a device of compute capability major.minor runs a binary with SASS for `archs`
/// and PTX for `ptx_arch`: SASS runs on the same major version and an equal or newer minor (an
/// arch-specific image: on its own compute capability only); PTX is compiled by the driver for its
/// own arch or any newer one.
inline bool arch_supported(int major, int minor, const std::vector<int>& archs, int ptx_arch) {
  for (int a : archs) {
    const int sm = a & ~kArchSpecific;
    if ((a & kArchSpecific) ? sm == major * 10 + minor : sm / 10 == major && sm % 10 <= minor) return true;
  }
  return ptx_arch > 0 && major * 10 + minor >= ptx_arch;
}

/// Human-readable bytes: "12.3 MiB".
inline std::string human_bytes(size_t b) {
  char buf[32];
  if (b < 1024) {
    std::snprintf(buf, sizeof buf, "%zu B", b);
  } else if (b < (size_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024.0);
  } else if (b < (size_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0));
  }
  return buf;
}

/// The folder of the running executable ("" when it cannot be found).
inline std::string executable_dir() {
#if defined(__linux__)
  std::vector<char> buf(4096);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return "";
  std::string path(buf.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
#else
  return "";
#endif
}

/// \brief Calls f() (returning an int code) and turns an exception into an error code: a kernel
/// fault in the host emulation, or host memory exhaustion. The C API never throws.
template <class F>
inline int guarded(Status& s, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    s.code = kOutOfMemory;
    try {
      s.message = "out of host memory";
    } catch (...) {
    }
    return kOutOfMemory;
  } catch (const std::exception& e) {
    try {
      s.fail(kCudaError, std::string("fault: ") + e.what());
    } catch (...) {
      s.code = kCudaError;
    }
    return kCudaError;
  } catch (...) {
    s.code = kCudaError;
    return kCudaError;
  }
}

/// \brief A Probe that times each kernel of a run: two CUDA events around its launches on its
/// stream, waited for at its end, so the next kernel starts on an idle device (each time is the
/// kernel's own launches). Context::time_kernels' and the tuning driver's (runtime/tune.h).
class KernelTimer : public Probe {
 public:
  ~KernelTimer() override {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
  }
  int init(Status& mc_status, int kernels) {
    MC_CHECK(cudaEventCreate(&start_));
    MC_CHECK(cudaEventCreate(&stop_));
    us_.assign(static_cast<size_t>(kernels), {});
    return kOk;
  }
  int begin(Status& mc_status, int, cudaStream_t stream) override {
    MC_CHECK(cudaEventRecord(start_, stream));
    return kOk;
  }
  int end(Status& mc_status, int kernel, cudaStream_t stream) override {
    MC_CHECK(cudaEventRecord(stop_, stream));
    MC_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    MC_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    if (kernel >= 0 && static_cast<size_t>(kernel) < us_.size()) us_[static_cast<size_t>(kernel)].push_back(ms * 1000.0f);
    return kOk;
  }
  // Kernel k's median (the mean of the middle two of an even count; 0 when it never ran).
  float median(size_t k) const {
    std::vector<float> t = us_[k];
    if (t.empty()) return 0;
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    return n % 2 ? t[n / 2] : 0.5f * (t[n / 2 - 1] + t[n / 2]);
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::vector<std::vector<float>> us_;
};

/// \brief A generated model's state on one device: weights, arena, I/O buffers, stream, graphs.
class Context {
 public:
  explicit Context(const ModelInfo& model) : model_(model) {}
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() { release(); }

  const Status& status() const { return status_; }
  Status& status() { return status_; }
  const char* error() const { return status_.message.c_str(); }

  /// \brief Sets the context up on `device`; the weights come from `weights_path` when the
  /// model has no embedded weights (null: the default file next to the executable).
  int create(int device, const char* weights_path) {
    status_.clear();
    if (device_ >= 0) return status_.fail(kBadArgument, "create was called on this context already (destroy it, create another)");
    return guarded(status_, [&] {
      const int r = create_impl(device, weights_path);
      ready_ = r == kOk;
      return r;
    });
  }

  /// The largest profile's batch (what run and run_host run).
  int64_t max_batch() const { return model_.profiles[model_.num_profiles - 1].batch; }

  int run(const void* const* inputs, void* const* outputs, cudaStream_t stream) {
    return run_batch(max_batch(), inputs, outputs, stream);
  }

  int run_host(const void* const* inputs, void* const* outputs) { return run_host_batch(max_batch(), inputs, outputs); }

  int run_batch(int64_t batch, const void* const* inputs, void* const* outputs, cudaStream_t stream) {
    status_.clear();
    return guarded(status_, [&] { return run_impl(batch, inputs, outputs, stream); });
  }

  int run_host_batch(int64_t batch, const void* const* inputs, void* const* outputs) {
    status_.clear();
    return guarded(status_, [&] { return run_host_impl(batch, inputs, outputs); });
  }

  /// \brief One inference on host pointers kernel by kernel outside the graph (as time_kernels),
  /// copying each tap of the profile that runs `batch` items (Profile::taps) into taps[t] right
  /// after its kernel, densely in the graph's layout (null: not copied); the outputs as run_host_batch.
  int run_taps(int64_t batch, const void* const* inputs, void* const* outputs, void* const* taps) {
    status_.clear();
    return guarded(status_, [&] { return run_taps_impl(batch, inputs, outputs, taps); });
  }

  /// \brief The checksum (checksum64) of the weights on the device, as the kernels read them.
  int device_weights_checksum(uint64_t* sum) {
    status_.clear();
    return guarded(status_, [&] { return device_weights_checksum_impl(sum); });
  }

  /// \brief Times each kernel of the profile that runs `batch` items: one untimed run through the
  /// graph, then `runs` runs outside it on the context's own buffers (host `inputs` copied in),
  /// kernel by kernel (KernelTimer); us[k] gets kernel k's median in microseconds.
  int time_kernels(int64_t batch, const void* const* inputs, int runs, float* us) {
    status_.clear();
    return guarded(status_, [&] { return time_kernels_impl(batch, inputs, runs, us); });
  }

 private:
  /// Makes `device` current for the scope and restores the caller's device after.
  class DeviceScope {
   public:
    DeviceScope() = default;
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;
    cudaError_t enter(int device) {
      cudaError_t e = cudaGetDevice(&previous_);
      if (e != cudaSuccess) return e;
      if (previous_ == device) return cudaSuccess;
      e = cudaSetDevice(device);
      if (e == cudaSuccess) changed_ = true;
      return e;
    }
    ~DeviceScope() {
      if (changed_) cudaSetDevice(previous_);
    }

   private:
    int previous_ = 0;
    bool changed_ = false;
  };

  int create_impl(int device, const char* weights_path) {
    Status& mc_status = status_;
    int count = 0;
    const cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count == 0) {
      return status_.fail(kNoDevice, std::string("no CUDA device found") +
                                         (ce != cudaSuccess ? std::string(" (cudaGetDeviceCount: ") +
                                                                  cudaGetErrorName(ce) + ": " +
                                                                  cudaGetErrorString(ce) + ")"
                                                            : std::string()));
    }
    if (device < 0 || device >= count) {
      return status_.fail(kBadArgument, "device " + std::to_string(device) + " does not exist (" +
                                            std::to_string(count) + " device" + (count == 1 ? "" : "s") +
                                            ": 0.." + std::to_string(count - 1) + ")");
    }
    DeviceScope scope;
    MC_CHECK(scope.enter(device));
    device_ = device;
    cudaDeviceProp prop;
    MC_CHECK(cudaGetDeviceProperties(&prop, device));
    sm_ = prop.major * 10 + prop.minor;
#if !defined(MODELC_HOST_EMULATION)
    // The emulation runs whatever the archs; on a GPU the binary needs an image for the device.
    const std::vector<int> archs = parse_archs(model_.archs);
    if (!arch_supported(prop.major, prop.minor, archs, model_.ptx_arch)) {
      return status_.fail(kNoDevice,
                          "device " + std::to_string(device) + " (" + prop.name + ") has compute capability " +
                              std::to_string(prop.major) + "." + std::to_string(prop.minor) +
                              ", and this binary has images for " +
                              arch_list(archs, model_.ptx_arch) +
                              " only: rebuild it for sm_" + std::to_string(prop.major * 10 + prop.minor) +
                              " (modelc --arch sm_" + std::to_string(prop.major * 10 + prop.minor) +
                              ", or make ARCHS=" + std::to_string(prop.major * 10 + prop.minor) + ")");
    }
#endif
    if (model_.num_profiles < 1 || !model_.profiles) return status_.fail(kBadArgument, "the model has no profiles");
    size_t io_bytes = 0;
    for (int i = 0; i < model_.num_inputs; ++i) io_bytes += round_up(model_.inputs[i].bytes);
    for (int i = 0; i < model_.num_outputs; ++i) io_bytes += round_up(model_.outputs[i].bytes);
    const size_t need = model_.weights_bytes + model_.arena_bytes + io_bytes;
    size_t free_bytes = 0, total_bytes = 0;
    MC_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (need > free_bytes) {
      return status_.fail(kOutOfMemory, "model " + std::string(model_.name) + " needs " + human_bytes(need) +
                                            " of device memory (weights " + human_bytes(model_.weights_bytes) +
                                            ", activation arena " + human_bytes(model_.arena_bytes) +
                                            ", inputs and outputs " + human_bytes(io_bytes) + "); device " +
                                            std::to_string(device) + " (" + prop.name + ") has " +
                                            human_bytes(free_bytes) + " free of " + human_bytes(total_bytes));
    }

    // Weights: from the binary, or from the file (checked against the size and checksum compiled in).
    std::vector<unsigned char> file_weights;
    const unsigned char* host_weights = model_.embedded_weights;
    if (!host_weights && model_.weights_bytes > 0) {
      const int r = read_weights(weights_path, file_weights);
      if (r != kOk) return r;
      host_weights = file_weights.data();
    }
    if (model_.weights_bytes > 0) {
      MC_CHECK(cudaMalloc(&weights_, model_.weights_bytes));
      MC_CHECK(cudaMemcpy(weights_, host_weights, model_.weights_bytes, cudaMemcpyHostToDevice));
    }
    if (model_.arena_bytes > 0) MC_CHECK(cudaMalloc(&arena_, model_.arena_bytes));
    for (int p = 0; p < model_.num_profiles; ++p) {
      const Profile& profile = model_.profiles[p];
      if (profile.zeroed_bytes > 0) {
        MC_CHECK(cudaMemset(static_cast<unsigned char*>(arena_) + profile.zeroed_offset, 0, profile.zeroed_bytes));
      }
    }
    if (io_bytes > 0) MC_CHECK(cudaMalloc(&io_, io_bytes));
    size_t offset = 0;
    for (int i = 0; i < model_.num_inputs; ++i) {
      own_inputs_.push_back(static_cast<unsigned char*>(io_) + offset);
      offset += round_up(model_.inputs[i].bytes);
    }
    for (int i = 0; i < model_.num_outputs; ++i) {
      own_outputs_.push_back(static_cast<unsigned char*>(io_) + offset);
      offset += round_up(model_.outputs[i].bytes);
    }
    MC_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MC_CHECK(cudaEventCreateWithFlags(&user_done_, cudaEventDisableTiming));
    // The streams and events of the profile that needs the most (the others use the first ones).
    int num_streams = 1, num_events = 0;
    for (int p = 0; p < model_.num_profiles; ++p) {
      num_streams = std::max(num_streams, model_.profiles[p].num_streams);
      num_events = std::max(num_events, model_.profiles[p].num_events);
    }
    streams_.assign(static_cast<size_t>(num_streams), nullptr);
    for (size_t i = 1; i < streams_.size(); ++i) MC_CHECK(cudaStreamCreateWithFlags(&streams_[i], cudaStreamNonBlocking));
    events_.assign(static_cast<size_t>(num_events), nullptr);
    for (cudaEvent_t& e : events_) MC_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    own_graphs_.assign(static_cast<size_t>(model_.num_profiles), nullptr);
    for (int p = 0; p < model_.num_profiles; ++p) {
      if (model_.profiles[p].prepare) {
        const int r = model_.profiles[p].prepare(status_);
        if (r != kOk) return r;
      }
      const int r = capture(p, own_inputs_.data(), own_outputs_.data(), &own_graphs_[static_cast<size_t>(p)]);
      if (r != kOk) return r;
    }
    MC_CHECK(cudaStreamSynchronize(stream_));
    return kOk;
  }

  int read_weights(const char* weights_path, std::vector<unsigned char>& data) {
    std::string path;
    if (weights_path && *weights_path) {
      path = weights_path;
    } else {
      const std::string dir = executable_dir();
      path = (dir.empty() ? std::string() : dir + "/") + model_.weights_file;
    }
    // Only a regular file of exactly the weights' size is read (regular_file.h: a FIFO or a device
    // is refused at once, a larger file before a byte of it is read).
    auto refuse = [&](const std::string& why) {
      return status_.fail(kWeightsFile, "the weights file " + path + ": " + why + " (pass its path to " +
                                            model_.name + "_create_with_weights, or put " + model_.weights_file +
                                            " next to the executable)");
    };
    mc_io::File f;
    std::string why = mc_io::open_regular(path, f);
    if (!why.empty()) return refuse(why);
    if (f.size != model_.weights_bytes) {
      return status_.fail(kWeightsFile, "the weights file " + path + " holds " + std::to_string(f.size) +
                                            " bytes; model " + model_.name + " expects " +
                                            std::to_string(model_.weights_bytes) +
                                            " (a weights file of another model or another compile?)");
    }
    data.resize(model_.weights_bytes);
    why = mc_io::read_exactly(f, data.data(), data.size());
    if (!why.empty()) return status_.fail(kWeightsFile, "the weights file " + path + ": " + why);
    if (checksum64(data.data(), data.size()) != model_.weights_checksum) {
      return status_.fail(kWeightsFile, "the weights file " + path + " has the right size but not the weights " +
                                            "model " + model_.name + " was compiled with (checksum differs)");
    }
    return kOk;
  }

  // Records profile p's kernels, with these input/output pointers, into a CUDA graph.
  int capture(int p, const void* const* inputs, void* const* outputs, cudaGraphExec_t* exec) {
    Status& mc_status = status_;
    streams_[0] = stream_;  // the stream the capture runs on
    const Bindings b{static_cast<unsigned char*>(arena_), static_cast<const unsigned char*>(weights_), inputs,
                     outputs, sm_, streams_.data(), events_.data()};
    MC_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    int r = kOk;
    try {
      r = model_.profiles[p].enqueue(status_, b, stream_);
    } catch (...) {
      cudaGraph_t g = nullptr;
      if (cudaStreamEndCapture(stream_, &g) == cudaSuccess && g) cudaGraphDestroy(g);
      throw;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t e = cudaStreamEndCapture(stream_, &graph);
    if (r != kOk) {
      if (e == cudaSuccess && graph) cudaGraphDestroy(graph);
      return r;
    }
    MC_CHECK(e);
#if defined(MODELC_HOST_EMULATION) || CUDART_VERSION >= 12000
    const cudaError_t ie = cudaGraphInstantiate(exec, graph, 0ULL);
#else
    const cudaError_t ie = cudaGraphInstantiate(exec, graph, nullptr, nullptr, 0);
#endif
    cudaGraphDestroy(graph);
    MC_CHECK(ie);
    return kOk;
  }

  int check_ready() {
    if (ready_) return kOk;
    return status_.fail(kBadArgument, std::string("model ") + model_.name +
                                          ": the context was not created successfully (see the error of create)");
  }

  // The profile for `batch` (profile_for), or a failure saying which batches the model runs.
  int choose_profile(int64_t batch, int* profile) {
    *profile = profile_for(model_, batch);
    if (*profile >= 0) return kOk;
    const std::string name = model_.name;
    if (model_.num_profiles == 1) {
      return status_.fail(kBadArgument, "model " + name + " runs batch " + std::to_string(max_batch()) +
                                            " only, not " + std::to_string(batch) +
                                            " (compile it with batch profiles, e.g. modelc --batch 1," +
                                            std::to_string(max_batch()) + ", to run smaller batches)");
    }
    return status_.fail(kBadArgument, "batch " + std::to_string(batch) + " is outside the batch profiles of model " +
                                          name + " (" + profile_list(model_) + "): it runs batches 1 to " +
                                          std::to_string(max_batch()) + " (compile it with a larger --batch for more)");
  }

  int check_pointers(int64_t batch, const void* const* inputs, const void* const* outputs) {
    if (model_.num_inputs > 0 && !inputs) return status_.fail(kBadArgument, "the inputs array is null");
    if (model_.num_outputs > 0 && !outputs) return status_.fail(kBadArgument, "the outputs array is null");
    for (int i = 0; i < model_.num_inputs; ++i) {
      if (!inputs[i] && bytes_at(model_, model_.inputs[i], batch) > 0) {
        return status_.fail(kBadArgument, "input " + std::to_string(i) + " ('" + model_.inputs[i].name +
                                              "') is a null pointer");
      }
    }
    for (int i = 0; i < model_.num_outputs; ++i) {
      if (!outputs[i] && bytes_at(model_, model_.outputs[i], batch) > 0) {
        return status_.fail(kBadArgument, "output " + std::to_string(i) + " ('" + model_.outputs[i].name +
                                              "') is a null pointer");
      }
    }
    return kOk;
  }

  // The inputs at `batch` items (from `kind` memory) into the context's own buffers, each padded
  // with zeros to the profile's batch, on `stream`.
  int copy_in(int64_t batch, int64_t profile_batch, const void* const* inputs, cudaMemcpyKind kind, cudaStream_t stream) {
    Status& mc_status = status_;
    for (int i = 0; i < model_.num_inputs; ++i) {
      const size_t n = bytes_at(model_, model_.inputs[i], batch);
      const size_t full = bytes_at(model_, model_.inputs[i], profile_batch);
      unsigned char* own = static_cast<unsigned char*>(own_inputs_[static_cast<size_t>(i)]);
      if (n > 0) MC_CHECK(cudaMemcpyAsync(own, inputs[i], n, kind, stream));
      if (full > n) MC_CHECK(cudaMemsetAsync(own + n, 0, full - n, stream));
    }
    return kOk;
  }

  // The first `batch` items of the outputs out of the context's own buffers.
  int copy_out(int64_t batch, void* const* outputs, cudaMemcpyKind kind, cudaStream_t stream) {
    Status& mc_status = status_;
    for (int i = 0; i < model_.num_outputs; ++i) {
      const size_t n = bytes_at(model_, model_.outputs[i], batch);
      if (n > 0) MC_CHECK(cudaMemcpyAsync(outputs[i], own_outputs_[static_cast<size_t>(i)], n, kind, stream));
    }
    return kOk;
  }

  int run_impl(int64_t batch, const void* const* inputs, void* const* outputs, cudaStream_t stream) {
    Status& mc_status = status_;
    int r = check_ready();
    int p = -1;
    if (r == kOk) r = choose_profile(batch, &p);
    if (r == kOk) r = check_pointers(batch, inputs, outputs);
    if (r != kOk) return r;
    DeviceScope scope;
    MC_CHECK(scope.enter(device_));
    const Profile& profile = model_.profiles[p];
    if (profile.batch != batch) {
      // Padded: the caller's buffers hold `batch` items, the profile's graph reads and writes more.
      r = copy_in(batch, profile.batch, inputs, cudaMemcpyDeviceToDevice, stream);
      if (r != kOk) return r;
      r = enter(p, stream);
      if (r != kOk) return r;
      MC_CHECK(cudaGraphLaunch(own_graphs_[static_cast<size_t>(p)], stream));
      return copy_out(batch, outputs, cudaMemcpyDeviceToDevice, stream);
    }
    cudaGraphExec_t exec = nullptr;
    if (same_pointers(inputs, outputs, own_inputs_, own_outputs_)) {
      exec = own_graphs_[static_cast<size_t>(p)];
    } else {
      if (!user_graph_ || user_profile_ != p || !same_pointers(inputs, outputs, user_inputs_, user_outputs_)) {
        if (user_graph_) {
          // The previous graph may still run on the caller's stream: wait for it first.
          MC_CHECK(cudaEventSynchronize(user_done_));
          MC_CHECK(cudaGraphExecDestroy(user_graph_));
          user_graph_ = nullptr;
        }
        r = capture(p, inputs, outputs, &user_graph_);
        if (r != kOk) return r;
        user_profile_ = p;
        user_inputs_.assign(inputs, inputs + model_.num_inputs);
        user_outputs_.assign(outputs, outputs + model_.num_outputs);
      }
      exec = user_graph_;
    }
    r = enter(p, stream);
    if (r != kOk) return r;
    MC_CHECK(cudaGraphLaunch(exec, stream));
    if (exec == user_graph_) MC_CHECK(cudaEventRecord(user_done_, stream));
    return kOk;
  }

  // Before a run of profile p: where the last run was another profile's, which may have written
  // over p's zeroed scratch (the profiles share the arena), zero it again.
  int enter(int p, cudaStream_t stream) {
    Status& mc_status = status_;
    const Profile& profile = model_.profiles[p];
    if (last_profile_ >= 0 && last_profile_ != p && profile.zeroed_bytes > 0) {
      MC_CHECK(cudaMemsetAsync(static_cast<unsigned char*>(arena_) + profile.zeroed_offset, 0, profile.zeroed_bytes,
                               stream));
    }
    last_profile_ = p;
    return kOk;
  }

  int run_host_impl(int64_t batch, const void* const* inputs, void* const* outputs) {
    Status& mc_status = status_;
    int r = check_ready();
    int p = -1;
    if (r == kOk) r = choose_profile(batch, &p);
    if (r == kOk) r = check_pointers(batch, inputs, outputs);
    if (r != kOk) return r;
    DeviceScope scope;
    MC_CHECK(scope.enter(device_));
    r = copy_in(batch, model_.profiles[p].batch, inputs, cudaMemcpyHostToDevice, stream_);
    if (r != kOk) return r;
    r = enter(p, stream_);
    if (r != kOk) return r;
    MC_CHECK(cudaGraphLaunch(own_graphs_[static_cast<size_t>(p)], stream_));
    r = copy_out(batch, outputs, cudaMemcpyDeviceToHost, stream_);
    if (r != kOk) return r;
    MC_CHECK(cudaStreamSynchronize(stream_));
    return kOk;
  }

  // Runs profile p's enqueue function directly on the context's own buffers with `probe` seeing
  // each kernel, and waits for it (the join brings every stream's work back to stream_).
  int run_probed(int p, Probe* probe) {
    Status& mc_status = status_;
    streams_[0] = stream_;
    const Bindings b{static_cast<unsigned char*>(arena_), static_cast<const unsigned char*>(weights_),
                     own_inputs_.data(), own_outputs_.data(), sm_, streams_.data(), events_.data(), probe};
    const int r = model_.profiles[p].enqueue(status_, b, stream_);
    if (r != kOk) return r;
    MC_CHECK(cudaStreamSynchronize(stream_));
    return kOk;
  }

  // Copies host `inputs` at `batch` into the context's buffers for a run of profile *p (chosen for
  // the batch) outside the graph.
  int prepare_probed_run(int64_t batch, const void* const* inputs, int* p) {
    Status& mc_status = status_;
    int r = check_ready();
    if (r == kOk) r = choose_profile(batch, p);
    if (r == kOk && model_.num_inputs > 0 && !inputs) r = status_.fail(kBadArgument, "the inputs array is null");
    for (int i = 0; r == kOk && i < model_.num_inputs; ++i) {
      if (!inputs[i] && bytes_at(model_, model_.inputs[i], batch) > 0) {
        r = status_.fail(kBadArgument, "input " + std::to_string(i) + " ('" + model_.inputs[i].name + "') is a null pointer");
      }
    }
    if (r != kOk) return r;
    r = copy_in(batch, model_.profiles[*p].batch, inputs, cudaMemcpyHostToDevice, stream_);
    if (r != kOk) return r;
    r = enter(*p, stream_);
    if (r != kOk) return r;
    MC_CHECK(cudaStreamSynchronize(stream_));
    return kOk;
  }

  // After a kernel, the taps it writes: copied from the device (the stretch of memory their
  // strides span) and gathered into the caller's buffers in the graph's dense layout.
  class TapCopier : public Probe {
   public:
    TapCopier(const Profile& profile, unsigned char* arena, const std::vector<void*>& outputs, void* const* taps)
        : profile_(profile), arena_(arena), outputs_(outputs), taps_(taps) {}
    int begin(Status&, int, cudaStream_t) override { return kOk; }
    int end(Status& mc_status, int kernel, cudaStream_t stream) override {
      MC_CHECK(cudaStreamSynchronize(stream));
      for (int t = 0; t < profile_.num_taps; ++t) {
        const TapInfo& tap = profile_.taps[t];
        if (tap.kernel != kernel || !taps_[t]) continue;
        if (tap_elements(tap) == 0) continue;
        const unsigned char* base = tap.space == kTapOutput ? static_cast<const unsigned char*>(outputs_[static_cast<size_t>(tap.index)])
                                                            : arena_;
        MC_CHECK(copy_view_to_host(base + tap.offset, tap.rank, tap.shape, tap.strides, dtype_bytes(tap.dtype), stored_,
                                   static_cast<unsigned char*>(taps_[t])));
      }
      return kOk;
    }

   private:
    const Profile& profile_;
    unsigned char* arena_;
    const std::vector<void*>& outputs_;
    void* const* taps_;
    std::vector<unsigned char> stored_;
  };

  int run_taps_impl(int64_t batch, const void* const* inputs, void* const* outputs, void* const* taps) {
    Status& mc_status = status_;
    int r = check_ready();
    if (r == kOk) r = check_pointers(batch, inputs, outputs);
    if (r == kOk && !taps) r = status_.fail(kBadArgument, "the taps array is null");
    if (r != kOk) return r;
    DeviceScope scope;
    MC_CHECK(scope.enter(device_));
    int p = -1;
    r = prepare_probed_run(batch, inputs, &p);
    if (r != kOk) return r;
    TapCopier copier(model_.profiles[p], static_cast<unsigned char*>(arena_), own_outputs_, taps);
    r = run_probed(p, &copier);
    if (r != kOk) return r;
    r = copy_out(batch, outputs, cudaMemcpyDeviceToHost, stream_);
    if (r != kOk) return r;
    MC_CHECK(cudaStreamSynchronize(stream_));
    return kOk;
  }

  int device_weights_checksum_impl(uint64_t* sum) {
    Status& mc_status = status_;
    const int r = check_ready();
    if (r != kOk) return r;
    if (!sum) return status_.fail(kBadArgument, "the checksum's pointer is null");
    DeviceScope scope;
    MC_CHECK(scope.enter(device_));
    std::vector<unsigned char> host(model_.weights_bytes);
    if (model_.weights_bytes > 0) MC_CHECK(cudaMemcpy(host.data(), weights_, model_.weights_bytes, cudaMemcpyDeviceToHost));
    *sum = checksum64(host.data(), host.size());
    return kOk;
  }

  int time_kernels_impl(int64_t batch, const void* const* inputs, int runs, float* us) {
    Status& mc_status = status_;
    if (runs < 1) return status_.fail(kBadArgument, "time_kernels: runs is " + std::to_string(runs) + " (at least 1)");
    if (!us) return status_.fail(kBadArgument, "time_kernels: the times array is null");
    int r = check_ready();
    if (r != kOk) return r;
    DeviceScope scope;
    MC_CHECK(scope.enter(device_));
    int p = -1;
    r = prepare_probed_run(batch, inputs, &p);
    if (r != kOk) return r;
    // An untimed run first: the kernels' first launches (module loading, cold caches) are not timed.
    MC_CHECK(cudaGraphLaunch(own_graphs_[static_cast<size_t>(p)], stream_));
    MC_CHECK(cudaStreamSynchronize(stream_));
    KernelTimer timer;
    r = timer.init(status_, model_.profiles[p].num_kernels);
    for (int i = 0; r == kOk && i < runs; ++i) r = run_probed(p, &timer);
    if (r != kOk) return r;
    for (int k = 0; k < model_.profiles[p].num_kernels; ++k) us[k] = timer.median(static_cast<size_t>(k));
    return kOk;
  }

  template <class In, class Out>
  bool same_pointers(const void* const* inputs, void* const* outputs, const In& in, const Out& out) const {
    if (in.size() != static_cast<size_t>(model_.num_inputs) || out.size() != static_cast<size_t>(model_.num_outputs)) {
      return false;
    }
    for (int i = 0; i < model_.num_inputs; ++i) {
      if (inputs[i] != in[i]) return false;
    }
    for (int i = 0; i < model_.num_outputs; ++i) {
      if (outputs[i] != out[i]) return false;
    }
    return true;
  }

  static size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

  // Frees everything (errors ignored: nothing can be reported from a destructor).
  void release() {
    if (device_ < 0) return;
    DeviceScope scope;
    if (scope.enter(device_) != cudaSuccess) return;
    if (stream_) cudaStreamSynchronize(stream_);
    if (user_done_) cudaEventSynchronize(user_done_);
    if (user_graph_) cudaGraphExecDestroy(user_graph_);
    if (user_done_) cudaEventDestroy(user_done_);
    for (cudaGraphExec_t g : own_graphs_) {
      if (g) cudaGraphExecDestroy(g);
    }
    for (cudaEvent_t e : events_) {
      if (e) cudaEventDestroy(e);
    }
    for (size_t i = 1; i < streams_.size(); ++i) {
      if (streams_[i]) cudaStreamDestroy(streams_[i]);
    }
    if (stream_) cudaStreamDestroy(stream_);
    if (io_) cudaFree(io_);
    if (arena_) cudaFree(arena_);
    if (weights_) cudaFree(weights_);
    device_ = -1;
  }

  const ModelInfo& model_;
  Status status_;
  int device_ = -1;
  int sm_ = 0;  ///< the device's SM number (Bindings::sm)
  bool ready_ = false;
  void* weights_ = nullptr;
  void* arena_ = nullptr;
  void* io_ = nullptr;  // the context's own inputs and outputs (run_host), one allocation
  std::vector<void*> own_inputs_, own_outputs_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaStream_t> streams_;  // Bindings::streams: [0] = stream_ at capture, then the context's own
  std::vector<cudaEvent_t> events_;    // Bindings::events
  std::vector<cudaGraphExec_t> own_graphs_;  // per profile, captured at create with own_inputs_/own_outputs_
  cudaGraphExec_t user_graph_ = nullptr;  // captured for the caller's latest pointers, of profile user_profile_
  int user_profile_ = -1;
  int last_profile_ = -1;  ///< the profile of the last run (enter), -1 before any
  cudaEvent_t user_done_ = nullptr;       // recorded after each replay of user_graph_
  std::vector<const void*> user_inputs_;
  std::vector<void*> user_outputs_;
};

}  // namespace mc

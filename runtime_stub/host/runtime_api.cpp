// runtime_stub/host/runtime_api.cpp — the CUDA runtime API on the host (see runtime_api.h).
#include "runtime_api.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using Op = std::function<void()>;

// A captured operation: work (a kernel, a copy) or an event's record or wait, on the stream it was
// issued to (its lane: the graph numbers its streams in order of first use, the origin 0).
struct GraphOp {
  Op run;                // the work; empty for a record or a wait
  int lane = 0;
  int waits_for = -1;    // a wait: the index of the record it waits for
};
struct CUgraph_st {
  std::vector<GraphOp> ops;
  std::map<cudaStream_t, int> lanes;
};
struct CUgraphExec_st {
  std::vector<GraphOp> ops;
  int lanes = 1;
};
struct CUstream_st {
  unsigned flags = 0;
  cudaGraph_t capture = nullptr;  // the graph this stream records into, if capturing
  bool capture_origin = false;    // began the capture (only the origin may end it)
};
struct CUevent_st {
  unsigned flags = 0;
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
  cudaGraph_t captured_in = nullptr;  // recorded in a capturing stream: joins streams that wait on it
  int captured_op = -1;               // the index of that record in the graph's ops
};

namespace {

struct Arch {
  int sm;
  size_t smem_optin, smem_per_sm;
};
constexpr Arch kArchs[] = {
    {75, 65536, 65536}, {80, 166912, 167936}, {86, 101376, 102400}, {89, 101376, 102400}, {90, 232448, 233472}};
constexpr size_t kDefaultSmem = 48 * 1024;
constexpr size_t kTotalMemory = size_t{16} << 30;

struct Runtime {
  std::mutex mu;
  Arch arch = kArchs[1];
  std::map<void*, size_t> device_allocs;
  std::set<void*> host_allocs;
  std::set<cudaStream_t> streams;
  std::set<cudaEvent_t> events;
  std::set<cudaGraph_t> graphs;
  std::set<cudaGraphExec_t> execs;
  std::map<const void*, int> max_dynamic_smem;  // per kernel, from cudaFuncSetAttribute
  size_t allocated = 0;
  bool interleave = false;  // graph replays run the streams in a seeded random interleaving
  uint64_t rng = 0;         // its state (splitmix64), advanced by every choice

  Runtime() {
    if (const char* s = std::getenv("MODELC_EMU_SM")) {
      const int sm = std::atoi(s);
      for (const Arch& a : kArchs)
        if (a.sm == sm) arch = a;
    }
    if (const char* s = std::getenv("MODELC_EMU_INTERLEAVE")) {
      interleave = true;
      rng = std::strtoull(s, nullptr, 10);
    }
  }
};

Runtime& rt() {
  static Runtime r;
  return r;
}

thread_local cudaError_t tl_last_error = cudaSuccess;

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) tl_last_error = e;
  return e;
}

bool special_stream(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread; }

// Validates a stream handle: null and the special handles are the default stream.
bool valid_stream(cudaStream_t s) {
  if (special_stream(s)) return true;
  std::lock_guard<std::mutex> lock(rt().mu);
  return rt().streams.count(s) != 0;
}

bool valid_event(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(rt().mu);
  return e && rt().events.count(e) != 0;
}

cudaGraph_t capturing(cudaStream_t s) { return special_stream(s) ? nullptr : s->capture; }

int lane_of(cudaGraph_t g, cudaStream_t s) {
  return g->lanes.emplace(s, static_cast<int>(g->lanes.size())).first->second;
}

// Runs `op` now, or records it into the graph `s` is capturing into.
cudaError_t submit(cudaStream_t s, Op op) {
  if (!valid_stream(s)) return ret(cudaErrorInvalidResourceHandle);
  if (cudaGraph_t g = capturing(s)) {
    g->ops.push_back({std::move(op), lane_of(g, s), -1});
    return cudaSuccess;
  }
  op();
  return cudaSuccess;
}

uint64_t next_random() {
  std::lock_guard<std::mutex> lock(rt().mu);
  uint64_t z = (rt().rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Replays a graph. In issue order; or, interleaving (MODELC_EMU_INTERLEAVE), one operation at a time
// from the stream of the highest priority (drawn at random per replay) among those whose next
// operation may run: the ones before it on its stream ran and, for a wait, the record it waits for
// ran. Only the recorded events order the streams, so a missing event lets a reader run before its
// writer whenever the reader's stream outranks the writer's: about every other seed for one edge.
void replay(const CUgraphExec_st& x) {
  bool interleave;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    interleave = rt().interleave;
  }
  if (!interleave) {
    for (const GraphOp& op : x.ops)
      if (op.run) op.run();
    return;
  }
  std::vector<std::vector<size_t>> lanes(static_cast<size_t>(x.lanes));
  for (size_t i = 0; i < x.ops.size(); ++i) lanes[static_cast<size_t>(x.ops[i].lane)].push_back(i);
  std::vector<size_t> next(lanes.size(), 0);
  std::vector<uint64_t> priority(lanes.size());
  for (uint64_t& p : priority) p = next_random();
  std::vector<bool> done(x.ops.size(), false);
  for (;;) {
    size_t l = lanes.size();
    for (size_t k = 0; k < lanes.size(); ++k) {
      if (next[k] == lanes[k].size()) continue;
      const GraphOp& op = x.ops[lanes[k][next[k]]];
      const bool ready = op.waits_for < 0 || done[static_cast<size_t>(op.waits_for)];
      if (ready && (l == lanes.size() || priority[k] > priority[l])) l = k;
    }
    if (l == lanes.size()) return;  // all ran (a wait is always for an earlier record: no deadlock)
    const size_t i = lanes[l][next[l]++];
    if (x.ops[i].run) x.ops[i].run();
    done[i] = true;
  }
}

// Whether the capture's origin (lane 0) ends after every operation of the other streams: CUDA
// refuses to end a capture with unjoined work. Vector clocks over the ops in issue order.
bool joined(const CUgraph_st& g) {
  const size_t n = g.lanes.size();
  std::vector<std::vector<size_t>> clock(n, std::vector<size_t>(n, 0));  // per lane: ops of each lane before
  std::vector<std::vector<size_t>> recorded(g.ops.size());
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const GraphOp& op = g.ops[i];
    std::vector<size_t>& c = clock[static_cast<size_t>(op.lane)];
    if (op.waits_for >= 0) {
      const std::vector<size_t>& r = recorded[static_cast<size_t>(op.waits_for)];
      for (size_t l = 0; l < n; ++l) c[l] = std::max(c[l], r[l]);
    }
    ++c[static_cast<size_t>(op.lane)];
    recorded[i] = c;
  }
  for (size_t l = 1; l < n; ++l)
    if (clock[0][l] < clock[l][l]) return false;
  return true;
}

void run_call(const mc::host::KernelCall& call) {
  try {
    mc::host::run_grid(call);
  } catch (...) {
    tl_last_error = cudaErrorLaunchFailure;  // sticky on a GPU; here the exception says what happened
    throw;
  }
}

}  // namespace

namespace mc {
namespace host {

void set_interleaving(bool on, uint64_t seed) {
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().interleave = on;
  rt().rng = seed;
}

bool set_emulated_arch(int sm) {
  for (const Arch& a : kArchs)
    if (a.sm == sm) {
      std::lock_guard<std::mutex> lock(rt().mu);
      rt().arch = a;
      return true;
    }
  return false;
}

cudaError_t submit_launch(std::shared_ptr<KernelCall> call, cudaStream_t stream) {
  const dim3 b = call->block, g = call->grid;
  if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
      static_cast<unsigned long long>(b.x) * b.y * b.z > 1024 || g.x == 0 || g.y == 0 || g.z == 0 ||
      g.x > 2147483647u || g.y > 65535 || g.z > 65535)
    return ret(cudaErrorInvalidConfiguration);
  size_t limit = kDefaultSmem;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = rt().max_dynamic_smem.find(call->kernel);
    if (it != rt().max_dynamic_smem.end()) limit = static_cast<size_t>(it->second);
  }
  if (call->dynamic_smem_bytes > limit) return ret(cudaErrorInvalidValue);
  return submit(stream, [call] { run_call(*call); });
}

}  // namespace host
}  // namespace mc

// ---- device --------------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return ret(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  if (!device) return ret(cudaErrorInvalidValue);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : ret(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!p) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  Arch a;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    a = rt().arch;
  }
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "modelc host emulation (sm_%d limits)", a.sm);
  p->totalGlobalMem = kTotalMemory;
  p->sharedMemPerBlock = kDefaultSmem;
  p->regsPerBlock = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->totalConstMem = 65536;
  p->major = a.sm / 10;
  p->minor = a.sm % 10;
  p->multiProcessorCount = 1;
  p->l2CacheSize = 4 << 20;
  p->maxThreadsPerMultiProcessor = 1024;
  p->sharedMemPerMultiprocessor = a.smem_per_sm;
  p->sharedMemPerBlockOptin = a.smem_optin;
  p->concurrentKernels = 0;
  p->asyncEngineCount = 0;
  p->unifiedAddressing = 1;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return ret(cudaErrorInvalidValue);
  cudaDeviceProp p;
  if (cudaError_t e = cudaGetDeviceProperties(&p, device)) return e;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = static_cast<int>(p.sharedMemPerBlock); break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *value = static_cast<int>(p.sharedMemPerMultiprocessor); break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = static_cast<int>(p.sharedMemPerBlockOptin); break;
    default: return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaDeviceReset() {
  tl_last_error = cudaSuccess;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  if (!version) return ret(cudaErrorInvalidValue);
  *version = 12000;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* version) { return cudaRuntimeGetVersion(version); }

cudaError_t cudaGetLastError() {
  const cudaError_t e = tl_last_error;
  tl_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return tl_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define MC_NAME(x) \
  case x: return #x;
    MC_NAME(cudaSuccess)
    MC_NAME(cudaErrorInvalidValue)
    MC_NAME(cudaErrorMemoryAllocation)
    MC_NAME(cudaErrorInitializationError)
    MC_NAME(cudaErrorInvalidConfiguration)
    MC_NAME(cudaErrorInvalidMemcpyDirection)
    MC_NAME(cudaErrorInvalidDeviceFunction)
    MC_NAME(cudaErrorNoDevice)
    MC_NAME(cudaErrorInvalidDevice)
    MC_NAME(cudaErrorInvalidResourceHandle)
    MC_NAME(cudaErrorIllegalState)
    MC_NAME(cudaErrorNotReady)
    MC_NAME(cudaErrorIllegalAddress)
    MC_NAME(cudaErrorLaunchOutOfResources)
    MC_NAME(cudaErrorLaunchFailure)
    MC_NAME(cudaErrorNotSupported)
    MC_NAME(cudaErrorStreamCaptureUnsupported)
    MC_NAME(cudaErrorStreamCaptureInvalidated)
    MC_NAME(cudaErrorStreamCaptureUnmatched)
    MC_NAME(cudaErrorStreamCaptureUnjoined)
    MC_NAME(cudaErrorStreamCaptureImplicit)
    MC_NAME(cudaErrorStreamCaptureWrongThread)
    MC_NAME(cudaErrorUnknown)
#undef MC_NAME
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorLaunchFailure: return "unspecified launch failure (host emulation: a kernel fault, see the exception)";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureUnmatched: return "capture was not initiated in this stream";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case cudaErrorUnknown: return "unknown error";
  }
  return "unrecognized error code";
}

// ---- memory --------------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  if (!ptr) return ret(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (bytes == 0) return cudaSuccess;
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0 || !p) return ret(cudaErrorMemoryAllocation);
  std::memset(p, 0xff, bytes);
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().device_allocs[p] = bytes;
  rt().allocated += bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(rt().mu);
  auto it = rt().device_allocs.find(ptr);
  if (it == rt().device_allocs.end()) return ret(cudaErrorInvalidValue);
  rt().allocated -= it->second;
  rt().device_allocs.erase(it);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
  if (!ptr) return ret(cudaErrorInvalidValue);
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0 || !p) return ret(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().host_allocs.insert(p);
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!rt().host_allocs.erase(ptr)) return ret(cudaErrorInvalidValue);
  std::free(ptr);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (!free_bytes || !total_bytes) return ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(rt().mu);
  *total_bytes = kTotalMemory;
  *free_bytes = rt().allocated < kTotalMemory ? kTotalMemory - rt().allocated : 0;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return ret(cudaErrorInvalidMemcpyDirection);
  if (bytes && (!dst || !src)) return ret(cudaErrorInvalidValue);
  if (bytes) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return ret(cudaErrorInvalidMemcpyDirection);
  if (bytes && (!dst || !src)) return ret(cudaErrorInvalidValue);
  return submit(stream, [=] {
    if (bytes) std::memmove(dst, src, bytes);
  });
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (bytes && !dst) return ret(cudaErrorInvalidValue);
  if (bytes) std::memset(dst, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream) {
  if (bytes && !dst) return ret(cudaErrorInvalidValue);
  return submit(stream, [=] {
    if (bytes) std::memset(dst, value, bytes);
  });
}

// ---- streams -------------------------------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (!stream || flags > cudaStreamNonBlocking) return ret(cudaErrorInvalidValue);
  cudaStream_t s = new CUstream_st();
  s->flags = flags;
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().streams.insert(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (special_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!rt().streams.erase(stream)) return ret(cudaErrorInvalidResourceHandle);
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (capturing(stream)) return ret(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (capturing(stream)) return ret(cudaErrorStreamCaptureUnsupported);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  if (!valid_stream(stream) || !valid_event(event)) return ret(cudaErrorInvalidResourceHandle);
  // Waiting on an event recorded in a capture pulls this stream into that capture (a fork).
  if (event->captured_in && !special_stream(stream) && !stream->capture) {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().graphs.count(event->captured_in)) stream->capture = event->captured_in;
  }
  cudaGraph_t g = capturing(stream);
  if (g && event->captured_in == g) g->ops.push_back({Op(), lane_of(g, stream), event->captured_op});
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data) {
  if (!fn) return ret(cudaErrorInvalidValue);
  return submit(stream, [fn, user_data] { fn(user_data); });
}

// ---- events --------------------------------------------------------------------------------------
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event) return ret(cudaErrorInvalidValue);
  cudaEvent_t e = new CUevent_st();
  e->flags = flags;
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!event || !rt().events.erase(event)) return ret(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!valid_event(event) || !valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (cudaGraph_t g = capturing(stream)) {
    event->captured_in = g;  // a dependency marker inside the capture, not a timestamp
    event->captured_op = static_cast<int>(g->ops.size());
    g->ops.push_back({Op(), lane_of(g, stream), -1});
    return cudaSuccess;
  }
  event->captured_in = nullptr;
  event->recorded = true;
  event->time = std::chrono::steady_clock::now();  // all earlier work on the stream is done
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return valid_event(event) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  return valid_event(event) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return ret(cudaErrorInvalidValue);
  if (!valid_event(start) || !valid_event(end)) return ret(cudaErrorInvalidResourceHandle);
  if ((start->flags & cudaEventDisableTiming) || (end->flags & cudaEventDisableTiming) || !start->recorded ||
      !end->recorded)
    return ret(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return cudaSuccess;
}

// ---- graphs --------------------------------------------------------------------------------------
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  if (special_stream(stream)) return ret(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot capture
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (mode < cudaStreamCaptureModeGlobal || mode > cudaStreamCaptureModeRelaxed) return ret(cudaErrorInvalidValue);
  if (stream->capture) return ret(cudaErrorIllegalState);
  cudaGraph_t g = new CUgraph_st();
  std::lock_guard<std::mutex> lock(rt().mu);
  rt().graphs.insert(g);
  g->lanes[stream] = 0;
  stream->capture = g;
  stream->capture_origin = true;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  if (!graph) return ret(cudaErrorInvalidValue);
  if (special_stream(stream) || !valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (!stream->capture) return ret(cudaErrorIllegalState);
  if (!stream->capture_origin) return ret(cudaErrorStreamCaptureUnmatched);
  cudaGraph_t g = stream->capture;
  std::lock_guard<std::mutex> lock(rt().mu);
  for (cudaStream_t s : rt().streams)  // streams that joined the capture leave it with the origin
    if (s->capture == g) {
      s->capture = nullptr;
      s->capture_origin = false;
    }
  for (cudaEvent_t e : rt().events)
    if (e->captured_in == g) e->captured_in = nullptr;
  if (!joined(*g)) {  // the capture is invalidated, as CUDA does
    rt().graphs.erase(g);
    delete g;
    *graph = nullptr;
    return ret(cudaErrorStreamCaptureUnjoined);
  }
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  if (!status) return ret(cudaErrorInvalidValue);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  *status = capturing(stream) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, void* nodes, size_t* count) {
  if (!count || nodes) return ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!graph || !rt().graphs.count(graph)) return ret(cudaErrorInvalidResourceHandle);
  *count = static_cast<size_t>(std::count_if(graph->ops.begin(), graph->ops.end(), [](const GraphOp& op) {
    return static_cast<bool>(op.run);  // records and waits are edges, not nodes
  }));
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  if (!exec) return ret(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!graph || !rt().graphs.count(graph)) return ret(cudaErrorInvalidResourceHandle);
  cudaGraphExec_t x = new CUgraphExec_st();
  x->ops = graph->ops;  // an executable graph is a snapshot: later edits of the graph do not affect it
  x->lanes = static_cast<int>(graph->lanes.size());
  rt().execs.insert(x);
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (!exec || !rt().execs.count(exec)) return ret(cudaErrorInvalidResourceHandle);
  }
  return submit(stream, [exec] { replay(*exec); });
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!exec || !rt().execs.erase(exec)) return ret(cudaErrorInvalidResourceHandle);
  delete exec;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!graph || !rt().graphs.erase(graph)) return ret(cudaErrorInvalidResourceHandle);
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (!func) return ret(cudaErrorInvalidDeviceFunction);
  std::lock_guard<std::mutex> lock(rt().mu);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || static_cast<size_t>(value) > rt().arch.smem_optin) return ret(cudaErrorInvalidValue);
      rt().max_dynamic_smem[func] = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return (value >= -1 && value <= 100) ? cudaSuccess : ret(cudaErrorInvalidValue);
  }
  return ret(cudaErrorInvalidValue);
}

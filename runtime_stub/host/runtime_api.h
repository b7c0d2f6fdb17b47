// runtime_stub/host/runtime_api.h — the CUDA runtime API subset a generated program uses, on the host.
//
// One emulated device ("modelc host emulation"). Everything runs in order and synchronously on the
// calling thread: a kernel launch or copy on a stream is done when the call returns, so
// synchronisation calls only check their arguments and events measure host time (steady clock).
// Stream capture records the work issued to a capturing stream (and to streams that join it through
// cudaStreamWaitEvent on an event recorded in it) into a graph, with each operation's stream and the
// events recorded and waited on between them; ending a capture whose other streams did not join the
// origin back fails (cudaErrorStreamCaptureUnjoined), as on a GPU. cudaGraphLaunch replays the graph
// in issue order or, with MODELC_EMU_INTERLEAVE=SEED (or mc::host::set_interleaving), in a seeded
// random interleaving of its streams that respects only their order and the recorded events (each
// replay ranks the streams at random and always runs the highest-ranked one that may go on): a
// missing event lets a kernel run before the one it needed, and a test fail. Kernel parameters are copied at capture, as CUDA does; copies read their source at
// replay. Device memory is host memory; cudaMalloc fills it with 0xff bytes so reads of unwritten
// memory show up (NaN for floats).
//
// The device's limits follow an emulated architecture (default sm_80; MODELC_EMU_SM=75|80|86|89|90
// or mc::host::set_emulated_arch): compute capability and the opt-in dynamic shared memory per block.
// A launch asking for more than 48 KiB of dynamic shared memory fails unless cudaFuncSetAttribute
// raised the kernel's limit, exactly as on a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_types.h"
#include "engine.h"

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotSupported = 801,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
  cudaErrorStreamCaptureUnmatched = 903,
  cudaErrorStreamCaptureUnjoined = 904,
  cudaErrorStreamCaptureImplicit = 906,
  cudaErrorStreamCaptureWrongThread = 908,
  cudaErrorUnknown = 999
};
typedef cudaError_t cudaError;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02

struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
typedef CUstream_st* cudaStream_t;
typedef CUevent_st* cudaEvent_t;
typedef CUgraph_st* cudaGraph_t;
typedef CUgraphExec_st* cudaGraphExec_t;
typedef void (*cudaHostFn_t)(void* user_data);

#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

/// \brief The fields of CUDA's cudaDeviceProp that a generated program reads (same names).
struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int regsPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  size_t totalConstMem;
  int major;
  int minor;
  int multiProcessorCount;
  int l2CacheSize;
  int maxThreadsPerMultiProcessor;
  size_t sharedMemPerMultiprocessor;
  size_t sharedMemPerBlockOptin;
  int concurrentKernels;
  int asyncEngineCount;
  int unifiedAddressing;
};

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <class T>
inline cudaError_t cudaMalloc(T** ptr, size_t bytes) { return cudaMalloc(reinterpret_cast<void**>(ptr), bytes); }
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
template <class T>
inline cudaError_t cudaMallocHost(T** ptr, size_t bytes) { return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes); }
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);
template <class T>
inline cudaError_t cudaMemcpyToSymbol(T& symbol, const void* src, size_t bytes, size_t offset = 0,
                                      cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
  if (offset + bytes > sizeof(T)) return cudaErrorInvalidValue;
  return cudaMemcpy(reinterpret_cast<char*>(&symbol) + offset, src, bytes, kind);
}

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* user_data);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
/// \brief With nodes == nullptr, *count receives the number of recorded operations (the only form).
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, void* nodes, size_t* count);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value);
template <class T>
inline cudaError_t cudaFuncSetAttribute(T* func, cudaFuncAttribute attr, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(func), attr, value);
}

namespace mc {
namespace host {

/// \brief Sets the emulated architecture's limits (75, 80, 86, 89 or 90); false if unknown.
bool set_emulated_arch(int sm);

/// \brief Graph replays in a random interleaving of their streams seeded with `seed` (on), or in
/// issue order (off); MODELC_EMU_INTERLEAVE=SEED sets it at start.
void set_interleaving(bool on, uint64_t seed);

/// \brief Validates a launch and runs it now, or records it if `stream` is capturing.
cudaError_t submit_launch(std::shared_ptr<KernelCall> call, cudaStream_t stream);

template <class Tuple, class... KArgs>
struct Invoker {
  static void invoke(void* data) {
    auto& c = *static_cast<std::pair<void (*)(KArgs...), Tuple>*>(data);
    std::apply(c.first, c.second);  // each thread gets its own copies of the parameters
  }
};

}  // namespace host

/// \brief Launches `kernel` on (grid, block) with `dynamic_smem_bytes` of dynamic shared memory on
/// `stream`. Templates launch only through this (never <<<>>>). Returns the launch's error, which
/// is also the last error. A kernel fault throws mc::host::KernelError.
template <class... KArgs, class... Args>
inline cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t dynamic_smem_bytes,
                          cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args), "mc::launch: wrong number of kernel arguments");
  using Tuple = std::tuple<std::decay_t<KArgs>...>;
  using Closure = std::pair<void (*)(KArgs...), Tuple>;
  auto call = std::make_shared<host::KernelCall>();
  call->kernel = reinterpret_cast<const void*>(kernel);
  call->invoke = &host::Invoker<Tuple, KArgs...>::invoke;
  call->data = std::make_shared<Closure>(kernel, Tuple(std::forward<Args>(args)...));
  call->grid = grid;
  call->block = block;
  call->dynamic_smem_bytes = dynamic_smem_bytes;
  return host::submit_launch(std::move(call), stream);
}

}  // namespace mc

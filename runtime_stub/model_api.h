// runtime_stub/model_api.h — a generated model's C API as a table of functions, for code that
// drives any model (runtime/cli.h: the NAME_main.cu program).
//
// The generated NAME_main.cu fills one mc_cli::Model with small wrappers around the NAME_*
// functions of NAME.h and calls mc_cli::main(argc, argv, model). Each field mirrors the C API
// function of the same name (see NAME.h for the full contract); the context is passed as void*.
//
// Return codes of create/run/run_host (the same as NAME.h's):
//   0 ok, 1 CUDA error, 2 bad argument, 3 no device / unsupported compute capability,
//   4 out of device memory, 5 weights file error.
// Dtype codes are ONNX TensorProto codes: 1 float32, 2 uint8, 3 int8, 4 uint16, 5 int16, 6 int32,
// 7 int64, 9 bool, 10 float16, 11 float64, 12 uint32, 13 uint64, 16 bfloat16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device.h"

namespace mc_cli {

/// \brief What create / create_with_weights return when the weights file cannot be used (missing,
/// not a regular file, another size or other data than the model's).
constexpr int kCreateWeightsFile = 5;

/// \brief The C API of one generated model, as function pointers (context as void*).
struct Model {
  /// The model's name (the NAME prefix of its symbols).
  const char* name;

  /// NAME_create: uploads the weights and allocates the arena on `device`; captures the CUDA graph.
  /// On failure *ctx is still set (unless out of host memory) so error(*ctx) says why; destroy it.
  int (*create)(void** ctx, int device);
  /// NAME_create_with_weights: the same, reading the weights from `weights_path` (null: the
  /// default place, NAME_weights.bin next to the executable). Null when the weights are embedded
  /// in the binary (the model was compiled without --weights-file).
  int (*create_with_weights)(void** ctx, int device, const char* weights_path);
  /// NAME_run: device pointers (one per input/output, in order); only enqueues on `stream`.
  int (*run)(void* ctx, const void* const* inputs, void* const* outputs, cudaStream_t stream);
  /// NAME_run_host: host pointers; returns when the outputs are written.
  int (*run_host)(void* ctx, const void* const* inputs, void* const* outputs);
  /// NAME_error: the context's last error message ("" when none; never null).
  const char* (*error)(const void* ctx);
  /// NAME_destroy: frees everything the context holds (null is fine).
  void (*destroy)(void* ctx);

  int (*num_inputs)();
  int (*num_outputs)();
  const char* (*input_name)(int i);         ///< ONNX name of input i
  int (*input_dtype)(int i);                ///< ONNX TensorProto dtype code
  int (*input_rank)(int i);
  const int64_t* (*input_shape)(int i);     ///< input_rank(i) dims (static shapes)
  const char* (*output_name)(int i);
  int (*output_dtype)(int i);
  int (*output_rank)(int i);
  const int64_t* (*output_shape)(int i);

  /// NAME_workspace_bytes: device memory of the activation arena.
  size_t (*workspace_bytes)();

  // Batch profiles (NAME.h): a model compiled with --batch 1,8,32 runs any batch up to the largest
  // profile's. Null in a table that leaves them out: the model runs the shapes above only.
  /// NAME_run_batch / NAME_run_host_batch: a run of `batch` items (buffers at that batch).
  int (*run_batch)(void* ctx, int64_t batch, const void* const* inputs, void* const* outputs,
                   cudaStream_t stream) = nullptr;
  int (*run_host_batch)(void* ctx, int64_t batch, const void* const* inputs, void* const* outputs) = nullptr;
  int (*num_profiles)() = nullptr;                  ///< NAME_num_profiles
  int64_t (*profile_batch)(int p) = nullptr;        ///< NAME_profile_batch: ascending; the last is the largest
  int (*profile_for_batch)(int64_t batch) = nullptr;  ///< NAME_profile_for_batch: -1 when none holds it
  int (*input_batched)(int i) = nullptr;            ///< NAME_input_batched: 1 when the first dim is the batch's
  int (*output_batched)(int i) = nullptr;           ///< NAME_output_batched
};

}  // namespace mc_cli

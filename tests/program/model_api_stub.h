// tests/program/model_api_stub.h — TEMPORARY: the mc_cli::Model table until cg-product's
// runtime_stub/model_api.h lands (then this file goes and the tests include that header).
#pragma once

#include <cstddef>
#include <cstdint>

#include "device.h"

namespace mc_cli {

/// \brief The C API of one generated model, as function pointers (NAME_main.cu fills one in).
struct Model {
  const char* name;
  int (*create)(void** ctx, int device);
  int (*run)(void* ctx, const void* const* inputs, void* const* outputs, cudaStream_t stream);
  int (*run_host)(void* ctx, const void* const* inputs, void* const* outputs);
  const char* (*error)(const void* ctx);
  void (*destroy)(void* ctx);
  int (*num_inputs)(void);
  int (*num_outputs)(void);
  const char* (*input_name)(int i);
  int (*input_dtype)(int i);
  int (*input_rank)(int i);
  const int64_t* (*input_shape)(int i);
  const char* (*output_name)(int i);
  int (*output_dtype)(int i);
  int (*output_rank)(int i);
  const int64_t* (*output_shape)(int i);
  size_t (*workspace_bytes)(void);
};

}  // namespace mc_cli

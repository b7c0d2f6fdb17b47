// runtime_stub/model_api.h — a generated model's C API as a table of functions, for code that
// drives any model (runtime/cli.h: the NAME_main.cu program).
//
// The generated NAME_main.cu fills one mc_cli::Model with small wrappers around the NAME_*
// functions of NAME.h and calls mc_cli::main(argc, argv, model). The fields are declared by the
// table of the C API, c_api.def (the one list of its functions): each mirrors the C API function
// of the same name (see NAME.h for the full contract); the context is passed as void*.
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

/// \brief The C API of one generated model, as function pointers (context as void*): a field per
/// entry of c_api.def, of its type and in its order (NAME.h documents each). A field the model
/// lacks (create_with_weights without --weights-file) is null.
struct Model {
  /// The model's name (the NAME prefix of its symbols).
  const char* name = nullptr;
#define MC_API(RET, FUNCTION, PARAMS, WHEN, DOC, BODY) RET(*FUNCTION) PARAMS = nullptr;
#include "c_api.def"
#undef MC_API
};

}  // namespace mc_cli

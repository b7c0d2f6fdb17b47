// runtime_stub/host/emulation.h — the host emulation of the CUDA subset templates use.
// Included by runtime_stub/device.h when MODELC_HOST_EMULATION is defined. A program built on it:
//   g++ -std=c++17 -O2 -DMODELC_HOST_EMULATION -I<runtime> -x c++ prog.cu -x none
//       <runtime>/host/engine.cpp <runtime>/host/runtime_api.cpp -lboost_context
// (Boost.Context: Debian libboost-context-dev). Kernels use MC_UNROLL rather than #pragma unroll,
// which g++ warns about under -Wall. MODELC_EMU_STACK_KB sets the fiber stack size (default 256
// KiB, mapped lazily; a kernel's locals, WMMA fragments included, live there).
#pragma once

// Standard headers first: the qualifier macros of cuda_types.h must not reach them.
#include <math.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_types.h"
#include "engine.h"
#include "half.h"
#include "hopper.h"
#include "intrinsics.h"
#include "mma.h"
#include "mma_int8.h"
#include "runtime_api.h"
#include "wmma.h"

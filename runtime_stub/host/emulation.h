// runtime_stub/host/emulation.h — the host emulation of the CUDA subset templates use.
// Included by runtime_stub/device.h when MODELC_HOST_EMULATION is defined; link engine.cpp and
// runtime_api.cpp, and Boost.Context (-lboost_context).
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
#include "intrinsics.h"
#include "runtime_api.h"
#include "wmma.h"

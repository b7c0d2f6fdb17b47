// tests/runtime_stub/fault_of.h — the emulation tests' helper for kernels that must fault.
#pragma once

#include <functional>
#include <string>

#include "device.h"

/// \brief The message of the mc::host::KernelError that f throws, or "" when it throws none.
inline std::string fault_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mc::host::KernelError& e) {
    return e.what();
  }
  return "";
}

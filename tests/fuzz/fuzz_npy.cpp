// tests/fuzz/fuzz_npy.cpp — fuzz target: bytes -> mc_npy::decode_npy, the .npy reader of
// runtime_stub/npy.h that ships in every generated program. mc_npy::Error is a clear refusal; an
// accepted array must pass check_array (array_check.h); anything else is a finding.
#include <cstdint>
#include <string>

#include "npy.h"
#include "tests/fuzz/array_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  modelc::fuzz::check_reader([](const std::string& b) { return mc_npy::decode_npy(b, "fuzz.npy"); }, data, size,
                             "fuzz_npy");
  return 0;
}

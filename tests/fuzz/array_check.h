// tests/fuzz/array_check.h — fuzz_npy's and fuzz_pb's one step: the reader on the bytes, where
// mc_npy::Error is a clear refusal and an accepted array must hold: its bytes fit its dtype and
// shape, bools are 0 or 1, and (numpy has no bfloat16) the .npy writer and reader give it back
// unchanged. A violation aborts, any other exception too: the fuzzer reports it as a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "npy.h"

namespace modelc::fuzz {

[[noreturn]] inline void array_finding(const char* target, const char* what) {
  std::fprintf(stderr, "%s: finding: %s\n", target, what);
  std::abort();
}

inline void check_array(const mc_npy::Array& a, const char* target) {
  const std::size_t size = mc_npy::dtype_size(a.dtype);
  if (size == 0) array_finding(target, "an array of an unsupported dtype was accepted");
  if (a.data.size() != a.numel() * size) array_finding(target, "the data does not fit the dtype and shape");
  if (a.dtype == mc_npy::kBool) {
    for (unsigned char b : a.data)
      if (b > 1) array_finding(target, "a bool that is not 0 or 1");
  }
  if (a.dtype == mc_npy::kBfloat16) return;
  mc_npy::Array back;
  try {
    back = mc_npy::decode_npy(mc_npy::encode_npy(a), "round trip");
  } catch (const mc_npy::Error&) {
    array_finding(target, "an array the reader accepted cannot be written and read back");
  }
  if (back.dtype != a.dtype || back.shape != a.shape || back.data != a.data) {
    array_finding(target, "encode_npy + decode_npy changed the array");
  }
}

/// \brief Runs `read` (bytes -> mc_npy::Array) on data[0, size) and checks what it accepts.
template <class Read>
void check_reader(Read read, const uint8_t* data, std::size_t size, const char* target) {
  try {
    check_array(read(std::string(reinterpret_cast<const char*>(data), size)), target);
  } catch (const mc_npy::Error&) {
  }
}

}  // namespace modelc::fuzz

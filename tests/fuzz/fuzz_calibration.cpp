// tests/fuzz/fuzz_calibration.cpp — fuzz target: bytes -> CalibrationTable::from_json, the reader of
// the INT8 calibration cache (--calibration-cache FILE). A modelc::Error naming the file is a clear
// refusal; an accepted cache must hold thresholds the INT8 pass can use (finite, 0 or a threshold
// whose scale has a finite float32 reciprocal) and read back the same from what to_json writes. Anything else is a finding.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <new>
#include <string>

#include "passes/calibration.h"
#include "support/error.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_calibration: finding: %s\n", what.c_str());
  std::abort();
}

constexpr const char* kFile = "fuzz_calibration.json";

bool usable(double v) {
  return std::isfinite(v) &&
         (v == 0 || (v >= modelc::kMinCalibrationThreshold && v <= std::numeric_limits<float>::max()));
}

modelc::CalibrationTable read(const std::string& text, bool* refused) {
  *refused = false;
  try {
    return modelc::CalibrationTable::from_json(text, kFile);
  } catch (const modelc::Error& e) {
    if (e.where().file != kFile || std::string(e.what()).find(kFile) == std::string::npos) {
      finding(std::string("an error that does not name the file: ") + e.what());
    }
    if (e.message().rfind("internal", 0) == 0) finding(std::string("an internal error: ") + e.what());
  } catch (const std::bad_alloc&) {
    finding("std::bad_alloc: a size taken from the cache was allocated before it was checked");
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not a modelc::Error: ") + e.what());
  } catch (...) {
    finding("an exception of an unknown type");
  }
  *refused = true;
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  bool refused = false;
  const modelc::CalibrationTable t = read(std::string(reinterpret_cast<const char*>(data), size), &refused);
  if (refused) return 0;
  if (t.order.size() != t.tensors.size()) finding("the order and the tensors differ");
  for (const auto& [name, c] : t.tensors) {
    if (!usable(c.threshold) || !usable(c.max) || !(c.scale() > 0) || !std::isfinite(1.0f / static_cast<float>(c.scale()))) {
      finding("an accepted threshold the INT8 pass cannot use, tensor '" + name + "'");
    }
  }
  const modelc::CalibrationTable back = read(t.to_json(), &refused);
  if (refused) finding("a cache the reader accepted, written by to_json, is refused");
  if (back.order != t.order || back.samples != t.samples || back.source != t.source || back.method != t.method) {
    finding("to_json + from_json changed the cache");
  }
  for (const auto& [name, c] : t.tensors) {
    const modelc::TensorCalibration* b = back.find(name);
    if (!b || b->threshold != c.threshold || b->max != c.max) finding("to_json + from_json changed tensor '" + name + "'");
  }
  return 0;
}

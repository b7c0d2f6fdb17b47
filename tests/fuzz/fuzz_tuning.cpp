// tests/fuzz/fuzz_tuning.cpp — fuzz target: bytes -> the two tuning files modelc reads from
// elsewhere: a tuning cache (`--tuning-cache FILE`, TuningCache::from_json) and a tuning driver's
// times (`modelc tune --collect FILE`, TuningCache::collect_texts). The same bytes go through both.
// A modelc::Error naming the file is a clear refusal. An accepted cache must read back the same from
// what to_json writes; a cache that --collect distils must itself be one --tuning-cache accepts
// (the user's next step), unchanged. Anything else is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "schedule/tuning_cache.h"
#include "support/error.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_tuning: finding: %s\n", what.c_str());
  std::abort();
}

constexpr const char* kCache = "fuzz_tuning.json";
constexpr const char* kTimes = "fuzz_times.json";

// Runs `read`; false (a refusal) on a modelc::Error naming `file`, a finding on anything else.
template <class Read>
bool accepted(Read read, const char* file) {
  try {
    read();
    return true;
  } catch (const modelc::Error& e) {
    if (e.where().file != file || std::string(e.what()).find(file) == std::string::npos) {
      finding(std::string("an error that does not name the file: ") + e.what());
    }
    if (e.message().rfind("internal", 0) == 0) finding(std::string("an internal error: ") + e.what());
  } catch (const std::bad_alloc&) {
    finding("std::bad_alloc: a size taken from the file was allocated before it was checked");
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not a modelc::Error: ") + e.what());
  } catch (...) {
    finding("an exception of an unknown type");
  }
  return false;
}

bool same(const modelc::TuningCache& a, const modelc::TuningCache& b) {
  if (a.device.name != b.device.name || a.device.sm != b.device.sm || a.device.sm_count != b.device.sm_count ||
      a.device.driver != b.device.driver || a.kernels.size() != b.kernels.size()) {
    return false;
  }
  for (const auto& [signature, k] : a.kernels) {
    const modelc::TunedKernel* o = b.find(signature);
    if (!o || o->tactic != k.tactic || o->candidates.size() != k.candidates.size()) return false;
    for (std::size_t i = 0; i < k.candidates.size(); ++i) {
      if (o->candidates[i].tactic != k.candidates[i].tactic || o->candidates[i].us != k.candidates[i].us) return false;
    }
  }
  return true;
}

// `c` (accepted, or distilled by --collect) written by to_json must read back as itself.
void round_trip(const modelc::TuningCache& c, const char* what) {
  modelc::TuningCache back;
  if (!accepted([&] { back = modelc::TuningCache::from_json(c.to_json(), kCache); }, kCache)) {
    finding(std::string(what) + ", written by to_json, is refused by --tuning-cache");
  }
  if (!same(c, back)) finding(std::string(what) + ": to_json + from_json changed it");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  modelc::TuningCache cache;
  if (accepted([&] { cache = modelc::TuningCache::from_json(text, kCache); }, kCache)) {
    round_trip(cache, "an accepted cache");
  }
  modelc::TuningCache collected;
  std::vector<std::string> notes;
  if (accepted([&] { collected = modelc::TuningCache::collect_texts({{kTimes, text}}, &notes); }, kTimes)) {
    round_trip(collected, "the cache --collect distilled");
  }
  return 0;
}

// compiler/schedule/tuning_cache.cpp — the tuning cache's reader and writer (see tuning_cache.h).
#include "schedule/tuning_cache.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "runtime_stub/regular_file.h"
#include "support/error.h"
#include "support/json_limits.h"

namespace modelc {

namespace {

constexpr std::size_t kMaxKernels = std::size_t{1} << 20;
constexpr std::size_t kMaxCandidates = 4096;
constexpr std::size_t kMaxString = 4096;
constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;

// Candidates fastest first; equal times by tactic name (a total order: the file is the same for the
// same measurements).
bool faster(const TunedCandidate& a, const TunedCandidate& b) {
  return a.us != b.us ? a.us < b.us : a.tactic < b.tactic;
}

using Bad = std::function<Error(const std::string&)>;

// A non-empty string field of at most kMaxString bytes; bad(...) otherwise.
std::string json_text(const nlohmann::json& v, const std::string& field, const Bad& bad) {
  if (!v.is_string()) throw bad(field + " is not a string");
  std::string r = v.get<std::string>();
  if (r.empty()) throw bad(field + " is empty");
  if (r.size() > kMaxString) {
    throw bad(field + " is " + std::to_string(r.size()) + " bytes long, more than " + std::to_string(kMaxString));
  }
  return r;
}

// An integer field in [lo, hi]; bad(...) otherwise.
int json_count(const nlohmann::json& v, const std::string& field, int64_t lo, int64_t hi, const Bad& bad) {
  if (!v.is_number_integer()) throw bad(field + " is not an integer");
  const int64_t n = v.get<int64_t>();
  if (n < lo || n > hi) throw bad(field + " is " + std::to_string(n) + ", not in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(n);
}

// A time in microseconds: finite, positive, at most 1e9; bad(...) otherwise.
double json_us(const nlohmann::json& v, const std::string& who, const Bad& bad) {
  if (!v.is_number()) throw bad(who + " has a time that is not a number");
  const double us = v.get<double>();
  if (!std::isfinite(us) || !(us > 0) || us > 1e9) throw bad(who + " has a time that is not in (0, 1e9] microseconds");
  return us;
}

std::string shown(const std::string& s) { return s.size() > 80 ? s.substr(0, 80) + "..." : s; }

// The bytes of a file modelc reads as JSON (a regular file of at most kMaxFileBytes); `flag` starts
// the messages ("--tuning-cache").
std::string read_json_file(const std::string& path, const std::string& flag) {
  Error::Where w;
  w.file = path;
  mc_io::File f;
  const std::string open = mc_io::open_regular(path, f);
  if (!open.empty()) throw Error(w, flag + ": " + open);
  if (f.size > kMaxFileBytes) throw Error(w, flag + ": larger than 256 MB");
  std::string text(static_cast<std::size_t>(f.size), '\0');
  const std::string read = mc_io::read_exactly(f, text.data(), text.size());
  if (!read.empty()) throw Error(w, flag + ": " + read);
  return text;
}

}  // namespace

double TunedKernel::us_of(const std::string& t) const {
  for (const TunedCandidate& c : candidates) {
    if (c.tactic == t) return c.us;
  }
  return -1;
}

const TunedKernel* TuningCache::find(const std::string& signature) const {
  const auto it = kernels.find(signature);
  return it == kernels.end() ? nullptr : &it->second;
}

std::string TuningCache::to_json() const {
  nlohmann::ordered_json j;
  j["modelc_tuning"] = 1;
  j["device"] = {{"name", device.name}, {"sm", device.sm}, {"sm_count", device.sm_count}, {"driver", device.driver}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& [signature, k] : kernels) {
    std::vector<TunedCandidate> sorted = k.candidates;
    std::sort(sorted.begin(), sorted.end(), faster);
    nlohmann::ordered_json cands = nlohmann::ordered_json::array();
    for (const TunedCandidate& c : sorted) cands.push_back({{"tactic", c.tactic}, {"us", c.us}});
    list.push_back({{"signature", signature}, {"tactic", k.tactic}, {"candidates", cands}});
  }
  j["kernels"] = list;
  return j.dump(1) + "\n";
}

TuningCache TuningCache::from_json(const std::string& text, const std::string& file) {
  auto bad = [&](const std::string& what) -> Error {
    Error::Where w;
    w.file = file;
    return Error(w, "not a modelc tuning cache: " + what,
                 "pass a cache modelc's tuner wrote (docs/CLI.md, \"Tuning cache\"), or none");
  };
  const nlohmann::json j = parse_marked_json(text, "modelc_tuning", bad);
  const auto text_of = [&](const nlohmann::json& v, const std::string& field) { return json_text(v, field, bad); };
  const auto count_of = [&](const nlohmann::json& v, const std::string& field, int64_t lo, int64_t hi) {
    return json_count(v, field, lo, hi, bad);
  };
  TuningCache c;
  c.file = file;
  try {
    const nlohmann::json& d = j.at("device");
    if (!d.is_object()) throw bad("\"device\" is not an object");
    c.device.name = text_of(d.at("name"), "the device's \"name\"");
    c.device.sm = count_of(d.at("sm"), "the device's \"sm\"", 10, 1000);
    c.device.sm_count = count_of(d.at("sm_count"), "the device's \"sm_count\"", 1, 100000);
    c.device.driver = text_of(d.at("driver"), "the device's \"driver\"");
    const nlohmann::json& list = j.at("kernels");
    if (!list.is_array()) throw bad("\"kernels\" is not an array");
    if (list.size() > kMaxKernels) {
      throw bad("\"kernels\" lists " + std::to_string(list.size()) + " kernels, more than " + std::to_string(kMaxKernels));
    }
    for (const auto& e : list) {
      if (!e.is_object()) throw bad("a kernel is not an object");
      TunedKernel k;
      k.signature = text_of(e.at("signature"), "a kernel's \"signature\"");
      const std::string who = "kernel '" + shown(k.signature) + "'";
      k.tactic = text_of(e.at("tactic"), who + ": \"tactic\"");
      const nlohmann::json& cands = e.at("candidates");
      if (!cands.is_array() || cands.empty()) throw bad(who + ": \"candidates\" is not a non-empty array");
      if (cands.size() > kMaxCandidates) throw bad(who + ": more than " + std::to_string(kMaxCandidates) + " candidates");
      for (const auto& ce : cands) {
        if (!ce.is_object()) throw bad(who + ": a candidate is not an object");
        TunedCandidate t;
        t.tactic = text_of(ce.at("tactic"), who + ": a candidate's \"tactic\"");
        t.us = json_us(ce.at("us"), who + ": candidate '" + shown(t.tactic) + "'", bad);
        if (k.us_of(t.tactic) >= 0) throw bad(who + ": candidate '" + shown(t.tactic) + "' is listed twice");
        k.candidates.push_back(t);
      }
      std::sort(k.candidates.begin(), k.candidates.end(), faster);
      const double winner = k.us_of(k.tactic);
      if (winner < 0) throw bad(who + ": the winner '" + shown(k.tactic) + "' is not among its candidates");
      if (winner > k.candidates.front().us) {
        throw bad(who + ": the winner '" + shown(k.tactic) + "' is not the fastest candidate");
      }
      if (!c.kernels.emplace(k.signature, k).second) throw bad(who + " is listed twice");
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw bad(std::string("a field is missing or has the wrong type (") + e.what() + ")");
  }
  return c;
}

TuningCache TuningCache::read(const std::string& path) {
  return from_json(read_json_file(path, "--tuning-cache"), path);
}

TuningCache TuningCache::collect(const std::vector<std::string>& paths, std::vector<std::string>* notes) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& path : paths) files.emplace_back(path, read_json_file(path, "--collect"));
  return collect_texts(files, notes);
}

TuningCache TuningCache::collect_texts(const std::vector<std::pair<std::string, std::string>>& files,
                                       std::vector<std::string>* notes) {
  TuningCache c;
  std::string device_file;
  std::map<std::string, std::map<std::string, double>> times;  // signature -> tactic -> fastest us
  for (const auto& file : files) {
    const std::string& path = file.first;  // (not a structured binding: the lambda below captures it)
    const std::string& text = file.second;
    auto bad = [&](const std::string& what) -> Error {
      Error::Where w;
      w.file = path;
      return Error(w, "not a tuning driver's times: " + what,
                   "pass the times.json a tuning folder's driver wrote (modelc tune MODEL -o DIR; make -C DIR run)");
    };
    const nlohmann::json j = parse_marked_json(text, "modelc_tuning_times", bad);
    try {
      const nlohmann::json& d = j.at("device");
      if (!d.is_object()) throw bad("\"device\" is not an object");
      TuningDevice dev;
      dev.name = json_text(d.at("name"), "the device's \"name\"", bad);
      dev.sm = json_count(d.at("sm"), "the device's \"sm\"", 10, 1000, bad);
      dev.sm_count = json_count(d.at("sm_count"), "the device's \"sm_count\"", 1, 100000, bad);
      const int driver = json_count(d.at("driver"), "the device's \"driver\"", 0, 1000000, bad);
      dev.driver = std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
      if (device_file.empty()) {
        c.device = dev;
        device_file = path;
      } else if (dev.name != c.device.name || dev.sm != c.device.sm || dev.sm_count != c.device.sm_count) {
        throw bad("its device, " + dev.name + " (sm_" + std::to_string(dev.sm) + ", " + std::to_string(dev.sm_count) +
                  " SMs), is not " + device_file + "'s, " + c.device.name + " (sm_" + std::to_string(c.device.sm) + ", " +
                  std::to_string(c.device.sm_count) + " SMs): a cache holds one device's times");
      }
      const nlohmann::json& list = j.at("kernels");
      if (!list.is_array()) throw bad("\"kernels\" is not an array");
      if (list.size() > kMaxKernels) throw bad("\"kernels\" lists more than " + std::to_string(kMaxKernels) + " kernels");
      for (const auto& e : list) {
        if (!e.is_object()) throw bad("a kernel is not an object");
        const std::string signature = json_text(e.at("signature"), "a kernel's \"signature\"", bad);
        const std::string who = "kernel '" + shown(signature) + "'";
        const nlohmann::json& cands = e.at("candidates");
        if (!cands.is_array() || cands.empty()) throw bad(who + ": \"candidates\" is not a non-empty array");
        if (cands.size() > kMaxCandidates) throw bad(who + ": more than " + std::to_string(kMaxCandidates) + " candidates");
        std::map<std::string, double>& mine = times[signature];
        int left_out = 0;
        for (const auto& ce : cands) {
          if (!ce.is_object()) throw bad(who + ": a candidate is not an object");
          const std::string tactic = json_text(ce.at("tactic"), who + ": a candidate's \"tactic\"", bad);
          const std::string status = json_text(ce.at("status"), who + ": candidate '" + shown(tactic) + "': \"status\"", bad);
          if (status != "ok") {
            if (status != "rejected" && status != "failed") {
              throw bad(who + ": candidate '" + shown(tactic) + "' has the status '" + shown(status) +
                        "' (ok, rejected or failed)");
            }
            ++left_out;
            continue;
          }
          const double us = json_us(ce.at("us"), who + ": candidate '" + shown(tactic) + "'", bad);
          auto [it, added] = mine.emplace(tactic, us);
          if (!added) it->second = std::min(it->second, us);
          // A signature listed again (here or in an earlier file) adds its tactics to the same
          // entry: the distilled cache must stay one that --tuning-cache reads (fuzz_tuning's finding).
          if (mine.size() > kMaxCandidates) {
            throw bad(who + ": more than " + std::to_string(kMaxCandidates) + " distinct candidates in all the files");
          }
        }
        if (left_out > 0 && notes) {
          notes->push_back(path + ": " + shown(signature) + ": " + std::to_string(left_out) +
                           " candidate(s) rejected or failed there, left out");
        }
      }
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw bad(std::string("a field is missing or has the wrong type (") + e.what() + ")");
    }
  }
  if (times.size() > kMaxKernels) {
    Error::Where w;
    w.file = files.back().first;
    throw Error(w, "not a tuning driver's times: the files list more than " + std::to_string(kMaxKernels) + " kernels in all");
  }
  for (const auto& [signature, tactics] : times) {
    if (tactics.empty()) {
      if (notes) notes->push_back(shown(signature) + ": no candidate ran and agreed: not in the cache");
      continue;
    }
    TunedKernel k;
    k.signature = signature;
    for (const auto& [tactic, us] : tactics) k.candidates.push_back({tactic, us});
    std::sort(k.candidates.begin(), k.candidates.end(), faster);
    k.tactic = k.candidates.front().tactic;
    c.kernels.emplace(signature, k);
  }
  return c;
}

}  // namespace modelc

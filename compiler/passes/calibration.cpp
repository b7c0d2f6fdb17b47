// compiler/passes/calibration.cpp — thresholds from histograms, and the calibration cache (see
// calibration.h).
#include "passes/calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "support/error.h"
#include "support/json_limits.h"

namespace modelc {

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::entropy: return "entropy";
    case CalibrationMethod::percentile: return "percentile";
    case CalibrationMethod::max: return "max";
  }
  return "?";
}

CalibrationMethod parse_calibration_method(const std::string& s) {
  if (s == "entropy") return CalibrationMethod::entropy;
  if (s == "percentile") return CalibrationMethod::percentile;
  if (s == "max") return CalibrationMethod::max;
  throw Error("calibration method '" + s + "' is not one modelc knows", "write entropy, percentile or max");
}

double TensorCalibration::scale() const { return threshold > 0 ? threshold / 127.0 : 1e-12; }

const TensorCalibration* CalibrationTable::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

std::string CalibrationTable::to_json() const {
  nlohmann::ordered_json j;
  j["modelc_calibration"] = 1;
  j["method"] = calibration_method_name(method);
  j["samples"] = samples;
  j["source"] = source;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const std::string& name : order) {
    const TensorCalibration& t = tensors.at(name);
    nlohmann::ordered_json e;
    e["name"] = name;
    e["threshold"] = t.threshold;
    e["scale"] = t.scale();
    e["max"] = t.max;
    list.push_back(e);
  }
  j["tensors"] = list;
  return j.dump(1) + "\n";
}

// A cache may come from elsewhere (another machine, a download): it is bounded like a model. A
// cache modelc writes holds one entry per tensor of a model, names as the model spells them, and
// thresholds of float32 data; anything beyond these limits is not one.
constexpr std::size_t kMaxCacheTensors = std::size_t{1} << 22;
constexpr std::size_t kMaxCacheString = 1 << 16;
constexpr int64_t kMaxCacheSamples = int64_t{1} << 31;

CalibrationTable CalibrationTable::from_json(const std::string& text, const std::string& where) {
  auto bad = [&](const std::string& what) -> Error {
    Error::Where w;
    w.file = where;
    return Error(w, "not a modelc calibration cache: " + what,
                 "write one with --int8 --calibrate DIR (it is saved beside the output), or pass the right file");
  };
  nlohmann::json j = parse_marked_json(text, "modelc_calibration", bad);
  // A string field, bounded (names in messages are cut to 80 bytes).
  auto text_of = [&](const nlohmann::json& v, const std::string& field) {
    std::string r = v.get<std::string>();
    if (r.size() > kMaxCacheString) {
      throw bad(field + " is " + std::to_string(r.size()) + " bytes long, more than " + std::to_string(kMaxCacheString));
    }
    return r;
  };
  auto shown = [](const std::string& name) { return name.size() > 80 ? name.substr(0, 80) + "..." : name; };
  // A threshold or max of float32 data: 0, or from kMinCalibrationThreshold (a smaller scale has
  // no finite float32 reciprocal) to FLT_MAX.
  auto float_range = [](double v) {
    return std::isfinite(v) && (v == 0 || (v >= kMinCalibrationThreshold && v <= std::numeric_limits<float>::max()));
  };
  CalibrationTable t;
  try {
    const std::string method = text_of(j.at("method"), "\"method\"");
    if (method != "entropy" && method != "percentile" && method != "max") {
      throw bad("\"method\" is '" + shown(method) + "', not entropy, percentile or max");
    }
    t.method = parse_calibration_method(method);
    if (!j.at("samples").is_number_integer()) throw bad("\"samples\" is not an integer");
    t.samples = j.at("samples").get<int64_t>();
    if (t.samples < 0 || t.samples > kMaxCacheSamples) throw bad("\"samples\" is " + std::to_string(t.samples) + ", not a count");
    t.source = text_of(j.at("source"), "\"source\"");
    const nlohmann::json& list = j.at("tensors");
    if (!list.is_array()) throw bad("\"tensors\" is not an array");
    if (list.size() > kMaxCacheTensors) {
      throw bad("\"tensors\" lists " + std::to_string(list.size()) + " tensors, more than " + std::to_string(kMaxCacheTensors));
    }
    for (const auto& e : list) {
      const std::string name = text_of(e.at("name"), "a tensor's name");
      if (name.empty()) throw bad("a tensor has an empty name");
      TensorCalibration c;
      c.threshold = e.at("threshold").get<double>();
      c.max = e.contains("max") ? e.at("max").get<double>() : c.threshold;
      if (!float_range(c.threshold) || c.threshold < 0) {
        throw bad("tensor '" + shown(name) + "' has a threshold that is neither 0 nor in [127 x FLT_MIN (1.5e-36), FLT_MAX]");
      }
      if (!float_range(c.max) || c.max < 0) throw bad("tensor '" + shown(name) + "' has a max that is neither 0 nor in [127 x FLT_MIN (1.5e-36), FLT_MAX]");
      if (!t.tensors.emplace(name, c).second) throw bad("tensor '" + shown(name) + "' is listed twice");
      t.order.push_back(name);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw bad(std::string("a field is missing or has the wrong type (") + e.what() + ")");
  }
  return t;
}

void AbsHistogram::add(double a) {
  if (!(range > 0)) {
    counts[0] += 1;
    return;
  }
  int bin = static_cast<int>(a / range * kCalibrationBins);
  if (bin >= kCalibrationBins) bin = kCalibrationBins - 1;
  if (bin < 0) bin = 0;
  counts[static_cast<std::size_t>(bin)] += 1;
}

namespace {

/// KL(P || Q) of the first `bins` bins of the histogram against their 128-level quantization.
double divergence(const std::vector<double>& h, int bins, int levels) {
  std::vector<double> p(h.begin(), h.begin() + bins);
  double outliers = 0;
  for (std::size_t i = static_cast<std::size_t>(bins); i < h.size(); ++i) outliers += h[i];
  p.back() += outliers;
  // Q: merge the bins into `levels` groups, spread each group's sum over its non-empty bins (of the
  // original histogram, so P and Q have the same support).
  std::vector<double> q(static_cast<std::size_t>(bins), 0.0);
  const double per = static_cast<double>(bins) / levels;
  for (int l = 0; l < levels; ++l) {
    const int start = static_cast<int>(std::floor(l * per));
    const int end = l + 1 == levels ? bins : static_cast<int>(std::floor((l + 1) * per));
    double sum = 0;
    int nonzero = 0;
    for (int i = start; i < end; ++i) {
      sum += h[static_cast<std::size_t>(i)];
      nonzero += h[static_cast<std::size_t>(i)] != 0;
    }
    if (nonzero == 0) continue;
    for (int i = start; i < end; ++i) {
      if (h[static_cast<std::size_t>(i)] != 0) q[static_cast<std::size_t>(i)] = sum / nonzero;
    }
  }
  double ps = 0, qs = 0;
  for (int i = 0; i < bins; ++i) {
    ps += p[static_cast<std::size_t>(i)];
    qs += q[static_cast<std::size_t>(i)];
  }
  if (ps <= 0 || qs <= 0) return INFINITY;
  double kl = 0;
  for (int i = 0; i < bins; ++i) {
    const double pi = p[static_cast<std::size_t>(i)] / ps;
    if (pi == 0) continue;
    const double qi = q[static_cast<std::size_t>(i)] / qs;
    // A bin P has and Q lacks (only the last one, where the outliers went): a small floor, as the
    // inference engines smooth it.
    kl += pi * std::log(pi / (qi > 0 ? qi : 1e-12));
  }
  return kl;
}

}  // namespace

double calibration_threshold(const AbsHistogram& h, CalibrationMethod method) {
  if (!(h.range > 0) || method == CalibrationMethod::max) return h.range > 0 ? h.range : 0.0;
  const double width = h.range / kCalibrationBins;
  double total = 0;
  for (double c : h.counts) total += c;
  if (total <= 0) return h.range;
  if (method == CalibrationMethod::percentile) {
    const double want = 0.9999 * total;
    double cum = 0;
    for (int i = 0; i < kCalibrationBins; ++i) {
      cum += h.counts[static_cast<std::size_t>(i)];
      if (cum >= want) return (i + 1) * width;
    }
    return h.range;
  }
  constexpr int kLevels = 128;
  // The first bin holds the exact zeros (a ReLU's half of the values): as the inference engine's
  // calibrator does, it counts as its neighbour, or the zero spike, merged with the bins beside it
  // in Q, would push the threshold down to 128 bins whatever the tail.
  std::vector<double> counts = h.counts;
  counts[0] = counts[1];
  int best = kCalibrationBins;
  double best_kl = INFINITY;
  for (int bins = kLevels; bins <= kCalibrationBins; ++bins) {
    const double kl = divergence(counts, bins, kLevels);
    if (kl < best_kl) {  // the first (smallest threshold) of equal divergences
      best_kl = kl;
      best = bins;
    }
  }
  return (best + 0.5) * width;
}

}  // namespace modelc

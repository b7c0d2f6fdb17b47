// compiler/passes/calibration.h — INT8 calibration: per tensor, the threshold T of its values that
// maps to 127 (symmetric INT8: scale = T / 127), chosen from what the reference interpreter saw on
// calibration data (pipeline/calibrate.h collects it), and the readable cache that carries the
// thresholds from one compile to the next (`--calibration-cache FILE`: a build needs no data).
//
// Methods (`--calibration`):
//   entropy     the inference engine's KL-divergence choice: a 2048-bin histogram of |x| over
//               [0, max|x|], its first bin (the exact zeros) counted as the second; for each
//               candidate threshold of i bins (128 .. 2048) the distribution P (the first i bins,
//               the outliers added to the last) against Q (P merged into 128 levels and expanded
//               back over P's non-empty bins); T = the middle of bin i for the i with the smallest
//               KL(P || Q). The default.
//   percentile  T = the upper edge of the histogram bin where 99.99% of |x| is reached.
//   max         T = max |x|.
// The cache is JSON: {"modelc_calibration": 1, "method", "samples", "source", "tensors": [{"name",
// "threshold", "scale", "max"}, ...]} in the graph's order, numbers written so they read back to the
// same doubles: the same cache gives byte-identical output.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace modelc {

enum class CalibrationMethod { entropy, percentile, max };
const char* calibration_method_name(CalibrationMethod m);
/// "entropy" / "percentile" / "max"; Error naming the accepted words otherwise.
CalibrationMethod parse_calibration_method(const std::string& s);

/// \brief The smallest positive threshold a cache may hold: its scale (threshold / 127) is then a
/// normal float32, whose reciprocal is finite. A cache also holds thresholds and maxima of at most
/// FLT_MAX (float32 data).
constexpr double kMinCalibrationThreshold = 127.0 * 1.17549435082228750797e-38;  // 127 x FLT_MIN

/// \brief One tensor's calibration.
struct TensorCalibration {
  double threshold = 0;  ///< |x| mapped to 127
  double max = 0;        ///< the largest |x| seen
  double scale() const;  ///< threshold / 127 (a tiny positive scale for an all-zero tensor)
};

/// \brief The calibration of a model: what the INT8 precision pass reads (PassOptions::calibration).
struct CalibrationTable {
  CalibrationMethod method = CalibrationMethod::entropy;
  int64_t samples = 0;
  std::string source;  ///< "random:16 (seeds 1..16)", "DIR (16 files)", "cache FILE"
  /// In the graph's order (graph inputs, then node outputs), by value name.
  std::vector<std::string> order;
  std::map<std::string, TensorCalibration> tensors;

  const TensorCalibration* find(const std::string& name) const;
  /// The JSON text of the cache.
  std::string to_json() const;
  /// Reads a cache's text; Error naming `where` (the file) when it is not one.
  static CalibrationTable from_json(const std::string& text, const std::string& where);
};

/// \brief A histogram of |x| over [0, range] in kCalibrationBins bins (what entropy and percentile
/// read); values above range fall in the last bin.
constexpr int kCalibrationBins = 2048;
struct AbsHistogram {
  double range = 0;
  std::vector<double> counts = std::vector<double>(kCalibrationBins, 0.0);
  void add(double abs_value);
};

/// The threshold of a histogram by `method` (entropy or percentile; max: the range).
double calibration_threshold(const AbsHistogram& h, CalibrationMethod method);

}  // namespace modelc

// compiler/pipeline/calibrate.h — INT8 calibration data and its collection: the reference
// interpreter runs the graph as the stages before `precision` leave it (so every tensor name the
// INT8 precision pass looks up exists) over each calibration sample, recording max |x| of every
// float tensor (graph inputs and node outputs), then, for entropy and percentile, a second run
// filling a histogram of |x| per tensor over [0, max]; passes/calibration.h turns them into
// thresholds.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/calibration.h"
#include "passes/pass.h"
#include "reference/interpreter.h"

namespace modelc {

/// \brief Calibration samples: either held in memory (`samples`) or read one at a time when their
/// turn comes (`count` and `load`: a folder's files, random:N's seeded draws), so that calibrating
/// over hundreds of samples keeps one in memory; and where they came from (the table's `source`).
struct CalibrationData {
  std::vector<TensorMap> samples;  ///< in memory (used when `load` is empty)
  int64_t count = 0;               ///< with `load`: how many samples
  /// Sample i (0-based, i < count), read or drawn on each call; throws Error naming its file.
  std::function<TensorMap(int64_t)> load;
  std::string source;

  int64_t size() const { return load ? count : static_cast<int64_t>(samples.size()); }
  TensorMap sample(int64_t i) const { return load ? load(i) : samples.at(static_cast<std::size_t>(i)); }
};

/// \brief `--calibrate SPEC`: "random:N" (N seeded random inputs, seeds 1..N: never the seed-0 input
/// run-reference and verify use by default), or a folder of .npy / .pb files (a model with one input:
/// one file per sample) or of sub-folders with one file per model input, named after it (the
/// sanitized name run-reference writes, or the name itself). Samples are taken in file-name order,
/// the first `max_samples` of them when it is above 0 (`--calibrate-max N`). The files are listed
/// here and read when calibrate() comes to them. Error naming the folder or file for anything else
/// (no samples, a wrong shape or type, a missing input).
CalibrationData load_calibration_data(const Graph& g, const std::string& spec, int64_t max_samples = 0);

/// \brief Where a calibration is: pass `pass` of `passes` (1: max |x|; 2: the histograms, for entropy
/// and percentile), `done` of `samples` samples finished.
using CalibrationProgress = std::function<void(int pass, int passes, int64_t done, int64_t samples)>;

/// \brief Runs the calibration: clones `g`, runs the graph stages before "precision" with `o`
/// (its precision options cleared), then the reference over every sample, one at a time (the
/// observer folds each tensor into its statistics; nothing of a sample outlives its run);
/// thresholds by `method`. `accumulation`: the reference's path (reference/kernels.h); `progress`,
/// when set, is told after every sample.
CalibrationTable calibrate(const Graph& g, const PassOptions& o, const CalibrationData& data, CalibrationMethod method,
                           reference::Accumulation accumulation = reference::Accumulation::f64,
                           const CalibrationProgress& progress = nullptr);

/// \brief Runs the graph stages that come before "precision" (what calibrate() sees; the precision
/// pass then runs on the same names).
void run_stages_before_precision(Graph& g, const PassOptions& o);

}  // namespace modelc

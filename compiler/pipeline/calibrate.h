// compiler/pipeline/calibrate.h — INT8 calibration data and its collection: the reference
// interpreter runs the graph as the stages before `precision` leave it (so every tensor name the
// INT8 precision pass looks up exists) over each calibration sample, recording max |x| of every
// float tensor (graph inputs and node outputs), then, for entropy and percentile, a second run
// filling a histogram of |x| per tensor over [0, max]; passes/calibration.h turns them into
// thresholds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/calibration.h"
#include "passes/pass.h"
#include "reference/interpreter.h"

namespace modelc {

/// \brief Calibration samples: one TensorMap (every non-constant graph input) per sample, and where
/// they came from (the table's `source`).
struct CalibrationData {
  std::vector<TensorMap> samples;
  std::string source;
};

/// \brief `--calibrate SPEC`: "random:N" (N seeded random inputs, seeds 1..N: never the seed-0 input
/// run-reference and verify use by default), or a folder of .npy / .pb files (a model with one input:
/// one file per sample) or of sub-folders with one file per model input, named after it (the
/// sanitized name run-reference writes, or the name itself). Samples are taken in file-name order.
/// Error naming the folder or file for anything else (no samples, a wrong shape or type, a missing
/// input).
CalibrationData load_calibration_data(const Graph& g, const std::string& spec);

/// \brief Runs the calibration: clones `g`, runs the graph stages before "precision" with `o`
/// (its precision options cleared), then the reference over every sample; thresholds by `method`.
CalibrationTable calibrate(const Graph& g, const PassOptions& o, const CalibrationData& data, CalibrationMethod method);

/// \brief Runs the graph stages that come before "precision" (what calibrate() sees; the precision
/// pass then runs on the same names).
void run_stages_before_precision(Graph& g, const PassOptions& o);

}  // namespace modelc

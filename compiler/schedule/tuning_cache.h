// compiler/schedule/tuning_cache.h — measured tactic choices (`modelc MODEL --tuning-cache FILE`):
// for one GPU, per kernel signature, the tactic that measured fastest and every candidate's time.
// The tactics stage takes a cached winner where a tensor-core kernel's signature matches and the
// --arch is the cache's (schedule/tactics_linear.cpp choose_tc_tile), and the cost model's choice
// elsewhere. The file is JSON, sorted, one line per candidate: readable and diffable (docs/CLI.md,
// "Tuning cache"). A cache may come from anywhere: it is bounded like a model and any defect is an
// Error naming the file.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace modelc {

/// \brief One candidate tactic and its measured time (microseconds).
struct TunedCandidate {
  std::string tactic;  ///< TcTile::name(), e.g. "128x64x32 w2x2 cp.async 3 stages"
  double us = 0;
};

/// \brief What was measured for one kernel signature: the winner and every candidate (the winner
/// among them), fastest first.
struct TunedKernel {
  std::string signature;  ///< tuning_signature (schedule/tactics.h)
  std::string tactic;     ///< the winner
  std::vector<TunedCandidate> candidates;
  /// The measured time of `tactic` among the candidates; negative when it was not measured.
  double us_of(const std::string& tactic) const;
};

/// \brief The GPU the times come from.
struct TuningDevice {
  std::string name;     ///< e.g. "NVIDIA H100 80GB HBM3"
  int sm = 0;           ///< compute capability as an SM number (90): the --arch it applies to
  int sm_count = 0;     ///< streaming multiprocessors
  std::string driver;   ///< the driver version the times were taken with
};

/// \brief A tuning cache: one device, its measured kernels by signature.
struct TuningCache {
  std::string file;  ///< where it was read (messages); empty for one made in memory
  TuningDevice device;
  std::map<std::string, TunedKernel> kernels;  ///< by signature

  const TunedKernel* find(const std::string& signature) const;
  /// The cache as JSON (kernels by signature, candidates fastest first): what from_json reads.
  std::string to_json() const;
  /// Parses `text` (read from `file`, named in every Error). Refused: not JSON, nested deeper than
  /// 64, "modelc_tuning" not 1, a missing or mistyped field, a string over 4096 bytes, more than
  /// 2^20 kernels or 4096 candidates for one, a time that is not finite and positive, a winner that
  /// is not among its candidates or not the fastest, a signature listed twice.
  static TuningCache from_json(const std::string& text, const std::string& file);
  /// Reads and parses the file at `path` (a regular file of at most 256 MB).
  static TuningCache read(const std::string& path);
  /// \brief `modelc tune --collect`: the cache of the times files tuning drivers wrote
  /// (runtime_stub/tune.h, "modelc_tuning_times": 1): per signature the candidates that ran and
  /// agreed with the cost model's choice, fastest first, the winner the fastest (a signature in
  /// several files: each tactic's smallest time). Rejected and failed candidates are left out, and
  /// `notes` (if given) says where. Every file must come from one device (name, SM, SM count).
  /// Error naming the file for one that is not a times file, or of another device.
  static TuningCache collect(const std::vector<std::string>& paths, std::vector<std::string>* notes = nullptr);
  /// \brief collect() of files already read: each entry is a file's name (named in every Error)
  /// and its text. What collect() does after reading, and what the fuzz target drives.
  static TuningCache collect_texts(const std::vector<std::pair<std::string, std::string>>& files,
                                   std::vector<std::string>* notes = nullptr);
};

}  // namespace modelc

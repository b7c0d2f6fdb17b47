// compiler/cli/commands/calibration_flags.cpp — --int8's calibration for the commands that compile or
// simulate (compile, verify, run-reference): computed from --calibrate (pipeline/calibrate.h) or read
// from --calibration-cache (passes/calibration.h), and the cache written beside a compiled folder.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands/commands.h"
#include "io/tensor_io.h"
#include "passes/calibration.h"
#include "passes/pass.h"
#include "pipeline/calibrate.h"
#include "runtime_stub/regular_file.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc::cli {

std::shared_ptr<const CalibrationTable> calibration_for(const PrecisionFlags& f, const Graph& g, const PassOptions& o,
                                                        std::ostream& log) {
  if (!f.int8) return nullptr;
  if (!f.calibration_cache.empty()) {
    Error::Where w;
    w.file = f.calibration_cache;
    mc_io::File file;
    const std::string open = mc_io::open_regular(f.calibration_cache, file);
    if (!open.empty()) throw Error(w, "--calibration-cache: " + open);
    if (file.size > (256u << 20)) throw Error(w, "--calibration-cache: larger than 256 MB: not a calibration cache");
    std::string text(static_cast<std::size_t>(file.size), '\0');
    const std::string read = mc_io::read_exactly(file, text.data(), text.size());
    if (!read.empty()) throw Error(w, "--calibration-cache: " + read);
    auto t = std::make_shared<CalibrationTable>(CalibrationTable::from_json(text, f.calibration_cache));
    log << "calibration: " << t->tensors.size() << " tensors from " << f.calibration_cache << " ("
        << calibration_method_name(t->method) << ", " << t->samples << " samples of " << t->source << ")\n";
    return t;
  }
  if (f.calibrate.empty()) {
    throw Error("--int8 needs calibration data or a calibration cache",
                "add --calibrate DIR (a folder of .npy inputs), --calibrate random:N (N seeded random inputs), or "
                "--calibration-cache FILE (written beside an earlier build's output)");
  }
  const CalibrationData data = load_calibration_data(g, f.calibrate, f.calibrate_max);
  // Progress on a terminal only: one line, rewritten after every sample (quiet in logs and pipes).
  CalibrationProgress progress;
  if (isatty(STDERR_FILENO)) {
    progress = [](int pass, int passes, int64_t done, int64_t samples) {
      std::fprintf(stderr, "\rcalibration: pass %d of %d (%s), sample %lld of %lld", pass, passes,
                   pass == 1 ? "max |x|" : "histograms", static_cast<long long>(done), static_cast<long long>(samples));
      if (pass == passes && done == samples) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    };
  }
  auto t = std::make_shared<CalibrationTable>(
      calibrate(g, o, data, parse_calibration_method(f.calibration), reference::Accumulation::f64, progress));
  log << "calibration: " << t->tensors.size() << " tensors, " << calibration_method_name(t->method) << " over "
      << t->source << "\n";
  return t;
}

std::string write_calibration_cache(const CalibrationTable& t, const std::string& dir, const std::string& name) {
  const std::string path = (fs::path(dir) / (name + "_calibration.json")).string();
  write_file_atomic(path, t.to_json());
  return path;
}

}  // namespace modelc::cli

// codegen/tune.h — `modelc tune`'s tuning folder (docs/TUNING.md): for each distinct tuning
// signature of a schedule compiled with PassOptions::tune_candidates, its candidate tactics
// (Kernel::tune_candidates) each instantiated as a kernel of its own on buffers of the kernel's
// sizes, and a driver (runtime_stub/tune.h) that checks every candidate's output against the cost
// model's choice and times each one. The folder builds with make alone (nvcc; `make emu`: the host
// emulation) and writes times.json, which `modelc tune --collect` distils into a tuning cache.
//
//   NAME_tune.cu        the driver's tables (signatures, buffers, candidates) and main()
//   NAME_tune_sI.cu     signature I's candidates: entry points NAME_sI_cJ and their enqueue
//                       functions (one file per signature: make -j compiles them in parallel)
//   tuning.json         what the folder holds: the model, arch, signatures, candidates, estimates
//   Makefile README.md runtime/ kernels/
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace modelc {

struct TuneOptions {
  std::string source;    ///< the model file (its file name appears in the folder)
  std::string flags;     ///< the compile flags, as the folder's README repeats them
  std::string data_dir;  ///< holds templates/, runtime_stub/, embed/ ("": data_dir())
};

/// \brief The kernels `modelc tune` times: per distinct tuning signature the first kernel that has it
/// (the others run the same code on the same shapes), in schedule order.
std::vector<const Kernel*> tuned_kernels(const Schedule& s);

/// \brief The tuning folder's text files by path. Throws Error when the schedule has no kernel to
/// tune (no tensor-core kernel with candidates) or a family cannot emit a candidate.
std::map<std::string, std::string> render_tuning(const Schedule& s, const TuneOptions& o);

/// \brief Writes the tuning folder `dir` atomically (replacing a previous tuning folder; refusing
/// to replace anything else); returns its files, sorted.
std::vector<std::string> emit_tuning(const Schedule& s, const std::string& dir, const TuneOptions& o);

}  // namespace modelc

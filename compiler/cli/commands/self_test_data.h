// compiler/cli/commands/self_test_data.h — the data a compile puts into the program for its
// self-test (codegen EmitOptions::self_test; runtime_stub/self_test.h checks them).
#pragma once

#include <string>

#include "cli/commands/commands.h"
#include "codegen/emitter.h"
#include "schedule/stages.h"

namespace modelc::cli {

/// \brief --self-test-data (on), --no-self-test-data (off), or neither (automatic).
enum class SelfTestMode { automatic, on, off };

/// Above this many FLOPs (the kernels' sum) a compile leaves the data out unless asked: the
/// reference interpreter's run on them would lengthen the compile by seconds or more.
constexpr double kSelfTestMaxFlops = 1e8;

/// \brief Puts the self-test's data of `model` (compiled with `load`, `opt` into `s`, its largest
/// batch profile) into `eo`: seeded random inputs (seed 0), the reference interpreter's outputs for
/// them after the graph stages of `opt` (the program's precision), and the tolerance `modelc
/// verify` holds that precision to. Leaves them out (with the reason in eo.no_self_test) for `off`,
/// for `automatic` above kSelfTestMaxFlops, and when the reference cannot run the model. Returns
/// one line for the compile's output.
std::string add_self_test_data(EmitOptions& eo, const std::string& model, const LoadFlags& load, const LowerOptions& opt,
                               const Schedule& s, SelfTestMode mode);

}  // namespace modelc::cli

// compiler/cli/commands/profiles.h — a model loaded and lowered at each batch the flags ask for
// (one, or batch profiles: --batch 1,8,32), for the commands that compile (compile, verify).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/commands/commands.h"
#include "pipeline/pipeline.h"

namespace modelc::cli {

/// \brief The model's schedules, ascending batch: one without batch profiles, else one per
/// profile, their weights one blob (schedule/profiles.h share_weights) and their batched inputs
/// and outputs marked. The graphs outlive the schedules (kernels point at their nodes).
struct LoweredModel {
  std::vector<std::unique_ptr<Graph>> graphs;
  std::vector<Schedule> schedules;
  std::vector<const Schedule*> profiles() const;  ///< the schedules, for emit_profiles
};

/// \brief Loads `model` at each batch of batch_profiles(flags) (or once, without profiles) and runs
/// the pipeline on each. With several profiles, the model at the smallest and at the largest batch
/// must compute item by item alike (frontend/batch.h check_batch) and keep the batch in the first
/// dim of every input and output that holds it. Errors of one profile's compile say its batch. An
/// error about the model as a whole names the model's file.
LoweredModel lower_model(const std::string& model, const LoadFlags& flags, const LowerOptions& opt);

}  // namespace modelc::cli

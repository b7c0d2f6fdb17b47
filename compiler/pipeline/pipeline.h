// compiler/pipeline/pipeline.h — the one ordered list of stages that turns an imported, shape-
// inferred Graph into a Schedule: the graph passes (compiler/passes/, Graph -> Graph) and then
// the schedule stages (compiler/schedule/stages.h, Schedule -> Schedule, the first starting it
// from the graph). pipeline() is that list; --disable-pass, --print-after, --verify-each and
// `modelc passes` read it and nothing else. docs/ARCHITECTURE.md draws it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"
#include "schedule/stages.h"

namespace modelc {

enum class StageKind {
  graph,     ///< a pass: rewrites the Graph (the reference interpreter can run its result)
  schedule,  ///< a schedule stage: builds the Schedule (kernels, buffers, tactics)
};

/// \brief What the stages work on: the graph, the options and, once the schedule stages begin,
/// the Schedule (begin_schedule).
struct Compilation {
  Graph& graph;
  const LowerOptions& options;
  std::unique_ptr<Schedule> schedule;  ///< created by the first schedule stage
};

/// \brief One stage of the pipeline.
struct Stage {
  const char* name;   ///< what --disable-pass / --print-after take
  StageKind kind;
  const char* needs;  ///< one line: what must hold before it runs
  const char* does;   ///< one line: what it does (`modelc passes`)
  bool optional;      ///< --disable-pass may skip it (the others are needed for a program)
  /// When the stage runs for these options (nullptr: always), e.g. precision only with --fp16.
  bool (*runs_for)(const LowerOptions&);
  bool (*run)(Compilation&);  ///< returns true when it changed something
  /// True: the stage adds or removes no kernel, whatever it changes (lower() checks it). The kernel
  /// count is final after the last stage without it, so a count of the kernels without another
  /// stage (LowerOptions::count_stage_kernels) stops there. A stage that may change the kernel list
  /// leaves it false.
  bool keeps_kernel_count = false;
};

/// The stages in order: graph passes first, then schedule stages.
const std::vector<Stage>& pipeline();

/// \brief Checks that every --disable-pass and --print-after name is a stage (print-after also
/// takes "all") and that no disabled stage is a needed one; Error naming the flag and the stages.
void check_stage_flags(const PassOptions& o);

/// \brief The whole pipeline: the graph stages (unless o.run_passes is false), then the schedule
/// stages, honouring --disable-pass, --print-after and --verify-each. The graph must outlive the
/// Schedule (its stage-side fields point at its nodes); the graph is changed. With o.count_stage_kernels, also
/// counts the kernels without each optional stage that runs and changes something
/// (Schedule::stage_kernels): a copy of the graph as the stages before it left it goes through the
/// stages after it, up to the last one that may change the kernel count.
Schedule lower(Graph& g, const LowerOptions& o = {});

/// \brief The graph stages only: the optimized graph the reference interpreter runs
/// (run-reference --fp16 and the pass tests).
void run_graph_stages(Graph& g, const PassOptions& o);

/// \brief Runs one graph stage by name, honouring the flags as lower() does (--disable-pass,
/// --verify-each, --print-after); returns true when it changed the graph. Error when no graph
/// stage has that name. For tests of one pass.
bool run_graph_stage(Graph& g, const PassOptions& o, const std::string& name);

/// \brief For tests of one schedule stage: the pipeline up to (not including) schedule stage
/// `stage`, honouring the flags as lower() does; the Schedule as the stages before it left it.
/// Error when no schedule stage has that name.
Schedule lower_before(Graph& g, const LowerOptions& o, const std::string& stage);

/// \brief Runs one schedule stage by name on s (recording it in Schedule::ran, then --verify-each
/// and --print-after as lower() does); returns true when it changed something. Error when no
/// schedule stage has that name. For tests of one stage, after lower_before.
bool run_schedule_stage(Schedule& s, const LowerOptions& o, const std::string& name);

/// The stage list as a table, for `modelc passes`.
std::string describe_pipeline();

}  // namespace modelc

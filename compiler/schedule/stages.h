// compiler/schedule/stages.h — the schedule stages: Graph -> Schedule, one function each.
//
// compiler/pipeline/pipeline.cpp orders them (after the graph passes) and says what each needs;
// each is `bool stage(Schedule&, const LowerOptions&)` in its own file under compiler/schedule/,
// true when it changed the graph or the schedule, with its own test in tests/schedule/. They work
// on the Schedule (schedule/schedule.h), the IR from list_kernels on: every decision is a field of
// a kernel or a buffer, so a stage reads what the stages before it decided there, and
// --print-after / --verify-each (print_schedule, verify_schedule) see all of it. Decide first,
// place last: the kernel list, layouts, views, streams, tactics, workspaces and transformed
// weights are decided before memory_plan places every arena buffer once and place_weights the
// weights blob. Stages throw Error naming the node for anything that cannot be lowered.
//
// Walking the graph in order (list_kernels):
//  - nodes whose outputs are all constant were computed at compile time: no kernel;
//  - ops whose OpDef kernels are {"view"} (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
//    Dropout) give no kernel: their output is a view of their input's buffer (find_views);
//  - an op whose kernel is "none" (shape math) must have been folded: Error naming the node;
//  - every other node is a Kernel of the family family_for() picks (schedule/families.h), its
//    tactic chosen by that family's facts (schedule/tactics.h).
// Storage: graph inputs and outputs are the caller's buffers; a graph output that is a graph
// input, a constant, or shares its buffer with another graph output gets a copy kernel (an
// Identity node added to the graph, run by the "elementwise" family: claim_outputs); constants
// read by kernels go in the weights blob (256-byte aligned, in order of first use, identical data
// stored once); every other value lives in the arena, at offsets from memory_plan.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "passes/pass.h"
#include "schedule/layout.h"
#include "schedule/memory_plan.h"
#include "schedule/schedule.h"
#include "schedule/streams.h"
#include "schedule/target.h"

namespace modelc {

/// \brief What the schedule stages read from the command line (and the graph stages, in `passes`).
struct LowerOptions {
  std::string name = "model";                ///< Schedule::name (--name)
  std::vector<std::string> archs = {"sm_75"};///< --arch list; the plan targets the oldest
  PassOptions passes;                        ///< what the stages read (--fp16, --disable-pass, ...)
  bool run_passes = true;                    ///< false: the graph stages are skipped (lowered as it is)
  /// Family to use instead of another (the key): lets tests and experiments run a node on an
  /// alternative family without touching the op table.
  std::map<std::string, std::string> family_substitutes;
  /// The layout pass (schedule/layout.h): `automatic` stores convolutional networks channels-last
  /// (NHWC, channel counts padded for tensor cores), `nchw` keeps every buffer dense.
  LayoutMode layout = LayoutMode::automatic;
  /// --streams: at most this many CUDA streams (schedule/streams.h); 0 is automatic (as many as
  /// the widest set of independent kernels needs, up to kAutomaticStreams); 1 runs every kernel on
  /// the caller's stream.
  int streams = 0;
  /// Schedule::stage_kernels: the compile also counts the kernels without each optional stage that
  /// runs, on copies of the graph (pipeline/pipeline.h says how; `modelc compile` sets it).
  bool count_stage_kernels = false;
};

/// \brief The Schedule the first schedule stage starts from: the options' name and --arch list,
/// the graph's inputs and outputs, no kernel yet. Error when the model has no outputs or no --arch
/// (or an --arch modelc does not know).
Schedule begin_schedule(Graph& g, const LowerOptions& o);

// ---- the stages, in pipeline order (pipeline.cpp says what each needs) ---------------------------

/// remove_dead.cpp: the nodes whose results no output needs (also through chains).
bool remove_dead(Schedule& s, const LowerOptions& o);
/// views.cpp: each view op's output is a view (ViewStep::reshape) in its root's buffer.
bool find_views(Schedule& s, const LowerOptions& o);
/// claim_outputs.cpp: each model output owns its root's buffer, or gets a copy kernel's.
bool claim_outputs(Schedule& s, const LowerOptions& o);
/// list_kernels.cpp: a Kernel per node that runs one, in order, with its family and views.
bool list_kernels(Schedule& s, const LowerOptions& o);
/// layout.cpp: channels-last buffers, conversion kernels, OHWI weights (schedule/layout.h).
bool plan_layout(Schedule& s, const LowerOptions& o);
/// fold_casts.cpp: --fp16 / --bf16: boundary Casts into the kernels beside them.
bool fold_boundary_casts(Schedule& s, const LowerOptions& o);
/// elide_concat.cpp: Concats whose producers write straight into their slices.
bool elide_concat(Schedule& s, const LowerOptions& o);
/// operand_views.cpp: Transposes and Slices as strided operand views of matrix products.
bool fold_operand_views(Schedule& s, const LowerOptions& o);
/// row_maps.cpp: the row moves (Pad, Slice, Concat, Transpose) around matrix products as row tables.
bool fold_row_maps(Schedule& s, const LowerOptions& o);
/// fuse_horizontal.cpp: sibling convolutions (matrix products) on one input as one kernel.
bool fuse_horizontal(Schedule& s, const LowerOptions& o);
/// fuse_prologue.cpp: per-channel BN (+ ReLU) and SE gate kernels into the 1x1 convs and pools reading them.
bool fuse_prologue(Schedule& s, const LowerOptions& o);
/// fuse_row_norm.cpp: a LayerNormalization over a matrix product's output rows into the product's launch.
bool fuse_row_norm(Schedule& s, const LowerOptions& o);
/// streams.cpp: each kernel's stream and the events between streams (schedule/streams.h).
bool plan_streams(Schedule& s, const LowerOptions& o);
/// fold_gemm_batch.cpp: batch dims B broadcasts over run as rows of one product.
bool fold_gemm_batch(Schedule& s, const LowerOptions& o);
/// plan_kernels.cpp: each kernel's plan (schedule/plan.h), by its family (FamilyFacts::plan).
bool plan_kernels(Schedule& s, const LowerOptions& o);
/// choose_tactics.cpp: each kernel's tactic per --arch, its note, its workspace buffer, and the
/// weights its tactic transforms (Winograd's U).
bool choose_kernel_tactics(Schedule& s, const LowerOptions& o);
/// memory_plan.cpp: every arena buffer (activations and workspaces) placed once, by liveness.
bool plan_arena(Schedule& s, const LowerOptions& o);
/// place_weights.cpp: the weights blob, each weight buffer placed once (identical data once).
bool place_weights(Schedule& s, const LowerOptions& o);

// ---- helpers the stages share --------------------------------------------------------------------

/// \brief The family that runs node n: family_for (an output copy: "elementwise"), as
/// LowerOptions::family_substitutes substitutes it.
std::string family_of(const Node& n, const LowerOptions& o, bool output_copy = false);
/// \brief A kernel of `family` running n: its source (n, its operands), the ONNX nodes it covers
/// (report); the views come from resolve (schedule/views.h).
Kernel kernel_for(const Node& n, const FamilyFacts& family);

// ---- the IR, printed and checked (schedule_print.cpp, schedule_verify.cpp) -----------------------

/// \brief The Schedule as text (--print-after): the kernels with their views, buffers and the
/// decisions so far, the buffers with their layouts, views and places, and the stages' summaries.
std::string print_schedule(const Schedule& s);
/// \brief Checks the invariants that hold after the stages in s.ran (--verify-each): every view
/// inside its buffer and every buffer a kernel names in s.buffers, view chains that end at their
/// buffer's value, every buffer placed once the plans ran (each view at its buffer's place), no two
/// arena buffers live at once sharing a byte, a plan per kernel of a family that plans after
/// plan_kernels, a tactic per kernel after the tactics, ... Throws an internal Error naming the
/// broken invariant.
void verify_schedule(const Schedule& s);

}  // namespace modelc

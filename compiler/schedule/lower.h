// compiler/schedule/lower.h — Graph -> Schedule.
//
// lower() runs the pass pipeline, then walks the graph in order:
//  - nodes whose outputs are all constant were computed at compile time: no kernel;
//  - ops whose OpDef kernels are {"view"} (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
//    Dropout) give no kernel: their output is their input's buffer, reshaped;
//  - an op whose kernel is "none" (shape math) must have been folded: Error naming the node;
//  - every other node is a Kernel of the first family its OpDef lists, planned by that family.
// Storage: graph inputs and outputs are the caller's buffers; a graph output that is a graph
// input, a constant, or shares its buffer with another graph output gets a copy kernel (an
// Identity node that lower() adds to the graph, run by the "elementwise" family); constants read
// by kernels go in the weights blob (256-byte aligned, in order of first use, identical data
// stored once); every other value lives in the arena, at offsets from memory_plan.h.
// Layout (schedule/layout.h) runs after the kernels are listed and before the arena is planned: it
// picks channels-last buffers, inserts the conversion kernels it needs (Identity nodes it adds to
// the graph, run by the "elementwise" family, with a note saying why), and the OHWI weight copies;
// buffers are sized by their strides' extent.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "passes/pass.h"
#include "schedule/layout.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc {

struct LowerOptions {
  std::string name = "model";                ///< Schedule::name (--name)
  std::vector<std::string> archs = {"sm_75"};///< --arch list; the plan targets the oldest
  PassOptions passes;                        ///< for run_pipeline
  bool run_passes = true;                    ///< false: the graph is lowered as it is
  /// Family to use instead of another (the key): lets tests and experiments run a node on an
  /// alternative family without touching the op table.
  std::map<std::string, std::string> family_substitutes;
  /// The layout pass (schedule/layout.h): `automatic` stores convolutional networks channels-last
  /// (NHWC, channel counts padded for tensor cores), `nchw` keeps every buffer dense.
  LayoutMode layout = LayoutMode::automatic;
};

/// Alignment of every buffer in the arena and the weights blob.
constexpr int64_t kBufferAlignment = 256;

/// \brief Lowers `g` (after the pass pipeline, unless options say not to). The graph must outlive
/// the Schedule: kernels point at its nodes. The graph is changed: passes, plus the Identity
/// nodes of the output copies. Throws Error naming the node for anything that cannot be lowered
/// (a family that is not built in lists every node that needs one).
Schedule lower(Graph& g, const LowerOptions& o = {});

}  // namespace modelc

// compiler/passes/pass.h — graph -> graph passes and the pipeline that orders them.
#pragma once

#include <functional>
#include <iosfwd>
#include <set>
#include <string>

#include "ir/graph.h"

namespace modelc {

/// \brief What the passes read from the command line.
struct PassOptions {
  bool fp16 = false;                    ///< --fp16 (passes/precision, layout)
  bool verify_each = false;             ///< --verify-each: run the verifier after every pass
  std::set<std::string> disabled;       ///< --disable-pass NAME
  std::set<std::string> print_after;    ///< --print-after NAME ("all" for every pass)
  std::ostream* log = nullptr;          ///< where --print-after writes (stderr when null)
};

/// A pass: returns true when it changed the graph.
using PassFn = std::function<bool(Graph&, const PassOptions&)>;

/// Runs one pass by name, honouring --disable-pass, --verify-each and --print-after.
bool run_pass(Graph& g, const PassOptions& o, const char* name, const PassFn& pass);

/// The passes in order (see pipeline.cpp for what each needs before it).
void run_pipeline(Graph& g, const PassOptions& o);

/// Names of the passes run_pipeline knows, in order (for --disable-pass checks).
const std::vector<std::string>& pipeline_pass_names();

// The passes.
bool simplify(Graph& g, const PassOptions& o);
bool fold_constants(Graph& g, const PassOptions& o);

}  // namespace modelc

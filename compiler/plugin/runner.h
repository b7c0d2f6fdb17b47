// compiler/plugin/runner.h — the reference of a plugin op: its own kernel, run on the host
// emulation (runtime_stub/host) in a helper program.
//
// The helper is the plugin's header with the node's instantiation (plugin.h instantiate(), the
// same as the emitted code's), an entry point and a main that reads the inputs, launches the
// kernel once through mc::launch and writes the outputs. It is built with the C++ compiler ($CXX,
// else g++) against the emulation's sources (compiled once per modelc process into a temporary
// folder, removed at exit), cached per instantiation, and run as a child process: a header that
// does not compile, a kernel fault (an out-of-range shared-memory access, a race the emulation's
// check finds, an exception), a crash or a hang (MODELC_PLUGIN_TIMEOUT seconds, default 600) is an
// Error naming the plugin's header and the node, never a crash of modelc. Outputs and the
// workspace start as all-ones bytes, so an element the kernel never writes reads as NaN (-1 for
// integers) in the reference.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ops/registry.h"
#include "plugin/plugin.h"

namespace modelc::plugin {

/// Node n's outputs computed by its plugin kernel on the host emulation from `inputs` (the node's
/// input types, dense). Throws Error naming the plugin, its header and the node.
std::vector<Tensor> run_on_emulation(const PluginOp& op, const Node& n, const ops::TensorRefs& inputs);

/// \brief The C++ source of the helper program for node n (for tests and --keep-style debugging).
std::string helper_source(const PluginOp& op, const Node& n);

}  // namespace modelc::plugin

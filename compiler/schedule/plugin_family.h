// compiler/schedule/plugin_family.h — the "plugin" family's plan: the plugin op a kernel runs and
// its instantiation (compiler/plugin/plugin.h), which the printer (codegen/families/plugin.cpp),
// the tactic rule and the report read.
#pragma once

#include "plugin/plugin.h"
#include "schedule/schedule.h"

namespace modelc {

/// \brief A plugin kernel: its op (loaded for the whole compile) and the instance of its node
/// (plugin::instantiate: the kernel type, the attributes' Params fields, the workspace).
struct PluginPlan {
  const plugin::PluginOp* op = nullptr;
  plugin::Instance instance;
};
/// The plan of a plugin kernel; an internal Error naming the kernel when its views are not the
/// node's operands as dense tensors of their types and shapes (the family converts nothing, and the
/// layout stage keeps a plugin op's buffers NCHW).
PluginPlan plugin_plan(const Kernel& k);

}  // namespace modelc

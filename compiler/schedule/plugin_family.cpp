// compiler/schedule/plugin_family.cpp — the facts of the "plugin" family: the kernels of plugin
// ops (compiler/plugin/plugin.h), printed by codegen/families/plugin.cpp.
//
// A plugin kernel reads and writes dense buffers in the model's own layout (its op's Layout is
// unset: the layout stage keeps NCHW around it), converts no types at its edges, and has no tactic
// of modelc's: its launch geometry is the header's grid() and block(). Its tactic rule records the
// workspace the manifest asks for (the tactics stage places it in the arena while the kernel runs)
// and a note naming the plugin, its header and the kernel.
#include "plugin/plugin.h"
#include "schedule/families.h"

namespace modelc {
namespace {

void plugin_tactic(Kernel& k, const std::vector<Target>&) {
  const plugin::PluginOp& op = plugin::plugin_op_of(*k.source.node);
  const plugin::Instance inst = plugin::instantiate(op, *k.source.node);
  k.workspace_bytes = inst.workspace_bytes;
  k.note = "plugin '" + op.plugin->name + "' (" + op.header + "): " + op.kernel;
  if (inst.workspace_bytes > 0) k.note += "; workspace " + std::to_string(inst.workspace_bytes) + " bytes";
}

struct Registration {
  Registration() {
    FamilyFacts f;
    f.name = "plugin";
    f.choose_tactic = plugin_tactic;
    register_family(std::move(f));
  }
};
const Registration registration;

}  // namespace
}  // namespace modelc

// compiler/schedule/plugin_family.cpp — the facts of the "plugin" family: the kernels of plugin
// ops (compiler/plugin/plugin.h), printed by codegen/families/plugin.cpp.
//
// A plugin kernel reads and writes dense buffers in the model's own layout (its op's Layout is
// unset: the layout stage keeps NCHW around it), converts no types at its edges, and has no tactic
// of modelc's: its launch geometry is the header's grid() and block(). Its tactic rule records the
// workspace the manifest asks for (the tactics stage places it in the arena while the kernel runs)
// and a note naming the plugin, its header and the kernel.
#include "schedule/plugin_family.h"

#include "schedule/families.h"

namespace modelc {

PluginPlan plugin_plan(const Kernel& k) {
  if (!k.source.node) throw k.error("internal: the plugin kernel has no node");
  const Node& n = *k.source.node;
  const plugin::PluginOp& op = plugin::plugin_op_of(n);
  if (k.inputs.size() != op.inputs.size() || k.outputs.size() != op.outputs.size()) {
    throw k.error("internal: the plugin kernel has " + std::to_string(k.inputs.size()) + " inputs and " +
                  std::to_string(k.outputs.size()) + " outputs");
  }
  auto check = [&](const TensorView& v, const Value& value) {
    if (v.dtype != value.dtype() || v.shape != value.shape() || !v.dense()) {
      throw k.error("internal: the plugin kernel's view of '" + value.name() + "' is not dense " + value.type_str());
    }
  };
  for (std::size_t i = 0; i < op.inputs.size(); ++i) check(k.inputs[i], n.input(static_cast<int>(i)));
  for (std::size_t i = 0; i < op.outputs.size(); ++i) check(k.outputs[i], n.output(static_cast<int>(i)));
  return {&op, plugin::instantiate(op, n)};
}

namespace {

void plugin_tactic(Kernel& k, const std::vector<Target>&) {
  const PluginPlan& p = plan_of<PluginPlan>(k);
  const plugin::PluginOp& op = *p.op;
  const plugin::Instance& inst = p.instance;
  k.workspace_bytes = inst.workspace_bytes;
  k.note = "plugin '" + op.plugin->name + "' (" + op.header + "): " + op.kernel;
  if (inst.workspace_bytes > 0) k.note += "; workspace " + std::to_string(inst.workspace_bytes) + " bytes";
}

FamilyFacts plugin_facts() {
  FamilyFacts f;
  f.name = "plugin";
  f.choose_tactic = plugin_tactic;
  f.plan = [](const Kernel& k) { return make_plan("plugin", plugin_plan(k)); };
  return f;
}
const FamilyFactsRegistration registration{plugin_facts()};

}  // namespace
}  // namespace modelc

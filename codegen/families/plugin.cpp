// codegen/families/plugin.cpp — the `plugin` family: a plugin op's kernel (compiler/plugin/plugin.h,
// docs/PLUGINS.md), instantiated as the manifest says and launched like every template.
//
// The instantiation and the attributes' Params fields are plugin::instantiate's (the kernel's plan,
// schedule/plugin_family.h), the same the reference run builds (compiler/plugin/runner.cpp); this
// printer adds the pointers: one per input and output, by the manifest's names, and the workspace. The plugin's headers are copied into the
// folder's kernels/plugins/NAME/ and the op's header is included.
#include "codegen/family.h"
#include "plugin/plugin.h"
#include "schedule/plugin_family.h"
#include "support/error.h"

namespace modelc {
namespace {

KernelLaunches emit_plugin(const Kernel& k, const EmitContext& ctx) {
  // The plan checked that the views are the node's operands, dense, of their types and shapes.
  const PluginPlan& p = plan_of<PluginPlan>(k);
  const plugin::PluginOp& op = *p.op;
  if (k.inputs.size() != op.inputs.size() || k.outputs.size() != op.outputs.size()) {
    throw k.error("internal: the plugin kernel has " + std::to_string(k.inputs.size()) + " inputs and " +
                  std::to_string(k.outputs.size()) + " outputs");
  }
  bool empty = true;
  for (const TensorView& v : k.outputs) empty = empty && v.numel() == 0;
  if (empty) return nothing_to_run("the outputs are empty");

  const plugin::Instance& inst = p.instance;
  Launch l;
  l.comment = op.qualified() + " (plugin '" + op.plugin->name + "', " + op.header + ")";
  l.type = inst.type;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) l.params.push_back({op.inputs[i].name, ctx.ptr(k.inputs[i], true)});
  for (std::size_t i = 0; i < op.outputs.size(); ++i) l.params.push_back({op.outputs[i].name, ctx.ptr(k.outputs[i], false)});
  for (const auto& [field, value] : inst.attributes) l.params.push_back({field, value});
  if (op.workspace) {
    const bool placed = k.workspace_bytes > 0 && k.workspace.dtype != DType::undefined;
    if (inst.workspace_bytes > 0 && (!placed || k.workspace_bytes < inst.workspace_bytes)) {
      throw k.error("internal: the plugin kernel's workspace of " + std::to_string(inst.workspace_bytes) + " bytes is not placed");
    }
    l.params.push_back({"workspace", placed ? "static_cast<void*>(" + ctx.ptr(k.workspace, false) + ")" : "nullptr"});
  }
  KernelLaunches r = single_launch(std::move(l));
  r.declarations = inst.declarations;
  for (const auto& [path, text] : op.plugin->headers) r.own_headers[plugin::emitted_header(*op.plugin, path)] = text;
  r.includes.push_back(plugin::emitted_header(*op.plugin, op.header));
  return r;
}

MODELC_REGISTER_FAMILY(plugin_family)(KernelFamily{"plugin", {"plugin.cuh"}, emit_plugin});

}  // namespace
}  // namespace modelc

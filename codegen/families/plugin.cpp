// codegen/families/plugin.cpp — the `plugin` family: a plugin op's kernel (compiler/plugin/plugin.h,
// docs/PLUGINS.md), instantiated as the manifest says and launched like every template.
//
// The instantiation and the attributes' Params fields are plugin::instantiate's, the same the
// reference run builds (compiler/plugin/runner.cpp); this printer adds the pointers: one per input
// and output, by the manifest's names, and the workspace. The plugin's headers are copied into the
// folder's kernels/plugins/NAME/ and the op's header is included.
#include "codegen/family.h"
#include "plugin/plugin.h"
#include "support/error.h"

namespace modelc {
namespace {

KernelLaunches emit_plugin(const Kernel& k, const EmitContext& ctx) {
  const Node& n = *k.source.node;
  const plugin::PluginOp& op = plugin::plugin_op_of(n);
  if (k.inputs.size() != op.inputs.size() || k.outputs.size() != op.outputs.size()) {
    throw k.error("internal: the plugin kernel has " + std::to_string(k.inputs.size()) + " inputs and " +
                  std::to_string(k.outputs.size()) + " outputs");
  }
  // The kernel reads dense tensors of the node's types and shapes (the family converts nothing, and
  // the layout stage keeps a plugin op's buffers NCHW).
  auto check = [&](const TensorView& v, const Value& value) {
    if (v.dtype != value.dtype() || v.shape != value.shape() || !v.dense()) {
      throw k.error("internal: the plugin kernel's view of '" + value.name() + "' is not dense " + value.type_str());
    }
  };
  bool empty = true;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) check(k.inputs[i], n.input(static_cast<int>(i)));
  for (std::size_t i = 0; i < op.outputs.size(); ++i) {
    check(k.outputs[i], n.output(static_cast<int>(i)));
    empty = empty && k.outputs[i].numel() == 0;
  }
  if (empty) return nothing_to_run("the outputs are empty");

  const plugin::Instance inst = plugin::instantiate(op, n);
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

// compiler/schedule/plan_kernels.cpp — the plan_kernels stage: each kernel's plan, by its family.
#include <fmt/format.h>

#include "ops/fused.h"
#include "ops/registry.h"
#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/tactics.h"

namespace modelc {

namespace {

int64_t node_flops(const Node& n) {
  // lookup: fused kernels' nodes are of the internal modelc domain.
  const ops::OpDef& def = ops::lookup(n);
  return def.flops ? def.flops(n) : 0;
}

int64_t kernel_flops(const Kernel& k) {
  if (!k.source.node) return 0;
  if (k.ranges.empty()) return node_flops(*k.source.node);
  int64_t sum = 0;  // a horizontally fused kernel computes each range's node
  for (const OutputRange& r : k.ranges) sum += node_flops(*r.source);
  return sum;
}

// The fused epilogue of a FusedConv / FusedGemm / FusedMatMul, e.g. "bias + relu + residual"; of a
// fused elementwise op its activation ("relu"); "".
std::string epilogue_text(const Kernel& k) {
  if (!k.ranges.empty()) {  // a horizontally fused kernel: the bias, then each range's activation
    const bool bias = k.inputs.size() > ops::kFusedBiasInput && k.inputs[ops::kFusedBiasInput].dtype != DType::undefined;
    std::string s = bias ? "bias + per range:" : "per range:";
    for (const OutputRange& r : k.ranges) {
      const bool fused = !ops::producer_of_fused(r.source->op()).empty();
      s += fmt::format(" [{}, {}) {}", r.begin, r.end,
                       ops::activation_name(fused ? ops::activation_of_fused(*r.source).kind : ops::Activation::none));
    }
    return s;
  }
  // fold_row_maps' residual (the Add after a scattered Y) on a product fused or not.
  if (!k.source.node || (ops::producer_of_fused(k.source.node->op()).empty() && !k.row_maps.residual)) return "";
  const Node& n = *k.source.node;
  const bool fused = !ops::producer_of_fused(n.op()).empty();
  if (fused && ops::activation_only_fused(n.op())) return ops::activation_name(ops::activation_of_fused(n).kind);
  std::string s;
  auto add = [&](const std::string& x) { s += (s.empty() ? "" : " + ") + x; };
  auto present = [&](std::size_t i) { return k.inputs.size() > i && k.inputs[i].dtype != DType::undefined; };
  if (present(ops::kFusedBiasInput)) add("bias");
  const std::string pos = n.attr_string("residual_position", "");
  const bool residual = present(ops::kFusedResidualInput);
  if (residual && pos == "before_activation") add("residual");
  const ops::EpilogueActivation act = fused ? ops::activation_of_fused(n) : ops::EpilogueActivation{};
  if (act.kind != ops::Activation::none) add(ops::activation_name(act.kind));
  if (residual && pos != "before_activation") add("residual");
  return s;
}

}  // namespace

void plan_kernel(Kernel& k) {
  const FamilyFacts& f = k.facts();
  k.plan = f.plan ? f.plan(k) : nullptr;
  k.flops = kernel_flops(k);
  k.epilogue = epilogue_text(k);
}

bool plan_kernels(Schedule& s, const LowerOptions&) {
  bool planned = false;
  for (Kernel& k : s.kernels) {
    plan_kernel(k);
    planned = planned || k.plan != nullptr;
  }
  return planned;
}

}  // namespace modelc

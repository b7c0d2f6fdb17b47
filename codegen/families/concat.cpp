// codegen/families/concat.cpp — the "concat" family: Concat as one strided copy per input into its
// place along the axis of the output (mc::dm::Copy; the copies: schedule/copy.h concat_plan).
#include "codegen/families/elementwise_util.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_concat(const Kernel& k, const EmitContext& ctx) {
  const TensorView& y = k.outputs.at(0);
  const std::vector<StridedCopy>& copies = plan_of<std::vector<StridedCopy>>(k);
  KernelLaunches r;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    std::optional<Launch> l = copy_launch(ctx, y, k.inputs[i], copies[i],
                                          "input " + std::to_string(i) + " of " + std::to_string(copies.size()) +
                                              " (" + view_str(k.inputs[i]) + ") into its place");
    if (l) r.launches.push_back(std::move(*l));
  }
  if (r.launches.empty()) r.nothing_to_run = "every input is empty, nothing to copy";
  return r;
}

}  // namespace

MODELC_REGISTER_FAMILY(concat_family)
(KernelFamily{
    "concat", {"tensor_index.cuh", "data_movement.cuh"}, emit_concat});

}  // namespace modelc::codegen

// codegen/families/split.cpp — the "split" family: Split as one strided copy per output from its
// place along the axis of the input (mc::dm::Copy). The axis and the part lengths, also of an output
// left out, are ops::split_parts (ops/tensor.h), the reference's (the copies: schedule/copy.h split_plan).
#include "codegen/families/elementwise_util.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_split(const Kernel& k, const EmitContext& ctx) {
  const TensorView& x = k.inputs.at(0);
  const std::vector<StridedCopy>& copies = plan_of<std::vector<StridedCopy>>(k);
  KernelLaunches r;
  for (std::size_t i = 0; i < copies.size(); ++i) {
    if (k.outputs[i].dtype == DType::undefined) continue;
    std::optional<Launch> l = copy_launch(ctx, k.outputs[i], x, copies[i],
                                          "output " + std::to_string(i) + " of " + std::to_string(copies.size()) +
                                              " (" + view_str(k.outputs[i]) + ") from its place");
    if (l) r.launches.push_back(std::move(*l));
  }
  if (r.launches.empty()) r.nothing_to_run = "every output is empty, nothing to copy";
  return r;
}

}  // namespace

MODELC_REGISTER_FAMILY(split_family)
(KernelFamily{
    "split", {"tensor_index.cuh", "data_movement.cuh"}, emit_split});

}  // namespace modelc::codegen

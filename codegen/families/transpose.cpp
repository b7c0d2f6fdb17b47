// codegen/families/transpose.cpp — the "transpose" family: Transpose as a strided copy whose source
// strides are x's, permuted (templates/data_movement.cuh, mc::dm::Copy).
#include "codegen/families/elementwise_util.h"
#include "schedule/data_movement.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_transpose(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const TransposePlan& p = plan_of<TransposePlan>(k);
  std::string perm;
  for (int64_t d : p.perm) perm += (perm.empty() ? "" : ",") + std::to_string(d);
  return copy_kernel(ctx, y, x, p.copy, perm.empty() ? std::string("dims reversed") : "perm " + perm);
}

}  // namespace

MODELC_REGISTER_FAMILY(transpose_family)
(KernelFamily{"transpose", {"tensor_index.cuh", "data_movement.cuh"}, emit_transpose});

}  // namespace modelc::codegen

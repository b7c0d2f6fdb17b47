// codegen/families/depth_space.cpp — the "depth_space" family: DepthToSpace (DCR, CRD) and
// SpaceToDepth as strided copies over the six dims [N, C, H, b, W, b] of the space side
// (mc::dm::Copy): the depth side's channel is (i * b + j) * C + c in DCR order (and SpaceToDepth),
// (c * b + i) * b + j in CRD order; block size and order from ops::depth_space (ops/depth_space.h); the
// kernel's plan: schedule/data_movement.h DepthSpacePlan.
#include "codegen/families/elementwise_util.h"
#include "schedule/data_movement.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_depth_space(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const DepthSpacePlan& p = plan_of<DepthSpacePlan>(k);
  const std::string what =
      ", blocksize " + std::to_string(p.blocksize) + (k.op.type == "DepthToSpace" ? (p.crd ? " CRD" : " DCR") : "");
  return copy_kernel(ctx, y, x, p.copy, k.op.type + what);
}

}  // namespace

MODELC_REGISTER_FAMILY(depth_space_family)
(KernelFamily{"depth_space",
              {"tensor_index.cuh", "data_movement.cuh"},
              emit_depth_space});

}  // namespace modelc::codegen

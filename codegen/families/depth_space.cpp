// codegen/families/depth_space.cpp — the "depth_space" family: DepthToSpace (DCR, CRD) and
// SpaceToDepth as strided copies over the six dims [N, C, H, b, W, b] of the space side
// (mc::dm::Copy): the depth side's channel is (i * b + j) * C + c in DCR order (and SpaceToDepth),
// (c * b + i) * b + j in CRD order; block size and order from ops::depth_space (ops/depth_space.h).
#include "codegen/families/data_movement.h"
#include "ops/depth_space.h"

namespace modelc::codegen {

StridedCopy depth_space_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const bool to_space = n.op() == "DepthToSpace";
  const ops::DepthSpace ds = ops::depth_space(n);
  const int64_t b = ds.blocksize;
  if (x.shape.size() != 4 || y.shape.size() != 4) throw n.error("expects 4-D input and output");
  const TensorView& space = to_space ? y : x;
  const TensorView& depth = to_space ? x : y;
  const int64_t N = space.shape[0], C = space.shape[1], H = depth.shape[2], W = depth.shape[3];
  const Strides& s = space.strides;
  const Strides& d = depth.strides;
  // Coordinates (n, c, h, i, w, j): space element (n, c, h*b + i, w*b + j).
  const Strides space_strides{s[0], s[1], b * s[2], s[2], b * s[3], s[3]};
  const Strides depth_strides = ds.crd ? Strides{d[0], b * b * d[1], d[2], b * d[1], d[3], d[1]}
                                    : Strides{d[0], d[1], d[2], b * C * d[1], d[3], C * d[1]};
  StridedCopy c;
  c.shape = {N, C, H, b, W, b};
  c.y_strides = to_space ? space_strides : depth_strides;
  c.x_strides = to_space ? depth_strides : space_strides;
  return c;
}

namespace {

KernelLaunches emit_depth_space(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const Node& n = *k.source.node;
  const ops::DepthSpace ds = ops::depth_space(n);
  const std::string what =
      ", blocksize " + std::to_string(ds.blocksize) + (n.op() == "DepthToSpace" ? (ds.crd ? " CRD" : " DCR") : "");
  return copy_kernel(ctx, y, x, depth_space_plan(n, x, y), n.op() + what);
}

}  // namespace

MODELC_REGISTER_FAMILY(depth_space_family)
(KernelFamily{"depth_space",
              {"tensor_index.cuh", "data_movement.cuh"},
              emit_depth_space});

}  // namespace modelc::codegen

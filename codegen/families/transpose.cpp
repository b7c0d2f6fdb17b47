// codegen/families/transpose.cpp — the "transpose" family: Transpose as a strided copy whose source
// strides are x's, permuted (templates/data_movement.cuh, mc::dm::Copy).
#include "codegen/families/data_movement.h"
#include "support/error.h"

namespace modelc::codegen {

StridedCopy transpose_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const std::size_t r = x.shape.size();
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (!n.has_attr("perm")) {
    for (std::size_t d = r; d-- > 0;) perm.push_back(static_cast<int64_t>(d));  // default: reversed dims
  }
  if (perm.size() != r)
    throw n.error("attribute 'perm' has " + std::to_string(perm.size()) + " values for rank " + std::to_string(r));
  StridedCopy c;
  c.shape = y.shape;
  c.y_strides = y.strides;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r)) throw n.error("attribute 'perm' holds " + std::to_string(p));
    c.x_strides.push_back(x.strides[static_cast<std::size_t>(p)]);
  }
  return c;
}

namespace {

KernelLaunches emit_transpose(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  std::string perm;
  for (int64_t p : k.node->attr_ints("perm")) perm += (perm.empty() ? "" : ",") + std::to_string(p);
  return copy_kernel(ctx, y, x, transpose_plan(*k.node, x, y), perm.empty() ? std::string("dims reversed") : "perm " + perm);
}

}  // namespace

void plan_transpose(Kernel& k, const Target&) {
  StridedCopy c = transpose_plan(*k.node, k.inputs.at(0), k.outputs.at(0));
  collapse(c.shape, {&c.y_strides, &c.x_strides});
  k.tactic["block"] = 256;
  k.note = tiled_dim(c) >= 0 ? "copy through 32x32 shared-memory tiles (reads and writes coalesced)"
                             : "strided copy (writes coalesced)";
}

MODELC_REGISTER_FAMILY(transpose_family)
(KernelFamily{"transpose", {"tensor_index.cuh", "data_movement.cuh"}, plan_transpose, emit_transpose});

}  // namespace modelc::codegen

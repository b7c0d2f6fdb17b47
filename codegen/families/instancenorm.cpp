// codegen/families/instancenorm.cpp — the `instancenorm` family: InstanceNormalization, each
// (batch, channel) normalized over the spatial dims, then scale and B per channel
// (templates/normalization.cuh, mc::reduction::Normalize).
//
// Rows are (N, C), columns the spatial dims; scale and B ([C]) have the row map strides (0, s):
// they depend on the row's channel only.
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

Split instancenorm_split(const Kernel& k) {
  if (!k.node || k.inputs.size() < 3 || k.outputs.empty()) {
    throw Error("internal: instancenorm kernel " + k.id + " is incomplete");
  }
  const TensorView& x = k.inputs[0];
  if (x.shape.size() < 3) {
    throw k.node->error("input X has shape " + shape_str(x.shape) + ", expected rank 3 or more (N x C x D1 x ...)");
  }
  Split s;
  s.shape = x.shape;
  s.col.assign(x.shape.size(), true);
  s.col[0] = s.col[1] = false;
  return s;
}

void plan_instancenorm(Kernel& k, const Target& t) {
  const Split s = instancenorm_split(k);
  const OperandMaps xm = maps_of(s, view_strides(k.inputs[0]));
  const Tile tile =
      choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), t);
  set_tactic(k, tile,
             fmt::format("{} (batch, channel) rows of {}, epsilon {}; {}", s.rows(), s.cols(),
                         k.node->attr_float("epsilon", 1e-5), tile_note(tile, s.cols(), "row", true)));
}

KernelLaunches emit_instancenorm(const Kernel& k, const EmitContext& ctx) {
  const Split s = instancenorm_split(k);
  NormalizeOperands ops;
  ops.x = &k.inputs[0];
  ops.scale = &k.inputs[1];
  ops.bias = &k.inputs[2];
  ops.y = &k.outputs[0];
  const int64_t channels = s.shape[1];
  ops.param_strides = [&](const TensorView& v, const char* what) {
    if (v.shape != Shape{channels}) {
      throw k.node->error(fmt::format("{} has shape {}, expected [{}] (one value per channel)", what,
                                      shape_str(v.shape), channels));
    }
    std::vector<int64_t> st(s.shape.size(), 0);
    st[1] = view_strides(v)[0];
    return st;
  };
  return emit_normalize(k, ctx, s, ops, k.node->attr_float("epsilon", 1e-5));
}

MODELC_REGISTER_FAMILY(instancenorm_family)(KernelFamily{"instancenorm", {"reduce.cuh", "normalization.cuh"},
                                                         plan_instancenorm, emit_instancenorm});

}  // namespace
}  // namespace modelc

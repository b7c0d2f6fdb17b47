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

KernelLaunches emit_instancenorm(const Kernel& k, const EmitContext& ctx) {
  const NormPlan& p = plan_of<NormPlan>(k);
  const Split& s = p.split;
  NormalizeOperands operands;
  operands.x = &k.inputs[0];
  operands.scale = &k.inputs[1];
  operands.bias = &k.inputs[2];
  operands.y = &k.outputs[0];
  const int64_t channels = s.shape[1];
  operands.param_strides = [&](const TensorView& v, const char* what) {
    if (v.shape != Shape{channels}) {
      throw k.error(fmt::format("{} has shape {}, expected [{}] (one value per channel)", what, shape_str(v.shape),
                                channels));
    }
    std::vector<int64_t> st(s.shape.size(), 0);
    st[1] = view_strides(v)[0];
    return st;
  };
  return emit_normalize(k, ctx, s, operands, p.epsilon);
}

MODELC_REGISTER_FAMILY(instancenorm_family)(KernelFamily{"instancenorm", {"reduce.cuh", "normalization.cuh"}, emit_instancenorm});

}  // namespace
}  // namespace modelc

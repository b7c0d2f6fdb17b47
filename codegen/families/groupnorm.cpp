// codegen/families/groupnorm.cpp — the `groupnorm` family: GroupNormalization, each (batch, group)
// normalized over the group's channels and the instance dims, then scale and bias per channel
// (opset 21) or per group (opset 18), on templates/normalization.cuh's Normalize.
//
// X and Y are viewed as the logical [N, G, C / G, D1, ...] (schedule/channel_norm.h group_view:
// the channel stride split in two), rows (N, G), columns the rest. scale and B get a stride on the
// group dim and, per channel, on the channel-in-group dim; 0 elsewhere.
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "ops/channel_norm.h"
#include "schedule/channel_norm.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

KernelLaunches emit_groupnorm(const Kernel& k, const EmitContext& ctx) {
  const GroupNormPlan& p = plan_of<GroupNormPlan>(k);
  const ops::GroupNorm& g = p.g;
  const Split& s = p.split;
  const TensorView x = group_view(k.inputs[0], g.groups);
  const TensorView y = group_view(k.outputs[0], g.groups);
  NormalizeOperands operands;
  operands.x = &x;
  operands.scale = &k.inputs[1];
  operands.bias = &k.inputs[2];
  operands.y = &y;
  const int64_t count = g.per_channel ? k.inputs[0].shape[1] : g.groups;
  operands.param_strides = [&](const TensorView& v, const char* what) {
    if (v.shape != Shape{count}) {
      throw k.error(fmt::format("{} has shape {}, expected [{}] (one value per {})", what, shape_str(v.shape), count,
                                g.per_channel ? "channel" : "group"));
    }
    const int64_t st = view_strides(v)[0];
    std::vector<int64_t> strides(s.shape.size(), 0);
    if (g.per_channel) {
      strides[1] = g.group_size * st;
      strides[2] = st;
    } else {
      strides[1] = st;
    }
    return strides;
  };
  return emit_normalize(k, ctx, s, operands, g.epsilon);
}

MODELC_REGISTER_FAMILY(groupnorm_family)(KernelFamily{"groupnorm", {"reduce.cuh", "normalization.cuh"}, emit_groupnorm});

}  // namespace
}  // namespace modelc

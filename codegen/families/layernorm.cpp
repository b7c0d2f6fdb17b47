// codegen/families/layernorm.cpp — the `layernorm` family: LayerNormalization over the trailing
// dims from `axis`, with optional B and optional Mean / InvStdDev outputs
// (templates/normalization.cuh, mc::reduction::Normalize).
//
// Scale and B broadcast to X's shape (numpy, right-aligned), so each gets its own row and column
// maps with stride 0 where it repeats: the usual [D] scale of an [N, T, D] input is a column map
// of stride 1 and an empty row map. Mean and InvStdDev (shape X.shape[:axis] + 1s) are row maps.
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

KernelLaunches emit_layernorm(const Kernel& k, const EmitContext& ctx) {
  const NormPlan& p = plan_of<NormPlan>(k);
  const Split& s = p.split;
  NormalizeOperands operands;
  operands.x = &k.inputs[0];
  operands.scale = &k.inputs[1];
  operands.bias = k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined ? &k.inputs[2] : nullptr;
  operands.y = &k.outputs[0];
  operands.mean = k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined ? &k.outputs[1] : nullptr;
  operands.inv_std_dev = k.outputs.size() > 2 && k.outputs[2].dtype != DType::undefined ? &k.outputs[2] : nullptr;
  operands.param_strides = [&](const TensorView& v, const char* what) { return strides_broadcast(k, s, v, what); };
  return emit_normalize(k, ctx, s, operands, p.epsilon);
}

MODELC_REGISTER_FAMILY(layernorm_family)(KernelFamily{"layernorm", {"reduce.cuh", "normalization.cuh"}, emit_layernorm});

}  // namespace
}  // namespace modelc

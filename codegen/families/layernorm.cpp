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

Split layernorm_split(const Kernel& k, int64_t* axis_out) {
  if (!k.node || k.inputs.size() < 2 || k.outputs.empty()) throw Error("internal: layernorm kernel " + k.id + " is incomplete");
  const TensorView& x = k.inputs[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalized_axis(k, k.node->attr_int("axis", -1), rank, "axis");
  Split s;
  s.shape = x.shape;
  s.col.assign(x.shape.size(), false);
  for (int64_t d = axis; d < rank; ++d) s.col[static_cast<std::size_t>(d)] = true;
  if (axis_out) *axis_out = axis;
  return s;
}

void plan_layernorm(Kernel& k, const Target& t) {
  int64_t axis = 0;
  const Split s = layernorm_split(k, &axis);
  const OperandMaps xm = maps_of(s, view_strides(k.inputs[0]));
  const Tile tile =
      choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), t);
  set_tactic(k, tile,
             fmt::format("axis {}: {} rows of {}, epsilon {}; {}", axis, s.rows(), s.cols(),
                         k.node->attr_float("epsilon", 1e-5), tile_note(tile, s.cols(), "row", true)));
}

KernelLaunches emit_layernorm(const Kernel& k, const EmitContext& ctx) {
  const Split s = layernorm_split(k, nullptr);
  NormalizeOperands ops;
  ops.x = &k.inputs[0];
  ops.scale = &k.inputs[1];
  ops.bias = k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined ? &k.inputs[2] : nullptr;
  ops.y = &k.outputs[0];
  ops.mean = k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined ? &k.outputs[1] : nullptr;
  ops.inv_std_dev = k.outputs.size() > 2 && k.outputs[2].dtype != DType::undefined ? &k.outputs[2] : nullptr;
  ops.param_strides = [&](const TensorView& v, const char* what) { return strides_broadcast(k, s, v, what); };
  return emit_normalize(k, ctx, s, ops, k.node->attr_float("epsilon", 1e-5));
}

MODELC_REGISTER_FAMILY(layernorm_family)(KernelFamily{"layernorm", {"reduce.cuh", "normalization.cuh"}, plan_layernorm,
                                                      emit_layernorm});

}  // namespace
}  // namespace modelc

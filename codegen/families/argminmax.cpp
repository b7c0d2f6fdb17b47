// codegen/families/argminmax.cpp — the `argminmax` family: ArgMax and ArgMin along one axis, with
// keepdims and select_last_index, int64 output (templates/reduce.cuh, mc::reduction::ArgMinMax).
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "ops/reduce.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

KernelLaunches emit_argminmax(const Kernel& k, const EmitContext& ctx) {
  check_index_range(k);
  ops::ArgReduce a;
  const Split s = arg_split(k, &a);
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run("the output is empty");
  const bool is_max = k.op.type == "ArgMax";
  const bool last = a.select_last_index;
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'data'");
  const OperandMaps xm = maps_of(s, view_strides(x));
  const OperandMaps ym = maps_of(s, strides_rows_only(k, s, y, "output 'reduced'"));
  const Tile tile = tile_of(k);
  const std::string type = fmt::format("mc::reduction::ArgMinMax<{}, {}, {}, {}, {}>", is_max ? "true" : "false",
                                       last ? "true" : "false", operand_type(t, xm), operand_type("int64_t", ym, false),
                                       tiling_type(tile));
  return reduction_launch(k, type, {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}});
}

MODELC_REGISTER_FAMILY(argminmax_family)(KernelFamily{"argminmax", {"reduce.cuh"}, emit_argminmax});

}  // namespace
}  // namespace modelc

// codegen/families/softmax.cpp — the `softmax` family: Softmax and LogSoftmax
// (templates/softmax.cuh, mc::reduction::Softmax).
//
// The columns are the dims ops::softmax_dims names (ops/softmax.h): every dim from `axis` on before
// opset 13, the one dim `axis` from 13; when they are not the innermost the column map is strided
// and the rows interleave (see reduction_common).
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "ops/softmax.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

KernelLaunches emit_softmax(const Kernel& k, const EmitContext& ctx) {
  const SoftmaxPlan& p = plan_of<SoftmaxPlan>(k);
  check_index_range(k);
  const Split& s = p.split;
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run("the output is empty");
  if (!is_float(x.dtype)) throw k.error(fmt::format("input has element type {}; {} needs floats", dtype_name(x.dtype), k.op.type));
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'input'");
  const OperandMaps xm = maps_of(s, view_strides(x));
  const OperandMaps ym = maps_of(s, strides_same(k, s, y, "output 'output'"));
  const Tile tile = tile_of(k);
  const std::string type = fmt::format("mc::reduction::Softmax<{}, {}, {}, {}>", p.log ? "true" : "false",
                                       operand_type(t, xm), operand_type(ctype_of(k, ctx, y.dtype, "output 'output'"), ym),
                                       tiling_type(tile));
  return reduction_launch(k, type, {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}});
}

MODELC_REGISTER_FAMILY(softmax_family)(KernelFamily{"softmax", {"reduce.cuh", "softmax.cuh"}, emit_softmax});

}  // namespace
}  // namespace modelc

// codegen/families/reduce.cpp — the `reduce` family: every Reduce* op over any set of axes
// (templates/reduce.cuh, mc::reduction::Reduce).
//
// The reduced axes (ops::reduce_dims, ops/reduce.h) become the column dims of the kernel's index
// space, the kept ones its row dims;
// non-contiguous reduced axes (axes {0, 2} of a 3-D input) are a column map of several dims, so no
// transpose is ever needed. keepdims only changes the output's shape, not its row map.
// noop_with_empty_axes with empty axes reduces nothing: every element is its own row (one column),
// which gives the op applied to one element, as the reference does.
#include <fmt/format.h>

#include <map>

#include "codegen/families/reduction_common.h"
#include "ops/reduce.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

// The template op of each ONNX op.
const std::map<std::string, std::string>& op_names() {
  static const std::map<std::string, std::string> m{
      {"ReduceSum", "Sum"},   {"ReduceMean", "Mean"},         {"ReduceMax", "Max"},
      {"ReduceMin", "Min"},   {"ReduceProd", "Prod"},         {"ReduceL1", "L1"},
      {"ReduceL2", "L2"},     {"ReduceLogSum", "LogSum"},     {"ReduceLogSumExp", "LogSumExp"},
      {"ReduceSumSquare", "SumSquare"}};
  return m;
}

KernelLaunches emit_reduce(const Kernel& k, const EmitContext& ctx) {
  const auto op = op_names().find(k.op.type);
  if (op == op_names().end()) throw k.error("internal: the reduce template has no reduction for " + k.op.type);
  check_index_range(k);
  const ReduceLayout& l = plan_of<ReduceLayout>(k);
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run("the output is empty");
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'data'");
  const OperandMaps xm = maps_of(l.split, view_strides(x));
  const OperandMaps ym = maps_of(l.split, strides_rows_only(k, l.split, y, "output 'reduced'"));
  const Tile tile = tile_of(k);
  const std::string type =
      fmt::format("mc::reduction::Reduce<mc::reduction::{}<{}>, {}, {}, {}>", op->second, t, operand_type(t, xm),
                  operand_type(ctype_of(k, ctx, y.dtype, "output 'reduced'"), ym, false), tiling_type(tile));
  return reduction_launch(k, type, {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}});
}

MODELC_REGISTER_FAMILY(reduce_family)(KernelFamily{"reduce", {"reduce.cuh"}, emit_reduce});

}  // namespace
}  // namespace modelc

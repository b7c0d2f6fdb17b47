// codegen/families/argminmax.cpp — the `argminmax` family: ArgMax and ArgMin along one axis, with
// keepdims and select_last_index, int64 output (templates/reduce.cuh, mc::reduction::ArgMinMax).
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "ops/reduce.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

// The column dim is the one ArgMax / ArgMin runs along (ops::arg_reduce, ops/reduce.h).
Split arg_split(const Kernel& k, ops::ArgReduce* arg_out) {
  if (!k.node || k.inputs.empty() || k.outputs.empty()) throw Error("internal: argminmax kernel " + k.id + " is incomplete");
  const Shape& x = k.inputs[0].shape;
  const ops::ArgReduce a = ops::arg_reduce(*k.node, x);
  if (arg_out) *arg_out = a;
  return split_range(x, a.axis, a.axis + 1);
}

Tile arg_tile(const Split& s, const OperandMaps& xm, const Target& t) {
  return choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), t);
}

void plan_argminmax(Kernel& k, const Target& t) {
  ops::ArgReduce a;
  const Split s = arg_split(k, &a);
  const Tile tile = arg_tile(s, maps_of(s, view_strides(k.inputs[0])), t);
  set_tactic(k, tile,
             fmt::format("axis {}, {} index on ties: {} outputs of {} elements; {}", a.axis,
                         a.select_last_index ? "last" : "first", s.rows(), s.cols(),
                         tile_note(tile, s.cols(), "output", false)));
}

Emitted emit_argminmax(const Kernel& k, const EmitContext& ctx) {
  const Node& n = *k.node;
  check_index_range(k);
  ops::ArgReduce a;
  const Split s = arg_split(k, &a);
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return Emitted{"", "// nothing to run: the output is empty\n"};
  const bool is_max = n.op() == "ArgMax";
  const bool last = a.select_last_index;
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'data'");
  const OperandMaps xm = maps_of(s, view_strides(x));
  const OperandMaps ym = maps_of(s, strides_rows_only(k, s, y, "output 'reduced'"));
  const Tile tile = tile_of(k, arg_tile(s, xm, Target{}));
  const std::string type = fmt::format("mc::reduction::ArgMinMax<{}, {}, {}, {}, {}>", is_max ? "true" : "false",
                                       last ? "true" : "false", operand_type(t, xm), operand_type("int64_t", ym, false),
                                       tiling_type(tile));
  return emit_kernel(k, type, {ctx.ptr(x, true), ctx.ptr(y, false)});
}

MODELC_REGISTER_FAMILY(argminmax_family)(KernelFamily{"argminmax", {"reduce.cuh"}, plan_argminmax, emit_argminmax});

}  // namespace
}  // namespace modelc

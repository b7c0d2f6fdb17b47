// codegen/families/argminmax.cpp — the `argminmax` family: ArgMax and ArgMin along one axis, with
// keepdims and select_last_index, int64 output (templates/reduce.cuh, mc::reduction::ArgMinMax).
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

Split arg_split(const Kernel& k, int64_t* axis_out) {
  if (!k.node || k.inputs.empty() || k.outputs.empty()) throw Error("internal: argminmax kernel " + k.id + " is incomplete");
  const TensorView& x = k.inputs[0];
  const int64_t axis = normalized_axis(k, k.node->attr_int("axis", 0), static_cast<int64_t>(x.shape.size()), "axis");
  Split s;
  s.shape = x.shape;
  s.col.assign(x.shape.size(), false);
  s.col[static_cast<std::size_t>(axis)] = true;
  if (axis_out) *axis_out = axis;
  return s;
}

Tile arg_tile(const Split& s, const OperandMaps& xm, const Target& t) {
  return choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), t);
}

void plan_argminmax(Kernel& k, const Target& t) {
  int64_t axis = 0;
  const Split s = arg_split(k, &axis);
  const Tile tile = arg_tile(s, maps_of(s, view_strides(k.inputs[0])), t);
  const bool last = k.node->attr_int("select_last_index", 0) != 0;
  set_tactic(k, tile,
             fmt::format("axis {}, {} index on ties: {} outputs of {} elements; {}", axis, last ? "last" : "first",
                         s.rows(), s.cols(), tile_note(tile, s.cols(), "output", false)));
}

KernelLaunches emit_argminmax(const Kernel& k, const EmitContext& ctx) {
  const Node& n = *k.node;
  check_index_range(k);
  int64_t axis = 0;
  const Split s = arg_split(k, &axis);
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run("the output is empty");
  if (s.cols() == 0) throw n.error(fmt::format("axis {} of input 'data' is empty: no {}", axis, n.op()));
  const bool is_max = n.op() == "ArgMax";
  const bool last = n.attr_int("select_last_index", 0) != 0;
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'data'");
  const OperandMaps xm = maps_of(s, view_strides(x));
  const OperandMaps ym = maps_of(s, strides_rows_only(k, s, y, "output 'reduced'"));
  const Tile tile = tile_of(k, arg_tile(s, xm, Target{}));
  const std::string type = fmt::format("mc::reduction::ArgMinMax<{}, {}, {}, {}, {}>", is_max ? "true" : "false",
                                       last ? "true" : "false", operand_type(t, xm), operand_type("int64_t", ym, false),
                                       tiling_type(tile));
  return reduction_launch(k, type, {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}});
}

MODELC_REGISTER_FAMILY(argminmax_family)(KernelFamily{"argminmax", {"reduce.cuh"}, plan_argminmax, emit_argminmax});

}  // namespace
}  // namespace modelc

// codegen/families/softmax.cpp — the `softmax` family: Softmax and LogSoftmax
// (templates/softmax.cuh, mc::reduction::Softmax).
//
// Opset < 13 coerces the input to 2-D at `axis` (default 1): the columns are every dim from axis
// on. Opset >= 13 runs along the one dim `axis` (default -1): the columns are that dim, and when
// it is not the innermost the column map is strided and the rows interleave (see reduction_common).
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

Split softmax_split(const Kernel& k, int64_t* axis_out) {
  if (!k.node || k.inputs.empty() || k.outputs.empty()) throw Error("internal: softmax kernel " + k.id + " is incomplete");
  const Node& n = *k.node;
  const TensorView& x = k.inputs[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const bool per_axis = n.opset() >= 13;
  Split s;
  s.shape = x.shape;
  s.col.assign(x.shape.size(), false);
  if (rank == 0) return s;  // one element: one row of one column
  const int64_t axis = normalized_axis(k, n.attr_int("axis", per_axis ? -1 : 1), rank, "axis");
  for (int64_t d = axis; d < (per_axis ? axis + 1 : rank); ++d) s.col[static_cast<std::size_t>(d)] = true;
  if (axis_out) *axis_out = axis;
  return s;
}

Tile softmax_tile(const Split& s, const OperandMaps& xm, const Target& t) {
  return choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), t);
}

void plan_softmax(Kernel& k, const Target& t) {
  int64_t axis = 0;
  const Split s = softmax_split(k, &axis);
  const Tile tile = softmax_tile(s, maps_of(s, view_strides(k.inputs[0])), t);
  set_tactic(k, tile,
             fmt::format("axis {} ({}): {} rows of {}; {}", axis,
                         k.node->opset() >= 13 ? "one dim" : "the input coerced to 2-D", s.rows(), s.cols(),
                         tile_note(tile, s.cols(), "row", true)));
}

KernelLaunches emit_softmax(const Kernel& k, const EmitContext& ctx) {
  const Node& n = *k.node;
  check_index_range(k);
  const Split s = softmax_split(k, nullptr);
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run("the output is empty");
  if (!is_float(x.dtype)) throw n.error(fmt::format("input has element type {}; {} needs floats", dtype_name(x.dtype), n.op()));
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'input'");
  const OperandMaps xm = maps_of(s, view_strides(x));
  const OperandMaps ym = maps_of(s, strides_same(k, s, y, "output 'output'"));
  const Tile tile = tile_of(k, softmax_tile(s, xm, Target{}));
  const std::string type = fmt::format("mc::reduction::Softmax<{}, {}, {}, {}>", n.op() == "LogSoftmax" ? "true" : "false",
                                       operand_type(t, xm), operand_type(ctype_of(k, ctx, y.dtype, "output 'output'"), ym),
                                       tiling_type(tile));
  return reduction_launch(k, type, {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}});
}

MODELC_REGISTER_FAMILY(softmax_family)(KernelFamily{"softmax", {"reduce.cuh", "softmax.cuh"}, plan_softmax, emit_softmax});

}  // namespace
}  // namespace modelc

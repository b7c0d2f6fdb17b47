// codegen/families/reduce.cpp — the `reduce` family: every Reduce* op over any set of axes
// (templates/reduce.cuh, mc::reduction::Reduce).
//
// The reduced axes become the column dims of the kernel's index space, the kept ones its row dims;
// non-contiguous reduced axes (axes {0, 2} of a 3-D input) are a column map of several dims, so no
// transpose is ever needed. keepdims only changes the output's shape, not its row map.
// noop_with_empty_axes with empty axes reduces nothing: every element is its own row (one column),
// which gives the op applied to one element, as the reference does.
#include <fmt/format.h>

#include <map>

#include "codegen/families/reduction_common.h"
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

struct ReduceLayout {
  Split split;
  std::vector<int64_t> axes;  // normalized, for the note
  bool noop = false;
};

// The axes come from input 1 (a constant) when the node has it, else from the 'axes' attribute
// (the opset < 13/18 form); empty axes reduce everything unless noop_with_empty_axes says none.
ReduceLayout reduce_layout(const Kernel& k) {
  if (!k.node) throw Error("internal: reduce kernel " + k.id + " has no node");
  const Node& n = *k.node;
  if (k.inputs.empty() || k.outputs.empty()) throw n.error("internal: reduce kernel without input or output");
  const TensorView& x = k.inputs[0];
  std::vector<int64_t> axes;
  if (n.num_inputs() > 1 && n.has_input(1)) {
    if (!n.input(1).is_constant()) {
      throw n.error("input 'axes' is computed at run time; modelc needs it constant to generate the kernel",
                    "make the axes an initializer or a Constant when exporting");
    }
    axes = n.input(1).constant().to_i64();
  } else {
    axes = n.attr_ints("axes");
  }
  ReduceLayout l;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  l.split.shape = x.shape;
  l.split.col.assign(x.shape.size(), false);
  if (axes.empty()) {
    l.noop = n.attr_int("noop_with_empty_axes", 0) != 0;
    if (!l.noop) {
      l.split.col.assign(x.shape.size(), true);
      for (int64_t d = 0; d < rank; ++d) l.axes.push_back(d);
    }
    return l;
  }
  for (int64_t a : axes) {
    const int64_t d = normalized_axis(k, a, rank, "axes");
    l.split.col[static_cast<std::size_t>(d)] = true;
  }
  for (int64_t d = 0; d < rank; ++d) if (l.split.col[static_cast<std::size_t>(d)]) l.axes.push_back(d);
  return l;
}

Tile reduce_tile(const ReduceLayout& l, const OperandMaps& xm, const Target& t) {
  return choose_tile(l.split.rows(), l.split.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row),
                     t);
}

void plan_reduce(Kernel& k, const Target& t) {
  const ReduceLayout l = reduce_layout(k);
  const Tile tile = reduce_tile(l, maps_of(l.split, view_strides(k.inputs[0])), t);
  const std::string what = l.noop ? std::string("no axes (noop_with_empty_axes): each element on its own")
                                  : fmt::format("axes {}: {} outputs of {} elements", list_str(l.axes), l.split.rows(),
                                                l.split.cols());
  set_tactic(k, tile, what + "; " + tile_note(tile, l.split.cols(), "output", false));
}

KernelLaunches emit_reduce(const Kernel& k, const EmitContext& ctx) {
  const Node& n = *k.node;
  const auto op = op_names().find(n.op());
  if (op == op_names().end()) throw n.error("internal: the reduce template has no reduction for " + n.op());
  check_index_range(k);
  const ReduceLayout l = reduce_layout(k);
  const TensorView& x = k.inputs[0];
  const TensorView& y = k.outputs[0];
  if (y.numel() == 0) return nothing_to_run("the output is empty");
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'data'");
  const OperandMaps xm = maps_of(l.split, view_strides(x));
  const OperandMaps ym = maps_of(l.split, strides_rows_only(k, l.split, y, "output 'reduced'"));
  const Tile tile = tile_of(k, reduce_tile(l, xm, Target{}));
  const std::string type =
      fmt::format("mc::reduction::Reduce<mc::reduction::{}<{}>, {}, {}, {}>", op->second, t, operand_type(t, xm),
                  operand_type(ctype_of(k, ctx, y.dtype, "output 'reduced'"), ym, false), tiling_type(tile));
  return reduction_launch(k, type, {{"x", ctx.ptr(x, true)}, {"y", ctx.ptr(y, false)}});
}

MODELC_REGISTER_FAMILY(reduce_family)(KernelFamily{"reduce", {"reduce.cuh"}, plan_reduce, emit_reduce});

}  // namespace
}  // namespace modelc

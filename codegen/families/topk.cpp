// codegen/families/topk.cpp — the `topk` family: TopK along one axis, largest or smallest, sorted,
// ties to the lower index, Values + int64 Indices (templates/topk.cuh, mc::reduction::TopK).
//
// k is the outputs' extent along the axis (shape inference took it from the attribute or the
// constant K input); one block per row, sorting in shared memory up to the template's kMaxSort
// columns, k selection rounds beyond.
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

struct TopKLayout {
  Split split;
  int64_t axis = 0;
  int64_t k = 0;
  const TensorView* values = nullptr;
  const TensorView* indices = nullptr;
};

TopKLayout topk_layout(const Kernel& k) {
  if (!k.node || k.inputs.empty()) throw Error("internal: topk kernel " + k.id + " is incomplete");
  const TensorView& x = k.inputs[0];
  TopKLayout l;
  l.axis = normalized_axis(k, k.node->attr_int("axis", -1), static_cast<int64_t>(x.shape.size()), "axis");
  l.split.shape = x.shape;
  l.split.col.assign(x.shape.size(), false);
  l.split.col[static_cast<std::size_t>(l.axis)] = true;
  if (k.outputs.size() > 0 && k.outputs[0].dtype != DType::undefined) l.values = &k.outputs[0];
  if (k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined) l.indices = &k.outputs[1];
  const TensorView* any = l.values ? l.values : l.indices;
  if (any) {
    if (any->shape.size() != x.shape.size()) {
      throw k.node->error(fmt::format("internal: output '{}' has shape {} for input {}", any->value,
                                      shape_str(any->shape), shape_str(x.shape)));
    }
    l.k = any->shape[static_cast<std::size_t>(l.axis)];
  }
  return l;
}

// The K-wide outputs' strides per logical dim (their axis extent is k, not the input's).
std::vector<int64_t> output_strides(const Kernel& k, const TopKLayout& l, const TensorView& v) {
  Shape want = l.split.shape;
  want[static_cast<std::size_t>(l.axis)] = l.k;
  if (v.shape != want) {
    throw k.node->error(fmt::format("internal: output '{}' has shape {}, expected {}", v.value, shape_str(v.shape),
                                    shape_str(want)));
  }
  return view_strides(v);
}

// Each output's maps: the row side as X's, the column side of extent k.
OperandMaps output_maps(const Kernel& k, const TopKLayout& l, const TensorView& v) {
  Split s = l.split;
  s.shape[static_cast<std::size_t>(l.axis)] = l.k;
  return maps_of(s, output_strides(k, l, v));
}

bool sorts(const TopKLayout& l, DType t) {
  // templates/topk.cuh kMaxSort: 4096 columns of 4-byte keys, 2048 of 8-byte (int64) keys.
  int64_t p = 1;
  while (p < l.split.cols()) p *= 2;
  return p <= (t == DType::int64 ? 2048 : 4096);
}

void plan_topk(Kernel& k, const Target&) {
  const TopKLayout l = topk_layout(k);
  const bool sort = sorts(l, k.inputs[0].dtype);
  set_tactic(k, choose_block_per_row(l.split.cols(), sort),
             fmt::format("axis {}, k = {}, {}: {} rows of {}; one block per row, {}", l.axis, l.k,
                         k.node->attr_int("largest", 1) != 0 ? "largest" : "smallest", l.split.rows(), l.split.cols(),
                         sort ? "bitonic sort in shared memory" : "k selection rounds (the row is too long to sort)"));
}

KernelLaunches emit_topk(const Kernel& k, const EmitContext& ctx) {
  const Node& n = *k.node;
  check_index_range(k);
  const TopKLayout l = topk_layout(k);
  const TensorView& x = k.inputs[0];
  const bool largest = n.attr_int("largest", 1) != 0;
  if (l.k == 0 || l.split.rows() == 0 || (!l.values && !l.indices)) {
    return nothing_to_run("the outputs are empty");
  }
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'X'");
  const OperandMaps xm = maps_of(l.split, view_strides(x));
  const std::string values = l.values ? operand_type(t, output_maps(k, l, *l.values)) : "mc::reduction::Absent";
  const std::string indices =
      l.indices ? operand_type("int64_t", output_maps(k, l, *l.indices)) : "mc::reduction::Absent";
  const Tile tile = tile_of(k, choose_block_per_row(l.split.cols(), sorts(l, x.dtype)));
  const std::string type = fmt::format("mc::reduction::TopK<{}, {}, {}, {}, {}, {}>", largest ? "true" : "false", l.k,
                                       operand_type(t, xm), values, indices, tiling_type(tile));
  std::vector<LaunchParam> params = {{"x", ctx.ptr(x, true)}};
  if (l.values) params.push_back({"values", ctx.ptr(*l.values, false)});
  if (l.indices) params.push_back({"indices", ctx.ptr(*l.indices, false)});
  return reduction_launch(k, type, std::move(params));
}

MODELC_REGISTER_FAMILY(topk_family)(KernelFamily{"topk", {"reduce.cuh", "topk.cuh"}, plan_topk, emit_topk});

}  // namespace
}  // namespace modelc

// codegen/families/topk.cpp — the `topk` family: TopK along one axis, largest or smallest, sorted,
// ties to the lower index, Values + int64 Indices (templates/topk.cuh, mc::reduction::TopK).
//
// Axis, k and largest are ops::topk_params (ops/reduce.h): k from the attribute or the constant K
// input, the outputs' extent along the axis; one block per row, sorting in shared memory up to the
// template's kMaxSort columns, k selection rounds beyond.
#include <fmt/format.h>

#include "codegen/families/reduction_common.h"
#include "ops/reduce.h"
#include "support/error.h"

namespace modelc {
namespace {

using namespace reduction_codegen;

// The K-wide outputs' strides per logical dim (their axis extent is k, not the input's).
std::vector<int64_t> output_strides(const Kernel& k, const TopKLayout& l, const TensorView& v) {
  Shape want = l.split.shape;
  want[static_cast<std::size_t>(l.p.axis)] = l.p.k;
  if (v.shape != want) {
    throw k.error(fmt::format("internal: output '{}' has shape {}, expected {}", v.value, shape_str(v.shape),
                              shape_str(want)));
  }
  return view_strides(v);
}

// Each output's maps: the row side as X's, the column side of extent k.
OperandMaps output_maps(const Kernel& k, const TopKLayout& l, const TensorView& v) {
  Split s = l.split;
  s.shape[static_cast<std::size_t>(l.p.axis)] = l.p.k;
  return maps_of(s, output_strides(k, l, v));
}

KernelLaunches emit_topk(const Kernel& k, const EmitContext& ctx) {
  check_index_range(k);
  const TopKLayout l = topk_layout(k);
  const TensorView& x = k.inputs[0];
  if (l.p.k == 0 || l.split.rows() == 0 || (!l.values && !l.indices)) {
    return nothing_to_run("the outputs are empty");
  }
  const std::string t = ctype_of(k, ctx, x.dtype, "input 'X'");
  const OperandMaps xm = maps_of(l.split, view_strides(x));
  const std::string values = l.values ? operand_type(t, output_maps(k, l, *l.values)) : "mc::reduction::Absent";
  const std::string indices =
      l.indices ? operand_type("int64_t", output_maps(k, l, *l.indices)) : "mc::reduction::Absent";
  const Tile tile = tile_of(k);
  const std::string type = fmt::format("mc::reduction::TopK<{}, {}, {}, {}, {}, {}>", l.p.largest ? "true" : "false", l.p.k,
                                       operand_type(t, xm), values, indices, tiling_type(tile));
  std::vector<LaunchParam> params = {{"x", ctx.ptr(x, true)}};
  if (l.values) params.push_back({"values", ctx.ptr(*l.values, false)});
  if (l.indices) params.push_back({"indices", ctx.ptr(*l.indices, false)});
  return reduction_launch(k, type, std::move(params));
}

MODELC_REGISTER_FAMILY(topk_family)(KernelFamily{"topk", {"reduce.cuh", "topk.cuh"}, emit_topk});

}  // namespace
}  // namespace modelc

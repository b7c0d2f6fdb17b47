// compiler/schedule/tactics_reduction.cpp — the tactic rules of the reduction-shaped families
// (reduce, softmax, argminmax, layernorm, instancenorm, topk): the block tiling of rows and columns.
#include <fmt/format.h>

#include <algorithm>

#include "ops/normalization.h"
#include "schedule/reduction.h"
#include "schedule/tactics.h"
#include "support/error.h"

namespace modelc::reduction {
namespace {

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

void set_tactic(Kernel& k, const ReductionTile& tile, const std::string& note) {
  k.tactic = tile;
  k.note = note;
}

// The tiling of a split's rows by its X operand's maps.
ReductionTile row_tile(const Split& s, const OperandMaps& xm, const Target& t) {
  return choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), t);
}

}  // namespace

ReductionTile choose_tile(int64_t rows, int64_t cols, int64_t col_inner_stride, int64_t row_inner_stride, const Target& t) {
  ReductionTile tile;
  if (cols <= 1) {
    tile.group = 1;
    tile.threads = static_cast<int>(std::clamp<int64_t>(pow2_at_least(rows), 32, 256));
  } else if (col_inner_stride == 1 || row_inner_stride != 1) {
    tile.group = static_cast<int>(std::clamp<int64_t>(pow2_at_least((cols + 3) / 4), 1, 512));
    const int64_t want = std::min<int64_t>(pow2_at_least(std::min<int64_t>(rows, 1 << 20) * tile.group), 128);
    tile.threads = static_cast<int>(std::max<int64_t>({tile.group, want, 32}));
  } else {
    // Columns strided, rows contiguous: consecutive threads take consecutive rows. More threads
    // per row only while the rows alone leave the GPU idle.
    const int64_t enough = static_cast<int64_t>(std::max(t.sm_count, 1)) * t.max_threads_per_sm;
    tile.lanes_contiguous = false;
    tile.threads = 256;
    tile.group = 1;
    while (tile.group < 8 && tile.group * 2 <= cols && rows * tile.group < enough) tile.group *= 2;
  }
  return tile;
}

ReductionTile choose_block_per_row(int64_t cols, bool sorts) {
  ReductionTile tile;
  tile.lanes_contiguous = true;
  tile.threads = sorts ? static_cast<int>(std::clamp<int64_t>(pow2_at_least(cols) / 2, 32, 256)) : 256;
  tile.group = tile.threads;
  return tile;
}

ReductionTile tile_of(const Kernel& k) {
  if (const ReductionTile* t = std::get_if<ReductionTile>(&k.tactic)) return *t;
  throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no reduction tiling");
}

std::string tile_note(const ReductionTile& t, int64_t cols, const char* per, bool kept_in_registers) {
  std::string s = fmt::format("{} thread{} per {}", t.group, t.group == 1 ? "" : "s", per);
  if (!t.lanes_contiguous) s += fmt::format(", interleaved (consecutive threads take consecutive {}s)", per);
  if (kept_in_registers) {
    const int64_t per_thread = (cols + t.group - 1) / t.group;
    s += per_thread <= 16 ? fmt::format(", {} kept in registers", per) : fmt::format(", {} re-read each pass", per);
  }
  return s;
}

void reduce_tactic(Kernel& k, const std::vector<Target>& targets) {
  const ReduceLayout& l = plan_of<ReduceLayout>(k);
  const ReductionTile tile = row_tile(l.split, maps_of(l.split, view_strides(k.inputs[0])), targets.front());
  const std::string what = l.noop ? std::string("no axes (noop_with_empty_axes): each element on its own")
                                  : fmt::format("axes {}: {} outputs of {} elements", list_str(l.axes), l.split.rows(),
                                                l.split.cols());
  set_tactic(k, tile, what + "; " + tile_note(tile, l.split.cols(), "output", false));
}

void softmax_tactic(Kernel& k, const std::vector<Target>& targets) {
  const SoftmaxPlan& p = plan_of<SoftmaxPlan>(k);
  const Split& s = p.split;
  const ops::SoftmaxDims& d = p.dims;
  const ReductionTile tile = row_tile(s, maps_of(s, view_strides(k.inputs[0])), targets.front());
  set_tactic(k, tile,
             fmt::format("axis {} ({}): {} rows of {}; {}", d.axis, d.coerced ? "the input coerced to 2-D" : "one dim",
                         s.rows(), s.cols(), tile_note(tile, s.cols(), "row", true)));
}

void argminmax_tactic(Kernel& k, const std::vector<Target>& targets) {
  ops::ArgReduce a;
  const Split s = arg_split(k, &a);
  const ReductionTile tile = row_tile(s, maps_of(s, view_strides(k.inputs[0])), targets.front());
  set_tactic(k, tile,
             fmt::format("axis {}, {} index on ties: {} outputs of {} elements; {}", a.axis,
                         a.select_last_index ? "last" : "first", s.rows(), s.cols(),
                         tile_note(tile, s.cols(), "output", false)));
}

void layernorm_tactic(Kernel& k, const std::vector<Target>& targets) {
  const NormPlan& p = plan_of<NormPlan>(k);
  const Split& s = p.split;
  const OperandMaps xm = maps_of(s, view_strides(k.inputs[0]));
  const ReductionTile tile = row_tile(s, xm, targets.front());
  set_tactic(k, tile,
             fmt::format("axis {}: {} rows of {}, epsilon {}; {}", p.axis, s.rows(), s.cols(), p.epsilon,
                         tile_note(tile, s.cols(), "row", true)));
}

void instancenorm_tactic(Kernel& k, const std::vector<Target>& targets) {
  const NormPlan& p = plan_of<NormPlan>(k);
  const Split& s = p.split;
  const OperandMaps xm = maps_of(s, view_strides(k.inputs[0]));
  const ReductionTile tile = row_tile(s, xm, targets.front());
  set_tactic(k, tile,
             fmt::format("{} (batch, channel) rows of {}, epsilon {}; {}", s.rows(), s.cols(), p.epsilon,
                         tile_note(tile, s.cols(), "row", true)));
}

void topk_tactic(Kernel& k, const std::vector<Target>&) {
  const TopKLayout l = topk_layout(k);
  const bool sort = topk_sorts(l, k.inputs[0].dtype);
  set_tactic(k, choose_block_per_row(l.split.cols(), sort),
             fmt::format("axis {}, k = {}, {}: {} rows of {}; one block per row, {}", l.p.axis, l.p.k,
                         l.p.largest ? "largest" : "smallest", l.split.rows(), l.split.cols(),
                         sort ? "bitonic sort in shared memory" : "k selection rounds (the row is too long to sort)"));
}

}  // namespace modelc::reduction

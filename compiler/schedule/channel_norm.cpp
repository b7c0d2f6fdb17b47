// compiler/schedule/channel_norm.cpp — see channel_norm.h.
#include "schedule/channel_norm.h"

#include <fmt/format.h>

#include "ops/channel_norm.h"
#include "schedule/families.h"
#include "schedule/family_work.h"
#include "schedule/tactics.h"
#include "support/error.h"

namespace modelc::reduction {

TensorView group_view(const TensorView& v, int64_t groups) {
  const std::vector<int64_t> st = view_strides(v);
  TensorView g = v;
  const int64_t C = v.shape.at(1);
  g.shape = {v.shape[0], groups, C / groups};
  g.strides = {st[0], (C / groups) * st[1], st[1]};
  for (std::size_t d = 2; d < v.shape.size(); ++d) {
    g.shape.push_back(v.shape[d]);
    g.strides.push_back(st[d]);
  }
  return g;
}

Split groupnorm_split(const Kernel& k) {
  if (!k.source.node || k.inputs.size() < 3 || k.outputs.empty()) throw Error("internal: groupnorm kernel " + k.id + " is incomplete");
  const ops::GroupNorm g = ops::group_norm(*k.source.node, k.inputs[0].shape);
  const Shape& s = group_view(k.inputs[0], g.groups).shape;
  return split_range(s, 2, static_cast<int64_t>(s.size()));
}

GroupNormPlan groupnorm_plan(const Kernel& k) {
  GroupNormPlan p;
  p.split = groupnorm_split(k);
  p.g = ops::group_norm(*k.source.node, k.inputs[0].shape);
  return p;
}

void groupnorm_tactic(Kernel& k, const std::vector<Target>& targets) {
  const GroupNormPlan& p = plan_of<GroupNormPlan>(k);
  const ops::GroupNorm& g = p.g;
  const Split& s = p.split;
  const OperandMaps xm = maps_of(s, group_view(k.inputs[0], g.groups).strides);
  const ReductionTile tile =
      choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), targets.front());
  k.tactic = tile;
  k.note = fmt::format("{} groups of {} channels: {} (batch, group) rows of {}, epsilon {}, scale and bias per {}; {}",
                       g.groups, g.group_size, s.rows(), s.cols(), g.epsilon, g.per_channel ? "channel" : "group",
                       tile_note(tile, s.cols(), "row", true));
}

}  // namespace modelc::reduction

namespace modelc {

void lrn_tactic(Kernel& k, const std::vector<Target>&) {
  const ops::Lrn& p = plan_of<ops::Lrn>(k);
  k.tactic = GridStrideTactic{256, std::nullopt};
  k.note = fmt::format("one thread per output element, the sum of squares over {} channels (FP32)", p.size);
}

namespace {

// The families' facts, beside families.cpp's table (register_family).
FamilyFacts groupnorm_facts() {
  FamilyFacts f;
  f.name = "groupnorm";
  // Normalize takes every operand through its own (row, column) maps in its own element type: any
  // layout (channels-last buffers are read in place) and a folded boundary Cast.
  f.strided_operands = true;
  f.follows_layout = LayoutFollow::same_shape;
  f.converts_types = true;
  f.choose_tactic = reduction::groupnorm_tactic;
  f.plan = [](const Kernel& k) { return make_plan("groupnorm", reduction::groupnorm_plan(k)); };
  f.work = work::groupnorm;
  return f;
}

FamilyFacts lrn_facts() {
  FamilyFacts f;
  f.name = "lrn";
  f.strided_operands = true;
  f.follows_layout = LayoutFollow::same_shape;
  f.converts_types = true;
  f.choose_tactic = lrn_tactic;
  f.plan = [](const Kernel& k) { return make_plan("lrn", ops::lrn(*k.source.node)); };
  return f;
}

const FamilyFactsRegistration groupnorm_registration{groupnorm_facts()};
const FamilyFactsRegistration lrn_registration{lrn_facts()};

}  // namespace
}  // namespace modelc

// compiler/schedule/channel_norm.h — the groupnorm and lrn families as the schedule sees them: their
// facts (registered beside the built-in table of families.cpp), their tactic rules, and their plans
// (GroupNormalization's split, which the groupnorm printer and the cost model read; LRN's ops::Lrn).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/channel_norm.h"
#include "schedule/reduction.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::reduction {

/// \brief A view of X's shape [N, C, D1, ...] as the logical [N, G, C / G, D1, ...] of a
/// GroupNormalization with G groups: the channel dim split in two (its stride s becomes
/// (C / G) * s and s).
TensorView group_view(const TensorView& v, int64_t groups);

/// \brief groupnorm: rows are (N, group), columns a group's channels and the instance dims, over the
/// logical shape of group_view (ops::group_norm).
Split groupnorm_split(const Kernel& k);

/// \brief groupnorm's plan: the node's groups, epsilon and scale / bias form (ops::group_norm) and
/// groupnorm_split.
struct GroupNormPlan {
  ops::GroupNorm g;
  Split split;
};
GroupNormPlan groupnorm_plan(const Kernel& k);

/// groupnorm: the tiling of groupnorm_split's rows (reduction::choose_tile).
void groupnorm_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::reduction

namespace modelc {

/// lrn: a grid-stride loop, one thread per output element reading its channel window.
void lrn_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc

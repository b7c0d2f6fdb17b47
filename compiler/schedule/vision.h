// compiler/schedule/vision.h — the grid_sample, roi_align and nms families as the schedule sees them:
// their facts (registered beside families.cpp's table), their plans (ops::GridSample, ops::RoiAlign,
// ops::Nms, read from the node by the plan_kernels stage) and tactic rules, and the workspace of the
// NonMaxSuppression kernel (templates/vision.cuh NmsWorkspace computes the same layout).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/vision.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::vision {

/// Bytes of NmsSelect / NmsCompact's workspace: a candidate flag per (batch, class, box), then
/// int32 selections [pairs, max per class], counts [pairs] and offsets [pairs + 1], 16-byte rounded.
int64_t nms_workspace_bytes(const ops::Nms& s);

void grid_sample_tactic(Kernel& k, const std::vector<Target>& targets);
void roi_align_tactic(Kernel& k, const std::vector<Target>& targets);
/// nms: a block per (batch, class) selecting, one block compacting; sets the workspace.
void nms_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::vision

// compiler/schedule/profiles.h — batch profiles: one model compiled at several batch sizes
// (`--batch 1,8,32`) into one program.
//
// Each profile is a whole compile of the model at its batch (the frontend fixes the shapes, the
// pipeline plans kernels, tactics and the arena for exactly those shapes: Schedule::batch). This
// file makes them one program: one weights blob (share_weights: a tensor one profile stores is
// stored once, whichever profiles read it; transformed copies such as OHWI or Winograd's U too
// where their bytes are equal) and one batch layout of the inputs and outputs (mark_batched: which
// ones the program pads or trims along their first dim). At run time the runtime picks the smallest
// profile whose batch is at least the caller's (runtime_stub/runtime.h), each profile with its own
// arena plan inside one arena of the largest size.
#pragma once

#include <vector>

#include "schedule/schedule.h"

namespace modelc {

/// \brief Makes the profiles' weights one blob: the first profile's entries stay where they are;
/// an entry of a later profile whose dtype, shape and bytes equal one already in the blob shares
/// it, the others are appended (256-byte aligned). Afterwards every profile's `weights` and
/// `weights_bytes` are the blob's and its kernels' weight views point into it.
void share_weights(const std::vector<Schedule*>& profiles);

/// \brief Sets ModelTensor::batched of every profile's inputs and outputs: a tensor whose shape
/// differs between the profiles has, in each, the first dim the profile's batch times one constant
/// and its other dims equal. Throws Error naming the tensor when its batch lies elsewhere (batch
/// profiles pad and trim the first dim), or its name, dtype or rank differ. Profiles in ascending
/// batch order, at least two.
void mark_batched(const std::vector<Schedule*>& profiles);

/// The batch a single compile runs when --batch does not say: its first input's first dim (the
/// first input of rank >= 1), else 1.
int64_t default_batch(const Schedule& s);

}  // namespace modelc

// compiler/schedule/se_gate.h — the "se_gate" family (templates/se_gate.cuh): the gate of a
// squeeze-and-excite block, a modelc.SEGate node (ops/se_gate.h, made by passes/fuse_se_gate), in
// one kernel.
//
// The family registers its own descriptor (se_gate.cpp, beside families.cpp's table). Facts: X runs
// channels-last where the layout stage stores it so (any channel pitch), NCHW otherwise. Its plan is
// the node's spec with X's strides (image, channel, pixel) and Y's image stride; its tactic the
// block size (DirectTactic: one block an image); its work the pool's reads and the two FCs, on N
// blocks (the template's split: one block pools an image and runs its FCs).
#pragma once

#include <vector>

#include "ops/se_gate.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::se_gate {

/// \brief A gate kernel's plan: the node's spec, the element type, X's element strides between
/// images, channels and pixels (NHWC: 1 and the pitch; NCHW: H x W and 1) and Y's between images.
struct SeGatePlan {
  ops::SeGateSpec spec;
  DType type = DType::float16;
  int64_t x_image = 0, x_channel = 0, x_pixel = 0;
  int64_t y_image = 0;
};

/// The plan of gate kernel k; an internal Error naming the node when X's pixels are not one stride
/// apart, Y's channels are not contiguous, or a weight is not a dense buffer.
SeGatePlan se_gate_plan(const Kernel& k);

/// The threads of a block for the plan: 256 where an image has at least 8192 elements, else 128.
int se_gate_threads(const SeGatePlan& p);

}  // namespace modelc::se_gate

// compiler/ops/depth_space.h — a DepthToSpace / SpaceToDepth node's block size and channel
// order: the reference evaluation and shape rules (ops/depth_space.cpp) and the code generator's
// depth_space family read the same attributes.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief How the depth side's channel splits: c_depth = (i * b + j) * C + c in DCR order (the
/// default, and SpaceToDepth's), (c * b + i) * b + j in CRD order, for block row i, column j.
struct DepthSpace {
  int64_t blocksize = 1;
  bool crd = false;  ///< DepthToSpace's mode 'CRD' (opset 11 on)
};
/// 'blocksize' (required) and 'mode' (default DCR). Error naming the node for a missing or
/// non-positive block size or another mode.
DepthSpace depth_space(const Node& n);

}  // namespace modelc::ops

// compiler/ops/resize.h — how a Resize/Upsample node samples its input: the reference
// interpreter applies it, and the code generator's resize family writes the same taps into
// the kernel's tables (templates/resize.cuh), so both read the same elements with the same weights.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ops/registry.h"

namespace modelc::ops {

/// One output coordinate's source along an axis: weighted input indices, or the
/// extrapolation value (tf_crop_and_resize outside the input).
struct ResizeTaps {
  bool extrapolate = false;
  std::vector<std::pair<int64_t, double>> w;
};

/// \brief The separable sampling of a Resize/Upsample: per input axis, the taps of every
/// output coordinate; empty for an axis whose mapping is the identity (left unchanged).
struct ResizeSampling {
  Shape out;
  double extrapolation = 0.0;
  int64_t width = 1;  ///< taps per output coordinate: 1 nearest, 2 linear, 4 cubic
  std::string mode, coord, nearest_mode;
  std::vector<std::vector<ResizeTaps>> axes;
};

/// The sampling of node `n` (any Resize/Upsample form) for an input of shape `x_shape`;
/// in[i] for i >= 1 are its roi/scales/sizes inputs (null when absent; in[0] is not read).
ResizeSampling resize_sampling(const Node& n, const Shape& x_shape, const TensorRefs& in);

}  // namespace modelc::ops

// compiler/ops/activation.h — the activations' parameters with the spec's defaults, and where a
// Clip's bounds come from: the reference evaluation (ops/activation.cpp), the fused epilogues
// (ops/fused.cpp, passes/fuse_epilogue) and the code generator's elementwise family read the same
// values.
#pragma once

#include <array>
#include <optional>

#include "ir/graph.h"

namespace modelc::ops {

/// The spec's defaults of the activation attributes.
inline constexpr double kLeakyReluAlpha = 0.01;
inline constexpr double kEluAlpha = 1.0;
inline constexpr double kSeluAlpha = 1.67326319217681884765625;
inline constexpr double kSeluGamma = 1.05070102214813232421875;
inline constexpr double kHardSigmoidAlpha = 0.2;
inline constexpr double kHardSigmoidBeta = 0.5;
/// HardSwish(x) = x * HardSigmoid(x) with these fixed parameters (HardSwish has no attributes).
inline constexpr double kHardSwishAlpha = 1.0 / 6.0;
inline constexpr double kHardSwishBeta = 0.5;

/// \brief The float attributes of LeakyRelu (alpha), Elu (alpha), Selu (alpha, gamma) and
/// HardSigmoid (alpha, beta); 0 for one the op does not have.
struct ActivationAttrs {
  double alpha = 0, beta = 0, gamma = 0;
};
/// The attributes of `n` (one of the four ops above), the defaults where absent. They are ONNX
/// floats: read rounded to float32, so a value is the same whichever way the graph was built.
/// Error naming the node for another op.
ActivationAttrs activation_attrs(const Node& n);

/// \brief One bound of a Clip.
struct ClipBound {
  bool given = false;           ///< false: that side is not clipped
  std::optional<Tensor> value;  ///< the bound (one element) when it is known at compile time
  int input = -1;               ///< the node input that holds it (opset 11 on); -1 for an attribute
};
/// Clip's lower and upper bound: before opset 11 the 'min' and 'max' attributes (ONNX floats,
/// as float32 scalars), from 11 the optional inputs 1 and 2 (with their data where constant).
std::array<ClipBound, 2> clip_bounds(const Node& n);

}  // namespace modelc::ops

// compiler/schedule/elementwise.h — the elementwise family's plan: the op an elementwise kernel
// computes with its parameters (ops/activation.h, ops/math.h, ops/activation_smooth.h,
// ops/normalization.h), a fused node's activation (ops/fused.h) and the legacy broadcast
// (ops/elementwise.h), read from the node once; codegen/families/elementwise.cpp spells it as an
// mc::ew functor.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "ops/activation.h"
#include "ops/fused.h"
#include "ops/math.h"
#include "schedule/schedule.h"

namespace modelc {

/// \brief What an elementwise kernel computes. Only the parameters of `op` are set; the others
/// keep their defaults.
struct ElementwisePlan {
  /// The ONNX op: the node's, the one a Fused* node wraps ("FusedAdd" -> "Add",
  /// ops::producer_of_fused), or "Identity" for a kernel without a node (an output copy).
  std::string op;
  ops::ActivationAttrs activation;     ///< LeakyRelu, Elu: alpha; Selu: alpha, gamma; HardSigmoid: alpha, beta
  std::array<ops::ClipBound, 2> clip;  ///< Clip: its bounds (ops::clip_bounds)
  ops::IsInfDetect isinf;              ///< IsInf: the infinities it detects
  bool fmod = false;                   ///< Mod: 'fmod'
  double celu_alpha = 1;               ///< Celu: 'alpha'
  bool gelu_tanh = false;              ///< Gelu: the tanh approximation
  double epsilon = 0;                  ///< BatchNormalization: 'epsilon'
  ops::EpilogueActivation act;         ///< a Fused* node's activation (none for the plain ops)
  /// Two inputs broadcast the legacy way (before opset 7: 'broadcast' and 'axis'; PRelu's slope):
  /// the numpy shape of input 1's view (ops::legacy_numpy_shape: its own dims, then dims of
  /// length 1 at stride 0); none for the numpy broadcast.
  std::optional<Shape> legacy_b_shape;
};
/// The plan of an elementwise kernel from its node (none: an Identity) and its views.
ElementwisePlan elementwise_plan(const Kernel& k);

}  // namespace modelc

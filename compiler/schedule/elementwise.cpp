// compiler/schedule/elementwise.cpp — see elementwise.h.
#include "schedule/elementwise.h"

#include "ops/activation_smooth.h"
#include "ops/elementwise.h"
#include "ops/normalization.h"

namespace modelc {

ElementwisePlan elementwise_plan(const Kernel& k) {
  ElementwisePlan p;
  if (!k.source.node) {
    p.op = "Identity";
    return p;
  }
  const Node& n = *k.source.node;
  const bool fused = ops::activation_only_fused(n.op());
  p.op = fused ? ops::producer_of_fused(n.op()) : n.op();
  const std::string& op = p.op;
  if (op == "LeakyRelu" || op == "Elu" || op == "Selu" || op == "HardSigmoid") p.activation = ops::activation_attrs(n);
  if (op == "Clip") p.clip = ops::clip_bounds(n);
  if (op == "IsInf") p.isinf = ops::isinf_detect(n);
  if (op == "Mod") p.fmod = ops::mod_is_fmod(n);
  if (op == "Celu") p.celu_alpha = ops::celu_alpha(n);
  if (op == "Gelu") p.gelu_tanh = ops::gelu_approximates_tanh(n);
  if (op == "BatchNormalization") p.epsilon = ops::norm_epsilon(n);
  if (fused) p.act = ops::activation_of_fused(n);
  if (k.inputs.size() == 2) p.legacy_b_shape = ops::legacy_numpy_shape(n, k.inputs[0].shape, k.inputs[1].shape);
  return p;
}

}  // namespace modelc

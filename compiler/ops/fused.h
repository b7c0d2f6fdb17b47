// compiler/ops/fused.h — modelc's internal fused ops (domain "modelc"):
// FusedConv, FusedGemm, FusedMatMul = a producer (Conv, Gemm, MatMul) and an
// epilogue (bias, activation, residual add). passes/fuse_epilogue makes them;
// the code generator runs them as one kernel.
// FusedBatchNormalization, FusedAdd, FusedSub, FusedMul, FusedDiv = an
// elementwise op and the activation after it (passes/fuse_elementwise): the
// op's own inputs and attributes plus the activation attributes below, no bias
// or residual; Y = act(op(inputs)), in one elementwise kernel.
//
// Inputs:  0, 1  the producer's operands (X, W for Conv; A, B for Gemm/MatMul)
//          2     the bias, optional: Conv's B and Gemm's C exactly as the
//                producer takes them; for FusedMatMul a 1-D tensor of N values
//                (N = Y's last dim) added to every row
//          3     the residual R, optional: Y's type and shape
// Attributes: the producer's (FusedMatMul: alpha, default 1, scales the product
// before the epilogue, as Gemm's alpha does: passes/fold_scale sets it), and
//   activation         'none' (default), 'relu', 'clip', 'leaky_relu', 'sigmoid',
//                      'tanh', 'hard_sigmoid', 'hard_swish', 'silu', 'gelu' (the
//                      erf form), 'gelu_tanh' (the tanh approximation), 'softsign',
//                      'mish', 'celu'
//   activation_alpha   leaky_relu's slope; hard_sigmoid's and hard_swish's alpha; celu's alpha
//   activation_beta    hard_sigmoid's and hard_swish's beta
//   activation_min/max clip's bounds; an absent bound does not clip that side
//   residual_position  'before_activation' or 'after_activation' (required with
//                      input 3): ResNets add the residual before their ReLU
// The activation parameters carry an "activation_" prefix because Gemm's own
// attributes already use alpha and beta.
//
//   Y = act(P(inputs 0..) [+ bias] [+ R if before]) [+ R if after]   (FusedMatMul: P = alpha * A x B)
//
// A fused node's opset is the default-domain opset of the producer it
// replaces: it selects the producer's form (Gemm 1, 7, 11), whose attribute
// checks, shape rule and reference evaluation the fused op reuses through the
// registry.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief The activations a fused epilogue computes.
enum class Activation {
  none, relu, clip, leaky_relu, sigmoid, tanh, hard_sigmoid, hard_swish, silu, gelu, gelu_tanh,
  softsign, mish, celu  // ops/activation_smooth.h
};

const char* activation_name(Activation a);
/// Null when `name` is not an activation of the list above.
std::optional<Activation> parse_activation(const std::string& name);

/// \brief An activation with its parameters.
struct EpilogueActivation {
  Activation kind = Activation::none;
  double alpha = 0, beta = 0;       ///< leaky_relu, celu: alpha; hard_sigmoid, hard_swish: alpha, beta
  std::optional<double> min, max;   ///< clip
};

/// The value of the activation at x (double arithmetic).
double apply_activation(const EpilogueActivation& a, double x);

/// The epilogue form of a single activation node: Relu, LeakyRelu, Sigmoid,
/// Tanh, HardSigmoid, HardSwish, Clip (bounds as attributes, or as constant
/// inputs), Softsign, Mish, Celu, Gelu (either form). Null for any other node, for an op whose fusion class is not
/// epilogue_activation, or for a Clip whose bounds are not constant.
std::optional<EpilogueActivation> epilogue_activation_of(const Node& n);

/// Writes the activation's attributes on a fused node (activation, and the
/// parameters the kind uses).
void set_activation(Node& fused, const EpilogueActivation& a);
/// Reads them back; Error naming the attribute when it is malformed.
EpilogueActivation activation_of_fused(const Node& fused);

/// The fused op that wraps a producer ("Conv" -> "FusedConv", "Gemm" ->
/// "FusedGemm", "MatMul" -> "FusedMatMul"; the INT8 products QConv and QMatMul
/// are their own fused forms), empty when there is none.
std::string fused_op_for(const std::string& producer_op);
/// The producer a fused op wraps ("FusedConv" -> "Conv"), empty when `fused_op` is not one.
std::string producer_of_fused(const std::string& fused_op);

/// True for the fused elementwise ops (FusedBatchNormalization, FusedAdd, FusedSub, FusedMul,
/// FusedDiv): their inputs are the op's own (no bias or residual slots), the epilogue an activation.
bool activation_only_fused(const std::string& fused_op);

/// Input slots of a fused node (FusedConv, FusedGemm, FusedMatMul).
constexpr int kFusedBiasInput = 2;
constexpr int kFusedResidualInput = 3;

}  // namespace modelc::ops

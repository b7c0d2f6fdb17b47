// compiler/schedule/linear_plans.h — the plans of the linear families (schedule/plan.h): what the
// gemm, conv, conv_depthwise, conv_transpose, pool, conv_int8 and gemm_int8 printers, the cost
// model and the report read of a kernel beyond its views and tactic. The plan_kernels stage makes
// them from the node and the views (the functions below are those families' FamilyFacts::plan);
// the tactics stage adds a Winograd plan to a convolution it runs that way.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/fused.h"
#include "ops/quantize.h"
#include "schedule/int8.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "schedule/winograd.h"

namespace modelc::linear {

/// \brief What a convolution or matrix product computes after its sum, beyond its views (which say
/// whether a bias or residual is given): a fused node's activation and residual position
/// (FusedConv, FusedGemm, FusedMatMul), or each range's activation (a horizontally fused kernel).
struct LinearEpilogue {
  bool fused = false;            ///< the node is a fused producer
  ops::EpilogueActivation act;   ///< its activation (none when not fused)
  /// The residual's position, "before_activation" or "after_activation" (checked); empty without a
  /// residual.
  std::string residual_position;
  /// Per Kernel::ranges entry, that node's activation (none where the node is not fused).
  std::vector<ops::EpilogueActivation> ranges;
};

/// \brief gemm: the product as its templates see it, and its epilogue.
struct GemmPlan {
  GemmLowering gemm;
  LinearEpilogue epilogue;
};

/// \brief conv: the window geometry, the epilogue, and the channels-last storage of its operands.
struct ConvPlan {
  ConvGeometry geometry;
  LinearEpilogue epilogue;
  /// True when X, W and Y (a horizontally fused kernel: X and W) are dense NCHW views.
  bool dense = true;
  /// X's and Y's channel pitches (channels_last_pitch; 0 where the view is not channels-last, Y's
  /// for a horizontally fused kernel, whose ranges have their own strides).
  int64_t x_pitch = 0, y_pitch = 0;
  /// Unless dense: W's OHWI storage (kernel_weight_storage) and the tensor-core GEMM depth it gives
  /// (tc_conv_depth).
  WeightStorage w;
  TcConvDepth depth;
  /// The tactics stage: the convolution runs as Winograd F(2x2, 3x3) (engine "winograd"), its
  /// workspace laid out so.
  std::optional<WinogradPlan> winograd;
  /// fuse_prologue: what the convolution applies to X as it loads it (Kernel::prologue; its
  /// operands are inputs 4..6), and the gate's image pitch (elements from image n to n + 1).
  OperandPrologue prologue;
  int64_t gate_pitch = 0;
};

/// \brief conv_depthwise and conv_transpose: the window geometry, the epilogue, the layout.
struct DirectConvPlan {
  ConvGeometry geometry;
  LinearEpilogue epilogue;
  KernelLayout layout;  ///< conv_transpose: dense NCHW (checked)
};

/// \brief pool: MaxPool / AveragePool (a window) or GlobalMaxPool / GlobalAveragePool.
struct PoolPlan {
  bool global = false;
  bool max = false;          ///< MaxPool / GlobalMaxPool
  KernelLayout layout;       ///< channels-last with pitches, or dense NCHW (checked)
  ConvGeometry geometry;     ///< a windowed pool's
  bool include_pad = false;  ///< AveragePool's count_include_pad
  bool column_major = false; ///< MaxPool's storage_order (the Indices)
  /// fuse_prologue: what the pool applies to each element of X as it loads it (Kernel::prologue;
  /// its operands are inputs 4..6), and the gate's image pitch, as ConvPlan's.
  OperandPrologue prologue;
  int64_t gate_pitch = 0;
};

/// \brief conv_int8: QConv on the INT8 tensor cores.
struct Int8ConvPlan {
  ConvGeometry geometry;
  int64_t x_pitch = 0, y_pitch = 0;
  TcConvDepth depth;
  ops::Int8Epilogue epilogue;
};

/// \brief gemm_int8: QMatMul on the INT8 tensor cores.
struct Int8GemmPlan {
  Int8Gemm gemm;
  ops::Int8Epilogue epilogue;
};

/// The families' FamilyFacts::plan.
std::shared_ptr<const KernelPlan> gemm_plan(const Kernel& k);
std::shared_ptr<const KernelPlan> conv_plan(const Kernel& k);
std::shared_ptr<const KernelPlan> conv_depthwise_plan(const Kernel& k);
std::shared_ptr<const KernelPlan> conv_transpose_plan(const Kernel& k);
std::shared_ptr<const KernelPlan> pool_plan(const Kernel& k);
std::shared_ptr<const KernelPlan> conv_int8_plan(const Kernel& k);
std::shared_ptr<const KernelPlan> gemm_int8_plan(const Kernel& k);

/// \brief The INT8 epilogue of a conv_int8 or gemm_int8 kernel's plan; null for any other kernel.
const ops::Int8Epilogue* int8_epilogue_of(const Kernel& k);

}  // namespace modelc::linear

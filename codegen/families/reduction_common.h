// codegen/families/reduction_common.h — what the reduction-shaped families share to print a kernel
// (reduce, argminmax, softmax, layernorm, instancenorm, topk): the maps and tiling as template
// arguments (mc::reduction::Strided<Dims<...>, Strides<...>>, Tiling<...>) and the launch.
// The row/column split, the maps and the tiling are the schedule's (schedule/reduction.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/family.h"
#include "codegen/literals.h"
#include "schedule/reduction.h"
#include "schedule/tactics.h"

namespace modelc::reduction_codegen {

// The split, maps and tiling are the schedule's (schedule/reduction.h, schedule/tactics.h).
using namespace ::modelc::reduction;

/// \brief "mc::reduction::Strided<mc::reduction::Dims<4, 3>, mc::reduction::Strides<12, 1>>",
/// or "mc::reduction::NoDims" for no dims.
std::string map_type(const std::vector<MapDim>& dims);

/// \brief "mc::reduction::Operand<float, ROW, COL>" (COL left out when `with_col` is false).
std::string operand_type(const std::string& ctype, const OperandMaps& m, bool with_col = true);

/// \brief The block tiling (templates/reduce.cuh Tiling<kThreads, kGroup, kLanesContiguous>).
using Tile = ReductionTile;
std::string tiling_type(const Tile& t);

/// \brief C++ element type of a dtype, through the emitter; an Error naming the node when the
/// templates do not support it.
std::string ctype_of(const Kernel& k, const EmitContext& ctx, DType t, const char* what);

/// \brief The one launch of a kernel: its instantiation `type` with the Params fields `params`,
/// commented with the node (the emitter writes the kernel's own comment: shapes, tactic, k.note).
KernelLaunches reduction_launch(const Kernel& k, const std::string& type, std::vector<LaunchParam> params);

/// \brief The operands of a Normalize kernel (layernorm, instancenorm); absent optional ones null.
struct NormalizeOperands {
  const TensorView* x = nullptr;
  const TensorView* scale = nullptr;
  const TensorView* bias = nullptr;
  const TensorView* y = nullptr;
  const TensorView* mean = nullptr;
  const TensorView* inv_std_dev = nullptr;
  /// Strides per logical dim of Scale and B (they broadcast differently per op).
  std::function<std::vector<int64_t>(const TensorView&, const char*)> param_strides;
};
/// \brief The Normalize instantiation and launch (mean and inv_std_dev: row maps only).
KernelLaunches emit_normalize(const Kernel& k, const EmitContext& ctx, const Split& s, const NormalizeOperands& ops,
                              double epsilon);

}  // namespace modelc::reduction_codegen

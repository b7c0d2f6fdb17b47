// codegen/families/reduction_common.h — what the reduction-shaped families share to print a kernel
// (reduce, argminmax, softmax, layernorm, instancenorm, topk): the maps and tiling as template
// arguments (mc::reduction::Strided<Dims<...>, Strides<...>>, Tiling<...>) and the launch text.
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
/// templates do not support it (bfloat16).
std::string ctype_of(const Kernel& k, const EmitContext& ctx, DType t, const char* what);

/// \brief The emitted code of one kernel: `using ALIAS = TYPE;` and a launch of
/// mc::reduction::kernel<ALIAS> with ALIAS::kBlocks blocks of ALIAS::kThreads threads and
/// ALIAS::Params{params...}. (The emitter writes the comment: node, shapes, tactic, k.note.)
Emitted emit_kernel(const Kernel& k, const std::string& type, const std::vector<std::string>& params);
/// The alias of a kernel's instantiation: "<id>_<family>".
std::string alias_of(const Kernel& k);

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
Emitted emit_normalize(const Kernel& k, const EmitContext& ctx, const Split& s, const NormalizeOperands& ops,
                       double epsilon);

}  // namespace modelc::reduction_codegen

// codegen/families/linear.h — what the gemm, conv, conv_depthwise, conv_transpose and pool
// families share to print a kernel: the instantiation and launch of a GEMM-shaped or direct
// template, the epilogues, and the spelling of shapes and geometry as template arguments. What
// they print was decided by the schedule (schedule/linear.h: the GEMM lowering and the window
// geometry; schedule/tactics.h: tiles and engines); tests/templates check it against hand-written
// instantiations.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/family.h"
#include "codegen/literals.h"
#include "schedule/linear.h"
#include "schedule/linear_plans.h"
#include "schedule/tactics.h"

namespace modelc::linear {

// ---- emitting ----------------------------------------------------------------------------------

/// \brief The one launch of a kernel: the instantiation `type` with `params`, commented `comment`
/// (the emitter writes the kernel's own comment above the launch). Nothing to run when the first
/// output is empty.
KernelLaunches linear_launch(const Kernel& k, const std::string& comment, const std::string& type,
                             std::vector<LaunchParam> params);
/// The epilogue of a convolution: EpilogueBias when input 2 (B) is present, else EpilogueIdentity;
/// a fused node's EpilogueFused (the plan's LinearEpilogue e). Its Params fields go to *params ("epilogue.bias", ...), a comment
/// fragment to *what.
std::string bias_epilogue(const Kernel& k, const EmitContext& ctx, const LinearEpilogue& e, const std::string& T,
                          std::vector<LaunchParam>* params, std::string* what);

/// \brief The epilogue of a fused node as `mc::gemm::EpilogueFused<T, bias strides, has bias, activation,
/// residual position>`; the Params fields it needs go to *params (alpha and beta where not 1, the
/// bias, the residual, the parameters the activation uses: "epilogue.act.alpha", ...) and a
/// comment fragment to *what (" + relu + residual"). Input 3 (the residual) must have Y's layout.
std::string fused_epilogue(const Kernel& k, const EmitContext& ctx, const LinearEpilogue& e, const std::string& T,
                           const MatrixStrides& bias, bool has_bias, double alpha, double beta,
                           std::vector<LaunchParam>* params, std::string* what);

/// \brief Where a range of a horizontally fused kernel stores (templates/gemm.cuh Range): element
/// strides per outer index (a convolution's image, a product's batch), per inner index (the output
/// pixel, the row) and per channel (output channel, column).
struct RangeStrides {
  int64_t outer = 0, inner = 0, channel = 0;
};

/// \brief The epilogue of a horizontally fused convolution or matrix product (k.ranges) as
/// `mc::gemm::EpilogueRanges<T, TY, has bias, axis, Range<begin, end, activation, strides,
/// vector>...>`: alpha * acc + beta * the concatenated bias (input 2, read as T), output i at
/// strides[i] (of k.outputs[i]) with range i's activation (the plan's); `axis` is "row" (a convolution's
/// channels) or "column" (a product's). Its Params fields go to *params ("epilogue.y[0]", alpha
/// and beta where not 1, ...), a comment fragment to *what.
std::string ranged_epilogue(const Kernel& k, const EmitContext& ctx, const LinearEpilogue& e, const std::string& T,
                            const std::string& TY, const std::string& axis, const std::vector<RangeStrides>& strides, double alpha,
                            double beta, std::vector<LaunchParam>* params, std::string* what);

/// \brief The tactic of each arch variant of k: (0, k.tactic) when every arch has the same, else
/// (SM number, tactic) of each planned arch, ascending (Launch::min_sm).
std::vector<std::pair<int, Tactic>> arch_variants(const Kernel& k);

/// \brief The launches of a tensor-core kernel: one of decl(the tile of k.tactic); with
/// k.arch_tactic, an arch variant per planned arch (Launch::min_sm: the device runs the tactic of
/// the newest planned arch not above its own, the oldest's below them). A tile that splits K is two
/// launches: the product writing its partial sums to k.workspace (Params::partial), then
/// mc::tc::SplitKReduce of the same type adding them and running the epilogue. Each launch raises
/// its dynamic shared memory to the type's kSmemBytes (Launch::dynamic_smem). Each comment is
/// `comment` and the tile. A variant whose tactic is a SIMT tile (BF16 below sm_80: the schedule's
/// tensor_cores_on) is one launch of simt_decl(tile) with the same params, commented `simt_comment`
/// and the tile. A variant whose tactic is a small-M tile (the gemm family, schedule/small_m.h) is
/// one launch of small_m_decl(tile) (with split-K, Params::partial the workspace and
/// Params::tickets k.zeroed), includes gemm_small_m.cuh. Nothing to run when the first output is
/// empty.
KernelLaunches tc_launches(const Kernel& k, const EmitContext& ctx, const std::string& comment,
                           const std::function<std::string(const TcTile&)>& decl, const std::vector<LaunchParam>& params,
                           const std::string& simt_comment = {},
                           const std::function<std::string(const TileConfig&)>& simt_decl = nullptr,
                           const std::function<std::string(const SmallMTile&)>& small_m_decl = nullptr);

/// "mc::gemm::Strides<batch0, batch1, batch2, row, col>".
std::string strides_text(const MatrixStrides& s);
/// Y's strides; "none, the ranges'" for a horizontally fused product (it has no Y of its own).
std::string y_text(const GemmLowering& g);

/// \brief The launch of a matrix product on the Hopper engine (k.tactic a HopperTile;
/// codegen/families/hopper.cpp): `mc::hopper::Gemm<MMA policy, TY, Shape, A, B, Y strides,
/// hopper::Tile, epilogue>` with `params` (Y, the epilogue's fields; A and B go to its tensor maps,
/// Launch::tensor_maps), commented `comment` and the tile; includes hopper_gemm.cuh.
KernelLaunches hopper_gemm_launches(const Kernel& k, const EmitContext& ctx, const GemmLowering& g,
                                    const std::string& epilogue, std::vector<LaunchParam> params,
                                    const std::string& comment);

/// \brief The launch of an NHWC convolution on the Hopper engine (k.tactic a HopperTile; plan c):
/// `mc::hopper::Conv<MMA policy, TY, conv Shape, X pitch, Y pitch, hopper::Tile<...>, epilogue, PH,
/// PW>` (the pixel rectangle schedule/hopper.h hopper_pixel_rect gives the tile) with `params` (Y,
/// the epilogue's; X and W go to its tensor maps), commented `comment` and the tile.
KernelLaunches hopper_conv_launches(const Kernel& k, const EmitContext& ctx, const ConvPlan& c,
                                    const std::string& epilogue, std::vector<LaunchParam> params,
                                    const std::string& comment);

/// \brief The launches of the INT8 families on the Hopper engine (k.tactic an INT8 HopperTile):
/// `mc::hopper::Gemm<mc::tc::MmaS8<TA>, TY, Shape<1, 1, 1, M, N, K>, A rows, B [N][K], Y rows, Tile,
/// tc8::Epilogue>` and `mc::hopper::Conv<mc::tc::MmaS8<TA>, ...>`, as hopper_gemm_launches and
/// hopper_conv_launches.
KernelLaunches hopper_int8_gemm_launches(const Kernel& k, const EmitContext& ctx, const Int8Gemm& g,
                                         const std::string& epilogue, std::vector<LaunchParam> params,
                                         const std::string& comment);
KernelLaunches hopper_int8_conv_launches(const Kernel& k, const EmitContext& ctx, const Int8ConvPlan& c,
                                         const std::string& epilogue, std::vector<LaunchParam> params,
                                         const std::string& comment);

/// The C++ type of tensor-core operands of `t`: "__half" (float16) or "mc::bf16" (bfloat16).
std::string tc_operand_type(const Kernel& k, DType t);

/// "mc::tc::Tile<BM, BN, BK, WarpsM, WarpsN, Async, Stages, SplitK>".
std::string tc_tile_text(const TcTile& t);

/// "Dims3<a, b, c>" (the namespace-qualified template of conv.cuh).
std::string dims3(const std::array<int64_t, 3>& d);
/// "mc::conv::Shape<N, C, M, G, In, Kernel, Out, Stride, Pad, Dilation>".
std::string conv_shape(const ConvGeometry& g);
/// The accumulator type for a storage dtype: "float" (floating), "int64_t" (integers).
std::string acc_type(DType t);

}  // namespace modelc::linear

// compiler/schedule/winograd.h — the Winograd F(2x2, 3x3) engine of the conv family
// (templates/winograd.cuh): which convolutions it runs, its workspace, its cost (the sum of its
// three launches' estimates), the tactic rule that weighs it against the direct tensor-core
// convolution, and the weights transformed at compile time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "schedule/linear.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::linear {

/// \brief Why tensor-core convolution k cannot run Winograd F(2x2, 3x3) ("" when it can): a 2-D
/// 3x3 filter, stride 1, dilation 1, groups 1, one output (not horizontally fused), W stored at X's
/// channel pitch (not the compact form of fewer than 8 channels: schedule/layout.h WeightStorage),
/// FP16 storage (the transforms stage FP16: a BF16 convolution stays direct).
std::string winograd_unfit(const Kernel& k, const ConvGeometry& g);

/// \brief The buffers of a Winograd convolution: `tiles` 2x2 output tiles (every image), V
/// [16][tiles][x_pitch] __half and M [16][tiles][m_pitch] FP32 in the workspace (V first, M at
/// m_offset), U [16][M][x_pitch] __half in the weights.
struct WinogradPlan {
  int64_t tiles = 0, x_pitch = 0, m_pitch = 0;
  int64_t v_bytes = 0, m_offset = 0, m_bytes = 0, u_bytes = 0;
  int64_t workspace_bytes() const { return m_offset + m_bytes; }
};
WinogradPlan winograd_plan(const Kernel& k, const ConvGeometry& g);

/// \brief The estimate of k run as Winograd with GEMM tile `gemm` on `t`: its three launches'
/// estimates (cost_model.h) summed (sum_estimates), V and M moving through L2 (KernelWork::l2_bytes)
/// when together they fit in half of it, else through DRAM.
Estimate winograd_estimate(const Kernel& k, const TcTile& gemm, const Target& t);

/// \brief For a convolution the direct tensor-core tactic was planned for (plan_tc_archs): runs
/// it as Winograd instead when Target::winograd says always, or (auto) when on every target the
/// Winograd estimate (its GEMMs' tile chosen by choose_tc_tile, no split-K) beats the direct one
/// by kWinogradMargin. Sets engine "winograd", the tactic per arch, the workspace and the note's
/// reason; returns that reason, or why the direct convolution stays ("" when Winograd does not
/// apply: winograd_unfit, or --winograd never).
std::string plan_winograd(Kernel& k, const ConvGeometry& g, const std::vector<Target>& targets);

/// Winograd must beat the direct convolution's estimate by this fraction: its FP16 rounding of the
/// transformed input and weights costs accuracy, and the model does not price the transforms' L2
/// traffic.
constexpr double kWinogradMargin = 0.10;

/// \brief U = G g G^T of OHWI weights [M, 3, 3, pitch] (FP16 or FP32), as [16, M, pitch] of the
/// same type: U[4i + j][m][c] = (G g[m, :, :, c] G^T)[i][j], computed in double and rounded once.
Tensor winograd_weights(const Tensor& ohwi);

}  // namespace modelc::linear

// compiler/schedule/conv_tiled.h — the schedule's side of the two 16-bit NHWC convolution templates
// of issue 30 (docs/CONV_KERNELS.md): mc::conv::ConvDepthwiseTiled (templates/conv_depthwise.cuh,
// the conv_depthwise family's Engine::depthwise_tiled) and mc::tc::ConvGrouped
// (templates/conv_grouped.cuh, the conv family's tensor-core engine for groups > 1). What each
// takes (the fallback reason otherwise), the tactic, and the work the cost model prices; the
// numbers here are the templates' own (kSmemBytes, grid(), SuperGroups), which the printers and
// the tests hold them to.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "schedule/cost_model.h"
#include "schedule/linear.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::linear {

// ---- ConvDepthwiseTiled -----------------------------------------------------------------------

/// \brief Why the tiled depthwise template cannot run conv_depthwise kernel k ("" when it can):
/// FP16 or BF16 X, W and Y, channels-last X and Y, 2-D (or 1-D), multiplier 1, a window of at
/// most 7x7, W [C][KH][KW], X 16-byte aligned, Y's offset a multiple of 2 channels.
std::string depthwise_tiled_fallback(const Kernel& k);

/// \brief Shared memory of ConvDepthwiseTiled with tactic t on geometry g (its kSmemBytes: the input
/// tile with its halo, CB + 8 elements a pixel, 2 bytes an element).
int64_t depthwise_smem_bytes(const ConvGeometry& g, const DepthwiseTactic& t);

/// \brief The work of ConvDepthwiseTiled kernel k with tactic t: FLOPs 2 N C OH OW KH KW (executed:
/// the whole tiles and channel blocks, HFMA2 two channels an instruction), blocks as its grid(),
/// its threads, shared memory and registers (estimated), the halo's L2 -> shared bytes as l2_bytes.
void depthwise_tiled_work(KernelWork& w, const Kernel& k, const DepthwiseTactic& t);

/// \brief The tactics stage for a conv_depthwise kernel k that the tiled template takes
/// (depthwise_tiled_fallback empty): per target the tile the cost model estimates fastest among
/// the candidates for its window (CV 8 for 3x3, 4 for 5x5, 2 for 7x7; fewer where the registers
/// would exceed the template's budget), cp.async from sm_80, FP16 sums only under
/// --fp16-accumulate on FP16 storage. Sets k.tactic, k.arch_tactic, k.note.
void plan_depthwise_tiled(Kernel& k, const std::vector<Target>& targets);

// ---- tc::ConvGrouped ----------------------------------------------------------------------------

/// \brief The super-groups tc::ConvGrouped forms (SuperGroups<Sh>): F = 8 / gcd(Mg, 8) groups
/// merged, Cs = F Cg input and Ms = F Mg output channels each, `count` of them, GEMM depth K = taps Cs.
struct GroupedShape {
  int64_t F = 1, Cs = 1, Ms = 1, count = 1, taps = 1, K = 1;
};
GroupedShape grouped_shape(const ConvGeometry& g);

/// \brief Why tc::ConvGrouped cannot run conv kernel k of geometry g, groups > 1 ("" when it can;
/// the conv tactic reports "groups = G; " and this):
/// FP16 / BF16 X and W (the caller checked), channels-last X and Y, more than one input channel a
/// group (one: the conv_depthwise family), W stored as the layout stage's grouped OHWI [M][taps][Cg],
/// 16-byte aligned buffers, one output (no horizontal fusion), one type for bias and residual.
std::string grouped_fallback(const Kernel& k, const ConvGeometry& g);

/// \brief Shared memory of tc::ConvGrouped with tile t (its kSmemBytes): the stages (one without
/// cp.async or 16-byte A chunks) of the A slices of every super-group a block touches and the W
/// slice, or the epilogue's scratch, whichever is larger. x_pitch: X's channel pitch.
int64_t grouped_smem_bytes(const ConvGeometry& g, const TcTile& t, int64_t x_pitch);

/// \brief The work of tc::ConvGrouped on geometry g with tile t moving `bytes` (w.bytes): useful
/// FLOPs 2 pixels M taps Cg; executed, the tiles over the super-group depth (F times the useful
/// where groups are merged, plus the padding); its blocks, threads, shared memory, K slices.
void grouped_work(KernelWork& w, const ConvGeometry& g, const TcTile& t, int64_t x_pitch);

/// \brief The tactics stage for a grouped conv kernel that tc::ConvGrouped takes: per target the
/// tile the cost model estimates fastest (split-K none, within the target's shared memory), or
/// `simt`'s tile where the target has no tensor cores for the storage (BF16 below sm_80). Sets
/// k.tactic, k.arch_tactic, k.engine (tensor_core), k.note.
void plan_grouped(Kernel& k, const ConvGeometry& g, int64_t x_pitch, const std::vector<Target>& targets,
                  const std::function<TileConfig(const Target&, std::string*)>& simt);

}  // namespace modelc::linear

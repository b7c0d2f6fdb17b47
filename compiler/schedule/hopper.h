// compiler/schedule/hopper.h — the Hopper engine's tactic rules (--arch sm_90a): when a matrix
// product runs on templates/hopper_gemm.cuh (wgmma.mma_async fed by TMA, warp-specialized,
// persistent) instead of the mma.sync tensor-core templates, and with which tile. docs/hopper.md
// says what the templates take; the gemm family's tactic (tactics_linear.cpp gemm_tactic) asks here
// first and keeps mma.sync, with the reason in its note, where the engine does not apply.
#pragma once

#include <string>
#include <vector>

#include "schedule/cost_model.h"
#include "schedule/int8.h"
#include "schedule/linear.h"
#include "schedule/linear_plans.h"
#include "schedule/tactic.h"
#include "schedule/target.h"

namespace modelc::linear {

/// \brief Why the product g of kernel k (FP16 or BF16 operands, tensor cores chosen) does not run on
/// the Hopper engine for `targets`; "" when it does. The engine needs every target to be sm_90a
/// (the one Hopper-engine image; a fat binary keeps one mma.sync plan), FP32 accumulation, A
/// K-major (k contiguous), B K-major or N-major, each operand's batch dims flattening to one stride
/// (hopper::GemmProblem::flat), and TMA's rules for its tensor maps: rows and batches of whole 16
/// bytes, a row at least as long as the dim it holds.
std::string hopper_gemm_fallback(const Kernel& k, const GemmLowering& g, const std::vector<Target>& targets);

/// \brief The Hopper engine's tile for `batch` products of M x N x K moving `bytes` on target t:
/// the candidates (128 x 256 x 64 in 3 stages, 128 x 128 x 64 and 128 x 64 x 64 in 4, two consumer
/// warpgroups; 64 x 128 x 64 and 64 x 64 x 64 in 4, one; BK 128 for INT8) by the cost model's
/// estimate, the larger tile on a tie; the reason in *why.
HopperTile choose_hopper_tile(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const Target& t,
                              std::string* why, bool int8 = false);

/// \brief Why convolution k (plan c; FP16 or BF16, NHWC, tensor cores chosen) does not run on the
/// Hopper engine (hopper::Conv) for `targets`; "" when it does. Beyond the product's rules (sm_90a
/// alone, FP32 accumulation): 2-D (or 1-D), one output (not horizontally fused), W in taps of X's
/// channel pitch (not the compact form of a first RGB convolution), X a whole NHWC tensor at its
/// pitch, strides of at most 8 (TMA's traversal steps).
std::string hopper_conv_fallback(const Kernel& k, const ConvPlan& c, const std::vector<Target>& targets);

/// \brief A Hopper convolution tile's rows as a rectangle of PH x PW output pixels of one image
/// (PH x PW = bm, powers of two; hopper::Conv's PH, PW): the one covering g's output plane with the
/// fewest tiles (ties: the wider), each box within TMA's 256 elements a dim.
struct PixelRect {
  int ph = 1, pw = 1;
};
PixelRect hopper_pixel_rect(const ConvGeometry& g, int bm);

/// \brief The Hopper engine's tile for convolution g of channel pitch `pitch` moving `bytes` on
/// target t: choose_hopper_tile's candidates by the estimate of hopper_conv_work.
HopperTile choose_hopper_conv_tile(const ConvGeometry& g, int64_t pitch, double bytes, const Target& t, std::string* why,
                                   bool int8 = false);

/// \brief Why INT8 product g of gemm_int8 kernel k does not run on the Hopper engine (hopper::Gemm
/// with tc::MmaS8 and the family's tc8::Epilogue); "" when it does: sm_90a alone, K and A's rows
/// whole 16 bytes (TMA).
std::string hopper_int8_gemm_fallback(const Kernel& k, const Int8Gemm& g, const std::vector<Target>& targets);

/// \brief Why conv_int8 kernel k (plan c) does not run on the Hopper engine (hopper::Conv with
/// tc::MmaS8); "" when it does: hopper_conv_fallback's rules (less FP32 accumulation and ranges,
/// which INT8 kernels do not have) and no zero point of X (TMA pads with 0: tc8::Conv keeps those).
std::string hopper_int8_conv_fallback(const Kernel& k, const Int8ConvPlan& c, const std::vector<Target>& targets);

/// \brief The work of convolution g (channel pitch `pitch`) on the Hopper engine with tile t: the
/// product of the pixel rectangles' rows (rounded up per image) by M by taps x ceil(pitch / BK) x BK,
/// its useful FLOPs the convolution's.
KernelWork hopper_conv_work(const ConvGeometry& g, int64_t pitch, double bytes, const HopperTile& t);

}  // namespace modelc::linear

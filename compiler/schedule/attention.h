// compiler/schedule/attention.h — the "attention" family (templates/attention.cuh): the fused
// attention kernel of a modelc.Attention node (ops/attention.h, made by passes/fuse_attention).
//
// The family registers its own descriptor (attention.cpp, beside families.cpp's table): its plan is
// the node's spec with the element types of its operands; its tactic the block tile, chosen by head
// dim and sequence lengths; its work two products of 2 B H Sq Skv D FLOPs each on tensor cores.
// Q, K and V are views of the values the projections wrote (one packed value or three), O a view
// of the value the output projection reads: every operand's TensorView is its value's own dense
// buffer, and the plan's HeadViews are element offsets and strides into it (no transpose or copy).
#pragma once

#include <vector>

#include "ops/attention.h"
#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc::attention {

/// \brief An attention kernel's plan: the node's spec (views, lengths, scale, causal mask), Q's
/// (K's, V's, O's) element type and each bias term's.
struct AttentionPlan {
  ops::AttentionSpec spec;
  DType type = DType::float16;
  std::vector<DType> bias_types;  ///< one per spec.bias entry
};

/// The plan of attention kernel k; an Error naming the node when an operand is not a dense buffer
/// of its value (the views are offsets into it) or Q, K, V and O are not FP16 / BF16.
AttentionPlan attention_plan(const Kernel& k);

/// \brief The tile for a problem of head dim d, query length sq, key length skv over `blocks_per_q`
/// (batch x heads) blocks per query tile, on targets of at least `smem` bytes of shared memory per
/// block and `sms` SMs: warps of 16 query rows each (4 where the sequence has 64 rows, fewer where
/// it is shorter or the blocks would not cover the SMs), key tiles of 64 (the sequence rounded up
/// to 16 where it is shorter), 3 stages where there are 3 key tiles and they fit, else 2.
AttentionTile attention_tile(int64_t d, int64_t sq, int64_t skv, int64_t blocks_per_q, int smem, int sms);

/// The tactics stage's rule of the family: k.tactic by attention_tile on the weakest target, the
/// note; an Error naming the node for BF16 below sm_80 (no BF16 MMA) or a tile that does not fit.
void attention_tactic(Kernel& k, const std::vector<Target>& targets);

}  // namespace modelc::attention

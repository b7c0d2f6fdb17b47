// compiler/ops/normalization.h — the attributes of the normalization ops and the dims they
// normalize over: the reference evaluation (ops/normalization.cpp), passes/fold_batchnorm and the
// code generator's layernorm, instancenorm and elementwise (BatchNormalization) families read
// the same rules.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace modelc::ops {

/// 'epsilon' of a BatchNormalization, InstanceNormalization or LayerNormalization node
/// (default 1e-5).
double norm_epsilon(const Node& n);

/// LayerNormalization normalizes over X's dims [axis, rank): 'axis' (default -1) made
/// non-negative. Error naming the node when it is out of range for `rank`.
int64_t layernorm_axis(const Node& n, int64_t rank);

/// InstanceNormalization normalizes each (batch, channel) over X's dims [2, rank): returns 2.
/// Error naming the node when X (of shape `x`) has rank < 3.
int64_t instancenorm_axis(const Node& n, const Shape& x);

}  // namespace modelc::ops

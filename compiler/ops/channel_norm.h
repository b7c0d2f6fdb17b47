// compiler/ops/channel_norm.h — the normalizations that read across channels: GroupNormalization
// (each group of C / G channels of an instance normalized together) and LRN (each element scaled by
// the squares of its channel neighbours). The reference (ops/channel_norm.cpp) and the code
// generator's groupnorm and lrn families read these rules.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief A GroupNormalization node's meaning for an X of shape [N, C, D1, ...].
struct GroupNorm {
  int64_t groups = 1;        ///< 'num_groups' (required); divides C
  int64_t group_size = 1;    ///< C / groups: channels per group
  double epsilon = 1e-5;     ///< 'epsilon'
  /// Opset 21 and later: scale and bias hold one value per channel ([C]). Opset 18 (the form later
  /// deprecated): one value per group ([num_groups]).
  bool per_channel = true;
};
/// The attributes checked against X's shape: 'num_groups' present, >= 1 and dividing C, X of rank
/// 3 or more ([N, C, D1, ...]; rank 2 has no instance dims to normalize over beside the channels,
/// which the spec allows: rank >= 2). Error naming the node otherwise.
GroupNorm group_norm(const Node& n, const Shape& x);

/// \brief An LRN node's meaning: y = x / (bias + alpha / size * sum of x^2 over the channels
/// [c - before, c + after] clipped to [0, C - 1]) ^ beta.
struct Lrn {
  int64_t size = 1;     ///< 'size' (required, >= 1)
  int64_t before = 0;   ///< floor((size - 1) / 2) channels before c
  int64_t after = 0;    ///< ceil((size - 1) / 2) channels after c
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
};
/// The attributes of an LRN node; Error naming the node when 'size' is absent or below 1.
Lrn lrn(const Node& n);

}  // namespace modelc::ops

// compiler/ops/elementwise.h — the legacy broadcast of the binary ops before opset 7: the
// reference evaluation and shape rules (ops/elementwise.cpp, ops/activation.cpp) and the code
// generator's elementwise family align B with A by the same rule.
#pragma once

#include <optional>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief B's shape in numpy form where the node's form broadcasts the legacy way; nullopt where
/// it broadcasts numpy's. Add, Sub, Mul, Div (opsets 1, 6) and Pow (1) align B with A's dims from
/// 'axis' on when broadcast=1 (else B has A's shape); PRelu (1, 6) takes a slope of one element or
/// one value per channel (X's dim 1). The result is B's shape followed by 1s up to the dims it
/// aligns with (empty for one element), so numpy broadcasting of A and it gives the legacy
/// alignment. Error naming the node when B does not fit A.
std::optional<Shape> legacy_numpy_shape(const Node& n, const Shape& a, const Shape& b);

}  // namespace modelc::ops

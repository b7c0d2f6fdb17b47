// compiler/ops/math.h — the attributes and integer rules of the elementwise math ops of
// ops/math.cpp (Mod, IsInf), read by the reference evaluation and the elementwise family's printer.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace modelc::ops {

/// Mod's 'fmod' (default 0): true when the remainder takes the dividend's sign (C's fmod), false
/// for the divisor's (Python's %). Error naming the node for another value.
bool mod_is_fmod(const Node& n);

/// The integer remainder of Mod: `a % b` with the sign of b (fmod false) or of a (fmod true),
/// exact in int64. Error naming the node when b is 0.
int64_t int_mod(const Node& n, int64_t a, int64_t b, bool fmod);

/// \brief Which infinities IsInf reports ('detect_negative', 'detect_positive'; default both).
struct IsInfDetect {
  bool negative = true, positive = true;
};
/// Error naming the node for a value other than 0 or 1.
IsInfDetect isinf_detect(const Node& n);

}  // namespace modelc::ops

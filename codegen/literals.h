// codegen/literals.h — C++ literals of values the families print into the generated code: every
// family spells a number the same way; and names made fit for UTF-8 text.
#pragma once

#include <cstdint>
#include <string>

#include "codegen/launch.h"
#include "ir/tensor.h"
#include "ops/fused.h"

namespace modelc {

/// A float literal that reads back as the float nearest to v ("0.01f", "1e-05f", "6.0f"; "NAN",
/// "INFINITY", "-INFINITY" where the float is not finite).
std::string float_literal(double v);
/// A double literal that reads back as v exactly.
std::string double_literal(double v);
/// An int64_t literal ("INT64_MIN" where a plain literal would not be one).
std::string int_literal(int64_t v);
/// "0x3c00": the bits of element 0 of a tensor, as an unsigned literal of its bits type.
std::string bits_literal(const Tensor& t);
/// \brief `s` with every byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD
/// (model names may hold any bytes; comments and reports are UTF-8 text). Valid UTF-8 is kept.
std::string valid_utf8(const std::string& s);

/// The Params fields of an activation's parameters (templates/activation.cuh ActParams), under
/// `field` ("epilogue.act", "op.act"): those the activation uses, each a float literal.
void activation_params(const ops::EpilogueActivation& act, const std::string& field, std::vector<LaunchParam>* params);

}  // namespace modelc

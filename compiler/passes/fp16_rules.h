// compiler/passes/fp16_rules.h — what the 16-bit float passes (precision, fold_cast_pairs; --fp16 and
// --bf16 alike) ask of a node: which inputs become float16 / bfloat16, whether the op takes them,
// whether --keep-fp32 pins it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/registry.h"

namespace modelc::fp16_rules {

/// \brief Whether --keep-fp32 (`keep`) names the node, by its name or a name it covers.
bool pinned(const Node& n, const std::set<std::string>& keep);
/// \brief The inputs a 16-bit node reads as float16 (bfloat16): its float32 inputs that are not
/// parameters (OpDef::const_inputs).
std::vector<bool> converted_inputs(const Node& n, const ops::OpDef& def);
/// \brief Whether the op takes `type` (float16 or bfloat16) for the inputs `conv` marks: its
/// validation and shape rule on a stand-alone copy (the node is not changed). `why` gets the op's
/// message when not.
bool accepts(const Node& n, const ops::OpDef& def, const std::vector<bool>& conv, DType type, std::string& why);

}  // namespace modelc::fp16_rules

// compiler/ops/gemm.h — what Gemm's attributes and an Einsum equation mean: read by the reference
// (ops/gemm.cpp), fuse_epilogue, and the schedule's GEMM lowering (schedule/linear.h).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief Gemm (and FusedGemm): Y = alpha * op(A) op(B) + beta * C, op a transpose where asked.
struct GemmAttributes {
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 1.0;
};
GemmAttributes gemm_attributes(const Node& n);

/// \brief A parsed Einsum equation: one term per operand and the output term (letters only;
/// implicit output: the letters that appear exactly once, alphabetically). `text`: the attribute
/// as written, for messages.
struct EinsumEquation {
  std::vector<std::string> terms;
  std::string out;
  std::string text;
};
/// Parses and checks the equation against the node (spaces ignored; each ellipsis replaced by
/// letters the equation does not use, for the dims its operand's letters do not name, right-aligned
/// across operands as numpy does); an Error naming the node otherwise.
EinsumEquation parse_einsum(const Node& n);

}  // namespace modelc::ops

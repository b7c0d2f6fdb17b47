// compiler/cli/commands/verdict.h — the range rule of `modelc verify` (verify.cpp): an output also
// passes when every element is close in absolute terms, the tolerance set from the output's range.
// A near-zero output (a detector's probability map, mostly 0) makes the relative L2 error
// meaningless while its largest difference is what the user sees.
#pragma once

#include <cstddef>

#include "runtime_stub/npy.h"

namespace modelc::cli {

/// \brief The range rule's outcome for one output.
struct RangeCheck {
  bool applies = false;  ///< float outputs of the same dtype and shape (integers: never)
  bool pass = false;     ///< every finite element within `tolerance`; NaN where want is NaN, the same Inf
  double range = 0;      ///< want's largest finite value minus its smallest
  double tolerance = 0;  ///< factor x range
  double worst = 0;      ///< the largest |got - want| where want is finite (Inf where got is not finite)
  std::size_t worst_index = 0;  ///< its flat index
};

/// \brief The range rule: every element of `got` within factor x the range of `want`. factor <= 0:
/// does not apply.
RangeCheck range_check(const mc_npy::Array& got, const mc_npy::Array& want, double factor);

/// \brief The range rule's default factor: the storage type's rounding at 1.0 (FP16 2^-10, BF16 and
/// INT8 2^-7), 1e-5 for FP32 (what float32 kernels and the float64-accumulating reference differ by).
double default_range_tol(bool fp16, bool bf16, bool int8);

}  // namespace modelc::cli

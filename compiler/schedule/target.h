// compiler/schedule/target.h — the GPUs a compile targets: one Target per --arch.
#pragma once

#include <string>
#include <vector>

namespace modelc {

/// \brief The target of a tactic choice: one --arch (a fat binary has a tactic per arch where they
/// differ).
struct Target {
  int sm = 75;          ///< 75, 80, 86, 89, 90, ...
  int sm_count = 80;    ///< assumed SM count for wave heuristics (target_for: a common part per arch)
  int smem_per_block = 48 * 1024;
  /// --fp16-accumulate: FP16 accumulators where the family offers them.
  bool fp16_accumulate = false;
};

/// "sm_86" -> 86. Throws Error for anything that is not sm_XX (XX >= 75: the oldest modelc targets).
int arch_number(const std::string& arch);

/// The Target of an arch (compute capability, assumed SM count, shared memory per block).
Target target_for(const std::string& arch);

/// \brief The distinct targets of an --arch list, ascending by SM number (never empty: sm_75 when
/// the list is), each with `fp16_accumulate` set.
std::vector<Target> targets_for(const std::vector<std::string>& archs, bool fp16_accumulate);

}  // namespace modelc

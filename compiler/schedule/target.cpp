#include "schedule/target.h"

#include <algorithm>

#include "support/error.h"

namespace modelc {

int arch_number(const std::string& arch) {
  const bool form = arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 && arch.size() <= 6 &&
                    arch.find_first_not_of("0123456789", 3) == std::string::npos;
  const int n = form ? std::stoi(arch.substr(3)) : 0;
  if (!form || n < 75) {
    throw Error("--arch '" + arch + "' is not a GPU architecture modelc targets",
                "write sm_XX with XX >= 75 (compute capability 7.5 and newer), e.g. sm_75, sm_86, sm_90");
  }
  return n;
}

Target target_for(const std::string& arch) {
  Target t;
  t.sm = arch_number(arch);
  // SM counts of a common part of each architecture (wave heuristics only: the code is correct on
  // any count): T4, A100, RTX 3090 / A40, Orin, RTX 4090 / L40, H100 SXM, B200, RTX 5090.
  static const std::pair<int, int> kSmCount[] = {{75, 40},  {80, 108}, {86, 82},   {87, 16},
                                                 {89, 128}, {90, 132}, {100, 148}, {120, 170}};
  for (const auto& [sm, count] : kSmCount) {
    if (sm <= t.sm) t.sm_count = count;
  }
  t.smem_per_block = 48 * 1024;  // without the opt-in attribute, on every arch
  return t;
}

std::vector<Target> targets_for(const std::vector<std::string>& archs, bool fp16_accumulate) {
  std::vector<Target> targets;
  for (const std::string& a : archs) {
    Target t = target_for(a);
    t.fp16_accumulate = fp16_accumulate;
    if (std::none_of(targets.begin(), targets.end(), [&](const Target& x) { return x.sm == t.sm; })) targets.push_back(t);
  }
  if (targets.empty()) {
    targets.push_back(target_for("sm_75"));
    targets.back().fp16_accumulate = fp16_accumulate;
  }
  std::sort(targets.begin(), targets.end(), [](const Target& a, const Target& b) { return a.sm < b.sm; });
  return targets;
}

}  // namespace modelc

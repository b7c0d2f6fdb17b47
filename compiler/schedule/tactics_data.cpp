// compiler/schedule/tactics_data.cpp — the tactic rules of the elementwise and data-movement
// families: grid-stride loops.
#include <algorithm>

#include "schedule/tactics.h"

namespace modelc {

void elementwise_tactic(Kernel& k, const std::vector<Target>&) {
  if (k.outputs.empty()) return;
  const int64_t n = k.outputs[0].numel();
  k.tactic = GridStrideTactic{256, n <= 0 ? 0 : std::min<int64_t>((n + 255) / 256, 4096)};
  k.note = "broadcasting elementwise kernel, FP32 math, grid-stride loop";
}

}  // namespace modelc

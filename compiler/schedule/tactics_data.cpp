// compiler/schedule/tactics_data.cpp — the tactic rules of the elementwise and data-movement
// families: grid-stride loops of 256 threads.
#include <algorithm>

#include "schedule/data_movement.h"
#include "schedule/tactics.h"

namespace modelc {

void elementwise_tactic(Kernel& k, const std::vector<Target>&) {
  if (k.outputs.empty()) return;
  const int64_t n = k.outputs[0].numel();
  k.tactic = GridStrideTactic{256, n <= 0 ? 0 : std::min<int64_t>((n + 255) / 256, 4096)};
  k.note = "broadcasting elementwise kernel, FP32 math, grid-stride loop";
}

std::function<void(Kernel&, const std::vector<Target>&)> data_tactic(std::string note) {
  return [note](Kernel& k, const std::vector<Target>&) {
    k.tactic = GridStrideTactic{256, std::nullopt};
    k.note = note;
  };
}

void transpose_tactic(Kernel& k, const std::vector<Target>&) {
  StridedCopy c = plan_of<TransposePlan>(k).copy;
  collapse(c.shape, {&c.y_strides, &c.x_strides});
  k.tactic = GridStrideTactic{256, std::nullopt};
  k.note = tiled_dim(c) >= 0 ? "copy through 32x32 shared-memory tiles (reads and writes coalesced)"
                             : "strided copy (writes coalesced)";
}

void resize_tactic(Kernel& k, const std::vector<Target>&) {
  k.note = "tap tables computed at emit time; FP32 accumulation (float64 for integer data)";
}

}  // namespace modelc

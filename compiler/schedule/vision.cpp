// compiler/schedule/vision.cpp — see vision.h.
#include "schedule/vision.h"

#include <fmt/format.h>

#include "schedule/families.h"

namespace modelc::vision {

int64_t nms_workspace_bytes(const ops::Nms& s) {
  const int64_t pairs = s.batches * s.classes;
  const int64_t alive = (pairs * s.boxes + 15) / 16 * 16;
  return (alive + pairs * s.max_per_class * 4 + pairs * 4 + (pairs + 1) * 4 + 15) / 16 * 16;
}

void grid_sample_tactic(Kernel& k, const std::vector<Target>&) {
  const ops::GridSample s = ops::grid_sample(*k.source.node);
  k.tactic = GridStrideTactic{256, std::nullopt};
  k.note = fmt::format("one thread per output element: {} sampling, {} padding, align_corners {}", s.mode_name(),
                       s.padding_name(), s.align_corners ? 1 : 0);
}

void roi_align_tactic(Kernel& k, const std::vector<Target>&) {
  const ops::RoiAlign r = ops::roi_align(*k.source.node);
  k.tactic = GridStrideTactic{256, std::nullopt};
  k.note = fmt::format("one thread per output element: the {} of {} samples per bin", r.max_mode ? "max" : "average",
                       r.sampling_ratio > 0 ? fmt::format("{} x {}", r.sampling_ratio, r.sampling_ratio)
                                            : std::string("ceil(roi size / output size)"));
}

void nms_tactic(Kernel& k, const std::vector<Target>&) {
  const ops::Nms s = ops::nms(*k.source.node);
  k.tactic = DirectTactic{256};
  k.workspace_bytes = nms_workspace_bytes(s);
  k.note = fmt::format("a block per (batch, class): at most {} greedy rounds over {} boxes; the output's static "
                       "bound {} rows ({} x {} x {}), -1 past the selected boxes",
                       s.max_per_class, s.boxes, s.bound(), s.batches, s.classes, s.max_per_class);
}

namespace {

struct Registration {
  explicit Registration(FamilyFacts f) { register_family(std::move(f)); }
};

FamilyFacts facts(const char* name, std::function<void(Kernel&, const std::vector<Target>&)> rule, bool strided) {
  FamilyFacts f;
  f.name = name;
  // GridSample and RoiAlign read X and write Y through their views' strides (any layout).
  f.strided_operands = strided;
  f.choose_tactic = std::move(rule);
  return f;
}

const Registration grid_sample_registration{facts("grid_sample", grid_sample_tactic, true)};
const Registration roi_align_registration{facts("roi_align", roi_align_tactic, true)};
const Registration nms_registration{facts("nms", nms_tactic, false)};

}  // namespace
}  // namespace modelc::vision

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
  const ops::GridSample& s = plan_of<ops::GridSample>(k);
  k.tactic = GridStrideTactic{256, std::nullopt};
  k.note = fmt::format("one thread per output element: {} sampling, {} padding, align_corners {}", s.mode_name(),
                       s.padding_name(), s.align_corners ? 1 : 0);
}

void roi_align_tactic(Kernel& k, const std::vector<Target>&) {
  const ops::RoiAlign& r = plan_of<ops::RoiAlign>(k);
  k.tactic = GridStrideTactic{256, std::nullopt};
  k.note = fmt::format("one thread per output element: the {} of {} samples per bin", r.max_mode ? "max" : "average",
                       r.sampling_ratio > 0 ? fmt::format("{} x {}", r.sampling_ratio, r.sampling_ratio)
                                            : std::string("ceil(roi size / output size)"));
}

void nms_tactic(Kernel& k, const std::vector<Target>&) {
  const ops::Nms& s = plan_of<ops::Nms>(k);
  k.tactic = DirectTactic{256};
  k.workspace_bytes = nms_workspace_bytes(s);
  k.note = fmt::format("a block per (batch, class): at most {} greedy rounds over {} boxes; the output's static "
                       "bound {} rows ({} x {} x {}), -1 past the selected boxes",
                       s.max_per_class, s.boxes, s.bound(), s.batches, s.classes, s.max_per_class);
}

namespace {

FamilyFacts facts(const char* name, std::function<std::shared_ptr<const KernelPlan>(const Kernel&)> plan,
                  std::function<void(Kernel&, const std::vector<Target>&)> rule, bool strided) {
  FamilyFacts f;
  f.name = name;
  f.plan = std::move(plan);
  // GridSample and RoiAlign read X and write Y through their views' strides (any layout).
  f.strided_operands = strided;
  f.choose_tactic = std::move(rule);
  return f;
}

// The plans: the ops' parameters (ops/vision.h), read from the node once.
const FamilyFactsRegistration grid_sample_registration{facts(
    "grid_sample", [](const Kernel& k) { return make_plan("grid_sample", ops::grid_sample(node_to_plan(k))); },
    grid_sample_tactic, true)};
const FamilyFactsRegistration roi_align_registration{facts(
    "roi_align", [](const Kernel& k) { return make_plan("roi_align", ops::roi_align(node_to_plan(k))); },
    roi_align_tactic, true)};
const FamilyFactsRegistration nms_registration{
    facts("nms", [](const Kernel& k) { return make_plan("nms", ops::nms(node_to_plan(k))); }, nms_tactic, false)};

}  // namespace
}  // namespace modelc::vision

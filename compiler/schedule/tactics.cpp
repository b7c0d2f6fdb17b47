// compiler/schedule/tactics.cpp — the tactics stage: every kernel's family rule (FamilyFacts::
// choose_tactic), for every --arch target, and the cost model's estimate of the first target's.
#include "schedule/tactics.h"

#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "support/error.h"

namespace modelc {

void choose_tactic(Kernel& k, const std::vector<Target>& targets) {
  const FamilyFacts& f = k.facts();
  if (!f.choose_tactic) throw Error("internal: template family '" + f.name + "' has no tactic rule");
  try {
    f.choose_tactic(k, targets);
    k.estimate = estimate_kernel(k, targets.front());
  } catch (const Error& e) {
    if (!k.source.node || !e.where().node.empty()) throw;
    throw e.with_node(k.source.node->name(), k.source.node->op(), k.source.node->opset());
  }
}

void choose_tactics(Schedule& s, bool fp16_accumulate) {
  const std::vector<Target> targets = targets_for(s.archs, fp16_accumulate);
  for (Kernel& k : s.kernels) choose_tactic(k, targets);
}

}  // namespace modelc

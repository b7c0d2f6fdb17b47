// compiler/schedule/plan_kernels.cpp — the plan_kernels stage: each kernel's plan, by its family.
#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/tactics.h"

namespace modelc {

void plan_kernel(Kernel& k) {
  const FamilyFacts& f = family_facts(k.family);
  k.plan = f.plan ? f.plan(k) : nullptr;
}

bool plan_kernels(Schedule& s, const LowerOptions&) {
  bool planned = false;
  for (Kernel& k : s.kernels) {
    plan_kernel(k);
    planned = planned || k.plan != nullptr;
  }
  return planned;
}

}  // namespace modelc

#include "codegen/family.h"

#include <algorithm>

#include "support/error.h"

namespace modelc {

FamilyRegistry& FamilyRegistry::instance() {
  static FamilyRegistry r;
  return r;
}

void FamilyRegistry::add(KernelFamily f) {
  if (find(f.name)) throw Error("internal: template family '" + f.name + "' registered twice");
  families_.push_back(std::move(f));
}

const KernelFamily* FamilyRegistry::find(const std::string& name) const {
  for (const KernelFamily& f : families_) if (f.name == name) return &f;
  return nullptr;
}

std::vector<const KernelFamily*> FamilyRegistry::all() const {
  std::vector<const KernelFamily*> r;
  for (const KernelFamily& f : families_) r.push_back(&f);
  std::sort(r.begin(), r.end(), [](const KernelFamily* a, const KernelFamily* b) { return a->name < b->name; });
  return r;
}

}  // namespace modelc

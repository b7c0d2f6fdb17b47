// compiler/schedule/list_kernels.cpp — the list_kernels stage: the Schedule's kernels, one per node
// that runs one, in graph order, each with its family, its source node and values, and its views
// (schedule/views.h resolve: a buffer for every value a kernel touches).
//
// A node runs no kernel when its outputs are all constants (computed at compile time), when no
// output is used, when it is a view (find_views made its output a view of its input) but for the
// output copies claim_outputs added, or when every output is empty (nothing to compute). A node of
// the "none" kind (shape math) that is still here reads a model input's data: Error naming it. A
// family this build lacks is one Error listing every node that needs one.
#include <set>

#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

std::string family_of(const Node& n, const LowerOptions& o, bool output_copy) {
  const std::string f = output_copy ? "elementwise" : family_for(n);
  auto it = o.family_substitutes.find(f);
  return it == o.family_substitutes.end() ? f : it->second;
}

Kernel kernel_for(const Node& n, const FamilyFacts& family) {
  Kernel k;
  k.family = &family;
  k.op = {n.name(), n.op(), n.domain(), n.opset()};
  k.source.node = &n;
  k.source.inputs.assign(n.inputs().begin(), n.inputs().end());
  k.source.outputs.assign(n.outputs().begin(), n.outputs().end());
  k.nodes = n.covers().empty() ? std::vector<std::string>{n.name()} : n.covers();
  return k;
}

bool list_kernels(Schedule& s, const LowerOptions& o) {
  std::set<const Node*> copies;  // the Identity nodes claim_outputs added
  for (const Buffer& b : s.buffers) {
    if (b.copy) copies.insert(b.copy);
  }
  std::vector<const Node*> missing;  // nodes whose family is not built in
  std::set<std::string> missing_families;
  for (const auto& up : s.graph->nodes()) {
    const Node& n = *up;
    if (compile_time_node(n) || dead_node(n)) continue;
    const bool copy = copies.count(&n) != 0;
    if (is_view_node(n) && !copy) continue;
    const std::string family = family_of(n, o, copy);
    if (family.empty()) throw n.error("internal: the op table lists no kernel template for " + n.op());
    if (family == "none") {
      throw n.error("this op is only computed at compile time, but its inputs are not constant",
                    "its inputs must not depend on a model input's data: bind such an input with --bind NAME=FILE "
                    "(an .npy or .pb file), or fix the input shapes with --shape");
    }
    bool empty = true;  // every output has zero elements: nothing to compute
    for (const Value* v : n.outputs()) empty = empty && (!v || v->numel() == 0);
    if (empty) continue;
    const FamilyFacts* facts = find_family(family);
    if (!facts) {
      missing.push_back(&n);
      missing_families.insert(family);
      continue;
    }
    s.kernels.push_back(kernel_for(n, *facts));
    s.kernels.back().output_copy = copy;
  }
  if (!missing.empty()) {
    std::string families, list;
    for (const std::string& f : missing_families) families += (families.empty() ? "'" : ", '") + f + "'";
    for (std::size_t i = 0; i < missing.size() && i < 8; ++i) {
      const Node& n = *missing[i];
      list += std::string(i ? ", " : "") + "'" + n.name() + "' (" + n.op() + ": " + family_of(n, o, copies.count(&n) != 0) +
              ")";
    }
    if (missing.size() > 8) list += " and " + std::to_string(missing.size() - 8) + " more";
    throw missing[0]->error("no template famil" + std::string(missing_families.size() > 1 ? "ies " : "y ") + families +
                                ": " + std::to_string(missing.size()) + " node" + (missing.size() > 1 ? "s" : "") +
                                " need" + (missing.size() > 1 ? "" : "s") + " one: " + list,
                            "this build of modelc lacks the family (schedule/families.cpp, codegen/families/); "
                            "`modelc inspect` lists the model's ops");
  }
  resolve(s);
  return true;
}

}  // namespace modelc

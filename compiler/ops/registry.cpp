#include "ops/registry.h"

#include <algorithm>

namespace modelc::ops {

OpRegistry& OpRegistry::instance() {
  static OpRegistry r;
  return r;
}

void OpRegistry::add(OpDef def) { defs_.push_back(std::move(def)); }

void OpRegistry::remove(const std::string& op, const std::string& domain) {
  defs_.erase(std::remove_if(defs_.begin(), defs_.end(), [&](const OpDef& d) { return d.name == op && d.domain == domain; }),
              defs_.end());
}

const OpDef* OpRegistry::find(const std::string& op, int opset, const std::string& domain) const {
  const OpDef* best = nullptr;
  for (const OpDef& d : defs_) {
    if (d.name == op && d.domain == domain && d.since <= opset && (!best || d.since > best->since)) best = &d;
  }
  return best;
}

bool OpRegistry::knows(const std::string& op, const std::string& domain) const {
  return std::any_of(defs_.begin(), defs_.end(), [&](const OpDef& d) { return d.name == op && d.domain == domain; });
}

std::vector<const OpDef*> OpRegistry::all(const std::string& domain) const {
  std::vector<const OpDef*> r;
  for (const OpDef& d : defs_) {
    if (d.domain == domain) r.push_back(&d);
  }
  std::sort(r.begin(), r.end(), [](const OpDef* a, const OpDef* b) {
    return a->name != b->name ? a->name < b->name : a->since < b->since;
  });
  return r;
}

const OpDef& lookup(const Node& n) {
  const bool internal = n.domain() == kModelcDomain && !n.covers().empty();
  if (internal) {
    if (const OpDef* d = OpRegistry::instance().find(n.op(), n.opset(), kModelcDomain)) return *d;
    throw n.error("internal op " + n.op() + " of the '" + std::string(kModelcDomain) + "' domain is not registered");
  }
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    if (n.domain() != kModelcDomain) {  // a plugin's op (--plugin DIR)
      if (const OpDef* d = OpRegistry::instance().find(n.op(), n.opset(), n.domain())) return *d;
    }
    throw n.error("operator domain '" + n.domain() + "' is not supported (only the default ONNX domain is)",
                  "re-export the model without custom or contrib operators, or implement " + n.domain() + "." +
                      n.op() + " as a plugin (--plugin DIR, docs/PLUGINS.md)");
  }
  const OpRegistry& r = OpRegistry::instance();
  if (const OpDef* d = r.find(n.op(), n.opset())) return *d;
  if (r.knows(n.op())) {
    throw n.error("no form of " + n.op() + " is supported at opset " + std::to_string(n.opset()),
                  "re-export the model at a newer opset");
  }
  throw n.error("operator " + n.op() + " is not supported",
                "see docs/operators.md for the supported operators; re-export the model without it, or implement "
                "it as a plugin (--plugin DIR, docs/PLUGINS.md)");
}

void validate_node(const Node& n, const OpDef& def) {
  const int present_inputs = n.num_inputs();
  if (present_inputs < def.min_inputs || (def.max_inputs >= 0 && present_inputs > def.max_inputs)) {
    throw n.error("has " + std::to_string(present_inputs) + " inputs, expected " +
                  std::to_string(def.min_inputs) +
                  (def.max_inputs < 0 ? " or more"
                                      : (def.max_inputs == def.min_inputs ? "" : " to " + std::to_string(def.max_inputs))));
  }
  for (int i = 0; i < def.min_inputs; ++i) {
    if (!n.has_input(i)) throw n.error("required input " + std::to_string(i) + " is missing");
  }
  if (n.num_outputs() < def.min_outputs || (def.max_outputs >= 0 && n.num_outputs() > def.max_outputs)) {
    throw n.error("has " + std::to_string(n.num_outputs()) + " outputs, expected " +
                  std::to_string(def.min_outputs) +
                  (def.max_outputs < 0 ? " or more" : " to " + std::to_string(def.max_outputs)));
  }
  for (const auto& [name, a] : n.attrs()) {
    if (std::find(def.attributes.begin(), def.attributes.end(), name) == def.attributes.end()) {
      throw n.error("attribute '" + name + "' is not supported by " + def.name + " (opset " +
                        std::to_string(n.opset()) + ")",
                    "remove the attribute or re-export the model");
    }
  }
  if (def.validate) {
    try {
      def.validate(n);
    } catch (const Error& e) {
      throw e.with_node(n.name(), n.op(), n.opset());
    }
  }
}

}  // namespace modelc::ops

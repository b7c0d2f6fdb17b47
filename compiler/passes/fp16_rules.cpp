// compiler/passes/fp16_rules.cpp — see fp16_rules.h.
#include "passes/fp16_rules.h"

#include <algorithm>
#include <memory>

#include "support/error.h"

namespace modelc::fp16_rules {

bool pinned(const Node& n, const std::set<std::string>& keep) {
  if (keep.count(n.name())) return true;
  return std::any_of(n.covers().begin(), n.covers().end(), [&](const std::string& c) { return keep.count(c) != 0; });
}

std::vector<bool> converted_inputs(const Node& n, const ops::OpDef& def) {
  std::vector<bool> r(static_cast<std::size_t>(n.num_inputs()), false);
  for (int i = 0; i < n.num_inputs(); ++i) {
    const bool param = std::find(def.const_inputs.begin(), def.const_inputs.end(), i) != def.const_inputs.end();
    r[static_cast<std::size_t>(i)] = n.has_input(i) && n.input(i).dtype() == DType::float32 && !param;
  }
  return r;
}

bool accepts(const Node& n, const ops::OpDef& def, const std::vector<bool>& conv, DType type, std::string& why) {
  std::vector<std::unique_ptr<Value>> values;
  Node copy(n.op(), n.name(), n.opset());
  copy.set_domain(n.domain());
  copy.set_covers(n.covers());
  for (const auto& [k, a] : n.attrs()) copy.set_attr(k, a);
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) {
      copy.add_input(nullptr);
      continue;
    }
    const Value& src = n.input(i);
    auto v = std::make_unique<Value>(src.name());
    if (conv[static_cast<std::size_t>(i)]) {
      // Small constants keep their data (shape rules may read them: Clip's bounds).
      if (src.is_constant() && src.numel() <= 64) {
        v->set_constant(src.constant().cast(type));
      } else {
        v->set_type(type, src.shape());
      }
    } else if (src.is_constant()) {
      v->set_constant(src.constant());
    } else {
      v->set_type(src.dtype(), src.shape());
    }
    copy.add_input(v.get());
    values.push_back(std::move(v));
  }
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (!n.has_output(i)) {
      copy.add_output(nullptr);
      continue;
    }
    auto v = std::make_unique<Value>(n.output(i).name());
    copy.add_output(v.get());
    values.push_back(std::move(v));
  }
  try {
    ops::validate_node(copy, def);
    def.infer(copy);
    for (int i = 0; i < n.num_outputs(); ++i) {
      if (n.has_output(i) && copy.output(i).shape() != n.output(i).shape()) {
        why = "its output " + std::to_string(i) + " would change shape in " + dtype_name(type);
        return false;
      }
    }
  } catch (const Error& e) {
    why = e.message();
    return false;
  }
  return true;
}

}  // namespace modelc::fp16_rules

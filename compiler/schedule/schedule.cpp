// compiler/schedule/schedule.cpp — see schedule.h; and begin_schedule (schedule/stages.h).
#include "schedule/schedule.h"

#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/target.h"

namespace modelc {

const char* space_name(Space s) {
  switch (s) {
    case Space::input: return "input";
    case Space::output: return "output";
    case Space::arena: return "arena";
    case Space::weights: return "weights";
  }
  return "?";
}

const char* engine_name(Engine e) {
  switch (e) {
    case Engine::none: return "";
    case Engine::simt: return "simt";
    case Engine::tensor_core: return "tensor_core";
    case Engine::winograd: return "winograd";
    case Engine::gemv: return "gemv";
    case Engine::hopper: return "hopper";
    case Engine::depthwise_tiled: return "depthwise_tiled";
    case Engine::small_m: return "small_m";
  }
  return "";
}

const Node& node_to_plan(const Kernel& k) {
  if (!k.source.node) throw k.error("internal: the " + k.family_name() + " kernel has no node to plan from");
  return *k.source.node;
}

const std::string& Kernel::family_name() const {
  static const std::string unknown = "?";
  return family ? family->name : unknown;
}

const FamilyFacts& Kernel::facts() const {
  if (!family) throw error("internal: the kernel has no family (list_kernels sets it)");
  return *family;
}

Error Kernel::error(const std::string& message, const std::string& hint) const {
  if (!op.empty()) return Error(Error::Where{op.name, op.type, op.opset, {}}, message, hint);
  return Error("kernel " + id + " (" + family_name() + "): " + message, hint);
}

bool TensorView::dense() const { return strides == strides_of(shape); }

TensorView TensorView::reshaped(const Shape& s) const {
  if (!dense()) throw Error("internal: reshaping a strided view of '" + value + "'");
  if (num_elements(s) != numel()) {
    throw Error("internal: reshaping '" + value + "' from " + shape_str(shape) + " to " + shape_str(s));
  }
  TensorView v = *this;
  v.shape = s;
  v.strides = strides_of(s);
  return v;
}

Schedule begin_schedule(Graph& g, const LowerOptions& o) {
  Schedule s;
  s.graph = &g;
  s.name = o.name;
  s.archs = o.archs;
  if (s.archs.empty()) throw Error("internal: lowering without an --arch");
  for (const std::string& a : o.archs) arch_number(a);
  for (const Value* v : g.inputs()) s.inputs.push_back({v->name(), v->dtype(), v->shape()});
  for (const Value* v : g.outputs()) s.outputs.push_back({v->name(), v->dtype(), v->shape()});
  if (s.outputs.empty()) throw Error("the model has no outputs: nothing to compile");
  return s;
}

}  // namespace modelc

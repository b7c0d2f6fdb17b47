#include "schedule/schedule.h"

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

Error Kernel::error(const std::string& message, const std::string& hint) const {
  if (node) return node->error(message, hint);
  return Error("kernel " + id + " (" + family + "): " + message, hint);
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

}  // namespace modelc

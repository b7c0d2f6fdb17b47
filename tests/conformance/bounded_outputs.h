// tests/conformance/bounded_outputs.h — what the node-test runners (conformance, codegen_conformance)
// do with an output that has a static bound (OpDef::bounded_outputs: NonMaxSuppression's
// selected_indices): ONNX's expected result holds only the computed entries; modelc's holds the
// bound, the entries past the count filled. The expected tensor is padded the same way, so the
// comparison checks both the entries and the padding.
#pragma once

#include <cstring>
#include <string>

#include "ir/graph.h"
#include "ops/registry.h"

namespace modelc::conformance {

/// \brief `expected` for graph output `name` of `g`, padded along the bounded dim to the output's
/// static shape with the op's fill, when the output's producer declares a bound there and
/// `expected` fits inside it (same rank, the other dims equal, not longer along the dim); otherwise
/// `expected` unchanged (the comparison then reports the difference).
inline Tensor padded_to_bound(const Graph& g, const std::string& name, const Tensor& expected) {
  const Value* v = g.find_value(name);
  if (!v || !v->producer() || !v->is_graph_output()) return expected;
  const Node& n = *v->producer();
  const ops::OpDef& def = ops::lookup(n);
  for (const ops::OpDef::BoundedOutput& b : def.bounded_outputs) {
    if (!n.has_output(b.output) || &n.output(b.output) != v) continue;
    const Shape& want = v->shape();
    const Shape& have = expected.shape();
    if (want.size() != have.size() || expected.dtype() != v->dtype()) return expected;
    const auto dim = static_cast<std::size_t>(b.dim);
    for (std::size_t d = 0; d < want.size(); ++d) {
      if (d == dim ? have[d] > want[d] : have[d] != want[d]) return expected;
    }
    Tensor out = Tensor::from_i64(v->dtype(), want, std::vector<int64_t>(static_cast<std::size_t>(num_elements(want)), b.fill));
    const std::size_t e = dtype_size(v->dtype());
    uint8_t* dst = out.mutable_raw();
    const uint8_t* src = expected.raw();
    // Element i of `have` (C order) sits at the same coordinates in `want`.
    for (int64_t i = 0; i < expected.numel(); ++i) {
      int64_t rest = i, at = 0, scale = 1;
      for (std::size_t d = want.size(); d-- > 0;) {
        const int64_t c = rest % have[d];
        rest /= have[d];
        at += c * scale;
        scale *= want[d];
      }
      std::memcpy(dst + static_cast<std::size_t>(at) * e, src + static_cast<std::size_t>(i) * e, e);
    }
    return out;
  }
  return expected;
}

}  // namespace modelc::conformance

// compiler/schedule/claim_outputs.cpp — the claim_outputs stage: each model output's buffer is the
// caller's.
//
// A buffer can be one output's only, and never a model input's or a constant's: the first output
// whose root (schedule/views.h ValueIndex::root: through the views find_views made) is a value a
// kernel computes takes that value's buffer (Space::output, its index); every other output, and
// one that is a model input, a constant, or a view of a buffer another output took, gets a copy: an
// Identity node added to the graph (list_kernels runs it on the "elementwise" family), whose new
// output value is that output's buffer (Buffer::copy names the node).
#include <set>

#include "schedule/stages.h"
#include "schedule/views.h"

namespace modelc {

bool claim_outputs(Schedule& s, const LowerOptions&) {
  Graph& g = *s.graph;
  ValueIndex index(s);
  std::set<const Value*> claimed;
  bool copied = false;
  for (int j = 0; j < static_cast<int>(g.outputs().size()); ++j) {
    Value* v = g.outputs()[j];
    const Value* r = index.root(v);
    if (!r->is_graph_input() && !r->is_constant() && !claimed.count(r)) {
      claimed.insert(r);
      int b = index.buffer(r);
      if (b < 0) {
        b = add_value_buffer(s, r);
        index.note(b);
      }
      s.buffers[static_cast<std::size_t>(b)].space = Space::output;
      s.buffers[static_cast<std::size_t>(b)].index = j;
      s.buffers[static_cast<std::size_t>(b)].offset = 0;
      continue;
    }
    Value* c = g.add_value(v->name() + "_copy");
    c->set_type(v->dtype(), v->shape());
    Node* n = g.add_node("Identity", v->name() + "_copy", {v}, {c});
    g.set_output(j, c);
    const int b = add_value_buffer(s, c);
    index.note(b);
    Buffer& buf = s.buffers[static_cast<std::size_t>(b)];
    buf.space = Space::output;
    buf.index = j;
    buf.offset = 0;
    buf.copy = n;
    copied = true;
  }
  return copied;
}

}  // namespace modelc

// compiler/passes/fold_pads.cpp — Pads that need no kernel of their own.
//
// A Pad whose pads are all zero passes its input through: removed (remove_passthrough). A Pad in
// constant mode with fill 0 that pads only the spatial dims (from 2 on), by non-negative amounts,
// folds into the window op that alone reads it, when that op pads its X with zeros itself:
//   Conv                                       (always; auto_pad NOTSET)
//   AveragePool with count_include_pad, or with no pads of its own (it then counts the padded
//   zeros, as it did reading them: count_include_pad becomes 1); ceil_mode 0, auto_pad NOTSET
// The op's 'pads' grow by the Pad's (begin and end per spatial dim) and it reads the Pad's input.
// Exporters write such Pads for a padding the framework's op has and ONNX's does not express
// directly (torch's AvgPool2d(padding=1) with count_include_pad: inception_v3, densenet121).
//
// Needs: constants folded (fold_constants): the pads, axes and fill are constants.
#include "ops/pad.h"
#include "ops/registry.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// The Pad's inputs after the data (pads, constant_value, axes) are all constants.
bool constant_operands(const Node& n) {
  for (int i = 1; i < n.num_inputs(); ++i) {
    if (n.has_input(i) && !n.input(i).is_constant()) return false;
  }
  return true;
}

bool zero_fill(const Node& n) {
  const Tensor* value = n.num_inputs() > 2 && n.has_input(2) ? &n.input(2).constant() : nullptr;
  const std::vector<double> v = ops::pad_fill(n, n.input(0).dtype(), value).to_f64();
  return v.size() == 1 && v[0] == 0.0;
}

// The reader of the Pad's output that can take its pads: the op above, reading it as X, its only
// reader.
Node* zero_padding_reader(const Value& y) {
  if (y.is_graph_output() || y.users().size() != 1) return nullptr;
  Node* r = y.users()[0];
  if (!default_domain(*r) || !r->has_input(0) || &r->input(0) != &y) return nullptr;
  for (int i = 1; i < r->num_inputs(); ++i) {
    if (r->input_ptr(i) == &y) return nullptr;
  }
  if (r->attr_string("auto_pad", "NOTSET") != "NOTSET") return nullptr;
  if (r->op() == "Conv") return r;
  if (r->op() != "AveragePool" || r->attr_int("ceil_mode", 0) != 0) return nullptr;
  if (r->attr_int("count_include_pad", 0) != 0) return r;
  for (int64_t p : r->attr_ints("pads")) {
    if (p != 0) return nullptr;
  }
  return r;
}

// Folds Pad n (params p) into its reader, which then reads the Pad's input (the Pad is left
// unused); false when the Pad is not of that kind.
bool fold_into_reader(Node* n, const ops::PadParams& p) {
  const Value& x = n->input(0);
  const std::size_t rank = p.begin.size();
  if (p.mode != "constant" || rank < 3 || !zero_fill(*n)) return false;
  for (std::size_t d = 0; d < rank; ++d) {
    if (p.begin[d] < 0 || p.end[d] < 0 || (d < 2 && (p.begin[d] != 0 || p.end[d] != 0))) return false;
  }
  Node* r = zero_padding_reader(n->output(0));
  if (!r) return false;
  const std::size_t spatial = rank - 2;
  std::vector<int64_t> pads = r->attr_ints("pads");
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (pads.size() != 2 * spatial) return false;  // the op's own validation names that
  for (std::size_t i = 0; i < spatial; ++i) {
    pads[i] += p.begin[2 + i];
    pads[spatial + i] += p.end[2 + i];
  }
  const Shape y = r->output(0).shape();
  r->set_attr_ints("pads", pads);
  if (r->op() == "AveragePool") r->set_attr_int("count_include_pad", 1);
  r->set_input(0, const_cast<Value*>(&x));
  const ops::OpDef& def = ops::lookup(*r);
  ops::validate_node(*r, def);
  def.infer(*r);
  if (r->output(0).shape() != y) throw r->error("internal: folding Pad '" + n->name() + "' changed the output shape");
  return true;
}

}  // namespace

bool fold_pads(Graph& g, const PassOptions&) {
  bool changed = false;
  for (Node* n : g.nodes_of("Pad")) {
    if (!default_domain(*n) || !n->has_input(0) || !constant_operands(*n)) continue;
    const ops::PadParams p = ops::pad_params(*n, n->input(0).shape());
    bool zero = true;
    for (std::size_t d = 0; d < p.begin.size(); ++d) zero = zero && p.begin[d] == 0 && p.end[d] == 0;
    changed = (zero ? remove_passthrough(g, n) : fold_into_reader(n, p)) || changed;
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace modelc

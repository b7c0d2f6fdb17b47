// compiler/passes/fold_cast_pairs.cpp — FP32 islands of FP16 (BF16) models: a Cast pair around an
// op that computes in FP32 on 16-bit storage anyway folds into the op.
//
// FP16 converters leave FP32 islands wrapped in Casts: x16 -> Cast(float) -> Resize -> Cast(float16)
// -> y16. When the op's policy is Precision::fp32_compute (its kernel reads FP16, computes in FP32
// and rounds once when it stores, as the Cast after it does), the op reads x16 itself and writes y16:
// the same values with two kernels fewer. Folded when every float32 input that is not a parameter
// is a Cast from one 16-bit float type (float16, or bfloat16: a BF16 model's islands alike) and
// every float32 output is read only by Casts to that type (not a graph output itself); the op must
// take the type there (fp16_rules::accepts) and not be pinned by --keep-fp32. The Casts other
// readers still need stay.
//
// Needs: the precision pass's Casts in place (precision; with --fp16 it makes most such ops FP16
// itself). Before fuse_epilogue: a Cast stops a fusion, the folded op may fuse.
#include "ops/registry.h"
#include "passes/fp16_rules.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool is_cast(const Node* n, DType from, DType to) {
  return n && n->op() == "Cast" && default_domain(*n) && n->input(0).dtype() == from && n->output(0).dtype() == to;
}

// The Casts to `half` that read output v, all of its readers; empty when it has another reader,
// or when more than one of them writes a graph output (each output keeps its own name).
std::vector<Node*> narrowing_readers(const Value& v, DType half) {
  std::vector<Node*> r;
  if (v.is_graph_output() || v.users().empty()) return r;
  int graph_outputs = 0;
  for (Node* u : v.users()) {
    if (!is_cast(u, DType::float32, half)) return {};
    graph_outputs += u->output(0).is_graph_output();
    r.push_back(u);
  }
  return graph_outputs > 1 ? std::vector<Node*>{} : r;
}

// The island's 16-bit type (float16 or bfloat16) when n folds, else undefined.
DType foldable(const Node& n, const ops::OpDef& def, const std::vector<bool>& conv, const PassOptions& o) {
  if (!default_domain(n) || def.precision != ops::Precision::fp32_compute) return DType::undefined;
  const std::set<std::string> keep(o.keep_fp32.begin(), o.keep_fp32.end());
  if (fp16_rules::pinned(n, keep)) return DType::undefined;
  DType half = DType::undefined;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!conv[static_cast<std::size_t>(i)]) continue;
    const Node* c = n.input(i).producer();
    if (half == DType::undefined && c && c->has_input(0)) half = c->input(0).dtype();
    if ((half != DType::float16 && half != DType::bfloat16) || !is_cast(c, half, DType::float32)) return DType::undefined;
  }
  for (const Value* v : n.outputs()) {
    if (v && v->dtype() == DType::float32 && narrowing_readers(*v, half).empty()) return DType::undefined;
  }
  std::string why;
  return half != DType::undefined && fp16_rules::accepts(n, def, conv, half, why) ? half : DType::undefined;
}

}  // namespace

bool fold_cast_pairs(Graph& g, const PassOptions& o) {
  // The candidates first: folding removes Casts, never one of these.
  std::vector<Node*> nodes;
  for (const auto& up : g.nodes()) {
    if (ops::lookup(*up).precision == ops::Precision::fp32_compute) nodes.push_back(up.get());
  }
  bool changed = false;
  for (Node* n : nodes) {
    const ops::OpDef& def = ops::lookup(*n);
    const std::vector<bool> conv = fp16_rules::converted_inputs(*n, def);
    const DType half = foldable(*n, def, conv, o);
    if (half == DType::undefined) continue;
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (conv[static_cast<std::size_t>(i)]) n->set_input(i, &n->input(i).producer()->input(0));
    }
    for (int k = 0; k < n->num_outputs(); ++k) {
      if (!n->has_output(k) || n->output(k).dtype() != DType::float32) continue;
      Value* out = &n->output(k);
      // The Casts' readers read the op's output, now half; a Cast writing a graph output hands
      // that value to the op (the output keeps its name).
      const std::vector<Node*> casts = narrowing_readers(*out, half);
      Value* target = out;
      for (Node* c : casts) {
        if (c->output(0).is_graph_output()) target = &c->output(0);
      }
      out->set_dtype(half);
      for (Node* c : casts) {
        Value* y = &c->output(0);
        if (y != target) g.replace_all_uses(y, target);
        g.remove_node(c);
      }
      if (target != out) n->set_output(k, target);
    }
    ops::validate_node(*n, def);
    def.infer(*n);
    changed = true;
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace modelc

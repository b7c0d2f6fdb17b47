// compiler/frontend/batch.cpp — the batch rules of frontend/batch.h.
#include "frontend/batch.h"

#include <map>

#include "support/error.h"

namespace modelc {

const char* const kDynamicBatchHint =
    "the graph hard-codes its batch; re-export it with a dynamic batch (torch.onnx.export(..., "
    "dynamic_axes={'input': {0: 'batch'}, 'output': {0: 'batch'}})) and compile it with --batch";

namespace {

std::string shape_text(const Shape& s) { return "[" + (s.empty() ? std::string() : shape_str(s)) + "]"; }

// "value 'v' (output of node 'n', Op)" or "input 'x'".
std::string value_text(const Value& v) {
  if (v.is_graph_input()) return "input '" + v.name() + "'";
  if (v.producer()) return "'" + v.name() + "' (output of node '" + v.producer()->name() + "', " + v.producer()->op() + ")";
  return "'" + v.name() + "'";
}

// Where v holds the batch: its dim whose extent differs between the two graphs, or -1.
int batch_dim(const Value& va, const Value& vb, int64_t batch_a, int64_t batch_b, const std::string& what) {
  const Shape& sa = va.shape();
  const Shape& sb = vb.shape();
  const std::string shapes = shape_text(sa) + " at batch " + std::to_string(batch_a) + " and " + shape_text(sb) +
                             " at batch " + std::to_string(batch_b);
  auto fail = [&](const std::string& why) -> Error {
    const std::string message = what + ": " + value_text(va) + " is " + shapes + ": " + why;
    return va.producer() ? va.producer()->error(message, kDynamicBatchHint) : Error(message, kDynamicBatchHint);
  };
  if (sa.size() != sb.size()) throw fail("its rank depends on the batch");
  int d = -1;
  for (std::size_t i = 0; i < sa.size(); ++i) {
    if (sa[i] == sb[i]) continue;
    if (d >= 0) throw fail("the batch changes more than one of its dims");
    d = static_cast<int>(i);
  }
  if (d < 0) return -1;
  // The extent is the batch times a constant: sa[d] / batch_a == sb[d] / batch_b.
  if (sa[d] * batch_b != sb[d] * batch_a || sa[d] % batch_a != 0) {
    throw fail("dim " + std::to_string(d) + " is not the batch times a constant (a constant shape, a Slice, a Pad "
               "or a Concat along the batch)");
  }
  return d;
}

// The ops whose `axis` attribute starts a range of dims they work over (the others: that one dim).
bool works_from_axis_on(const Node& n) {
  if (n.op() == "LayerNormalization") return true;
  const bool softmax_family = n.op() == "Softmax" || n.op() == "LogSoftmax" || n.op() == "Hardmax";
  return softmax_family && n.opset() < 13;  // coerced to 2-D at axis
}

// The axis a node works along: its `axis` attribute, or the ONNX default of its op where it has
// none (Softmax -1 from opset 13, else 1; Gather, Split, ArgMax 0; ...); false when it has neither.
bool axis_of(const Node& n, int64_t* axis) {
  if (const Attribute* a = n.attr("axis")) {
    if (a->kind != Attribute::Kind::i) return false;
    *axis = a->i;
    return true;
  }
  const std::string& op = n.op();
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") {
    *axis = n.opset() < 13 ? 1 : -1;
  } else if (op == "LayerNormalization" || op == "TopK" || op == "LpNormalization") {
    *axis = -1;
  } else if (op == "Gather" || op == "GatherElements" || op == "Split" || op == "ArgMax" || op == "ArgMin" ||
             op == "ScatterElements") {
    *axis = 0;
  } else {
    return false;
  }
  return true;
}

}  // namespace

BatchLayout check_batch(const Graph& a, int64_t batch_a, const Graph& b, int64_t batch_b, const std::string& what) {
  if (batch_a <= 0 || batch_b <= 0 || batch_a == batch_b) {
    throw Error("internal: check_batch needs two different positive batches, got " + std::to_string(batch_a) + " and " +
                std::to_string(batch_b));
  }
  // Where each value of `a` holds the batch (values are matched by name: both graphs are imports of
  // one model).
  std::map<const Value*, int> dim;
  for (const Value* va : a.values()) {
    const Value* vb = b.find_value(va->name());
    if (!vb || !va->has_type() || !vb->has_type()) continue;
    dim[va] = batch_dim(*va, *vb, batch_a, batch_b, what);
  }
  auto dim_of = [&](const Value* v) {
    auto it = v ? dim.find(v) : dim.end();
    return it == dim.end() ? -1 : it->second;
  };

  for (const auto& np : a.nodes()) {
    const Node& n = *np;
    const Value* batched_input = nullptr;
    for (const Value* in : n.inputs()) {
      if (dim_of(in) >= 0) {
        batched_input = in;
        break;
      }
    }
    if (!batched_input) continue;
    const std::string shapes_note = "(" + shape_text(batched_input->shape()) + " at batch " + std::to_string(batch_a) + ")";

    // A node that reads the batch passes it on, unless it only computes constants (Shape, Size).
    bool passes_on = false, all_constant = true;
    for (const Value* out : n.outputs()) {
      if (!out) continue;
      passes_on = passes_on || dim_of(out) >= 0;
      all_constant = all_constant && out->is_constant();
    }
    if (!passes_on && !all_constant) {
      throw n.error(what + ": it reads " + value_text(*batched_input) + ", which holds the batch in dim " +
                        std::to_string(dim_of(batched_input)) + " " + shapes_note +
                        ", and none of its outputs does: it would combine the items of a batch",
                    kDynamicBatchHint);
    }

    // Nor does it work along the batch's dim.
    int64_t axis = 0;
    if (!axis_of(n, &axis) || n.op() == "Flatten" || !n.has_input(0)) continue;
    const int64_t rank = n.input(0).rank();
    const int64_t ax = axis < 0 ? axis + rank : axis;
    for (const Value* in : n.inputs()) {
      const int d = dim_of(in);
      if (d < 0 || in->rank() != rank) continue;
      const bool along = works_from_axis_on(n) ? d >= ax : d == ax;
      if (!along) continue;
      throw n.error(what + ": it works along axis " + std::to_string(axis) +
                        (works_from_axis_on(n) ? " and the dims after it" : "") + " of " + value_text(*in) +
                        ", which holds the batch in dim " + std::to_string(d) + " (" + shape_text(in->shape()) +
                        " at batch " + std::to_string(batch_a) + "), so it would combine the items of a batch",
                    kDynamicBatchHint);
    }
  }

  BatchLayout layout;
  for (const Value* in : a.inputs()) layout.inputs.push_back(dim_of(in));
  for (const Value* out : a.outputs()) layout.outputs.push_back(dim_of(out));
  return layout;
}

}  // namespace modelc

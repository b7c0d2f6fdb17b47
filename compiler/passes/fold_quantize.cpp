// compiler/passes/fold_quantize.cpp — INT8 storage between INT8 kernels: the QuantizeLinear nodes
// that the INT8 precision pass and Q/DQ models put before the INT8 products move into the kernels
// around them, so activations travel as INT8 and no kernel quantizes on its own. Repeated until
// nothing changes:
//
//   1. Q(DQ(q)) with the same per-tensor scale, zero point and type is q (exact: |q - z| <= 255, the
//      float32 round trip cannot move it by half a step); a Cast float32 -> float16 between them too
//      (2^-11 relative: still less than half a step).
//   2. A QConv / QMatMul with a real-valued output y whose readers are all QuantizeLinear with one
//      per-tensor scale, zero point and 8-bit type writes that quantized value itself (its 'to',
//      y_scale, y_zero_point: the requantizing epilogue), and the QuantizeLinear nodes go. With
//      --int8, readers that take y as an INT8 product's residual are allowed too: they then read the
//      quantized y with residual_scale (a precision choice of the calibrated program, which run-
//      reference --int8 simulates exactly like this).
//   3. A MaxPool whose readers are all such QuantizeLinear nodes runs on the quantized input instead
//      (max commutes with a monotone quantization: the same values), so 2. applies to its producer.
//
// Needs: the epilogues fused (fuse_epilogue: a product's activation and residual are in it before its
// output is quantized). Leaves: the graph computing what it computed (1, 3 exactly; 2 exactly
// without --int8).
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "ops/quantize.h"
#include "ops/registry.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }
bool is(const Node* n, const char* op) { return n && default_domain(*n) && n->op() == op; }
bool is_int8_product(const Node* n) {
  return n && n->domain() == ops::kModelcDomain && (n->op() == "QConv" || n->op() == "QMatMul");
}

/// A QuantizeLinear's per-tensor parameters (constant scale and zero point), its type.
struct QParams {
  float scale = 0;
  int64_t zero_point = 0;
  DType type = DType::undefined;
  bool operator==(const QParams& o) const {
    return std::memcmp(&scale, &o.scale, sizeof scale) == 0 && zero_point == o.zero_point && type == o.type;
  }
};

std::optional<QParams> qparams(const Node& q) {
  if (!q.has_output(0)) return std::nullopt;
  const std::optional<ops::QuantScale> s = ops::constant_quant_scale(q);
  if (!s || !(s->scale > 0)) return std::nullopt;
  QParams p;
  p.scale = static_cast<float>(s->scale);
  p.zero_point = s->zero_point;
  p.type = q.op() == "QuantizeLinear" ? q.output(0).dtype() : q.input(0).dtype();
  if (!ops::is_int8_type(p.type)) return std::nullopt;
  return p;
}

Attribute float_attr(double v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = static_cast<float>(v);
  return a;
}

void revalidate(Node& n) {
  const ops::OpDef& def = ops::lookup(n);
  ops::validate_node(n, def);
  def.infer(n);
}

class Folder {
 public:
  Folder(Graph& g, const PassOptions& o) : g_(g), o_(o) {}

  bool run() {
    bool changed = false;
    for (bool again = true; again;) {
      again = false;
      std::vector<Node*> nodes;
      for (const auto& up : g_.nodes()) nodes.push_back(up.get());
      for (Node* n : nodes) {
        if (removed_.count(n)) continue;
        if (is(n, "QuantizeLinear")) {
          again = quantize_of_dequantize(n) || again;
        } else if (is(n, "MaxPool")) {
          again = quantized_maxpool(n) || again;
        } else if (is_int8_product(n)) {
          again = quantized_output(n) || again;
        }
      }
      if (again) {
        changed = true;
        removed_.clear();
        g_.remove_dead();
      }
    }
    return changed;
  }

 private:
  void remove(Node* n) {
    removed_.insert(n);
    g_.remove_node(n);
  }

  /// The QuantizeLinear readers of v, when every reader is one with the same parameters (and, with
  /// `residuals`, the INT8 products reading v as their residual only): their parameters.
  std::optional<QParams> quantized_readers(const Value& v, bool residuals, std::vector<Node*>* qs,
                                           std::vector<Node*>* res) const {
    if (v.is_graph_output() || v.users().empty()) return std::nullopt;
    std::optional<QParams> p;
    for (Node* u : v.users()) {
      if (is(u, "QuantizeLinear") && &u->input(0) == &v) {
        const std::optional<QParams> up = qparams(*u);
        if (!up || (p && !(*p == *up)) || u->output(0).is_graph_output()) return std::nullopt;
        p = up;
        if (std::find(qs->begin(), qs->end(), u) == qs->end()) qs->push_back(u);
        continue;
      }
      if (residuals && is_int8_product(u) && u->input_ptr(ops::kQResidualInput) == &v) {
        bool elsewhere = false;
        for (int i = 0; i < u->num_inputs(); ++i) elsewhere = elsewhere || (i != ops::kQResidualInput && u->input_ptr(i) == &v);
        if (elsewhere) return std::nullopt;
        if (std::find(res->begin(), res->end(), u) == res->end()) res->push_back(u);
        continue;
      }
      return std::nullopt;
    }
    return p;
  }

  // 1. Q(DQ(q)) = q (through a Cast float32 -> float16 too).
  bool quantize_of_dequantize(Node* q) {
    Node* p = q->input(0).producer();
    if (is(p, "Cast") && p->input(0).dtype() == DType::float32 && p->output(0).dtype() == DType::float16) {
      p = p->input(0).producer();
    }
    if (!is(p, "DequantizeLinear")) return false;
    const std::optional<QParams> a = qparams(*q), b = qparams(*p);
    if (!a || !b || !(*a == *b) || q->output(0).is_graph_output()) return false;
    Value* out = &q->output(0);
    Value* src = &p->input(0);
    if (src->shape() != out->shape()) return false;
    g_.replace_all_uses(out, src);
    remove(q);
    return true;
  }

  // 3. MaxPool(y) read only by Q(·, s, z) -> MaxPool(Q(y, s, z)).
  bool quantized_maxpool(Node* m) {
    if (m->num_outputs() > 1 && m->has_output(1)) return false;  // Indices
    Value& y = m->input(0);
    if (!is_float(y.dtype())) return false;
    std::vector<Node*> qs, res;
    const std::optional<QParams> p = quantized_readers(m->output(0), false, &qs, &res);
    if (!p) return false;
    Node* first = qs.front();
    Value* q_out = &first->output(0);
    Value* scale = &first->input(1);
    Value* zp = first->has_input(2) ? &first->input(2) : nullptr;
    for (std::size_t i = 1; i < qs.size(); ++i) {
      g_.replace_all_uses(&qs[i]->output(0), q_out);
      remove(qs[i]);
    }
    remove(first);
    Value* yq = g_.add_value(y.name() + "_int8");
    yq->set_type(p->type, y.shape());
    std::vector<Value*> in{&y, scale};
    if (zp) in.push_back(zp);
    Node* nq = g_.add_node("QuantizeLinear", y.name() + "_quantize", in, {yq}, m);
    nq->set_opset(std::max(13, g_.opset()));
    revalidate(*nq);
    m->set_input(0, yq);
    Value* old = &m->output(0);
    m->set_output(0, q_out);
    (void)old;
    revalidate(*m);
    return true;
  }

  // 2. A product writes its quantized output itself.
  bool quantized_output(Node* n) {
    const ops::Int8Epilogue e = ops::int8_epilogue(*n);
    if (e.quantized() || e.raw()) return false;
    std::vector<Node*> qs, res;
    const std::optional<QParams> p = quantized_readers(n->output(0), o_.int8, &qs, &res);
    if (!p) return false;
    Node* first = qs.front();
    Value* q_out = &first->output(0);
    for (std::size_t i = 1; i < qs.size(); ++i) {
      g_.replace_all_uses(&qs[i]->output(0), q_out);
      remove(qs[i]);
    }
    remove(first);
    n->set_attr_int("to", static_cast<int64_t>(p->type));
    n->set_attr("y_scale", float_attr(p->scale));
    if (p->zero_point != 0) {
      n->set_attr_int("y_zero_point", p->zero_point);
    } else {
      n->remove_attr("y_zero_point");
    }
    n->set_output(0, q_out);
    revalidate(*n);
    for (Node* r : res) {
      r->set_input(ops::kQResidualInput, q_out);
      r->set_attr("residual_scale", float_attr(p->scale));
      if (p->zero_point != 0) {
        r->set_attr_int("residual_zero_point", p->zero_point);
      } else {
        r->remove_attr("residual_zero_point");
      }
      revalidate(*r);
    }
    return true;
  }

  Graph& g_;
  const PassOptions& o_;
  std::set<const Node*> removed_;
};

}  // namespace

bool fold_quantize(Graph& g, const PassOptions& o) { return Folder(g, o).run(); }

}  // namespace modelc

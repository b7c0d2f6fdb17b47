// compiler/passes/precision.cpp — --fp16 / --bf16: which tensors are stored in 16 bits.
//
// One policy, two storage types: float16 with --fp16, bfloat16 with --bf16 (below, "half" is
// whichever of the two the options name: PassOptions::half_type). Per node, from the registry's
// OpDef::precision:
//   fp16, fp32_compute   the node's float32 inputs and outputs become half
//                        (fp32_compute: the kernel computes in FP32 on half
//                        storage; the graph looks the same)
//   unset, never         the node keeps its types (FP32)
// A node also stays FP32 when --keep-fp32 names it (by its name, or a name it
// covers), or when its op does not take the half type in that form (checked on a
// copy with the op's own validation and shape rule), and a QuantizeLinear of a
// model input reads it in FP32 (rounding it to FP16 first would change what is
// quantized). --int8 first runs passes/precision_int8.cpp; an op whose result
// type is its 'to' attribute (QConv / QMatMul) then gets float16 there.
//
// Inputs listed in OpDef::const_inputs (Resize's roi and scales, ...) are
// parameters, never converted. Integer and bool tensors never change.
//
// Constant float tensors read by half nodes are converted at compile time into
// new constant Values (name + "_fp16" / "_bf16"; the FP32 original stays for FP32
// readers or is dropped when none is left): finite values beyond the type's range
// are clamped to its largest finite value (FP16 +-65504; BF16 +-3.3895e38, only
// the top of FP32's range), and the clamped values, the subnormal results and
// the values that underflow to 0 are counted per tensor in the
// PrecisionReport that PassOptions::precision_report points to.
//
// A Cast is inserted at every boundary between half and FP32 storage, once
// per value and direction (later readers share it). Graph inputs and outputs
// stay FP32 (a Cast after the input, before the output: the output Value
// keeps its name and the producer writes NAME_fp16 / NAME_bf16), unless io_fp16,
// where they become float16 themselves (a graph output that is a constant keeps
// its type). Last, Cast chains through an exact widening (float16 or bfloat16
// -> float32 -> T) read the 16-bit value directly, and Casts to the type their
// input already has are removed.
//
// The reference interpreter runs the result as it is: each op computes in
// double and rounds to the half type at its output, which simulates its storage.
//
// Needs: shapes inferred; BN folded (weights are converted once, final).
// Leaves: a graph that verifies and infers to the same types.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "ops/registry.h"
#include "passes/fp16_rules.h"
#include "passes/pass.h"
#include "passes/precision_int8.h"

namespace modelc {

int64_t PrecisionReport::total_clamped() const {
  int64_t n = 0;
  for (const Weight& w : weights) n += w.clamped;
  return n;
}

int64_t PrecisionReport::total_subnormal() const {
  int64_t n = 0;
  for (const Weight& w : weights) n += w.subnormal;
  return n;
}

namespace {

constexpr double kHalfMax = 65504.0;
constexpr double kBfloat16Max = 3.3895313892515355e38;  // 0x7f7f: (2 - 2^-7) x 2^127

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool has_float32(const Node& n) {
  for (const Value* v : n.inputs()) {
    if (v && v->dtype() == DType::float32) return true;
  }
  for (const Value* v : n.outputs()) {
    if (v && v->dtype() == DType::float32) return true;
  }
  return false;
}

/// The `type` (float16 or bfloat16) form of a weight: clamped to the type's range, counted.
Tensor convert_weight(const Tensor& t, DType type, PrecisionReport::Weight& w) {
  const double max = type == DType::float16 ? kHalfMax : kBfloat16Max;
  const uint16_t min_normal = type == DType::float16 ? 0x0400 : 0x0080;  // the smallest normal's bits
  std::vector<double> v = t.to_f64();
  w.elements = static_cast<int64_t>(v.size());
  for (double& x : v) {
    if (std::isfinite(x) && std::fabs(x) > max) {
      x = x > 0 ? max : -max;
      ++w.clamped;
    }
  }
  Tensor h = Tensor::from_f64(type, t.shape(), v);
  const uint16_t* bits = h.data<uint16_t>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const uint16_t mag = bits[i] & 0x7fff;
    if (mag == 0) {
      if (v[i] != 0.0) ++w.underflow;
    } else if (mag < min_normal) {
      ++w.subnormal;
    }
  }
  return h;
}

Node* next_node(const Graph& g, const Node* n) {
  const auto& nodes = g.nodes();
  for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
    if (nodes[i].get() == n) return nodes[i + 1].get();
  }
  return nullptr;
}

const char* suffix(DType t) { return t == DType::float16 ? "_fp16" : t == DType::bfloat16 ? "_bf16" : "_fp32"; }

class Rewriter {
 public:
  Rewriter(Graph& g, PrecisionReport& report) : g_(g), report_(report) {}

  /// `v` as dtype `t`, for a reader placed before `before`: v itself, its
  /// converted constant, or a Cast (made once per value and type).
  Value* as(Value* v, DType t, Node* before) {
    if (v->dtype() == t) return v;
    auto key = std::make_pair(v, t);
    auto it = versions_.find(key);
    if (it != versions_.end()) return it->second;
    Value* r;
    if (v->is_constant() && !v->producer() && !v->is_graph_input() &&
        (t == DType::float16 || t == DType::bfloat16) && v->dtype() == DType::float32) {
      PrecisionReport::Weight w;
      w.name = v->name();
      Tensor h = convert_weight(v->constant(), t, w);
      report_.weights.push_back(w);
      r = g_.add_constant(v->name() + suffix(t), std::move(h), v->is_initializer());
    } else {
      r = g_.add_value(v->name() + suffix(t));
      r->set_type(t, v->shape());
      cast(v, r, before);
    }
    versions_[key] = r;
    return r;
  }

  /// A Cast node from `from` into `to` (typed already), placed before `before`.
  Node* cast(Value* from, Value* to, Node* before) {
    Node* c = g_.add_node("Cast", to->name(), {from}, {to}, before);
    c->set_opset(std::max(6, g_.opset()));
    c->set_attr_int("to", static_cast<int64_t>(to->dtype()));
    casts_.insert(c);
    return c;
  }

  /// Records that `v` is also available as `t` through `as_t`.
  void add_version(Value* v, DType t, Value* as_t) { versions_[std::make_pair(v, t)] = as_t; }

  bool inserted(const Node* n) const { return casts_.count(n) != 0; }

 private:
  Graph& g_;
  PrecisionReport& report_;
  std::map<std::pair<Value*, DType>, Value*> versions_;
  std::set<const Node*> casts_;
};

/// Cast(Cast(x: float16 or bfloat16 -> float32) -> T) reads x directly (the
/// widening is exact); a Cast to its input's type disappears.
void simplify_casts(Graph& g) {
  std::vector<Node*> casts;
  for (const auto& up : g.nodes()) {
    if (up->op() == "Cast" && default_domain(*up)) casts.push_back(up.get());
  }
  for (Node* c : casts) {
    Node* c0 = c->input(0).producer();
    if (c0 && c0->op() == "Cast" && default_domain(*c0) &&
        (c0->input(0).dtype() == DType::float16 || c0->input(0).dtype() == DType::bfloat16) &&
        c0->output(0).dtype() == DType::float32) {
      c->set_input(0, &c0->input(0));
    }
    Value& in = c->input(0);
    Value& out = c->output(0);
    if (in.dtype() == out.dtype() && !out.is_graph_output()) {
      g.replace_all_uses(&out, &in);
      g.remove_node(c);
    }
  }
}

}  // namespace

bool precision(Graph& g, const PassOptions& o) {
  PrecisionReport local;
  PrecisionReport& report = o.precision_report ? *o.precision_report : local;
  report = PrecisionReport{};
  // float16 unless --bf16 (the pass run by itself, without either flag, is the FP16 pass).
  const DType half = o.half_type() == DType::undefined ? DType::float16 : o.half_type();
  report.type = half;
  report.int8 = o.int8;
  report.fp16_accumulate = o.fp16_accumulate;
  report.io_fp16 = o.io_fp16;

  // --keep-fp32 names must exist (node names, or names a fused node covers).
  const std::set<std::string> keep(o.keep_fp32.begin(), o.keep_fp32.end());
  std::set<std::string> known;
  for (const auto& up : g.nodes()) {
    known.insert(up->name());
    for (const std::string& c : up->covers()) known.insert(c);
  }
  std::string unknown;
  for (const std::string& k : keep) {
    if (!known.count(k)) unknown += (unknown.empty() ? "'" : ", '") + k + "'";
  }
  if (!unknown.empty()) {
    throw Error("--keep-fp32: no node named " + unknown + " in the model",
                "use the ONNX node names, as `modelc inspect` and the report print them");
  }

  // Types as the model has them: FP32 readers get these back.
  std::map<const Value*, DType> original;
  for (const Value* v : g.values()) original[v] = v->dtype();

  bool changed = false;
  // --int8 first: the calibrated products become INT8 (QConv / QMatMul on QuantizeLinear), the rest
  // goes on to FP16 below.
  if (o.int8) {
    quantize_calibrated_products(g, o, report);
    changed = true;
  }
  if (o.io_fp16) {
    for (Value* v : g.inputs()) {
      if (v->dtype() == DType::float32 && !v->is_constant()) {
        v->set_dtype(half);
        changed = true;
      }
    }
  }

  Rewriter rw(g, report);
  std::vector<Node*> nodes;
  for (const auto& up : g.nodes()) nodes.push_back(up.get());
  for (Node* n : nodes) {
    const ops::OpDef& def = ops::lookup(*n);
    const bool floats = has_float32(*n);
    const std::vector<bool> conv = fp16_rules::converted_inputs(*n, def);
    std::string reason;
    bool fp16 = false;  // the node stores half
    if (def.precision != ops::Precision::fp16 && def.precision != ops::Precision::fp32_compute) {
      reason = def.precision == ops::Precision::never ? "precision policy 'never' (shape math, indices, comparisons)"
                                                      : "no precision policy";
    } else if (fp16_rules::pinned(*n, keep)) {
      reason = "pinned by --keep-fp32";
    } else if (n->op() == "QuantizeLinear" && default_domain(*n) && n->input(0).is_graph_input() &&
               n->input(0).dtype() == DType::float32) {
      // The INT8 program's first quantization: a Cast to FP16 before it would only round the model's
      // input before quantizing it (and the schedule folds such a Cast into the kernel, which then
      // quantizes the FP32 input: the program and run-reference would differ).
      reason = "quantizes a model input: reads it in FP32";
    } else if (floats) {
      std::string why;
      fp16 = fp16_rules::accepts(*n, def, conv, half, why);
      if (!fp16) reason = std::string("the op does not take ") + dtype_name(half) + " here: " + why;
    }
    if (floats && !fp16) report.fp32_nodes.push_back({n->name(), n->op(), reason});

    if (fp16) {
      for (int i = 0; i < n->num_inputs(); ++i) {
        if (conv[static_cast<std::size_t>(i)]) n->set_input(i, rw.as(&n->input(i), half, n));
      }
      std::vector<DType> before_types;
      for (const Value* v : n->outputs()) before_types.push_back(v ? v->dtype() : DType::undefined);
      // An op whose result type is its 'to' attribute (the INT8 products' real-valued output).
      if (std::find(def.attributes.begin(), def.attributes.end(), "to") != def.attributes.end() &&
          n->attr_int("to", static_cast<int64_t>(DType::float32)) == static_cast<int64_t>(DType::float32)) {
        n->set_attr_int("to", static_cast<int64_t>(DType::float16));
      }
      ops::validate_node(*n, def);
      def.infer(*n);
      for (int k = 0; k < n->num_outputs(); ++k) {
        if (!n->has_output(k)) continue;
        Value* out = &n->output(k);
        if (out->is_constant() && out->constant().dtype() != out->dtype()) {
          out->set_constant(out->constant().cast(out->dtype()));
        }
        if (out->dtype() == before_types[static_cast<std::size_t>(k)] || !out->is_graph_output() || o.io_fp16) continue;
        // A graph output stays FP32: the node writes NAME_fp16 (NAME_bf16), a Cast writes NAME.
        Value* half = g.add_value(out->name() + suffix(out->dtype()));
        half->set_type(out->dtype(), out->shape());
        out->set_dtype(before_types[static_cast<std::size_t>(k)]);
        if (out->is_constant()) {  // a folded output (an If's constant branch): each keeps its own type's data
          half->set_constant(out->constant());
          out->set_constant(out->constant().cast(out->dtype()));
        }
        n->set_output(k, half);
        rw.cast(half, out, next_node(g, n));
        rw.add_version(out, half->dtype(), half);
      }
      ++report.fp16_nodes;
      changed = true;
      continue;
    }

    // FP32 node: inputs the pass changed get their model type back.
    for (int i = 0; i < n->num_inputs(); ++i) {
      if (!n->has_input(i)) continue;
      Value* v = &n->input(i);
      auto it = original.find(v);
      if (it != original.end() && v->dtype() != it->second) {
        n->set_input(i, rw.as(v, it->second, n));
        changed = true;
      }
    }
    if (o.io_fp16) {
      for (int k = 0; k < n->num_outputs(); ++k) {
        if (!n->has_output(k)) continue;
        Value* out = &n->output(k);
        if (!out->is_graph_output() || out->dtype() != DType::float32 || out->is_constant()) continue;
        Value* full = g.add_value(out->name() + suffix(DType::float32));
        full->set_type(DType::float32, out->shape());
        out->set_dtype(half);
        n->set_output(k, full);
        rw.cast(full, out, next_node(g, n));
        rw.add_version(out, DType::float32, full);
        changed = true;
      }
    }
  }
  // Graph outputs that are graph inputs read by nothing else need no Cast:
  // with io_fp16 both are half, without it neither changed.

  if (changed) {
    simplify_casts(g);
    g.remove_dead();
  }
  for (const auto& up : g.nodes()) {
    if (rw.inserted(up.get())) ++report.casts_inserted;
  }
  return changed;
}

}  // namespace modelc

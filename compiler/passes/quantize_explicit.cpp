// compiler/passes/quantize_explicit.cpp — explicit quantization: the scales a model already holds
// (a Q/DQ model's DequantizeLinear -> Conv / Gemm / MatMul patterns, and QLinearConv, ConvInteger,
// QLinearMatMul, MatMulInteger with constant weights) become modelc's INT8 tensor-core products,
// QConv and QMatMul (ops/quantize.h), honouring the model's scales and zero points:
//
//   Conv(DQ(xq, sx, zx), DQ(Wq, sw[, zw], axis 0), B)     -> QConv(xq, Wq - zw, B) float output
//   Gemm / MatMul(DQ(aq, sa, za), DQ(Bq, sb[, zb]), C)    -> QMatMul(aq, (Bq - zb)^T, beta C) float
//   QLinearConv(x, sx, zx, w, sw, zw, sy, zy, B)           -> QConv quantized to (sy, zy)
//   ConvInteger(x, w, zx, zw)                              -> QConv, the raw INT32 accumulators
//   QLinearMatMul / MatMulInteger                          -> QMatMul likewise
//
// Conditions (otherwise the node stays as it is: the Q/DQ and integer ops have kernels of their own,
// and a DequantizeLinear of constant weights folds into float weights): X's scale and zero point
// constant and per tensor (ConvInteger / MatMulInteger: a zero point read at run time, one value,
// e.g. DynamicQuantizeLinear's, is taken too); the weights constant, per tensor or per output
// channel, and W - zw within int8 (any int8 weights with zero points 0, uint8 ones with 128);
// convolutions of one group over 2-D / 3-D images; products with a 2-D B and an A of rank 2 or more
// (Gemm: no transA, C one constant per column). A zero point of X needs w_sum (input 6), computed here.
// passes/fold_quantize.cpp then makes a product's output INT8 where a QuantizeLinear reads it.
//
// Needs: shapes inferred (the DequantizeLinear outputs of constant weights carry their values, their
// nodes still present); runs before fold_constants, which would replace those nodes by float weights.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/gemm.h"
#include "ops/quantize.h"
#include "ops/registry.h"
#include "passes/activation_patterns.h"
#include "passes/pass.h"

namespace modelc {

namespace {

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }
bool is(const Node* n, const char* op) { return n && default_domain(*n) && n->op() == op; }

/// The per-tensor parameters of the DequantizeLinear that writes v, with its quantized input.
struct Dequantized {
  Value* q = nullptr;
  ops::QuantScale scale;
};
std::optional<Dequantized> dequantized(Value& v) {
  Node* p = v.producer();
  if (!is(p, "DequantizeLinear") || !p->has_input(0) || !ops::is_int8_type(p->input(0).dtype())) return std::nullopt;
  const std::optional<ops::QuantScale> s = ops::constant_quant_scale(*p);
  if (!s) return std::nullopt;
  Dequantized d;
  d.q = &p->input(0);
  d.scale = *s;
  d.scale.type = p->input(0).dtype();
  return d;
}

/// INT8 weights from constant 8-bit values and zero points: W - zw per output channel (`rows`: the
/// channel is dim 0; else the last dim of a 2-D [K, N] tensor, stored transposed [N, K]), with the
/// sum of each channel's row; nullopt when a value leaves int8.
struct Weights {
  Tensor q;      ///< int8
  Tensor w_sum;  ///< int32 [M]
};
std::optional<Weights> int8_weights(const Tensor& w, const std::vector<int64_t>& zp, bool rows) {
  const Shape& s = w.shape();
  const int64_t M = rows ? s[0] : s[1];
  const int64_t K = w.numel() / std::max<int64_t>(M, 1);
  const std::vector<int64_t> v = w.to_i64();
  std::vector<int64_t> q(v.size()), sum(static_cast<std::size_t>(M), 0);
  for (int64_t m = 0; m < M; ++m) {
    const int64_t z = zp.empty() ? 0 : zp.size() == 1 ? zp[0] : zp[static_cast<std::size_t>(m)];
    for (int64_t k = 0; k < K; ++k) {
      const int64_t x = (rows ? v[static_cast<std::size_t>(m * K + k)] : v[static_cast<std::size_t>(k * M + m)]) - z;
      if (x < -128 || x > 127) return std::nullopt;
      q[static_cast<std::size_t>(m * K + k)] = x;
      sum[static_cast<std::size_t>(m)] += x;
    }
  }
  Weights r;
  r.q = Tensor::from_i64(DType::int8, rows ? s : Shape{M, K}, q);
  r.w_sum = Tensor::from_i64(DType::int32, {M}, sum);
  return r;
}

/// Per-channel (or one) scale values as float32 [M].
Tensor channel_scales(const Tensor& s, int64_t M, double factor = 1.0) {
  const std::vector<double> v = s.to_f64();
  std::vector<float> r(static_cast<std::size_t>(M));
  for (int64_t m = 0; m < M; ++m) r[static_cast<std::size_t>(m)] = static_cast<float>((v.size() == 1 ? v[0] : v[static_cast<std::size_t>(m)]) * factor);
  return Tensor::from_f32({M}, r);
}

Attribute float_attr(double v) {
  Attribute a;
  a.kind = Attribute::Kind::f;
  a.f = static_cast<float>(v);
  return a;
}
Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::i;
  a.i = v;
  return a;
}

bool const_scalar(const Node& n, int i) { return n.has_input(i) && n.input(i).is_constant() && n.input(i).numel() == 1; }
int64_t const_i(const Node& n, int i) { return n.has_input(i) ? n.input(i).constant().i64_at(0) : 0; }
std::vector<int64_t> const_ints_or_zero(const Node& n, int i) {
  return n.has_input(i) ? n.input(i).constant().to_i64() : std::vector<int64_t>{0};
}

class Explicit {
 public:
  explicit Explicit(Graph& g) : g_(g) {}

  bool run() {
    std::vector<Node*> nodes;
    for (const auto& up : g_.nodes()) nodes.push_back(up.get());
    bool changed = false;
    for (Node* n : nodes) {
      if (!default_domain(*n) || n->num_outputs() < 1 || !n->has_output(0)) continue;
      const std::string& op = n->op();
      if (op == "Conv") {
        changed = dq_conv(n) || changed;
      } else if (op == "Gemm" || op == "MatMul") {
        changed = dq_product(n) || changed;
      } else if (op == "QLinearConv" || op == "ConvInteger") {
        changed = integer_conv(n) || changed;
      } else if (op == "QLinearMatMul" || op == "MatMulInteger") {
        changed = integer_product(n) || changed;
      }
    }
    if (changed) g_.remove_dead();
    return changed;
  }

 private:
  static bool conv_shape_ok(const Node& n, const Value& x) {
    return (x.rank() == 4 || x.rank() == 5) && n.attr_int("group", 1) == 1;
  }

  /// Replaces n by `op` (domain modelc) with these inputs and attributes, writing n's output 0.
  Node* replace(Node* n, const std::string& op, const std::vector<Value*>& inputs,
                std::map<std::string, Attribute> attrs) {
    Value* y = &n->output(0);
    const std::vector<std::string> covers = fusion::covers_of(*n);
    const std::string name = n->name();
    Node* next = fusion::next_node(g_, n);
    g_.remove_node(n);
    std::vector<Value*> in = inputs;
    while (!in.empty() && !in.back()) in.pop_back();
    Node* q = g_.add_node(op, name, in, {y}, next);
    q->set_domain(ops::kModelcDomain);
    q->set_covers(covers);
    for (const auto& [k, a] : attrs) q->set_attr(k, a);
    const ops::OpDef& def = ops::lookup(*q);
    ops::validate_node(*q, def);
    const DType t = y->dtype();
    const Shape s = y->shape();
    def.infer(*q);
    if (y->dtype() != t || y->shape() != s) throw q->error("internal: the INT8 form infers " + y->type_str());
    return q;
  }

  Value* constant(const std::string& name, Tensor t) { return g_.add_constant(name, std::move(t), true); }

  static void conv_attrs(const Node& n, std::map<std::string, Attribute>& a) {
    for (const char* k : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}) {
      if (const Attribute* at = n.attr(k)) a[k] = *at;
    }
  }

  static void x_attrs(double scale, int64_t zp, std::map<std::string, Attribute>& a) {
    a["x_scale"] = float_attr(scale);
    if (zp != 0) a["x_zero_point"] = int_attr(zp);
  }

  // Conv(DQ(xq), DQ(Wq), B): a float output of the Conv's type.
  bool dq_conv(Node* n) {
    if (!n->has_input(0) || !n->has_input(1) || !conv_shape_ok(*n, n->input(0))) return false;
    const std::optional<Dequantized> x = dequantized(n->input(0));
    Node* wd = n->input(1).producer();
    if (!x || !is(wd, "DequantizeLinear") || !wd->input(0).is_constant() || !ops::is_int8_type(wd->input(0).dtype())) return false;
    if (!const_scalar(*wd, 1) && !(wd->input(1).is_constant() && wd->input(1).rank() == 1)) return false;
    const Tensor& wq = wd->input(0).constant();
    const int64_t M = wq.shape()[0];
    const ops::QuantAxis axis = ops::quant_axis(*wd, wq.shape(), wd->input(1).shape());
    if (axis.axis > 0) return false;  // per input channel or tap: not a per-output-channel scale
    if (wd->has_input(2) && !wd->input(2).is_constant()) return false;
    const std::optional<Weights> w = int8_weights(wq, const_ints_or_zero(*wd, 2), true);
    if (!w) return false;
    if (n->has_input(2) && !n->input(2).is_constant()) return false;
    const DType out = n->output(0).dtype();
    if (out != DType::float32 && out != DType::float16) return false;
    std::map<std::string, Attribute> a;
    conv_attrs(*n, a);
    x_attrs(x->scale.scale, x->scale.zero_point, a);
    a["to"] = int_attr(static_cast<int64_t>(out));
    Value* b = n->has_input(2) ? constant(n->input(2).name() + "_fp32", n->input(2).constant().cast(DType::float32)) : nullptr;
    replace(n, "QConv",
            {x->q, constant(wd->input(0).name() + "_int8", w->q), b, nullptr,
             constant(wd->input(1).name() + "_per_channel", channel_scales(wd->input(1).constant(), M)), nullptr,
             x->scale.zero_point != 0 ? constant(wd->input(0).name() + "_sum", w->w_sum) : nullptr},
            a);
    return true;
  }

  // Gemm / MatMul(DQ(aq), DQ(Bq), C): QMatMul with B stored [N, K].
  bool dq_product(Node* n) {
    if (!n->has_input(0) || !n->has_input(1) || n->input(0).rank() < 2) return false;
    const std::optional<Dequantized> a = dequantized(n->input(0));
    Node* bd = n->input(1).producer();
    if (!a || !is(bd, "DequantizeLinear") || !bd->input(0).is_constant() || !ops::is_int8_type(bd->input(0).dtype()) ||
        bd->input(0).rank() != 2) {
      return false;
    }
    bool trans_b = false;
    double alpha = 1.0, beta = 1.0;
    if (n->op() == "Gemm") {
      const ops::GemmAttributes ga = ops::gemm_attributes(*n);
      if (ga.trans_a) return false;
      trans_b = ga.trans_b;
      alpha = ga.alpha;
      beta = ga.beta;
    }
    const Tensor& bq = bd->input(0).constant();
    const int64_t N = trans_b ? bq.shape()[0] : bq.shape()[1];
    const ops::QuantAxis axis = ops::quant_axis(*bd, bq.shape(), bd->input(1).shape());
    if (axis.axis >= 0 && axis.axis != (trans_b ? 0 : 1)) return false;  // per row of K: not per column
    if (!bd->input(1).is_constant() || (bd->has_input(2) && !bd->input(2).is_constant())) return false;
    const std::optional<Weights> w = int8_weights(bq, const_ints_or_zero(*bd, 2), trans_b);
    if (!w) return false;
    Value* bias = nullptr;
    if (n->op() == "Gemm" && n->has_input(2)) {
      const Value& c = n->input(2);
      if (!c.is_constant() || c.numel() != N || (c.rank() == 2 && c.shape()[0] != 1)) return false;
      std::vector<double> v = c.constant().to_f64();
      for (double& x : v) x *= beta;
      bias = constant(c.name() + "_fp32", Tensor::from_f64(DType::float32, {N}, v));
    }
    const DType out = n->output(0).dtype();
    if (out != DType::float32 && out != DType::float16) return false;
    std::map<std::string, Attribute> at;
    x_attrs(a->scale.scale, a->scale.zero_point, at);
    at["to"] = int_attr(static_cast<int64_t>(out));
    replace(n, "QMatMul",
            {a->q, constant(bd->input(0).name() + "_int8", w->q), bias, nullptr,
             constant(bd->input(1).name() + "_per_column", channel_scales(bd->input(1).constant(), N, alpha)), nullptr,
             a->scale.zero_point != 0 ? constant(bd->input(0).name() + "_sum", w->w_sum) : nullptr},
            at);
    return true;
  }

  /// X's zero point: attribute (constant) or run-time input; false when it is neither.
  bool zero_point(const Node& n, int i, int64_t* attr, Value** runtime) {
    *attr = 0;
    *runtime = nullptr;
    if (!n.has_input(i)) return true;
    Value& z = n.input(i);
    if (z.numel() != 1) return false;
    if (z.is_constant()) {
      *attr = z.constant().i64_at(0);
    } else {
      *runtime = &z;
    }
    return true;
  }

  // QLinearConv (quantized output) and ConvInteger (the accumulators).
  bool integer_conv(Node* n) {
    const bool qlinear = n->op() == "QLinearConv";
    const int wi = qlinear ? 3 : 1;
    if (!n->has_input(0) || !n->has_input(wi) || !conv_shape_ok(*n, n->input(0))) return false;
    const Value& wv = n->input(wi);
    if (!wv.is_constant()) return false;
    const int64_t M = wv.shape()[0];
    int64_t zx = 0;
    Value* zx_runtime = nullptr;
    if (!zero_point(*n, qlinear ? 2 : 2, &zx, &zx_runtime)) return false;
    const int zw_in = qlinear ? 5 : 3;
    if (n->has_input(zw_in) && !n->input(zw_in).is_constant()) return false;
    const std::optional<Weights> w = int8_weights(wv.constant(), const_ints_or_zero(*n, zw_in), true);
    if (!w) return false;
    std::map<std::string, Attribute> a;
    conv_attrs(*n, a);
    std::vector<Value*> in{&n->input(0), constant(wv.name() + "_int8", w->q), nullptr, nullptr, nullptr, nullptr, nullptr};
    if (qlinear) {
      if (zx_runtime || !const_scalar(*n, 1) || !n->input(4).is_constant() || !const_scalar(*n, 6) || !const_scalar(*n, 7)) {
        return false;
      }
      if (n->has_input(8) && !n->input(8).is_constant()) return false;
      const double sx = n->input(1).constant().f64_at(0);
      x_attrs(sx, zx, a);
      a["to"] = int_attr(static_cast<int64_t>(n->output(0).dtype()));
      a["y_scale"] = float_attr(n->input(6).constant().f64_at(0));
      const int64_t zy = const_i(*n, 7);
      if (zy != 0) a["y_zero_point"] = int_attr(zy);
      const Tensor ws = channel_scales(n->input(4).constant(), M);
      in[ops::kQWeightScaleInput] = constant(n->input(4).name() + "_per_channel", ws);
      if (n->has_input(8)) {
        // The int32 bias has the accumulators' scale: as float32, B[m] * float(sx) * w_scale[m].
        const std::vector<int64_t> b = n->input(8).constant().to_i64();
        const float* s = ws.data<float>();
        std::vector<float> bf(static_cast<std::size_t>(M));
        for (int64_t m = 0; m < M; ++m) {
          bf[static_cast<std::size_t>(m)] = static_cast<float>(b[static_cast<std::size_t>(m)]) * (static_cast<float>(sx) * s[m]);
        }
        in[ops::kQBiasInput] = constant(n->input(8).name() + "_fp32", Tensor::from_f32({M}, bf));
      }
    } else {
      a["to"] = int_attr(static_cast<int64_t>(DType::int32));
      if (zx != 0) a["x_zero_point"] = int_attr(zx);
    }
    in[ops::kQZeroPointInput] = zx_runtime;
    if (zx != 0 || zx_runtime) in[ops::kQWeightSumInput] = constant(wv.name() + "_sum", w->w_sum);
    replace(n, "QConv", in, a);
    return true;
  }

  // QLinearMatMul (quantized output) and MatMulInteger (the accumulators): B a constant matrix.
  bool integer_product(Node* n) {
    const bool qlinear = n->op() == "QLinearMatMul";
    const int bi = qlinear ? 3 : 1;
    if (!n->has_input(0) || !n->has_input(bi) || n->input(0).rank() < 2) return false;
    const Value& bv = n->input(bi);
    if (!bv.is_constant() || bv.rank() != 2) return false;
    const int64_t N = bv.shape()[1];
    int64_t za = 0;
    Value* za_runtime = nullptr;
    if (!zero_point(*n, 2, &za, &za_runtime)) return false;
    const int zb_in = qlinear ? 5 : 3;
    if (n->has_input(zb_in) && !n->input(zb_in).is_constant()) return false;
    const std::optional<Weights> w = int8_weights(bv.constant(), const_ints_or_zero(*n, zb_in), false);
    if (!w) return false;
    std::map<std::string, Attribute> a;
    std::vector<Value*> in{&n->input(0), constant(bv.name() + "_int8", w->q), nullptr, nullptr, nullptr, nullptr, nullptr};
    if (qlinear) {
      if (za_runtime || !const_scalar(*n, 1) || !n->input(4).is_constant() || !const_scalar(*n, 6) || !const_scalar(*n, 7)) {
        return false;
      }
      x_attrs(n->input(1).constant().f64_at(0), za, a);
      a["to"] = int_attr(static_cast<int64_t>(n->output(0).dtype()));
      a["y_scale"] = float_attr(n->input(6).constant().f64_at(0));
      const int64_t zy = const_i(*n, 7);
      if (zy != 0) a["y_zero_point"] = int_attr(zy);
      in[ops::kQWeightScaleInput] = constant(n->input(4).name() + "_per_column", channel_scales(n->input(4).constant(), N));
    } else {
      a["to"] = int_attr(static_cast<int64_t>(DType::int32));
      if (za != 0) a["x_zero_point"] = int_attr(za);
    }
    in[ops::kQZeroPointInput] = za_runtime;
    if (za != 0 || za_runtime) in[ops::kQWeightSumInput] = constant(bv.name() + "_sum", w->w_sum);
    replace(n, "QMatMul", in, a);
    return true;
  }

  Graph& g_;
};

}  // namespace

bool quantize_explicit(Graph& g, const PassOptions&) { return Explicit(g).run(); }

}  // namespace modelc

// compiler/passes/precision_int8.cpp — the INT8 part of the precision pass (--int8): calibrated
// post-training quantization of the convolutions and matrix products.
//
// Per Conv, Gemm and MatMul node (in graph order), INT8 when every rule below holds, else the reason
// is recorded (PrecisionReport::int8_layers) and the node is left to the FP16 part of the pass:
//   - not pinned by --keep-fp32 (then FP32);
//   - a convolution of one group over 2-D / 3-D images with constant weights (grouped and depthwise
//     convolutions stay FP16: the INT8 kernels run one group);
//   - a Gemm without transA, with constant B and a C of one value per column (or none); a MatMul
//     with a constant 2-D B;
//   - more than kGemvMaxRows rows for a matrix product (fewer: the FP16 GEMV, which streams the
//     weights; an MMA tile of 16 rows would compute mostly absent ones);
//   - X (input 0) calibrated: the table has its name.
// An INT8 node becomes QConv / QMatMul (ops/quantize.h) reading QuantizeLinear(X, T / 127) (one per
// value, shared by its readers; symmetric, zero point 0), with its weights quantized symmetric per
// output channel (scale max |W[m]| / 127, round half to even), its bias in float32 (Gemm's beta
// and alpha folded into the bias and the weight scales; a MatMul's B stored transposed, [N, K], as
// the tensor cores read it), and a float32 output that the FP16 part then makes float16.
// passes/fold_quantize.cpp later moves the quantization of an output into its producer.
#include <algorithm>
#include <cmath>

#include "ops/gemm.h"
#include "ops/quantize.h"
#include "ops/registry.h"
#include "passes/activation_patterns.h"
#include "passes/calibration.h"
#include "passes/fp16_rules.h"
#include "passes/pass.h"
#include "passes/precision_int8.h"

namespace modelc {

namespace {

/// Matrix products of at most this many rows keep the FP16 GEMV (schedule/tactics.h kGemvMaxRows).
constexpr int64_t kInt8MinRows = 9;

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

/// Per output channel of W [M, ...] (rows; `transposed`: W [K, M], columns): max |w| / 127 and the
/// int8 values, as [M, K] rows.
struct QuantizedWeights {
  Tensor q;       ///< int8 [M, ...] (conv) or [M, K] (products)
  Tensor scale;   ///< float32 [M]
  double min_scale = 0, max_scale = 0;
};

QuantizedWeights quantize_weights(const Tensor& w, bool transposed, const std::vector<double>& factor) {
  const Shape& s = w.shape();
  const int64_t M = transposed ? s[1] : s[0];
  const int64_t K = w.numel() / std::max<int64_t>(M, 1);
  const std::vector<double> v = w.to_f64();
  auto at = [&](int64_t m, int64_t k) { return transposed ? v[static_cast<std::size_t>(k * M + m)] : v[static_cast<std::size_t>(m * K + k)]; };
  std::vector<float> scales(static_cast<std::size_t>(M));
  std::vector<int64_t> q(static_cast<std::size_t>(M * K));
  QuantizedWeights r;
  for (int64_t m = 0; m < M; ++m) {
    double amax = 0;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(at(m, k)));
    const float sw = amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f;
    for (int64_t k = 0; k < K; ++k) {
      q[static_cast<std::size_t>(m * K + k)] = ops::saturate_round(at(m, k) / static_cast<double>(sw), DType::int8);
    }
    const double f = factor.empty() ? 1.0 : factor[0];
    scales[static_cast<std::size_t>(m)] = static_cast<float>(static_cast<double>(sw) * f);
    const double ds = scales[static_cast<std::size_t>(m)];
    r.min_scale = m == 0 ? ds : std::min(r.min_scale, ds);
    r.max_scale = m == 0 ? ds : std::max(r.max_scale, ds);
  }
  r.q = Tensor::from_i64(DType::int8, transposed ? Shape{M, K} : (s.size() == 2 ? Shape{M, K} : s), q);
  r.scale = Tensor::from_f32({M}, scales);
  return r;
}

class Int8Rewriter {
 public:
  Int8Rewriter(Graph& g, const PassOptions& o, PrecisionReport& report) : g_(g), o_(o), report_(report) {}

  void run() {
    const std::set<std::string> keep(o_.keep_fp32.begin(), o_.keep_fp32.end());
    std::vector<Node*> nodes;
    for (const auto& up : g_.nodes()) nodes.push_back(up.get());
    for (Node* n : nodes) {
      if (!default_domain(*n) || (n->op() != "Conv" && n->op() != "Gemm" && n->op() != "MatMul")) continue;
      if (!n->has_input(0) || !n->has_input(1) || n->input(0).dtype() != DType::float32) continue;
      PrecisionReport::Int8Layer layer;
      layer.name = n->name();
      layer.op = n->op();
      std::string reason;
      if (fp16_rules::pinned(*n, keep)) {
        layer.precision = "FP32";
        layer.reason = "pinned by --keep-fp32";
        report_.int8_layers.push_back(layer);
        continue;
      }
      reason = n->op() == "Conv" ? conv_reason(*n) : product_reason(*n);
      const TensorCalibration* cal = o_.calibration ? o_.calibration->find(n->input(0).name()) : nullptr;
      if (reason.empty() && !cal) reason = "input '" + n->input(0).name() + "' has no calibration entry";
      if (!reason.empty()) {
        layer.precision = "FP16";
        layer.reason = reason;
        report_.int8_layers.push_back(layer);
        continue;
      }
      layer.precision = "INT8";
      layer.x_scale = static_cast<float>(cal->scale());
      const QuantizedWeights qw = n->op() == "Conv" ? rewrite_conv(n, layer.x_scale) : rewrite_product(n, layer.x_scale);
      layer.w_scale_min = qw.min_scale;
      layer.w_scale_max = qw.max_scale;
      report_.int8_layers.push_back(layer);
    }
  }

 private:
  std::string conv_reason(const Node& n) const {
    const Value& x = n.input(0);
    const Value& w = n.input(1);
    if (x.rank() != 4 && x.rank() != 5) return "a " + std::to_string(x.rank() - 2) + "-D convolution (INT8 runs 2-D and 3-D)";
    if (n.attr_int("group", 1) != 1) return "groups = " + std::to_string(n.attr_int("group", 1)) + " (the INT8 kernels run one group)";
    if (!w.is_constant()) return "weights not constant";
    if (n.has_input(2) && !n.input(2).is_constant()) return "bias not constant";
    return "";
  }

  std::string product_reason(const Node& n) const {
    const Value& a = n.input(0);
    const Value& b = n.input(1);
    if (!b.is_constant() || b.rank() != 2) return "B is not a constant matrix";
    if (a.rank() < 2) return "A is a vector";
    if (n.op() == "Gemm") {
      const ops::GemmAttributes ga = ops::gemm_attributes(n);
      if (ga.trans_a) return "transA";
      if (n.has_input(2)) {
        const Value& c = n.input(2);
        const int64_t N = ga.trans_b ? b.shape()[0] : b.shape()[1];
        if (!c.is_constant() || c.numel() != N || (c.rank() == 2 && c.shape()[0] != 1)) return "C is not one constant per column";
      }
    }
    const int64_t rows = a.numel() / a.shape().back();
    if (rows < kInt8MinRows) {
      return "at most " + std::to_string(kInt8MinRows - 1) + " rows: the FP16 GEMV (memory bound on the weights)";
    }
    return "";
  }

  Value* quantized_input(Value* x, double scale, Node* before) {
    auto it = quantized_.find(x);
    if (it != quantized_.end()) return it->second;
    Value* s = g_.add_constant(x->name() + "_int8_scale", Tensor::from_f32({}, {static_cast<float>(scale)}));
    Value* z = g_.add_constant(x->name() + "_int8_zero_point", Tensor::from_i64(DType::int8, {}, {0}));
    Value* q = g_.add_value(x->name() + "_int8");
    q->set_type(DType::int8, x->shape());
    Node* node = g_.add_node("QuantizeLinear", x->name() + "_quantize", {x, s, z}, {q}, before);
    node->set_opset(std::max(13, g_.opset()));
    quantized_[x] = q;
    return q;
  }

  /// Replaces n by `op` with these inputs and attributes, writing n's output.
  Node* replace(Node* n, const std::string& op, const std::vector<Value*>& inputs,
                const std::map<std::string, Attribute>& attrs) {
    Value* y = &n->output(0);
    const std::vector<std::string> covers = fusion::covers_of(*n);
    const std::string name = n->name();
    Node* next = fusion::next_node(g_, n);
    g_.remove_node(n);
    Node* q = g_.add_node(op, name, inputs, {y}, next);
    q->set_domain(ops::kModelcDomain);
    q->set_covers(covers);
    for (const auto& [k, a] : attrs) q->set_attr(k, a);
    return q;
  }

  QuantizedWeights rewrite_conv(Node* n, double x_scale) {
    const QuantizedWeights qw = quantize_weights(n->input(1).constant(), false, {});
    Value* xq = quantized_input(&n->input(0), x_scale, n);
    Value* w = g_.add_constant(n->input(1).name() + "_int8", qw.q, true);
    Value* ws = g_.add_constant(n->input(1).name() + "_int8_scale", qw.scale, true);
    Value* b = nullptr;
    if (n->has_input(2)) b = g_.add_constant(n->input(2).name() + "_fp32", n->input(2).constant().cast(DType::float32), true);
    std::map<std::string, Attribute> attrs;
    for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}) {
      if (const Attribute* at = n->attr(a)) attrs[a] = *at;
    }
    Attribute xs;
    xs.kind = Attribute::Kind::f;
    xs.f = static_cast<float>(x_scale);
    attrs["x_scale"] = xs;
    Node* q = replace(n, "QConv", {xq, w, b, nullptr, ws}, attrs);
    ops::validate_node(*q, ops::lookup(*q));
    ops::lookup(*q).infer(*q);
    return qw;
  }

  QuantizedWeights rewrite_product(Node* n, double x_scale) {
    bool trans_b = false;
    double alpha = 1.0, beta = 1.0;
    if (n->op() == "Gemm") {
      const ops::GemmAttributes ga = ops::gemm_attributes(*n);
      trans_b = ga.trans_b;
      alpha = ga.alpha;
      beta = ga.beta;
    }
    // B [K, N] (or [N, K] with transB): per column n of the product.
    const QuantizedWeights qw = quantize_weights(n->input(1).constant(), !trans_b, {alpha});
    Value* aq = quantized_input(&n->input(0), x_scale, n);
    Value* w = g_.add_constant(n->input(1).name() + "_int8", qw.q, true);
    Value* ws = g_.add_constant(n->input(1).name() + "_int8_scale", qw.scale, true);
    Value* b = nullptr;
    if (n->op() == "Gemm" && n->has_input(2)) {
      std::vector<double> c = n->input(2).constant().to_f64();
      for (double& v : c) v *= beta;
      const int64_t N = qw.q.shape()[0];
      b = g_.add_constant(n->input(2).name() + "_fp32", Tensor::from_f64(DType::float32, {N}, c), true);
    }
    std::map<std::string, Attribute> attrs;
    Attribute xs;
    xs.kind = Attribute::Kind::f;
    xs.f = static_cast<float>(x_scale);
    attrs["x_scale"] = xs;
    Node* q = replace(n, "QMatMul", {aq, w, b, nullptr, ws}, attrs);
    ops::validate_node(*q, ops::lookup(*q));
    ops::lookup(*q).infer(*q);
    return qw;
  }

  Graph& g_;
  const PassOptions& o_;
  PrecisionReport& report_;
  std::map<Value*, Value*> quantized_;
};

}  // namespace

void quantize_calibrated_products(Graph& g, const PassOptions& o, PrecisionReport& report) {
  if (!o.calibration) {
    throw Error("--int8 needs calibration data or a calibration cache",
                "add --calibrate DIR (a folder of .npy inputs), --calibrate random:N (N seeded random inputs), or "
                "--calibration-cache FILE");
  }
  report.int8 = true;
  report.calibration_method = calibration_method_name(o.calibration->method);
  report.calibration_source = o.calibration->source;
  report.calibration_samples = o.calibration->samples;
  Int8Rewriter(g, o, report).run();
}

}  // namespace modelc

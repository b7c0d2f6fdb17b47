// compiler/passes/fold_batchnorm.cpp — folds a per-channel affine op that
// follows a producer into the producer's weights and bias:
//
//   producer  Conv                Gemm (transB either way)       MatMul, B a constant 2-D [K, N]
//   channel   Y's dim 1           Y's dim 1 (N)                  Y's last dim (N)
//   folds     BatchNormalization  BatchNormalization             BatchNormalization (Y of rank 2 only:
//             Mul/Div by, Add/Sub of a constant scalar or          BN's channels are dim 1)
//             per-channel tensor ([C,1,1], [1,C,1,1], ...)       Mul/Div by a constant
//
// With Y' = s[c] * Y + t[c] (BN: s = gamma / sqrt(var + eps), t = beta - mean * s):
//   Conv:   W'[c,...] = W[c,...] * s[c]         B'[c] = B[c] * s[c] + t[c]
//   Gemm:   B' = B * s per output column        C' = beta * C * s + t, beta' = 1
//   MatMul: B'[:,c] = B[:,c] * s[c]             t, when not all zero, becomes a bias
//           Add node after the MatMul (fuse_epilogue takes it into FusedMatMul).
//           A constant Add after a MatMul is left alone: it is that bias already.
// The folded node disappears; the producer writes its output Value (so the
// value keeps its name) and records it in Node::covers.
//
// A MatMul's per-channel scale may also come after its bias Add and a Transpose (a ConvNeXt block
// ends MatMul -> Add (bias) -> Transpose (0, 3, 1, 2) -> Mul (layer scale [C, 1, 1])): each of
// the bias Add (a constant varying at most along the last dim) and the Transpose optional, each
// read only by the next, the scale per channel along the dim the Transpose moves the MatMul's last
// dim to, and a scale only (Mul, Div by a constant) unless the bias Add is there to take the
// shift. B's columns and the bias take s (bias' = bias * s + t); the Add or the Transpose then
// writes the folded node's output. With --fp16, the fold is refused where the scaled B would
// round worse in FP16 than B itself times s (kFp16FoldErrorRatio: small layer scales put s * B in
// FP16's subnormals, below 2^-14, where the relative precision runs out): the Mul then stays, its
// string attribute modelc_note saying why (the tactics stage adds it to its kernel's note).
//
// Weights are computed in double, rounded to the weight's type, and stored as new constant Values: a
// shared initializer is never changed in place. ConvTranspose is not folded
// (its output channels are W's dim 1, per group); neither is BN with
// spatial=0, nor an affine op whose constant would change Y's shape.
//
// Needs: shapes inferred, constants folded (weights are constant Values).
// Leaves: no BatchNormalization, constant Mul/Div or Conv/Gemm constant Add/Sub
// right after a producer whose output has no other reader.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "ops/normalization.h"
#include "ops/registry.h"
#include "ops/tensor.h"
#include "passes/activation_patterns.h"
#include "passes/pass.h"
#include "runtime_stub/half_bits.h"

namespace modelc {

namespace {

enum class Kind { conv, gemm, matmul };

/// --fp16: a scale folds into a MatMul's B only where the folded B rounds to FP16 at most this many
/// times worse (relative L2 over B) than B itself, scaled (fp16_fold_loses).
constexpr double kFp16FoldErrorRatio = 1.25;
/// The attribute a refused scale's node carries its reason in, for the report (the kernel's note).
constexpr const char* kNoteAttribute = "modelc_note";

std::optional<Kind> producer_kind(const Node& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return std::nullopt;
  const ops::OpDef* def = ops::OpRegistry::instance().find(n.op(), n.opset());
  if (!def || def->fusion != ops::Fusion::producer || !n.has_output(0)) return std::nullopt;
  if (!is_float(n.output(0).dtype())) return std::nullopt;
  auto constant = [&](int i) { return !n.has_input(i) || n.input(i).is_constant(); };
  if (n.op() == "Conv" && n.has_input(1) && n.input(1).is_constant() && constant(2)) return Kind::conv;
  if (n.op() == "Gemm" && n.has_input(1) && n.input(1).is_constant() && constant(2)) return Kind::gemm;
  if (n.op() == "MatMul" && n.has_input(1) && n.input(1).is_constant() && n.input(1).rank() == 2 &&
      n.output(0).rank() >= 1) {
    return Kind::matmul;
  }
  return std::nullopt;
}

int64_t channel_axis(Kind k, int64_t rank) { return k == Kind::matmul ? rank - 1 : 1; }

Node* sole_user(const Value& v) {
  if (v.is_graph_output() || v.users().size() != 1) return nullptr;
  return v.users()[0];
}

/// Per channel (along `axis` of Y) values of a constant that broadcasts to
/// Y's shape without changing it and varies at most along `axis`.
std::optional<std::vector<double>> per_channel(const Value& c, const Shape& y, int64_t axis) {
  if (!c.is_constant() || c.rank() > static_cast<int64_t>(y.size())) return std::nullopt;
  const Shape& cs = c.shape();
  bool varies = false;
  for (std::size_t k = 0; k < cs.size(); ++k) {
    const int64_t ya = static_cast<int64_t>(y.size() - cs.size() + k);
    if (cs[k] == 1) continue;
    if (ya != axis || cs[k] != y[static_cast<std::size_t>(ya)]) return std::nullopt;
    varies = true;
  }
  const std::vector<double> v = c.constant().to_f64();
  const int64_t C = y[static_cast<std::size_t>(axis)];
  std::vector<double> r(static_cast<std::size_t>(C));
  for (int64_t i = 0; i < C; ++i) r[i] = v[varies ? static_cast<std::size_t>(i) : 0];
  return r;
}

/// Y' = s * Y + t per channel, and whether t is all zero.
struct Affine {
  std::vector<double> s, t;
  bool is_bias_op = false;  ///< Add/Sub: for a MatMul that is its bias, left to fuse_epilogue
  bool finite() const {
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!std::isfinite(s[i]) || !std::isfinite(t[i])) return false;
    }
    return true;
  }
  bool has_shift() const {
    for (double x : t) {
      if (x != 0.0) return true;
    }
    return false;
  }
};

/// The affine form of `u`, the only reader of the producer's output `y`.
std::optional<Affine> affine_of(const Node& u, const Value& y, int64_t axis) {
  if (!u.domain().empty() && u.domain() != "ai.onnx") return std::nullopt;
  if (u.num_outputs() < 1 || !u.has_output(0)) return std::nullopt;
  for (int i = 1; i < u.num_outputs(); ++i) {
    if (u.has_output(i)) return std::nullopt;
  }
  const Value& out = u.output(0);
  if (out.dtype() != y.dtype() || out.shape() != y.shape()) return std::nullopt;
  const ops::OpDef* def = ops::OpRegistry::instance().find(u.op(), u.opset());
  if (!def) return std::nullopt;
  const int64_t rank = y.rank();
  if (axis < 0 || axis >= rank) return std::nullopt;
  const std::size_t C = static_cast<std::size_t>(y.shape()[static_cast<std::size_t>(axis)]);
  Affine a;
  a.s.assign(C, 1.0);
  a.t.assign(C, 0.0);

  if (def->fusion == ops::Fusion::normalization && u.op() == "BatchNormalization") {
    if (&u.input(0) != &y || axis != 1 || u.attr_int("spatial", 1) != 1) return std::nullopt;
    std::vector<std::vector<double>> p;
    for (int i = 1; i <= 4; ++i) {
      const Value& v = u.input(i);
      if (!v.is_constant() || v.shape() != Shape{static_cast<int64_t>(C)}) return std::nullopt;
      p.push_back(v.constant().to_f64());
    }
    const double eps = ops::norm_epsilon(u);
    for (std::size_t c = 0; c < C; ++c) {
      a.s[c] = p[0][c] / std::sqrt(p[3][c] + eps);
      a.t[c] = p[1][c] - p[2][c] * a.s[c];
    }
    return a;
  }

  // Elementwise arithmetic with a constant, numpy broadcasting (opset 7 and
  // newer: the legacy forms broadcast by 'axis').
  if (def->fusion != ops::Fusion::epilogue_binary || u.opset() < 7 || u.num_inputs() != 2) return std::nullopt;
  const bool y_first = &u.input(0) == &y;
  const Value& c = u.input(y_first ? 1 : 0);
  if (&c == &y) return std::nullopt;
  const std::optional<std::vector<double>> k = per_channel(c, y.shape(), axis);
  if (!k) return std::nullopt;
  const std::string& op = u.op();
  if (op == "Mul") {
    a.s = *k;
  } else if (op == "Div" && y_first) {
    for (std::size_t i = 0; i < C; ++i) a.s[i] = 1.0 / (*k)[i];
  } else if (op == "Add") {
    a.t = *k;
    a.is_bias_op = true;
  } else if (op == "Sub") {
    a.is_bias_op = true;
    for (std::size_t i = 0; i < C; ++i) {
      if (y_first) {
        a.t[i] = -(*k)[i];
      } else {
        a.s[i] = -1.0;  // c - Y
        a.t[i] = (*k)[i];
      }
    }
  } else {
    return std::nullopt;
  }
  return a;
}

using fusion::covers_of;
using fusion::next_node;

std::string folded_name(const std::string& base) {
  const std::string suffix = "_folded";
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) return base;
  return base + suffix;
}

Value* new_weight(Graph& g, const Value& like, DType dtype, Shape shape, const std::vector<double>& v) {
  return g.add_constant(folded_name(like.name()), Tensor::from_f64(dtype, std::move(shape), v), true);
}

void fold_into_conv(Graph& g, Node& conv, const Affine& a) {
  const Value& W = conv.input(1);
  std::vector<double> w = W.constant().to_f64();
  const std::size_t M = a.s.size();
  const std::size_t per = w.size() / M;
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t k = 0; k < per; ++k) w[m * per + k] *= a.s[m];
  }
  std::vector<double> b(M, 0.0);
  if (conv.has_input(2)) b = conv.input(2).constant().to_f64();
  for (std::size_t m = 0; m < M; ++m) b[m] = b[m] * a.s[m] + a.t[m];
  const bool need_bias = conv.has_input(2) || a.has_shift();
  Value* nw = new_weight(g, W, W.dtype(), W.shape(), w);
  conv.set_input(1, nw);
  if (need_bias) {
    Value* nb = conv.has_input(2)
                    ? new_weight(g, conv.input(2), W.dtype(), {static_cast<int64_t>(M)}, b)
                    : g.add_constant(conv.name() + ".bias_folded",
                                     Tensor::from_f64(W.dtype(), {static_cast<int64_t>(M)}, b), true);
    conv.set_input(2, nb);
  }
}

void fold_into_gemm(Graph& g, Node& gemm, const Affine& a) {
  const Value& B = gemm.input(1);
  const bool tb = gemm.attr_int("transB", 0) != 0;
  std::vector<double> b = B.constant().to_f64();
  const int64_t rows = B.shape()[0], cols = B.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) b[static_cast<std::size_t>(r * cols + c)] *= a.s[static_cast<std::size_t>(tb ? r : c)];
  }
  gemm.set_input(1, new_weight(g, B, B.dtype(), B.shape(), b));
  const Shape& y = gemm.output(0).shape();
  const int64_t M = y[0], N = y[1];
  if (!gemm.has_input(2) && !a.has_shift()) return;
  // C' = beta * C * s + t over the result's shape; kept [N] when C does not vary over rows.
  const double beta = gemm.attr_float("beta", 1.0);
  bool per_row = false;
  std::vector<double> c_full(static_cast<std::size_t>(M * N), 0.0);
  if (gemm.has_input(2)) {
    const Value& C = gemm.input(2);
    const Shape& cs = C.shape();
    per_row = cs.size() == 2 && cs[0] == M && M > 1;
    const std::vector<double> cv = C.constant().to_f64();
    // Unidirectional broadcast of C ([], [N], [1,N], [M,1], [M,N], ...) to [M, N].
    const int64_t cr = cs.size() == 2 ? cs[0] : 1;
    const int64_t cc = cs.empty() ? 1 : cs.back();
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        const int64_t i = (cr == 1 ? 0 : m) * cc + (cc == 1 ? 0 : n);
        c_full[static_cast<std::size_t>(m * N + n)] = beta * cv[static_cast<std::size_t>(i)];
      }
    }
  }
  const int64_t rows_out = per_row ? M : 1;
  std::vector<double> c2(static_cast<std::size_t>(rows_out * N));
  for (int64_t m = 0; m < rows_out; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      c2[static_cast<std::size_t>(m * N + n)] =
          c_full[static_cast<std::size_t>(m * N + n)] * a.s[static_cast<std::size_t>(n)] + a.t[static_cast<std::size_t>(n)];
    }
  }
  const Shape c_shape = per_row ? Shape{M, N} : Shape{N};
  Value* nc = gemm.has_input(2) ? new_weight(g, gemm.input(2), B.dtype(), c_shape, c2)
                                : g.add_constant(gemm.name() + ".C_folded", Tensor::from_f64(B.dtype(), c_shape, c2), true);
  gemm.set_input(2, nc);
  gemm.set_attr_float("beta", 1.0);
  if (gemm.opset() < 7 && c_shape != y) gemm.set_attr_int("broadcast", 1);
}

/// Scales B's columns; returns the bias constant when t is not all zero.
Value* fold_into_matmul(Graph& g, Node& mm, const Affine& a, const std::string& folded) {
  const Value& B = mm.input(1);
  std::vector<double> b = B.constant().to_f64();
  const int64_t rows = B.shape()[0], cols = B.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) b[static_cast<std::size_t>(r * cols + c)] *= a.s[static_cast<std::size_t>(c)];
  }
  mm.set_input(1, new_weight(g, B, B.dtype(), B.shape(), b));
  if (!a.has_shift()) return nullptr;
  return g.add_constant(folded + ".bias_folded", Tensor::from_f64(B.dtype(), {cols}, a.t), true);
}

bool is_transpose(const Node& n) {
  return (n.domain().empty() || n.domain() == "ai.onnx") && n.op() == "Transpose" && n.has_input(0) &&
         n.has_output(0) && n.num_outputs() == 1;
}

/// The squared FP16 rounding error of x (in double).
double fp16_error2(double x) {
  const double r = mc_half::half_bits_to_float(mc_half::float_to_half_bits(static_cast<float>(x)));
  return (r - x) * (r - x);
}

/// --fp16: true when B [K, N] with its columns scaled by s rounds to FP16 more than
/// kFp16FoldErrorRatio times worse (in L2) than B rounded, then scaled: a small scale would put the
/// folded weights in FP16's subnormals. BF16 keeps FP32's exponent range: never.
bool fp16_fold_loses(const Value& B, const std::vector<double>& s, const PassOptions& o, double* ratio) {
  if (o.half_type() != DType::float16) return false;
  const std::vector<double> b = B.constant().to_f64();
  const int64_t rows = B.shape()[0], cols = B.shape()[1];
  double folded = 0, scaled = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double w = b[static_cast<std::size_t>(r * cols + c)], k = s[static_cast<std::size_t>(c)];
      folded += fp16_error2(w * k);
      scaled += fp16_error2(w) * k * k;
    }
  }
  *ratio = scaled > 0 ? std::sqrt(folded / scaled) : folded > 0 ? INFINITY : 1.0;
  return folded > kFp16FoldErrorRatio * kFp16FoldErrorRatio * scaled;
}

/// MatMul p (a constant 2-D B) -> [Add (bias)] -> [Transpose] -> a per-channel scale: folds the
/// scale into B and the bias (the header's second form). False when the chain is not that form, or
/// the fold is refused (fp16_fold_loses).
bool fold_after_bias(Graph& g, Node& p, const PassOptions& o) {
  Value* y = &p.output(0);
  const int64_t N = p.input(1).shape()[1];
  int64_t axis = y->rank() - 1;
  Node* bias_add = nullptr;
  Node* transpose = nullptr;
  Node* u = sole_user(*y);
  std::vector<double> bias;
  int bias_input = -1;
  if (u && !is_transpose(*u)) {  // the bias: Add of a constant varying at most along the last dim
    std::optional<Affine> b = affine_of(*u, *y, axis);
    if (!b || !b->is_bias_op || u->op() != "Add" || !b->finite()) return false;
    bias_add = u;
    bias = b->t;
    bias_input = &u->input(0) == y ? 1 : 0;
    y = &u->output(0);
    u = sole_user(*y);
  }
  if (u && is_transpose(*u) && u->input_ptr(0) == y) {
    const std::vector<int64_t> perm = ops::transpose_perm(*u, y->rank());
    const auto at = std::find(perm.begin(), perm.end(), axis);
    if (at == perm.end()) return false;
    axis = at - perm.begin();
    transpose = u;
    y = &u->output(0);
    u = sole_user(*y);
  }
  if (!u || (!bias_add && !transpose)) return false;
  std::optional<Affine> a = affine_of(*u, *y, axis);
  if (!a || !a->finite() || static_cast<int64_t>(a->s.size()) != N) return false;
  if (a->is_bias_op || (a->has_shift() && !bias_add)) return false;  // a scale; a shift needs the bias Add
  double ratio = 1;
  if (fp16_fold_loses(p.input(1), a->s, o, &ratio)) {
    // The reason reaches the kernel's note (schedule/choose_tactics.cpp reads kNoteAttribute).
    char r[32];
    std::snprintf(r, sizeof r, "%.3g", ratio);
    u->set_attr_string(kNoteAttribute, std::string("scale not folded into the FP16 weights of ") + p.op() + " '" +
                                           p.name() + "': B scaled by it rounds " + r +
                                           "x worse (relative L2) than B, scaled (FP16's subnormals, below 2^-14; "
                                           "the limit is 1.25x)");
    return false;
  }
  std::vector<std::string> covers = covers_of(p);
  for (const std::string& c : covers_of(*u)) covers.push_back(c);
  Affine scale = *a;
  scale.t.assign(scale.t.size(), 0.0);
  fold_into_matmul(g, p, scale, u->name());
  if (bias_add) {
    for (std::size_t c = 0; c < bias.size(); ++c) bias[c] = bias[c] * a->s[c] + a->t[c];
    const Value& old = bias_add->input(bias_input);
    bias_add->set_input(bias_input, new_weight(g, old, old.dtype(), old.numel() == N ? old.shape() : Shape{N}, bias));
  }
  Value* out = &u->output(0);
  Node* last = transpose ? transpose : bias_add;
  g.remove_node(u);
  last->set_output(0, out);
  p.set_covers(covers);
  return true;
}

}  // namespace

bool fold_batchnorm(Graph& g, const PassOptions& o) {
  std::vector<Node*> producers;
  for (const auto& up : g.nodes()) {
    if (producer_kind(*up)) producers.push_back(up.get());
  }
  bool changed = false;
  for (Node* p : producers) {
    for (;;) {
      const std::optional<Kind> kind = producer_kind(*p);  // weights may no longer be foldable
      if (!kind) break;
      Value& y = p->output(0);
      Node* u = sole_user(y);
      if (!u) break;
      if (*kind == Kind::matmul && is_transpose(*u)) {  // a scale after the Transpose
        if (fold_after_bias(g, *p, o)) changed = true;
        break;
      }
      std::optional<Affine> a = affine_of(*u, y, channel_axis(*kind, y.rank()));
      if (!a || !a->finite()) break;
      if (*kind == Kind::matmul && a->is_bias_op) {
        // A MatMul's bias is fuse_epilogue's; a scale after it (and a Transpose) folds here.
        if (fold_after_bias(g, *p, o)) changed = true;
        break;
      }

      if (*kind == Kind::matmul && static_cast<int64_t>(a->s.size()) != p->input(1).shape()[1]) break;

      std::vector<std::string> covers = covers_of(*p);
      for (const std::string& c : covers_of(*u)) covers.push_back(c);
      Value* out = &u->output(0);
      const std::string folded = u->name();
      Node* after = next_node(g, u);
      Value* bias = nullptr;
      if (*kind == Kind::conv) fold_into_conv(g, *p, *a);
      if (*kind == Kind::gemm) fold_into_gemm(g, *p, *a);
      if (*kind == Kind::matmul) bias = fold_into_matmul(g, *p, *a, folded);
      g.remove_node(u);
      changed = true;
      if (bias) {
        // The shift stays as the MatMul's bias: an Add in the folded node's place.
        Node* add = g.add_node("Add", folded, {&y, bias}, {out}, after);
        add->set_opset(std::max(7, add->opset()));  // numpy broadcasting
        p->set_covers(covers);
        break;
      }
      p->set_output(0, out);
      p->set_covers(covers);
    }
  }
  if (changed) g.remove_dead();
  return changed;
}

}  // namespace modelc

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
// value keeps its name) and records it in Node::covers. Weights are computed in
// double, rounded to the weight's type, and stored as new constant Values: a
// shared initializer is never changed in place. ConvTranspose is not folded
// (its output channels are W's dim 1, per group); neither is BN with
// spatial=0, nor an affine op whose constant would change Y's shape.
//
// Needs: shapes inferred, constants folded (weights are constant Values).
// Leaves: no BatchNormalization, constant Mul/Div or Conv/Gemm constant Add/Sub
// right after a producer whose output has no other reader.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/normalization.h"
#include "ops/registry.h"
#include "passes/activation_patterns.h"
#include "passes/pass.h"

namespace modelc {

namespace {

enum class Kind { conv, gemm, matmul };

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
std::optional<Affine> affine_of(const Node& u, const Value& y, Kind kind) {
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
  const int64_t axis = channel_axis(kind, rank);
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

}  // namespace

bool fold_batchnorm(Graph& g, const PassOptions&) {
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
      std::optional<Affine> a = affine_of(*u, y, *kind);
      if (!a || !a->finite()) break;
      if (*kind == Kind::matmul && a->is_bias_op) break;  // a MatMul's bias: fuse_epilogue's
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

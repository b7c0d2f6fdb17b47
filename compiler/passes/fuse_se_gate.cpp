// compiler/passes/fuse_se_gate.cpp — the gate of a squeeze-and-excite block, as exporters write it,
// becomes one modelc.SEGate node (ops/se_gate.h) run by one kernel (templates/se_gate.cuh).
//
// The match starts at each pool of a rank-4 value X [N, C, H, W] that two products follow (the
// pooled value, or a view of it, read by a product whose result a product reads: se_shaped; a
// classifier's pool is no candidate and gets no outcome):
//   pool  GlobalAveragePool(X), or ReduceMean(X) over axes {2, 3} (attribute or constant input;
//         negative axes count from the end) with keepdims 1;
//   view  optionally a Flatten (axis 1), Reshape or Squeeze of the pooled [N, C, 1, 1] to [N, C];
//   FC1   the pooled value's one reader: a FusedConv 1x1 (group 1, stride 1, no pads, dilation 1, no
//         residual) with constant W [S, C, 1, 1]; or a FusedGemm (transA 0, alpha 1, beta 1 where it
//         has a bias) with constant B ([S, C] with transB 1, [C, S] without); or a FusedMatMul (alpha
//         1) with constant B [C, S]; an optional constant bias of S values; its activation (any a
//         fused epilogue has: ReLU, SiLU, HardSwish, ...);
//         or an unfused Conv / Gemm / MatMul followed by its activation node(s) (match_activation), or
//         by Cast to float32, the activation, Cast back (an activation precision keeps in FP32: BF16's
//         HardSigmoid; the kernel computes it in FP32 anyway);
//   FC2   FC1's one reader, the same forms (S -> C) with the gate for its activation: sigmoid or
//         hard_sigmoid;
//   out   FC2's output when it is [N, C, 1, 1] (the Conv form); for [N, C] (the Gemm / MatMul form)
//         its one reader, a Reshape or Unsqueeze to [N, C, 1, 1].
// Every value between the pool and the out value must have its one reader in the match (the pooled
// vector or the hidden units read elsewhere keep the unfused chain). The op writes the out value;
// the Mul(X, out) that applies the gate is not part of the match.
//
// The kernel's constraints, checked here, the reason recorded when one fails: X, the weights and
// the biases of one float type (float32, float16, bfloat16: an INT8 compile's quantized pool stays as
// it is), constant weights and biases, C + S at most kMaxChannels (the pooled and hidden vectors in
// a block's static shared memory).
//
// Needs: shapes inferred, constants folded, the epilogues fused (fuse_epilogue). Leaves: the matched
// nodes replaced by the op; the pool's X untouched.
#include "passes/fuse_se_gate.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "ops/se_gate.h"
#include "passes/activation_patterns.h"

namespace modelc {

namespace {

using namespace fusion;

/// The pooled and hidden vectors the kernel holds in shared memory (FP32; 48 KiB of static shared
/// memory less the block's partial sums).
constexpr int64_t kMaxChannels = 11000;

struct Refused {
  std::string reason;
};

bool modelc_op(const Node* n, const char* op) { return n && n->domain() == ops::kModelcDomain && n->op() == op; }

/// One FC: its node, its weight as [out, in] (row-major) and its bias (out values), and its activation.
struct Fc {
  Node* node = nullptr;
  Tensor w;
  Tensor b;
  ops::EpilogueActivation act;
  std::vector<Node*> after;  ///< the activation's nodes where it is not fused (and its Casts), in order
  Value* out = nullptr;      ///< the FC's result after its activation
};

std::string named(const Node& n) { return n.op() + " '" + n.name() + "'"; }

/// The only reader of v (not a graph output), or a refusal naming `what`.
Node* only_reader(const Value& v, const std::string& what) {
  if (v.is_graph_output()) throw Refused{what + " ('" + v.name() + "') is a model output"};
  if (v.users().size() != 1) {
    throw Refused{what + " ('" + v.name() + "') has " + std::to_string(v.users().size()) +
                  " readers: the fused kernel keeps it in shared memory"};
  }
  return v.users()[0];
}

/// A constant tensor of `rows` x `cols` elements read as [rows, cols] (transposed when `transposed`:
/// stored [cols, rows]) -> [rows, cols] row-major, in its own dtype.
Tensor as_matrix(const Tensor& t, int64_t rows, int64_t cols, bool transposed) {
  const std::vector<double> v = t.to_f64();
  if (!transposed) return Tensor::from_f64(t.dtype(), {rows, cols}, v);
  std::vector<double> r(v.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) r[static_cast<std::size_t>(i * cols + j)] = v[static_cast<std::size_t>(j * rows + i)];
  return Tensor::from_f64(t.dtype(), {rows, cols}, r);
}

/// The activation after an FC that has none fused: an activation node (SiLU's pair, HardSwish, ...)
/// on its result, or one that precision keeps in FP32 behind Casts (Cast to float32, the activation,
/// Cast back to the FC's type: BF16's HardSigmoid). Its nodes go to f.after, its result to f.out; an
/// FC without one keeps activation none.
void trailing_activation(Fc& f, const std::string& what) {
  Value* y = f.out;
  if (y->is_graph_output() || y->users().size() != 1) return;
  Node* cast = y->users()[0];
  const bool pinned = is_op(cast, "Cast") && cast->output(0).dtype() == DType::float32 && y->dtype() != DType::float32;
  const Value& x = pinned ? cast->output(0) : *y;
  const std::optional<ActivationMatch> a = match_activation(x);
  if (!a) return;
  std::vector<Node*> after;
  if (pinned) after.push_back(cast);
  after.insert(after.end(), a->nodes.begin(), a->nodes.end());
  Value* out = a->out;
  if (pinned) {
    Node* back = out->is_graph_output() || out->users().size() != 1 ? nullptr : out->users()[0];
    if (!is_op(back, "Cast") || back->output(0).dtype() != y->dtype()) {
      throw Refused{what + "'s activation runs in FP32 and its result is not cast back to " + dtype_name(y->dtype())};
    }
    after.push_back(back);
    out = &back->output(0);
  }
  f.act = a->act;
  f.after = std::move(after);
  f.out = out;
}

/// FC node n reading `in` ([N, cin] or [N, cin, 1, 1]) to `cout` channels, as one of the forms of the
/// file comment; a refusal otherwise.
Fc fc_of(Node* n, const Value& in, int64_t cin, const std::string& what) {
  Fc f;
  f.node = n;
  if (!n->has_input(0) || &n->input(0) != &in) throw Refused{what + " " + named(*n) + " reads the value as its weight"};
  const bool fused = n->domain() == ops::kModelcDomain;
  const bool conv = modelc_op(n, "FusedConv") || is_op(n, "Conv"), gemm = modelc_op(n, "FusedGemm") || is_op(n, "Gemm"),
             matmul = modelc_op(n, "FusedMatMul") || is_op(n, "MatMul");
  if (!conv && !gemm && !matmul) throw Refused{what + " is " + named(*n) + ": a 1x1 Conv, Gemm or MatMul is expected"};
  if (fused && n->has_input(ops::kFusedResidualInput)) throw Refused{what + " " + named(*n) + " adds a residual"};
  const Value& w = n->input(1);
  if (!w.is_constant()) throw Refused{what + " " + named(*n) + ": its weight '" + w.name() + "' is not constant"};
  int64_t cout = 0;
  if (conv) {
    const bool unit = n->attr_int("group", 1) == 1 && w.rank() == 4 && w.shape()[2] == 1 && w.shape()[3] == 1;
    auto all = [&](const char* a, int64_t v) {
      for (int64_t x : n->attr_ints(a)) {
        if (x != v) return false;
      }
      return true;
    };
    if (!unit || !all("strides", 1) || !all("pads", 0) || !all("dilations", 1) || w.shape()[1] != cin ||
        n->attr_string("auto_pad", "NOTSET") != "NOTSET") {
      throw Refused{what + " " + named(*n) + " is not a 1x1 convolution of " + std::to_string(cin) +
                    " channels (one group, stride 1, no pads)"};
    }
    cout = w.shape()[0];
    f.w = as_matrix(w.constant(), cout, cin, false);
  } else {
    const bool trans_b = gemm && n->attr_int("transB", 0) != 0;
    if (gemm && (n->attr_int("transA", 0) != 0 || n->attr_float("alpha", 1.0) != 1.0 ||
                 (n->has_input(ops::kFusedBiasInput) && n->attr_float("beta", 1.0) != 1.0))) {
      throw Refused{what + " " + named(*n) + " transposes A or scales (alpha, beta not 1)"};
    }
    if (matmul && n->attr_float("alpha", 1.0) != 1.0) throw Refused{what + " " + named(*n) + " scales (alpha not 1)"};
    if (w.rank() != 2 || w.shape()[trans_b ? 1 : 0] != cin) {
      throw Refused{what + " " + named(*n) + ": its weight '" + w.name() + "' is " + w.type_str() + ", not a " +
                    std::to_string(cin) + "-channel matrix"};
    }
    cout = w.shape()[trans_b ? 0 : 1];
    f.w = as_matrix(w.constant(), cout, cin, !trans_b);
  }
  const Value& y = n->output(0);
  const int64_t nimg = in.shape()[0];
  const bool flat = y.shape() == Shape{nimg, cout}, image = y.shape() == Shape{nimg, cout, 1, 1};
  if (!(flat && in.rank() == 2) && !(image && conv)) {
    throw Refused{what + " " + named(*n) + " writes " + y.type_str()};
  }
  if (n->has_input(ops::kFusedBiasInput)) {
    const Value& b = n->input(ops::kFusedBiasInput);
    if (!b.is_constant() || b.numel() != cout) {
      throw Refused{what + " " + named(*n) + ": its bias '" + b.name() + "' is not a constant of " +
                    std::to_string(cout) + " values"};
    }
    f.b = Tensor::from_f64(b.dtype(), {cout}, b.constant().to_f64());
  } else {
    f.b = Tensor::from_f64(w.dtype(), {cout}, std::vector<double>(static_cast<std::size_t>(cout), 0.0));
  }
  f.act = fused ? ops::activation_of_fused(*n) : ops::EpilogueActivation{};
  f.out = &n->output(0);
  if (f.act.kind == ops::Activation::none) trailing_activation(f, what);
  return f;
}

/// The spatial axes {2, 3} of a rank-4 ReduceMean, from its attribute or constant input.
bool spatial_mean(const Node& n) {
  if (n.attr_int("keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (n.has_input(1)) {
    if (!n.input(1).is_constant()) return false;
    for (double a : n.input(1).constant().to_f64()) axes.push_back(static_cast<int64_t>(a));
  } else {
    axes = n.attr_ints("axes");
  }
  for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
  std::sort(axes.begin(), axes.end());
  return axes == std::vector<int64_t>{2, 3};
}

bool product(const Node* n) {
  if (!n || n->num_outputs() < 1 || !n->has_output(0)) return false;
  const std::string& op = n->op();
  return op == "Conv" || op == "Gemm" || op == "MatMul" || op == "FusedConv" || op == "FusedGemm" || op == "FusedMatMul" ||
         op == "QConv" || op == "QMatMul";  // INT8's: candidates the kernel refuses, with the reason
}

/// A squeeze-and-excite candidate: the pooled value (or a view of it) read by a product whose
/// result another product reads — two FCs after the pool. A classifier's pool (one product, into
/// the model's output) is none, so models without squeeze-and-excite report nothing.
bool se_shaped(const Node& pool) {
  std::vector<const Value*> pooled{&pool.output(0)};
  for (const Node* u : pool.output(0).users()) {
    // The views the match takes, and INT8's QuantizeLinear (a candidate the kernel refuses, reported).
    if (is_op(u, "Flatten") || is_op(u, "Reshape") || is_op(u, "Squeeze") || is_op(u, "QuantizeLinear")) {
      pooled.push_back(&u->output(0));
    }
  }
  // FC2 within a few nodes of FC1 (an unfused activation, and the Casts around one kept in FP32).
  std::function<bool(const Value&, int)> reaches_product = [&](const Value& v, int depth) {
    for (const Node* u : v.users()) {
      if (product(u)) return true;
      if (depth > 0 && u->num_outputs() == 1 && u->has_output(0) && reaches_product(u->output(0), depth - 1)) return true;
    }
    return false;
  };
  for (const Value* v : pooled) {
    for (const Node* fc1 : v->users()) {
      if (product(fc1) && reaches_product(fc1->output(0), 3)) return true;
    }
  }
  return false;
}

struct Match {
  Node* pool = nullptr;
  std::vector<Node*> chain;  ///< the pool, the views, the FCs, the last reshape: in graph order
  Value* x = nullptr;
  Value* out = nullptr;
  Fc fc1, fc2;
};

Match match_at(Node* pool) {
  Match m;
  m.pool = pool;
  m.x = &pool->input(0);
  if (m.x->rank() != 4) throw Refused{"X ('" + m.x->name() + "') is " + m.x->type_str() + ": the kernel pools [N, C, H, W]"};
  const int64_t N = m.x->shape()[0], C = m.x->shape()[1];
  m.chain.push_back(pool);
  Value* v = &pool->output(0);
  Node* r = only_reader(*v, "the pooled vector");
  if (is_op(r, "Flatten") || is_op(r, "Reshape") || is_op(r, "Squeeze")) {
    if (r->output(0).shape() != Shape{N, C}) throw Refused{named(*r) + " makes " + r->output(0).type_str()};
    m.chain.push_back(r);
    v = &r->output(0);
    r = only_reader(*v, "the pooled vector");
  }
  if (is_op(r, "QuantizeLinear")) {
    throw Refused{"the pooled vector is quantized for an INT8 FC (" + named(*r) + "): the kernel reads float32, float16 or "
                  "bfloat16 weights"};
  }
  m.fc1 = fc_of(r, *v, C, "FC1");
  m.chain.push_back(r);
  m.chain.insert(m.chain.end(), m.fc1.after.begin(), m.fc1.after.end());
  const int64_t S = m.fc1.w.shape()[0];
  Value* h = m.fc1.out;
  Node* r2 = only_reader(*h, "FC1's output");
  m.fc2 = fc_of(r2, *h, S, "FC2");
  if (m.fc2.w.shape()[0] != C) {
    throw Refused{"FC2 " + named(*r2) + " makes " + std::to_string(m.fc2.w.shape()[0]) + " channels of X's " + std::to_string(C)};
  }
  if (m.fc2.act.kind != ops::Activation::sigmoid && m.fc2.act.kind != ops::Activation::hard_sigmoid) {
    throw Refused{std::string("the gate (FC2's activation) is ") + ops::activation_name(m.fc2.act.kind) +
                  ": the kernel's gate is sigmoid or hard_sigmoid"};
  }
  m.chain.push_back(r2);
  m.chain.insert(m.chain.end(), m.fc2.after.begin(), m.fc2.after.end());
  m.out = m.fc2.out;
  if (m.out->rank() == 2) {
    Node* r3 = only_reader(*m.out, "the gate");
    if (!(is_op(r3, "Reshape") || is_op(r3, "Unsqueeze")) || r3->output(0).shape() != Shape{N, C, 1, 1}) {
      throw Refused{"the gate [N, C] is read by " + named(*r3) + ", not reshaped to [N, C, 1, 1]"};
    }
    m.chain.push_back(r3);
    m.out = &r3->output(0);
  }
  // One float type through (an INT8 compile's pool of quantized values is not the op's).
  const DType t = m.x->dtype();
  if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) {
    throw Refused{std::string("X is ") + dtype_name(t) + ": the kernel reads float32, float16 or bfloat16"};
  }
  for (const Tensor* w : {&m.fc1.w, &m.fc1.b, &m.fc2.w, &m.fc2.b}) {
    if (w->dtype() != t) throw Refused{std::string("a weight is ") + dtype_name(w->dtype()) + ", X " + dtype_name(t)};
  }
  if (m.out->dtype() != t) throw Refused{std::string("the gate is ") + dtype_name(m.out->dtype()) + ", X " + dtype_name(t)};
  if (C + S > kMaxChannels) {
    throw Refused{std::to_string(C) + " + " + std::to_string(S) + " channels: the kernel holds at most " +
                  std::to_string(kMaxChannels) + " in shared memory"};
  }
  return m;
}

Node* replace(Graph& g, Match& m) {
  std::vector<std::string> covers;
  for (const Node* n : m.chain) {
    for (const std::string& c : covers_of(*n)) {
      if (std::find(covers.begin(), covers.end(), c) == covers.end()) covers.push_back(c);
    }
  }
  const std::string name = m.pool->name();
  const std::string base = m.fc1.node->input(1).name();
  Node* before = next_node(g, m.chain.back());
  Value* x = m.x;
  Value* out = m.out;
  Value* w1 = g.add_constant(base + "_se_w1", std::move(m.fc1.w), true);
  Value* b1 = g.add_constant(base + "_se_b1", std::move(m.fc1.b), true);
  Value* w2 = g.add_constant(m.fc2.node->input(1).name() + "_se_w2", std::move(m.fc2.w), true);
  Value* b2 = g.add_constant(m.fc2.node->input(1).name() + "_se_b2", std::move(m.fc2.b), true);
  const ops::EpilogueActivation act = m.fc1.act, gate = m.fc2.act;
  for (auto it = m.chain.rbegin(); it != m.chain.rend(); ++it) g.remove_node(*it);
  Node* s = g.add_node("SEGate", name, {x, w1, b1, w2, b2}, {out}, before);
  s->set_domain(ops::kModelcDomain);
  s->set_opset(1);
  s->set_covers(covers);
  ops::set_activation(*s, act);
  ops::set_gate(*s, gate);
  check_fused(*s);
  return s;
}

}  // namespace

bool fuse_se_gate(Graph& g, const PassOptions&, std::vector<SeGateOutcome>* outcomes) {
  std::vector<Node*> pools;
  for (const auto& up : g.nodes()) {
    Node* n = up.get();
    if (!n->has_input(0) || n->input(0).rank() != 4) continue;
    if ((is_op(n, "GlobalAveragePool") || (is_op(n, "ReduceMean") && spatial_mean(*n))) && se_shaped(*n)) {
      pools.push_back(n);
    }
  }
  // Matches never share a node (each starts at its own pool and owns the one-reader chain after it).
  bool changed = false;
  for (Node* p : pools) {
    SeGateOutcome r;
    r.pool = p->name();
    try {
      Match m = match_at(p);
      Node* s = replace(g, m);
      r.fused = true;
      r.fused_node = s->name();
      r.covers = s->covers();
      changed = true;
    } catch (const Refused& e) {
      r.reason = e.reason;
    }
    if (outcomes) outcomes->push_back(r);
  }
  if (changed) g.remove_dead();
  return changed;
}

bool fuse_se_gate(Graph& g, const PassOptions& o) { return fuse_se_gate(g, o, nullptr); }

}  // namespace modelc

// compiler/passes/fuse_attention.cpp — attention subgraphs as exporters write them become one
// modelc.Attention node (ops/attention.h) that reads Q, K and V straight out of the projection(s)
// that made them and writes its output where the output projection reads it.
//
// The match starts at each Softmax over the last dim and walks:
//   scores   back from the Softmax to the MatMul Q x K^T through scalar constant Mul / Div (the
//            scale), Add (a bias term: a relative position bias, a padding mask; constant or not),
//            Where(mask, -inf, s) / Where(mask, s, -inf) with a constant mask (GPT-2's masked_fill,
//            torch's boolean attn_mask) and Reshapes that regroup the leading dims and keep the last
//            two (swin's view to [B, nW, H, S, S] for its window mask, and back);
//   Q, K     back from the MatMul's operands through the view ops — Transpose, Reshape (where it is
//            a view: the merged dims are contiguous), Squeeze, Unsqueeze, Flatten, Slice (step > 0),
//            Split, Gather of one constant index — and scalar constant Mul / Div (torch's
//            scaled_dot_product_attention export scales q and k^T by sqrt(scale) each; swin and
//            nn.MultiheadAttention scale q) to the value they read (the projection's output): each
//            becomes a strided view of that value (ops::HeadView);
//   V        the same from the second MatMul's second operand;
//   O        forward from the second MatMul through Transposes and reshapes whose values have no
//            other reader: the op writes the last of them, O a view of it.
// Every value between the first MatMul and the op's output must have its one reader in the match.
//
// The canonical (batch, head) split of the scores' leading dims: [B, H] for rank-4 scores, [N, 1]
// for rank 3 (nn.MultiheadAttention's [B x H, S, S]); the leading dims of other ranks merge into B
// before the last. A view's leading offsets must then be b stride_b + h stride_h, and a bias term's
// (b % batches) stride_b + h stride_h (the window mask of a windowed transformer, [nW, 1, S, S] read
// over B x nW windows), checked for every (b, h).
//
// A constant bias (or Where mask) whose entries are 0 where j <= i + c and -inf (or below -1e30:
// finfo.min masks) above becomes the causal flag with offset c (for a finite fill only when c >= 0,
// where no row is fully masked and the two agree exactly); an all-zero term is dropped.
//
// The fused kernel's constraints (templates/attention.cuh), checked here, the reason recorded when
// one fails (the subgraph then stays as it is): FP16 / BF16 storage (--fp16, --bf16, --int8; an FP32
// compile keeps the unfused subgraph), BF16 only where every --arch is sm_80 or newer (PassOptions::
// min_sm), head dim a multiple of 8 up to 128 (V's the same), the head
// dim contiguous in Q, K, V and O, every view offset and stride a multiple of 8 elements (16-byte
// chunks), at most two bias terms.
//
// fuse_residual_norm: LayerNormalization over the last dim (its Mean / InvStdDev outputs unused) of
// h = Add(a, b), a and b of h's shape and type, becomes modelc.ResidualNorm(X, R, Gamma, Beta, Bias):
// X the operand that is a product's output plus a constant [N] bias (an Add of it, read only here),
// whose bias the op takes, or else input 0; R the other. When h has other readers (pre-norm blocks
// keep it for the next residual), the op's second output writes it. The kernel needs N a multiple
// of 8.
//
// Needs: shapes inferred, constants folded (fold_constants: the masks and scales), simplify (no
// Dropout or Identity inside a match). Leaves: the matched nodes replaced; the view ops that fed
// them removed when nothing else reads them.
#include "passes/fuse_attention.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/attention.h"
#include "ops/normalization.h"
#include "ops/registry.h"
#include "ops/residual_norm.h"
#include "ops/softmax.h"
#include "ops/tensor.h"
#include "passes/activation_patterns.h"

namespace modelc {

namespace {

using namespace fusion;

/// The reason a candidate stays unfused.
struct Refused {
  std::string reason;
};

// ---- strided views ---------------------------------------------------------------------------

/// \brief A tensor as a strided view of a value's row-major data: element idx at offset +
/// sum idx[k] strides[k].
struct Strided {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  static Strided contiguous(const Shape& s) {
    Strided v;
    v.shape = s;
    v.strides.assign(s.size(), 0);
    int64_t st = 1;
    for (std::size_t k = s.size(); k-- > 0;) {
      v.strides[k] = s[k] == 1 ? 0 : st;
      st *= s[k];
    }
    return v;
  }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }

  /// The view reshaped to `to` without moving data: each run of dims merged or split must be
  /// contiguous in the view. False when the reshape would need a copy.
  bool reshape(const Shape& to) {
    std::vector<int64_t> os, ot;  // the dims of extent > 1 (unit dims carry no layout)
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] == 0) return false;
      if (shape[k] != 1) {
        os.push_back(shape[k]);
        ot.push_back(strides[k]);
      }
    }
    std::vector<std::size_t> nidx;
    for (std::size_t k = 0; k < to.size(); ++k) {
      if (to[k] == 0) return false;
      if (to[k] != 1) nidx.push_back(k);
    }
    std::vector<int64_t> ns(to.size(), 0);
    std::size_t i = 0, j = 0;
    while (i < os.size() || j < nidx.size()) {
      if (i >= os.size() || j >= nidx.size()) return false;
      int64_t po = os[i], pn = to[nidx[j]];
      std::size_t i2 = i, j2 = j;
      while (po != pn) {
        if (po < pn) {
          if (++i2 >= os.size()) return false;
          po *= os[i2];
        } else {
          if (++j2 >= nidx.size()) return false;
          pn *= to[nidx[j2]];
        }
      }
      for (std::size_t k = i; k < i2; ++k) {
        if (ot[k] != ot[k + 1] * os[k + 1]) return false;  // the run is not contiguous
      }
      int64_t st = ot[i2];
      for (std::size_t k = j2 + 1; k-- > j;) {
        ns[nidx[k]] = st;
        st *= to[nidx[k]];
      }
      i = i2 + 1;
      j = j2 + 1;
    }
    shape = to;
    strides = ns;
    return true;
  }
  void transpose(const std::vector<int64_t>& perm) {
    Shape s(perm.size());
    std::vector<int64_t> t(perm.size());
    for (std::size_t k = 0; k < perm.size(); ++k) {
      s[k] = shape[static_cast<std::size_t>(perm[k])];
      t[k] = strides[static_cast<std::size_t>(perm[k])];
    }
    shape = s;
    strides = t;
  }
  void narrow(int64_t axis, int64_t start, int64_t step, int64_t count) {
    const auto a = static_cast<std::size_t>(axis);
    offset += start * strides[a];
    strides[a] = count == 1 ? 0 : strides[a] * step;
    shape[a] = count;
  }
  void select(int64_t axis, int64_t index) {
    const auto a = static_cast<std::size_t>(axis);
    offset += index * strides[a];
    shape.erase(shape.begin() + axis);
    strides.erase(strides.begin() + axis);
  }
  /// Broadcast to `lead` leading dims (right-aligned, as MatMul broadcasts its batch dims): unit or
  /// missing dims get stride 0 and lead's extent. The last `keep` dims stay as they are.
  bool broadcast_lead(const Shape& lead, int64_t keep) {
    const int64_t mine = rank() - keep;
    if (mine > static_cast<int64_t>(lead.size())) return false;
    Shape s(lead);
    std::vector<int64_t> t(lead.size(), 0);
    for (int64_t k = 0; k < mine; ++k) {
      const auto dst = static_cast<std::size_t>(static_cast<int64_t>(lead.size()) - mine + k);
      const auto src = static_cast<std::size_t>(k);
      if (shape[src] == lead[dst]) {
        t[dst] = strides[src];
      } else if (shape[src] != 1) {
        return false;
      }
    }
    for (int64_t k = mine; k < rank(); ++k) {
      s.push_back(shape[static_cast<std::size_t>(k)]);
      t.push_back(strides[static_cast<std::size_t>(k)]);
    }
    shape = s;
    strides = t;
    return true;
  }
};

/// The index of flat position n over `dims` (C order).
std::vector<int64_t> unravel(int64_t n, const Shape& dims) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (std::size_t k = dims.size(); k-- > 0;) {
    idx[k] = n % dims[k];
    n /= dims[k];
  }
  return idx;
}

/// A scalar float constant's value.
std::optional<double> scalar_of(const Value* v) {
  if (!v || !v->is_constant() || v->numel() != 1 || !is_float(v->dtype())) return std::nullopt;
  return v->constant().f64_at(0);
}

/// For Mul(x, c), Mul(c, x), Div(x, c) with c a scalar constant: x and the factor (1 / c for Div).
std::optional<std::pair<Value*, double>> scalar_factor(const Node& n) {
  if (!default_domain(n) || n.num_inputs() != 2 || !n.has_input(0) || !n.has_input(1)) return std::nullopt;
  if (n.op() == "Mul") {
    if (auto c = scalar_of(&n.input(1))) return std::make_pair(&n.input(0), *c);
    if (auto c = scalar_of(&n.input(0))) return std::make_pair(&n.input(1), *c);
  } else if (n.op() == "Div") {
    if (auto c = scalar_of(&n.input(1)); c && *c != 0.0) return std::make_pair(&n.input(0), 1.0 / *c);
  }
  return std::nullopt;
}

bool is_reshape_like(const Node& n) {
  const std::string& op = n.op();
  return default_domain(n) && (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten" ||
                               op == "Identity");
}

// ---- tracing an operand to the value it reads ------------------------------------------------

/// \brief An operand of a product as a view of the value it reads.
struct Traced {
  Value* source = nullptr;
  Strided view;        ///< the operand's shape, as a view of source's data
  double factor = 1.0;  ///< scalar constants it was multiplied by on the way
  std::vector<Node*> steps;  ///< the view ops and factors on the way, the operand's producer first
};

/// One step back: the node making v and which output. True (and `data`) when the node is a view op
/// or a scalar factor whose data input is `data`.
bool step_back(const Value& v, Value*& data) {
  Node* p = v.producer();
  if (!p || !default_domain(*p) || !p->has_input(0)) return false;
  const std::string& op = p->op();
  if (is_reshape_like(*p) || op == "Transpose" || op == "Split") {
    data = &p->input(0);
    return true;
  }
  if (op == "Slice") {
    try {
      for (const ops::SliceRange& r : ops::slice_ranges(*p, p->input(0).shape(), ops::slice_params(*p))) {
        if (r.step < 1) return false;
      }
    } catch (const Error&) {
      return false;  // computed at run time
    }
    data = &p->input(0);
    return true;
  }
  if (op == "Gather") {
    const Value* idx = p->input_ptr(1);
    if (!idx || !idx->is_constant() || idx->numel() != 1 || idx->rank() > 1) return false;
    data = &p->input(0);
    return true;
  }
  if (auto f = scalar_factor(*p)) {
    data = f->first;
    return true;
  }
  return false;
}

/// Applies node p (which made `out` from its data input, already a view `v`) to v.
bool apply_forward(const Node& p, const Value& out, Strided& v, double& factor) {
  const std::string& op = p.op();
  const Shape& in = p.input(0).shape();
  if (is_reshape_like(p)) return v.reshape(out.shape());
  if (op == "Transpose") {
    v.transpose(ops::transpose_perm(p, static_cast<int64_t>(in.size())));
    return true;
  }
  if (op == "Slice") {
    for (const ops::SliceRange& r : ops::slice_ranges(p, in, ops::slice_params(p))) v.narrow(r.axis, r.start, r.step, r.count);
    return true;
  }
  if (op == "Split") {
    const ops::SplitParts parts = ops::split_parts(p, in);
    const auto k = static_cast<std::size_t>(std::find(p.outputs().begin(), p.outputs().end(), &out) - p.outputs().begin());
    int64_t start = 0;
    for (std::size_t j = 0; j < k; ++j) start += parts.sizes[j];
    v.narrow(parts.axis, start, 1, parts.sizes[k]);
    return true;
  }
  if (op == "Gather") {
    const int64_t axis = ops::gather_axis(p, in);
    int64_t i = p.input(1).constant().i64_at(0);
    if (i < 0) i += in[static_cast<std::size_t>(axis)];
    if (i < 0 || i >= in[static_cast<std::size_t>(axis)]) return false;
    if (p.input(1).rank() == 0) {
      v.select(axis, i);
    } else {
      v.narrow(axis, i, 1, 1);
    }
    return true;
  }
  if (auto f = scalar_factor(p)) {
    factor *= f->second;
    return true;
  }
  return false;
}

/// `operand` back through view ops and scalar factors to the value it reads.
std::optional<Traced> trace_back(Value* operand) {
  std::vector<Value*> chain;  // operand, ..., the source
  Value* v = operand;
  chain.push_back(v);
  for (Value* data = nullptr; step_back(*v, data); v = data) chain.push_back(data);
  Traced t;
  t.source = chain.back();
  for (std::size_t k = 0; k + 1 < chain.size(); ++k) t.steps.push_back(chain[k]->producer());
  t.view = Strided::contiguous(t.source->shape());
  for (std::size_t k = chain.size() - 1; k-- > 0;) {
    const Value& out = *chain[k];
    if (!apply_forward(*out.producer(), out, t.view, t.factor) || t.view.shape != out.shape()) return std::nullopt;
  }
  return t;
}

// ---- the canonical (batch, head) frame and the views' fits ----------------------------------

struct Frame {
  int64_t B = 1, H = 1;
};

Frame frame_of(const Shape& lead) {
  Frame f;
  if (lead.empty()) return f;
  int64_t n = 1;
  for (int64_t d : lead) n *= d;
  f.H = lead.size() >= 2 ? lead.back() : 1;
  f.B = n / f.H;
  return f;
}

/// A view over a product's leading dims `lead` (then its last two): its (stride_b, stride_h) over
/// the canonical frame, or nullopt when its leading offsets are not b stride_b + h stride_h.
std::optional<std::pair<int64_t, int64_t>> fit_lead(const Strided& v, const Shape& lead, const Frame& f) {
  auto off = [&](int64_t n) {
    const std::vector<int64_t> idx = unravel(n, lead);
    int64_t o = 0;
    for (std::size_t k = 0; k < idx.size(); ++k) o += idx[k] * v.strides[k];
    return o;
  };
  const int64_t sh = f.H > 1 ? off(1) : 0, sb = f.B > 1 ? off(f.H) : 0;
  if (sh < 0 || sb < 0) return std::nullopt;
  for (int64_t b = 0; b < f.B; ++b)
    for (int64_t h = 0; h < f.H; ++h) {
      if (off(b * f.H + h) != b * sb + h * sh) return std::nullopt;
    }
  return std::make_pair(sb, sh);
}

/// Q / V / O: a [lead..., S, D] view with D contiguous as a HeadView; K^T ([lead..., D, S]) with
/// `transposed`.
std::optional<ops::HeadView> head_view(const Strided& v, const Shape& lead, const Frame& f, bool transposed,
                                       std::string& why, const char* what) {
  const std::size_t r = v.shape.size();
  const int64_t d_stride = transposed ? v.strides[r - 2] : v.strides[r - 1];
  const int64_t s_stride = transposed ? v.strides[r - 1] : v.strides[r - 2];
  const int64_t D = transposed ? v.shape[r - 2] : v.shape[r - 1];
  if (d_stride != 1 && D > 1) {
    why = std::string("the head dim of ") + what + " is not contiguous in the value it reads (stride " +
          std::to_string(d_stride) + ")";
    return std::nullopt;
  }
  if (s_stride < 0) {
    why = std::string(what) + " runs backwards along the sequence";
    return std::nullopt;
  }
  auto lead_fit = fit_lead(v, lead, f);
  if (!lead_fit) {
    why = std::string(what) + "'s batch and head offsets are not b stride_b + h stride_h";
    return std::nullopt;
  }
  return ops::HeadView{v.offset, lead_fit->first, lead_fit->second, s_stride};
}

/// A bias term (of shape `c`, added to scores of frame shape `frame`) as a BiasView over the canonical
/// frame (whose leading dims flatten to the same order as `frame`'s).
std::optional<ops::BiasView> bias_view(const Shape& c, const Shape& frame, const Frame& f) {
  const std::size_t fr = frame.size();
  if (c.size() > fr) return std::nullopt;
  // c's dims right-aligned on the frame's; contiguous strides, 0 where c broadcasts.
  std::vector<int64_t> st(fr, 0);
  int64_t s = 1;
  for (std::size_t k = fr; k-- > fr - c.size();) {
    const int64_t d = c[k - (fr - c.size())];
    if (d != 1 && d != frame[k]) return std::nullopt;
    st[k] = d == 1 ? 0 : s;
    s *= d;
  }
  const Shape lead(frame.begin(), frame.end() - 2);
  auto off = [&](int64_t b, int64_t h) {
    const std::vector<int64_t> idx = unravel(b * f.H + h, lead);
    int64_t o = 0;
    for (std::size_t k = 0; k < idx.size(); ++k) o += idx[k] * st[k];
    return o;
  };
  // The smallest period of the batch index (a window mask repeats every nW batches).
  int64_t period = f.B;
  for (int64_t p = 1; p <= f.B; ++p) {
    if (f.B % p != 0) continue;
    bool ok = true;
    for (int64_t b = p; b < f.B && ok; ++b)
      for (int64_t h = 0; h < f.H && ok; ++h) ok = off(b, h) == off(b % p, h);
    if (ok) {
      period = p;
      break;
    }
  }
  ops::BiasView v;
  v.offset = off(0, 0);
  v.batches = period;
  v.stride_b = period > 1 ? off(1, 0) - v.offset : 0;
  v.stride_h = f.H > 1 ? off(0, 1) - v.offset : 0;
  v.stride_q = st[fr - 2];
  v.stride_k = st[fr - 1];
  if (v.stride_b < 0 || v.stride_h < 0) return std::nullopt;
  for (int64_t b = 0; b < period; ++b)
    for (int64_t h = 0; h < f.H; ++h) {
      if (off(b, h) != v.offset + b * v.stride_b + h * v.stride_h) return std::nullopt;
    }
  return v;
}

/// A masked score: -inf, or a finfo.min-like fill.
bool masks(double x) { return x == -INFINITY || x <= -1e30; }

/// A constant additive term of frame shape `frame` that is a causal mask: equal for every leading
/// index, 0 where j <= i + c and masked above. Returns c.
std::optional<int64_t> causal_offset(const Tensor& t, const Shape& frame) {
  const int64_t Sq = frame[frame.size() - 2], Skv = frame.back();
  for (std::size_t k = 0; k + 2 < static_cast<std::size_t>(t.rank()); ++k) {
    if (t.shape()[k] != 1) return std::nullopt;
  }
  if (t.rank() < 2 || t.shape()[static_cast<std::size_t>(t.rank() - 2)] != Sq || t.shape().back() != Skv) return std::nullopt;
  const std::vector<double> x = t.to_f64();
  std::optional<int64_t> c;
  bool finite_fill = false;
  for (int64_t i = 0; i < Sq && !c; ++i) {
    int64_t visible = 0;
    while (visible < Skv && x[static_cast<std::size_t>(i * Skv + visible)] == 0.0) ++visible;
    if (visible > 0 && visible < Skv) c = visible - 1 - i;
  }
  if (!c) return std::nullopt;
  for (int64_t i = 0; i < Sq; ++i)
    for (int64_t j = 0; j < Skv; ++j) {
      const double v = x[static_cast<std::size_t>(i * Skv + j)];
      if (j <= i + *c ? v != 0.0 : !masks(v)) return std::nullopt;
      if (j > i + *c && v != -INFINITY) finite_fill = true;
    }
  if (finite_fill && *c < 0) return std::nullopt;  // a fully masked row would differ
  return c;
}

bool all_zero(const Tensor& t) {
  for (double x : t.to_f64()) {
    if (x != 0.0) return false;
  }
  return true;
}

// ---- the match ---------------------------------------------------------------------------------

/// A bias term: the value added (or, for a Where mask, the additive 0 / -inf constant made of it,
/// added to the graph only when the match is fused), and the scores' shape where it is added.
struct Term {
  Value* value = nullptr;
  std::optional<Tensor> made;
  std::string name;
  Shape frame;
  const Shape& shape() const { return value ? value->shape() : made->shape(); }
};

struct Match {
  std::vector<Node*> chain;  ///< the nodes replaced, in graph order: Q K^T ... P V, the output views
  Value* out = nullptr;      ///< what the op writes
  Value *q = nullptr, *k = nullptr, *v = nullptr;
  std::vector<Term> bias;
  ops::AttentionSpec spec;
  std::vector<Node*> operand_steps;  ///< Q's, K's and V's view ops and factors (Traced::steps)
};

/// The value of an Add / Where operand that leads (through the score chain's ops) to a MatMul.
bool reaches_product(const Value* v, int depth = 0) {
  const Node* p = v->producer();
  if (!p || depth > 16 || !default_domain(*p)) return false;
  if (p->op() == "MatMul") return true;
  if (p->op() == "Add" || p->op() == "Mul" || p->op() == "Div" || p->op() == "Reshape" || p->op() == "Where") {
    for (const Value* in : p->inputs()) {
      if (in && !in->is_constant() && reaches_product(in, depth + 1)) return true;
    }
  }
  return false;
}

bool is_neg_inf_scalar(const Value* v) {
  auto x = scalar_of(v);
  return x && *x == -INFINITY;
}

/// Builds the match of the Softmax `sm`, or says why there is none.
Match match_at(Node& sm) {
  Match m;
  const Value& sm_in = sm.input(0);
  const int64_t rank = sm_in.rank();
  const ops::SoftmaxDims sd = ops::softmax_dims(sm, rank);
  if (rank < 2 || sd.axis != rank - 1) throw Refused{"the softmax is not over the last dim"};
  Node* pv = sole_user(sm.output(0));
  if (!is_op(pv, "MatMul") || pv->input_ptr(0) != &sm.output(0)) {
    throw Refused{"the softmax's output is not read by one MatMul only (as its first operand)"};
  }

  // The score chain, from the Softmax back to Q x K^T.
  std::vector<std::pair<Node*, Value*>> back;  // (node, its score operand), the Softmax's producer first
  Value* cur = &sm.input(0);
  Node* qk = nullptr;
  for (Node* next = &sm;;) {
    if (sole_user(*cur) != next) throw Refused{"'" + cur->name() + "' has readers outside the attention"};
    Node* p = cur->producer();
    if (!p || !default_domain(*p)) throw Refused{"the scores do not come from a MatMul"};
    if (is_op(p, "MatMul")) {
      qk = p;
      break;
    }
    Value* data = nullptr;
    if (auto f = scalar_factor(*p)) {
      data = f->first;
    } else if (is_op(p, "Reshape")) {
      data = &p->input(0);
    } else if (is_op(p, "Add") && p->num_inputs() == 2) {
      const bool r0 = !p->input(0).is_constant() && reaches_product(&p->input(0));
      const bool r1 = !p->input(1).is_constant() && reaches_product(&p->input(1));
      if (r0 == r1) throw Refused{"Add '" + p->name() + "': cannot tell the scores from the bias"};
      data = r0 ? &p->input(0) : &p->input(1);
    } else if (is_op(p, "Where") && p->num_inputs() == 3) {
      if (is_neg_inf_scalar(p->input_ptr(1))) {
        data = &p->input(2);
      } else if (is_neg_inf_scalar(p->input_ptr(2))) {
        data = &p->input(1);
      } else {
        throw Refused{"Where '" + p->name() + "' does not select -inf"};
      }
      if (!p->input(0).is_constant()) throw Refused{"Where '" + p->name() + "': the mask is computed at run time"};
    } else {
      throw Refused{"the scores pass through " + p->op() + " '" + p->name() + "'"};
    }
    back.push_back({p, data});
    next = p;
    cur = data;
  }
  const Shape& s_shape = qk->output(0).shape();
  if (s_shape.size() < 2) throw Refused{"the scores have rank below 2"};
  const Shape lead(s_shape.begin(), s_shape.end() - 2);
  const Frame f = frame_of(lead);
  const int64_t Sq = s_shape[s_shape.size() - 2], Skv = s_shape.back();

  // Forward through the chain: the scale, the bias terms, the frame changes.
  double scale = 1.0;
  std::vector<Term> terms;
  bool causal = false;
  int64_t causal_at = 0;
  Shape frame = s_shape;
  for (auto it = back.rbegin(); it != back.rend(); ++it) {
    Node* p = it->first;
    const Value* scores = it->second;
    if (auto fac = scalar_factor(*p)) {
      if (!terms.empty() || causal) throw Refused{"a scale ('" + p->name() + "') after a bias term"};
      scale *= fac->second;
    } else if (p->op() == "Reshape") {
      const Shape& to = p->output(0).shape();
      if (to.size() < 2 || to[to.size() - 2] != Sq || to.back() != Skv) {
        throw Refused{"Reshape '" + p->name() + "' changes the scores' last two dims"};
      }
      frame = to;
    } else {
      if (p->output(0).shape() != frame) throw Refused{"'" + p->name() + "' broadcasts the scores"};
      Term term;
      term.frame = frame;
      if (p->op() == "Add") {
        term.value = p->input_ptr(0) == scores ? &p->input(1) : &p->input(0);
      } else {  // Where(mask, -inf, s) or Where(mask, s, -inf): an additive 0 / -inf constant
        const bool masked_if_true = is_neg_inf_scalar(p->input_ptr(1));
        const Tensor& cond = p->input(0).constant();
        std::vector<double> add;
        for (double c : cond.to_f64()) add.push_back((c != 0.0) == masked_if_true ? -INFINITY : 0.0);
        term.made = Tensor::from_f64(p->output(0).dtype(), cond.shape(), add);
        term.name = p->name() + "_additive_mask";
      }
      const Tensor* constant = term.made ? &*term.made : term.value->is_constant() ? &term.value->constant() : nullptr;
      if (constant) {
        if (all_zero(*constant)) continue;
        if (auto c = causal_offset(*constant, frame); c && !causal) {
          causal = true;
          causal_at = *c;
          continue;
        }
      }
      terms.push_back(std::move(term));
    }
  }

  // Q and K^T, V.
  auto qt = trace_back(&qk->input(0));
  auto kt = trace_back(&qk->input(1));
  auto vt = trace_back(&pv->input(1));
  if (!qt || !kt || !vt) throw Refused{"Q, K or V is not a strided view of the value it reads"};
  if (qt->view.rank() < 2 || kt->view.rank() < 2 || vt->view.rank() < 2) throw Refused{"a product of a 1-D operand"};
  if (vt->factor != 1.0) throw Refused{"V is scaled"};
  scale *= qt->factor * kt->factor;
  const int64_t D = qt->view.shape.back();
  if (kt->view.shape[kt->view.shape.size() - 2] != D) throw Refused{"internal: Q and K^T disagree on the head dim"};
  if (vt->view.shape.back() != D) throw Refused{"V's head dim differs from Q's and K's"};
  const Shape& pv_shape = pv->output(0).shape();
  const Shape pv_lead(pv_shape.begin(), pv_shape.end() - 2);
  if (num_elements(pv_lead) != f.B * f.H) throw Refused{"the second product's batch dims differ from the scores'"};
  if (!qt->view.broadcast_lead(lead, 2) || !kt->view.broadcast_lead(lead, 2) || !vt->view.broadcast_lead(pv_lead, 2)) {
    throw Refused{"internal: the operands' batch dims do not broadcast"};
  }

  // The output: forward through view ops whose values have no other reader.
  std::vector<Node*> out_chain;
  Value* out = &pv->output(0);
  for (Node* u = sole_user(*out); u && (is_reshape_like(*u) || is_op(u, "Transpose")) && u->input_ptr(0) == out;
       u = sole_user(*out)) {
    out_chain.push_back(u);
    out = &u->output(0);
  }
  Strided ov = Strided::contiguous(out->shape());
  for (auto it = out_chain.rbegin(); it != out_chain.rend(); ++it) {
    const Node& u = **it;
    if (u.op() == "Transpose") {
      const std::vector<int64_t> perm = ops::transpose_perm(u, u.input(0).rank());
      std::vector<int64_t> inv(perm.size());
      for (std::size_t k = 0; k < perm.size(); ++k) inv[static_cast<std::size_t>(perm[k])] = static_cast<int64_t>(k);
      ov.transpose(inv);
    } else if (!ov.reshape(u.input(0).shape())) {
      throw Refused{"the output is not a view of '" + out->name() + "'"};
    }
  }

  std::string why;
  auto qv = head_view(qt->view, lead, f, false, why, "Q");
  auto kv = qv ? head_view(kt->view, lead, f, true, why, "K") : std::nullopt;
  auto vv = kv ? head_view(vt->view, pv_lead, f, false, why, "V") : std::nullopt;
  auto o = vv ? head_view(ov, pv_lead, f, false, why, "O") : std::nullopt;
  if (!o) throw Refused{why};

  ops::AttentionSpec& s = m.spec;
  s.batch = f.B;
  s.heads = f.H;
  s.kv_heads = f.H;
  s.q_length = Sq;
  s.kv_length = Skv;
  s.head_dim = D;
  s.q = *qv;
  s.k = *kv;
  s.v = *vv;
  s.o = *o;
  s.scale = scale;
  s.causal = causal;
  s.causal_offset = causal_at;
  s.output_shape = out->shape();
  for (Term& t : terms) {
    auto bv = bias_view(t.shape(), t.frame, f);
    if (!bv) {
      throw Refused{"bias term '" + (t.value ? t.value->name() : t.name) +
                    "' is not indexed (b % n, h, i, j) over the scores"};
    }
    s.bias.push_back(*bv);
    m.bias.push_back(std::move(t));
  }
  m.q = qt->source;
  m.k = kt->source;
  m.v = vt->source;
  for (const Traced* t : {&*qt, &*kt, &*vt}) m.operand_steps.insert(m.operand_steps.end(), t->steps.begin(), t->steps.end());
  m.out = out;
  m.chain.push_back(qk);
  for (auto it = back.rbegin(); it != back.rend(); ++it) m.chain.push_back(it->first);
  m.chain.push_back(&sm);
  m.chain.push_back(pv);
  for (Node* u : out_chain) m.chain.push_back(u);
  return m;
}

/// Why the kernel (templates/attention.cuh) cannot take the match; empty when it can.
std::string kernel_refuses(const Match& m, const PassOptions& o) {
  const ops::AttentionSpec& s = m.spec;
  if (o.half_type() == DType::undefined) return "an FP32 compile: the fused kernel takes FP16 / BF16 operands";
  const DType t = m.q->dtype();
  if (m.k->dtype() != t || m.v->dtype() != t || (t != DType::float32 && t != DType::float16 && t != DType::bfloat16)) {
    return "Q, K and V are not of one float type";
  }
  // The op must end up 16-bit: precision converts it (fp32_compute), unless it does not run or a
  // node the op would stand for is pinned to FP32 (the op would be: fp16_rules::pinned reads covers).
  if (t == DType::float32 && o.disabled.count("precision")) {
    return "the precision stage is disabled: the fused kernel takes FP16 / BF16 operands";
  }
  for (const std::vector<Node*>* nodes : {&m.chain, &m.operand_steps}) {
    for (const Node* n : *nodes) {
      for (const std::string& c : covers_of(*n)) {
        if (std::find(o.keep_fp32.begin(), o.keep_fp32.end(), c) != o.keep_fp32.end()) {
          return "'" + c + "' is pinned by --keep-fp32: the fused kernel takes FP16 / BF16 operands";
        }
      }
    }
  }
  if ((t == DType::bfloat16 || o.half_type() == DType::bfloat16) && o.min_sm > 0 && o.min_sm < 80) {
    return "BF16 operands on sm_" + std::to_string(o.min_sm) + ": the kernel's BF16 MMA needs sm_80 or newer";
  }
  if (s.head_dim % 8 != 0 || s.head_dim > 128) {
    return "head dim " + std::to_string(s.head_dim) + ": the kernel takes multiples of 8 up to 128";
  }
  if (s.bias.size() > 2) return std::to_string(s.bias.size()) + " bias terms: the kernel adds at most two";
  for (const Term& b : m.bias) {
    const DType bt = b.value ? b.value->dtype() : b.made->dtype();
    if (!is_narrow_float(bt)) return "bias term '" + (b.value ? b.value->name() : b.name) + "' is " + dtype_name(bt);
  }
  auto aligned = [&](const ops::HeadView& v, int64_t heads) {
    return v.offset % 8 == 0 && v.stride_s % 8 == 0 && (heads == 1 || v.stride_h % 8 == 0) &&
           (s.batch == 1 || v.stride_b % 8 == 0);
  };
  const std::pair<const ops::HeadView*, const char*> views[] = {{&s.q, "Q"}, {&s.k, "K"}, {&s.v, "V"}, {&s.o, "O"}};
  for (const auto& [v, what] : views) {
    if (!aligned(*v, s.heads)) {
      return std::string(what) + "'s view is not in 16-byte chunks (offset " + std::to_string(v->offset) + ", strides " +
             std::to_string(v->stride_b) + ", " + std::to_string(v->stride_h) + ", " + std::to_string(v->stride_s) +
             ": the kernel needs multiples of 8 elements)";
    }
  }
  return {};
}

/// The nodes the op stands for: the chain, and the operands' view ops and factors that nothing else
/// reads (they go with the match: remove_dead), in graph order of discovery.
std::vector<const Node*> covered_nodes(const Match& m) {
  std::vector<const Node*> covered(m.chain.begin(), m.chain.end());
  auto is_covered = [&](const Node* n) { return std::find(covered.begin(), covered.end(), n) != covered.end(); };
  for (bool grew = true; grew;) {
    grew = false;
    for (const Node* n : m.operand_steps) {
      if (is_covered(n)) continue;
      bool dies = true;
      for (const Value* out : n->outputs()) {
        if (!out) continue;
        dies &= !out->is_graph_output();
        for (const Node* u : out->users()) dies &= is_covered(u);
      }
      if (dies) {
        covered.push_back(n);
        grew = true;
      }
    }
  }
  return covered;
}

Node* replace(Graph& g, Match& m) {
  std::vector<std::string> covers;
  for (const Node* n : covered_nodes(m)) {
    for (const std::string& c : covers_of(*n)) {
      if (std::find(covers.begin(), covers.end(), c) == covers.end()) covers.push_back(c);
    }
  }
  const std::string name = m.chain.front()->name();
  const int opset = m.chain.front()->opset();
  Node* before = next_node(g, m.chain.back());
  for (auto it = m.chain.rbegin(); it != m.chain.rend(); ++it) g.remove_node(*it);
  std::vector<Value*> inputs{m.q, m.k, m.v};
  for (Term& b : m.bias) {
    inputs.push_back(b.value ? b.value : g.add_constant(b.name, std::move(*b.made), true));
  }
  Node* a = g.add_node("Attention", name, inputs, {m.out}, before);
  a->set_domain(ops::kModelcDomain);
  a->set_opset(opset);
  a->set_covers(covers);
  ops::set_attention_spec(*a, m.spec);
  check_fused(*a);
  return a;
}

}  // namespace

bool fuse_attention(Graph& g, const PassOptions& o, std::vector<AttentionOutcome>* outcomes) {
  std::vector<Node*> softmaxes;
  for (const auto& up : g.nodes()) {
    if (is_op(up.get(), "Softmax") && up->has_input(0)) {
      const Node* p = up->input(0).producer();
      // A candidate: scores that come from a product (what else a Softmax reads is not attention),
      // weights that a product reads (a classifier's Softmax into the model's output is none).
      bool into_product = false;
      for (const Node* u : up->output(0).users()) into_product |= is_op(u, "MatMul");
      if (p && into_product && (is_op(p, "MatMul") || reaches_product(&up->input(0)))) softmaxes.push_back(up.get());
    }
  }
  // Matches never share a node (each owns its Softmax's chain), so the pointers of later
  // candidates stay valid while earlier ones are replaced.
  bool changed = false;
  for (Node* sm : softmaxes) {
    AttentionOutcome r;
    r.softmax = sm->name();
    try {
      Match m = match_at(*sm);
      r.reason = kernel_refuses(m, o);
      if (r.reason.empty()) {
        Node* a = replace(g, m);
        r.fused = true;
        r.fused_node = a->name();
        r.covers = a->covers();
        changed = true;
      }
    } catch (const Refused& e) {
      r.reason = e.reason;
    }
    if (outcomes) outcomes->push_back(r);
  }
  if (changed) g.remove_dead();
  return changed;
}

bool fuse_attention(Graph& g, const PassOptions& o) { return fuse_attention(g, o, nullptr); }

// ---- residual + LayerNorm ----------------------------------------------------------------------

namespace {

/// An Add of x and a constant of N values (the product's bias), read only by `reader`: the bias.
Value* product_bias(const Value& x, const Node& reader) {
  const Node* p = x.producer();
  if (!is_op(p, "Add") || sole_user(x) != &reader || x.rank() < 1) return nullptr;
  for (int i = 0; i < 2; ++i) {
    Value* c = p->input_ptr(i);
    const Value* other = p->input_ptr(1 - i);
    if (!c || !other || !c->is_constant() || other->shape() != x.shape() || other->dtype() != x.dtype()) continue;
    const int64_t N = x.shape().back();
    bool row = c->numel() == N && c->rank() >= 1 && c->shape().back() == N;
    for (int64_t k = 0; row && k + 1 < c->rank(); ++k) row = c->shape()[static_cast<std::size_t>(k)] == 1;
    if (row) return c;
  }
  return nullptr;
}

}  // namespace

bool fuse_residual_norm(Graph& g, const PassOptions&, std::vector<ResidualNormOutcome>* outcomes) {
  std::vector<Node*> norms;
  for (const auto& up : g.nodes()) {
    if (default_domain(*up) && up->op() == "LayerNormalization" && up->has_input(0) && up->has_output(0)) {
      norms.push_back(up.get());
    }
  }
  bool changed = false;
  for (Node* ln : norms) {
    ResidualNormOutcome r;
    r.norm = ln->name();
    auto refuse = [&](std::string why) {
      r.reason = std::move(why);
      if (outcomes) outcomes->push_back(r);
    };
    Value& h = ln->input(0);
    Node* add = h.producer();
    if (!is_op(add, "Add") || add->num_inputs() != 2 || !add->has_input(0) || !add->has_input(1)) {
      refuse("its input is not an Add");
      continue;
    }
    if ((ln->has_output(1) && !ln->output(1).users().empty()) || (ln->has_output(2) && !ln->output(2).users().empty()) ||
        (ln->has_output(1) && ln->output(1).is_graph_output()) || (ln->has_output(2) && ln->output(2).is_graph_output())) {
      refuse("its Mean / InvStdDev outputs are read");
      continue;
    }
    if (h.rank() < 1 || ops::layernorm_axis(*ln, h.rank()) != h.rank() - 1) {
      refuse("it normalizes over more than the last dim");
      continue;
    }
    Value* a = &add->input(0);
    Value* b = &add->input(1);
    if (a->shape() != h.shape() || b->shape() != h.shape() || a->dtype() != h.dtype() || b->dtype() != h.dtype()) {
      refuse("the Add broadcasts");
      continue;
    }
    if (!ln->input(1).is_constant() || (ln->has_input(2) && !ln->input(2).is_constant())) {
      refuse("its Scale or B is computed at run time");
      continue;
    }
    if (h.shape().back() % 8 != 0) {
      refuse("rows of " + std::to_string(h.shape().back()) + ": the kernel reads 16-byte chunks (a multiple of 8)");
      continue;
    }
    // X: the operand with a product's bias Add before it (read only by this Add), which the op takes.
    Value* bias = product_bias(*a, *add);
    Node* bias_add = nullptr;
    if (!bias) {
      if ((bias = product_bias(*b, *add))) std::swap(a, b);
    }
    Value* x = a;
    if (bias) {
      bias_add = a->producer();
      x = bias_add->input_ptr(0) == bias ? &bias_add->input(1) : &bias_add->input(0);
    }
    Value* sum = h.users().size() > 1 || h.is_graph_output() ? &h : nullptr;
    std::vector<std::string> covers;
    for (const Node* n : {static_cast<const Node*>(bias_add), static_cast<const Node*>(add), static_cast<const Node*>(ln)}) {
      if (!n) continue;
      for (const std::string& c : covers_of(*n)) covers.push_back(c);
    }
    const std::string name = ln->name();
    const int opset = ln->opset();
    const double eps = ops::norm_epsilon(*ln);
    Value* gamma = &ln->input(1);
    Value* beta = ln->input_ptr(2);
    Value* y = &ln->output(0);
    // The op goes where the Add was: h's other readers (when it writes h too) may come before the
    // LayerNormalization.
    Node* before = next_node(g, add);
    if (before == ln) before = next_node(g, ln);
    g.remove_node(ln);
    g.remove_node(add);
    if (bias_add) g.remove_node(bias_add);
    Node* f = g.add_node("ResidualNorm", name, {x, b, gamma, beta, bias},
                         sum ? std::vector<Value*>{y, sum} : std::vector<Value*>{y}, before);
    f->set_domain(ops::kModelcDomain);
    f->set_opset(opset);
    f->set_covers(covers);
    f->set_attr_float("epsilon", eps);
    f->set_attr_string("norm", "layer");
    while (f->num_inputs() > 0 && !f->has_input(f->num_inputs() - 1)) f->remove_input(f->num_inputs() - 1);
    const ops::OpDef& def = ops::lookup(*f);
    ops::validate_node(*f, def);
    def.infer(*f);
    r.fused = true;
    if (outcomes) outcomes->push_back(r);
    changed = true;
  }
  if (changed) g.remove_dead();
  return changed;
}

bool fuse_residual_norm(Graph& g, const PassOptions& o) { return fuse_residual_norm(g, o, nullptr); }

}  // namespace modelc

// compiler/schedule/linear.cpp — see linear.h.
#include "schedule/linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

#include "ops/fused.h"
#include "ops/gemm.h"
#include "schedule/layout.h"
#include "support/error.h"

namespace modelc::linear {

void refuse_node(const Kernel& k, const std::string& message, const std::string& hint) { throw k.error(message, hint); }

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r + "]";
}

bool is_fused(const Node& n) { return !ops::producer_of_fused(n.op()).empty(); }

std::string producer_op(const Node& n) {
  const std::string p = ops::producer_of_fused(n.op());
  return p.empty() ? n.op() : p;
}

int64_t channels_last_pitch(const TensorView& v) {
  int64_t pitch = 0;
  return channels_last_view(v, &pitch) ? pitch : 0;
}

bool aligned16(const TensorView& v) { return v.aligned(16); }

bool mixed_epilogue_types(const Kernel& k) {
  DType epi = DType::undefined;
  // The bias and the residual (inputs 2 and 3; a convolution's prologue operands follow them).
  for (std::size_t i = 2; i < k.inputs.size() && i < 4; ++i) {
    if (k.inputs[i].dtype == DType::undefined) continue;
    if (epi != DType::undefined && k.inputs[i].dtype != epi) return true;
    epi = k.inputs[i].dtype;
  }
  return false;
}

TcConvDepth tc_conv_depth(const Kernel& k) {
  const TensorView &x = k.inputs[0], &w = k.inputs[1];
  TcConvDepth d;
  d.taps = 1;
  for (std::size_t i = 2; i < w.shape.size(); ++i) d.taps *= w.shape[i];
  d.pitch = channels_last_pitch(x);
  const WeightStorage ws = kernel_weight_storage(k, x, w, d.pitch);
  d.compact = ws.compact;
  d.row = ws.row;
  d.K = d.taps * (ws.compact ? w.shape[1] : d.pitch);
  return d;
}

void check_size(const Kernel& k) {
  constexpr int64_t kMax = 2147483647;
  for (const auto* views : {&k.inputs, &k.outputs}) {
    for (const TensorView& v : *views) {
      if (v.dtype != DType::undefined && v.numel() > kMax) {
        throw k.source.node->error("tensor '" + v.value + "' has " + std::to_string(v.numel()) +
                            " elements; the templates index with 32 bits");
      }
    }
  }
}

void require_dense(const Kernel& k) {
  // Dense up to unit dims (dense_view), the test kernel_layout runs NCHW by: a channels-last buffer
  // without spatial extent ([N, C, 1, 1], e.g. a Concat before a global pool) keeps its
  // channels-last strides, which address the same elements as the dense ones.
  for (const auto* views : {&k.inputs, &k.outputs}) {
    for (const TensorView& v : *views) {
      if (v.dtype != DType::undefined && !dense_view(v)) {
        throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") got a strided view of '" + v.value + "'");
      }
    }
  }
}

// ---- convolution and pooling geometry ----------------------------------------------------------

namespace {

const TensorView& view(const Kernel& k, bool input, std::size_t i) {
  const std::vector<TensorView>& v = input ? k.inputs : k.outputs;
  if (i >= v.size() || v[i].dtype == DType::undefined) {
    throw Error(fmt::format("internal: kernel {} ({}) has no {} view {}", k.id, k.family_name(), input ? "input" : "output", i));
  }
  return v[i];
}

void check_out(const Kernel& k, ConvGeometry& g, const Shape& y) {
  const std::size_t off = 3 - static_cast<std::size_t>(g.spatial);
  for (int i = 0; i < g.spatial; ++i) {
    const int64_t want = y[2 + static_cast<std::size_t>(i)];
    if (g.out[off + static_cast<std::size_t>(i)] != want) {
      throw Error(fmt::format("internal: kernel {} ({} '{}'): output dim {} is {} in the view, the geometry gives {}",
                              k.id, k.source.node->op(), k.source.node->name(), i, want, g.out[off + static_cast<std::size_t>(i)]));
    }
  }
}

// The geometry of k's node, padded to 3 dims, its output checked against Y's view: the node's
// shapes and the views' must agree (the layout stage changes strides, never shapes).
ConvGeometry checked(const Kernel& k, const ops::WindowGeometry& w) {
  if (!k.source.node) throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no node");
  view(k, true, 0);
  ConvGeometry g = w.padded3();
  check_out(k, g, view(k, false, 0).shape);
  return g;
}

}  // namespace

ConvGeometry conv_geometry(const Kernel& k) {
  ConvGeometry g = checked(k, ops::conv_geometry(*k.source.node));
  if (!k.ranges.empty()) g.M = k.ranges.back().end;  // horizontally fused: every range's channels
  return g;
}

ConvGeometry conv_transpose_geometry(const Kernel& k) { return checked(k, ops::conv_transpose_geometry(*k.source.node)); }

ConvGeometry pool_geometry(const Kernel& k) { return checked(k, ops::pool_geometry(*k.source.node)); }

// ---- GEMM lowering -----------------------------------------------------------------------------

namespace {

void require_view(const Kernel& k, const std::vector<TensorView>& views, std::size_t i, const char* what) {
  if (i >= views.size() || views[i].dtype == DType::undefined) {
    throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has no " + what + " view " + std::to_string(i));
  }
}

/// Batch dims with one stride per operand: drops unit dims, merges adjacent dims that chain in
/// every operand, and pads to 3 (leading unit dims).
struct BatchDims {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

void compress_batch(const Kernel& k, BatchDims& b) {
  BatchDims r;
  r.strides.resize(b.strides.size());
  for (std::size_t i = 0; i < b.dims.size(); ++i) {
    if (b.dims[i] == 1) continue;
    bool merge = !r.dims.empty();
    for (std::size_t o = 0; merge && o < b.strides.size(); ++o) merge = r.strides[o].back() == b.strides[o][i] * b.dims[i];
    if (merge) {
      r.dims.back() *= b.dims[i];
      for (std::size_t o = 0; o < b.strides.size(); ++o) r.strides[o].back() = b.strides[o][i];
    } else {
      r.dims.push_back(b.dims[i]);
      for (std::size_t o = 0; o < b.strides.size(); ++o) r.strides[o].push_back(b.strides[o][i]);
    }
  }
  if (r.dims.size() > 3) {
    refuse_node(k, fmt::format("{} batch dims that do not merge into 3 (the GEMM template's limit)", r.dims.size()),
           "reshape the operands so that at most 3 batch dims remain");
  }
  while (r.dims.size() < 3) {
    r.dims.insert(r.dims.begin(), 1);
    for (auto& s : r.strides) s.insert(s.begin(), 0);
  }
  b = std::move(r);
}

// The views a product writes and their strides in g: Y, or each range's output (range_y).
std::vector<std::pair<const TensorView*, MatrixStrides*>> written(const Kernel& k, GemmLowering& g) {
  if (k.ranges.empty()) return {{&k.outputs[0], &g.y}};
  g.range_y.resize(k.outputs.size());
  std::vector<std::pair<const TensorView*, MatrixStrides*>> r;
  for (std::size_t i = 0; i < k.outputs.size(); ++i) r.push_back({&k.outputs[i], &g.range_y[i]});
  return r;
}

std::string result_text(const Kernel& k) {
  return k.ranges.empty() ? shape_text(k.outputs[0].shape) : std::to_string(k.ranges.size()) + " outputs";
}

void set_batch(GemmLowering& g, const BatchDims& b, std::vector<MatrixStrides*> operands) {
  for (int i = 0; i < 3; ++i) {
    g.batch[i] = b.dims[i];
    for (std::size_t o = 0; o < operands.size(); ++o) operands[o]->batch[i] = b.strides[o][i];
  }
}

GemmLowering lower_matmul(const Kernel& k) {
  require_view(k, k.inputs, 0, "input");
  require_view(k, k.inputs, 1, "input");
  require_view(k, k.outputs, 0, "output");
  const TensorView &va = k.inputs[0], &vb = k.inputs[1], &vy = k.outputs[0];
  GemmLowering g;
  const std::size_t ra = va.shape.size(), rb = vb.shape.size(), ry = vy.shape.size();
  if (ra == 0 || rb == 0) refuse_node(k, "MatMul of a scalar");
  // A: [..., M, K] (1-D: [K], M = 1); B: [..., K, N] (1-D: [K], N = 1).
  if (ra == 1) {
    g.M = 1;
    g.K = va.shape[0];
    g.a.row = 0;
    g.a.col = va.strides[0];
  } else {
    g.M = va.shape[ra - 2];
    g.K = va.shape[ra - 1];
    g.a.row = va.strides[ra - 2];
    g.a.col = va.strides[ra - 1];
  }
  if (rb == 1) {
    g.N = 1;
    g.b.row = vb.strides[0];
    g.b.col = 0;
  } else {
    g.N = vb.shape[rb - 1];
    g.b.row = vb.strides[rb - 2];
    g.b.col = vb.strides[rb - 1];
  }
  // Y: batch + [M if A is a matrix] + [N if B is a matrix].
  const std::size_t y_mat = (ra > 1 ? 1 : 0) + (rb > 1 ? 1 : 0);
  if (ry < y_mat) refuse_node(k, "output rank " + std::to_string(ry) + " is too small for the product");
  const auto ys = written(k, g);
  for (const auto& [v, s] : ys) {
    s->row = ra > 1 ? v->strides[ry - y_mat] : 0;
    s->col = rb > 1 ? v->strides[ry - 1] : 0;
  }
  const std::size_t nb = ry - y_mat;
  const std::size_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
  BatchDims b;
  b.strides.resize(2 + ys.size());
  for (std::size_t i = 0; i < nb; ++i) {
    const int64_t d = vy.shape[i];
    b.dims.push_back(d);
    // Right-aligned operand dims; a missing or unit dim broadcasts (stride 0).
    auto stride = [&](const TensorView& v, std::size_t batch_rank) -> int64_t {
      if (i + batch_rank < nb) return 0;
      const std::size_t j = i + batch_rank - nb;
      return v.shape[j] == 1 ? 0 : v.strides[j];
    };
    b.strides[0].push_back(stride(va, ba));
    b.strides[1].push_back(stride(vb, bb));
    for (std::size_t o = 0; o < ys.size(); ++o) b.strides[2 + o].push_back(ys[o].first->strides[i]);
  }
  compress_batch(k, b);
  std::vector<MatrixStrides*> operands = {&g.a, &g.b};
  for (const auto& y : ys) operands.push_back(y.second);
  set_batch(g, b, operands);
  g.what = fmt::format("{} x {} -> {}", shape_text(va.shape), shape_text(vb.shape), result_text(k));
  return g;
}

GemmLowering lower_gemm_op(const Kernel& k) {
  require_view(k, k.inputs, 0, "input");
  require_view(k, k.inputs, 1, "input");
  require_view(k, k.outputs, 0, "output");
  const Node& n = *k.source.node;
  const TensorView &va = k.inputs[0], &vb = k.inputs[1], &vy = k.outputs[0];
  if (va.shape.size() != 2 || vb.shape.size() != 2 || vy.shape.size() != 2) refuse_node(k, "Gemm needs 2-D A, B and Y");
  const ops::GemmAttributes attrs = ops::gemm_attributes(n);
  const bool ta = attrs.trans_a, tb = attrs.trans_b;
  GemmLowering g;
  g.M = vy.shape[0];
  g.N = tb ? vb.shape[0] : vb.shape[1];
  g.K = ta ? va.shape[0] : va.shape[1];
  g.a.row = ta ? va.strides[1] : va.strides[0];
  g.a.col = ta ? va.strides[0] : va.strides[1];
  g.b.row = tb ? vb.strides[1] : vb.strides[0];
  g.b.col = tb ? vb.strides[0] : vb.strides[1];
  for (const auto& [v, s] : written(k, g)) {
    s->row = v->strides[0];
    s->col = v->strides[1];
  }
  g.alpha = attrs.alpha;
  g.beta = attrs.beta;
  std::string c_text;
  if (k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined) {
    const TensorView& vc = k.inputs[2];
    g.has_c = true;
    // C broadcasts (right-aligned) to [M, N].
    const std::size_t rc = vc.shape.size();
    if (rc > 2) refuse_node(k, "input C has rank " + std::to_string(rc) + ", expected at most 2");
    auto stride = [&](std::size_t dim) -> int64_t {  // dim 0: rows, 1: columns
      if (dim + rc < 2) return 0;
      const std::size_t j = dim + rc - 2;
      return vc.shape[j] == 1 ? 0 : vc.strides[j];
    };
    g.c.row = stride(0);
    g.c.col = stride(1);
    c_text = " + C" + shape_text(vc.shape);
  }
  g.what = fmt::format("{}{} x {}{}{} -> {}", shape_text(va.shape), ta ? "^T" : "", shape_text(vb.shape),
                       tb ? "^T" : "", c_text, result_text(k));
  return g;
}

// ---- Einsum ----

/// A group of letters (batch, M, N or K) as one strided dim per operand: unit letters dropped,
/// the rest must chain (outer stride = inner stride * inner size) in every operand.
struct Merged {
  int64_t size = 1;
  std::vector<int64_t> strides;  // per operand
};

Merged merge_letters(const Kernel& k, const ops::EinsumEquation& e, const std::string& letters, const char* what,
                     const std::map<char, int64_t>& size, const std::vector<std::map<char, int64_t>>& strides) {
  Merged m;
  m.strides.assign(strides.size(), 0);
  bool first = true;
  for (char c : letters) {
    const int64_t d = size.at(c);
    if (d == 1) continue;
    for (std::size_t o = 0; o < strides.size(); ++o) {
      const int64_t s = strides[o].count(c) ? strides[o].at(c) : 0;
      if (!first && m.strides[o] != s * d) {
        refuse_node(k, "Einsum equation '" + e.text + "': the " + what + " letters '" + letters +
                      "' are not laid out as one dim in every operand, which the GEMM template needs",
               "write the equation so that these letters appear in the same order in every term");
      }
      m.strides[o] = s;
    }
    m.size *= d;
    first = false;
  }
  return m;
}

GemmLowering lower_einsum(const Kernel& k) {
  const ops::EinsumEquation e = ops::parse_einsum(*k.source.node);
  require_view(k, k.outputs, 0, "output");
  const TensorView& vy = k.outputs[0];
  if (e.terms.size() != k.inputs.size()) refuse_node(k, "Einsum equation '" + e.text + "' does not match the inputs");
  std::map<char, int64_t> size;
  // strides[o][letter]: operand o's stride for the letter (summed when a term repeats it).
  std::vector<std::map<char, int64_t>> strides(e.terms.size() + 1);
  for (std::size_t t = 0; t < e.terms.size(); ++t) {
    require_view(k, k.inputs, t, "input");
    const TensorView& v = k.inputs[t];
    if (v.shape.size() != e.terms[t].size()) refuse_node(k, "Einsum equation '" + e.text + "' does not match the input ranks");
    for (std::size_t i = 0; i < e.terms[t].size(); ++i) {
      size[e.terms[t][i]] = v.shape[i];
      strides[t][e.terms[t][i]] += v.strides[i];
    }
  }
  for (std::size_t i = 0; i < e.out.size(); ++i) strides.back()[e.out[i]] = vy.strides[i];
  GemmLowering g;
  std::vector<std::string> in_shapes;
  for (const TensorView& v : k.inputs) in_shapes.push_back(shape_text(v.shape));
  g.what = fmt::format("'{}': {} -> {}", e.text, fmt::join(in_shapes, ", "), shape_text(vy.shape));

  if (e.terms.size() == 1) {
    // A strided sum: output letters (repeats walk the diagonal), then every other letter summed.
    if (!vy.dense()) throw Error("internal: Einsum kernel " + k.id + " writes a strided output view");
    g.kind = GemmLowering::Kind::strided_sum;
    for (char c : e.out) {
      g.out_dims.push_back(size.at(c));
      g.out_strides.push_back(strides[0].at(c));
    }
    std::string summed;
    for (char c : e.terms[0]) {
      if (e.out.find(c) == std::string::npos && summed.find(c) == std::string::npos) {
        summed += c;
        g.sum_dims.push_back(size.at(c));
        g.sum_strides.push_back(strides[0].at(c));
      }
    }
    return g;
  }
  if (e.terms.size() != 2) {
    refuse_node(k, "Einsum equation '" + e.text + "' has " + std::to_string(e.terms.size()) +
                  " operands; modelc runs one operand (a strided sum) or two (a batched matmul)",
           "split the equation into pairwise Einsum nodes");
  }
  const std::string &ta = e.terms[0], &tb = e.terms[1];
  for (const std::string& t : {ta, tb}) {
    for (char c : t) {
      if (std::count(t.begin(), t.end(), c) > 1) {
        refuse_node(k, "Einsum equation '" + e.text + "' repeats '" + std::string(1, c) +
                      "' within a term (a diagonal), which is not a batched matmul");
      }
    }
  }
  std::string batch, rows, cols, depth;
  for (char c : e.out) {
    const bool in_a = ta.find(c) != std::string::npos, in_b = tb.find(c) != std::string::npos;
    (in_a && in_b ? batch : in_a ? rows : cols) += c;
  }
  for (char c : ta) {
    if (e.out.find(c) != std::string::npos) continue;
    if (tb.find(c) == std::string::npos) {
      refuse_node(k, "Einsum equation '" + e.text + "' sums '" + std::string(1, c) +
                    "' over the first operand alone, which is not a batched matmul",
             "sum that letter out with a separate one-operand Einsum or ReduceSum first");
    }
    depth += c;
  }
  for (char c : tb) {
    if (e.out.find(c) == std::string::npos && ta.find(c) == std::string::npos) {
      refuse_node(k, "Einsum equation '" + e.text + "' sums '" + std::string(1, c) +
                    "' over the second operand alone, which is not a batched matmul",
             "sum that letter out with a separate one-operand Einsum or ReduceSum first");
    }
  }
  // strides: [0] A, [1] B, [2] Y.
  const Merged m = merge_letters(k, e, rows, "row (M)", size, strides);
  const Merged n = merge_letters(k, e, cols, "column (N)", size, strides);
  const Merged kk = merge_letters(k, e, depth, "summed (K)", size, strides);
  g.M = m.size;
  g.N = n.size;
  g.K = kk.size;
  g.a.row = m.strides[0];
  g.a.col = kk.strides[0];
  g.b.row = kk.strides[1];
  g.b.col = n.strides[1];
  g.y.row = m.strides[2];
  g.y.col = n.strides[2];
  BatchDims b;
  b.strides.resize(3);
  for (char c : batch) {
    b.dims.push_back(size.at(c));
    for (int o = 0; o < 3; ++o) b.strides[o].push_back(strides[o].at(c));
  }
  compress_batch(k, b);
  set_batch(g, b, {&g.a, &g.b, &g.y});
  return g;
}

// The innermost batch dims over which B broadcasts (stride 0) and A, Y (every range's output, for a
// horizontally fused product) and C continue their rows
// (a batch stride of row stride times M; any stride when M is 1) become rows: [128, 1, 768] x
// [768, 2304] is one product of 128 rows rather than 128 products of one.
void batch_to_rows(GemmLowering& g) {
  auto continues = [&](const MatrixStrides& s) { return g.M == 1 || s.batch[2] == s.row * g.M; };
  std::vector<MatrixStrides*> rows = {&g.a, &g.y, &g.c};
  for (MatrixStrides& y : g.range_y) rows.push_back(&y);
  while (g.batch[2] > 1 && g.b.batch[2] == 0 && continues(g.a) && continues(g.y) &&
         std::all_of(g.range_y.begin(), g.range_y.end(), continues) &&
         (!g.has_c || continues(g.c) || (g.c.batch[2] == 0 && g.c.row == 0))) {
    for (MatrixStrides* s : rows) {
      if (g.M == 1) s->row = s->batch[2];
      s->batch = {0, s->batch[0], s->batch[1]};
    }
    g.b.batch = {0, g.b.batch[0], g.b.batch[1]};
    g.M *= g.batch[2];
    g.batch = {1, g.batch[0], g.batch[1]};
  }
}

}  // namespace

GemmLowering lower_gemm(const Kernel& k) {
  if (!k.source.node) throw Error("internal: gemm kernel " + k.id + " has no node");
  const std::string op = producer_op(*k.source.node);
  GemmLowering g;
  if (op == "MatMul") {
    g = lower_matmul(k);
    g.alpha = k.source.node->attr_float("alpha", 1.0);  // FusedMatMul's (passes/fold_scale)
    if (is_fused(*k.source.node) && k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined) {
      // FusedMatMul's bias: one value per element of Y's last dim (n, or m when B is a vector).
      const TensorView& vb = k.inputs[2];
      if (vb.shape.size() != 1) refuse_node(k, "the bias of a FusedMatMul must be 1-D");
      g.has_c = true;
      (k.inputs[1].shape.size() == 1 ? g.c.row : g.c.col) = vb.strides[0];
    }
  } else if (op == "Gemm") {
    g = lower_gemm_op(k);
  } else if (op == "Einsum") {
    g = lower_einsum(k);
  } else {
    throw Error("internal: the gemm family does not run " + op + " (node '" + k.source.node->name() + "')");
  }
  // Offsets inside a matrix are 32-bit in the templates.
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (const auto* views : {&k.inputs, &k.outputs}) {
    for (const TensorView& v : *views) {
      if (v.dtype != DType::undefined && v.numel() > kMax) {
        refuse_node(k, "tensor '" + v.value + "' has " + std::to_string(v.numel()) + " elements; the templates index with 32 bits");
      }
    }
  }
  if (g.kind == GemmLowering::Kind::gemm && k.batch_as_rows) batch_to_rows(g);
  // A range's output has one batch stride (templates/gemm.cuh Range): fuse_horizontal fuses only
  // products whose A has at most one batch dim > 1.
  if (!g.range_y.empty() && (g.batch[0] > 1 || g.batch[1] > 1)) {
    throw Error("internal: the horizontally fused kernel " + k.id + " has more than one batch dim");
  }
  if (g.kind == GemmLowering::Kind::gemm && g.batch_count() > 65535) {
    refuse_node(k, fmt::format("{} batched products exceed the grid's z limit (65535)", g.batch_count()));
  }
  return g;
}

}  // namespace modelc::linear

// compiler/schedule/row_maps.cpp — the fold_row_maps stage (schedule/stages.h).
//
// A windowed vision transformer (Swin) moves token rows around every attention: the LayerNorm
// output is padded to whole windows (Pad), rolled for the shifted windows (Slices + Concat),
// partitioned into windows (Reshape / Transpose), projected (qkv), attended, projected again
// (proj), and the same moves run backwards (Transpose, Slices + Concat, the crop Slices) before
// the residual Add. Each of those moves keeps every row of C channels whole: a row of the moved
// tensor is a row of the source (or a padding row of zeros), and the products on either side work
// row by row. So they need no kernels:
//  - gather: a matrix product whose A is reached from a value X through Transpose / Slice / Pad /
//    Concat and view nodes only reads X's rows through an int32 table, A's logical row r (the
//    flat batch x M + m) at X's row table[r], -1 a zero row (a constant pad of 0);
//  - scatter: a product whose Y reaches a value D through such nodes only writes its rows
//    through a table, Y's row r at D's row table[r], -1 a row no reader sees (the crop drops
//    it); and where D's only reader is an Add of D and a value R of D's shape, the Add is the
//    product's residual (read at the row it writes) and the product writes the Add's output.
// The tables are computed, not pattern-matched: the nodes between are evaluated by the reference
// interpreter on an index tensor (element (row, c) holds row x C + c + 1, exact in float64), and
// the result must be, row by row, one source row with its channels in place, or all zeros. So any
// shift, pad, window size or order of the moves gives its exact table, and anything that is not a
// row permutation (a move across channels, a pad value other than 0, a row written twice) refuses.
// The product runs on tc::Gemm or smallm::Gemm (templates/gemm.cuh gemm::RowMapped; the tactics
// keep it off the Hopper and GEMV engines): FP16 / BF16 operands (BF16 only where every --arch has BF16
// MMAs). Where a candidate refuses, the kernels stay and the product's note says why
// (Kernel::kept_row_map).
//
// A schedule stage after fold_operand_views (Transposes and Slices that strides express are
// views already, Concats elided: the chain's nodes are taken whatever runs them) and before
// fuse_horizontal (a product with a table is not fused with its siblings) and the memory plan.
// The graph keeps its nodes (the reference and --print-after see the model unchanged).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ops/fused.h"
#include "ops/registry.h"
#include "schedule/linear.h"
#include "schedule/stages.h"
#include "schedule/tactics.h"
#include "schedule/target.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

namespace {

bool onnx_op(const Node& n, const char* op) { return (n.domain().empty() || n.domain() == "ai.onnx") && n.op() == op; }

/// A node that moves whole elements without arithmetic: the ops a chain may hold.
bool moves_data(const Node& n) {
  return onnx_op(n, "Transpose") || onnx_op(n, "Slice") || onnx_op(n, "Pad") || onnx_op(n, "Concat") || is_view_node(n);
}

/// The inputs of a moving node that carry data (the others are its constant parameters).
std::vector<const Value*> data_inputs(const Node& n) {
  if (onnx_op(n, "Concat")) {
    std::vector<const Value*> r;
    for (int i = 0; i < n.num_inputs(); ++i) r.push_back(n.input_ptr(i));
    return r;
  }
  return {n.input_ptr(0)};
}

std::string node_text(const Node& n) { return n.op() + " '" + n.name() + "'"; }

constexpr std::size_t kMaxChain = 64;          // nodes in one chain
constexpr int64_t kMaxIndexElements = 1 << 24; // the index tensor's size (compile time and memory)

/// The nodes between a product and the value whose rows it reads or writes, in graph order.
struct Chain {
  std::vector<const Node*> nodes;
  const Value* x = nullptr;  ///< gather: the source; scatter: the destination
  std::string why;           ///< why it cannot be a table ("" when it can)
};

/// Evaluates `nodes` (graph order) on the index tensor of `from` (rows of C = its last dim) and
/// returns the tensor `to` gets; why set when the reference cannot.
Tensor evaluate(const std::vector<const Node*>& nodes, const Value* from, const Value* to, std::string* why) {
  const Shape& s = from->shape();
  const int64_t C = s.back(), n = num_elements(s);
  std::vector<double> idx(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = static_cast<double>((i / C) * C + i % C + 1);
  std::map<const Value*, Tensor> at;
  at[from] = Tensor::from_f64(DType::float64, s, idx);
  for (const Node* node : nodes) {
    ops::TensorRefs in;
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Value* v = node->input_ptr(i);
      if (!v) {
        in.push_back(nullptr);
      } else if (at.count(v)) {
        in.push_back(&at.at(v));
      } else if (v->is_constant()) {
        in.push_back(&v->constant());
      } else {
        *why = fmt::format("{} reads '{}', which the chain does not compute", node_text(*node), v->name());
        return {};
      }
    }
    const ops::OpDef& def = ops::lookup(*node);
    if (!def.eval) {
      *why = node_text(*node) + " has no reference evaluation";
      return {};
    }
    std::vector<Tensor> out = def.eval(*node, in);
    at[&node->output(0)] = std::move(out.at(0));
  }
  if (!at.count(to)) {
    *why = "internal: the chain does not reach '" + to->name() + "'";
    return {};
  }
  return at.at(to);
}

/// The row of `from` each row of t is (-1: all zeros), t holding the index tensor's elements; why
/// set where a row is neither (not a row permutation).
std::vector<int32_t> rows_of(const Tensor& t, int64_t C, std::string* why) {
  if (C < 2) {
    *why = "rows of one element (a padding value would read as a row)";
    return {};
  }
  const std::vector<double> v = t.to_f64();
  const int64_t rows = static_cast<int64_t>(v.size()) / C;
  std::vector<int32_t> r(static_cast<std::size_t>(rows), -1);
  for (int64_t i = 0; i < rows; ++i) {
    const double* row = v.data() + i * C;
    if (std::all_of(row, row + C, [](double x) { return x == 0.0; })) continue;
    const double first = row[0] - 1;
    const int64_t src = static_cast<int64_t>(first) / C;
    bool ok = first >= 0 && static_cast<double>(src * C) == first;
    for (int64_t c = 0; ok && c < C; ++c) ok = row[c] == static_cast<double>(src * C + c + 1);
    if (!ok) {
      *why = fmt::format("row {} of the moved tensor is not one row of the source with its channels in place (not a "
                         "row permutation)",
                         i);
      return {};
    }
    r[static_cast<std::size_t>(i)] = static_cast<int32_t>(src);
  }
  return r;
}

class RowMapsStage {
 public:
  RowMapsStage(Schedule& s, const LowerOptions& o) : s_(s), o_(o), index_(s), kernel_(kernel_of_node(s)) {}

  bool run() {
    bool changed = false;
    for (std::size_t k = 0; k < s_.kernels.size(); ++k) {
      Kernel& kernel = s_.kernels[k];
      if (kernel.family_name() != "gemm" || kernel.row_maps.active()) continue;
      const std::string op = linear::producer_op(*kernel.source.node);
      if (op != "MatMul" && op != "Gemm") continue;
      changed = try_gather(k) || changed;
      changed = try_scatter(k) || changed;
    }
    if (!changed) return false;
    s_.kernels.erase(std::remove_if(s_.kernels.begin(), s_.kernels.end(),
                                    [&](const Kernel& k) { return removed_.count(k.source.node) != 0; }),
                     s_.kernels.end());
    resolve(s_);
    return true;
  }

 private:
  bool runs_kernel(const Node* n) const { return kernel_.count(n) != 0 && !removed_.count(n); }

  /// Why the product in kernel k cannot take a row table ("" when it can): the tensor-core products' conditions.
  std::string product_refusal(const Kernel& k) const {
    const Node& n = *k.source.node;
    if (!k.ranges.empty()) return "a horizontally fused product";
    if (linear::producer_op(n) == "Gemm" && (n.attr_int("transA", 0) != 0)) return "Gemm with transA";
    const Value& a = n.input(0);
    const Value& b = n.input(1);
    const Value& y = n.output(0);
    for (const Value* v : {&a, &b, &y}) {
      if (v->dtype() != DType::float16 && v->dtype() != DType::bfloat16) {
        return fmt::format("'{}' is {} (row tables run on the tensor-core products: FP16 / BF16 operands)", v->name(),
                           dtype_name(v->dtype()));
      }
    }
    if (a.dtype() != b.dtype()) return "A and B of different types";
    if (a.dtype() == DType::bfloat16) {
      for (const std::string& arch : o_.archs) {
        if (arch_number(arch) < linear::kBf16TensorCoreMinSm) return arch + " has no BF16 MMA (its SIMT variant takes no table)";
      }
    }
    if (a.shape().size() < 2) return "A is a vector";
    const Shape& as = a.shape();
    const Shape& ys = y.shape();
    if (as.size() != ys.size() || !std::equal(as.begin(), as.end() - 1, ys.begin())) {
      return "A is broadcast over Y's batch (a table indexes A's rows as Y's)";
    }
    const int64_t rows = num_elements(ys) / ys.back();
    if (rows * ys.back() * as.back() < linear::kTinyGemmMacs) return "a tiny product (the SIMT engine, which takes no table)";
    if (rows > (int64_t{1} << 30)) return "more rows than an int counts";
    if (!k.folded_casts.empty()) return "a boundary Cast folded into it";
    return "";
  }

  /// The value's buffer is dense with v its own value (rows of its last dim from its start).
  std::string dense_own(const Value* v, const char* what) const {
    const int b = index_.buffer(v);
    if (b < 0) return fmt::format("the {} '{}' is in no buffer", what, v->name());
    if (index_.step(v) != nullptr) return fmt::format("the {} '{}' is a view of another value", what, v->name());
    const Buffer& buf = s_.buffers[static_cast<std::size_t>(b)];
    if (buf.storage.channels_last) return fmt::format("the {} '{}' is stored channels-last", what, v->name());
    if (buf.space == Space::weights) return fmt::format("the {} '{}' is a constant", what, v->name());
    return "";
  }

  /// The chain of moving nodes from the product's A back to its source.
  Chain gather_chain(const Value* a) const {
    Chain c;
    std::set<const Node*> in;
    std::set<const Value*> leaves;
    std::vector<const Value*> todo{a};
    std::set<const Value*> seen;
    while (!todo.empty()) {
      const Value* v = todo.back();
      todo.pop_back();
      if (!seen.insert(v).second) continue;
      const Node* p = v->producer();
      if (!p || !moves_data(*p) || v->is_constant()) {
        leaves.insert(v);
        continue;
      }
      if (in.insert(p).second && in.size() > kMaxChain) {
        c.why = fmt::format("more than {} moving nodes", kMaxChain);
        return c;
      }
      for (const Value* d : data_inputs(*p)) todo.push_back(d);
    }
    // Nothing to fold: no move runs a kernel (A is the source, a reshape of it, or views that
    // fold_operand_views made strides: a table would cost the product its other engines for nothing).
    if (std::none_of(in.begin(), in.end(), [&](const Node* m) { return runs_kernel(m); })) return c;
    if (leaves.size() != 1) {
      c.why = fmt::format("its rows come from {} values (one source only)", leaves.size());
      return c;
    }
    c.x = *leaves.begin();
    c.nodes = ordered(in);
    return c;
  }

  /// The chain of moving nodes from the product's Y forward to the one value read by others.
  Chain scatter_chain(const Value* p) const {
    Chain c;
    std::set<const Node*> in;
    std::set<const Value*> frontier;
    std::vector<const Value*> todo{p};
    std::set<const Value*> seen;
    while (!todo.empty()) {
      const Value* v = todo.back();
      todo.pop_back();
      if (!seen.insert(v).second) continue;
      if (v->is_graph_output()) {
        c.why = fmt::format("'{}' is a model output", v->name());
        return c;
      }
      bool other = false;
      for (const Node* u : v->users()) {
        if (!moves_data(*u)) {
          other = true;
          continue;
        }
        if (in.insert(u).second && in.size() > kMaxChain) {
          c.why = fmt::format("more than {} moving nodes", kMaxChain);
          return c;
        }
        todo.push_back(&u->output(0));
      }
      if (other) frontier.insert(v);
    }
    if (std::none_of(in.begin(), in.end(), [&](const Node* m) { return runs_kernel(m); })) return c;  // as above
    if (frontier.size() != 1) {
      c.why = frontier.empty() ? "nothing reads the moved rows" : fmt::format("its rows go to {} values", frontier.size());
      return c;
    }
    c.x = *frontier.begin();
    // Every node of the chain reads only the product's rows (no other data joins them).
    for (const Node* n : in) {
      for (const Value* d : data_inputs(*n)) {
        if (d != p && (!d->producer() || !in.count(d->producer()))) {
          c.why = fmt::format("{} also reads '{}'", node_text(*n), d->name());
          return c;
        }
      }
    }
    c.nodes = ordered(in);
    return c;
  }

  /// Why a value cannot leave its place in the buffers: another value is a view of it.
  std::string derived_views(const Value* v) const {
    for (const Buffer& b : s_.buffers) {
      for (const ViewStep& st : b.views) {
        if (st.from == v) return fmt::format("'{}' is a view of '{}'", st.value->name(), v->name());
      }
    }
    return "";
  }

  /// Makes v a step of buffer `into` (step.value = v): its own buffer absorbed, or its step where it
  /// was removed (derived_views: no value is a view of it).
  void rehome(const Value* v, int into, ViewStep step) {
    const int b = index_.buffer(v);
    Buffer& from = s_.buffers[static_cast<std::size_t>(b)];
    if (from.value == v) {
      absorb_buffer(s_, b, into, step);
    } else {
      from.views.erase(std::remove_if(from.views.begin(), from.views.end(), [&](const ViewStep& st) { return st.value == v; }),
                       from.views.end());
      step.value = v;
      s_.buffers[static_cast<std::size_t>(into)].views.push_back(step);
    }
    index_.rebuild();
  }

  /// The nodes in graph (topological) order.
  std::vector<const Node*> ordered(const std::set<const Node*>& nodes) const {
    std::vector<const Node*> r;
    for (const auto& up : s_.graph->nodes()) {
      if (nodes.count(up.get())) r.push_back(up.get());
    }
    return r;
  }

  /// Every value the chain computes but `keep` is read only inside it (and is no model output).
  std::string private_values(const Chain& c, const std::set<const Value*>& keep) const {
    std::set<const Node*> in(c.nodes.begin(), c.nodes.end());
    for (const Node* n : c.nodes) {
      const Value* v = &n->output(0);
      if (keep.count(v)) continue;
      if (v->is_graph_output()) return fmt::format("'{}' is a model output", v->name());
      for (const Node* u : v->users()) {
        if (!in.count(u)) return fmt::format("'{}' is also read by {}", v->name(), node_text(*u));
      }
    }
    return "";
  }

  void refuse(Kernel& k, const std::string& side, const std::string& why) {
    if (why.empty()) return;
    k.kept_row_map += (k.kept_row_map.empty() ? "" : "; ") + side + ": " + why;
  }

  const Value* add_table(const Kernel& k, const char* what, const std::vector<int32_t>& rows) {
    std::vector<int64_t> v(rows.begin(), rows.end());
    return s_.graph->add_constant(k.source.node->name() + "_" + what,
                                  Tensor::from_i64(DType::int32, {static_cast<int64_t>(rows.size())}, v));
  }

  void take(Kernel& k, const Chain& c) {
    for (const Node* n : c.nodes) {
      if (is_view_node(*n)) continue;
      k.row_maps.folded.push_back(node_text(*n));
      k.nodes.push_back(n->name());
      if (runs_kernel(n)) removed_.insert(n);
    }
  }

  bool try_gather(std::size_t ki) {
    Kernel& k = s_.kernels[ki];
    const Node& n = *k.source.node;
    const Value* a = k.source.inputs.at(0);
    if (!a || a != n.input_ptr(0)) return false;
    const Chain c = gather_chain(a);
    if (c.nodes.empty() && c.why.empty()) return false;
    if (!c.why.empty()) return refuse(k, "A", c.why), false;
    if (std::string why = product_refusal(k); !why.empty()) return refuse(k, "A", why), false;
    // The last moving node's output (A, or what A is a reshape of).
    const Value* t = a;
    while (t->producer() && is_view_node(*t->producer()) && std::count(c.nodes.begin(), c.nodes.end(), t->producer())) {
      t = t->producer()->input_ptr(0);
    }
    const Value* x = c.x;
    std::string why = dense_own(x, "source");
    if (why.empty() && x->dtype() != a->dtype()) why = "the source's type differs";
    if (why.empty() && (x->shape().empty() || x->shape().back() != a->shape().back())) {
      why = "the moves change the rows' length (A's K is not the source's last dim)";
    }
    if (why.empty()) why = derived_views(a);
    // Every value between is read only inside the chain; A and the reshapes to it only by products
    // that take the same table (each is tried in turn: here, only this one may read them).
    std::set<const Value*> keep;
    for (const Value* v = a;; v = v->producer()->input_ptr(0)) {
      keep.insert(v);
      if (v == t) break;
    }
    if (why.empty()) why = private_values(c, keep);
    for (const Value* v : keep) {
      for (const Node* u : v->users()) {
        if (why.empty() && u != &n && !(is_view_node(*u) && keep.count(&u->output(0)))) {
          why = fmt::format("'{}' is also read by {}", v->name(), node_text(*u));
        }
      }
      if (why.empty() && v->is_graph_output()) why = fmt::format("'{}' is a model output", v->name());
    }
    if (why.empty() && num_elements(x->shape()) >= kMaxIndexElements) why = "the source is too large to index exactly";
    Tensor moved;
    if (why.empty()) moved = evaluate(c.nodes, x, a, &why);
    std::vector<int32_t> rows;
    if (why.empty()) rows = rows_of(moved, x->shape().back(), &why);
    if (!why.empty()) return refuse(k, "A", why), false;
    // A joins x's buffer as its rows gathered (wherever it was: its own buffer's value, a reshape
    // of the last move's output, a view fold_operand_views made); the product reads it through the
    // table.
    ViewStep step;
    step.kind = ViewStep::Kind::row_gather;
    step.from = x;
    step.node = t->producer();
    rehome(a, index_.buffer(x), step);
    k.source.inputs.resize(std::max<std::size_t>(k.source.inputs.size(), kRowTableYInput + 1));
    k.source.inputs[kRowTableAInput] = add_table(k, "a_rows", rows);
    k.row_maps.gather_a = true;
    take(k, c);
    return true;
  }

  bool try_scatter(std::size_t ki) {
    Kernel& k = s_.kernels[ki];
    const Node& n = *k.source.node;
    const Value* p = k.source.outputs.at(0);
    if (!p || p != &n.output(0)) return false;
    const Chain c = scatter_chain(p);
    if (c.nodes.empty() && c.why.empty()) return false;
    if (!c.why.empty()) return refuse(k, "Y", c.why), false;
    if (std::string why = product_refusal(k); !why.empty()) return refuse(k, "Y", why), false;
    std::string why;
    if (n.num_inputs() > ops::kFusedResidualInput && n.input_ptr(ops::kFusedResidualInput)) {
      why = "the product adds a residual laid out as its output";
    }
    // D (read by others) is the last moving node's output, or reshapes of it.
    const Value* d = c.x;
    const Value* dm = d;
    while (dm->producer() && is_view_node(*dm->producer()) && std::count(c.nodes.begin(), c.nodes.end(), dm->producer())) {
      dm = dm->producer()->input_ptr(0);
    }
    std::set<const Value*> keep;
    for (const Value* v = d;; v = v->producer()->input_ptr(0)) {
      keep.insert(v);
      if (v == dm) break;
    }
    if (why.empty()) why = dense_own(p, "product's output");
    if (why.empty()) why = dense_own(dm, "destination");
    if (why.empty() && (dm->shape().back() != p->shape().back() || d->shape().back() != p->shape().back())) {
      why = "the moves change the rows' length";
    }
    if (why.empty()) why = private_values(c, keep);
    if (why.empty() && num_elements(p->shape()) >= kMaxIndexElements) why = "the product's output is too large to index exactly";
    Tensor moved;
    if (why.empty()) moved = evaluate(c.nodes, p, dm, &why);
    std::vector<int32_t> src;
    if (why.empty()) src = rows_of(moved, p->shape().back(), &why);
    // The inverse: each destination row is one product row, each product row lands once at most.
    const int64_t prows = num_elements(p->shape()) / p->shape().back();
    std::vector<int32_t> rows(static_cast<std::size_t>(prows), -1);
    for (std::size_t r = 0; why.empty() && r < src.size(); ++r) {
      if (src[r] < 0) {
        why = fmt::format("row {} of '{}' is zeros, not a row of the product", r, dm->name());
      } else if (rows[static_cast<std::size_t>(src[r])] >= 0) {
        why = fmt::format("row {} of the product lands twice", src[r]);
      } else {
        rows[static_cast<std::size_t>(src[r])] = static_cast<int32_t>(r);
      }
    }
    if (!why.empty()) return refuse(k, "Y", why), false;
    // The residual Add: D's only reader, adding a value of D's shape; the product writes its output.
    const Value* dest = dm;
    const Node* add = residual_add(d, keep);
    const Value* residual = nullptr;
    if (add) {
      residual = add->input_ptr(0) == d ? add->input_ptr(1) : add->input_ptr(0);
      dest = &add->output(0);
      k.row_maps.residual = true;
    }
    ViewStep step;
    step.kind = ViewStep::Kind::row_scatter;
    step.from = dest;
    step.node = c.nodes.back();
    absorb_buffer(s_, index_.buffer(p), index_.buffer(dest), step);
    index_.rebuild();
    k.source.inputs.resize(std::max<std::size_t>(k.source.inputs.size(), kRowTableYInput + 1));
    k.source.inputs[kRowTableYInput] = add_table(k, "y_rows", rows);
    k.row_maps.scatter_y = true;
    take(k, c);
    if (add) {
      k.source.inputs[ops::kFusedResidualInput] = residual;
      k.row_maps.folded.push_back(node_text(*add) + " as the residual");
      k.nodes.push_back(add->name());
      removed_.insert(add);
    }
    return true;
  }

  /// The Add that is D's (and its reshapes') only reader, adding a value of D's shape and type into
  /// a dense value of its own (an arena buffer or a model output); null when there is none.
  const Node* residual_add(const Value* d, const std::set<const Value*>& keep) const {
    const Node* add = nullptr;
    for (const Value* v : keep) {
      for (const Node* u : v->users()) {
        if (keep.count(&u->output(0)) && is_view_node(*u)) continue;
        if (add || v != d || !onnx_op(*u, "Add") || !runs_kernel(u)) return nullptr;
        add = u;
      }
    }
    if (!add || add->num_inputs() != 2 || add->input_ptr(0) == add->input_ptr(1)) return nullptr;
    const Value* r = add->input_ptr(0) == d ? add->input_ptr(1) : add->input_ptr(0);
    const Value* e = &add->output(0);
    if (r->shape() != d->shape() || e->shape() != d->shape() || r->dtype() != d->dtype() || e->dtype() != d->dtype()) {
      return nullptr;
    }
    const Kernel& ak = s_.kernels[kernel_.at(add)];
    if (!ak.folded_casts.empty() || !ak.conversion.empty() || !dense_own(e, "sum").empty()) return nullptr;
    // The residual read where Y is written: dense, as the sum is.
    std::vector<int64_t> st;
    int64_t offset = 0;
    if (index_.buffer(r) < 0 || !strides_in_buffer(s_, index_, r, &st, &offset) || st != strides_of(r->shape()) ||
        offset != 0) {
      return nullptr;
    }
    return add;
  }

  Schedule& s_;
  const LowerOptions& o_;
  ValueIndex index_;
  const std::map<const Node*, std::size_t> kernel_;
  std::set<const Node*> removed_;
};

}  // namespace

bool fold_row_maps(Schedule& s, const LowerOptions& o) { return RowMapsStage(s, o).run(); }

}  // namespace modelc

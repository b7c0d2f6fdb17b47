// compiler/schedule/operand_views.cpp — the fold_operand_views stage (schedule/lower.h) and the
// strides of a view through its chain of reshapes, Transposes and Slices.
//
// The GEMM templates read every operand through compile-time strides (templates/gemm.cuh
// Strides<>, schedule/linear.h): a transposed or sliced operand is other strides and an offset,
// no copy. So a Transpose or Slice kernel whose output (through any reshapes after it) only
// matrix products read as their A or B becomes a view: those products read its input through
// the strides the view gives. Where a reader is not a product, or a reshape after it has no
// strides (a Transpose then a Reshape merging dims that the Transpose separated), a Transpose can
// still go the other way: the product before it (whose output only it reads) writes its result
// through the inverse permutation straight into the Transpose's buffer (attention's context
// [heads, seq, d] -> [seq, heads, d] before the output projection). Otherwise the kernel stays,
// and its note in the report says why.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ops/fused.h"
#include "ops/registry.h"
#include "ops/tensor.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "schedule/lower.h"
#include "support/error.h"

namespace modelc {

namespace {

bool is_op(const Node& n, const char* op) { return (n.domain().empty() || n.domain() == "ai.onnx") && n.op() == op; }

bool strided_op(const Node& n) { return is_op(n, "Transpose") || is_op(n, "Slice"); }

/// Unit dims get the stride view_strides gives them: the next inner dim's stride times its extent
/// (any value addresses the same elements; this one keeps a dense view dense).
void fill_unit_strides(const Shape& shape, std::vector<int64_t>& strides) {
  int64_t inner = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) {
      strides[d] = inner;
    } else {
      inner = strides[d] * shape[d];
    }
  }
}

/// A reshape of a strided view that splits and merges dims where the strides chain (the outer
/// stride of a merged group is the inner one times the inner extent), unit dims dropped and
/// refilled; false when no strides express it.
bool split_merge_strides(const Shape& from, const std::vector<int64_t>& st, const Shape& to,
                         std::vector<int64_t>* out) {
  std::vector<int64_t> od, os, nd;
  for (std::size_t d = 0; d < from.size(); ++d) {
    if (from[d] == 1) continue;
    od.push_back(from[d]);
    os.push_back(st[d]);
  }
  for (int64_t d : to) {
    if (d != 1) nd.push_back(d);
  }
  std::vector<int64_t> ns(nd.size(), 0);
  std::size_t oi = 0, ni = 0;
  while (oi < od.size() && ni < nd.size()) {
    std::size_t oj = oi + 1, nj = ni + 1;
    int64_t op = od[oi], np = nd[ni];
    while (op != np) {
      if (np < op) {
        if (nj == nd.size()) return false;
        np *= nd[nj++];
      } else {
        if (oj == od.size()) return false;
        op *= od[oj++];
      }
    }
    for (std::size_t k = oi; k + 1 < oj; ++k) {
      if (os[k] != os[k + 1] * od[k + 1]) return false;
    }
    ns[nj - 1] = os[oj - 1];
    for (std::size_t k = nj - 1; k > ni; --k) ns[k - 1] = ns[k] * nd[k];
    oi = oj;
    ni = nj;
  }
  if (oi != od.size() || ni != nd.size()) return false;
  std::vector<int64_t> r(to.size(), 0);
  std::size_t j = 0;
  for (std::size_t d = 0; d < to.size(); ++d) {
    if (to[d] != 1) r[d] = ns[j++];
  }
  fill_unit_strides(to, r);
  *out = r;
  return true;
}

/// "MatMul 'name'".
std::string node_text(const Node& n) { return n.op() + " '" + n.name() + "'"; }

}  // namespace

bool Lowering::written_through(const Value* v) const {
  auto it = steps_.find(v);
  return it != steps_.end() && it->second.inverse;
}

bool Lowering::strides_in_root(const Value* v, std::vector<int64_t>* strides, int64_t* offset) const {
  auto it = steps_.find(v);
  if (it == steps_.end()) {  // a root: its storage
    auto ohwi = layout_.weight_storage.find(v);
    *strides = ohwi != layout_.weight_storage.end() ? weight_strides(v->shape(), ohwi->second)
                                                      : storage_strides(v->shape(), storage_of(v));
    *offset = 0;
    return true;
  }
  const ViewStep& s = it->second;
  std::vector<int64_t> st;
  if (!strided_op(*s.node)) {
    // A reshape: from the nearest value before it that is not itself a reshape (a chain of
    // reshapes is one reshape).
    const Value* from = s.from;
    for (auto f = steps_.find(from); f != steps_.end() && !strided_op(*f->second.node); f = steps_.find(from)) {
      from = f->second.from;
    }
    if (!strides_in_root(from, &st, offset)) return false;
    return view_strides(from->shape(), st, v->shape(), strides) ||
           split_merge_strides(from->shape(), st, v->shape(), strides);
  }
  if (!strides_in_root(s.from, &st, offset)) return false;
  const Node& n = *s.node;
  if (is_op(n, "Transpose")) {
    const std::vector<int64_t> perm = ops::transpose_perm(n, static_cast<int64_t>(n.input(0).shape().size()));
    strides->assign(perm.size(), 0);
    for (std::size_t i = 0; i < perm.size(); ++i) {
      const std::size_t p = static_cast<std::size_t>(perm[i]);
      if (s.inverse) {
        (*strides)[p] = st[i];
      } else {
        (*strides)[i] = st[p];
      }
    }
    fill_unit_strides(v->shape(), *strides);
    return true;
  }
  *strides = st;
  *offset += ops::slice_view(ops::slice_ranges(n, n.input(0).shape(), ops::slice_params(n)), *strides);
  return true;
}

// The kernels that read `views` (a Transpose's or Slice's output and the reshapes of it), with the
// input each reads; a reader that runs no kernel (a view is not one) with input -1.
std::vector<std::pair<const Node*, int>> Lowering::view_readers(const std::vector<const Value*>& views) const {
  std::vector<std::pair<const Node*, int>> r;
  for (const Value* x : views) {
    for (const Node* u : x->users()) {
      if (u->has_output(0) && std::count(views.begin(), views.end(), &u->output(0))) continue;  // a reshape of it
      const bool kernel = std::count(nodes_.begin(), nodes_.end(), u) > 0;
      for (int i = 0; i < u->num_inputs(); ++i) {
        if (u->input_ptr(i) == x) r.push_back({u, kernel ? i : -1});
      }
    }
  }
  return r;
}

bool Lowering::is_product(const Node* n) const {
  const auto k = std::find(nodes_.begin(), nodes_.end(), n);
  if (k == nodes_.end() || families_[static_cast<std::size_t>(k - nodes_.begin())] != "gemm") return false;
  const std::string op = linear::producer_op(*n);
  return op == "MatMul" || op == "Gemm";
}

// Why the views cannot be read as strided operands ("" when they can): a reader that is not a
// matrix product taking one as A or B, or a view with no strides.
std::string Lowering::operand_view_refusal(const Node& n, const std::vector<const Value*>& views) const {
  for (const Value* x : views) {
    std::vector<int64_t> st;
    int64_t offset = 0;
    if (!strides_in_root(x, &st, &offset)) {
      return fmt::format("its reshape '{}' [{}] has no strides over the {}'s input", x->name(), shape_str(x->shape()),
                         n.op());
    }
  }
  for (const auto& [u, i] : view_readers(views)) {
    if (!is_product(u)) return "its output is read by " + node_text(*u) + " (not a matrix product)";
    if (i > 1) return fmt::format("its output is input {} of {} (not the A or B operand)", i, node_text(*u));
    if (u->output(0).shape().size() > 5) {
      return fmt::format("{} has {} batch dims (the GEMM template takes 3)", node_text(*u), u->output(0).shape().size() - 2);
    }
  }
  return "";
}

// Why the product before a Transpose cannot write its result through the Transpose's inverse
// permutation ("" when it can).
std::string Lowering::write_through_refusal(const Node& n) const {
  const Value* in = &n.input(0);
  const Node* p = in->producer();
  if (!is_op(n, "Transpose")) return "a Slice's input is larger than its output";
  if (!p || !is_product(p) || root(in) != in) return "its input is not a matrix product's output";
  if (in->users().size() != 1 || in->is_graph_output()) return "the product's output has other readers";
  if (p->num_inputs() > ops::kFusedResidualInput && p->input_ptr(ops::kFusedResidualInput)) {
    return "the product adds a residual, which it reads laid out as its output";
  }
  if (layout_.storage.count(in)) return "the product's output is stored channels-last";
  return "";
}

// Makes n (a Transpose or Slice kernel) a view when its readers or its producer allow it; else
// says why in *why when a matrix product is on either side (empty otherwise: nothing to explain).
bool Lowering::try_operand_view(const Node& n, std::string* why) {
  const Value* in = &n.input(0);
  const Value* out = &n.output(0);
  if (output_of_.count(out) || folded_as_.count(in) || folded_as_.count(out) || out->numel() == 0) return false;
  std::vector<const Value*> views{out};
  for (const auto& [v, r] : root_) {
    if (r == out) views.push_back(v);
  }
  // A Transpose that moves only unit dims changes no byte: a view for every reader.
  bool near_product = (in->producer() && is_product(in->producer())) || ops::transpose_moves_unit_dims_only(n);
  for (const auto& [u, i] : view_readers(views)) near_product = near_product || is_product(u);
  if (!near_product) return false;
  if (layout_.storage.count(root(in)) || layout_.storage.count(out)) {
    *why = "its input or output is stored channels-last";
    return false;
  }
  if (is_op(n, "Slice")) {
    for (const ops::SliceRange& r : ops::slice_ranges(n, in->shape(), ops::slice_params(n))) {
      if (r.step < 0) {
        *why = "a negative step";
        return false;
      }
    }
  }
  // Forward: the readers take strided views of n's input.
  steps_[out] = {in, &n, false};
  *why = ops::transpose_moves_unit_dims_only(n) ? "" : operand_view_refusal(n, views);
  if (why->empty()) {
    for (const Value* v : views) root_[v] = root(in);
    for (const auto& [u, i] : view_readers(views)) {
      std::vector<std::string>& notes = operand_views_[u];
      const std::string note = node_text(n) + " read as strides";
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
    return true;
  }
  steps_.erase(out);
  // Backward: the product before it writes through the Transpose.
  const std::string back = write_through_refusal(n);
  if (back.empty()) {
    steps_[in] = {out, &n, true};
    root_[in] = out;
    operand_views_[in->producer()].push_back("writes through " + node_text(n));
    why->clear();
    return true;
  }
  *why += "; " + back;
  return false;
}

bool Lowering::fold_operand_views() {
  done_.insert("fold_operand_views");
  std::set<const Node*> folded;
  // Last first: a Transpose after a Slice becomes a view before the Slice is looked at, so the
  // Slice's readers are then the products behind the Transpose.
  for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
    const Node* n = *it;
    if (!strided_op(*n) || copies_.count(n) || layout_.conversions.count(n)) continue;
    std::string why;
    if (try_operand_view(*n, &why)) {
      folded.insert(n);
    } else if (!why.empty()) {
      kept_views_[n] = why;
    }
  }
  for (std::size_t k = nodes_.size(); k-- > 0;) {
    if (!folded.count(nodes_[k])) continue;
    nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(k));
    families_.erase(families_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return !folded.empty();
}

}  // namespace modelc

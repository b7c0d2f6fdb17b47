// compiler/schedule/operand_views.cpp — the fold_operand_views stage (schedule/stages.h).
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
// and its note in the report says why (Kernel::kept_view).
// A view is a step in the buffer of the Transpose's input (ViewStep::transpose or slice: the
// Transpose's output joins that buffer, its reshapes with it), or a write-through one in the
// buffer of its output (ViewStep::write_through: the product's output joins it); the products
// list what they read or write that way (Kernel::operand_views), and schedule/views.h computes
// their views' strides along the steps.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ops/fused.h"
#include "ops/registry.h"
#include "ops/tensor.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "schedule/stages.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

namespace {

bool is_op(const Node& n, const char* op) { return (n.domain().empty() || n.domain() == "ai.onnx") && n.op() == op; }

bool strided_op(const Node& n) { return is_op(n, "Transpose") || is_op(n, "Slice"); }

/// "MatMul 'name'".
std::string node_text(const Node& n) { return n.op() + " '" + n.name() + "'"; }

/// The stage's state: the schedule, an index of its buffers (rebuilt after each change) and the
/// kernels by node.
class OperandViews {
 public:
  explicit OperandViews(Schedule& s) : s_(s), index_(s), kernel_(kernel_of_node(s)) {}

  bool run() {
    std::set<const Node*> folded;
    // Last first: a Transpose after a Slice becomes a view before the Slice is looked at, so the
    // Slice's readers are then the products behind the Transpose.
    for (std::size_t k = s_.kernels.size(); k-- > 0;) {
      const Kernel& kernel = s_.kernels[k];
      const Node* n = kernel.source.node;
      if (!strided_op(*n) || kernel.output_copy || !kernel.conversion.empty()) continue;
      std::string why;
      if (same_memory_view(*n, &why)) {
        folded.insert(n);
        continue;
      }
      const std::string layout_why = why;
      if (try_operand_view(*n, &why)) {
        folded.insert(n);
      } else if (!why.empty() || !layout_why.empty()) {
        // A Transpose of a channels-last buffer: why it is not the same memory (try_operand_view then
        // refuses any channels-last operand).
        s_.kernels[k].kept_view = layout_why.empty() ? why : layout_why;
      }
    }
    if (folded.empty()) return false;
    s_.kernels.erase(std::remove_if(s_.kernels.begin(), s_.kernels.end(),
                                    [&](const Kernel& k) { return folded.count(k.source.node) != 0; }),
                     s_.kernels.end());
    resolve(s_);
    return true;
  }

 private:
  Kernel* kernel(const Node* n) {
    auto it = kernel_.find(n);
    return it == kernel_.end() ? nullptr : &s_.kernels[it->second];
  }

  bool is_product(const Node* n) {
    const Kernel* k = kernel(n);
    if (!k || k->family_name() != "gemm") return false;
    const std::string op = linear::producer_op(*n);
    return op == "MatMul" || op == "Gemm";
  }

  bool channels_last(const Value* v) const {
    const int b = index_.buffer(v);
    return b >= 0 && s_.buffers[static_cast<std::size_t>(b)].storage.channels_last;
  }

  // The kernels that read `views` (a Transpose's or Slice's output and the reshapes of it), with the
  // input each reads; a reader that runs no kernel (a view is not one) with input -1.
  std::vector<std::pair<const Node*, int>> view_readers(const std::vector<const Value*>& views) {
    std::vector<std::pair<const Node*, int>> r;
    for (const Value* x : views) {
      for (const Node* u : x->users()) {
        if (u->has_output(0) && std::count(views.begin(), views.end(), &u->output(0))) continue;  // a reshape of it
        const bool runs = kernel(u) != nullptr;
        for (int i = 0; i < u->num_inputs(); ++i) {
          if (u->input_ptr(i) == x) r.push_back({u, runs ? i : -1});
        }
      }
    }
    return r;
  }

  // Why the views cannot be read as strided operands ("" when they can): a reader that is not a
  // matrix product taking one as A or B, or a view with no strides.
  std::string operand_view_refusal(const Node& n, const std::vector<const Value*>& views) {
    for (const Value* x : views) {
      std::vector<int64_t> st;
      int64_t offset = 0;
      if (!strides_in_buffer(s_, index_, x, &st, &offset)) {
        return fmt::format("its reshape '{}' [{}] has no strides over the {}'s input", x->name(), shape_str(x->shape()),
                           n.op());
      }
    }
    for (const auto& [u, i] : view_readers(views)) {
      if (!is_product(u)) return "its output is read by " + node_text(*u) + " (not a matrix product)";
      if (i > 1) return fmt::format("its output is input {} of {} (not the A or B operand)", i, node_text(*u));
      if (u->output(0).shape().size() > 5) {
        return fmt::format("{} has {} batch dims (the GEMM template takes 3)", node_text(*u),
                           u->output(0).shape().size() - 2);
      }
    }
    return "";
  }

  // Why the product before a Transpose cannot write its result through the Transpose's inverse
  // permutation ("" when it can).
  std::string write_through_refusal(const Node& n) {
    const Value* in = &n.input(0);
    const Node* p = in->producer();
    if (!is_op(n, "Transpose")) return "a Slice's input is larger than its output";
    if (!p || !is_product(p) || index_.root(in) != in) return "its input is not a matrix product's output";
    if (in->users().size() != 1 || in->is_graph_output()) return "the product's output has other readers";
    if (p->num_inputs() > ops::kFusedResidualInput && p->input_ptr(ops::kFusedResidualInput)) {
      return "the product adds a residual, which it reads laid out as its output";
    }
    if (channels_last(in)) return "the product's output is stored channels-last";
    return "";
  }

  static std::string layout_text(const Buffer& b) {
    if (!b.storage.channels_last) return "dense";
    const int64_t C = b.shape.size() > 1 ? b.shape[1] : 1;
    return b.storage.pitch == C ? "NHWC" : fmt::format("NHWC with channel pitch {} (C {})", b.storage.pitch, C);
  }

  // Why Transpose n does not merely read its input's memory in the order its output is stored ("" when
  // it does: the output's storage strides are the input's strides permuted). Every reader then reads
  // the same bytes through the same strides, so the Transpose is a view whatever reads it.
  std::string same_memory_refusal(const Node& n) {
    const Value* in = &n.input(0);
    const Value* out = &n.output(0);
    const int ib = index_.buffer(in), obi = index_.buffer(out);
    if (ib < 0 || obi < 0 || ib == obi) return "its input and output are not two buffers";
    const Buffer& ob = s_.buffers[static_cast<std::size_t>(obi)];
    const Buffer& inb = s_.buffers[static_cast<std::size_t>(ib)];
    if (ob.value != out) return "its output is a slice of another buffer";
    for (const ViewStep& st : ob.views) {  // kernels write into its buffer (an elided Concat, a write-through)
      if (st.kind == ViewStep::Kind::concat_slice || st.kind == ViewStep::Kind::write_through) {
        return "its output's buffer is written through '" + st.value->name() + "'";
      }
    }
    if (ob.space != Space::arena || inb.space != Space::arena) return "its input or output is a model input or output";
    if (in->dtype() != out->dtype()) return "it converts the element type";
    std::vector<int64_t> st;
    int64_t offset = 0;
    if (!strides_in_buffer(s_, index_, in, &st, &offset)) return "its input has no strides";
    const std::vector<int64_t> perm = ops::transpose_perm(n, static_cast<int64_t>(in->shape().size()));
    std::vector<int64_t> moved(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) moved[i] = st[static_cast<std::size_t>(perm[i])];
    const std::vector<int64_t> stored = storage_strides(out->shape(), ob.storage);
    if (same_memory(out->shape(), moved, stored)) return "";
    std::string p;
    for (int64_t d : perm) p += (p.empty() ? "" : ", ") + std::to_string(d);
    // (0, 2, ..., r-1, 1) moves the channels last, (0, r-1, 1, ..., r-2) back.
    const int64_t r = static_cast<int64_t>(perm.size());
    bool to_last = r >= 3 && perm[0] == 0 && perm[static_cast<std::size_t>(r - 1)] == 1;
    bool to_channels = r >= 3 && perm[0] == 0 && perm[1] == r - 1;
    for (int64_t d = 1; d + 1 < r; ++d) to_last = to_last && perm[static_cast<std::size_t>(d)] == d + 1;
    for (int64_t d = 2; d < r; ++d) to_channels = to_channels && perm[static_cast<std::size_t>(d)] == d - 1;
    if (to_last || to_channels) {
      return fmt::format("a channels-last move (perm ({})), but its input is stored {} and its output {}: not the same "
                         "memory",
                         p, layout_text(inb), layout_text(ob));
    }
    return fmt::format("not a channels-last move: perm ({}) reads its input ({}) in another order than its output is "
                       "stored ({})",
                       p, layout_text(inb), layout_text(ob));
  }

  // Makes Transpose n a view of its input for every reader when it copies nothing (same_memory_refusal);
  // else, where its input or output is stored channels-last, says why in *why.
  bool same_memory_view(const Node& n, std::string* why) {
    if (!is_op(n, "Transpose")) return false;
    const Value* in = &n.input(0);
    const Value* out = &n.output(0);
    const Kernel& self = *kernel(&n);
    if (self.source.inputs.at(0) != in || self.source.outputs.at(0) != out || out->numel() == 0) return false;
    const std::string refusal = same_memory_refusal(n);
    if (refusal.empty()) {
      ViewStep step;
      step.kind = ViewStep::Kind::transpose;
      step.from = in;
      step.node = &n;
      absorb_buffer(s_, index_.buffer(out), index_.buffer(in), step);
      index_.rebuild();
      return true;
    }
    if (channels_last(index_.root(in)) || channels_last(out)) *why = refusal;
    return false;
  }

  // Makes n (a Transpose or Slice kernel) a view when its readers or its producer allow it; else
  // says why in *why when a matrix product is on either side (empty otherwise: nothing to explain).
  bool try_operand_view(const Node& n, std::string* why) {
    const Value* in = &n.input(0);
    const Value* out = &n.output(0);
    const Kernel& self = *kernel(&n);
    const int out_buffer = index_.buffer(out);
    const Buffer& ob = s_.buffers[static_cast<std::size_t>(out_buffer)];
    // A model output's buffer, a folded boundary Cast's other side (the kernel's source is not its
    // node's operand), or nothing to read: the kernel stays.
    if ((ob.value == out && ob.space == Space::output) || self.source.inputs.at(0) != in ||
        self.source.outputs.at(0) != out || out->numel() == 0) {
      return false;
    }
    // The output and the reshapes of it (the values whose root it is), in the buffer's order.
    std::vector<const Value*> views{out};
    if (ob.value == out) {
      for (const ViewStep& st : ob.views) {
        if (index_.root(st.value) == out) views.push_back(st.value);
      }
    }
    // A Transpose that moves only unit dims changes no byte: a view for every reader.
    bool near_product = (in->producer() && is_product(in->producer())) || ops::transpose_moves_unit_dims_only(n);
    for (const auto& [u, i] : view_readers(views)) near_product = near_product || is_product(u);
    if (!near_product) return false;
    if (channels_last(index_.root(in)) || channels_last(out)) {
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
    // Forward: the readers take strided views of n's input; the output's buffer joins the input's
    // (tried: undone when a reader refuses). Not when the output is an elided Concat's slice: a
    // kernel must write it there (its reader, the Concat, is no product).
    const std::vector<Buffer> before = s_.buffers;
    if (ob.value == out) {
      ViewStep step;
      step.kind = is_op(n, "Transpose") ? ViewStep::Kind::transpose : ViewStep::Kind::slice;
      step.from = in;
      step.node = &n;
      absorb_buffer(s_, out_buffer, index_.buffer(in), step);
      index_.rebuild();
      *why = ops::transpose_moves_unit_dims_only(n) ? "" : operand_view_refusal(n, views);
    } else {
      *why = operand_view_refusal(n, views);
      if (why->empty()) *why = "its output is a slice of an elided Concat's output";
    }
    if (why->empty()) {
      for (const auto& [u, i] : view_readers(views)) {
        Kernel* reader = kernel(u);
        if (!reader) continue;
        std::vector<std::string>& notes = reader->operand_views;
        const std::string note = node_text(n) + " read as strides";
        if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
      }
      return true;
    }
    s_.buffers = before;
    index_.rebuild();
    // Backward: the product before it writes through the Transpose.
    const std::string back = write_through_refusal(n);
    if (back.empty()) {
      ViewStep through;
      through.kind = ViewStep::Kind::write_through;
      through.from = out;
      through.node = &n;
      absorb_buffer(s_, index_.buffer(in), index_.buffer(out), through);
      index_.rebuild();
      kernel(in->producer())->operand_views.push_back("writes through " + node_text(n));
      why->clear();
      return true;
    }
    *why += "; " + back;
    return false;
  }

  Schedule& s_;
  ValueIndex index_;
  const std::map<const Node*, std::size_t> kernel_;
};

}  // namespace

bool fold_operand_views(Schedule& s, const LowerOptions&) { return OperandViews(s).run(); }

}  // namespace modelc

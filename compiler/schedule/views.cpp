// compiler/schedule/views.cpp — see views.h; and the find_views stage.
#include "schedule/views.h"

#include <algorithm>

#include "ops/registry.h"
#include "ops/tensor.h"
#include "schedule/layout.h"
#include "schedule/stages.h"
#include "support/error.h"

namespace modelc {

namespace {

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

}  // namespace

bool compile_time_node(const Node& n) {
  bool any = false;
  for (const Value* v : n.outputs()) {
    if (!v) continue;
    if (!v->is_constant()) return false;
    any = true;
  }
  return any;
}

bool used_value(const Value* v) { return v && (!v->users().empty() || v->is_graph_output()); }

bool dead_node(const Node& n) {
  for (const Value* v : n.outputs()) {
    if (used_value(v)) return false;
  }
  return true;
}

const char* view_step_name(ViewStep::Kind k) {
  switch (k) {
    case ViewStep::Kind::reshape: return "reshape";
    case ViewStep::Kind::transpose: return "transpose";
    case ViewStep::Kind::slice: return "slice";
    case ViewStep::Kind::write_through: return "written through";
    case ViewStep::Kind::concat_slice: return "concat slice";
    case ViewStep::Kind::row_gather: return "rows gathered";
    case ViewStep::Kind::row_scatter: return "rows scattered";
  }
  return "?";
}

void ValueIndex::rebuild() {
  at_.clear();
  for (std::size_t b = 0; b < s_.buffers.size(); ++b) note(static_cast<int>(b));
}

void ValueIndex::note(int b) {
  const Buffer& buf = s_.buffers[static_cast<std::size_t>(b)];
  if (buf.value) at_[buf.value] = {b, -1};
  for (std::size_t i = 0; i < buf.views.size(); ++i) at_[buf.views[i].value] = {b, static_cast<int>(i)};
}

int ValueIndex::buffer(const Value* v) const {
  auto it = at_.find(v);
  return it == at_.end() ? -1 : it->second.first;
}

const ViewStep* ValueIndex::step(const Value* v) const {
  auto it = at_.find(v);
  if (it == at_.end() || it->second.second < 0) return nullptr;
  return &s_.buffers[static_cast<std::size_t>(it->second.first)].views[static_cast<std::size_t>(it->second.second)];
}

const Value* ValueIndex::root(const Value* v) const {
  for (const ViewStep* st = step(v); st && st->kind != ViewStep::Kind::concat_slice; st = step(v)) v = st->from;
  return v;
}

Space ValueIndex::space(const Value* v) const {
  const int b = buffer(v);
  if (b >= 0) return s_.buffers[static_cast<std::size_t>(b)].space;
  return v->is_constant() ? Space::weights : v->is_graph_input() ? Space::input : Space::arena;
}

int add_value_buffer(Schedule& s, const Value* v) {
  Buffer b;
  b.name = v->name();
  b.value = v;
  b.dtype = v->dtype();
  b.shape = v->shape();
  if (v->is_constant()) {
    b.space = Space::weights;
  } else if (v->is_graph_input()) {
    b.space = Space::input;
    const auto& in = s.graph->inputs();
    b.index = static_cast<int>(std::find(in.begin(), in.end(), v) - in.begin());
    b.offset = 0;
  }
  s.buffers.push_back(std::move(b));
  return static_cast<int>(s.buffers.size()) - 1;
}

void absorb_buffer(Schedule& s, int from, int into, ViewStep step) {
  if (from == into) throw Error("internal: a buffer absorbed into itself");
  Buffer& f = s.buffers[static_cast<std::size_t>(from)];
  Buffer& t = s.buffers[static_cast<std::size_t>(into)];
  step.value = f.value;
  t.views.push_back(step);
  t.views.insert(t.views.end(), f.views.begin(), f.views.end());
  s.buffers.erase(s.buffers.begin() + from);
}

bool strides_in_buffer(const Schedule& s, const ValueIndex& index, const Value* v, std::vector<int64_t>* strides,
                       int64_t* offset) {
  const int b = index.buffer(v);
  if (b < 0) throw Error("internal: value '" + v->name() + "' is in no buffer");
  const ViewStep* step = index.step(v);
  if (!step) {  // the buffer's own value: its storage
    const Buffer& buf = s.buffers[static_cast<std::size_t>(b)];
    *strides = buf.ohwi ? weight_strides(v->shape(), *buf.ohwi) : storage_strides(v->shape(), buf.storage);
    return true;
  }
  const ViewStep st = *step;  // a copy: the recursion below takes other steps
  std::vector<int64_t> from;
  switch (st.kind) {
    case ViewStep::Kind::reshape: {
      // From the nearest value before it that is not itself a reshape (a chain of reshapes is one).
      const Value* f = st.from;
      for (const ViewStep* p = index.step(f); p && p->kind == ViewStep::Kind::reshape; p = index.step(f)) f = p->from;
      if (!strides_in_buffer(s, index, f, &from, offset)) return false;
      return view_strides(f->shape(), from, v->shape(), strides) ||
             split_merge_strides(f->shape(), from, v->shape(), strides);
    }
    case ViewStep::Kind::transpose:
    case ViewStep::Kind::write_through: {
      if (!strides_in_buffer(s, index, st.from, &from, offset)) return false;
      const Node& n = *st.node;
      const std::vector<int64_t> perm = ops::transpose_perm(n, static_cast<int64_t>(n.input(0).shape().size()));
      strides->assign(perm.size(), 0);
      for (std::size_t i = 0; i < perm.size(); ++i) {
        const std::size_t p = static_cast<std::size_t>(perm[i]);
        if (st.kind == ViewStep::Kind::write_through) {
          (*strides)[p] = from[i];
        } else {
          (*strides)[i] = from[p];
        }
      }
      fill_unit_strides(v->shape(), *strides);
      return true;
    }
    case ViewStep::Kind::slice: {
      if (!strides_in_buffer(s, index, st.from, &from, offset)) return false;
      const Node& n = *st.node;
      *strides = from;
      *offset += ops::slice_view(ops::slice_ranges(n, n.input(0).shape(), ops::slice_params(n)), *strides);
      return true;
    }
    case ViewStep::Kind::row_gather:
    case ViewStep::Kind::row_scatter: {
      // The value's own dense rows (its kernel addresses them through its table), from the start
      // of `from` (its buffer's own value: fold_row_maps).
      if (!strides_in_buffer(s, index, st.from, &from, offset)) return false;
      *strides = strides_of(v->shape());
      return true;
    }
    case ViewStep::Kind::concat_slice: {
      // The Concat's output's strides, from the slice's start along the axis; dense strides where
      // they address the same memory (a slice with only unit dims before the axis).
      if (!strides_in_buffer(s, index, st.from, &from, offset)) return false;
      *offset += st.start * from[static_cast<std::size_t>(st.axis)];
      *strides = same_memory(v->shape(), from, strides_of(v->shape())) ? strides_of(v->shape()) : from;
      return true;
    }
  }
  return false;
}

TensorView view_of(const Schedule& s, const ValueIndex& index, const Value* v) {
  TensorView t;
  if (!v) {
    t.dtype = DType::undefined;
    return t;
  }
  t.value = v->name();
  t.dtype = v->dtype();
  t.shape = v->shape();
  int64_t offset = 0;  // elements
  if (!strides_in_buffer(s, index, v, &t.strides, &offset)) {
    throw Error("internal: view '" + v->name() + "' of '" + index.root(v)->name() + "' has no strides in its layout");
  }
  t.buffer = index.buffer(v);
  const Buffer& b = s.buffers[static_cast<std::size_t>(t.buffer)];
  t.space = b.space;
  t.index = b.index;
  t.buffer_offset = offset * static_cast<int64_t>(dtype_size(t.dtype));
  t.offset = b.offset >= 0 ? b.offset + t.buffer_offset : -1;
  return t;
}

int64_t buffer_bytes(const Buffer& b) {
  if (b.data.defined()) return static_cast<int64_t>(b.data.nbytes());
  if (!b.value) return b.bytes;  // a workspace: its request
  const int64_t es = static_cast<int64_t>(dtype_size(b.dtype));
  if (b.ohwi) return b.ohwi->row * (b.shape.empty() ? 0 : b.shape[0]) * es;
  return storage_elements(b.shape, b.storage) * es;
}

void erase_kernels(Schedule& s, const std::set<std::size_t>& indices) {
  for (auto k = indices.rbegin(); k != indices.rend(); ++k) {
    s.kernels.erase(s.kernels.begin() + static_cast<std::ptrdiff_t>(*k));
  }
  resolve(s);
}

void resolve(Schedule& s) {
  ValueIndex index(s);
  for (std::size_t k = 0; k < s.kernels.size(); ++k) {
    Kernel& kernel = s.kernels[k];
    kernel.id = "k" + std::to_string(k);
    for (const auto* values : {&kernel.source.inputs, &kernel.source.outputs}) {
      for (const Value* v : *values) {
        if (v && index.buffer(v) < 0) index.note(add_value_buffer(s, v));
      }
    }
  }
  // The buffers some kernel touches, in their order.
  std::vector<bool> touched(s.buffers.size(), false);
  for (const Kernel& k : s.kernels) {
    for (const auto* values : {&k.source.inputs, &k.source.outputs}) {
      for (const Value* v : *values) {
        if (v) touched[static_cast<std::size_t>(index.buffer(v))] = true;
      }
    }
  }
  std::vector<Buffer> kept;
  for (std::size_t b = 0; b < s.buffers.size(); ++b) {
    if (touched[b]) kept.push_back(std::move(s.buffers[b]));
  }
  s.buffers = std::move(kept);
  for (Buffer& b : s.buffers) b.bytes = buffer_bytes(b);
  index.rebuild();
  for (Kernel& k : s.kernels) {
    k.inputs.clear();
    k.outputs.clear();
    for (const Value* v : k.source.inputs) k.inputs.push_back(view_of(s, index, v));
    for (const Value* v : k.source.outputs) k.outputs.push_back(view_of(s, index, v));
  }
}

void drop_unused_buffers(Schedule& s) {
  std::vector<bool> used(s.buffers.size(), false);
  auto mark = [&](const TensorView& v) {
    if (v.buffer >= 0) used[static_cast<std::size_t>(v.buffer)] = true;
  };
  for (const Kernel& k : s.kernels) {
    for (const TensorView& v : k.inputs) mark(v);
    for (const TensorView& v : k.outputs) mark(v);
    mark(k.workspace);
    mark(k.zeroed);
  }
  std::vector<int> renumber(s.buffers.size(), -1);
  std::vector<Buffer> kept;
  for (std::size_t b = 0; b < s.buffers.size(); ++b) {
    if (!used[b]) continue;
    renumber[b] = static_cast<int>(kept.size());
    kept.push_back(std::move(s.buffers[b]));
  }
  s.buffers = std::move(kept);
  auto move = [&](TensorView& v) {
    if (v.buffer >= 0) v.buffer = renumber[static_cast<std::size_t>(v.buffer)];
  };
  for (Kernel& k : s.kernels) {
    for (TensorView& v : k.inputs) move(v);
    for (TensorView& v : k.outputs) move(v);
    move(k.workspace);
    move(k.zeroed);
  }
}

std::map<const Node*, std::size_t> kernel_of_node(const Schedule& s) {
  std::map<const Node*, std::size_t> r;
  for (std::size_t k = 0; k < s.kernels.size(); ++k) r[s.kernels[k].source.node] = k;
  return r;
}

// ---- the find_views stage -----------------------------------------------------------------------

// A node that runs no kernel: its op is a view (Reshape, Identity, ...), or a conversion to the type
// its input already has (a Cast that precision or the model left; OpDef::view_when_same_type).
bool is_view_node(const Node& n) {
  const ops::OpDef& def = ops::lookup(n);
  if (def.kernels.size() == 1 && def.kernels[0] == "view") return true;
  return def.view_when_same_type && n.has_input(0) && n.has_output(0) && n.input(0).dtype() == n.output(0).dtype();
}

// Views alias their input: each view value becomes a step (a reshape) in its input's buffer.
bool find_views(Schedule& s, const LowerOptions&) {
  bool changed = false;
  ValueIndex index(s);
  for (const auto& up : s.graph->nodes()) {
    const Node& n = *up;
    if (compile_time_node(n) || dead_node(n) || !is_view_node(n)) continue;
    Value& in = n.input(0);
    Value& out = n.output(0);
    for (int i = 1; i < n.num_outputs(); ++i) {
      if (used_value(n.outputs()[i]) && !n.outputs()[i]->is_constant()) {
        throw n.error("output " + std::to_string(i) + " ('" + n.outputs()[i]->name() +
                          "') is used, but this op runs as a view of its input (no kernel computes it)",
                      "use the op's first output only (an inference model needs no Dropout mask)");
      }
    }
    if (in.dtype() != out.dtype() || in.numel() != out.numel()) {
      throw n.error("internal: a view from " + in.type_str() + " to " + out.type_str());
    }
    int b = index.buffer(&in);
    if (b < 0) {
      b = add_value_buffer(s, &in);
      index.note(b);
    }
    ViewStep step;
    step.kind = ViewStep::Kind::reshape;
    step.value = &out;
    step.from = &in;
    step.node = &n;
    s.buffers[static_cast<std::size_t>(b)].views.push_back(step);
    index.note(b);
    changed = true;
  }
  return changed;
}

}  // namespace modelc

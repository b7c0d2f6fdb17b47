// compiler/schedule/lower.cpp — the schedule stages (schedule/lower.h); compiler/pipeline/pipeline.cpp
// runs them in order and says what each needs.
#include "schedule/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "ops/registry.h"
#include "schedule/families.h"
#include "schedule/linear.h"
#include "schedule/tactics.h"
#include "schedule/winograd.h"
#include "support/error.h"

namespace modelc {

namespace {

bool compile_time(const Node& n) {
  bool any = false;
  for (const Value* v : n.outputs()) {
    if (!v) continue;
    if (!v->is_constant()) return false;
    any = true;
  }
  return any;
}

bool used(const Value* v) { return v && (!v->users().empty() || v->is_graph_output()); }

bool dead(const Node& n) {
  for (const Value* v : n.outputs()) if (used(v)) return false;
  return true;
}

bool default_domain(const Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// A node that runs no kernel: its op is a view (Reshape, Identity, ...), or a conversion to the type
// its input already has (a Cast that precision or the model left; OpDef::view_when_same_type).
bool is_view(const Node& n, const ops::OpDef& def) {
  if (def.kernels.size() == 1 && def.kernels[0] == "view") return true;
  return def.view_when_same_type && n.has_input(0) && n.has_output(0) && n.input(0).dtype() == n.output(0).dtype();
}

// A quick key for finding identical constants: the size and 64 sampled bytes (candidates with
// equal keys are compared in full).
uint64_t sample_key(const Tensor& t) {
  const uint8_t* p = t.raw();
  const std::size_t n = t.nbytes();
  uint64_t h = (1469598103934665603ull ^ n) * 1099511628211ull;
  h = (h ^ static_cast<uint64_t>(t.dtype())) * 1099511628211ull;
  for (std::size_t i = 0; i < 64 && n > 0; ++i) h = (h ^ p[i * (n - 1) / 63]) * 1099511628211ull;
  return h;
}

bool only_used_output(const Node& n, const Value* v) {
  for (const Value* o : n.outputs()) {
    if (o != v && used(o)) return false;
  }
  return true;
}
}  // namespace

Lowering::Lowering(Graph& g, const LowerOptions& o) : g_(g), o_(o) {
  s_.name = o_.name;
  s_.archs = o_.archs;
  if (s_.archs.empty()) throw Error("internal: lowering without an --arch");
  for (const std::string& a : o_.archs) arch_number(a);
  for (const Value* v : g_.inputs()) s_.inputs.push_back({v->name(), v->dtype(), v->shape()});
  for (const Value* v : g_.outputs()) s_.outputs.push_back({v->name(), v->dtype(), v->shape()});
  if (s_.outputs.empty()) throw Error("the model has no outputs: nothing to compile");
}

const Value* Lowering::root(const Value* v) const {
  auto it = root_.find(v);
  return it == root_.end() ? v : it->second;
}
// The value whose buffer a kernel reads or writes for v: v, or the other side of a folded Cast.
const Value* Lowering::stored(const Value* v) const {
  auto it = folded_as_.find(v);
  return it == folded_as_.end() ? v : it->second;
}
// The node's family (family_for), as substituted by LowerOptions::family_substitutes.
std::string Lowering::family_of(const Node& n) const {
  const std::string f = copies_.count(&n) ? "elementwise" : family_for(n);
  auto it = o_.family_substitutes.find(f);
  return it == o_.family_substitutes.end() ? f : it->second;
}
// The buffer a kernel reads or writes for v: its root, or the elided Concat's output it is a slice of.
const Value* Lowering::buffer(const Value* v) const {
  const Value* r = root(stored(v));
  auto slice = slices_.find(r);
  return slice == slices_.end() ? r : slice->second.whole;
}
bool Lowering::in_arena(const Value* r) const {
  return !r->is_constant() && !r->is_graph_input() && !output_of_.count(r);
}
Storage Lowering::storage_of(const Value* r) const {
  auto it = layout_.storage.find(r);
  return it == layout_.storage.end() ? Storage{} : it->second;
}
bool Lowering::remove_dead() {
  done_.insert("remove_dead");
  return g_.remove_dead() > 0;
}

// Views alias their input: record each view value's root (the value whose buffer it is).
bool Lowering::find_views() {
  done_.insert("find_views");
  for (const auto& up : g_.nodes()) {
    const Node& n = *up;
    if (compile_time(n) || dead(n)) continue;
    const ops::OpDef& def = ops::lookup(n);
    if (!is_view(n, def)) continue;
    Value& in = n.input(0);
    Value& out = n.output(0);
    for (int i = 1; i < n.num_outputs(); ++i) {
      if (used(n.outputs()[i]) && !n.outputs()[i]->is_constant()) {
        throw n.error("output " + std::to_string(i) + " ('" + n.outputs()[i]->name() +
                          "') is used, but this op runs as a view of its input (no kernel computes it)",
                      "use the op's first output only (an inference model needs no Dropout mask)");
      }
    }
    if (in.dtype() != out.dtype() || in.numel() != out.numel()) {
      throw n.error("internal: a view from " + in.type_str() + " to " + out.type_str());
    }
    root_[&out] = root(&in);
    steps_[&out] = {&in, &n, false};
  }
  return !root_.empty();
}

// Each graph output's buffer is the caller's: a root can be the buffer of one output only, and
// never of a graph input or constant. The others get a copy (an Identity node run as a kernel).
bool Lowering::claim_outputs() {
  done_.insert("claim_outputs");
  std::set<const Value*> claimed;
  for (int j = 0; j < static_cast<int>(g_.outputs().size()); ++j) {
    Value* v = g_.outputs()[j];
    const Value* r = root(v);
    if (!r->is_graph_input() && !r->is_constant() && !claimed.count(r)) {
      claimed.insert(r);
      output_of_[r] = j;
      continue;
    }
    Value* c = g_.add_value(v->name() + "_copy");
    c->set_type(v->dtype(), v->shape());
    Node* n = g_.add_node("Identity", v->name() + "_copy", {v}, {c});
    g_.set_output(j, c);
    copies_.insert(n);
    output_of_[c] = j;
  }
  return !copies_.empty();
}

bool Lowering::list_kernels() {
  done_.insert("list_kernels");
  std::vector<const Node*> missing;  // nodes whose family is not built in
  std::set<std::string> missing_families;
  for (const auto& up : g_.nodes()) {
    const Node& n = *up;
    if (compile_time(n) || dead(n)) continue;
    const ops::OpDef& def = ops::lookup(n);
    if (is_view(n, def) && !copies_.count(&n)) continue;
    const std::string family = family_of(n);
    if (family.empty()) throw n.error("internal: the op table lists no kernel template for " + n.op());
    if (family == "none") {
      throw n.error("this op is only computed at compile time, but its inputs are not constant",
                    "its inputs must not depend on a model input's data: bind such an input with --bind NAME=FILE "
                    "(an .npy or .pb file), or fix the input shapes with --shape");
    }
    bool empty = true;  // every output has zero elements: nothing to compute
    for (const Value* v : n.outputs()) empty = empty && (!v || v->numel() == 0);
    if (empty) continue;
    if (!find_family(family)) {
      missing.push_back(&n);
      missing_families.insert(family);
      continue;
    }
    nodes_.push_back(&n);
    families_.push_back(family);
  }
  if (missing.empty()) return true;
  std::string families, list;
  for (const std::string& f : missing_families) families += (families.empty() ? "'" : ", '") + f + "'";
  for (std::size_t i = 0; i < missing.size() && i < 8; ++i) {
    const Node& n = *missing[i];
    list += std::string(i ? ", " : "") + "'" + n.name() + "' (" + n.op() + ": " +
            family_of(n) + ")";
  }
  if (missing.size() > 8) list += " and " + std::to_string(missing.size() - 8) + " more";
  throw missing[0]->error("no template famil" +
                              std::string(missing_families.size() > 1 ? "ies " : "y ") + families + ": " +
                              std::to_string(missing.size()) + " node" + (missing.size() > 1 ? "s" : "") +
                              " need" + (missing.size() > 1 ? "" : "s") + " one: " + list,
                          "this build of modelc lacks the family (schedule/families.cpp, codegen/families/); "
                          "`modelc inspect` lists the model's ops");
}

bool Lowering::plan_layout() {
  done_.insert("layout");
  LayoutInput in;
  in.graph = &g_;
  in.nodes = &nodes_;
  in.families = &families_;
  in.root = [this](const Value* v) { return root(v); };
  in.in_arena = [this](const Value* v) { return in_arena(v); };
  layout_ = modelc::plan_layout(in, o_.layout);
  s_.layout = layout_.summary;
  return !layout_.storage.empty() || !layout_.conversions.empty();
}

// --fp16: the Casts at the model's boundaries fold into the kernels beside them, where those are
// elementwise, softmax, normalization or reduce kernels (their templates take each operand's
// element type). A Cast of a graph input that only such kernels read: they read the input and convert
// as they load. A Cast into a graph output of a value that only it reads, written by such a
// kernel (its other outputs unused): that kernel stores the output's type. The Cast runs no
// kernel; the kernel's note says it took it. (Conv and gemm kernels take their output type
// themselves.)
bool Lowering::converts_operands(const Node& n) const {
  if (copies_.count(&n) || compile_time(n) || !default_domain(n)) return false;
  if (layout_.channels_last_kernels.count(&n) || layout_.conversions.count(&n)) return false;
  const ops::OpDef& def = ops::lookup(n);
  if (def.moves_data) return false;
  const FamilyFacts* f = find_family(family_of(n));
  return f && f->converts_types;
}
// After the layout stage (on its kernel list): only dense buffers, and kernels it leaves NCHW.
bool Lowering::fold_boundary_casts() {
  done_.insert("fold_boundary_casts");
  for (const Node* cast : nodes_) {
    const Node& c = *cast;
    if (c.op() != "Cast" || !default_domain(c) || copies_.count(&c) || layout_.conversions.count(&c)) continue;
    Value& in = c.input(0);
    Value& out = c.output(0);
    // Between the FP32-computed float types only: a float64 side keeps its Cast kernel.
    if (!is_narrow_float(in.dtype()) || !is_narrow_float(out.dtype()) || in.dtype() == out.dtype()) continue;
    if (layout_.storage.count(root(&in)) || layout_.storage.count(root(&out))) continue;
    const auto& readers = out.users();
    if (root(&in)->is_graph_input() && !out.is_graph_output() && !readers.empty() && root(&out) == &out &&
        std::all_of(readers.begin(), readers.end(), [&](const Node* r) { return converts_operands(*r); })) {
      folded_as_[&out] = &in;
      folded_casts_.insert(&c);
      for (const Node* r : readers) folded_into_[r].push_back(c.name());
    } else if (output_of_.count(&out) && root(&out) == &out && root(&in) == &in && !in.is_graph_output() &&
               in.users().size() == 1 && in.producer() && converts_operands(*in.producer()) &&
               only_used_output(*in.producer(), &in)) {
      folded_as_[&in] = &out;
      folded_casts_.insert(&c);
      folded_into_[in.producer()].push_back(c.name());
    }
  }
  for (std::size_t k = nodes_.size(); k-- > 0;) {
    if (!folded_casts_.count(nodes_[k])) continue;
    nodes_.erase(nodes_.begin() + static_cast<std::ptrdiff_t>(k));
    families_.erase(families_.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return !folded_casts_.empty();
}

bool Lowering::plan_arena() {
  done_.insert("memory_plan");
  std::map<const Value*, std::size_t> index;  // lookups only; order comes from buffers_
  std::vector<std::vector<int>> accesses;     // per buffer: the kernels that touch it, ascending
  for (int k = 0; k < static_cast<int>(nodes_.size()); ++k) {
    for (const Value* out : kernel_outputs(nodes_[k])) {
      const Value* v = out ? stored(out) : nullptr;
      if (v && written_through(v)) v = root(v);  // the buffer it writes is its Transpose's
      if (!v || !in_arena(buffer(v))) continue;
      if (root(v) != v) throw nodes_[k]->error("internal: a kernel writes view '" + v->name() + "'");
      const Value* b = buffer(v);  // v, or the elided Concat's output v is a slice of
      auto written = index.find(b);
      if (written != index.end()) {  // another slice of an elided Concat's output
        buffers_[written->second].last = k;
        accesses[written->second].push_back(k);
        continue;
      }
      index[b] = buffers_.size();
      accesses.push_back({k});
      const int64_t elements = storage_elements(b->shape(), storage_of(b));
      buffers_.push_back({b->name(), elements * static_cast<int64_t>(dtype_size(b->dtype())), k, k, -1});
    }
    for (const Value* in : kernel_inputs(nodes_[k])) {
      if (!in) continue;
      const Value* r = buffer(in);
      if (!in_arena(r)) continue;
      auto it = index.find(r);
      if (it == index.end() && in->numel() == 0) continue;  // empty, so no kernel wrote it (list_kernels)
      if (it == index.end()) {
        throw nodes_[k]->error("internal: input '" + in->name() + "' is read before any kernel writes it");
      }
      buffers_[it->second].last = k;
      accesses[it->second].push_back(k);
    }
  }
  // Concurrent kernels: a buffer stays live until every later kernel is ordered after its accesses.
  if (!streams_.stream.empty()) {
    for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i].last = streams_.concurrent_last(accesses[i]);
  }
  plan_buffers();
  for (auto& [v, i] : index) arena_offset_[v] = buffers_[i].offset;
  return true;
}

void Lowering::plan_buffers() {
  const MemoryPlan plan = plan_memory(buffers_, kBufferAlignment);
  std::string why;
  if (!check_memory_plan(buffers_, kBufferAlignment, &why)) throw Error("internal: memory plan: " + why);
  s_.arena_bytes = plan.arena_bytes;
  s_.activation_bytes_total = plan.total_bytes;
  s_.arena_max_live_bytes = plan.max_live_bytes;
  s_.arena_alignment = kBufferAlignment;
  s_.arena_order = plan.order;
  s_.arena_buffers = buffers_;
}

bool Lowering::place_weights() {
  done_.insert("place_weights");
  for (const Node* n : nodes_) {
    for (const Value* v : kernel_inputs(n)) {
      if (!v || !v->is_constant() || weight_offset_.count(v)) continue;
      // Weights of channels-last convolutions: the OHWI copy (the only form any kernel reads).
      auto ohwi = layout_.weight_storage.find(v);
      weight_offset_[v] = store_weight(v->name(), ohwi == layout_.weight_storage.end()
                                                      ? v->constant()
                                                      : ohwi_weights(v->constant(), ohwi->second));
    }
  }
  return !s_.weights.empty();
}

int64_t Lowering::store_weight(const std::string& value, const Tensor& t) {
  std::vector<std::size_t>& same_key = weight_keys_[sample_key(t)];
  for (std::size_t e : same_key) {
    const Tensor& u = s_.weights[e].data;
    if (u.dtype() == t.dtype() && u.nbytes() == t.nbytes() &&
        (t.nbytes() == 0 || std::memcmp(u.raw(), t.raw(), t.nbytes()) == 0)) {
      return s_.weights[e].offset;
    }
  }
  const int64_t offset = s_.weights_bytes;
  same_key.push_back(s_.weights.size());
  s_.weights.push_back({value, offset, t});
  s_.weights_bytes = align_up(offset + static_cast<int64_t>(t.nbytes()), kBufferAlignment);
  return offset;
}

void Lowering::transform_winograd_weights() {
  auto entry_at = [&](int64_t offset) -> const WeightEntry& {
    for (const WeightEntry& e : s_.weights) {
      if (e.offset == offset) return e;
    }
    throw Error("internal: no weight starts at byte " + std::to_string(offset));
  };
  bool any = false;
  for (Kernel& k : s_.kernels) {
    if (k.engine != "winograd") continue;
    TensorView& w = k.inputs[1];
    if (w.space != Space::weights) throw Error("internal: kernel " + k.id + " runs Winograd on weights computed at run time");
    const WeightEntry& ohwi = entry_at(w.offset);
    const Tensor u = linear::winograd_weights(ohwi.data);
    const std::string value = w.value + "_winograd";
    w = TensorView{value, u.dtype(), u.shape(), strides_of(u.shape()), Space::weights, 0, store_weight(value, u)};
    any = true;
  }
  if (!any) return;
  // The OHWI copies only Winograd kernels read leave the blob; the rest move down over the gap.
  std::vector<TensorView*> views;
  for (Kernel& k : s_.kernels) {
    for (auto* list : {&k.inputs, &k.outputs}) {
      for (TensorView& v : *list) {
        if (v.space == Space::weights && v.dtype != DType::undefined) views.push_back(&v);
      }
    }
  }
  std::vector<WeightEntry> kept;
  std::map<int64_t, int64_t> moved;  // old offset -> new, of the entries kept
  int64_t bytes = 0;
  for (WeightEntry& e : s_.weights) {
    const int64_t end = e.offset + std::max<int64_t>(1, static_cast<int64_t>(e.data.nbytes()));
    std::vector<TensorView*> inside;
    for (TensorView* v : views) {
      if (e.offset <= v->offset && v->offset < end) inside.push_back(v);
    }
    if (inside.empty()) continue;
    for (TensorView* v : inside) v->offset += bytes - e.offset;
    moved[e.offset] = bytes;
    e.offset = bytes;
    bytes = align_up(bytes + static_cast<int64_t>(e.data.nbytes()), kBufferAlignment);
    kept.push_back(std::move(e));
  }
  s_.weights = std::move(kept);
  s_.weights_bytes = bytes;
  weight_keys_.clear();  // keyed by entry index: rebuilt below
  for (std::size_t i = 0; i < s_.weights.size(); ++i) weight_keys_[sample_key(s_.weights[i].data)].push_back(i);
  for (auto it = weight_offset_.begin(); it != weight_offset_.end();) {
    auto m = moved.find(it->second);
    if (m == moved.end()) {
      it = weight_offset_.erase(it);  // a constant only Winograd kernels read in its OHWI form
    } else {
      it->second = m->second;
      ++it;
    }
  }
}

TensorView Lowering::view(const Value* v) const {
  TensorView t;
  if (!v) {
    t.dtype = DType::undefined;
    return t;
  }
  if (stored(v) != v) return view(stored(v));
  auto slice = slices_.find(v);
  if (slice != slices_.end()) {  // the whole's view, from the slice's start
    t = view(slice->second.whole);
    t.value = v->name();
    t.shape = v->shape();
    const auto axis = static_cast<std::size_t>(slice->second.axis);
    t.offset += slice->second.offset * t.strides[axis] * static_cast<int64_t>(dtype_size(t.dtype));
    if (same_memory(t.shape, t.strides, strides_of(t.shape))) t.strides = strides_of(t.shape);
    return t;
  }
  t.value = v->name();
  t.dtype = v->dtype();
  t.shape = v->shape();
  const Value* r = root(v);
  int64_t offset = 0;  // elements
  if (!strides_in_root(v, &t.strides, &offset)) {
    throw Error("internal: view '" + v->name() + "' of '" + r->name() + "' has no strides in its layout");
  }
  if (r->is_constant()) {
    t.space = Space::weights;
    t.offset = weight_offset_.at(r);
  } else if (r->is_graph_input()) {
    t.space = Space::input;
    const auto& in = g_.inputs();
    t.index = static_cast<int>(std::find(in.begin(), in.end(), r) - in.begin());
  } else if (output_of_.count(r)) {
    t.space = Space::output;
    t.index = output_of_.at(r);
  } else {
    t.space = Space::arena;
    // An empty value has no buffer (no kernel writes it, no byte is read): offset 0.
    auto it = arena_offset_.find(r);
    if (it == arena_offset_.end() && v->numel() != 0) throw Error("internal: value '" + r->name() + "' has no arena buffer");
    t.offset = it == arena_offset_.end() ? 0 : it->second;
  }
  t.offset += offset * static_cast<int64_t>(dtype_size(t.dtype));
  return t;
}
bool Lowering::build_kernels() {
  done_.insert("kernels");
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node* n = nodes_[i];
    Kernel k;
    k.id = "k" + std::to_string(i);
    k.family = families_[i];
    k.node = n;
    k.nodes = n->covers().empty() ? std::vector<std::string>{n->name()} : n->covers();
    for (const Value* v : kernel_inputs(n)) k.inputs.push_back(view(v));
    for (const Value* v : kernel_outputs(n)) k.outputs.push_back(view(v));
    auto fused = horizontal_.find(n);
    if (fused != horizontal_.end()) {
      k.ranges = fused->second.ranges;
      for (std::size_t r = 1; r < k.ranges.size(); ++r) {
        const Node* sibling = k.ranges[r].node;
        const auto& covers = sibling->covers().empty() ? std::vector<std::string>{sibling->name()} : sibling->covers();
        k.nodes.insert(k.nodes.end(), covers.begin(), covers.end());
      }
    }
    if (!streams_.stream.empty()) {
      k.stream = streams_.stream[i];
      for (int w : streams_.waits[i]) k.waits.push_back(streams_.event[static_cast<std::size_t>(w)]);
      k.event = streams_.event[i];
    }
    s_.kernels.push_back(std::move(k));
  }
  return !s_.kernels.empty();
}

bool Lowering::fold_gemm_batch() {
  done_.insert("fold_gemm_batch");
  bool changed = false;
  for (Kernel& k : s_.kernels) {
    if (k.family != "gemm") continue;
    const int64_t products = linear::lower_gemm(k).batch_count();
    k.batch_as_rows = true;
    if (linear::lower_gemm(k).batch_count() == products) {
      k.batch_as_rows = false;  // nothing to fold: the kernel stays as it was
    } else {
      changed = true;
    }
  }
  return changed;
}

// The note: the layout's conversion (why this kernel exists), the tactic's reason, the Casts folded in.
bool Lowering::choose_tactics() {
  done_.insert("tactics");
  std::vector<Target> targets = targets_for(s_.archs, o_.passes.fp16_accumulate);
  for (Target& t : targets) t.winograd = parse_winograd(o_.passes.winograd);
  for (Kernel& k : s_.kernels) {
    choose_tactic(k, targets);
    if (folded_into_.count(k.node)) {
      for (const std::string& c : folded_into_.at(k.node)) k.note += "; boundary Cast '" + c + "' folded in";
    }
    // A horizontally fused kernel: every range's (its siblings share A, not their outputs' views).
    std::vector<std::string> views;
    std::vector<const Node*> nodes{k.node};
    for (std::size_t r = 1; r < k.ranges.size(); ++r) nodes.push_back(k.ranges[r].node);
    for (const Node* n : nodes) {
      if (!operand_views_.count(n)) continue;
      for (const std::string& v : operand_views_.at(n)) {
        if (std::find(views.begin(), views.end(), v) == views.end()) views.push_back(v);
      }
    }
    if (!views.empty()) k.note += fmt::format("; {}", fmt::join(views, ", "));
    if (kept_views_.count(k.node)) k.note += "; not a view: " + kept_views_.at(k.node);
    auto conversion = layout_.conversions.find(k.node);
    if (conversion != layout_.conversions.end()) k.note = conversion->second + "; " + k.note;
    for (const OutputRange& r : k.ranges) {
      k.note += fmt::format("{} '{}' {} [{}, {}) -> '{}'", &r == &k.ranges[0] ? "; horizontally fused:" : ",",
                            r.node->name(), k.family == "gemm" ? "columns" : "channels", r.begin, r.end,
                            r.node->output(0).name());
    }
    const std::vector<const Value*> outputs = kernel_outputs(k.node);
    for (std::size_t i = 0; i < outputs.size() && i < k.outputs.size(); ++i) {
      auto slice = slices_.find(outputs[i]);
      if (slice == slices_.end()) continue;
      const Slice& sl = slice->second;
      k.note += fmt::format("; {}writes its slice [{}, {}) on axis {} of '{}' (Concat '{}' elided)",
                            k.ranges.empty() ? "" : "'" + outputs[i]->name() + "' ", sl.offset,
                            sl.offset + k.outputs[i].shape[static_cast<std::size_t>(sl.axis)], sl.axis,
                            sl.whole->name(), sl.whole->producer()->name());
    }
  }
  transform_winograd_weights();
  place_workspaces();
  return !s_.kernels.empty();
}

void Lowering::place_workspaces() {
  const std::vector<LiveBuffer> before = buffers_;
  for (std::size_t i = 0; i < s_.kernels.size(); ++i) {
    const Kernel& k = s_.kernels[i];
    if (k.workspace_bytes <= 0) continue;
    const int at = static_cast<int>(i);
    // Live while the kernel runs, and (streams) until every later kernel is ordered after it.
    const int last = streams_.stream.empty() ? at : streams_.concurrent_last({at});
    buffers_.push_back({k.id + " workspace", k.workspace_bytes, at, last, -1});
  }
  if (buffers_.size() == before.size()) return;
  // The arena planned again with the workspaces (placed around the old plan they would grow it),
  // and every kernel's arena views moved with their buffers: a view lies in the one buffer live at
  // its kernel that holds its first byte.
  plan_buffers();
  auto move = [&](TensorView& v, int at) {
    if (v.space != Space::arena || v.dtype == DType::undefined || v.nbytes() == 0) return;
    for (std::size_t b = 0; b < before.size(); ++b) {
      const LiveBuffer& old = before[b];
      if (old.first <= at && at <= old.last && old.offset <= v.offset && v.offset < old.offset + old.bytes) {
        v.offset += buffers_[b].offset - old.offset;
        return;
      }
    }
    throw Error("internal: kernel " + s_.kernels[static_cast<std::size_t>(at)].id + ": view of '" + v.value +
                "' lies in no buffer live there");
  };
  for (std::size_t i = 0; i < s_.kernels.size(); ++i) {
    for (TensorView& v : s_.kernels[i].inputs) move(v, static_cast<int>(i));
    for (TensorView& v : s_.kernels[i].outputs) move(v, static_cast<int>(i));
  }
  for (std::size_t b = before.size(); b < buffers_.size(); ++b) {
    Kernel& k = s_.kernels[static_cast<std::size_t>(buffers_[b].first)];
    k.workspace = TensorView{buffers_[b].name, DType::float32, {k.workspace_bytes / 4}, {1}, Space::arena, 0,
                             buffers_[b].offset};
  }
}

int64_t Lowering::kernel_count() const {
  return static_cast<int64_t>(done_.count("kernels") ? s_.kernels.size() : nodes_.size());
}

Schedule Lowering::finish() { return std::move(s_); }

std::string Lowering::describe() const {
  std::ostringstream os;
  auto ran = [&](const char* stage) { return done_.count(stage) != 0; };
  if (ran("list_kernels") && !ran("kernels")) {
    os << "kernels to build (" << nodes_.size() << "):\n";
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      os << fmt::format("  #{} {} '{}': {}", i, nodes_[i]->op(), nodes_[i]->name(), families_[i]);
      if (copies_.count(nodes_[i])) os << " (output copy)";
      auto conversion = layout_.conversions.find(nodes_[i]);
      if (conversion != layout_.conversions.end()) os << " (" << conversion->second << ")";
      auto folded = folded_into_.find(nodes_[i]);
      if (folded != folded_into_.end()) os << fmt::format(" (takes the Casts {})", fmt::join(folded->second, ", "));
      auto fused = horizontal_.find(nodes_[i]);
      if (fused != horizontal_.end()) {
        std::vector<std::string> ranges;
        for (const OutputRange& r : fused->second.ranges) ranges.push_back(fmt::format("'{}' [{}, {})", r.node->name(), r.begin, r.end));
        os << fmt::format(" (horizontally fused: {})", fmt::join(ranges, ", "));
      }
      os << "\n";
    }
  }
  if (ran("elide_concat")) {
    for (const ConcatElision& c : s_.concats) {
      std::vector<std::string> inputs;
      for (const ConcatElision::Input& in : c.inputs) {
        inputs.push_back(fmt::format("{} at {}{}", in.value, in.offset, in.reason.empty() ? "" : ": " + in.reason));
      }
      os << fmt::format("concat '{}': {} ({})\n", c.node, c.elided ? "elided" : "kept", fmt::join(inputs, "; "));
    }
  }
  if (ran("layout")) {
    os << "layout: " << (layout_.summary.empty() ? "every buffer dense" : layout_.summary) << "\n";
    for (const auto& up : g_.nodes()) {  // graph order, so the text does not depend on addresses
      for (const Value* v : up->outputs()) {
        auto it = v ? layout_.storage.find(v) : layout_.storage.end();
        if (it != layout_.storage.end()) os << fmt::format("  {}: channels-last, pitch {}\n", v->name(), it->second.pitch);
      }
    }
  }
  if (ran("streams")) {
    os << fmt::format("streams: {}, events {}, critical path {} kernels\n", s_.streams, s_.events, s_.critical_path);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      std::vector<std::string> waits;
      for (int w : streams_.waits[i]) waits.push_back(fmt::format("#{}", w));
      os << fmt::format("  #{} '{}': stream {}{}\n", i, nodes_[i]->name(), streams_.stream[i],
                        waits.empty() ? "" : fmt::format(", after {}", fmt::join(waits, " ")));
    }
  }
  if (ran("memory_plan")) {
    os << fmt::format("arena: {} bytes ({} without reuse, {} live at most; placed {})\n", s_.arena_bytes,
                      s_.activation_bytes_total, s_.arena_max_live_bytes, s_.arena_order);
    for (const LiveBuffer& b : buffers_) {
      os << fmt::format("  {}: [{}, {}) live #{}..#{}\n", b.name, b.offset, b.offset + b.bytes, b.first, b.last);
    }
  }
  if (ran("place_weights")) {
    os << fmt::format("weights: {} bytes, {} tensors\n", s_.weights_bytes, s_.weights.size());
    for (const WeightEntry& w : s_.weights) {
      os << fmt::format("  {}: [{}, {}) {}\n", w.value, w.offset, w.offset + static_cast<int64_t>(w.data.nbytes()),
                        std::string(dtype_name(w.data.dtype())) + "[" + shape_str(w.data.shape()) + "]");
    }
  }
  if (ran("kernels")) {
    os << "kernels (" << s_.kernels.size() << "):\n";
    auto views = [](const std::vector<TensorView>& vs) {
      std::vector<std::string> r;
      for (const TensorView& v : vs) {
        if (v.dtype == DType::undefined) {
          r.push_back("-");
          continue;
        }
        const bool indexed = v.space == Space::input || v.space == Space::output;
        r.push_back(fmt::format("{} {}[{}] strides [{}] {}{}", v.value, dtype_name(v.dtype), shape_str(v.shape),
                                fmt::join(v.strides, ","), space_name(v.space),
                                indexed ? fmt::format("#{}", v.index) : fmt::format("+{}", v.offset)));
      }
      return fmt::format("{}", fmt::join(r, "; "));
    };
    for (const Kernel& k : s_.kernels) {
      os << fmt::format("  {} {} {} '{}'\n    in:  {}\n    out: {}\n", k.id, k.family, k.node->op(), k.node->name(),
                        views(k.inputs), views(k.outputs));
      if (ran("tactics")) {
        std::vector<std::string> fields;
        for (const auto& [key, value] : tactic_fields(k.tactic)) fields.push_back(fmt::format("{}={}", key, value));
        os << fmt::format("    tactic: {}{}\n    note: {}\n", fmt::join(fields, " "),
                          k.arch_tactic.empty() ? "" : " (differs per arch)", k.note);
      }
    }
  }
  return os.str();
}

void Lowering::verify() const {
  g_.verify();
  auto ran = [&](const char* stage) { return done_.count(stage) != 0; };
  auto fail = [](const std::string& what) { throw Error("internal: schedule: " + what); };
  std::set<const Node*> in_graph;
  for (const auto& up : g_.nodes()) in_graph.insert(up.get());
  if (nodes_.size() != families_.size()) fail("the kernel list and its families differ in length");
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!in_graph.count(nodes_[i])) fail(fmt::format("kernel #{} runs a node that is not in the graph", i));
    if (!find_family(families_[i])) fail(fmt::format("kernel #{} ('{}') has no family '{}'", i, nodes_[i]->name(), families_[i]));
    if (folded_casts_.count(nodes_[i])) fail("the folded Cast '" + nodes_[i]->name() + "' still runs a kernel");
  }
  for (const auto& [v, r] : root_) {
    if (v == r || root(r) != r) fail("view '" + v->name() + "' has no root buffer");
  }
  for (const auto& [v, slice] : slices_) {
    const Node* concat = slice.whole->producer();
    if (slices_.count(slice.whole) || std::count(nodes_.begin(), nodes_.end(), concat)) {
      fail("slice '" + v->name() + "' of '" + slice.whole->name() + "' is not a slice of an elided Concat's output");
    }
  }
  if (ran("memory_plan")) {
    std::string why;
    if (!check_memory_plan(buffers_, kBufferAlignment, &why)) fail("memory plan: " + why);
    for (const LiveBuffer& b : buffers_) {
      if (b.offset < 0 || b.offset + b.bytes > s_.arena_bytes) fail("buffer '" + b.name + "' lies outside the arena");
    }
  }
  std::set<std::string> ids;
  for (const Kernel& k : s_.kernels) {
    if (!ids.insert(k.id).second) fail("two kernels are named " + k.id);
    if (!k.node || !in_graph.count(k.node)) fail("kernel " + k.id + " has no node in the graph");
    if (ran("tactics") && std::holds_alternative<std::monostate>(k.tactic)) fail("kernel " + k.id + " has no tactic");
    for (const auto* views : {&k.inputs, &k.outputs}) {
      for (const TensorView& v : *views) {
        if (v.dtype == DType::undefined || v.numel() == 0) continue;
        if (v.strides.size() != v.shape.size()) fail(fmt::format("kernel {}: view '{}' has {} strides for rank {}", k.id, v.value, v.strides.size(), v.shape.size()));
        int64_t extent = 1;  // elements from the first to the last one addressed, plus one
        for (std::size_t d = 0; d < v.shape.size(); ++d) extent += (v.shape[d] - 1) * v.strides[d];
        const int64_t end = v.offset + extent * static_cast<int64_t>(dtype_size(v.dtype));
        if (v.space == Space::arena && end > s_.arena_bytes) {
          fail(fmt::format("kernel {}: '{}' ends at byte {} of an arena of {}", k.id, v.value, end, s_.arena_bytes));
        }
        if (v.space == Space::weights && end > s_.weights_bytes) {
          fail(fmt::format("kernel {}: '{}' ends at byte {} of a weights blob of {}", k.id, v.value, end, s_.weights_bytes));
        }
      }
    }
  }
}

}  // namespace modelc

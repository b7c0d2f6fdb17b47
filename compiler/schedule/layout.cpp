#include "schedule/layout.h"

#include <algorithm>
#include <cstring>

#include <functional>
#include <map>
#include <set>

#include "ops/registry.h"
#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

LayoutMode parse_layout_mode(const std::string& s) {
  if (s == "auto") return LayoutMode::automatic;
  if (s == "nchw") return LayoutMode::nchw;
  throw Error("layout '" + s + "' is not one modelc knows", "write auto (channels-last where it pays) or nchw");
}

const char* layout_mode_name(LayoutMode m) { return m == LayoutMode::nchw ? "nchw" : "auto"; }

std::vector<int64_t> channels_last_strides(const Shape& s, int64_t pitch) {
  std::vector<int64_t> st(s.size(), 1);
  if (s.size() < 3) return strides_of(s);
  int64_t step = pitch;
  for (std::size_t d = s.size(); d-- > 2;) {
    st[d] = step;
    step *= s[d];
  }
  st[1] = 1;
  st[0] = step;
  return st;
}

std::vector<int64_t> storage_strides(const Shape& s, const Storage& storage) {
  return storage.channels_last ? channels_last_strides(s, storage.pitch) : strides_of(s);
}

int64_t storage_elements(const Shape& s, const Storage& storage) {
  if (!storage.channels_last || s.size() < 3) return num_elements(s);
  Shape p = s;
  if (num_elements(s) == 0) return 0;
  p[1] = storage.pitch;
  return num_elements(p);
}

bool same_memory(const Shape& s, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != s.size() || b.size() != s.size()) return false;
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (s[d] != 1 && a[d] != b[d]) return false;
  }
  return true;
}

bool view_strides(const Shape& root, const std::vector<int64_t>& root_strides, const Shape& view,
                  std::vector<int64_t>* out) {
  if (same_memory(root, root_strides, strides_of(root))) {
    *out = strides_of(view);
    return true;
  }
  // Only unit dims come or go: the other dims keep their strides, in order.
  std::vector<int64_t> dims, strides;
  for (std::size_t d = 0; d < root.size(); ++d) {
    if (root[d] != 1) {
      dims.push_back(root[d]);
      strides.push_back(root_strides[d]);
    }
  }
  std::vector<int64_t> r(view.size(), 0);
  std::size_t j = 0;
  for (std::size_t d = 0; d < view.size(); ++d) {
    if (view[d] == 1) continue;
    if (j >= dims.size() || dims[j] != view[d]) return false;
    r[d] = strides[j++];
  }
  if (j != dims.size()) return false;
  // Unit dims: the stride of the next inner dim times its extent (any value addresses the same).
  int64_t inner = 1;
  for (std::size_t d = view.size(); d-- > 0;) {
    if (view[d] == 1) {
      r[d] = inner;
    } else {
      inner = r[d] * view[d];
    }
  }
  *out = r;
  return true;
}

bool dense_view(const TensorView& v) { return same_memory(v.shape, v.strides, strides_of(v.shape)); }

bool channels_last_view(const TensorView& v, int64_t* pitch) {
  const Shape& s = v.shape;
  if (s.size() < 3 || v.strides.size() != s.size()) return false;
  const int64_t C = s[1];
  int64_t p = C;
  if (!same_memory(s, v.strides, channels_last_strides(s, C))) {
    // The pitch is the stride of the innermost spatial dim of extent > 1, or N's over the pixels.
    p = 0;
    for (std::size_t d = s.size(); d-- > 2;) {
      if (s[d] != 1) {
        p = v.strides[d];
        break;
      }
    }
    if (p == 0 && s[0] != 1) {
      int64_t pixels = 1;
      for (std::size_t d = 2; d < s.size(); ++d) pixels *= s[d];
      p = v.strides[0] / pixels;
    }
    if (p < C || !same_memory(s, v.strides, channels_last_strides(s, p))) return false;
  }
  *pitch = p;
  return true;
}

int64_t tensor_core_channels(DType t) {
  return t == DType::int8 || t == DType::uint8 ? 16 : kCompactKChannels;
}

WeightStorage kernel_weight_storage(const Kernel& k, const TensorView& x, const TensorView& w, int64_t x_pitch) {
  // tensor_core_operands, read from the views: float16 (bfloat16) X and W (or 8-bit X, int8 W) of one
  // rank (one group: the rule's).
  const bool int8 = (x.dtype == DType::int8 || x.dtype == DType::uint8) && w.dtype == DType::int8;
  const bool half = (x.dtype == DType::float16 || x.dtype == DType::bfloat16) && w.dtype == x.dtype;
  const bool tensor_cores =
      (half || int8) && x.shape.size() == w.shape.size() && (x.shape.size() == 4 || x.shape.size() == 5);
  const WeightStorage ws = conv_weight_storage(w.shape, x.shape[1], x_pitch, tensor_cores, tensor_core_channels(x.dtype));
  if (!same_memory(w.shape, w.strides, weight_strides(w.shape, ws))) {
    throw Error("internal: kernel " + k.id + " (" + k.family_name() + (k.source.node ? " '" + k.source.node->name() + "'" : "") +
                ") runs channels-last, but W '" + w.value + "' is not OHWI with channel pitch " +
                std::to_string(ws.pitch) + " in rows of " + std::to_string(ws.row));
  }
  return ws;
}

KernelLayout kernel_layout(const Kernel& k) {
  auto present = [&](const std::vector<TensorView>& v, int i) {
    return i >= 0 && static_cast<std::size_t>(i) < v.size() && v[static_cast<std::size_t>(i)].dtype != DType::undefined
               ? &v[static_cast<std::size_t>(i)]
               : nullptr;
  };
  const ops::LayoutRoles roles = k.source.node ? ops::lookup(*k.source.node).layout_roles : ops::LayoutRoles{};
  const TensorView* x = present(k.inputs, 0);
  const TensorView* y = present(k.outputs, 0);
  const TensorView* w = present(k.inputs, roles.weight);
  const TensorView* r = present(k.inputs, roles.residual);
  KernelLayout l;
  if (!x || !y) return l;
  l.x_pitch = x->shape.size() > 1 ? x->shape[1] : 1;
  l.y_pitch = y->shape.size() > 1 ? y->shape[1] : 1;
  const bool all_dense = dense_view(*x) && dense_view(*y) && (!w || dense_view(*w)) && (!r || dense_view(*r));
  if (all_dense) return l;
  auto fail = [&](const std::string& what) -> KernelLayout {
    throw Error("internal: kernel " + k.id + " (" + k.family_name() + (k.source.node ? " '" + k.source.node->name() + "'" : "") +
                ") runs channels-last, but " + what);
  };
  l.channels_last = true;
  if (!channels_last_view(*x, &l.x_pitch)) fail("X '" + x->value + "' is not channels-last");
  if (!channels_last_view(*y, &l.y_pitch)) fail("Y '" + y->value + "' is not channels-last");
  if (w) l.w = kernel_weight_storage(k, *x, *w, l.x_pitch);
  if (r && !same_memory(r->shape, r->strides, y->strides)) fail("the residual '" + r->value + "' is not Y's layout");
  return l;
}

namespace {
int64_t round_up(int64_t c, int64_t m) { return (c + m - 1) / m * m; }

// One pixel in all (N and every spatial extent 1): its views' strides cannot carry a channel pitch
// (no stride steps over a pixel), so every reader would see the channel count while a padded
// pitch would store the weights of its convolutions at the pitch: such a buffer is never padded.
bool one_pixel(const Shape& s) {
  for (std::size_t d = 0; d < s.size(); ++d) {
    if (d != 1 && s[d] != 1) return false;
  }
  return true;
}

int64_t taps_of(const Shape& w) {
  int64_t taps = 1;
  for (std::size_t d = 2; d < w.size(); ++d) taps *= w[d];
  return taps;
}
}  // namespace

WeightStorage conv_weight_storage(const Shape& w, int64_t x_channels, int64_t x_pitch, bool tensor_cores,
                                  int64_t chunk) {
  const int64_t cg = w.size() > 1 ? w[1] : 1, taps = taps_of(w);
  if (cg != x_channels) return {cg, taps * cg};  // grouped: its own channel count
  // The 8-bit convolution has no SIMT form: where X's pitch is not whole chunks (a one-pixel
  // buffer, never padded; a buffer some reader takes unpadded) its K runs over the channels too.
  const bool eight_bit = chunk == tensor_core_channels(DType::int8);
  // X a channel slice of a wider buffer (elide_concat: its pitch beyond its channels padded): K over
  // the channels, not over the pitch (the rest of each pixel is other slices' data).
  const bool slice = x_pitch > round_up(cg, chunk);
  if (tensor_cores && (cg < chunk || slice || (eight_bit && x_pitch % chunk != 0))) {
    return {cg, round_up(taps * cg, chunk), true};
  }
  return {x_pitch, taps * x_pitch};
}

std::vector<int64_t> weight_strides(const Shape& w, const WeightStorage& ws) {
  std::vector<int64_t> st = channels_last_strides(w, ws.pitch);
  if (w.size() >= 3) st[0] = ws.row;
  return st;
}

Tensor ohwi_weights(const Tensor& w, const WeightStorage& ws) {
  const Shape& s = w.shape();
  if (s.size() < 3) throw Error("internal: OHWI weights of rank " + std::to_string(s.size()));
  const int64_t M = s[0], Cg = s[1], taps = taps_of(s);
  if (ws.pitch < Cg || ws.row < (taps - 1) * ws.pitch + Cg) {
    throw Error("internal: OHWI storage (pitch " + std::to_string(ws.pitch) + ", rows of " + std::to_string(ws.row) +
                ") for " + std::to_string(Cg) + " channels x " + std::to_string(taps) + " taps");
  }
  // OHWI [M][K...][pitch] where the rows are whole taps; [M][row] otherwise (compact, a tail).
  Shape out{M};
  if (ws.row == taps * ws.pitch) {
    out.insert(out.end(), s.begin() + 2, s.end());
    out.push_back(ws.pitch);
  } else {
    out.push_back(ws.row);
  }
  Tensor r(w.dtype(), out);  // zero-filled: padded channels and row tails stay zero
  const std::size_t es = dtype_size(w.dtype());
  const uint8_t* src = w.raw();
  uint8_t* dst = r.mutable_raw();
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < Cg; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        std::memcpy(dst + static_cast<std::size_t>(m * ws.row + t * ws.pitch + c) * es,
                    src + static_cast<std::size_t>((m * Cg + c) * taps + t) * es, es);
      }
    }
  }
  return r;
}

namespace {

/// What the layout pass reads and changes: the kernels' nodes and families (conversions are
/// inserted), a value's root (the value whose buffer it is), and which roots are arena buffers.
struct LayoutInput {
  Graph* graph = nullptr;
  std::vector<const Node*>* nodes = nullptr;
  std::vector<std::string>* families = nullptr;
  std::function<const Value*(const Value*)> root;
  std::function<bool(const Value*)> in_arena;
};

/// The pass's decisions, which the stage writes into the Schedule.
struct LayoutPlan {
  std::map<const Value*, Storage> storage;               ///< roots stored channels-last (absent: dense)
  std::set<const Node*> channels_last_kernels;           ///< layout kernels that run channels-last
  std::map<const Value*, WeightStorage> weight_storage;  ///< conv weights stored OHWI, and how
  std::map<const Node*, std::string> conversions;        ///< conversion kernels (Identity nodes) -> why
  std::string summary;                                   ///< Schedule::layout
};

/// A read of a buffer by a kernel: the kernel's node, the input index, the value read (the root or
/// a view of it).
struct Use {
  const Node* node;
  int input;
  const Value* value;
};

class LayoutPass {
 public:
  explicit LayoutPass(const LayoutInput& in) : in_(in), nodes_(*in.nodes), families_(*in.families) {}

  LayoutPlan run() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) family_[nodes_[i]] = families_[i];
    find_layout_kernels();
    if (layout_kernels_.empty()) return std::move(plan_);
    collect_uses();
    choose_buffers();
    choose_pitches();
    insert_conversions();
    summarize();
    return std::move(plan_);
  }

 private:
  enum class Role { none, x, residual };

  bool is_layout_kernel(const Node* n) const { return layout_kernels_.count(n) != 0; }
  const FamilyFacts& facts(const Node* n) const { return family_facts(family_.at(n)); }
  // Families whose every operand is a strided view (elementwise, concat, transpose).
  bool strided_family(const Node* n) const { return facts(n).strided_operands; }
  static const ops::LayoutRoles& roles(const Node& n) { return ops::lookup(n).layout_roles; }

  // Layout kernels: ops with an NHWC form (OpDef::layout) run by a family that has one, of rank 4
  // or 5, without other outputs (MaxPool's Indices are NCHW); a weight role must be a
  // constant of X's rank (its OHWI copy is made here).
  void find_layout_kernels() {
    bool any_weight = false;
    for (const Node* np : nodes_) {
      const Node& n = *np;
      if (!n.has_input(0) || !n.has_output(0)) continue;
      const int64_t rank = n.input(0).rank();
      if (rank != 4 && rank != 5) continue;
      if (!facts(np).channels_last || ops::lookup(n).layout != ops::Layout::channels) continue;
      // Any other output the node has, used or not: its kernel writes it (MaxPool's Indices, NCHW).
      bool other_outputs = false;
      for (std::size_t j = 1; j < n.outputs().size(); ++j) other_outputs = other_outputs || n.outputs()[j] != nullptr;
      if (other_outputs) continue;
      const int w = roles(n).weight;
      if (w >= 0) {
        if (!n.has_input(w) || !n.input(w).is_constant() || n.input(w).rank() != rank) continue;
        any_weight = true;
      }
      layout_kernels_.insert(np);
    }
    if (!any_weight) layout_kernels_.clear();  // pools alone: nothing to gain
  }

  // Takes a padded channel pitch on X and Y (FamilyFacts::pitch): pools, depthwise and
  // tensor-core-eligible convolutions (the SIMT implicit-GEMM conv addresses pixels C channels apart).
  bool takes_pitch(const Node* n) const {
    switch (facts(n).pitch) {
      case ChannelPitch::always: return true;
      case ChannelPitch::on_tensor_cores: return tensor_core_operands(*n);
      case ChannelPitch::none: break;
    }
    return false;
  }

  Role role(const Node* n, int input) const {
    if (!is_layout_kernel(n)) return Role::none;
    if (input == 0) return Role::x;
    if (input >= 0 && input == roles(*n).residual) return Role::residual;
    return Role::none;
  }

  void collect_uses() {
    for (const Node* n : nodes_) {
      for (int j = 0; j < n->num_inputs(); ++j) {
        const Value* v = n->inputs()[static_cast<std::size_t>(j)];
        if (v) uses_[in_.root(v)].push_back({n, j, v});
      }
      for (int j = 0; j < n->num_outputs(); ++j) {
        const Value* v = n->outputs()[static_cast<std::size_t>(j)];
        if (v && !producer_.count(v)) {
          producer_[v] = {n, j};
          order_[v] = static_cast<int>(order_.size());
        }
      }
    }
  }

  // Can the root be stored channels-last: every kernel that touches it takes such a view there.
  bool eligible(const Value* r) const {
    if (!in_.in_arena(r) || (r->rank() != 4 && r->rank() != 5)) return false;
    auto p = producer_.find(r);
    if (p == producer_.end()) return false;
    const auto [pn, pj] = p->second;
    const bool writes = strided_family(pn) || (is_layout_kernel(pn) && pj == 0);
    if (!writes) return false;
    const std::vector<int64_t> cl = channels_last_strides(r->shape(), r->shape()[1]);
    auto u = uses_.find(r);
    if (u == uses_.end()) return true;
    for (const Use& use : u->second) {
      const bool strided_reader = strided_family(use.node) || role(use.node, use.input) != Role::none;
      if (use.value != r && use.value->shape() != r->shape()) {
        std::vector<int64_t> st;
        if (!view_strides(r->shape(), cl, use.value->shape(), &st)) return false;
        if (!strided_reader && !same_memory(use.value->shape(), st, strides_of(use.value->shape()))) return false;
        continue;
      }
      if (!strided_reader) return false;
    }
    return true;
  }

  // A layout kernel, or an elementwise kernel with a same-shape channels-last operand (a Concat:
  // any channels-last operand), touches it.
  bool wanted(const Value* r) const {
    auto touches = [&](const Node* n, bool as_output, int j) {
      if (is_layout_kernel(n)) return as_output ? j == 0 : role(n, j) != Role::none;
      const LayoutFollow follow = facts(n).follows_layout;
      if (follow == LayoutFollow::never) return false;
      const bool concat = follow == LayoutFollow::same_rank;
      std::vector<const Value*> operands(n->inputs().begin(), n->inputs().end());
      operands.insert(operands.end(), n->outputs().begin(), n->outputs().end());
      for (const Value* v : operands) {
        if (!v || (concat ? v->rank() != r->rank() : v->shape() != r->shape())) continue;
        const Value* o = in_.root(v);
        if (o != r && plan_.storage.count(o)) return true;
      }
      return false;
    };
    auto p = producer_.find(r);
    if (p != producer_.end() && touches(p->second.first, true, p->second.second)) return true;
    auto u = uses_.find(r);
    if (u == uses_.end()) return false;
    for (const Use& use : u->second) {
      if (touches(use.node, false, use.input)) return true;
    }
    return false;
  }

  void choose_buffers() {
    std::vector<const Value*> candidates;
    for (const auto& [v, nj] : producer_) {
      if (eligible(v)) candidates.push_back(v);
    }
    // Deterministic: the kernel order.
    std::sort(candidates.begin(), candidates.end(),
              [&](const Value* a, const Value* b) { return order_.at(a) < order_.at(b); });
    for (bool changed = true; changed;) {
      changed = false;
      for (const Value* v : candidates) {
        if (plan_.storage.count(v) || !wanted(v)) continue;
        plan_.storage[v] = Storage{true, v->shape()[1]};
        changed = true;
      }
    }
  }

  // Pad C to a multiple of a tensor-core chunk (8 FP16, 16 8-bit channels: tensor_core_channels) for
  // a tensor-core-eligible reader when every kernel that reads X / Y views of the buffer, and its
  // writer, take a pitch.
  void choose_pitches() {
    for (auto& [v, st] : plan_.storage) {
      const int64_t C = v->shape()[1];
      int64_t chunk = 1;
      bool unpadded = false;
      auto u = uses_.find(v);
      if (u == uses_.end()) continue;
      for (const Use& use : u->second) {
        if (role(use.node, use.input) == Role::x && tensor_core_operands(*use.node)) {
          chunk = std::max(chunk, tensor_core_channels(use.node->input(0).dtype()));
        }
        if (role(use.node, use.input) != Role::none && !takes_pitch(use.node)) unpadded = true;
      }
      if (C % chunk == 0 || one_pixel(v->shape())) continue;
      const Node* writer = producer_.at(v).first;
      if (is_layout_kernel(writer) && !takes_pitch(writer)) unpadded = true;
      if (!unpadded) st.pitch = round_up(C, chunk);
    }
  }

  Storage storage_of(const Value* r) const {
    auto it = plan_.storage.find(r);
    return it == plan_.storage.end() ? Storage{} : it->second;
  }

  // The pitch at which layout kernel n can take v (a root or a view of one) as it is stored;
  // 0 when it cannot (not channels-last, or padded for a kernel that takes no pitch).
  int64_t accepted_pitch(const Node* n, const Value* v) const {
    const Value* r = in_.root(v);
    const Storage s = storage_of(r);
    const int64_t C = v->shape()[1];
    const int64_t p = s.channels_last ? s.pitch : C;
    std::vector<int64_t> st = storage_strides(r->shape(), s);
    if (v != r && !view_strides(r->shape(), std::vector<int64_t>(st), v->shape(), &st)) return 0;
    if (!same_memory(v->shape(), st, channels_last_strides(v->shape(), p))) return 0;
    if (p != C && !takes_pitch(n)) return 0;
    return p;
  }

  Value* add_converted(const Value* from, const Storage& to, const std::string& suffix) {
    Graph& g = *in_.graph;
    Value* v = g.add_value(from->name() + suffix);  // made unique by the graph
    v->set_type(from->dtype(), from->shape());
    plan_.storage[v] = to;
    return v;
  }

  static std::string layout_name(const Storage& s, int64_t C) {
    if (!s.channels_last) return "NCHW";
    return s.pitch == C ? "NHWC" : "NHWC with channel pitch " + std::to_string(s.pitch);
  }

  std::string writer_of(const Value* v) const {
    const Value* r = in_.root(v);
    if (r->is_graph_input()) return "a model input";
    auto p = producer_.find(r);
    if (p == producer_.end()) return "not written by a kernel";
    const Node* w = p->second.first;
    const bool layout = plan_.storage.count(r) != 0;
    return "written by " + w->op() + " '" + w->name() + "'" + (layout ? "" : ", which writes it as NCHW");
  }

  std::string reader_of(const Value* y) const {
    if (y->is_graph_output()) return "a model output";
    auto u = uses_.find(y);
    if (u != uses_.end()) {
      for (const Use& use : u->second) {
        if (!strided_family(use.node) && role(use.node, use.input) == Role::none) {
          return "read as NCHW by " + use.node->op() + " '" + use.node->name() + "'";
        }
        if (use.value != y && use.value->shape() != y->shape()) return "reshaped to " + shape_str(use.value->shape());
      }
    }
    return "read as NCHW";
  }

  void insert_conversions() {
    std::map<std::pair<const Value*, int64_t>, Value*> converted;  // (value, pitch) -> its copy
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      if (!is_layout_kernel(nodes_[k])) continue;
      Node& n = const_cast<Node&>(*nodes_[k]);
      plan_.channels_last_kernels.insert(&n);
      // Y: written channels-last into a temporary when its buffer is not, then converted.
      if (accepted_pitch(&n, n.outputs()[0]) == 0) {
        Value* y = n.outputs()[0];
        const std::string why = reader_of(y);
        Value* t = add_converted(y, Storage{true, y->shape()[1]}, "_nhwc");
        n.set_output(0, t);
        Node* next = k + 1 < nodes_.size() ? const_cast<Node*>(nodes_[k + 1]) : nullptr;
        Node* c = in_.graph->add_node("Identity", y->name() + "_to_nchw", {t}, {y}, next);
        nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(k + 1), c);
        families_.insert(families_.begin() + static_cast<std::ptrdiff_t>(k + 1), "elementwise");
        family_[c] = "elementwise";
        plan_.conversions[c] = "layout conversion: " + n.op() + " '" + n.name() + "' writes NHWC; '" + y->name() +
                               "' is NCHW (" + why + ")";
        converted[{y, y->shape()[1]}] = t;  // later layout kernels read the temporary
      }
      const int64_t y_pitch = accepted_pitch(&n, n.outputs()[0]);
      // X, and a FusedConv's residual (exactly Y's strides): converted before the kernel.
      std::size_t inserted = 0;
      for (int j : {0, roles(n).residual}) {
        if (role(&n, j) == Role::none || !n.has_input(j)) continue;
        const Value* x = &n.input(j);
        const int64_t C = x->shape()[1];
        const int64_t have = accepted_pitch(&n, x);
        if (j == 0 ? have != 0 : have == y_pitch) continue;
        const int64_t chunk = tensor_core_channels(x->dtype());
        const bool pad = tensor_core_operands(n) && C % chunk != 0 && !one_pixel(x->shape());
        const int64_t pitch = j != 0 ? y_pitch : pad ? round_up(C, chunk) : C;
        auto key = std::make_pair(x, pitch);
        Value* c = converted.count(key) ? converted.at(key) : nullptr;
        if (!c) {
          const Storage to{true, pitch};
          const std::string why = "layout conversion: '" + x->name() + "' is " +
                                  layout_name(storage_of(in_.root(x)), C) + " (" + writer_of(x) + "); " + n.op() +
                                  " '" + n.name() + "' reads it as " + layout_name(to, C);
          c = add_converted(x, to, "_nhwc");
          Node* cn = in_.graph->add_node("Identity", x->name() + "_to_nhwc", {const_cast<Value*>(x)}, {c}, &n);
          nodes_.insert(nodes_.begin() + static_cast<std::ptrdiff_t>(k), cn);
          families_.insert(families_.begin() + static_cast<std::ptrdiff_t>(k), "elementwise");
          family_[cn] = "elementwise";
          plan_.conversions[cn] = why;
          converted[key] = c;
          ++inserted;
        }
        n.set_input(j, c);
      }
      k += inserted;
      // W: OHWI, padded to X's pitch (one group), compact, or at its own channel count (grouped).
      if (roles(n).weight >= 0) {
        const Value* w = &n.input(roles(n).weight);
        const WeightStorage ws =
            conv_weight_storage(w->shape(), n.input(0).shape()[1], accepted_pitch(&n, &n.input(0)),
                                tensor_core_operands(n), tensor_core_channels(n.input(0).dtype()));
        auto it = plan_.weight_storage.find(w);
        if (it != plan_.weight_storage.end() && it->second != ws) {
          throw n.error("internal: weight '" + w->name() + "' is shared by convolutions that store it differently " +
                        "(channel pitches " + std::to_string(it->second.pitch) + " and " + std::to_string(ws.pitch) +
                        ", rows of " + std::to_string(it->second.row) + " and " + std::to_string(ws.row) + ")");
        }
        plan_.weight_storage[w] = ws;
      }
    }
  }

  void summarize() {
    int padded = 0;
    for (const auto& [v, s] : plan_.storage) padded += s.pitch != v->shape()[1];
    plan_.summary = std::to_string(plan_.channels_last_kernels.size()) + " kernels channels-last, " +
                    std::to_string(plan_.storage.size()) + " buffers NHWC (" + std::to_string(padded) +
                    " with padded channels), " + std::to_string(plan_.conversions.size()) + " layout conversions";
  }

  const LayoutInput& in_;
  std::vector<const Node*>& nodes_;
  std::vector<std::string>& families_;
  LayoutPlan plan_;
  std::map<const Node*, std::string> family_;
  std::set<const Node*> layout_kernels_;
  std::map<const Value*, std::vector<Use>> uses_;
  std::map<const Value*, std::pair<const Node*, int>> producer_;  // writer, output index
  std::map<const Value*, int> order_;                             // first write, in kernel order
};

}  // namespace

// The layout stage: the pass over the kernel list, its decisions written into the kernels (the
// conversions inserted, channels_last) and the buffers (storage, OHWI weights), then every view
// recomputed (resolve).
bool plan_layout(Schedule& s, const LowerOptions& o) {
  if (o.layout == LayoutMode::nchw) return false;
  std::vector<const Node*> nodes;
  std::vector<std::string> families;
  for (const Kernel& k : s.kernels) {
    nodes.push_back(k.source.node);
    families.push_back(k.family_name());
  }
  ValueIndex index(s);
  LayoutInput in;
  in.graph = s.graph;
  in.nodes = &nodes;
  in.families = &families;
  in.root = [&](const Value* v) { return index.root(v); };
  in.in_arena = [&](const Value* v) { return index.space(v) == Space::arena; };
  LayoutPlan plan = LayoutPass(in).run();
  // The kernel list with the conversions: the kernels as they were, their sources read again from
  // their nodes (the pass rewired the layout kernels' X, Y and residual to the converted values).
  std::map<const Node*, Kernel> kernels;
  for (Kernel& k : s.kernels) kernels[k.source.node] = std::move(k);
  s.kernels.clear();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    auto it = kernels.find(n);
    Kernel k = it != kernels.end() ? std::move(it->second) : kernel_for(*n, family_facts(families[i]));
    k.source.inputs.assign(n->inputs().begin(), n->inputs().end());
    k.source.outputs.assign(n->outputs().begin(), n->outputs().end());
    k.channels_last = plan.channels_last_kernels.count(n) != 0;
    auto conversion = plan.conversions.find(n);
    if (conversion != plan.conversions.end()) k.conversion = conversion->second;
    s.kernels.push_back(std::move(k));
  }
  for (const auto& [v, storage] : plan.storage) {
    int b = index.buffer(v);
    if (b < 0) {
      b = add_value_buffer(s, v);
      index.note(b);
    }
    s.buffers[static_cast<std::size_t>(b)].storage = storage;
  }
  for (const auto& [w, ws] : plan.weight_storage) {
    int b = index.buffer(w);
    if (b < 0) {
      b = add_value_buffer(s, w);
      index.note(b);
    }
    s.buffers[static_cast<std::size_t>(b)].ohwi = ws;
  }
  s.layout = plan.summary;
  resolve(s);
  return !plan.storage.empty() || !plan.conversions.empty();
}

void restore_conv_weights(Schedule& s, const std::vector<const Node*>& convs) {
  if (convs.empty()) return;
  const ValueIndex index(s);
  for (const Kernel& k : s.kernels) {
    const Node* n = k.source.node;
    if (std::find(convs.begin(), convs.end(), n) == convs.end()) continue;
    int64_t pitch = 0;
    if (k.inputs.empty() || !channels_last_view(k.inputs[0], &pitch)) {
      throw Error("internal: kernel " + k.id + " ('" + n->name() + "') reads X at a new pitch, but not channels-last");
    }
    // What the kernel reads as X (fuse_prologue: the BN's input in place of the node's own X; the
    // same shape and type).
    const Value& x = !k.source.inputs.empty() && k.source.inputs[0] ? *k.source.inputs[0] : n->input(0);
    const Value* w = &n->input(ops::lookup(*n).layout_roles.weight);
    s.buffers[static_cast<std::size_t>(index.buffer(w))].ohwi = conv_weight_storage(
        w->shape(), x.shape()[1], pitch, tensor_core_operands(*n), tensor_core_channels(x.dtype()));
  }
  resolve(s);
}

}  // namespace modelc

// compiler/schedule/elide_concat.cpp — the elide_concat stage (schedule/stages.h).
//
// A Concat runs no kernel when every input can be a slice of its output: each input's producer
// then writes straight into its slice of the Concat's buffer (a view with the output's strides,
// starting at the input's offset along the axis). An input can be such a slice when
//  - a kernel computes it: it is not a model input, a constant, a model output, or a view (Reshape,
//    Flatten, ...) of another buffer;
//  - this Concat reads it once, and no other Concat reads it (it would be needed in two places at
//    once) but the prefixes of this one (below);
//  - every other kernel that reads it can read the slice in place (a skip connection read by the
//    next conv and by the decoder's Concat): families with strided operands read any view; on a
//    channels-last buffer pools and depthwise convolutions (ChannelPitch::always) read X at any
//    16-byte aligned pitch and offset, and a convolution on 16-bit tensor-core operands, one group,
//    whose channels are whole 16-byte chunks and whose weight only it reads, reads X there with K
//    over its channels (compact K: restore_conv_weights stores its weight so); on a dense buffer a slice
//    that is itself dense is read by any family. A reader through a view (no kernel), one reading it
//    as anything but X, an FP32 or 8-bit convolution: the Concat stays, that reader the reason;
//  - it is its producer's only used output, and the producer reads no residual as Y is stored (a
//    FusedConv's residual must be Y's memory, and Y's pitch becomes the Concat's);
//  - it is stored as the Concat's output is (both channels-last, or both dense);
//  - its producer's family can write the slice: families with strided operands (elementwise,
//    transpose, a kept Concat) write any view; on a channels-last buffer, along the channel axis,
//    the families with writes_channel_slice (conv on tensor cores or SIMT, conv_depthwise, pool)
//    write Y at the buffer's pitch and offset; on a dense buffer, a slice that is itself dense
//    (only size-1 dims before the axis: batch 1 on the channel axis) is written by any family;
//  - a tensor-core convolution's slice starts 16-byte aligned (channel offset a multiple of 8 in
//    FP16): its vector stores need it, and a SIMT fallback costs more than the copy saved.
// Padded channels: the layout stage pads the Concat's output pitch only (for its tensor-core
// readers), at the end of each pixel. The inputs' slices are contiguous channel ranges inside it,
// so an input's channel count need not be a multiple of 8; the padding is neither written nor read
// as data, as in any padded buffer.
// Nested Concats (DenseNet's concat_k = [x0, y1..yk] in every layer of a dense block): where one
// Concat's inputs are a strict prefix of others' (prefix_hosts), the widest decides for them all.
// Elided, its buffer holds the block's final width; each layer's output is written once into its
// slice, and each prefix's output is the first channels of that buffer (a concat_slice at 0), read
// in place by its readers under the rule above. A prefix whose output some reader cannot read there
// stays a Concat kernel (copying from the slices), with the reason; when the widest is kept, so
// are its prefixes.
// The Concat's output keeps its layout and place; only its writers change: each input becomes a
// step of the output's buffer (ViewStep::concat_slice: the axis and where its slice starts), its
// own buffer gone. The memory plan sees one buffer, live from its first writer to the last reader
// of any of its views. Schedule::concats (report.json "concats") lists every Concat kernel, elided
// or kept with the inputs (or the reason of the Concat as a whole) that stop it.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ops/registry.h"
#include "schedule/families.h"
#include "schedule/layout.h"
#include "schedule/stages.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

namespace {

// The Concat's axis, in [0, rank).
int concat_axis(const Node& concat) {
  const int64_t rank = concat.output(0).rank();
  const int64_t axis = concat.attr_int("axis", 0);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// True when the dims before `axis` all have extent 1: a slice along it is one contiguous block.
bool outer_extent_one(const Shape& s, int axis) {
  return std::all_of(s.begin(), s.begin() + axis, [](int64_t d) { return d == 1; });
}

std::string layout_word(const Storage& s) { return s.channels_last ? "channels-last" : "dense"; }

// For each Concat whose inputs are a strict prefix of other Concats' inputs (the same values in the
// same order, on the same axis; DenseNet's concat_k = [x0, y1..yk]), the widest of those: its output
// holds this one's as its first channels. None where the wider ones diverge (two Concats extending
// one prefix differently: the prefix cannot be the start of both).
std::map<const Node*, const Node*> prefix_hosts(const std::vector<const Node*>& concats) {
  auto prefix = [](const Node& a, const Node& b) {  // a's inputs a strict prefix of b's, one axis
    return a.num_inputs() < b.num_inputs() && concat_axis(a) == concat_axis(b) &&
           std::equal(a.inputs().begin(), a.inputs().end(), b.inputs().begin());
  };
  std::map<const Node*, const Node*> host;
  for (const Node* c : concats) {
    std::vector<const Node*> wider;
    for (const Node* d : concats) {
      if (prefix(*c, *d)) wider.push_back(d);
    }
    if (wider.empty()) continue;
    const Node* widest = *std::max_element(wider.begin(), wider.end(), [](const Node* a, const Node* b) {
      return a->num_inputs() < b->num_inputs();
    });
    if (std::all_of(wider.begin(), wider.end(), [&](const Node* d) { return d == widest || prefix(*d, *widest); })) {
      host[c] = widest;
    }
  }
  return host;
}

}  // namespace

bool elide_concat(Schedule& s, const LowerOptions&) {
  const ValueIndex index(s);
  std::map<const Node*, const Kernel*> kernel;  // the kernels' nodes -> their kernels
  for (const Kernel& k : s.kernels) kernel[k.source.node] = &k;
  auto storage_of = [&](const Value* v) {
    const int b = index.buffer(v);
    return b < 0 ? Storage{} : s.buffers[static_cast<std::size_t>(b)].storage;
  };
  std::vector<const Node*> concats;  // in kernel order
  for (const Kernel& k : s.kernels) {
    if (k.family_name() == "concat") concats.push_back(k.source.node);
  }
  const std::map<const Node*, const Node*> host = prefix_hosts(concats);
  std::map<const Node*, std::vector<const Node*>> members;  // a chain's widest Concat -> its prefixes
  for (const Node* c : concats) {  // in kernel order (not the map's, by address: the output must not vary)
    if (host.count(c)) members[host.at(c)].push_back(c);
  }
  auto in_chain = [&](const Node* u, const Node* d) {
    if (u == d) return true;
    auto h = host.find(u);
    return h != host.end() && h->second == d;
  };

  // Why reader node r cannot read v as its view at channel (axis) `offset` in the buffer of the
  // widest Concat's output y, stored `whole`; "" when it can. Its kernel read v in v's own buffer
  // until now: it must read a strided view, or on a channels-last buffer take X at a channel pitch
  // and offset.
  auto reader_refusal = [&](const Node& r, const Value* v, const Value& y, int axis, int64_t offset,
                            const Storage& whole, std::vector<const Node*>* restore) -> std::string {
    if (!kernel.count(&r)) return fmt::format("also read by '{}' ({}), which runs no kernel: a view of it", r.name(), r.op());
    const Kernel& rk = *kernel.at(&r);
    const FamilyFacts& facts = rk.facts();
    if (facts.strided_operands) return "";
    const std::string who = fmt::format("also read by '{}' ({})", r.name(), rk.family_name());
    for (int j = 0; j < r.num_inputs(); ++j) {
      if (r.input_ptr(j) != v) continue;
      if (!whole.channels_last) {
        if (outer_extent_one(y.shape(), axis)) continue;  // a dense block of its own: any family reads it
        return who + fmt::format(", which reads dense operands only: its slice of the dense output is strided "
                                 "(dims before axis {} above 1)", axis);
      }
      if (!rk.channels_last || !facts.channels_last) return who + ", which does not run channels-last";
      if (j != 0) return who + fmt::format(" as its input {}: only X can be read at a channel pitch", j);
      if (axis != 1) return fmt::format("axis {} of a channels-last buffer is not the channel axis", axis);
      const int64_t es = static_cast<int64_t>(dtype_size(v->dtype()));
      if ((offset * es) % 16 != 0 || (whole.pitch * es) % 16 != 0) {
        return who + fmt::format(": its slice (channel {}, pitch {}) is not 16-byte aligned", offset, whole.pitch);
      }
      if (facts.pitch == ChannelPitch::always) continue;  // pools, depthwise convolutions
      if (facts.pitch == ChannelPitch::none) return who + ", which reads X at its channel count only (no channel pitch)";
      // A convolution: on tensor cores (or their arch's SIMT variant) K runs over X's channels in
      // whole 16-byte chunks at the buffer's pitch (compact K); its weight is stored for that.
      const int w = ops::lookup(r).layout_roles.weight;
      const int64_t C = v->shape()[1];
      if (!tensor_core_operands(r) || (v->dtype() != DType::float16 && v->dtype() != DType::bfloat16)) {
        return who + ", which takes a channel slice on 16-bit tensor-core operands only (FP16 / BF16 X and W, one group)";
      }
      if (C % tensor_core_channels(v->dtype()) != 0) {
        return who + fmt::format(": {} channels are not whole 16-byte chunks (its loads would be element by element)", C);
      }
      if (w < 0 || !r.has_input(w) || r.input(w).users().size() != 1) return who + ", whose weight another kernel reads too";
      if (restore) restore->push_back(&r);
    }
    return "";
  };

  // The elided Concats in kernel order, each input's step into the output's buffer.
  std::vector<std::pair<const Node*, std::vector<ViewStep>>> elided;
  std::map<const Node*, ConcatElision> decided;  // by node; reported in kernel order
  std::vector<const Node*> restore;              // convolutions that now read X at another pitch
  std::map<const Node*, std::string> prefix_refusal;  // why a prefix cannot be a view of its host's output
  // The widest of each chain (and every Concat in none) first, in kernel order; then the prefixes.
  std::vector<const Node*> order;
  for (bool prefixes : {false, true}) {
    for (const Node* c : concats) {
      if ((host.count(c) != 0) == prefixes) order.push_back(c);
    }
  }
  for (const Node* cp : order) {
    const Node& c = *cp;
    const Value& y = c.output(0);
    const int axis = concat_axis(c);
    ConcatElision report{c.name(), y.name(), false, {}, {}, {}};
    if (auto h = host.find(&c); h != host.end()) {
      // A prefix of a wider Concat: elided when it is, its output the first channels of that one's.
      const ConcatElision& wide = decided.at(h->second);
      report.prefix_of = h->second->name();
      int64_t offset = 0;
      for (const Value* x : c.inputs()) {
        report.inputs.push_back({x->name(), offset, ""});
        offset += x->shape()[static_cast<std::size_t>(axis)];
      }
      if (!wide.elided) {
        report.reason = "its inputs start Concat '" + h->second->name() + "', which is kept";
      } else if (prefix_refusal.count(&c)) {
        report.reason = "not a view of the first channels of Concat '" + h->second->name() + "': " + prefix_refusal.at(&c);
      } else {
        report.elided = true;
      }
      decided[&c] = std::move(report);
      continue;
    }
    const Storage whole = storage_of(&y);
    std::vector<const Node*> readers;  // convolutions that would read a slice at the buffer's pitch
    // Why input i (starting at `offset`) cannot be a slice of y; "" when it can.
    auto refusal = [&](int i, int64_t offset) -> std::string {
      const Value* x = c.inputs()[static_cast<std::size_t>(i)];
      if (x->is_constant()) return "a constant";
      if (index.root(x)->is_graph_input()) return "a model input";
      if (index.root(x) != x) return "a view of '" + index.root(x)->name() + "' (no kernel writes it)";
      if (x->is_graph_output() || index.space(x) == Space::output) return "a model output";
      if (std::count(c.inputs().begin(), c.inputs().end(), x) > 1) return "feeds this Concat more than once";
      for (const Node* u : x->users()) {
        if (in_chain(u, &c)) continue;
        if (kernel.count(u) && kernel.at(u)->family_name() == "concat") return "also feeds Concat '" + u->name() + "'";
      }
      const Node* p = x->producer();
      if (!p || !kernel.count(p)) return "its producer '" + (p ? p->name() : std::string()) + "' runs no kernel";
      const Kernel& pk = *kernel.at(p);
      const std::string& f = pk.family_name();
      if (p->outputs().empty() || p->outputs()[0] != x) return "not the first output of '" + p->name() + "'";
      for (const Value* o : p->outputs()) {
        if (o != x && o && (!o->users().empty() || o->is_graph_output())) {
          return "'" + p->name() + "' has other outputs in use";
        }
      }
      const int residual = ops::lookup(*p).layout_roles.residual;
      if (residual >= 0 && p->has_input(residual)) {
        return "'" + p->name() + "' reads a residual stored as its output is";
      }
      const Storage own = storage_of(x);
      if (own.channels_last != whole.channels_last) {
        return "stored " + layout_word(own) + ", the Concat's output " + layout_word(whole);
      }
      const FamilyFacts& facts = pk.facts();
      if (facts.strided_operands) {
        // writes any view
      } else if (whole.channels_last) {
        if (!facts.writes_channel_slice || !pk.channels_last) {
          return fmt::format("'{}' ({}) cannot write a channels-last slice", p->name(), f);
        }
        if (axis != 1) return fmt::format("axis {} of a channels-last buffer is not the channel axis", axis);
        const int64_t bytes = offset * static_cast<int64_t>(dtype_size(y.dtype()));
        if (facts.tensor_cores && tensor_core_operands(*p) && bytes % 16 != 0) {
          return fmt::format("its slice starts at channel {} ({} bytes, not 16-byte aligned): the tensor-core "
                             "convolution '{}' would run SIMT",
                             offset, bytes, p->name());
        }
      } else if (!outer_extent_one(y.shape(), axis)) {
        return fmt::format("its slice of the dense output is strided (dims before axis {} above 1), and '{}' ({}) "
                           "writes dense outputs only",
                           axis, p->name(), f);
      }
      // Its other readers read the slice in place.
      for (const Node* u : x->users()) {
        if (in_chain(u, &c)) continue;
        const std::string why = reader_refusal(*u, x, y, axis, offset, whole, &readers);
        if (!why.empty()) return why;
      }
      return "";
    };
    bool ok = true;
    int64_t offset = 0;
    for (int i = 0; i < c.num_inputs(); ++i) {
      const Value* x = c.inputs()[static_cast<std::size_t>(i)];
      const std::string why = refusal(i, offset);
      report.inputs.push_back({x->name(), offset, why});
      ok = ok && why.empty();
      offset += x->shape()[static_cast<std::size_t>(axis)];
    }
    // Its prefixes' outputs: views of the first channels of y, read where they are. A prefix that
    // cannot be one stays a Concat kernel (reading its inputs' slices of y).
    std::vector<const Node*> chain;
    for (const Node* m : members[&c]) {
      const Value& ym = m->output(0);
      std::vector<const Node*> convs;
      std::string why;
      if (ym.is_graph_output() || index.space(&ym) == Space::output) {
        why = "its output is a model output";
      } else if (storage_of(&ym).channels_last != whole.channels_last) {
        why = "its output is stored " + layout_word(storage_of(&ym)) + ", '" + y.name() + "' " + layout_word(whole);
      } else {
        for (const Node* u : ym.users()) {
          if (kernel.count(u) && kernel.at(u)->family_name() == "concat") {
            why = "its output feeds Concat '" + u->name() + "'";
          } else {
            why = reader_refusal(*u, &ym, y, axis, 0, whole, &convs);
          }
          if (!why.empty()) break;
        }
      }
      if (!why.empty()) {
        prefix_refusal[m] = why;
        continue;
      }
      chain.push_back(m);
      readers.insert(readers.end(), convs.begin(), convs.end());
    }
    report.elided = ok;
    if (ok) {
      std::vector<ViewStep> steps;
      auto add = [&](const Value* v, int64_t start) {
        ViewStep step;
        step.kind = ViewStep::Kind::concat_slice;
        step.value = v;
        step.from = &y;
        step.node = &c;
        step.axis = axis;
        step.start = start;
        steps.push_back(step);
      };
      for (std::size_t i = 0; i < report.inputs.size(); ++i) add(c.inputs()[i], report.inputs[i].offset);
      for (const Node* m : chain) add(&m->output(0), 0);
      elided.emplace_back(&c, std::move(steps));
      restore.insert(restore.end(), readers.begin(), readers.end());
    }
    decided[&c] = std::move(report);
  }
  std::set<const Node*> gone;
  for (const Node* c : concats) {
    ConcatElision& r = decided.at(c);
    if (r.elided) gone.insert(c);
    s.concats.push_back(std::move(r));
  }
  if (elided.empty()) return false;
  // Each input's buffer joins the output's (in kernel order: a Concat's output may itself be an
  // input of a later elided one, its slices going along); so do its prefixes' outputs.
  for (const auto& [c, steps] : elided) {
    for (const ViewStep& step : steps) {
      const ValueIndex now(s);
      absorb_buffer(s, now.buffer(step.value), now.buffer(step.from), step);
    }
  }
  s.kernels.erase(std::remove_if(s.kernels.begin(), s.kernels.end(),
                                 [&](const Kernel& k) { return gone.count(k.source.node) != 0; }),
                  s.kernels.end());
  resolve(s);
  restore_conv_weights(s, restore);
  return true;
}

}  // namespace modelc

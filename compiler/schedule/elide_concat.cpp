// compiler/schedule/elide_concat.cpp — the elide_concat stage (schedule/stages.h).
//
// A Concat runs no kernel when every input can be a slice of its output: each input's producer
// then writes straight into its slice of the Concat's buffer (a view with the output's strides,
// starting at the input's offset along the axis). An input can be such a slice when
//  - a kernel computes it: it is not a model input, a constant, a model output, or a view (Reshape,
//    Flatten, ...) of another buffer;
//  - this Concat is its only reader, once: a value fed twice, fed to two Concats or read by another
//    kernel would be needed in two places at once;
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
// The Concat's output keeps its layout and place; only its writers change: each input becomes a
// step of the output's buffer (ViewStep::concat_slice: the axis and where its slice starts), its
// own buffer gone. Schedule::concats (report.json "concats") lists every Concat kernel, elided or
// kept with the inputs that stop it.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "ops/registry.h"
#include "schedule/families.h"
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

}  // namespace

bool elide_concat(Schedule& s, const LowerOptions&) {
  const ValueIndex index(s);
  std::map<const Node*, const Kernel*> kernel;  // the kernels' nodes -> their kernels
  for (const Kernel& k : s.kernels) kernel[k.source.node] = &k;
  auto storage_of = [&](const Value* v) {
    const int b = index.buffer(v);
    return b < 0 ? Storage{} : s.buffers[static_cast<std::size_t>(b)].storage;
  };
  // The elided Concats in kernel order, each input's step into the output's buffer.
  std::vector<std::pair<const Node*, std::vector<ViewStep>>> elided;
  for (const Kernel& k : s.kernels) {
    if (k.family_name() != "concat") continue;
    const Node& c = *k.source.node;
    const Value& y = c.output(0);
    const int axis = concat_axis(c);
    const Storage whole = storage_of(&y);
    ConcatElision report{c.name(), y.name(), false, {}, {}};
    // Why input i (starting at `offset`) cannot be a slice of y; "" when it can.
    auto refusal = [&](int i, int64_t offset) -> std::string {
      const Value* x = c.inputs()[static_cast<std::size_t>(i)];
      if (x->is_constant()) return "a constant";
      if (index.root(x)->is_graph_input()) return "a model input";
      if (index.root(x) != x) return "a view of '" + index.root(x)->name() + "' (no kernel writes it)";
      if (x->is_graph_output() || index.space(x) == Space::output) return "a model output";
      for (const Node* u : x->users()) {
        if (u == &c) continue;
        if (kernel.count(u) && kernel.at(u)->family_name() == "concat") return "also feeds Concat '" + u->name() + "'";
        return "also read by '" + u->name() + "' (" + u->op() + ")";
      }
      if (std::count(c.inputs().begin(), c.inputs().end(), x) > 1) return "feeds this Concat more than once";
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
      if (facts.strided_operands) return "";
      if (whole.channels_last) {
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
        return "";
      }
      if (!outer_extent_one(y.shape(), axis)) {
        return fmt::format("its slice of the dense output is strided (dims before axis {} above 1), and '{}' ({}) "
                           "writes dense outputs only",
                           axis, p->name(), f);
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
    report.elided = ok;
    if (ok) {
      std::vector<ViewStep> steps;
      for (std::size_t i = 0; i < report.inputs.size(); ++i) {
        ViewStep step;
        step.kind = ViewStep::Kind::concat_slice;
        step.value = c.inputs()[i];
        step.from = &y;
        step.node = &c;
        step.axis = axis;
        step.start = report.inputs[i].offset;
        steps.push_back(step);
      }
      elided.emplace_back(&c, std::move(steps));
    }
    s.concats.push_back(std::move(report));
  }
  if (elided.empty()) return false;
  // Each input's buffer joins the output's (in kernel order: a Concat's output may itself be an
  // input of a later elided one, its slices going along).
  std::set<const Node*> gone;
  for (const auto& [c, steps] : elided) {
    for (const ViewStep& step : steps) {
      const ValueIndex now(s);
      absorb_buffer(s, now.buffer(step.value), now.buffer(step.from), step);
    }
    gone.insert(c);
  }
  s.kernels.erase(std::remove_if(s.kernels.begin(), s.kernels.end(),
                                 [&](const Kernel& k) { return gone.count(k.source.node) != 0; }),
                  s.kernels.end());
  resolve(s);
  return true;
}

}  // namespace modelc

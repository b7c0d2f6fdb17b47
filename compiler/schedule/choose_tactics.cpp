// compiler/schedule/choose_tactics.cpp — the tactics stage: for every kernel, its family's tactic
// rule (schedule/tactics.h choose_tactic: tactic per --arch, engine, estimate, note), then what
// the tactics decide beyond the kernel itself, before anything is placed:
//  - the note gets what the stages before decided for the kernel, from its own fields: the layout
//    conversion it is (first), the boundary Casts it took, the views it reads or writes through,
//    why a Transpose / Slice stays a kernel, its horizontally fused ranges, the Concat slices it
//    writes;
//  - a kernel that asks for scratch (Kernel::workspace_bytes: split-K partial sums, Winograd's V
//    and M, ...) gets a workspace buffer of its own (Buffer::kernel), its view Kernel::workspace;
//    the memory plan places it with the activations, live while the kernel runs;
//  - a kernel that needs scratch zero at its start and leaves it zero (Kernel::zeroed_bytes: the
//    small-M split-K tickets) gets a slice of the one zeroed buffer (Buffer::zeroed), live through
//    the whole run; the runtime zeroes it (Schedule::zeroed_offset);
//  - a Winograd convolution (engine "winograd") reads its weights transformed at compile time:
//    a new weight buffer holding U = G g G^T of its OHWI weights (schedule/winograd.h), its W view
//    on it; a weight no kernel reads any more leaves the schedule, so place_weights stores each
//    weight once, in its final form.
#include <fmt/format.h>

#include <algorithm>

#include "schedule/layout.h"
#include "schedule/stages.h"
#include "schedule/tactics.h"
#include "schedule/target.h"
#include "schedule/views.h"
#include "schedule/winograd.h"
#include "support/error.h"

namespace modelc {

namespace {

// The note's parts the stages before the tactics decided (the tactic rule wrote the rest).
void add_decisions_to_note(const Schedule& s, const ValueIndex& index, Kernel& k) {
  for (const std::string& c : k.folded_casts) k.note += "; boundary Cast '" + c + "' folded in";
  if (!k.operand_views.empty()) k.note += fmt::format("; {}", fmt::join(k.operand_views, ", "));
  if (!k.kept_view.empty()) k.note += "; not a view: " + k.kept_view;
  if (k.prologue.active()) k.note += fmt::format("; X loaded through the prologue {} ({})", k.prologue.text(), fmt::join(k.prologue.nodes, ", "));
  if (!k.kept_prologue.empty()) k.note += "; not a conv prologue: " + k.kept_prologue;
  if (k.row_maps.active()) {
    k.note += fmt::format("; {}{}{} through row tables: {}", k.row_maps.gather_a ? "A's rows gathered" : "",
                          k.row_maps.gather_a && k.row_maps.scatter_y ? ", " : "",
                          k.row_maps.scatter_y ? "Y's rows scattered" : "", fmt::join(k.row_maps.folded, ", "));
  }
  if (!k.kept_row_map.empty()) k.note += "; no row table: " + k.kept_row_map;
  if (k.row_norm.active) {
    k.note += fmt::format("; then LayerNormalization {} over its rows, by the last block of each row panel ({})",
                          fmt::join(k.row_norm.nodes, ", "), k.row_norm.why);
  }
  if (!k.kept_row_norm.empty()) k.note += "; not in a product's launch: " + k.kept_row_norm;
  if (!k.conversion.empty()) k.note = k.conversion + "; " + k.note;
  // Why a graph pass left the node as it is (passes/fold_batchnorm.cpp: a scale kept out of FP16 weights).
  const std::string graph_note = k.source.node ? k.source.node->attr_string("modelc_note", "") : "";
  if (!graph_note.empty()) k.note += "; " + graph_note;
  for (const OutputRange& r : k.ranges) {
    k.note += fmt::format("{} '{}' {} [{}, {}) -> '{}'", &r == &k.ranges[0] ? "; horizontally fused:" : ",",
                          r.source->name(), k.family_name() == "gemm" ? "columns" : "channels", r.begin, r.end,
                          r.source->output(0).name());
  }
  for (std::size_t i = 0; i < k.source.outputs.size() && i < k.outputs.size(); ++i) {
    const Value* v = k.source.outputs[i];
    const ViewStep* step = v ? index.step(v) : nullptr;
    if (!step || step->kind != ViewStep::Kind::concat_slice) continue;
    k.note += fmt::format("; {}writes its slice [{}, {}) on axis {} of '{}' (Concat '{}' elided)",
                          k.ranges.empty() ? "" : "'" + v->name() + "' ", step->start,
                          step->start + k.outputs[i].shape[static_cast<std::size_t>(step->axis)], step->axis,
                          step->from->name(), step->node->name());
  }
  (void)s;
}

// A Winograd convolution's W view: on a new weight buffer holding its weights transformed.
void transform_winograd_weights(Schedule& s, Kernel& k) {
  TensorView& w = k.inputs.at(1);
  if (w.space != Space::weights || w.buffer < 0) {
    throw Error("internal: kernel " + k.id + " runs Winograd on weights computed at run time");
  }
  const Buffer& from = s.buffers[static_cast<std::size_t>(w.buffer)];
  if (w.buffer_offset != 0 || !from.value) throw Error("internal: kernel " + k.id + ": Winograd weights of a view");
  const Tensor ohwi = from.ohwi ? ohwi_weights(from.value->constant(), *from.ohwi) : from.value->constant();
  Buffer u;
  u.data = linear::winograd_weights(ohwi);
  u.name = w.value + "_winograd";
  u.dtype = u.data.dtype();
  u.shape = u.data.shape();
  u.space = Space::weights;
  u.bytes = static_cast<int64_t>(u.data.nbytes());
  s.buffers.push_back(u);
  w = TensorView{u.name, u.dtype, u.shape, strides_of(u.shape), Space::weights, 0, -1,
                 static_cast<int>(s.buffers.size()) - 1, 0};
}

// Kernel i's workspace: an arena buffer of its own.
void add_workspace(Schedule& s, std::size_t i) {
  Kernel& k = s.kernels[i];
  Buffer b;
  b.name = k.id + " workspace";
  b.dtype = DType::float32;
  b.shape = {k.workspace_bytes / 4};
  b.space = Space::arena;
  b.kernel = static_cast<int>(i);
  b.bytes = k.workspace_bytes;
  s.buffers.push_back(b);
  k.workspace = TensorView{b.name, DType::float32, b.shape, {1}, Space::arena, 0, -1,
                           static_cast<int>(s.buffers.size()) - 1, 0};
}

// The kernels' zeroed scratch (Kernel::zeroed_bytes: small-M split-K tickets): one arena buffer
// for all of them, each kernel's view a slice of it (at kBufferAlignment), so the runtime zeroes
// one range (Schedule::zeroed_offset).
void add_zeroed(Schedule& s) {
  int64_t bytes = 0;
  for (const Kernel& k : s.kernels) bytes += (k.zeroed_bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  if (bytes == 0) return;
  Buffer b;
  b.name = "zeroed scratch";
  b.dtype = DType::uint32;
  b.shape = {bytes / 4};
  b.space = Space::arena;
  b.zeroed = true;
  b.bytes = bytes;
  s.buffers.push_back(b);
  const int buffer = static_cast<int>(s.buffers.size()) - 1;
  int64_t at = 0;
  for (Kernel& k : s.kernels) {
    if (k.zeroed_bytes <= 0) continue;
    k.zeroed = TensorView{k.id + " tickets", DType::uint32, {k.zeroed_bytes / 4}, {1}, Space::arena, 0, -1, buffer, at};
    at += (k.zeroed_bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  }
}

}  // namespace

bool choose_kernel_tactics(Schedule& s, const LowerOptions& o) {
  std::vector<Target> targets = targets_for(s.archs, o.passes.fp16_accumulate);
  for (Target& t : targets) {
    t.winograd = parse_winograd(o.passes.winograd);
    t.tuning = o.passes.tuning;
  }
  targets.front().tune_candidates = o.passes.tune_candidates;  // `modelc tune` times the first arch
  const ValueIndex index(s);
  for (Kernel& k : s.kernels) {
    choose_tactic(k, targets);
    add_decisions_to_note(s, index, k);
  }
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    Kernel& k = s.kernels[i];
    if (k.engine == Engine::winograd) transform_winograd_weights(s, k);
    if (k.workspace_bytes > 0) add_workspace(s, i);
  }
  add_zeroed(s);
  drop_unused_buffers(s);
  return !s.kernels.empty();
}

}  // namespace modelc

// compiler/schedule/schedule_verify.cpp — verify_schedule (schedule/stages.h): the IR's invariants,
// each checked once the stages that establish it ran (Schedule::ran), for --verify-each.
#include <fmt/format.h>

#include <set>
#include <vector>

#include "schedule/families.h"
#include "schedule/stages.h"
#include "schedule/streams.h"
#include "schedule/views.h"

namespace modelc {

namespace {

[[noreturn]] void fail(const std::string& what) { throw Error("internal: schedule: " + what); }

// Elements from a view's first addressed element to its last, plus one.
int64_t extent(const TensorView& v) {
  int64_t e = 1;
  for (std::size_t d = 0; d < v.shape.size(); ++d) e += (v.shape[d] - 1) * v.strides[d];
  return e;
}

}  // namespace

void verify_schedule(const Schedule& s) {
  auto ran = [&](const char* stage) { return s.ran.count(stage) != 0; };
  if (!s.graph) fail("no graph");
  std::set<const Node*> in_graph;
  for (const auto& up : s.graph->nodes()) in_graph.insert(up.get());

  // Buffers: each value in one buffer only, each step from a value of its own buffer, chains that
  // end at the buffer's value.
  std::set<const Value*> seen;
  for (std::size_t b = 0; b < s.buffers.size(); ++b) {
    const Buffer& buf = s.buffers[b];
    // In the buffer's order (its value, then its steps), so the value named is the same every run.
    std::set<const Value*> here;
    std::vector<const Value*> ordered;
    if (buf.value) ordered.push_back(buf.value);
    for (const ViewStep& st : buf.views) {
      if (!st.value || !st.from || !st.node) fail(fmt::format("buffer b{} ('{}') has a view step without its values", b, buf.name));
      ordered.push_back(st.value);
    }
    for (const Value* v : ordered) {
      if (here.insert(v).second && !seen.insert(v).second) fail("value '" + v->name() + "' is in two buffers");
    }
    for (const ViewStep& st : buf.views) {
      if (!here.count(st.from)) {
        fail(fmt::format("view '{}' of buffer b{} ('{}') is made from '{}', which is not in that buffer", st.value->name(), b,
                         buf.name, st.from->name()));
      }
      const Value* v = st.value;
      std::size_t steps = 0;
      for (;;) {
        const ViewStep* next = nullptr;
        for (const ViewStep& o : buf.views) {
          if (o.value == v) next = &o;
        }
        if (!next) break;
        v = next->from;
        if (++steps > buf.views.size()) fail(fmt::format("the views of buffer b{} ('{}') form a cycle", b, buf.name));
      }
      if (v != buf.value) fail(fmt::format("view '{}' does not lead to the value of its buffer b{} ('{}')", st.value->name(), b, buf.name));
    }
    if ((buf.space == Space::input || buf.space == Space::output) && buf.offset != 0) {
      fail(fmt::format("model {} buffer b{} ('{}') has offset {}", space_name(buf.space), b, buf.name, buf.offset));
    }
    if (buf.copy && !in_graph.count(buf.copy)) fail(fmt::format("the copy into output buffer b{} is not in the graph", b));
  }
  if (!ran("list_kernels")) return;

  const ValueIndex index(s);
  std::set<std::string> folded;
  for (const Kernel& k : s.kernels) folded.insert(k.folded_casts.begin(), k.folded_casts.end());
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const Kernel& k = s.kernels[i];
    if (k.id != fmt::format("k{}", i)) fail(fmt::format("kernel #{} is named {}", i, k.id));
    if (!k.source.node || !in_graph.count(k.source.node)) fail("kernel " + k.id + " runs a node that is not in the graph");
    if (!k.family || find_family(k.family->name) != k.family) {
      fail(fmt::format("kernel {} ('{}') has no registered family ('{}')", k.id, k.source.node->name(), k.family_name()));
    }
    if (folded.count(k.source.node->name()) && k.source.node->op() == "Cast") {
      fail("the folded Cast '" + k.source.node->name() + "' still runs a kernel");
    }
    if (k.source.inputs.size() != k.inputs.size()) fail("kernel " + k.id + ": its input views and source values differ in number");
    if (k.source.outputs.size() != k.outputs.size()) fail("kernel " + k.id + ": its output views and source values differ in number");
    // A kernel writes a buffer's value, an elided Concat's slice, or through a Transpose: never a view.
    for (const Value* v : k.source.outputs) {
      if (!v) continue;
      const ViewStep* st = index.step(v);
      if (st && st->kind != ViewStep::Kind::concat_slice && st->kind != ViewStep::Kind::write_through &&
          st->kind != ViewStep::Kind::row_scatter) {
        fail(fmt::format("kernel {} writes '{}', a {} view of '{}'", k.id, v->name(), view_step_name(st->kind), st->from->name()));
      }
    }
    // Every view inside its buffer, and at its buffer's place once that is placed.
    auto check = [&](const TensorView& v, const char* what, bool row_mapped) {
      if (v.dtype == DType::undefined) return;
      if (v.buffer < 0 || v.buffer >= static_cast<int>(s.buffers.size())) {
        fail(fmt::format("kernel {}: {} '{}' names no buffer (b{})", k.id, what, v.value, v.buffer));
      }
      const Buffer& b = s.buffers[static_cast<std::size_t>(v.buffer)];
      if (v.space != b.space || v.index != b.index) {
        fail(fmt::format("kernel {}: {} '{}' is in {}, its buffer b{} in {}", k.id, what, v.value, space_name(v.space), v.buffer,
                         space_name(b.space)));
      }
      if (v.strides.size() != v.shape.size()) {
        fail(fmt::format("kernel {}: view '{}' has {} strides for rank {}", k.id, v.value, v.strides.size(), v.shape.size()));
      }
      // A row-mapped operand's logical rows are not its buffer's (fold_row_maps checked its table
      // against the buffer's rows).
      if (v.numel() == 0 || row_mapped) return;
      const int64_t end = v.buffer_offset + extent(v) * static_cast<int64_t>(dtype_size(v.dtype));
      if (v.buffer_offset < 0 || end > b.bytes) {
        fail(fmt::format("kernel {}: {} '{}' spans bytes [{}, {}) of buffer b{} ('{}', {} bytes)", k.id, what, v.value,
                         v.buffer_offset, end, v.buffer, b.name, b.bytes));
      }
      if (b.offset >= 0 && v.offset != b.offset + v.buffer_offset) {
        fail(fmt::format("kernel {}: {} '{}' is at byte {}, its buffer b{} ('{}') at {} + {}", k.id, what, v.value, v.offset,
                         v.buffer, b.name, b.offset, v.buffer_offset));
      }
      const bool placed_arena = ran("memory_plan") && b.space == Space::arena;
      const bool placed_weights = ran("place_weights") && b.space == Space::weights;
      if ((placed_arena || placed_weights) && (b.offset < 0 || b.offset % kBufferAlignment != 0)) {
        fail(fmt::format("buffer b{} ('{}') is not placed (offset {})", v.buffer, b.name, b.offset));
      }
      if (placed_arena && v.offset + (end - v.buffer_offset) > s.arena_bytes) {
        fail(fmt::format("kernel {}: '{}' ends at byte {} of an arena of {}", k.id, v.value, v.offset + end - v.buffer_offset, s.arena_bytes));
      }
      if (placed_arena && (b.first > static_cast<int>(i) || b.last < static_cast<int>(i))) {
        fail(fmt::format("kernel {} touches buffer b{} ('{}'), live only #{}..#{}", k.id, v.buffer, b.name, b.first, b.last));
      }
      if (placed_weights && v.offset + (end - v.buffer_offset) > s.weights_bytes) {
        fail(fmt::format("kernel {}: '{}' ends at byte {} of a weights blob of {}", k.id, v.value, v.offset + end - v.buffer_offset,
                         s.weights_bytes));
      }
    };
    for (std::size_t j = 0; j < k.inputs.size(); ++j) check(k.inputs[j], "input", j == 0 && k.row_maps.gather_a);
    for (std::size_t j = 0; j < k.outputs.size(); ++j) check(k.outputs[j], "output", j == 0 && k.row_maps.scatter_y);
    if (ran("plan_kernels")) {
      const FamilyFacts* f = k.family;
      if (f && f->plan && !k.plan) fail("kernel " + k.id + " (" + k.family_name() + ") has no plan");
    }
    if (ran("tactics")) {
      if (std::holds_alternative<std::monostate>(k.tactic)) fail("kernel " + k.id + " has no tactic");
      if (k.workspace_bytes > 0) {
        const int w = k.workspace.buffer;
        if (w < 0 || w >= static_cast<int>(s.buffers.size()) || s.buffers[static_cast<std::size_t>(w)].kernel != static_cast<int>(i) ||
            s.buffers[static_cast<std::size_t>(w)].bytes < k.workspace_bytes) {
          fail(fmt::format("kernel {} asks for a workspace of {} bytes and has none", k.id, k.workspace_bytes));
        }
        check(k.workspace, "workspace", false);
      }
      if (k.zeroed_bytes > 0) {
        const int z = k.zeroed.buffer;
        if (z < 0 || z >= static_cast<int>(s.buffers.size()) || !s.buffers[static_cast<std::size_t>(z)].zeroed ||
            k.zeroed.numel() * 4 < k.zeroed_bytes) {
          fail(fmt::format("kernel {} asks for {} zeroed bytes and has none", k.id, k.zeroed_bytes));
        }
        check(k.zeroed, "zeroed scratch", false);
      }
    }
  }
  if (ran("streams")) {
    try {
      stream_order(s);
    } catch (const Error& e) {
      fail(e.what());
    }
  }
  if (ran("memory_plan")) {
    std::string why;
    if (!check_memory_plan(s.arena_buffers, kBufferAlignment, &why)) fail("memory plan: " + why);
    for (const LiveBuffer& b : s.arena_buffers) {
      if (b.offset < 0 || b.offset + b.bytes > s.arena_bytes) fail("buffer '" + b.name + "' lies outside the arena");
    }
  }
}

}  // namespace modelc

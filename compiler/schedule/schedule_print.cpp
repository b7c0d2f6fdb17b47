// compiler/schedule/schedule_print.cpp — print_schedule (schedule/stages.h): the IR as text, for
// --print-after. Everything a stage decided is here: per kernel its views (buffer, strides, offset
// in the buffer, and its place once planned) and its decisions, per buffer its layout, its views
// and slices and its place, then the stages' summaries (layout, Concats, streams, arena, weights).
#include <fmt/format.h>

#include <sstream>

#include "schedule/stages.h"

namespace modelc {

namespace {

std::string view_text(const TensorView& v) {
  if (v.dtype == DType::undefined) return "-";
  std::string where;
  if (v.space == Space::input || v.space == Space::output) {
    where = fmt::format("{}#{}{}", space_name(v.space), v.index, v.buffer_offset ? fmt::format("+{}", v.buffer_offset) : "");
  } else {
    where = fmt::format("{} b{}+{}{}", space_name(v.space), v.buffer, v.buffer_offset,
                        v.offset >= 0 ? fmt::format(" @{}", v.offset) : "");
  }
  return fmt::format("{} {}[{}] strides [{}] {}", v.value, dtype_name(v.dtype), shape_str(v.shape),
                     fmt::join(v.strides, ","), where);
}

std::string views_text(const std::vector<TensorView>& vs) {
  std::vector<std::string> r;
  for (const TensorView& v : vs) r.push_back(view_text(v));
  return fmt::format("{}", fmt::join(r, "; "));
}

std::string node_text(const Node* n) { return n ? fmt::format("{} '{}'", n->op(), n->name()) : std::string("?"); }

std::string step_text(const ViewStep& st) {
  const std::string value = st.value ? st.value->name() : "?";
  const std::string from = st.from ? st.from->name() : "?";
  if (st.kind == ViewStep::Kind::concat_slice) {
    const int64_t extent = st.value ? st.value->shape()[static_cast<std::size_t>(st.axis)] : 0;
    return fmt::format("{} = slice [{}, {}) on axis {} of {} ({} elided)", value, st.start, st.start + extent, st.axis,
                       from, node_text(st.node));
  }
  if (st.kind == ViewStep::Kind::write_through) {
    return fmt::format("{} = written through {} into {}", value, node_text(st.node), from);
  }
  return fmt::format("{} = {} of {} ({})", value, view_step_name(st.kind), from, node_text(st.node));
}

}  // namespace

std::string print_schedule(const Schedule& s) {
  std::ostringstream os;
  auto ran = [&](const char* stage) { return s.ran.count(stage) != 0; };
  if (ran("list_kernels")) {
    os << "kernels (" << s.kernels.size() << "):\n";
    for (const Kernel& k : s.kernels) {
      os << fmt::format("  {} {} {}{}\n", k.id, k.family_name(), node_text(k.source.node), k.output_copy ? " (output copy)" : "");
      os << fmt::format("    in:  {}\n    out: {}\n", views_text(k.inputs), views_text(k.outputs));
      std::vector<std::string> decided;
      if (k.channels_last) decided.push_back("channels-last");
      if (!k.conversion.empty()) decided.push_back(k.conversion);
      if (!k.folded_casts.empty()) decided.push_back(fmt::format("takes the Casts {}", fmt::join(k.folded_casts, ", ")));
      for (const std::string& v : k.operand_views) decided.push_back(v);
      if (!k.kept_view.empty()) decided.push_back("not a view: " + k.kept_view);
      if (k.prologue.active()) decided.push_back("prologue: " + k.prologue.text());
      if (!k.kept_prologue.empty()) decided.push_back("not a conv prologue: " + k.kept_prologue);
      if (k.row_maps.active()) decided.push_back(fmt::format("row tables: {}", fmt::join(k.row_maps.folded, ", ")));
      if (!k.kept_row_map.empty()) decided.push_back("no row table: " + k.kept_row_map);
      if (k.row_norm.active) decided.push_back("row norm: " + fmt::format("{}", fmt::join(k.row_norm.nodes, ", ")));
      if (!k.kept_row_norm.empty()) decided.push_back("not a row norm: " + k.kept_row_norm);
      if (!k.ranges.empty()) {
        std::vector<std::string> ranges;
        for (const OutputRange& r : k.ranges) ranges.push_back(fmt::format("'{}' [{}, {})", r.op.name, r.begin, r.end));
        decided.push_back(fmt::format("horizontally fused: {}", fmt::join(ranges, ", ")));
      }
      if (k.batch_as_rows) decided.push_back("batch as rows");
      if (ran("streams")) {
        std::vector<std::string> waits;
        for (int w : k.waits) waits.push_back(fmt::format("{}", w));
        decided.push_back(fmt::format("stream {}{}{}", k.stream, waits.empty() ? "" : fmt::format(", waits on events {}", fmt::join(waits, " ")),
                                      k.event >= 0 ? fmt::format(", records event {}", k.event) : ""));
      }
      if (k.plan) decided.push_back(fmt::format("plan {}", k.plan->kind()));
      if (!decided.empty()) os << fmt::format("    {}\n", fmt::join(decided, "; "));
      if (ran("tactics")) {
        std::vector<std::string> fields;
        for (const auto& [key, value] : tactic_fields(k.tactic)) fields.push_back(fmt::format("{}={}", key, value));
        os << fmt::format("    tactic: {}{}{}\n", fmt::join(fields, " "), k.arch_tactic.empty() ? "" : " (differs per arch)",
                          k.engine == Engine::none ? "" : std::string(", engine ") + engine_name(k.engine));
        if (k.workspace.buffer >= 0) os << fmt::format("    workspace: {}\n", view_text(k.workspace));
        os << fmt::format("    note: {}\n", k.note);
      }
    }
  }
  if (!s.buffers.empty()) os << "buffers (" << s.buffers.size() << "):\n";
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    const Buffer& b = s.buffers[i];
    std::vector<std::string> facts;
    if (b.space == Space::input || b.space == Space::output) {
      facts.push_back(fmt::format("{}#{}", space_name(b.space), b.index));
    } else {
      facts.push_back(space_name(b.space));
    }
    facts.push_back(fmt::format("{}[{}]", dtype_name(b.dtype), shape_str(b.shape)));
    if (b.bytes) facts.push_back(fmt::format("{} bytes", b.bytes));
    if (b.storage.channels_last) facts.push_back(fmt::format("channels-last, pitch {}", b.storage.pitch));
    if (b.ohwi) facts.push_back(fmt::format("OHWI{}, pitch {}, rows of {}", b.ohwi->compact ? " compact" : "", b.ohwi->pitch, b.ohwi->row));
    if (b.copy) facts.push_back("copied by " + node_text(b.copy));
    if (b.kernel >= 0) facts.push_back(fmt::format("workspace of k{}", b.kernel));
    if (b.data.defined()) facts.push_back("computed at compile time");
    if (b.first >= 0) facts.push_back(fmt::format("live #{}..#{}", b.first, b.last));
    if (b.offset >= 0 && (b.space == Space::arena || b.space == Space::weights)) facts.push_back(fmt::format("at {}", b.offset));
    os << fmt::format("  b{} {}: {}\n", i, b.name, fmt::join(facts, ", "));
    for (const ViewStep& st : b.views) os << "    " << step_text(st) << "\n";
  }
  if (ran("layout")) os << "layout: " << (s.layout.empty() ? "every buffer dense" : s.layout) << "\n";
  if (ran("elide_concat")) {
    for (const ConcatElision& c : s.concats) {
      std::vector<std::string> inputs;
      for (const ConcatElision::Input& in : c.inputs) {
        inputs.push_back(fmt::format("{} at {}{}", in.value, in.offset, in.reason.empty() ? "" : ": " + in.reason));
      }
      os << fmt::format("concat '{}': {} ({})\n", c.name, c.elided ? "elided" : "kept", fmt::join(inputs, "; "));
    }
  }
  if (ran("streams")) {
    os << fmt::format("streams: {}, events {}, critical path {} kernels\n", s.streams, s.events, s.critical_path);
  }
  if (ran("memory_plan")) {
    os << fmt::format("arena: {} bytes ({} without reuse, {} live at most; placed {})\n", s.arena_bytes,
                      s.activation_bytes_total, s.arena_max_live_bytes, s.arena_order);
    for (const LiveBuffer& b : s.arena_buffers) {
      os << fmt::format("  {}: [{}, {}) live #{}..#{}\n", b.name, b.offset, b.offset + b.bytes, b.first, b.last);
    }
  }
  if (ran("place_weights")) {
    os << fmt::format("weights: {} bytes, {} tensors\n", s.weights_bytes, s.weights.size());
    for (const WeightEntry& w : s.weights) {
      os << fmt::format("  {}: [{}, {}) {}\n", w.value, w.offset, w.offset + static_cast<int64_t>(w.data.nbytes()),
                        std::string(dtype_name(w.data.dtype())) + "[" + shape_str(w.data.shape()) + "]");
    }
  }
  return os.str();
}

}  // namespace modelc

// schedule's streams stage (schedule/streams.h): the stream assignment on small DAGs (a chain on one
// stream, a diamond with events exactly where an edge crosses streams, no redundant wait, the cap
// on streams), the liveness it gives the memory plan, and a lowered two-branch graph whose kernels
// that may run at the same time never share arena bytes. (Models through the emulation's random
// interleaving: tests/codegen, codegen_streams_*.)
#include <doctest/doctest.h>

#include <algorithm>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/streams.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;
using modelc::test::kernel_of;
using modelc::test::sine_weight;

namespace {

// Every edge is ordered: the stream order and the waits make each predecessor happen before.
void check_edges_ordered(const StreamPlan& p, const std::vector<std::vector<int>>& preds) {
  for (std::size_t j = 0; j < preds.size(); ++j) {
    for (int q : preds[j]) {
      CAPTURE(j);
      CAPTURE(q);
      CHECK(p.happens_before(q, static_cast<int>(j)));
    }
  }
}

}  // namespace

TEST_CASE("streams: a chain stays on one stream, with no event") {
  const std::vector<std::vector<int>> preds = {{}, {0}, {1}, {2}};
  const StreamPlan p = assign_streams(preds, kAutomaticStreams);
  CHECK(p.streams == 1);
  CHECK(p.events() == 0);
  CHECK(p.critical_path == 4);
  for (int j = 0; j < 4; ++j) {
    CHECK(p.stream[j] == 0);
    CHECK(p.waits[j].empty());
    CHECK(p.event[j] == -1);
  }
  CHECK(p.concurrent_last({1, 2}) == 2);  // one stream: the listing order is the order
}

TEST_CASE("streams: a diamond forks to a second stream and joins back with one event each way") {
  // 0 -> 1, 0 -> 2, {1, 2} -> 3
  const std::vector<std::vector<int>> preds = {{}, {0}, {0}, {1, 2}};
  const StreamPlan p = assign_streams(preds, kAutomaticStreams);
  CHECK(p.streams == 2);
  CHECK(p.stream == std::vector<int>{0, 0, 1, 0});
  CHECK(p.waits[1].empty());                      // 0 -> 1 on one stream
  CHECK(p.waits[2] == std::vector<int>{0});       // the fork edge crosses streams
  CHECK(p.waits[3] == std::vector<int>{2});       // the join edge too; 1 -> 3 is the stream order
  CHECK(p.event == std::vector<int>{0, -1, 1, -1});
  CHECK(p.kernel_events == 2);
  CHECK(p.events() == 4);                         // and the run's fork and the second stream's join
  CHECK(p.critical_path == 3);
  check_edges_ordered(p, preds);
  CHECK_FALSE(p.happens_before(1, 2));
  CHECK_FALSE(p.happens_before(2, 1));
  // A buffer only kernel 1 touches may still be in use while kernel 2 runs: live until 2.
  CHECK(p.concurrent_last({1}) == 2);
  CHECK(p.concurrent_last({0, 2}) == 2);          // kernel 3 comes after both
  CHECK(p.concurrent_last({1, 3}) == 3);
}

TEST_CASE("streams: no wait that the others imply (a transitive reduction of the crossing edges)") {
  // An Inception module: 0 feeds four branches (1, 2->3, 4->5, 6), 7 reads them all and 0 too.
  const std::vector<std::vector<int>> preds = {{}, {0}, {0}, {2}, {0}, {4}, {0}, {0, 1, 3, 5, 6}};
  const StreamPlan p = assign_streams(preds, kAutomaticStreams);
  CHECK(p.streams == 4);
  check_edges_ordered(p, preds);
  CHECK(p.stream[3] == p.stream[2]);  // chains stay on their stream
  CHECK(p.stream[5] == p.stream[4]);
  // 7 continues one branch's stream and waits once for each other branch's last kernel, never for 0
  // (every branch started after it).
  CHECK(p.waits[7].size() == 3);
  CHECK(std::find(p.waits[7].begin(), p.waits[7].end(), 0) == p.waits[7].end());
  int waits = 0;
  for (const std::vector<int>& w : p.waits) waits += static_cast<int>(w.size());
  CHECK(waits == 3 + 3);  // 3 forks from 0, 3 joins into 7
  CHECK(p.critical_path == 4);
}

TEST_CASE("streams: at most max_streams; --streams 1 is the listing order") {
  const std::vector<std::vector<int>> preds = {{}, {0}, {0}, {0}, {0}, {1, 2, 3, 4}};
  const StreamPlan two = assign_streams(preds, 2);
  CHECK(two.streams == 2);
  check_edges_ordered(two, preds);
  const StreamPlan one = assign_streams(preds, 1);
  CHECK(one.streams == 1);
  CHECK(one.events() == 0);
  for (const std::vector<int>& w : one.waits) CHECK(w.empty());
  CHECK_THROWS(assign_streams({{}, {2}, {}}, 2));  // an edge to a later kernel is no DAG in order
}

namespace {

// x -> conv_a (1x1) -> relu_a; x -> conv_b (3x3) -> conv_b2 (3x3); Add(relu_a, conv_b2) -> y: two
// branches that may run at the same time.
struct TwoBranches {
  Graph g;
  TwoBranches() {
    g.set_opset(17);
    Value* x = input(g, "x", {1, 8, 6, 6});
    Value *a = g.add_value("a"), *ar = g.add_value("ar"), *b = g.add_value("b"), *b2 = g.add_value("b2"),
          *y = g.add_value("y");
    g.add_node("Conv", "conv_a", {x, sine_weight(g, "Wa", {8, 8, 1, 1})}, {a});
    g.add_node("Relu", "relu_a", {a}, {ar});
    g.add_node("Conv", "conv_b", {x, sine_weight(g, "Wb", {8, 8, 3, 3})}, {b})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Conv", "conv_b2", {b, sine_weight(g, "Wb2", {8, 8, 3, 3})}, {b2})->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Add", "add", {ar, b2}, {y});
    g.add_output(y);
    ops::infer_graph(g);
  }
};

// The graph must outlive the Schedule (kernels point at its nodes).
Schedule lower_two_branches(TwoBranches& t, int streams) {
  LowerOptions o;
  o.name = "t";
  o.passes.disabled = {"fuse_epilogue"};  // keep relu_a and the Add as kernels of their own
  o.layout = LayoutMode::nchw;
  o.streams = streams;
  return lower(t.g, o);
}

// Kernel i happens before kernel j (or is j) by the schedule's streams and events.
bool ordered(const Schedule& s, std::size_t i, std::size_t j) {
  std::vector<bool> reach(s.kernels.size(), false);
  reach[i] = true;
  for (std::size_t k = i + 1; k <= j; ++k) {
    for (std::size_t q = i; q < k && !reach[k]; ++q) {
      if (!reach[q]) continue;
      const Kernel &a = s.kernels[q], &b = s.kernels[k];
      const bool next_on_stream = a.stream == b.stream;
      const bool waited = a.event >= 0 && std::count(b.waits.begin(), b.waits.end(), a.event);
      reach[k] = next_on_stream || waited;
    }
  }
  return i <= j && reach[j];
}

// The arena bytes a view spans: [offset, offset + extent).
std::pair<int64_t, int64_t> bytes_of(const TensorView& v) {
  int64_t last = 0;
  for (std::size_t d = 0; d < v.shape.size(); ++d) last += (v.shape[d] - 1) * v.strides[d];
  return {v.offset, v.offset + (last + 1) * static_cast<int64_t>(dtype_size(v.dtype))};
}

}  // namespace

TEST_CASE("streams: kernels that may run at the same time never share arena bytes") {
  TwoBranches t;
  const Schedule s = lower_two_branches(t, 0);
  CHECK(s.streams == 2);
  CHECK(kernel_of(s, "conv_b").stream != kernel_of(s, "conv_a").stream);
  CHECK(kernel_of(s, "conv_b2").stream == kernel_of(s, "conv_b").stream);
  CHECK(kernel_of(s, "add").waits.size() == 1);  // the join: one event from the other branch
  CHECK(s.critical_path == 3);
  int unordered = 0;
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    for (std::size_t j = i + 1; j < s.kernels.size(); ++j) {
      if (ordered(s, i, j)) continue;
      ++unordered;
      std::vector<TensorView> a = s.kernels[i].inputs, b = s.kernels[j].inputs;
      a.insert(a.end(), s.kernels[i].outputs.begin(), s.kernels[i].outputs.end());
      b.insert(b.end(), s.kernels[j].outputs.begin(), s.kernels[j].outputs.end());
      for (const TensorView& u : a) {
        for (const TensorView& v : b) {
          if (u.space != Space::arena || v.space != Space::arena || u.value == v.value) continue;
          const auto [u0, u1] = bytes_of(u);
          const auto [v0, v1] = bytes_of(v);
          CAPTURE(u.value);
          CAPTURE(v.value);
          CHECK((u1 <= v0 || v1 <= u0));
        }
      }
    }
  }
  CHECK(unordered > 0);  // the branches' kernels are not ordered: the check above had work
}

TEST_CASE("streams: --streams 1 runs every kernel on the caller's stream, in order") {
  TwoBranches t;
  const Schedule s = lower_two_branches(t, 1);
  CHECK(s.streams == 1);
  CHECK(s.events == 0);
  for (const Kernel& k : s.kernels) {
    CHECK(k.stream == 0);
    CHECK(k.waits.empty());
    CHECK(k.event == -1);
  }
  // The listing order's liveness: a buffer dies at its last reader.
  for (const LiveBuffer& b : s.arena_buffers) {
    if (b.name == "a") CHECK(b.last == static_cast<int>(&kernel_of(s, "relu_a") - s.kernels.data()));
  }
}

TEST_CASE("streams: --disable-pass streams leaves one stream") {
  TwoBranches t;
  LowerOptions o;
  o.passes.disabled = {"streams"};
  const Schedule s = lower(t.g, o);
  CHECK(s.streams == 1);
  CHECK(s.critical_path == 0);
  for (const Kernel& k : s.kernels) CHECK(k.stream == 0);
}

TEST_CASE("streams stage: the kernels' streams, waits and events; stream_order reads them back") {
  TwoBranches t;
  LowerOptions o;
  o.name = "t";
  o.passes.disabled = {"fuse_epilogue"};
  o.passes.verify_each = true;
  o.layout = LayoutMode::nchw;
  Schedule s = test::before(t.g, o, "streams");
  REQUIRE(s.kernels.size() == 5);
  // The DAG from the views' buffers: conv_a -> relu_a -> add, conv_b -> conv_b2 -> add.
  const std::vector<std::vector<int>> preds = kernel_dependencies(s);
  CHECK(preds[1] == std::vector<int>{0});
  CHECK(preds[3] == std::vector<int>{2});
  CHECK(preds[4] == std::vector<int>{1, 3});
  for (const Kernel& k : s.kernels) CHECK(k.stream == 0);  // before: the caller's stream, in order
  CHECK(run_schedule_stage(s, o, "streams"));
  CHECK(s.streams == 2);
  const Kernel& add = kernel_of(s, "add");
  REQUIRE(add.waits.size() == 1);
  // The plan as the kernels hold it is the plan assign_streams made: the same order, the same
  // clocks, so the memory plan's liveness follows the streams stage's decisions.
  const StreamPlan made = assign_streams(preds, kAutomaticStreams);
  const StreamPlan read = stream_order(s);
  CHECK(read.stream == made.stream);
  CHECK(read.seq == made.seq);
  CHECK(read.waits == made.waits);
  for (std::size_t j = 0; j < s.kernels.size(); ++j) {
    for (std::size_t i = 0; i < j; ++i) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(read.happens_before(static_cast<int>(i), static_cast<int>(j)) ==
            made.happens_before(static_cast<int>(i), static_cast<int>(j)));
    }
  }
  // A kernel waiting on an event no earlier kernel records: the schedule says so.
  s.kernels[0].waits = {7};
  CHECK_THROWS_WITH_AS(stream_order(s), doctest::Contains("waits on event 7, which no earlier kernel records"), Error);
}

// The tactics stage (schedule/choose_tactics.cpp), then memory_plan and place_weights on what it
// decided: decide first, place last. A Winograd convolution's workspace and transformed weights are
// buffers the tactics add before anything is placed; the one memory plan places the workspace with
// the activations; the weights blob stores U once, after the graph's constants.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;
using modelc::test::kernel_of;
using modelc::test::sine_weight;

namespace {

// x [1, 16, 8, 8] -> Conv 3x3 p1 (16, bias B) -> Add(C) -> Add(D) -> y, C and D the same bytes
// (whole [1, 16, 8, 8] tensors: a per-channel Add would fold into the conv's bias).
struct Net {
  Graph g;
  Net() {
    g.set_opset(17);
    Value* x = input(g, "x", {1, 16, 8, 8});
    Value *c = g.add_value("c"), *a = g.add_value("a"), *y = g.add_value("y");
    g.add_node("Conv", "conv", {x, sine_weight(g, "W", {16, 16, 3, 3}), sine_weight(g, "B", {16})}, {c})
        ->set_attr_ints("pads", {1, 1, 1, 1});
    g.add_node("Add", "add", {c, sine_weight(g, "C", {1, 16, 8, 8})}, {a});
    g.add_node("Add", "add2", {a, sine_weight(g, "D", {1, 16, 8, 8})}, {y});
    g.add_output(y);
    ops::infer_graph(g);
  }
};

LowerOptions options() {
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_80"};
  o.passes.fp16 = true;
  o.passes.winograd = "always";
  o.passes.fuse_epilogue = false;  // the Adds stay kernels (elementwise, reading C and D),
  o.passes.disabled = {"fuse_elementwise"};  // one each
  o.passes.verify_each = true;
  return o;
}

}  // namespace

TEST_CASE("tactics stage: every kernel's tactic and note, a workspace buffer, the transformed weights") {
  Net net;
  const LowerOptions o = options();
  Schedule s = test::before(net.g, o, "tactics");
  for (const Kernel& k : s.kernels) {
    CHECK(std::holds_alternative<std::monostate>(k.tactic));
    for (const TensorView& v : k.inputs) {
      if (v.space == Space::arena || v.space == Space::weights) CHECK(v.offset == -1);  // nothing placed yet
    }
  }
  const Kernel& before = kernel_of(s, "conv");
  const std::string w_value = before.inputs[1].value;
  CHECK(before.inputs[1].strides.size() == 4);  // OHWI, as the layout stored it
  // The note tells what the stages before decided, from the kernel's own fields.
  Kernel& add = s.kernels[static_cast<std::size_t>(&kernel_of(s, "add") - s.kernels.data())];
  add.conversion = "layout conversion: (a test's)";
  add.folded_casts = {"cast_a", "cast_b"};
  CHECK(run_schedule_stage(s, o, "tactics"));
  for (const Kernel& k : s.kernels) CHECK_FALSE(std::holds_alternative<std::monostate>(k.tactic));
  const std::string& note = kernel_of(s, "add").note;
  CHECK(note.rfind("layout conversion: (a test's); ", 0) == 0);
  CHECK(note.find("; boundary Cast 'cast_a' folded in; boundary Cast 'cast_b' folded in") != std::string::npos);
  const std::size_t ci = static_cast<std::size_t>(&kernel_of(s, "conv") - s.kernels.data());
  const Kernel& conv = s.kernels[ci];
  CHECK(conv.engine == Engine::winograd);
  // Its workspace: an arena buffer of its own, not yet placed.
  REQUIRE(conv.workspace_bytes > 0);
  REQUIRE(conv.workspace.buffer >= 0);
  const Buffer& ws = s.buffers[static_cast<std::size_t>(conv.workspace.buffer)];
  CHECK(ws.name == conv.id + " workspace");
  CHECK(ws.kernel == static_cast<int>(ci));
  CHECK(ws.bytes == conv.workspace_bytes);
  CHECK(ws.space == Space::arena);
  CHECK(ws.offset == -1);
  // Its W: U = G g G^T, [16, M, pitch], computed now and stored once place_weights runs; the OHWI
  // copy no kernel reads any more has left the schedule.
  const TensorView& w = conv.inputs[1];
  CHECK(w.value == w_value + "_winograd");
  const Buffer& u = s.buffers[static_cast<std::size_t>(w.buffer)];
  CHECK(u.data.defined());
  CHECK(u.data.shape() == Shape{16, 16, 16});
  CHECK(u.offset == -1);
  CHECK(w.shape == u.data.shape());
  for (const Buffer& b : s.buffers) CHECK(b.name != w_value);
}

TEST_CASE("memory_plan stage: every arena buffer, workspaces included, placed once; the views follow") {
  Net net;
  const LowerOptions o = options();
  Schedule s = test::before(net.g, o, "memory_plan");
  CHECK(run_schedule_stage(s, o, "memory_plan"));
  const Kernel& conv = kernel_of(s, "conv");
  const Buffer& ws = s.buffers[static_cast<std::size_t>(conv.workspace.buffer)];
  CHECK(ws.offset >= 0);
  CHECK(conv.workspace.offset == ws.offset);
  bool planned = false;
  for (const LiveBuffer& b : s.arena_buffers) {
    if (b.name != ws.name) continue;
    planned = true;
    CHECK(b.offset == ws.offset);
    CHECK(b.bytes == conv.workspace_bytes);
  }
  CHECK(planned);
  for (const Buffer& b : s.buffers) {
    CAPTURE(b.name);
    if (b.space == Space::arena) CHECK(b.offset % kBufferAlignment == 0);
    if (b.space == Space::weights) CHECK(b.offset == -1);  // the blob comes last
  }
  for (const Kernel& k : s.kernels) {
    for (const TensorView& v : k.outputs) {
      if (v.space == Space::arena) CHECK(v.offset == s.buffers[static_cast<std::size_t>(v.buffer)].offset + v.buffer_offset);
    }
  }
  // The workspace is live while the conv runs: nothing else live then shares its bytes.
  std::string why;
  CHECK(check_memory_plan(s.arena_buffers, kBufferAlignment, &why));
  CHECK(s.arena_bytes >= s.arena_max_live_bytes);
}

TEST_CASE("place_weights stage: every weight once, in its final form: the constants by first use, then U") {
  Net net;
  const LowerOptions o = options();
  Schedule s = test::before(net.g, o, "place_weights");
  CHECK(s.weights.empty());
  CHECK(run_schedule_stage(s, o, "place_weights"));
  const Kernel& conv = kernel_of(s, "conv");
  // B (the conv's bias), C (D's bytes are C's: stored once), then U.
  REQUIRE(s.weights.size() == 3);
  CHECK(s.weights[0].value == conv.inputs[2].value);
  CHECK(s.weights[1].value == kernel_of(s, "add").inputs[1].value);
  CHECK(s.weights[2].value == conv.inputs[1].value);
  CHECK(s.weights[2].data.shape() == Shape{16, 16, 16});
  CHECK(kernel_of(s, "add2").inputs[1].offset == kernel_of(s, "add").inputs[1].offset);
  CHECK(conv.inputs[1].offset == s.weights[2].offset);
  for (const WeightEntry& e : s.weights) CHECK(e.offset % kBufferAlignment == 0);
  CHECK(s.weights_bytes == s.weights[2].offset + static_cast<int64_t>(s.weights[2].data.nbytes()));
}

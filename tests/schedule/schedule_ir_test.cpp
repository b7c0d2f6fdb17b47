// The Schedule as an IR: print_schedule (--print-after) shows the kernels, buffers and decisions;
// verify_schedule (--verify-each) names the invariant a broken schedule breaks.
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;

namespace {

// x -> Relu -> r -> Reshape -> v -> Sigmoid -> s2 -> Add(W) -> y.
struct Chain {
  Graph g;
  Chain() {
    g.set_opset(17);
    Value* x = input(g, "x", {2, 8});
    Value *r = g.add_value("r"), *v = g.add_value("v"), *s2 = g.add_value("s2"), *y = g.add_value("y");
    g.add_node("Relu", "relu", {x}, {r});
    g.add_node("Reshape", "reshape", {r, g.add_constant("shape", Tensor::from_i64(DType::int64, {2}, {4, 4}), true)}, {v});
    g.add_node("Sigmoid", "sigmoid", {v}, {s2});
    g.add_node("Add", "add", {s2, g.add_constant("W", Tensor::from_f64(DType::float32, {4, 4}, std::vector<double>(16, 1)), true)},
               {y});
    g.add_output(y);
    ops::infer_graph(g);
  }
};

LowerOptions options() {
  LowerOptions o;
  o.name = "t";
  o.passes.fuse_epilogue = false;
  return o;
}

void check_fails(const Schedule& s, const std::string& what) {
  CAPTURE(what);
  CHECK_THROWS_WITH_AS(verify_schedule(s), doctest::Contains(what.c_str()), Error);
}

}  // namespace

TEST_CASE("print_schedule: the kernels with their views and decisions, the buffers, the summaries") {
  Chain c;
  const Schedule s = lower(c.g, options());
  const std::string text = print_schedule(s);
  INFO(text);
  CHECK(text.find("kernels (3):\n  k0 elementwise Relu 'relu'\n    in:  x float32[2x8] strides [8,1] input#0\n") !=
        std::string::npos);
  CHECK(text.find("    out: r float32[2x8] strides [8,1] arena b") != std::string::npos);
  CHECK(text.find("v float32[4x4] strides [4,1] arena b") != std::string::npos);  // the Sigmoid reads the view
  CHECK(text.find("stream 0") != std::string::npos);
  CHECK(text.find("    tactic: ") != std::string::npos);
  CHECK(text.find("buffers (5):\n") != std::string::npos);
  CHECK(text.find(" x: input#0, float32[2x8], 64 bytes\n") != std::string::npos);
  CHECK(text.find("    v = reshape of r (Reshape 'reshape')\n") != std::string::npos);
  CHECK(text.find("W: weights, float32[4x4], 64 bytes, at 0\n") != std::string::npos);
  CHECK(text.find("arena: ") != std::string::npos);
  CHECK(text.find("weights: 256 bytes, 1 tensors\n") != std::string::npos);
}

TEST_CASE("verify_schedule: a lowered schedule holds; each broken invariant is named") {
  Chain c;
  const Schedule good = lower(c.g, options());
  CHECK_NOTHROW(verify_schedule(good));
  const int r = test::buffer_index(good, "r");
  {
    Schedule s = good;
    s.kernels[1].inputs[0].buffer_offset = 64;  // v starts past r's 64 bytes
    check_fails(s, "kernel k1: input 'v' spans bytes [64, 128) of buffer b" + std::to_string(r));
  }
  {
    Schedule s = good;
    s.kernels[1].inputs[0].buffer = 99;
    check_fails(s, "kernel k1: input 'v' names no buffer (b99)");
  }
  {
    Schedule s = good;
    s.buffers.push_back(s.buffers[static_cast<std::size_t>(r)]);
    check_fails(s, "value 'r' is in two buffers");
  }
  {
    Schedule s = good;
    s.buffers[static_cast<std::size_t>(r)].offset = -1;
    check_fails(s, "is not placed");
  }
  {
    Schedule s = good;
    s.kernels[0].id = "k5";
    check_fails(s, "kernel #0 is named k5");
  }
  {
    Schedule s = good;
    s.kernels[2].tactic = std::monostate{};
    check_fails(s, "kernel k2 has no tactic");
  }
  {
    Schedule s = good;  // two buffers live at once on the same bytes
    REQUIRE(s.arena_buffers.size() >= 2);
    for (LiveBuffer& b : s.arena_buffers) {
      b.offset = 0;
      b.first = 0;
      b.last = 2;
    }
    check_fails(s, "are live at once and overlap");
  }
  {
    Schedule s = good;  // a kernel writing a view of a buffer, not the buffer's value
    s.kernels[0].source.outputs[0] = &c.g.nodes_of("Reshape")[0]->output(0);
    check_fails(s, "kernel k0 writes 'v', a reshape view of 'r'");
  }
  {
    Schedule s = good;  // a reshape step made from a value of another buffer
    Buffer& b = s.buffers[static_cast<std::size_t>(r)];
    REQUIRE(b.views.size() == 1);
    b.views[0].from = c.g.inputs()[0];
    check_fails(s, "view 'v' of buffer b" + std::to_string(r) + " ('r') is made from 'x', which is not in that buffer");
  }
  {
    Schedule s = good;  // a wait on an event nobody records
    s.kernels[1].waits = {3};
    check_fails(s, "waits on event 3, which no earlier kernel records");
  }
}

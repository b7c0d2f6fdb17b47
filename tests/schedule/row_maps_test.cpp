// schedule stage fold_row_maps (schedule/row_maps.cpp): a windowed-attention block in miniature (a
// [1, 4, 4, 32] token grid padded to 6 x 6 for 3 x 3 windows, rolled by one row, partitioned, one
// FP16 MatMul, and the same moves back, cropped, added to the input) runs one kernel: the MatMul
// reads A's rows through a table (-1 for the padding), writes Y's rows through another (-1 for the
// cropped rows) and adds the residual; the tables are checked against the windowing computed by
// hand. Refusals keep the kernels and say why: a move across channels, a Pad of 1, an FP32
// product, an intermediate value read elsewhere; and with the stage disabled every kernel stays.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ops/fused.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "tests/ir/graph_input.h"
#include "tests/schedule/schedule_helpers.h"

using namespace modelc;
using modelc::test::input;

namespace {

constexpr int64_t kC = 32;

Value* node(Graph& g, const char* op, const std::string& name, const std::vector<Value*>& inputs) {
  Value* out = g.add_value(name + "_out");
  g.add_node(op, name, inputs, {out});
  return out;
}

Value* ints(Graph& g, const std::string& name, std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return g.add_constant(name, Tensor::from_i64(DType::int64, {n}, v));
}

Value* slice(Graph& g, const std::string& name, Value* x, int64_t axis, int64_t start, int64_t end) {
  return node(g, "Slice", name, {x, ints(g, name + "_s", {start}), ints(g, name + "_e", {end}), ints(g, name + "_a", {axis})});
}

Value* concat(Graph& g, const std::string& name, Value* a, Value* b, int64_t axis) {
  Value* c = node(g, "Concat", name, {a, b});
  g.nodes().back()->set_attr_int("axis", axis);
  return c;
}

Value* transpose(Graph& g, const std::string& name, Value* x, std::vector<int64_t> perm) {
  Value* t = node(g, "Transpose", name, {x});
  g.nodes().back()->set_attr_ints("perm", std::move(perm));
  return t;
}

Value* reshape(Graph& g, const std::string& name, Value* x, std::vector<int64_t> shape) {
  return node(g, "Reshape", name, {x, ints(g, name + "_shape", std::move(shape))});
}

/// What to spoil in the block (none: the foldable block).
enum class Spoil { none, channels, pad_one, fp32, pad_read_elsewhere };

/// x [1, 4, 4, C] -> pad to 6 x 6 -> roll H by -1 -> 3 x 3 windows [4, 9, C] -> MatMul -> back ->
/// crop -> + x.
void block(Graph& g, Spoil spoil = Spoil::none) {
  g.set_opset(17);
  const DType t = spoil == Spoil::fp32 ? DType::float32 : DType::float16;
  Value* x = input(g, "x", {1, 4, 4, kC}, t);
  Value* src = x;
  if (spoil == Spoil::channels) {  // the two halves of the channels swapped: not a row permutation
    src = concat(g, "swap", slice(g, "hi", x, 3, kC / 2, kC), slice(g, "lo", x, 3, 0, kC / 2), 3);
  }
  std::vector<Value*> pad_in{src, ints(g, "pads", {0, 0, 0, 0, 0, 2, 2, 0})};
  if (spoil == Spoil::pad_one) pad_in.push_back(g.add_constant("one", Tensor::from_f64(t, {}, {1.0})));
  Value* pad = node(g, "Pad", "pad", pad_in);
  if (spoil == Spoil::pad_read_elsewhere) g.add_output(pad);
  Value* rolled = concat(g, "roll", slice(g, "roll_a", pad, 1, 1, 6), slice(g, "roll_b", pad, 1, 0, 1), 1);
  Value* win = transpose(g, "partition", reshape(g, "split", rolled, {1, 2, 3, 2, 3, kC}), {0, 1, 3, 2, 4, 5});
  Value* a = reshape(g, "windows", win, {4, 9, kC});
  std::vector<double> w(static_cast<std::size_t>(kC * kC));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.01 * static_cast<double>(i % 17);
  Value* y = node(g, "MatMul", "proj", {a, g.add_constant("w", Tensor::from_f64(t, {kC, kC}, w), true)});
  Value* back = transpose(g, "reverse", reshape(g, "unwindows", y, {1, 2, 2, 3, 3, kC}), {0, 1, 3, 2, 4, 5});
  Value* grid = reshape(g, "merge", back, {1, 6, 6, kC});
  Value* unrolled = concat(g, "unroll", slice(g, "unroll_a", grid, 1, 5, 6), slice(g, "unroll_b", grid, 1, 0, 5), 1);
  Value* crop = slice(g, "crop_w", slice(g, "crop_h", unrolled, 1, 0, 4), 2, 0, 4);
  g.add_output(node(g, "Add", "residual", {x, crop}));
}

Schedule lower_block(Graph& g, bool fold = true) {
  ops::infer_graph(g);
  LowerOptions o;
  o.name = "t";
  o.archs = {"sm_80"};
  o.passes.verify_each = true;
  if (!fold) o.passes.disabled.insert("fold_row_maps");
  return lower(g, o);
}

std::vector<int64_t> table(const Schedule& s, const Kernel& k, int input) {
  REQUIRE(k.source.inputs.size() > static_cast<std::size_t>(input));
  const Value* v = k.source.inputs[static_cast<std::size_t>(input)];
  REQUIRE(v);
  REQUIRE(v->is_constant());
  CHECK(k.inputs[static_cast<std::size_t>(input)].space == Space::weights);
  (void)s;
  return v->constant().to_i64();
}

}  // namespace

TEST_CASE("fold_row_maps: a windowed block's Pad, roll, partition and their inverses become the product's row tables") {
  Graph g;
  block(g);
  const Schedule s = lower_block(g);
  REQUIRE(s.kernels.size() == 1);
  const Kernel& k = s.kernels[0];
  CHECK(k.op.name == "proj");
  CHECK(k.row_maps.gather_a);
  CHECK(k.row_maps.scatter_y);
  CHECK(k.row_maps.residual);
  CHECK(k.engine == Engine::tensor_core);
  CHECK(k.epilogue == "residual");
  CHECK(k.note.find("A's rows gathered, Y's rows scattered through row tables: Pad 'pad'") != std::string::npos);
  CHECK(k.note.find("Add 'residual' as the residual") != std::string::npos);
  // The tables, by hand: window (wh, ww), element (i, j) is the padded, rolled grid's (h', w') =
  // (3 wh + i, 3 ww + j), the padded grid's (h' + 1 mod 6, w'), a token where both are below 4.
  std::vector<int64_t> a_want(36), y_want(36);
  for (int wh = 0; wh < 2; ++wh) {
    for (int ww = 0; ww < 2; ++ww) {
      for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) {
          const int r = (wh * 2 + ww) * 9 + i * 3 + j;
          const int h = (3 * wh + i + 1) % 6, w = 3 * ww + j;
          a_want[static_cast<std::size_t>(r)] = h < 4 && w < 4 ? h * 4 + w : -1;
          y_want[static_cast<std::size_t>(r)] = a_want[static_cast<std::size_t>(r)];  // the inverse moves
        }
      }
    }
  }
  CHECK(table(s, k, kRowTableAInput) == a_want);
  CHECK(table(s, k, kRowTableYInput) == y_want);
  // A reads x's buffer (the model input), Y writes the Add's output (the model output), the residual is x.
  CHECK(k.inputs[0].space == Space::input);
  CHECK(k.inputs[0].shape == Shape{4, 9, kC});
  CHECK(k.inputs[ops::kFusedResidualInput].value == "x");
  CHECK(k.outputs[0].space == Space::output);
}

TEST_CASE("fold_row_maps: disabled, every move runs a kernel") {
  Graph g;
  block(g);
  const Schedule s = lower_block(g, false);
  CHECK(s.kernels.size() > 6);
  for (const Kernel& k : s.kernels) CHECK_FALSE(k.row_maps.active());
}

TEST_CASE("fold_row_maps: refusals keep the kernels and say why") {
  struct Case {
    Spoil spoil;
    const char* why;
  };
  for (const Case& c : {Case{Spoil::channels, "not a row permutation"}, Case{Spoil::pad_one, "not a row permutation"},
                        Case{Spoil::fp32, "row tables run on the tensor-core products"},
                        Case{Spoil::pad_read_elsewhere, "'pad_out' is a model output"}}) {
    CAPTURE(c.why);
    Graph g;
    block(g, c.spoil);
    const Schedule s = lower_block(g);
    const Kernel& k = test::kernel_of(s, "proj");
    CHECK_FALSE(k.row_maps.gather_a);
    CHECK(k.kept_row_map.find(std::string("A: ")) != std::string::npos);
    CHECK(k.kept_row_map.find(c.why) != std::string::npos);
    CHECK(k.note.find("no row table: A: ") != std::string::npos);
    bool pad_runs = false;
    for (const Kernel& kk : s.kernels) pad_runs = pad_runs || kk.op.name == "pad";
    CHECK(pad_runs);
  }
}

// schedule stage fold_gemm_batch: the batch dims of a MatMul that B broadcasts over, along which
// A's and Y's rows continue, run as rows of one product (schedule/linear.h lower_gemm).
#include <doctest/doctest.h>

#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/linear.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

// One MatMul a x b lowered to its single kernel, with or without the fold_gemm_batch stage.
Kernel matmul_kernel(Graph& g, Value* a, Value* b, bool fold) {
  Value* y = g.add_value("y");
  g.add_node("MatMul", "matmul", {a, b}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o;
  o.name = "t";
  o.passes.verify_each = true;
  if (!fold) o.passes.disabled.insert("fold_gemm_batch");
  const Schedule s = lower(g, o);
  REQUIRE(s.kernels.size() == 1);
  return s.kernels[0];
}

linear::GemmLowering lowered(Shape a, bool fold) {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", std::move(a));
  Value* w = g.add_constant("w", Tensor::from_f64(DType::float32, {4, 5}, std::vector<double>(20, 0.5)), true);
  const Kernel k = matmul_kernel(g, x, w, fold);
  CHECK(k.batch_as_rows == fold);
  return linear::lower_gemm(k);
}

}  // namespace

TEST_CASE("fold_gemm_batch: [6, 1, 4] x [4, 5] is one product of 6 rows") {
  const linear::GemmLowering g = lowered({6, 1, 4}, true);
  CHECK(g.batch_count() == 1);
  CHECK(g.M == 6);
  CHECK(g.a.row == 4);
  CHECK(g.y.row == 5);
  const linear::GemmLowering off = lowered({6, 1, 4}, false);
  CHECK(off.batch_count() == 6);
  CHECK(off.M == 1);
}

TEST_CASE("fold_gemm_batch: [2, 3, 3, 4] x [4, 5]: both batch dims continue the rows") {
  const linear::GemmLowering g = lowered({2, 3, 3, 4}, true);
  CHECK(g.batch_count() == 1);
  CHECK(g.M == 18);
}

TEST_CASE("fold_gemm_batch: a B with its own batch ([2, 3, 4] x [2, 4, 5]) stays two products") {
  Graph g;
  g.set_opset(17);
  Value* a = input(g, "a", {2, 3, 4});
  Value* b = input(g, "b", {2, 4, 5});
  const Kernel k = matmul_kernel(g, a, b, true);
  CHECK_FALSE(k.batch_as_rows);
  const linear::GemmLowering l = linear::lower_gemm(k);
  CHECK(l.batch_count() == 2);
  CHECK(l.M == 3);
}

TEST_CASE("fold_gemm_batch stage: the kernel's batch_as_rows, set where it leaves fewer products") {
  Graph g;
  g.set_opset(17);
  Value* x = input(g, "x", {2, 3, 3, 4});
  Value* w = g.add_constant("w", Tensor::from_f64(DType::float32, {4, 5}, std::vector<double>(20, 0.5)), true);
  Value *y = g.add_value("y"), *z = g.add_value("z");
  g.add_node("MatMul", "matmul", {x, w}, {y});
  Value* b = input(g, "b", {2, 4, 5});  // a B with its own batch: nothing to fold
  g.add_node("MatMul", "batched", {input(g, "a", {2, 3, 4}), b}, {z});
  g.add_output(y);
  g.add_output(z);
  ops::infer_graph(g);
  LowerOptions o;
  o.name = "t";
  o.passes.verify_each = true;
  Schedule s = lower_before(g, o, "fold_gemm_batch");
  REQUIRE(s.kernels.size() == 2);
  CHECK(linear::lower_gemm(s.kernels[0]).batch_count() == 6);
  CHECK(run_schedule_stage(s, o, "fold_gemm_batch"));
  CHECK(s.kernels[0].batch_as_rows);
  CHECK(linear::lower_gemm(s.kernels[0]).batch_count() == 1);
  CHECK_FALSE(s.kernels[1].batch_as_rows);
  CHECK(linear::lower_gemm(s.kernels[1]).batch_count() == 2);
}

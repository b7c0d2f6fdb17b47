// templates/reduce.cuh (Reduce*, ArgMax/ArgMin) on the host emulation against the reference
// interpreter, and the reduce / argminmax families' emitted instantiations: several axes sets,
// keepdims, odd sizes, strided views, integer types (exact, wrapping, saturating), empty
// reductions, noop_with_empty_axes, NaN and infinities, ties.
#include <limits>

#include "reduction_test_util.h"

using namespace reduction_test;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Tensor axes(const std::vector<int64_t>& a) {
  return Tensor::from_i64(DType::int64, {static_cast<int64_t>(a.size())}, a);
}

// Runs the case's node through plan + emit (checking the instantiation's spelling) and returns
// the reference outputs.
std::vector<Tensor> prepare(OneNode& t, const std::string& family, const std::string& type) {
  std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, family);
  check_emitted(plan_and_emit(k), type);
  return want;
}

}  // namespace

TEST_CASE("reduce: ReduceSum over a middle axis (opset 13, axes input, keepdims): interleaved groups") {
  const Tensor x = random_f32({3, 5, 4}, 1);
  OneNode t("ReduceSum", 13, {x}, 1, {{1, axes({1})}});
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Sum<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3, 4>, mc::reduction::Strides<20, 1>>, mc::reduction::Strided<mc::reduction::Dims<5>, mc::reduction::Strides<4>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<12>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 4, false>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
}

TEST_CASE("reduce: ReduceMean over axes {0, 2} (opset 18, keepdims 0): a two-dim column map") {
  const Tensor x = random_f32({4, 3, 6}, 2);
  OneNode t("ReduceMean", 18, {x}, 1, {{1, axes({0, 2})}});
  t.n->set_attr_int("keepdims", 0);
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Mean<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<6>>, mc::reduction::Strided<mc::reduction::Dims<4, 6>, mc::reduction::Strides<18, 1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 8, true>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
}

TEST_CASE("reduce: ReduceMax over the last axis of odd size (opset 11 axes attribute), NaN propagates") {
  Tensor x = random_f32({2, 3, 37}, 3);
  out<float>(x)[1 * 37 + 20] = kNaN;   // row 1
  out<float>(x)[4 * 37 + 36] = kInf;   // row 4
  out<float>(x)[5 * 37 + 0] = kNaN;    // row 5, first element
  OneNode t("ReduceMax", 11, {x});
  t.n->set_attr_ints("axes", {-1});
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Max<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<37>>, mc::reduction::Strided<mc::reduction::Dims<37>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<128, 16, true>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
  CHECK(std::isnan(y.to_f64()[1]));
  CHECK(std::isnan(y.to_f64()[5]));
  CHECK(std::isinf(y.to_f64()[4]));
}

TEST_CASE("reduce: ReduceMin over every axis (no axes, keepdims 0) gives a scalar") {
  const Tensor x = random_f32({5, 7}, 4);
  OneNode t("ReduceMin", 13, {x});
  t.n->set_attr_int("keepdims", 0);
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Min<float>, mc::reduction::Operand<float, mc::reduction::NoDims, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::NoDims>, mc::reduction::Tiling<32, 16, true>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  CHECK(want[0].shape() == Shape{});
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
}

TEST_CASE("reduce: ReduceLogSumExp is shifted by the row max: large values, -inf rows, +inf") {
  Tensor x = random_f32({4, 300}, 5, -100.0f, 100.0f);
  for (int c = 0; c < 300; ++c) out<float>(x)[2 * 300 + c] = -kInf;
  out<float>(x)[3 * 300 + 17] = kInf;
  out<float>(x)[0 * 300 + 5] = 1e4f;  // exp would overflow without the shift
  OneNode t("ReduceLogSumExp", 18, {x}, 1, {{1, axes({1})}});
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::LogSumExp<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<300>>, mc::reduction::Strided<mc::reduction::Dims<300>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<128, 128, true>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
  CHECK(y.to_f64()[2] == -INFINITY);
  CHECK(y.to_f64()[3] == INFINITY);
}

TEST_CASE("reduce: ReduceSum of long rows: 512-thread groups (shuffles, then shared memory across warps)") {
  const Tensor x = random_f32({2, 3000}, 6);
  OneNode t("ReduceSum", 11, {x});
  t.n->set_attr_ints("axes", {1});
  t.n->set_attr_int("keepdims", 0);
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Sum<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3000>>, mc::reduction::Strided<mc::reduction::Dims<3000>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<512, 512, true>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
}

TEST_CASE("reduce: Prod, L1, L2, LogSum, SumSquare over the last axis") {
  const Tensor x = random_f32({3, 4, 5}, 7, 0.5f, 2.0f);  // positive for LogSum
  auto check = [&](const std::string& op, auto kernel_tag, const std::string& type) {
    using KK = typename decltype(kernel_tag)::type;
    OneNode t(op, 18, {x}, 1, {{1, axes({2})}});
    const std::vector<Tensor> want = prepare(t, "reduce", type);
    Tensor y(DType::float32, want[0].shape());
    run_kernel<KK>(in<float>(x), out<float>(y));
    INFO(op);
    check_close(y, want[0]);
  };
  struct Tag {};
#define REDUCE_OP_CASE(ONNX, OP)                                                                                        \
  {                                                                                                                     \
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::OP<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<12>, mc::reduction::Strides<5>>, mc::reduction::Strided<mc::reduction::Dims<5>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<12>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 2, true>>); \
    struct KTag { using type = K; };                                                                                    \
    check(ONNX, KTag{}, kType);                                                                                         \
  }
  REDUCE_OP_CASE("ReduceProd", Prod)
  REDUCE_OP_CASE("ReduceL1", L1)
  REDUCE_OP_CASE("ReduceL2", L2)
  REDUCE_OP_CASE("ReduceLogSum", LogSum)
  REDUCE_OP_CASE("ReduceSumSquare", SumSquare)
#undef REDUCE_OP_CASE
}

TEST_CASE("reduce: integers are exact and wrap like the reference (int32 Sum, int64 Prod, int8 SumSquare)") {
  {
    const Tensor x = ints(DType::int32, {2, 3}, {2147483647, 1, 5, -2147483647 - 1, -1, 7});
    OneNode t("ReduceSum", 13, {x}, 1, {{1, axes({1})}});
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Sum<int32_t>, mc::reduction::Operand<int32_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int32_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::int32, want[0].shape());
    run_kernel<K>(in<int32_t>(x), out<int32_t>(y));
    check_close(y, want[0]);
  }
  {
    const Tensor x = ints(DType::int64, {2, 3}, {int64_t{1} << 40, int64_t{1} << 30, 3, -7, 11, 13});
    OneNode t("ReduceProd", 18, {x}, 1, {{1, axes({1})}});
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Prod<int64_t>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::int64, want[0].shape());
    run_kernel<K>(in<int64_t>(x), out<int64_t>(y));
    check_close(y, want[0]);
  }
  {
    const Tensor x = ints(DType::int8, {2, 3}, {100, 100, 100, -3, 4, -5});
    OneNode t("ReduceSumSquare", 18, {x}, 1, {{1, axes({1})}});
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::SumSquare<int8_t>, mc::reduction::Operand<int8_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int8_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::int8, want[0].shape());
    run_kernel<K>(in<int8_t>(x), out<int8_t>(y));
    check_close(y, want[0]);
  }
}

TEST_CASE("reduce: float-valued reductions of integers saturate (int8 L2, uint8 Mean), bool Max (opset 20)") {
  {
    const Tensor x = ints(DType::int8, {2, 3}, {100, 100, 100, -3, 4, -5});
    OneNode t("ReduceL2", 18, {x}, 1, {{1, axes({1})}});
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::L2<int8_t>, mc::reduction::Operand<int8_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int8_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::int8, want[0].shape());
    run_kernel<K>(in<int8_t>(x), out<int8_t>(y));
    check_close(y, want[0]);
    CHECK(y.to_i64()[0] == 127);
  }
  {
    const Tensor x = ints(DType::uint8, {3, 2}, {255, 254, 1, 2, 7, 0});
    OneNode t("ReduceMean", 18, {x}, 1, {{1, axes({0})}});
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Mean<uint8_t>, mc::reduction::Operand<uint8_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<2>>>, mc::reduction::Operand<uint8_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 2, false>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::uint8, want[0].shape());
    run_kernel<K>(in<uint8_t>(x), out<uint8_t>(y));
    check_close(y, want[0]);
  }
  {
    const Tensor x = ints(DType::boolean, {2, 3}, {0, 0, 0, 0, 1, 0});
    OneNode t("ReduceMax", 20, {x}, 1, {{1, axes({1})}});
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Max<bool>, mc::reduction::Operand<bool, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<bool, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::boolean, want[0].shape());
    run_kernel<K>(in<bool>(x), out<bool>(y));
    check_close(y, want[0]);
  }
}

TEST_CASE("reduce: noop_with_empty_axes reduces nothing: the op on each element") {
  const Tensor x = random_f32({2, 3}, 8);
  OneNode t("ReduceL2", 18, {x});
  t.n->set_attr_int("noop_with_empty_axes", 1);
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::L2<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
  const std::vector<Tensor> want = prepare(t, "reduce", kType);
  CHECK(want[0].shape() == Shape{2, 3});
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want[0]);
}

TEST_CASE("reduce: empty reductions give the reference's identities (0, NaN mean, -inf max, 1)") {
  const Tensor x = Tensor::from_f32({2, 0, 3}, {});
  auto run = [&](const std::string& op, auto tag, const std::string& type) {
    using KK = typename decltype(tag)::type;
    OneNode t(op, 13, {x});
    t.n->set_attr_ints("axes", {1});
    t.n->set_attr_int("keepdims", 0);
    const std::vector<Tensor> want = prepare(t, "reduce", type);
    Tensor y(DType::float32, want[0].shape());
    run_kernel<KK>(in<float>(x), out<float>(y));
    INFO(op);
    check_close(y, want[0]);
  };
  // ReduceSum at opset 13 takes axes as an input; the others still take the attribute.
  {
    OneNode t("ReduceSum", 13, {x}, 1, {{1, axes({1})}});
    t.n->set_attr_int("keepdims", 0);
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Sum<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2, 3>, mc::reduction::Strides<0, 1>>, mc::reduction::Strided<mc::reduction::Dims<0>, mc::reduction::Strides<0>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, "reduce", kType);
    Tensor y(DType::float32, want[0].shape());
    run_kernel<K>(in<float>(x), out<float>(y));
    check_close(y, want[0]);
  }
#define EMPTY_CASE(ONNX, OP)                                                                                           \
  {                                                                                                                    \
    REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::OP<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2, 3>, mc::reduction::Strides<0, 1>>, mc::reduction::Strided<mc::reduction::Dims<0>, mc::reduction::Strides<0>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>); \
    struct KTag { using type = K; };                                                                                   \
    run(ONNX, KTag{}, kType);                                                                                          \
  }
  EMPTY_CASE("ReduceMean", Mean)
  EMPTY_CASE("ReduceMax", Max)
  EMPTY_CASE("ReduceProd", Prod)
  EMPTY_CASE("ReduceLogSumExp", LogSumExp)
#undef EMPTY_CASE
}

TEST_CASE("reduce: a strided (transposed) input view") {
  // X is [4, 6] but stored as its transpose: element (i, j) at j * 4 + i.
  const Tensor x = random_f32({4, 6}, 9);
  std::vector<float> stored(24);
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 6; ++j) stored[j * 4 + i] = x.data<float>()[i * 6 + j];
  OneNode t("ReduceSum", 11, {x});
  t.n->set_attr_ints("axes", {1});
  const std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "reduce");
  k.inputs[0].strides = {1, 4};
  REDUCTION_TYPE(mc::reduction::Reduce<mc::reduction::Sum<float>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<4>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 4, false>>);
  check_emitted(plan_and_emit(k), kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(stored.data(), out<float>(y));
  check_close(y, want[0]);
}

TEST_CASE("reduce: an axes input computed at run time is an Error naming the node") {
  const Tensor x = random_f32({2, 3}, 10);
  OneNode t("ReduceSum", 13, {x, axes({1})});
  t.n->output(0).set_type(DType::float32, {2, 1});  // what shape inference could not know
  Kernel k = kernel_of(*t.n, "reduce");
  CHECK_THROWS_AS(plan_and_emit(k), modelc::Error);
}

// ---- ArgMax / ArgMin -----------------------------------------------------------------------------

TEST_CASE("argminmax: ArgMax over a middle axis with ties, first and last index") {
  Tensor x = random_f32({3, 7, 2}, 11, 0.0f, 3.0f);
  for (int i = 0; i < 42; ++i) out<float>(x)[i] = std::floor(x.data<float>()[i]);  // values 0, 1, 2: many ties
  for (int last = 0; last < 2; ++last) {
    OneNode t("ArgMax", 13, {x});
    t.n->set_attr_int("axis", 1);
    t.n->set_attr_int("select_last_index", last);
    std::vector<Tensor> want = t.reference();
    Kernel k = kernel_of(*t.n, "argminmax");
    const KernelLaunches e = plan_and_emit(k);
    Tensor y(DType::int64, want[0].shape());
    if (last) {
      REDUCTION_TYPE(mc::reduction::ArgMinMax<true, true, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3, 2>, mc::reduction::Strides<14, 1>>, mc::reduction::Strided<mc::reduction::Dims<7>, mc::reduction::Strides<2>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 4, false>>);
      check_emitted(e, kType);
      run_kernel<K>(in<float>(x), out<int64_t>(y));
    } else {
      REDUCTION_TYPE(mc::reduction::ArgMinMax<true, false, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3, 2>, mc::reduction::Strides<14, 1>>, mc::reduction::Strided<mc::reduction::Dims<7>, mc::reduction::Strides<2>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 4, false>>);
      check_emitted(e, kType);
      run_kernel<K>(in<float>(x), out<int64_t>(y));
    }
    INFO("select_last_index " << last);
    check_close(y, want[0]);
  }
}

TEST_CASE("argminmax: ArgMin over the last axis (keepdims 0) with NaNs like the reference") {
  Tensor x = random_f32({5, 40}, 12);
  out<float>(x)[0] = kNaN;             // row 0: NaN first -> index 0
  out<float>(x)[40 + 13] = kNaN;       // row 1: a NaN in the middle is skipped
  out<float>(x)[2 * 40 + 39] = -kInf;  // row 2: -inf is the minimum
  for (int c = 0; c < 40; ++c) out<float>(x)[3 * 40 + c] = 0.5f;  // row 3: all equal -> 0
  OneNode t("ArgMin", 11, {x});
  t.n->set_attr_int("axis", -1);
  t.n->set_attr_int("keepdims", 0);
  REDUCTION_TYPE(mc::reduction::ArgMinMax<false, false, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<5>, mc::reduction::Strides<40>>, mc::reduction::Strided<mc::reduction::Dims<40>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<5>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<128, 16, true>>);
  const std::vector<Tensor> want = prepare(t, "argminmax", kType);
  Tensor y(DType::int64, want[0].shape());
  run_kernel<K>(in<float>(x), out<int64_t>(y));
  check_close(y, want[0]);
  CHECK(y.to_i64()[0] == 0);
  CHECK(y.to_i64()[2] == 39);
  CHECK(y.to_i64()[3] == 0);
}

TEST_CASE("argminmax: ArgMax of int64 over axis 0, last index on ties") {
  const Tensor x = ints(DType::int64, {6, 3}, {5, 1, -3, 5, 2, -3, 4, 2, -4, 5, 0, -3, 1, 2, -9, 0, 1, -3});
  OneNode t("ArgMax", 12, {x});
  t.n->set_attr_int("axis", 0);
  t.n->set_attr_int("select_last_index", 1);
  REDUCTION_TYPE(mc::reduction::ArgMinMax<true, true, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<3>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 4, false>>);
  const std::vector<Tensor> want = prepare(t, "argminmax", kType);
  Tensor y(DType::int64, want[0].shape());
  run_kernel<K>(in<int64_t>(x), out<int64_t>(y));
  check_close(y, want[0]);
  CHECK(y.to_i64() == std::vector<int64_t>{3, 4, 5});
}

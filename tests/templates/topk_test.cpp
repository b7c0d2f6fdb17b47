// templates/topk.cuh on the host emulation against the reference interpreter, and the topk
// family's emitted instantiations: largest and smallest, ties to the lower index, NaN after every
// number, a strided axis, k from the attribute (opset 1) and from the K input, int64 data, and a
// row too long to sort in shared memory (the selection rounds).
#include <cmath>
#include <limits>

#include "reduction_test_util.h"

using namespace reduction_test;

namespace {

Tensor k_input(int64_t k) { return Tensor::from_i64(DType::int64, {1}, {k}); }

std::vector<Tensor> prepare(OneNode& t, const std::string& type) {
  std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "topk");
  check_emitted(plan_and_emit(k), type);
  return want;
}

// Values bit for bit (NaNs by position), indices exactly.
void check_topk(const Tensor& values, const Tensor& indices, const std::vector<Tensor>& want) {
  REQUIRE(values.shape() == want[0].shape());
  const std::vector<double> v = values.to_f64(), w = want[0].to_f64();
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO("value " << i);
    if (std::isnan(w[i])) CHECK(std::isnan(v[i]));
    else CHECK(v[i] == w[i]);
  }
  check_close(indices, want[1]);
}

Tensor floored(Tensor t) {
  for (int64_t i = 0; i < t.numel(); ++i) out<float>(t)[i] = std::floor(t.data<float>()[i]);
  return t;
}

}  // namespace

TEST_CASE("topk: largest 4 of each row, ties to the lower index (opset 11, K input)") {
  const Tensor x = floored(random_f32({3, 10}, 51, 0.0f, 4.0f));
  OneNode t("TopK", 11, {x}, 2, {{1, k_input(4)}});
  REDUCTION_TYPE(mc::reduction::TopK<true, 4, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<10>>, mc::reduction::Strided<mc::reduction::Dims<10>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<4>>, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<4>>, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 32, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  Tensor values(DType::float32, want[0].shape()), indices(DType::int64, want[1].shape());
  run_kernel<K>(in<float>(x), out<float>(values), out<int64_t>(indices));
  check_topk(values, indices, want);
}

TEST_CASE("topk: smallest 3 along a strided axis 0, NaN after every number") {
  Tensor x = floored(random_f32({9, 4}, 52, -3.0f, 3.0f));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  out<float>(x)[0 * 4 + 1] = nan;  // column 1: two NaNs and few numbers
  out<float>(x)[1 * 4 + 1] = nan;
  for (int r = 2; r < 9; ++r) out<float>(x)[r * 4 + 2] = nan;  // column 2: only two numbers
  OneNode t("TopK", 11, {x}, 2, {{1, k_input(3)}});
  t.n->set_attr_int("axis", 0);
  t.n->set_attr_int("largest", 0);
  REDUCTION_TYPE(mc::reduction::TopK<false, 3, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<9>, mc::reduction::Strides<4>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<4>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<4>>>, mc::reduction::Tiling<32, 32, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  Tensor values(DType::float32, want[0].shape()), indices(DType::int64, want[1].shape());
  run_kernel<K>(in<float>(x), out<float>(values), out<int64_t>(indices));
  check_topk(values, indices, want);
  CHECK(std::isnan(values.to_f64()[2 * 4 + 2]));  // the third of column 2 is a NaN
}

TEST_CASE("topk: k from the attribute (opset 1); a 5000-long row takes the selection rounds") {
  Tensor x = floored(random_f32({2, 5000}, 53, 0.0f, 1000.0f));
  out<float>(x)[4321] = std::numeric_limits<float>::quiet_NaN();
  OneNode t("TopK", 1, {x}, 2);
  t.n->set_attr_int("k", 3);
  REDUCTION_TYPE(mc::reduction::TopK<true, 3, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<5000>>, mc::reduction::Strided<mc::reduction::Dims<5000>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<3>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<256, 256, true>>);
  static_assert(!K::kSort, "the case must take the selection path");
  const std::vector<Tensor> want = prepare(t, kType);
  Tensor values(DType::float32, want[0].shape()), indices(DType::int64, want[1].shape());
  run_kernel<K>(in<float>(x), out<float>(values), out<int64_t>(indices));
  check_topk(values, indices, want);
}

TEST_CASE("topk: int64, smallest, k = the whole axis: a full stable sort") {
  const Tensor x = ints(DType::int64, {2, 6}, {5, -1, 5, 3, -1, 9, 0, 0, 0, -7, 8, 0});
  OneNode t("TopK", 11, {x}, 2, {{1, k_input(6)}});
  t.n->set_attr_int("largest", 0);
  REDUCTION_TYPE(mc::reduction::TopK<false, 6, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<6>>, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<6>>, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<6>>, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 32, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  Tensor values(DType::int64, want[0].shape()), indices(DType::int64, want[1].shape());
  run_kernel<K>(in<int64_t>(x), out<int64_t>(values), out<int64_t>(indices));
  check_close(values, want[0]);
  check_close(indices, want[1]);
  CHECK(indices.to_i64() == std::vector<int64_t>{1, 4, 3, 0, 2, 5, 3, 0, 1, 2, 5, 4});
}

TEST_CASE("topk: only the Indices output") {
  const Tensor x = random_f32({2, 8}, 54);
  OneNode t("TopK", 11, {x}, 2, {{1, k_input(2)}}, {false, true});
  REDUCTION_TYPE(mc::reduction::TopK<true, 2, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<8>>, mc::reduction::Strided<mc::reduction::Dims<8>, mc::reduction::Strides<1>>>, mc::reduction::Absent, mc::reduction::Operand<int64_t, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<2>>, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 32, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  Tensor indices(DType::int64, want[1].shape());
  run_kernel<K>(in<float>(x), static_cast<float*>(nullptr), out<int64_t>(indices));
  check_close(indices, want[1]);
}

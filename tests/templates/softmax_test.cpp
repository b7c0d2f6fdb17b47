// templates/softmax.cuh on the host emulation against the reference interpreter, and the softmax
// family's emitted instantiations: opset-11 (coerced to 2-D) and opset-13 (one axis, strided)
// Softmax, LogSoftmax, large values and infinities, rows too long to keep in registers.
#include <limits>

#include "reduction_test_util.h"

using namespace reduction_test;

namespace {

std::vector<Tensor> prepare(OneNode& t, const std::string& type) {
  std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "softmax");
  check_emitted(plan_and_emit(k), type);
  return want;
}

template <class K>
void run_and_check(const Tensor& x, const Tensor& want, double rtol = 1e-4, double atol = 1e-5) {
  Tensor y(DType::float32, want.shape());
  run_kernel<K>(in<float>(x), out<float>(y));
  check_close(y, want, rtol, atol);
}

}  // namespace

TEST_CASE("softmax: opset 11 coerces to 2-D at axis 1: the columns are every dim from the axis on") {
  const Tensor x = random_f32({2, 3, 4}, 21, -3.0f, 3.0f);
  OneNode t("Softmax", 11, {x});
  REDUCTION_TYPE(mc::reduction::Softmax<false, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<12>>, mc::reduction::Strided<mc::reduction::Dims<12>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<12>>, mc::reduction::Strided<mc::reduction::Dims<12>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 4, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  run_and_check<K>(x, want[0]);
}

TEST_CASE("softmax: opset 13 runs along one axis: a middle axis is a strided column (interleaved rows)") {
  const Tensor x = random_f32({2, 3, 4}, 22, -3.0f, 3.0f);
  OneNode t("Softmax", 13, {x});
  t.n->set_attr_int("axis", 1);
  REDUCTION_TYPE(mc::reduction::Softmax<false, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2, 4>, mc::reduction::Strides<12, 1>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<4>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2, 4>, mc::reduction::Strides<12, 1>>, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<4>>>, mc::reduction::Tiling<256, 2, false>>);
  const std::vector<Tensor> want = prepare(t, kType);
  run_and_check<K>(x, want[0]);
}

TEST_CASE("softmax: LogSoftmax (opset 13, last axis) with |x| ~ 1e4 and -inf entries stays finite") {
  Tensor x = random_f32({3, 50}, 23, -1e4f, 1e4f);
  out<float>(x)[7] = -std::numeric_limits<float>::infinity();
  OneNode t("LogSoftmax", 13, {x});
  REDUCTION_TYPE(mc::reduction::Softmax<true, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<50>>, mc::reduction::Strided<mc::reduction::Dims<50>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<50>>, mc::reduction::Strided<mc::reduction::Dims<50>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<64, 16, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  run_and_check<K>(x, want[0]);
}

TEST_CASE("softmax: LogSoftmax opset 11, default axis 1 on a 3-D input") {
  const Tensor x = random_f32({2, 5, 7}, 24, -5.0f, 5.0f);
  OneNode t("LogSoftmax", 11, {x});
  REDUCTION_TYPE(mc::reduction::Softmax<true, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<35>>, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2>, mc::reduction::Strides<35>>, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 16, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  run_and_check<K>(x, want[0]);
}

TEST_CASE("softmax: a row too long for registers (9000 columns, 512 threads) is re-read") {
  const Tensor x = random_f32({1, 9000}, 25, -10.0f, 10.0f);
  OneNode t("Softmax", 13, {x});
  REDUCTION_TYPE(mc::reduction::Softmax<false, mc::reduction::Operand<float, mc::reduction::NoDims, mc::reduction::Strided<mc::reduction::Dims<9000>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::NoDims, mc::reduction::Strided<mc::reduction::Dims<9000>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<512, 512, true>>);
  static_assert(!K::kCached, "the case must take the re-reading path");
  const std::vector<Tensor> want = prepare(t, kType);
  run_and_check<K>(x, want[0]);
}

TEST_CASE("softmax: a 1-D input and a single-column axis") {
  {
    const Tensor x = random_f32({7}, 26);
    OneNode t("Softmax", 13, {x});
    REDUCTION_TYPE(mc::reduction::Softmax<false, mc::reduction::Operand<float, mc::reduction::NoDims, mc::reduction::Strided<mc::reduction::Dims<7>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::NoDims, mc::reduction::Strided<mc::reduction::Dims<7>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 2, true>>);
    const std::vector<Tensor> want = prepare(t, kType);
    run_and_check<K>(x, want[0]);
  }
  {
    const Tensor x = random_f32({3, 1}, 27);
    OneNode t("LogSoftmax", 13, {x});
    REDUCTION_TYPE(mc::reduction::Softmax<true, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<32, 1, true>>);
    const std::vector<Tensor> want = prepare(t, kType);
    run_and_check<K>(x, want[0]);
  }
}

TEST_CASE("softmax: FP16 storage, FP32 compute") {
  const Tensor x = random_f32({4, 33}, 28, -8.0f, 8.0f).cast(DType::float16);
  OneNode t("Softmax", 13, {x});
  REDUCTION_TYPE(mc::reduction::Softmax<false, mc::reduction::Operand<__half, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<33>>, mc::reduction::Strided<mc::reduction::Dims<33>, mc::reduction::Strides<1>>>, mc::reduction::Operand<__half, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<33>>, mc::reduction::Strided<mc::reduction::Dims<33>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<64, 16, true>>);
  const std::vector<Tensor> want = prepare(t, kType);
  Tensor y(DType::float16, want[0].shape());
  run_kernel<K>(in<__half>(x), out<__half>(y));
  check_close(y, want[0], 2e-3, 1e-4);
}

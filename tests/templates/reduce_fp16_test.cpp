// templates/reduce.cuh and softmax.cuh with FP16 storage and a result of another float type (the
// boundary casts --fp16 folds into them): FP32 accumulation, one rounding, to the output's type.
#include <cmath>

#include "tests/templates/reduction_test_util.h"

using namespace reduction_test;
namespace r = mc::reduction;

TEST_CASE("reduce fp16: a sum of FP16 data beyond FP16's range, written as FP32, stays finite and exact") {
  // 4 rows of 2048 values of 64: every row sums to 131072 (> 65504), exact in FP32 accumulation.
  const Tensor x = Tensor::from_f64(DType::float16, {4, 2048}, std::vector<double>(4 * 2048, 64.0));
  using X = r::Operand<__half, r::Strided<r::Dims<4>, r::Strides<2048>>, r::Strided<r::Dims<2048>, r::Strides<1>>>;
  using Y32 = r::Operand<float, r::Strided<r::Dims<4>, r::Strides<1>>>;
  using Y16 = r::Operand<__half, r::Strided<r::Dims<4>, r::Strides<1>>>;
  Tensor y32(DType::float32, {4});
  run_kernel<r::Reduce<r::Sum<__half>, X, Y32, r::Tiling<256, 256, true>>>(in<__half>(x), out<float>(y32));
  for (double v : y32.to_f64()) CHECK(v == 131072.0);
  // Stored as FP16 it overflows: what the folded cast avoids.
  Tensor y16(DType::float16, {4});
  run_kernel<r::Reduce<r::Sum<__half>, X, Y16, r::Tiling<256, 256, true>>>(in<__half>(x), out<__half>(y16));
  for (double v : y16.to_f64()) CHECK(std::isinf(v));
  // Mean: FP32 data, an FP16 result (rounded once).
  const Tensor f = random_f32({4, 2048}, 7, -3.0f, 3.0f);
  using XF = r::Operand<float, r::Strided<r::Dims<4>, r::Strides<2048>>, r::Strided<r::Dims<2048>, r::Strides<1>>>;
  Tensor m16(DType::float16, {4});
  run_kernel<r::Reduce<r::Mean<float>, XF, Y16, r::Tiling<256, 256, true>>>(in<float>(f), out<__half>(m16));
  const std::vector<double> fv = f.to_f64();
  for (int row = 0; row < 4; ++row) {
    double mean = 0;
    for (int c = 0; c < 2048; ++c) mean += fv[static_cast<std::size_t>(row * 2048 + c)];
    mean /= 2048;
    CHECK(m16.to_f64()[static_cast<std::size_t>(row)] == doctest::Approx(mean).epsilon(1e-3).scale(1e-3));
  }
}

TEST_CASE("softmax fp16: FP32 logits of +-1e4 in, FP16 probabilities out; FP16 logits in, FP32 out") {
  std::vector<double> v(2 * 64);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = (i % 3 == 0 ? 1e4 : -1e4) + static_cast<double>(i % 7);
  const Tensor x32 = Tensor::from_f64(DType::float32, {2, 64}, v);
  const Tensor x16 = x32.cast(DType::float16);
  using X32 = r::Operand<float, r::Strided<r::Dims<2>, r::Strides<64>>, r::Strided<r::Dims<64>, r::Strides<1>>>;
  using X16 = r::Operand<__half, r::Strided<r::Dims<2>, r::Strides<64>>, r::Strided<r::Dims<64>, r::Strides<1>>>;
  Tensor p16(DType::float16, {2, 64});
  run_kernel<r::Softmax<false, X32, X16, r::Tiling<32, 32, true>>>(in<float>(x32), out<__half>(p16));
  Tensor p32(DType::float32, {2, 64});
  run_kernel<r::Softmax<false, X16, X32, r::Tiling<32, 32, true>>>(in<__half>(x16), out<float>(p32));
  for (const Tensor* p : {&p16, &p32}) {
    const std::vector<double> got = p->to_f64();
    for (int row = 0; row < 2; ++row) {
      double sum = 0;
      for (int c = 0; c < 64; ++c) {
        const double g = got[static_cast<std::size_t>(row * 64 + c)];
        CHECK(std::isfinite(g));
        sum += g;
      }
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-2));
    }
  }
}

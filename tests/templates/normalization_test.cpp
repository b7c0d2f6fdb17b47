// templates/normalization.cuh (LayerNormalization, InstanceNormalization) on the host emulation
// against the reference interpreter, and the layernorm / instancenorm families' emitted
// instantiations: Mean and InvStdDev outputs, no B, axis over several dims, large rows with a large
// common offset (hidden 1024, |x| ~ 1e4).
#include "reduction_test_util.h"

using namespace reduction_test;

namespace {

std::vector<Tensor> prepare(OneNode& t, const std::string& family, const std::string& type) {
  std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, family);
  check_emitted(plan_and_emit(k), type);
  return want;
}

}  // namespace

TEST_CASE("layernorm: last axis with Scale, B, Mean and InvStdDev outputs") {
  const Tensor x = random_f32({4, 6, 32}, 31, -2.0f, 3.0f);
  const Tensor scale = random_f32({32}, 32), bias = random_f32({32}, 33);
  OneNode t("LayerNormalization", 17, {x, scale, bias}, 3);
  REDUCTION_TYPE(mc::reduction::Normalize<mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<24>, mc::reduction::Strides<32>>, mc::reduction::Strided<mc::reduction::Dims<32>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<24>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<32>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<24>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<32>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<24>, mc::reduction::Strides<32>>, mc::reduction::Strided<mc::reduction::Dims<32>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<24>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<24>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<128, 8, true>>);
  const std::vector<Tensor> want = prepare(t, "layernorm", kType);
  Tensor y(DType::float32, want[0].shape()), mean(DType::float32, want[1].shape()), inv(DType::float32, want[2].shape());
  run_kernel<K>(in<float>(x), in<float>(scale), in<float>(bias), out<float>(y), out<float>(mean), out<float>(inv), 1e-5f);
  check_close(y, want[0]);
  check_close(mean, want[1]);
  check_close(inv, want[2]);
}

TEST_CASE("layernorm: axis 1 over two dims, no B, Y only; epsilon from the attribute") {
  const Tensor x = random_f32({3, 4, 5}, 34);
  const Tensor scale = random_f32({4, 5}, 35);
  OneNode t("LayerNormalization", 17, {x, scale}, 1);
  t.n->set_attr_int("axis", 1);
  t.n->set_attr_float("epsilon", 0.25);
  REDUCTION_TYPE(mc::reduction::Normalize<mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<20>>, mc::reduction::Strided<mc::reduction::Dims<20>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<20>, mc::reduction::Strides<1>>>, mc::reduction::Absent, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<20>>, mc::reduction::Strided<mc::reduction::Dims<20>, mc::reduction::Strides<1>>>, mc::reduction::Absent, mc::reduction::Absent, mc::reduction::Tiling<32, 8, true>>);
  std::vector<Tensor> want = t.reference();
  Kernel k = kernel_of(*t.n, "layernorm");
  const KernelLaunches e = plan_and_emit(k);
  check_emitted(e, kType);
  CHECK(e.launches[0].params.back().field == "epsilon");
  CHECK(e.launches[0].params.back().value == "0.25f");
  for (const LaunchParam& p : e.launches[0].params) CHECK(p.field != "bias");  // B absent: left at its default
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), in<float>(scale), static_cast<const float*>(nullptr), out<float>(y),
                static_cast<float*>(nullptr), static_cast<float*>(nullptr), 0.25f);
  check_close(y, want[0]);
}

TEST_CASE("layernorm: hidden 1024 with |x| ~ 1e4 (a large common offset, and large spread)") {
  for (int variant = 0; variant < 2; ++variant) {
    // variant 0: 1e4 + uniform(-1, 1); variant 1: uniform(-1e4, 1e4)
    const Tensor x = variant == 0 ? random_f32({4, 1024}, 36, 1e4f - 1.0f, 1e4f + 1.0f)
                                  : random_f32({4, 1024}, 37, -1e4f, 1e4f);
    const Tensor scale = random_f32({1024}, 38), bias = random_f32({1024}, 39);
    OneNode t("LayerNormalization", 17, {x, scale, bias}, 1);
    REDUCTION_TYPE(mc::reduction::Normalize<mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1024>>, mc::reduction::Strided<mc::reduction::Dims<1024>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<1024>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<1024>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1024>>, mc::reduction::Strided<mc::reduction::Dims<1024>, mc::reduction::Strides<1>>>, mc::reduction::Absent, mc::reduction::Absent, mc::reduction::Tiling<256, 256, true>>);
    const std::vector<Tensor> want = prepare(t, "layernorm", kType);
    Tensor y(DType::float32, want[0].shape());
    run_kernel<K>(in<float>(x), in<float>(scale), in<float>(bias), out<float>(y), static_cast<float*>(nullptr),
                  static_cast<float*>(nullptr), 1e-5f);
    INFO("variant " << variant);
    check_close(y, want[0], 1e-4, 1e-4);
  }
}

TEST_CASE("instancenorm: per (batch, channel) over the spatial dims; scale and B by channel") {
  const Tensor x = random_f32({2, 3, 5, 7}, 41, -4.0f, 4.0f);
  const Tensor scale = random_f32({3}, 42), bias = random_f32({3}, 43);
  OneNode t("InstanceNormalization", 6, {x, scale, bias});
  t.n->set_attr_float("epsilon", 1e-3);
  REDUCTION_TYPE(mc::reduction::Normalize<mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<35>>, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2, 3>, mc::reduction::Strides<0, 1>>, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<0>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<2, 3>, mc::reduction::Strides<0, 1>>, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<0>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<6>, mc::reduction::Strides<35>>, mc::reduction::Strided<mc::reduction::Dims<35>, mc::reduction::Strides<1>>>, mc::reduction::Absent, mc::reduction::Absent, mc::reduction::Tiling<128, 16, true>>);
  const std::vector<Tensor> want = prepare(t, "instancenorm", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), in<float>(scale), in<float>(bias), out<float>(y), static_cast<float*>(nullptr),
                static_cast<float*>(nullptr), 1e-3f);
  check_close(y, want[0]);
}

TEST_CASE("instancenorm: a 1-D spatial input (N x C x L)") {
  const Tensor x = random_f32({1, 4, 9}, 44);
  const Tensor scale = random_f32({4}, 45), bias = random_f32({4}, 46);
  OneNode t("InstanceNormalization", 6, {x, scale, bias});
  REDUCTION_TYPE(mc::reduction::Normalize<mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<9>>, mc::reduction::Strided<mc::reduction::Dims<9>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<9>, mc::reduction::Strides<0>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<1>>, mc::reduction::Strided<mc::reduction::Dims<9>, mc::reduction::Strides<0>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<4>, mc::reduction::Strides<9>>, mc::reduction::Strided<mc::reduction::Dims<9>, mc::reduction::Strides<1>>>, mc::reduction::Absent, mc::reduction::Absent, mc::reduction::Tiling<32, 4, true>>);
  const std::vector<Tensor> want = prepare(t, "instancenorm", kType);
  Tensor y(DType::float32, want[0].shape());
  run_kernel<K>(in<float>(x), in<float>(scale), in<float>(bias), out<float>(y), static_cast<float*>(nullptr),
                static_cast<float*>(nullptr), 1e-5f);
  check_close(y, want[0]);
}

TEST_CASE("layernorm: FP16 storage, FP32 compute (the next issue's form); FP32 Mean and InvStdDev") {
  const Tensor x = random_f32({3, 64}, 47, -4.0f, 4.0f).cast(DType::float16);
  const Tensor scale = random_f32({64}, 48).cast(DType::float16), bias = random_f32({64}, 49).cast(DType::float16);
  OneNode t("LayerNormalization", 17, {x, scale, bias}, 3);
  REDUCTION_TYPE(mc::reduction::Normalize<mc::reduction::Operand<__half, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<64>>, mc::reduction::Strided<mc::reduction::Dims<64>, mc::reduction::Strides<1>>>, mc::reduction::Operand<__half, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<64>, mc::reduction::Strides<1>>>, mc::reduction::Operand<__half, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<0>>, mc::reduction::Strided<mc::reduction::Dims<64>, mc::reduction::Strides<1>>>, mc::reduction::Operand<__half, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<64>>, mc::reduction::Strided<mc::reduction::Dims<64>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Operand<float, mc::reduction::Strided<mc::reduction::Dims<3>, mc::reduction::Strides<1>>>, mc::reduction::Tiling<64, 16, true>>);
  const std::vector<Tensor> want = prepare(t, "layernorm", kType);
  Tensor y(DType::float16, want[0].shape()), mean(DType::float32, want[1].shape()), inv(DType::float32, want[2].shape());
  run_kernel<K>(in<__half>(x), in<__half>(scale), in<__half>(bias), out<__half>(y), out<float>(mean), out<float>(inv),
                1e-5f);
  check_close(y, want[0], 2e-3, 2e-3);  // one FP16 rounding apart at most
  check_close(mean, want[1]);
  check_close(inv, want[2]);
}

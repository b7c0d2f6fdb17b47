// tests/templates/nvcc/elementwise_nvcc.cu — instantiates the elementwise, data-movement and resize
// templates on every compute path (float, half, bfloat16, integers, bool, raw bits) and every op,
// so that nvcc compiles them all (no run):
//   nvcc -std=c++17 -arch=sm_75 -I runtime_stub -I templates -c tests/templates/nvcc/elementwise_nvcc.cu
#include "data_movement.cuh"
#include "elementwise.cuh"
#include "resize.cuh"

using mc::ew::Operand;
using mc::ix::bf16;
using mc::ix::Dims;

namespace {

__device__ const mc::dm::Tap<float> resize_taps_f[] = {{0, 0.75f}, {1, 0.25f}, {0, 0.25f}, {1, 0.75f}};
struct ResizeTableF {
  static __device__ const mc::dm::Tap<float>* taps() { return resize_taps_f; }
};
__device__ const mc::dm::Tap<double> resize_taps_d[] = {{0, 1.0}, {-2, 0.0}};
struct ResizeTableD {
  static __device__ const mc::dm::Tap<double>* taps() { return resize_taps_d; }
};

cudaError_t e = cudaSuccess;
cudaStream_t stream = nullptr;
void* y = nullptr;
const void* a = nullptr;
const void* b = nullptr;
const void* c = nullptr;

template <class K>
void launch(void (*kernel)(typename K::Params), const typename K::Params& p) {
  if (e == cudaSuccess) e = mc::launch(kernel, K::grid(), K::block(), 0, stream, p);
}

// y = Op(x...) over 12 elements: T the storage type of every operand.
template <class Op, class Y, class... X>
void ew(Op op = Op{}) {
  using K = mc::ew::Elementwise<Op, Dims<3, 4>, Operand<Y, Dims<4, 1>>, Operand<X, Dims<4, 1>>...>;
  const void* const xs[] = {a, b, c, a, b};
  typename K::Params p{y, {}, op};
  for (int i = 0; i < K::kInputs; ++i) p.x[i] = xs[i];
  launch<K>(mc::ew::elementwise_kernel<K>, p);
}

// The FP16 pair path (__half2 loads and stores): contiguous half operands over one dim, and a
// broadcast scalar.
template <class Op, class... X>
void ew_pairs(Op op = Op{}) {
  using K = mc::ew::Elementwise<Op, Dims<12>, Operand<__half, Dims<1>>, X...>;
  static_assert(K::kPairs, "the pair path");
  const void* const xs[] = {a, b, c};
  typename K::Params p{y, {}, op};
  for (int i = 0; i < K::kInputs; ++i) p.x[i] = xs[i];
  launch<K>(mc::ew::elementwise_kernel<K>, p);
}

template <class T>
void float_ops() {
  ew<mc::ew::Neg, T, T>();
  ew<mc::ew::Abs, T, T>();
  ew<mc::ew::Sqrt, T, T>();
  ew<mc::ew::Exp, T, T>();
  ew<mc::ew::Log, T, T>();
  ew<mc::ew::Reciprocal, T, T>();
  ew<mc::ew::Floor, T, T>();
  ew<mc::ew::Ceil, T, T>();
  ew<mc::ew::Erf, T, T>();
  ew<mc::ew::Relu, T, T>();
  ew<mc::ew::LeakyRelu, T, T>({0.01f});
  ew<mc::ew::Elu, T, T>({1.0f});
  ew<mc::ew::Selu, T, T>({1.67f, 1.05f});
  ew<mc::ew::Sigmoid, T, T>();
  ew<mc::ew::HardSigmoid, T, T>({0.2f, 0.5f});
  ew<mc::ew::HardSwish, T, T>();
  ew<mc::ew::Tanh, T, T>();
  ew<mc::ew::Softplus, T, T>();
  ew<mc::ew::Clip<float, true, true>, T, T>({0.0f, 6.0f});
  ew<mc::ew::Clip<float, false, true>, T, T>({0.0f, 6.0f});
  ew<mc::ew::ClipInputs<true, true>, T, T, T, T>();
  ew<mc::ew::ClipInputs<false, true>, T, T, T>();
  ew<mc::ew::PRelu, T, T, T>();
  ew<mc::ew::BatchNorm, T, T, T, T, T, T>({1e-5f});
  ew<mc::ew::Add, T, T, T>();
  ew<mc::ew::Sub, T, T, T>();
  ew<mc::ew::Mul, T, T, T>();
  ew<mc::ew::Div, T, T, T>();
  ew<mc::ew::Pow, T, T, T>();
  ew<mc::ew::Pow, T, T, int64_t>();
  ew<mc::ew::Equal, bool, T, T>();
  ew<mc::ew::Less, bool, T, T>();
  ew<mc::ew::Greater, bool, T, T>();
  ew<mc::ew::LessOrEqual, bool, T, T>();
  ew<mc::ew::GreaterOrEqual, bool, T, T>();
  ew<mc::ew::Max, T, T, T, T>();
  ew<mc::ew::Min, T, T>();
  ew<mc::ew::Sum, T, T, T, T, T, T>();
  ew<mc::ew::Mean, T, T, T>();
}

template <class T>
void int_ops() {
  ew<mc::ew::Neg, T, T>();
  ew<mc::ew::Abs, T, T>();
  ew<mc::ew::Erf, T, T>();
  ew<mc::ew::Relu, T, T>();
  ew<mc::ew::Clip<int64_t, true, false>, T, T>({0, 0});
  ew<mc::ew::ClipInputs<true, false>, T, T, T>();
  ew<mc::ew::PRelu, T, T, T>();
  ew<mc::ew::Add, T, T, T>();
  ew<mc::ew::Sub, T, T, T>();
  ew<mc::ew::Mul, T, T, T>();
  ew<mc::ew::Div, T, T, T>();
  ew<mc::ew::Pow, T, T, T>();
  ew<mc::ew::Pow, T, T, float>();
  ew<mc::ew::Pow, T, T, __half>();
  ew<mc::ew::Equal, bool, T, T>();
  ew<mc::ew::Less, bool, T, T>();
  ew<mc::ew::GreaterOrEqual, bool, T, T>();
  ew<mc::ew::Max, T, T, T>();
  ew<mc::ew::Min, T, T, T, T>();
}

template <class From>
void casts() {
  ew<mc::ew::Identity, float, From>();
  ew<mc::ew::Identity, __half, From>();
  ew<mc::ew::Identity, bf16, From>();
  ew<mc::ew::Identity, int8_t, From>();
  ew<mc::ew::Identity, uint8_t, From>();
  ew<mc::ew::Identity, int32_t, From>();
  ew<mc::ew::Identity, int64_t, From>();
  ew<mc::ew::Identity, bool, From>();
}

template <class T>
void data_movement() {
  {
    using K = mc::dm::Copy<T, Dims<2, 3, 4>, Dims<12, 4, 1>, Dims<-1, 8, 2>>;
    launch<K>(mc::dm::copy_kernel<K>, {y, a});
  }
  {
    using K = mc::dm::TiledCopy<T, Dims<2, 3>, Dims<3000, 1000>, Dims<3000, 1000>, 40, 25, 25, 1, 1, 40>;
    launch<K>(mc::dm::tiled_copy_kernel<K>, {y, a});
  }
  {
    using K = mc::dm::Pad<T, mc::dm::PadMode::constant, Dims<4, 6>, Dims<6, 1>, Dims<4, 1>, Dims<0, 1>, Dims<2, 3>,
                          Dims<1, -1>>;
    launch<K>(mc::dm::pad_kernel<K>, {y, a, nullptr, T(0)});
  }
  {
    using K = mc::dm::Pad<T, mc::dm::PadMode::reflect, Dims<4, 6>, Dims<6, 1>, Dims<4, 1>, Dims<0, 0>, Dims<2, 4>,
                          Dims<1, 1>>;
    launch<K>(mc::dm::pad_kernel<K>, {y, a, b, T(0)});
  }
  {
    using K = mc::dm::Pad<T, mc::dm::PadMode::edge, Dims<5>, Dims<1>, Dims<1>, Dims<0>, Dims<3>, Dims<1>>;
    launch<K>(mc::dm::pad_kernel<K>, {y, a, nullptr, T(0)});
  }
  {
    using K = mc::dm::Pad<T, mc::dm::PadMode::wrap, Dims<5>, Dims<1>, Dims<1>, Dims<0>, Dims<3>, Dims<1>>;
    launch<K>(mc::dm::pad_kernel<K>, {y, a, nullptr, T(0)});
  }
  {
    using K = mc::dm::Gather<T, int64_t, Dims<2>, Dims<12>, 3, 4, Dims<4>, Dims<1>, Dims<2, 2>, Dims<2, 1>,
                             Dims<2, 2, 2, 4>, Dims<16, 8, 4, 1>>;
    launch<K>(mc::dm::gather_kernel<K>, {y, a, b});
  }
  {
    using K = mc::dm::Gather<T, int32_t, Dims<>, Dims<>, 3, 1, Dims<>, Dims<>, Dims<>, Dims<>, Dims<>, Dims<>>;
    launch<K>(mc::dm::gather_kernel<K>, {y, a, b});
  }
}

}  // namespace

cudaError_t launch_all() {
  float_ops<float>();
  float_ops<__half>();
  float_ops<bf16>();
  ew_pairs<mc::ew::Add, Operand<__half, Dims<1>>, Operand<__half, Dims<0>>>();
  ew_pairs<mc::ew::Sigmoid, Operand<__half, Dims<1>>>();
  ew_pairs<mc::ew::Clip<float, true, true>, Operand<__half, Dims<1>>>(mc::ew::Clip<float, true, true>{0.0f, 6.0f});
  int_ops<int8_t>();
  int_ops<uint8_t>();
  int_ops<int32_t>();
  int_ops<int64_t>();
  ew<mc::ew::Not, bool, bool>();
  ew<mc::ew::And, bool, bool, bool>();
  ew<mc::ew::Or, bool, bool, bool>();
  ew<mc::ew::Xor, bool, bool, bool>();
  ew<mc::ew::Equal, bool, bool, bool>();
  ew<mc::ew::Where, uint16_t, bool, uint16_t, uint16_t>();
  ew<mc::ew::Where, uint8_t, bool, uint8_t, uint8_t>();
  ew<mc::ew::Identity, uint64_t, uint64_t>();
  casts<float>();
  casts<__half>();
  casts<bf16>();
  casts<int8_t>();
  casts<uint8_t>();
  casts<int32_t>();
  casts<int64_t>();
  casts<bool>();
  data_movement<uint8_t>();
  data_movement<uint16_t>();
  data_movement<uint32_t>();
  data_movement<uint64_t>();
  {
    using K = mc::dm::Resize<float, float, ResizeTableF, Dims<2, 2>, Dims<2, 1>, Dims<2, 1>, Dims<0, 2>, Dims<0, 0>>;
    launch<K>(mc::dm::resize_kernel<K>, {y, a, 0.0f});
  }
  {
    using K = mc::dm::Resize<__half, float, ResizeTableF, Dims<2, 2>, Dims<2, 1>, Dims<2, 1>, Dims<2, 2>, Dims<0, 0>>;
    launch<K>(mc::dm::resize_kernel<K>, {y, a, 0.0f});
  }
  {
    using K = mc::dm::Resize<int64_t, double, ResizeTableD, Dims<1, 2>, Dims<2, 1>, Dims<1, 1>, Dims<0, 1>, Dims<0, 0>>;
    launch<K>(mc::dm::resize_kernel<K>, {y, a, 1.5});
  }
  return e;
}

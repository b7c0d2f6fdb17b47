// tests/templates/nvcc/reduction_nvcc.cu — instantiates every reduction template (reduce.cuh,
// softmax.cuh, normalization.cuh, topk.cuh) and its launch for nvcc (sm_75, sm_90; no run):
// float, __half and integer storage, every Reduce op, each group split (shuffles only, shuffles +
// shared memory, interleaved), cached and re-read rows, sorting and selecting TopK.
//   nvcc -std=c++17 -arch=sm_75 -I runtime_stub -I templates -x cu -c reduction_nvcc.cu
#include "normalization.cuh"
#include "reduce.cuh"
#include "softmax.cuh"
#include "topk.cuh"

namespace r = mc::reduction;

namespace {

using Rows = r::Strided<r::Dims<4, 5>, r::Strides<30, 1>>;
using Cols = r::Strided<r::Dims<6>, r::Strides<5>>;
using Out = r::Strided<r::Dims<20>, r::Strides<1>>;
template <class T>
using X = r::Operand<T, Rows, Cols>;
template <class T>
using Y = r::Operand<T, Out>;
using Long = r::Operand<float, r::NoDims, r::Strided<r::Dims<20000>, r::Strides<1>>>;

template <class K, class... Args>
cudaError_t launch(cudaError_t e, cudaStream_t s, Args... args) {
  if (e != cudaSuccess) return e;
  return mc::launch(r::kernel<K>, dim3(K::kBlocks), dim3(K::kThreads), 0, s, typename K::Params{args...});
}

template <template <class> class Op, class T>
cudaError_t reduce_all_splits(cudaError_t e, cudaStream_t s) {
  e = launch<r::Reduce<Op<T>, X<T>, Y<T>, r::Tiling<128, 8, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Reduce<Op<T>, X<T>, Y<T>, r::Tiling<256, 256, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Reduce<Op<T>, X<T>, Y<T>, r::Tiling<256, 4, false>>>(e, s, nullptr, nullptr);
  return e;
}

}  // namespace

cudaError_t reduction_launch_all(cudaStream_t s) {
  cudaError_t e = cudaSuccess;
  e = reduce_all_splits<r::Sum, float>(e, s);
  e = reduce_all_splits<r::Mean, float>(e, s);
  e = reduce_all_splits<r::Max, __half>(e, s);
  e = reduce_all_splits<r::Min, float>(e, s);
  e = reduce_all_splits<r::Prod, int64_t>(e, s);
  e = reduce_all_splits<r::L1, int32_t>(e, s);
  e = reduce_all_splits<r::L2, int8_t>(e, s);
  e = reduce_all_splits<r::LogSum, float>(e, s);
  e = reduce_all_splits<r::LogSumExp, __half>(e, s);
  e = reduce_all_splits<r::SumSquare, uint8_t>(e, s);
  e = reduce_all_splits<r::Max, bool>(e, s);
  e = reduce_all_splits<r::Mean, int64_t>(e, s);
  // --fp16's folded boundary casts: FP16 data, an FP32 result, and the reverse.
  e = launch<r::Reduce<r::Sum<__half>, X<__half>, Y<float>, r::Tiling<128, 8, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Reduce<r::LogSumExp<float>, X<float>, Y<__half>, r::Tiling<128, 8, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Softmax<false, X<__half>, X<float>, r::Tiling<32, 8, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Softmax<true, X<float>, X<__half>, r::Tiling<32, 8, true>>>(e, s, nullptr, nullptr);
  e = launch<r::ArgMinMax<true, false, X<float>, Y<int64_t>, r::Tiling<128, 32, true>>>(e, s, nullptr, nullptr);
  e = launch<r::ArgMinMax<false, true, X<int64_t>, Y<int64_t>, r::Tiling<256, 2, false>>>(e, s, nullptr, nullptr);
  e = launch<r::ArgMinMax<true, true, X<__half>, Y<int64_t>, r::Tiling<512, 512, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Softmax<false, X<float>, X<float>, r::Tiling<32, 8, true>>>(e, s, nullptr, nullptr);
  e = launch<r::Softmax<true, X<__half>, X<__half>, r::Tiling<256, 4, false>>>(e, s, nullptr, nullptr);
  e = launch<r::Softmax<false, Long, Long, r::Tiling<512, 512, true>>>(e, s, nullptr, nullptr);
  using Scale = r::Operand<float, r::Strided<r::Dims<20>, r::Strides<0>>, r::Strided<r::Dims<6>, r::Strides<1>>>;
  using Stat = r::Operand<float, Out>;
  e = launch<r::Normalize<X<float>, Scale, Scale, X<float>, Stat, Stat, r::Tiling<128, 4, true>>>(
      e, s, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1e-5f);
  e = launch<r::Normalize<X<__half>, Scale, r::Absent, X<__half>, r::Absent, r::Absent, r::Tiling<256, 2, false>>>(
      e, s, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1e-5f);
  e = launch<r::Normalize<Long, r::Operand<float, r::NoDims, Long::Col>, r::Absent, Long, Stat, r::Absent,
                          r::Tiling<512, 512, true>>>(e, s, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1e-5f);
  using Kx = r::Operand<float, Rows, r::Strided<r::Dims<3>, r::Strides<5>>>;
  e = launch<r::TopK<true, 3, X<float>, Kx, r::Operand<int64_t, Rows, Kx::Col>, r::Tiling<32, 32, true>>>(
      e, s, nullptr, nullptr, nullptr);
  using KLong = r::Operand<float, r::NoDims, r::Strided<r::Dims<4>, r::Strides<1>>>;
  e = launch<r::TopK<false, 4, Long, KLong, r::Absent, r::Tiling<256, 256, true>>>(e, s, nullptr, nullptr, nullptr);
  using XI = r::Operand<int64_t, r::Strided<r::Dims<2>, r::Strides<2048>>, r::Strided<r::Dims<2048>, r::Strides<1>>>;
  using KI = r::Operand<int64_t, r::Strided<r::Dims<2>, r::Strides<5>>, r::Strided<r::Dims<5>, r::Strides<1>>>;
  e = launch<r::TopK<true, 5, XI, KI, KI, r::Tiling<256, 256, true>>>(e, s, nullptr, nullptr, nullptr);
  return e;
}

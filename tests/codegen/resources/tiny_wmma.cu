// tests/codegen/resources/tiny_wmma.cu — a hand-written stand-in for the emitted kernels, to test
// runtime/tools/resources (make resources, make check-tensor-cores) on real nvcc output: a
// tensor-core kernel in mc::tc::kernel<K> (contract: that name is a tensor-core kernel), a SIMT
// kernel, template arguments of the kinds the families use (types, int64_t values, bools, enums,
// a type of an unnamed namespace). -DFAKE_TC_WITHOUT_MMA adds an mc::tc::kernel without MMAs:
// the check must fail on it.
#include <cstdint>

#include <cuda_fp16.h>
#include <mma.h>

#include "tiny_wmma.cuh"

namespace mc {
namespace tc {

template <class K>
__global__ void kernel(typename K::Params p) {
  if constexpr (K::kMma) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, p.a, 16);
    wmma::load_matrix_sync(b, p.b, 16);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(p.y, c, 16, wmma::mem_row_major);
  } else {
    p.y[threadIdx.x] = __half2float(p.a[threadIdx.x]) * __half2float(p.b[threadIdx.x]);
  }
}

}  // namespace tc

namespace simt {

template <class K>
__global__ void kernel(typename K::Params p) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < K::kN) p.y[i] = K::kAct == Act::relu ? fmaxf(p.x[i], 0.f) : p.x[i];
}

}  // namespace simt
}  // namespace mc

namespace {

struct k1_tag {};

using k0_t = mc::tc::Gemm<__half, mc::Strides<0, 256, -16>, mc::Act::relu, true>;
using k1_t = mc::simt::Ew<float, 1024, mc::Act::relu, k1_tag>;
#if defined(FAKE_TC_WITHOUT_MMA)
using k2_t = mc::tc::Gemm<__half, mc::Strides<1, 2, 3>, mc::Act::none, false>;
#endif

}  // namespace

void launch_all(const __half* a, const __half* b, float* y, const float* x) {
  mc::tc::kernel<k0_t><<<1, 32>>>(k0_t::Params{a, b, y});
  mc::simt::kernel<k1_t><<<4, 256>>>(k1_t::Params{x, y});
#if defined(FAKE_TC_WITHOUT_MMA)
  mc::tc::kernel<k2_t><<<1, 32>>>(k2_t::Params{a, b, y});
#endif
}

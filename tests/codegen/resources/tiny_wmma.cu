// tests/codegen/resources/tiny_wmma.cu — a hand-written stand-in for an emitted model named
// tiny_wmma, to test `modelc resources` (make resources, make check-tensor-cores) on real nvcc
// output: entry points as the emitter writes them (extern "C", NAME_<kernel id>), a tensor-core
// kernel (tiny_wmma_k0, which report.json's k2 launches too) and a SIMT kernel with an arch
// variant per arch (tiny_wmma_k1_sm75, tiny_wmma_k1_sm90). -DFAKE_TC_WITHOUT_MMA adds
// tiny_wmma_k3, an entry point without MMAs that no kernel of the report launches: the check
// must fail on it.
#include <cstdint>

#include <cuda_fp16.h>
#include <mma.h>

namespace {

struct Operands {
  const __half* a = nullptr;
  const __half* b = nullptr;
  float* y = nullptr;
};

template <bool kMma>
struct TensorCoreGemm {
  using Params = Operands;
  static constexpr int kThreads = 32;
  static __device__ void run(const Params& p) {
    if constexpr (kMma) {
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
};

template <int64_t kN, int kThreadsV>
struct Relu {
  struct Params {
    const float* x = nullptr;
    float* y = nullptr;
  };
  static constexpr int kThreads = kThreadsV;
  static __device__ void run(const Params& p) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < kN) p.y[i] = fmaxf(p.x[i], 0.f);
  }
};

}  // namespace

using tiny_wmma_k0_t = TensorCoreGemm<true>;
extern "C" __global__ void __launch_bounds__(tiny_wmma_k0_t::kThreads) tiny_wmma_k0(const tiny_wmma_k0_t::Params p) {
  tiny_wmma_k0_t::run(p);
}

using tiny_wmma_k1_sm75_t = Relu<1024, 128>;
extern "C" __global__ void __launch_bounds__(tiny_wmma_k1_sm75_t::kThreads)
    tiny_wmma_k1_sm75(const tiny_wmma_k1_sm75_t::Params p) {
  tiny_wmma_k1_sm75_t::run(p);
}

using tiny_wmma_k1_sm90_t = Relu<1024, 256>;
extern "C" __global__ void __launch_bounds__(tiny_wmma_k1_sm90_t::kThreads)
    tiny_wmma_k1_sm90(const tiny_wmma_k1_sm90_t::Params p) {
  tiny_wmma_k1_sm90_t::run(p);
}

#if defined(FAKE_TC_WITHOUT_MMA)
using tiny_wmma_k3_t = TensorCoreGemm<false>;
extern "C" __global__ void __launch_bounds__(tiny_wmma_k3_t::kThreads) tiny_wmma_k3(const tiny_wmma_k3_t::Params p) {
  tiny_wmma_k3_t::run(p);
}
#endif

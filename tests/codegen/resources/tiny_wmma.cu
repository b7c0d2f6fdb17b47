// tests/codegen/resources/tiny_wmma.cu — a hand-written stand-in for an emitted model named
// tiny_wmma, to test `modelc resources` (make resources, make check-tensor-cores) on real nvcc
// output: entry points as the emitter writes them (extern "C", NAME_<kernel id>), a tensor-core
// kernel (tiny_wmma_k0, which report.json's k2 launches too) and a SIMT kernel with an arch
// variant per arch (tiny_wmma_k1_sm75, tiny_wmma_k1_sm90). -DFAKE_TC_WITHOUT_MMA adds
// tiny_wmma_k3, an entry point without MMAs that no kernel of the report launches: the check
// must fail on it.
#include <cstdint>

#include <cuda_fp16.h>

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
      // The main loop's instructions: a 16 x 8 A and an 8 x 8 B through shared memory, ldmatrix,
      // one mma.sync m16n8k8 (sm_75 and newer).
      __shared__ __align__(16) __half sa[16 * 8], sb[8 * 8];
      for (int i = threadIdx.x; i < 16 * 8; i += 32) sa[i] = p.a[i];
      for (int i = threadIdx.x; i < 8 * 8; i += 32) sb[i] = p.b[i];
      __syncthreads();
      const int lane = threadIdx.x;
      const unsigned a_row = static_cast<unsigned>(__cvta_generic_to_shared(sa + (lane % 16) * 8));
      const unsigned b_row = static_cast<unsigned>(__cvta_generic_to_shared(sb + (lane % 8) * 8));
      unsigned a0, a1, b0;
      asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(a0), "=r"(a1) : "r"(a_row));
      asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(b0) : "r"(b_row));
      float c[4] = {0.f, 0.f, 0.f, 0.f};
      asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
                   "{%0, %1, %2, %3};\n"
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                   : "r"(a0), "r"(a1), "r"(b0));
      for (int e = 0; e < 4; ++e) p.y[(lane / 4 + 8 * (e / 2)) * 8 + 2 * (lane % 4) + e % 2] = c[e];
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

// tests/runtime_stub/kernels_nvcc.cu — compiles the sample kernels with nvcc (ctest runs this for
// sm_75, sm_80 and sm_90 when nvcc exists), instantiating every kernel and its mc::launch.
#include "kernels.cuh"

cudaError_t launch_all(cudaStream_t s, const float* x, float* y, const half* a, const half* b, float* c32, half* c16,
                       const half2* x2, half2* y2, int* count) {
  using Row = samples::RowSoftmaxSum<128, samples::ScaleBias>;
  cudaError_t e = cudaSuccess;
  e = e != cudaSuccess ? e : mc::launch(samples::block_sum, dim3(4), dim3(256), 0, s, x, y, 1024);
  e = e != cudaSuccess ? e : mc::launch(samples::wmma_gemm<float>, dim3(2, 2), dim3(32), 0, s, a, b, c32, 32, 32, 32, false);
  e = e != cudaSuccess ? e : mc::launch(samples::wmma_gemm<half>, dim3(2, 2), dim3(32), 0, s, a, b, c16, 32, 32, 32, true);
  e = e != cudaSuccess ? e : mc::launch(samples::reverse_blocks, dim3(2), dim3(64), 64 * 16, s, x, y, 512);
  e = e != cudaSuccess ? e : mc::launch(samples::half2_axpb_relu, dim3(1), dim3(64), 0, s, x2, y2,
                                        __floats2half2_rn(1.0f, 2.0f), __floats2half2_rn(0.5f, -0.5f), 64);
  e = e != cudaSuccess ? e : mc::launch(samples::run_kernel<Row>, dim3(8), dim3(128), 0, s,
                                        Row::Params{x, y, 100, samples::ScaleBias{2.0f, 1.0f}});
  e = e != cudaSuccess ? e : mc::launch(samples::count_positive, dim3(4), dim3(64), 0, s, x, count, 200);
  return e;
}

// tests/runtime_stub/emulation_bench.cpp — what the host emulation costs (prints; not a test).
//   bare switch: Boost.Context jump_fcontext ping-pong
//   fiber switch: 1024 threads x R __syncthreads, each thread switches once per barrier
//   no-sync kernel: per-thread cost when no fiber ever waits (one fiber per block)
//   warp reduction: 5 shuffles per thread
//   wmma: one 16x16x16 mma per warp
#include <time.h>

#include <cstdio>
#include <vector>

#include <boost/context/detail/fcontext.hpp>

#include "device.h"

namespace {

__global__ void barriers(int rounds, int* sink) {
  int v = 0;
  for (int r = 0; r < rounds; ++r) {
    __syncthreads();
    v += r;
  }
  if (threadIdx.x == 0) *sink = v;
}

__global__ void axpy(const float* x, float* y, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void warp_reduce(const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) y[i / 32] = v;
}

__global__ void mma_loop(const half* A, const half* B, float* C, int reps) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::fill_fragment(c, 0.0f);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  for (int r = 0; r < reps; ++r) wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}

// CPU time of this thread: the machines are shared, wall time would count other processes' turns.
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

template <class F>
double seconds(F&& f) {
  const double t0 = thread_seconds();
  f();
  return thread_seconds() - t0;
}

}  // namespace

namespace bctx = boost::context::detail;
void ping_pong(bctx::transfer_t t) {
  for (;;) t = bctx::jump_fcontext(t.fctx, nullptr);
}

int main() {
  {  // the bare fcontext switch the engine is built on
    static char stack[64 * 1024];
    bctx::fcontext_t c = bctx::make_fcontext(stack + sizeof stack, sizeof stack, ping_pong);
    const int n = 2000000;
    const double s = seconds([&] {
      for (int i = 0; i < n; ++i) c = bctx::jump_fcontext(c, nullptr).fctx;
    });
    std::printf("bare jump_fcontext:                         %6.2f ns per switch\n", s * 1e9 / (2.0 * n));
  }
  int sink = 0;
  mc::launch(barriers, dim3(1), dim3(1024), 0, nullptr, 10, &sink);  // warm up: map the stacks
  for (int threads : {32, 256, 1024}) {
    const int rounds = 2000;
    const double s = seconds([&] { mc::launch(barriers, dim3(1), dim3(threads), 0, nullptr, rounds, &sink); });
    std::printf("fiber switch (__syncthreads, %4d threads): %6.2f ns per thread per barrier\n", threads,
                s * 1e9 / (static_cast<double>(threads) * rounds));
  }
  const int n = 1 << 22;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  const double s_axpy = seconds([&] { mc::launch(axpy, dim3(n / 256), dim3(256), 0, nullptr, x.data(), y.data(), 2.0f, n); });
  std::printf("no-sync kernel (axpy, %d threads):      %6.2f ns per thread\n", n, s_axpy * 1e9 / n);
  const int m = 1 << 20;
  std::vector<float> r(m / 32);
  const double s_red = seconds([&] { mc::launch(warp_reduce, dim3(m / 256), dim3(256), 0, nullptr, x.data(), r.data()); });
  std::printf("warp reduction (5 __shfl_xor_sync):       %6.2f ns per thread, %6.2f ns per shuffle per thread\n",
              s_red * 1e9 / m, s_red * 1e9 / m / 5);
  alignas(32) static half A[256], B[256];
  alignas(32) static float C[256];
  for (int i = 0; i < 256; ++i) A[i] = B[i] = __float2half(0.01f * (i % 7));
  const int reps = 2000;
  const double s_mma = seconds([&] {
    mc::launch(mma_loop, dim3(1), dim3(32), 0, nullptr, static_cast<const half*>(A), static_cast<const half*>(B),
               static_cast<float*>(C), reps);
  });
  std::printf("wmma::mma_sync 16x16x16 (one warp):       %6.2f us per warp-wide mma\n", s_mma * 1e6 / reps);
  return sink == -1;
}

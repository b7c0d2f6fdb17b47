// Host emulation of the CUDA subset (runtime_stub/host): half arithmetic, barriers, warp
// collectives, deadlock detection, WMMA, cp.async, the runtime API, stream capture and events.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels.cuh"
#include "fault_of.h"

namespace {

uint16_t bits(__half h) { return __half_as_ushort(h); }
__half from_bits(uint16_t b) { return __ushort_as_half(b); }

// Exact rounding of a finite half sum / product, through the independent 128-bit routine.
uint16_t exact_add(uint16_t a, uint16_t b) {
  const __int128 s = mc::host::half_bits_to_units(a) + mc::host::half_bits_to_units(b);
  if (s == 0) return (a & b & 0x8000u) ? 0x8000u : 0u;
  return mc::host::round_to_half(s < 0, static_cast<unsigned __int128>(s < 0 ? -s : s), -24);
}
uint16_t exact_mul(uint16_t a, uint16_t b) {
  const __int128 p = mc::host::half_bits_to_units(a) * mc::host::half_bits_to_units(b);
  if (p == 0) return ((a ^ b) & 0x8000u) ? 0x8000u : 0u;
  return mc::host::round_to_half(p < 0, static_cast<unsigned __int128>(p < 0 ? -p : p), -48);
}
bool finite_bits(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

// ---- kernels used by the tests -----------------------------------------------------------------

// Rotates values through shared memory `rounds` times; wrong without both barriers.
__global__ void rotate_through_smem(int* out, int rounds) {
  __shared__ int buf[1024];
  const int n = blockDim.x * blockDim.y * blockDim.z;
  const int t = static_cast<int>(mc::thread_rank());
  int v = t;
  for (int r = 0; r < rounds; ++r) {
    buf[t] = v;
    __syncthreads();
    v = buf[(t + 1) % n];
    __syncthreads();
  }
  out[blockIdx.x * n + t] = v;
}

__global__ void record_indices(uint3* tid, uint3* bid, int* dims) {
  const int block_linear = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const int i = block_linear * blockDim.x * blockDim.y * blockDim.z + static_cast<int>(mc::thread_rank());
  tid[i] = threadIdx;
  bid[i] = blockIdx;
  if (i == 0) {
    dims[0] = blockDim.x; dims[1] = blockDim.y; dims[2] = blockDim.z;
    dims[3] = gridDim.x; dims[4] = gridDim.y; dims[5] = gridDim.z;
  }
}

__global__ void syncthreads_reductions(int* out) {
  const int t = threadIdx.x;
  const int c = __syncthreads_count(t % 3 == 0);
  const int a = __syncthreads_and(t < 1000);
  const int a2 = __syncthreads_and(t != 5);
  const int o = __syncthreads_or(t == 7);
  const int o2 = __syncthreads_or(0);
  if (t == 0) { out[0] = c; out[1] = a; out[2] = a2; out[3] = o; out[4] = o2; }
}

// kind: 0 idx, 1 up, 2 down, 3 xor
__global__ void shuffle_all(int kind, int arg, int width, int* out) {
  const int t = static_cast<int>(mc::thread_rank());
  const int v = 1000 + t;
  int r = 0;
  switch (kind) {
    case 0: r = __shfl_sync(0xffffffffu, v, arg, width); break;
    case 1: r = __shfl_up_sync(0xffffffffu, v, static_cast<unsigned>(arg), width); break;
    case 2: r = __shfl_down_sync(0xffffffffu, v, static_cast<unsigned>(arg), width); break;
    default: r = __shfl_xor_sync(0xffffffffu, v, arg, width); break;
  }
  out[t] = r;
}

// Reference per the CUDA programming guide, lane by lane.
int expected_shuffle(int kind, int lane, int arg, int width, int warp_base, int lanes_in_warp) {
  const int seg = lane / width * width;
  int src = lane;
  switch (kind) {
    case 0: src = seg + arg % width; break;
    case 1: src = lane - seg >= arg ? lane - arg : lane; break;
    case 2: src = lane - seg + arg < width ? lane + arg : lane; break;
    default: src = (lane ^ arg) < seg + width ? (lane ^ arg) : lane; break;
  }
  if (src >= lanes_in_warp) src = lane;  // a lane that does not exist: own value
  return 1000 + warp_base + src;
}

__global__ void votes(int* out) {
  const int t = static_cast<int>(mc::thread_rank());
  const int lane = t & 31;
  const unsigned active = __activemask();  // before any lane can have exited
  const unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
  const int any_odd = __any_sync(0xffffffffu, lane == 17);
  const int any_none = __any_sync(0xffffffffu, 0);
  const int all_true = __all_sync(0xffffffffu, lane < 32);
  const int all_some = __all_sync(0xffffffffu, lane != 4);
  out[t * 6 + 0] = static_cast<int>(b);
  out[t * 6 + 1] = any_odd;
  out[t * 6 + 2] = any_none;
  out[t * 6 + 3] = all_true;
  out[t * 6 + 4] = all_some;
  out[t * 6 + 5] = static_cast<int>(active);
}

// Half warps exchange separately with disjoint masks; then lanes 16..31 leave and lanes 0..15 use a
// full mask (exited lanes are not waited for).
__global__ void disjoint_masks_and_exits(int* out) {
  const int lane = threadIdx.x;
  const unsigned half_mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  int v = __shfl_xor_sync(half_mask, lane, 1);
  __syncwarp(half_mask);
  out[lane] = v;
  if (lane >= 16) return;
  out[32 + lane] = __shfl_down_sync(0xffffffffu, lane * 2, 1);
  out[64 + lane] = static_cast<int>(__ballot_sync(0xffffffffu, 1));
}

__global__ void shuffle_types(double* d, half2* h, long long* ll) {
  const int lane = threadIdx.x;
  d[lane] = __shfl_sync(0xffffffffu, 0.5 + lane, 31 - lane);
  h[lane] = __shfl_xor_sync(0xffffffffu, __floats2half2_rn(static_cast<float>(lane), -static_cast<float>(lane)), 3);
  ll[lane] = __shfl_up_sync(0xffffffffu, (1ll << 40) + lane, 2);
}

__global__ void early_exit_before_barrier() {
  if (threadIdx.x == 3) return;
  __syncthreads();
}

__global__ void shuffle_vs_barrier() {
  if (threadIdx.x < 16) {
    (void)__shfl_sync(0xffffffffu, 1, 0);
  } else {
    __syncthreads();
  }
}

__global__ void mask_without_self() { (void)__shfl_sync(0x1u, 1, 0); }

__global__ void divergent_collectives() {
  if (threadIdx.x < 16) {
    (void)__ballot_sync(0xffffffffu, 1);
  } else {
    (void)__shfl_sync(0xffffffffu, 1, 0);
  }
}

__global__ void throws_in_kernel() {
  if (threadIdx.x == 5) throw std::runtime_error("boom");
}

__global__ void wmma_partial_warp(const half* A) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, A, 16);
}

__global__ void wmma_lane_pointers(const half* A) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, A + (threadIdx.x == 7 ? 16 : 0), 16);
}

__global__ void wmma_lane_exits(const half* A) {
  if (threadIdx.x == 31) return;
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, A, 16);
}

// D (16x16, col-major) = A (16x16, col-major) * B (16x16, row-major) + C (row-major), float.
__global__ void wmma_other_layouts(const half* A, const half* B, const float* C, float* D) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::load_matrix_sync(c, C, 16, wmma::mem_row_major);
  for (int i = 0; i < c.num_elements; ++i) c.x[i] *= 2.0f;  // element-wise: portable
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(D, c, 16, wmma::mem_col_major);
}

// Many accumulator tiles per warp, as GEMM templates hold: 16 KiB of fragments per thread.
__global__ void wmma_many_tiles(const half* A, const half* B, float* C) {
  using namespace nvcuda;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][4];
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a, b, acc[i][j]);
  wmma::store_matrix_sync(C, acc[3][3], 16, wmma::mem_row_major);
}

// int8 inputs, int accumulators: C = A (row-major) * B (col-major) + 1000.
__global__ void wmma_int8(const signed char* A, const signed char* B, int* C) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> b;
  wmma::fragment<wmma::accumulator, 16, 16, 16, int> c;
  wmma::fill_fragment(c, 1000);
  wmma::load_matrix_sync(a, A, 16);
  wmma::load_matrix_sync(b, B, 16);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}

// Reads shared memory before and after waiting for a cp.async: the emulation defers the copy.
__global__ void cp_async_ordering(const float* X, float* out) {
  float* s = mc::dynamic_smem<float>();
  mc::cp_async_16(s, X);
  mc::cp_async_commit();
  mc::cp_async_16(s + 4, X + 4, 8);  // 2 floats copied, 2 zero-filled
  mc::cp_async_commit();
  out[0] = s[0];                     // not waited: still the poison
  mc::cp_async_wait<1>();            // the first group is done, the second may not be
  out[1] = s[0];
  out[2] = s[4];
  mc::cp_async_wait<0>();
  out[3] = s[4];
  out[4] = s[5];
  out[5] = s[6];
}

__global__ void big_dynamic_smem(float* out) {
  float* s = mc::dynamic_smem<float>();
  s[12287 + 4096] = 3.0f;
  out[0] = s[12287 + 4096];
}

__global__ void append_tag(int* log, int tag) {
  log[1 + log[0]] = tag;
  log[0] += 1;
}

__global__ void noop_kernel() {}

}  // namespace

// ---- half ------------------------------------------------------------------------------------------

TEST_CASE("emulated __half: float conversion rounds to nearest even, bit-exact") {
  CHECK(bits(__float2half(1.0f)) == 0x3c00);
  CHECK(bits(__float2half(-2.0f)) == 0xc000);
  CHECK(bits(__float2half(65504.0f)) == 0x7bff);
  CHECK(bits(__float2half(65519.996f)) == 0x7bff);
  CHECK(bits(__float2half(65520.0f)) == 0x7c00);  // the midpoint to 65536 ties to even: Inf
  CHECK(bits(__float2half(-1e30f)) == 0xfc00);
  CHECK(bits(__float2half(std::ldexp(1.0f, -24))) == 0x0001);  // smallest subnormal
  CHECK(bits(__float2half(std::ldexp(1.0f, -25))) == 0x0000);  // half of it: tie, even is 0
  CHECK(bits(__float2half(std::nextafter(std::ldexp(1.0f, -25), 1.0f))) == 0x0001);  // just above the tie
  CHECK(bits(__float2half(std::ldexp(1.5f, -24))) == 0x0002);  // tie between 1 and 2 units: even
  CHECK(bits(__float2half(std::ldexp(1023.0f, -24))) == 0x03ff);  // largest subnormal
  CHECK(bits(__float2half(std::ldexp(1.0f, -14))) == 0x0400);  // smallest normal
  CHECK(bits(__float2half(1.0f + 1.0f / 2048)) == 0x3c00);  // tie, even stays
  CHECK(bits(__float2half(1.0f + 3.0f / 2048)) == 0x3c02);  // tie, odd rounds up
  CHECK(bits(__float2half(-0.0f)) == 0x8000);
  CHECK(bits(__float2half(std::numeric_limits<float>::infinity())) == 0x7c00);
  CHECK(bits(__float2half(std::nanf(""))) == 0x7fff);   // NaN stays NaN (canonical, as the GPU)
  CHECK(bits(__float2half(-std::nanf("7"))) == 0x7fff);
  CHECK(__hisnan(__float2half(std::nanf(""))));
  CHECK(std::isnan(__half2float(from_bits(0x7e00))));
  CHECK(__half2float(from_bits(0x0001)) == std::ldexp(1.0f, -24));
  CHECK(__half2float(from_bits(0x3555)) == 0.333251953125f);
  CHECK(__half2float(from_bits(0xfbff)) == -65504.0f);
  // Directed roundings.
  CHECK(bits(__float2half_rz(1.0f + 1.0f / 1024 * 0.75f)) == 0x3c00);
  CHECK(bits(__float2half_ru(1.0f + 1.0f / 1024 * 0.25f)) == 0x3c01);
  CHECK(bits(__float2half_rd(-1.0f - 1.0f / 1024 * 0.25f)) == 0xbc01);
  CHECK(bits(__float2half_rz(1e9f)) == 0x7bff);
  CHECK(bits(__double2half(1.0 + 1.0 / 2048 + 1e-12)) == 0x3c01);  // just above a tie (double input)
  // Every finite half survives the round trip, and the fast path equals the exact routine.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (!finite_bits(static_cast<uint16_t>(h))) continue;
    REQUIRE(bits(__float2half(__half2float(from_bits(static_cast<uint16_t>(h))))) == h);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 300000; ++i) {
    uint32_t x = rng();
    if (i % 3 == 0) x = (x & 0x80000000u) | (0x33000000u + x % (0x47800000u - 0x33000000u));  // the half range
    float f;
    std::memcpy(&f, &x, 4);
    if (std::isnan(f)) continue;
    REQUIRE(bits(__float2half(f)) == mc::host::double_to_half_bits(static_cast<double>(f)));
  }
}

TEST_CASE("emulated __half: arithmetic is correctly rounded") {
  CHECK(bits(__hadd(__float2half(1.0f), __float2half(2.0f))) == 0x4200);
  CHECK(bits(__hmul(__float2half(3.0f), __float2half(0.5f))) == 0x3e00);
  CHECK(bits(__hsub(__float2half(1.0f), __float2half(1.0f))) == 0x0000);
  CHECK(bits(__hadd(from_bits(0x7bff), from_bits(0x7bff))) == 0x7c00);  // overflow to Inf
  CHECK(bits(__hdiv(__float2half(1.0f), __float2half(3.0f))) == 0x3555);
  CHECK(bits(hsqrt(__float2half(2.0f))) == 0x3da8);
  // fma: (1 + 2^-10) * 0.5 + 0.5 = 1 + 2^-11 is a tie: even gives 1.0.
  CHECK(bits(__hfma(from_bits(0x3c01), from_bits(0x3800), from_bits(0x3800))) == 0x3c00);
  // fma rounds once: (1 + 3*2^-10)^2 - 1 = 1538.25 * 2^-18 -> 0x1e02; rounding a*b first gives 0x1e00.
  CHECK(bits(__hfma(from_bits(0x3c03), from_bits(0x3c03), from_bits(0xbc00))) == 0x1e02);
  CHECK(bits(__hfma(from_bits(0x3c00), from_bits(0x3c00), from_bits(0xbc00))) == 0x0000);
  // Random pairs against the exact 128-bit computation.
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint16_t x = static_cast<uint16_t>(rng()), y = static_cast<uint16_t>(rng());
    if (!finite_bits(x) || !finite_bits(y)) continue;
    REQUIRE(bits(__hadd(from_bits(x), from_bits(y))) == exact_add(x, y));
    REQUIRE(bits(__hmul(from_bits(x), from_bits(y))) == exact_mul(x, y));
  }
  // max/min: NaN gives the other input, +0 > -0; the _nan forms propagate.
  CHECK(bits(__hmax(from_bits(0x7e00), __float2half(2.0f))) == 0x4000);
  CHECK(bits(__hmin(__float2half(2.0f), from_bits(0x7e00))) == 0x4000);
  CHECK(bits(__hmax(from_bits(0x8000), from_bits(0x0000))) == 0x0000);
  CHECK(bits(__hmin(from_bits(0x0000), from_bits(0x8000))) == 0x8000);
  CHECK(__hisnan(__hmax_nan(from_bits(0x7e00), __float2half(2.0f))));
  // Comparisons and operators.
  const __half one = 1.0f, two = __float2half(2.0f), nan = from_bits(0x7e00);
  CHECK(one < two);
  CHECK(two >= one);
  CHECK_FALSE(nan == nan);
  CHECK(nan != nan);
  CHECK_FALSE(__hne(nan, one));
  CHECK(bits(one + two) == 0x4200);
  CHECK(bits(-two) == 0xc000);
  __half h = one;
  h += two;
  ++h;
  CHECK(__half2float(h) == 4.0f);
  CHECK(static_cast<int>(__float2half(-2.75f)) == -2);  // to integers: toward zero
  CHECK(__half2int_rn(__float2half(2.5f)) == 2);
}

TEST_CASE("emulated __half2: lane-wise operations and conversions") {
  const half2 x = __floats2half2_rn(1.5f, -2.0f);
  CHECK(__low2float(x) == 1.5f);
  CHECK(__high2float(x) == -2.0f);
  const half2 y = __hfma2(x, __floats2half2_rn(2.0f, 3.0f), __float2half2_rn(1.0f));
  CHECK(__low2float(y) == 4.0f);
  CHECK(__high2float(y) == -5.0f);
  const half2 m = __hmax2(y, __float2half2_rn(0.0f));
  CHECK(__low2float(m) == 4.0f);
  CHECK(__high2float(m) == 0.0f);
  const half2 s = __hadd2(x, x) * __float2half2_rn(0.5f);
  CHECK(__low2float(s) == 1.5f);
  CHECK(__high2float(s) == -2.0f);
  CHECK(bits(__low2half(__lowhigh2highlow(x))) == bits(__float2half(-2.0f)));
  const float2 f2 = __half22float2(__float22half2_rn(make_float2(0.1f, 3.0f)));
  CHECK(f2.x == __half2float(__float2half(0.1f)));
  CHECK(f2.y == 3.0f);
  CHECK(__hbeq2(__halves2half2(__float2half(0.5f), __float2half(0.5f)), __half2half2(__float2half(0.5f))));
  const half2 lt = __hlt2(x, __float2half2_rn(0.0f));
  CHECK(bits(lt.x) == 0x0000);
  CHECK(bits(lt.y) == 0x3c00);
}

// ---- blocks, barriers and indices -----------------------------------------------------------------

TEST_CASE("emulation: __syncthreads orders shared memory across the block") {
  for (int n : {1, 33, 256, 1024}) {
    std::vector<int> out(static_cast<size_t>(3 * n), -1);
    REQUIRE(mc::launch(rotate_through_smem, dim3(3), dim3(n), 0, nullptr, out.data(), 5) == cudaSuccess);
    for (int b = 0; b < 3; ++b)
      for (int t = 0; t < n; ++t) REQUIRE(out[static_cast<size_t>(b * n + t)] == (t + 5) % n);
  }
  // Three-dimensional blocks rotate in linear order too.
  std::vector<int> out(4 * 3 * 2, -1);
  REQUIRE(mc::launch(rotate_through_smem, dim3(1), dim3(4, 3, 2), 0, nullptr, out.data(), 7) == cudaSuccess);
  for (int t = 0; t < 24; ++t) CHECK(out[static_cast<size_t>(t)] == (t + 7) % 24);
}

TEST_CASE("emulation: threadIdx, blockIdx, blockDim, gridDim as in CUDA") {
  const dim3 grid(3, 2, 2), block(4, 2, 3);
  const int n = 3 * 2 * 2 * 4 * 2 * 3;
  std::vector<uint3> tid(n), bid(n);
  int dims[6] = {};
  REQUIRE(mc::launch(record_indices, grid, block, 0, nullptr, tid.data(), bid.data(), dims) == cudaSuccess);
  CHECK(dims[0] == 4); CHECK(dims[1] == 2); CHECK(dims[2] == 3);
  CHECK(dims[3] == 3); CHECK(dims[4] == 2); CHECK(dims[5] == 2);
  int i = 0;
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 3; ++tz)
          for (unsigned ty = 0; ty < 2; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx, ++i) {
              REQUIRE(tid[i].x == tx); REQUIRE(tid[i].y == ty); REQUIRE(tid[i].z == tz);
              REQUIRE(bid[i].x == bx); REQUIRE(bid[i].y == by); REQUIRE(bid[i].z == bz);
            }
}

TEST_CASE("emulation: __syncthreads_count / _and / _or") {
  int out[5] = {};
  REQUIRE(mc::launch(syncthreads_reductions, dim3(1), dim3(100), 0, nullptr, out) == cudaSuccess);
  CHECK(out[0] == 34);  // t % 3 == 0 for t in [0, 100)
  CHECK(out[1] == 1);
  CHECK(out[2] == 0);
  CHECK(out[3] == 1);
  CHECK(out[4] == 0);
}

// ---- warp collectives -----------------------------------------------------------------------------

TEST_CASE("emulation: every shuffle kind and width, full and partial warps") {
  const char* names[] = {"idx", "up", "down", "xor"};
  for (int threads : {64, 40}) {  // 40: the second warp has 8 lanes
    for (int kind = 0; kind < 4; ++kind)
      for (int width : {32, 16, 8, 4, 1})
        for (int arg : {0, 1, 3, 5, 15, 31}) {
          std::vector<int> out(static_cast<size_t>(threads), -1);
          REQUIRE(mc::launch(shuffle_all, dim3(1), dim3(threads), 0, nullptr, kind, arg, width, out.data()) == cudaSuccess);
          for (int t = 0; t < threads; ++t) {
            const int warp_base = t / 32 * 32;
            const int lanes = threads - warp_base < 32 ? threads - warp_base : 32;
            INFO(names[kind], " width ", width, " arg ", arg, " thread ", t, " of ", threads);
            REQUIRE(out[static_cast<size_t>(t)] == expected_shuffle(kind, t % 32, arg, width, warp_base, lanes));
          }
        }
  }
  // Hand-checked samples: down by 1 in a full warp, xor 16 swaps halves, up by 3 keeps the first 3.
  std::vector<int> out(32);
  REQUIRE(mc::launch(shuffle_all, dim3(1), dim3(32), 0, nullptr, 2, 1, 32, out.data()) == cudaSuccess);
  CHECK(out[0] == 1001);
  CHECK(out[30] == 1031);
  CHECK(out[31] == 1031);
  REQUIRE(mc::launch(shuffle_all, dim3(1), dim3(32), 0, nullptr, 3, 16, 32, out.data()) == cudaSuccess);
  CHECK(out[0] == 1016);
  CHECK(out[20] == 1004);
  REQUIRE(mc::launch(shuffle_all, dim3(1), dim3(32), 0, nullptr, 1, 3, 32, out.data()) == cudaSuccess);
  CHECK(out[2] == 1002);
  CHECK(out[3] == 1000);
}

TEST_CASE("emulation: ballot, any, all, activemask (and a partial warp)") {
  std::vector<int> out(40 * 6, -1);
  REQUIRE(mc::launch(votes, dim3(1), dim3(40), 0, nullptr, out.data()) == cudaSuccess);
  unsigned every_third = 0;
  for (int l = 0; l < 32; l += 3) every_third |= 1u << l;
  for (int t = 0; t < 40; ++t) {
    const int* o = &out[static_cast<size_t>(t * 6)];
    const bool full = t < 32;
    CHECK(static_cast<unsigned>(o[0]) == (full ? every_third : (every_third & 0xffu)));
    CHECK(o[1] == (full ? 1 : 0));  // lane 17 exists only in the full warp
    CHECK(o[2] == 0);
    CHECK(o[3] == 1);
    CHECK(o[4] == 0);               // lane 4 says no in both warps
    CHECK(static_cast<unsigned>(o[5]) == (full ? 0xffffffffu : 0xffu));
  }
}

TEST_CASE("emulation: disjoint masks run separately; exited lanes are not waited for") {
  std::vector<int> out(96, -1);
  REQUIRE(mc::launch(disjoint_masks_and_exits, dim3(1), dim3(32), 0, nullptr, out.data()) == cudaSuccess);
  for (int l = 0; l < 32; ++l) CHECK(out[static_cast<size_t>(l)] == (l ^ 1));
  for (int l = 0; l < 16; ++l) {
    CHECK(out[static_cast<size_t>(32 + l)] == (l < 15 ? 2 * (l + 1) : 2 * l));  // lane 16 has exited: own value
    CHECK(static_cast<unsigned>(out[static_cast<size_t>(64 + l)]) == 0xffffu);
  }
}

TEST_CASE("emulation: shuffles move doubles, half2 and 64-bit integers") {
  std::vector<double> d(32);
  std::vector<half2> h(32);
  std::vector<long long> ll(32);
  REQUIRE(mc::launch(shuffle_types, dim3(1), dim3(32), 0, nullptr, d.data(), h.data(), ll.data()) == cudaSuccess);
  for (int l = 0; l < 32; ++l) {
    CHECK(d[static_cast<size_t>(l)] == 0.5 + (31 - l));
    CHECK(__low2float(h[static_cast<size_t>(l)]) == static_cast<float>(l ^ 3));
    CHECK(__high2float(h[static_cast<size_t>(l)]) == -static_cast<float>(l ^ 3));
    CHECK(ll[static_cast<size_t>(l)] == (1ll << 40) + (l >= 2 ? l - 2 : l));
  }
}

TEST_CASE("emulation: host threads run kernels concurrently, each with its own blocks and __shared__") {
  std::vector<int> a(256 * 4), b(128 * 4);
  std::thread t1([&] { mc::launch(rotate_through_smem, dim3(4), dim3(256), 0, nullptr, a.data(), 300); });
  std::thread t2([&] { mc::launch(rotate_through_smem, dim3(4), dim3(128), 0, nullptr, b.data(), 301); });
  t1.join();
  t2.join();
  for (int i = 0; i < 256 * 4; ++i) REQUIRE(a[static_cast<size_t>(i)] == (i % 256 + 300) % 256);
  for (int i = 0; i < 128 * 4; ++i) REQUIRE(b[static_cast<size_t>(i)] == (i % 128 + 301) % 128);
}

// ---- faults ---------------------------------------------------------------------------------------

TEST_CASE("emulation: deadlocks and misuse give clear errors instead of hanging") {
  std::string m = fault_of([] { mc::launch(early_exit_before_barrier, dim3(2), dim3(64), 0, nullptr); });
  CHECK(m.find("deadlock") != std::string::npos);
  CHECK(m.find("threads 0-2, 4-63 wait in __syncthreads at host_emulation_test.cpp:") != std::string::npos);
  CHECK(m.find("threads 3 have exited") != std::string::npos);
  CHECK(m.find("block (0,0,0)") != std::string::npos);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);

  m = fault_of([] { mc::launch(shuffle_vs_barrier, dim3(1), dim3(32), 0, nullptr); });
  CHECK(m.find("threads 0-15 wait in __shfl_sync (mask 0xffffffff)") != std::string::npos);
  CHECK(m.find("threads 16-31 wait in __syncthreads") != std::string::npos);

  m = fault_of([] { mc::launch(mask_without_self, dim3(1), dim3(32), 0, nullptr); });
  CHECK(m.find("does not include the calling lane 1") != std::string::npos);

  m = fault_of([] { mc::launch(divergent_collectives, dim3(1), dim3(32), 0, nullptr); });
  CHECK(m.find("warp divergence") != std::string::npos);
  CHECK(m.find("__shfl_sync") != std::string::npos);
  CHECK(m.find("__ballot_sync") != std::string::npos);

  m = fault_of([] { mc::launch(throws_in_kernel, dim3(1), dim3(32), 0, nullptr); });
  CHECK(m.find("exception in kernel code: boom") != std::string::npos);
  CHECK(m.find("thread (5,0,0)") != std::string::npos);

  alignas(32) static half A[16 * 32];
  m = fault_of([] { mc::launch(wmma_partial_warp, dim3(1), dim3(16), 0, nullptr, static_cast<const half*>(A)); });
  CHECK(m.find("needs a full warp") != std::string::npos);
  m = fault_of([] { mc::launch(wmma_lane_pointers, dim3(1), dim3(32), 0, nullptr, static_cast<const half*>(A)); });
  CHECK(m.find("lane 7 passes a different pointer") != std::string::npos);
  m = fault_of([] { mc::launch(wmma_lane_exits, dim3(1), dim3(32), 0, nullptr, static_cast<const half*>(A)); });
  CHECK(m.find("lane 31 of warp 0 exited") != std::string::npos);
  m = fault_of([] { mc::launch(wmma_partial_warp, dim3(1), dim3(32), 0, nullptr, static_cast<const half*>(A + 1)); });
  CHECK(m.find("not 256-bit aligned") != std::string::npos);

  // The engine is usable again after faults.
  std::vector<int> out(64);
  CHECK(mc::launch(rotate_through_smem, dim3(1), dim3(64), 0, nullptr, out.data(), 1) == cudaSuccess);
  CHECK(out[63] == 0);
  cudaGetLastError();
}

// ---- WMMA -----------------------------------------------------------------------------------------

TEST_CASE("emulation: wmma tile GEMM equals a CPU matmul (float and half accumulators)") {
  const int M = 32, N = 48, K = 64;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> small(-8, 8);
  // wmma needs 256-bit aligned tiles: device memory (256-byte aligned) as a real program has.
  half *A = nullptr, *Bt = nullptr, *C16 = nullptr;  // B stored col-major: Bt[n*K + k]
  float* C32 = nullptr;
  REQUIRE(cudaMalloc(&A, M * K * sizeof(half)) == cudaSuccess);
  REQUIRE(cudaMalloc(&Bt, N * K * sizeof(half)) == cudaSuccess);
  REQUIRE(cudaMalloc(&C16, M * N * sizeof(half)) == cudaSuccess);
  REQUIRE(cudaMalloc(&C32, M * N * sizeof(float)) == cudaSuccess);
  for (int i = 0; i < M * K; ++i) A[i] = __float2half(small(rng) * 0.125f);
  for (int i = 0; i < N * K; ++i) Bt[i] = __float2half(small(rng) * 0.25f + 0.0625f);
  REQUIRE(mc::launch(samples::wmma_gemm<float>, dim3(N / 16, M / 16), dim3(32), 0, nullptr,
                     A, Bt, C32, M, N, K, false) == cudaSuccess);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      // Same order as the emulation: per 16-wide k step, float accumulation.
      float expect = 0.0f;
      for (int k = 0; k < K; ++k) expect += __half2float(A[i * K + k]) * __half2float(Bt[j * K + k]);
      REQUIRE(C32[i * N + j] == expect);
    }
  // Half accumulator, starting from C: rounded to half after every mma (16 k's).
  for (int i = 0; i < M * N; ++i) C16[i] = __float2half(0.5f * (i % 7));
  const std::vector<__half> C16_in(C16, C16 + M * N);
  REQUIRE(mc::launch(samples::wmma_gemm<half>, dim3(N / 16, M / 16), dim3(32), 0, nullptr,
                     A, Bt, C16, M, N, K, true) == cudaSuccess);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      __half c = C16_in[static_cast<size_t>(i * N + j)];
      for (int k0 = 0; k0 < K; k0 += 16) {
        float acc = __half2float(c);
        for (int k = k0; k < k0 + 16; ++k) acc += __half2float(A[i * K + k]) * __half2float(Bt[j * K + k]);
        c = __float2half(acc);
      }
      REQUIRE(bits(C16[i * N + j]) == bits(c));
    }
  for (void* p : {static_cast<void*>(A), static_cast<void*>(Bt), static_cast<void*>(C16), static_cast<void*>(C32)})
    CHECK(cudaFree(p) == cudaSuccess);
}

TEST_CASE("emulation: wmma col-major A, row-major B, element-wise access, col-major store") {
  alignas(32) static half A[256], B[256];
  alignas(32) static float C[256], D[256];
  for (int i = 0; i < 256; ++i) {
    A[i] = __float2half(static_cast<float>((i * 7) % 11 - 5));
    B[i] = __float2half(static_cast<float>((i * 5) % 13 - 6) * 0.5f);
    C[i] = static_cast<float>(i % 9);
  }
  REQUIRE(mc::launch(wmma_other_layouts, dim3(1), dim3(32), 0, nullptr, static_cast<const half*>(A),
                     static_cast<const half*>(B), static_cast<const float*>(C), static_cast<float*>(D)) == cudaSuccess);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = 2.0f * C[i * 16 + j];
      for (int k = 0; k < 16; ++k) acc += __half2float(A[k * 16 + i]) * __half2float(B[k * 16 + j]);
      REQUIRE(D[j * 16 + i] == acc);
    }
  alignas(32) static float E[256];
  REQUIRE(mc::launch(wmma_many_tiles, dim3(1), dim3(64), 0, nullptr, static_cast<const half*>(A),
                     static_cast<const half*>(B), static_cast<float*>(E)) == cudaSuccess);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < 16; ++k) acc += __half2float(A[i * 16 + k]) * __half2float(B[j * 16 + k]);
      REQUIRE(E[i * 16 + j] == acc);
    }
}

TEST_CASE("emulation: wmma with 8-bit inputs accumulates exactly in int") {
  alignas(32) static signed char A[256], B[256];
  alignas(32) static int C[256];
  for (int i = 0; i < 256; ++i) {
    A[i] = static_cast<signed char>(i % 2 ? 127 - i % 17 : -128 + i % 13);
    B[i] = static_cast<signed char>((i * 37) % 256 - 128);
  }
  REQUIRE(mc::launch(wmma_int8, dim3(1), dim3(32), 0, nullptr, static_cast<const signed char*>(A),
                     static_cast<const signed char*>(B), static_cast<int*>(C)) == cudaSuccess);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      int expect = 1000;
      for (int k = 0; k < 16; ++k) expect += A[i * 16 + k] * B[j * 16 + k];
      REQUIRE(C[i * 16 + j] == expect);
    }
}

// ---- the sample kernels -----------------------------------------------------------------------------

TEST_CASE("emulation: sample kernels (block reduction, dynamic smem + cp.async, half2, Params template)") {
  const int n = 1000;
  std::vector<float> X(1024);
  for (int i = 0; i < 1024; ++i) X[static_cast<size_t>(i)] = static_cast<float>(i % 17) - 8.0f;
  std::vector<float> Y(4, -1.0f);
  REQUIRE(mc::launch(samples::block_sum, dim3(4), dim3(256), 0, nullptr, X.data(), Y.data(), n) == cudaSuccess);
  for (int b = 0; b < 4; ++b) {
    float expect = 0.0f;
    for (int i = b * 256; i < (b + 1) * 256 && i < n; ++i) expect += X[static_cast<size_t>(i)];
    CHECK(Y[static_cast<size_t>(b)] == expect);  // integers: exact in any order
  }

  std::vector<float> R(512, 0.0f);
  REQUIRE(mc::launch(samples::reverse_blocks, dim3(2), dim3(64), 64 * 16, nullptr, X.data(), R.data(), 512) == cudaSuccess);
  for (int i = 0; i < 512; ++i) CHECK(R[static_cast<size_t>(i)] == X[static_cast<size_t>(i / 256 * 256 + 255 - i % 256)]);

  std::vector<half2> H(64), HY(64);
  for (int i = 0; i < 64; ++i) H[static_cast<size_t>(i)] = __floats2half2_rn(i * 0.25f - 4.0f, 3.0f - i * 0.125f);
  const half2 alpha = __floats2half2_rn(1.5f, -2.0f), beta = __floats2half2_rn(0.5f, 1.0f);
  REQUIRE(mc::launch(samples::half2_axpb_relu, dim3(2), dim3(40), 0, nullptr, H.data(), HY.data(), alpha, beta, 64) == cudaSuccess);
  for (int i = 0; i < 64; ++i) {
    const float lo = std::max(1.5f * (i * 0.25f - 4.0f) + 0.5f, 0.0f);  // exact in half for these values
    const float hi = std::max(-2.0f * (3.0f - i * 0.125f) + 1.0f, 0.0f);
    CHECK(__low2float(HY[static_cast<size_t>(i)]) == lo);
    CHECK(__high2float(HY[static_cast<size_t>(i)]) == hi);
  }

  using Row = samples::RowSoftmaxSum<128, samples::ScaleBias>;
  std::vector<float> Z(8 * 100, 0.0f), S(8, 0.0f);
  REQUIRE(mc::launch(samples::run_kernel<Row>, dim3(8), dim3(128), 0, nullptr,
                     Row::Params{Z.data(), S.data(), 100, samples::ScaleBias{2.0f, 1.0f}}) == cudaSuccess);
  for (float s : S) CHECK(s == 201.0f);  // exp(0) * 100 columns, *2 + 1

  int count = 0;
  REQUIRE(mc::launch(samples::count_positive, dim3(4), dim3(64), 0, nullptr, X.data(), &count, 200) == cudaSuccess);
  int expect = 0;
  for (int i = 0; i < 200; ++i) expect += X[static_cast<size_t>(i)] > 0.0f;
  CHECK(count == expect);
}

TEST_CASE("emulation: cp.async copies land at the wait that covers them") {
  alignas(16) float X[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float out[6] = {};
  REQUIRE(mc::launch(cp_async_ordering, dim3(1), dim3(1), 64, nullptr, static_cast<const float*>(X), out) == cudaSuccess);
  CHECK(std::isnan(out[0]));  // dynamic shared memory starts poisoned (0xff bytes)
  CHECK(out[1] == 1.0f);
  CHECK(std::isnan(out[2]));
  CHECK(out[3] == 5.0f);
  CHECK(out[4] == 6.0f);
  CHECK(out[5] == 0.0f);      // zero-filled beyond src_bytes
}

TEST_CASE("emulation: launch configuration and the dynamic shared memory limit") {
  CHECK(mc::launch(noop_kernel, dim3(1), dim3(2048), 0, nullptr) == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(mc::launch(noop_kernel, dim3(0), dim3(32), 0, nullptr) == cudaErrorInvalidConfiguration);
  CHECK(mc::launch(noop_kernel, dim3(1), dim3(32, 1, 65), 0, nullptr) == cudaErrorInvalidConfiguration);
  float out = 0.0f;
  const size_t bytes = 64 * 1024;  // above the default 48 KiB
  CHECK(mc::launch(big_dynamic_smem, dim3(1), dim3(1), bytes, nullptr, &out) == cudaErrorInvalidValue);
  cudaGetLastError();
  CHECK(cudaFuncSetAttribute(big_dynamic_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, 1 << 30) == cudaErrorInvalidValue);
  cudaGetLastError();
  REQUIRE(cudaFuncSetAttribute(big_dynamic_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)) == cudaSuccess);
  CHECK(mc::launch(big_dynamic_smem, dim3(1), dim3(1), bytes, nullptr, &out) == cudaSuccess);
  CHECK(out == 3.0f);
}

// ---- runtime API ----------------------------------------------------------------------------------

TEST_CASE("emulation: device, memory and errors") {
  int count = 0, major = 0;
  CHECK(cudaGetDeviceCount(&count) == cudaSuccess);
  CHECK(count == 1);
  cudaDeviceProp prop;
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  CHECK(std::string(prop.name).find("host emulation") != std::string::npos);
  CHECK(prop.warpSize == 32);
  CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  CHECK(major == prop.major);
  CHECK(cudaSetDevice(0) == cudaSuccess);
  CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  CHECK(std::string(cudaGetErrorString(cudaErrorInvalidValue)) == "invalid argument");
  CHECK(std::string(cudaGetErrorName(cudaErrorLaunchFailure)) == "cudaErrorLaunchFailure");

  float* d = nullptr;
  REQUIRE(cudaMalloc(&d, 16 * sizeof(float)) == cudaSuccess);
  CHECK(reinterpret_cast<uintptr_t>(d) % 256 == 0);
  CHECK(std::isnan(d[0]));  // fresh device memory is poisoned
  const float host[4] = {1, 2, 3, 4};
  CHECK(cudaMemset(d, 0, 16 * sizeof(float)) == cudaSuccess);
  CHECK(cudaMemcpy(d + 2, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
  float back[6] = {};
  CHECK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back[0] == 0.0f);
  CHECK(back[2] == 1.0f);
  CHECK(back[5] == 4.0f);
  // 7: no direction, yet a value of the enum's range (0-7 for enumerators 0-4); beyond it the cast is undefined
  CHECK(cudaMemcpy(back, d, 4, static_cast<cudaMemcpyKind>(7)) == cudaErrorInvalidMemcpyDirection);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFree(d) == cudaErrorInvalidValue);
  CHECK(cudaFree(nullptr) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("emulation: stream capture records in order; graphs replay it") {
  cudaStream_t s = nullptr, s2 = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&s2) == cudaSuccess);
  cudaEvent_t fork = nullptr, join = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&join, cudaEventDisableTiming) == cudaSuccess);
  int log[16] = {0};
  int src = 42, dst = 0;
  int tag = 1;

  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  cudaStreamCaptureStatus st;
  CHECK(cudaStreamIsCapturing(s, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusActive);
  CHECK(mc::launch(append_tag, dim3(1), dim3(1), 0, s, log, tag) == cudaSuccess);
  tag = 99;  // parameters were copied at capture
  CHECK(cudaEventRecord(fork, s) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(s2, fork, 0) == cudaSuccess);  // s2 joins the capture
  CHECK(mc::launch(append_tag, dim3(1), dim3(1), 0, s2, log, 2) == cudaSuccess);
  CHECK(cudaEventRecord(join, s2) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(s, join, 0) == cudaSuccess);
  CHECK(cudaMemcpyAsync(&dst, &src, sizeof src, cudaMemcpyDefault, s) == cudaSuccess);
  CHECK(mc::launch(append_tag, dim3(1), dim3(1), 0, s, log, 3) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();
  CHECK(log[0] == 0);  // nothing ran during capture
  CHECK(dst == 0);
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(s2, &graph) == cudaErrorStreamCaptureUnmatched);  // only the origin ends it
  cudaGetLastError();
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  CHECK(cudaStreamIsCapturing(s2, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusNone);
  size_t nodes = 0;
  CHECK(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess);
  CHECK(nodes == 4);

  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  src = 7;  // copies read their source at replay
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s2) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(log[0] == 6);
  const int order[6] = {1, 2, 3, 1, 2, 3};
  for (int i = 0; i < 6; ++i) CHECK(log[1 + i] == order[i]);
  CHECK(dst == 7);

  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  CHECK(cudaGraphLaunch(exec, s) == cudaErrorInvalidResourceHandle);
  CHECK(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();
  CHECK(cudaEventDestroy(fork) == cudaSuccess);
  CHECK(cudaEventDestroy(join) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamDestroy(s2) == cudaSuccess);
}

// A fork (s2 from s), `first` on s then `second` on s2, the join; with `ordered`, s2 waits for s's
// event after `first`. Returns the order the replay ran them in (as append_tag logs it).
std::vector<int> fork_join_order(bool ordered) {
  cudaStream_t s = nullptr, s2 = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t ev[3] = {};
  for (cudaEvent_t& e : ev) REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
  int log[8] = {0};
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaEventRecord(ev[0], s) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(s2, ev[0], 0) == cudaSuccess);
  CHECK(mc::launch(append_tag, dim3(1), dim3(1), 0, s, log, 1) == cudaSuccess);
  CHECK(cudaEventRecord(ev[1], s) == cudaSuccess);
  if (ordered) CHECK(cudaStreamWaitEvent(s2, ev[1], 0) == cudaSuccess);
  CHECK(mc::launch(append_tag, dim3(1), dim3(1), 0, s2, log, 2) == cudaSuccess);
  CHECK(cudaEventRecord(ev[2], s2) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(s, ev[2], 0) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
  for (cudaEvent_t e : ev) CHECK(cudaEventDestroy(e) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamDestroy(s2) == cudaSuccess);
  REQUIRE(log[0] == 2);
  return {log[1], log[2]};
}

TEST_CASE("emulation: interleaved replays respect only the recorded events") {
  const std::vector<int> in_order = {1, 2};
  CHECK(fork_join_order(false) == in_order);  // issue order without MODELC_EMU_INTERLEAVE
  int unordered_swapped = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    mc::host::set_interleaving(true, seed);
    CHECK(fork_join_order(true) == in_order);  // the event orders them, whatever the seed
    mc::host::set_interleaving(true, seed);
    if (fork_join_order(false) != in_order) ++unordered_swapped;  // the same seed, the event dropped
  }
  mc::host::set_interleaving(false, 0);
  CHECK(unordered_swapped > 0);  // a missing event shows: the reader ran before the writer
}

TEST_CASE("emulation: a capture whose other stream does not join back fails to end") {
  cudaStream_t s = nullptr, s2 = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t fork = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming) == cudaSuccess);
  int log[4] = {0};
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaEventRecord(fork, s) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(s2, fork, 0) == cudaSuccess);
  CHECK(mc::launch(append_tag, dim3(1), dim3(1), 0, s2, log, 1) == cudaSuccess);
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureUnjoined);
  CHECK(graph == nullptr);
  cudaGetLastError();
  cudaStreamCaptureStatus st;
  CHECK(cudaStreamIsCapturing(s2, &st) == cudaSuccess);
  CHECK(st == cudaStreamCaptureStatusNone);
  CHECK(log[0] == 0);
  CHECK(cudaEventDestroy(fork) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamDestroy(s2) == cudaSuccess);
}

TEST_CASE("emulation: events time host work with a steady clock") {
  cudaEvent_t a = nullptr, b = nullptr, untimed = nullptr;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorInvalidResourceHandle);  // not recorded yet
  CHECK(cudaEventRecord(a, nullptr) == cudaSuccess);
  CHECK(cudaLaunchHostFunc(nullptr, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr) ==
        cudaSuccess);
  CHECK(cudaEventRecord(b, nullptr) == cudaSuccess);
  CHECK(cudaEventSynchronize(b) == cudaSuccess);
  CHECK(cudaEventQuery(b) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  CHECK(ms >= 19.0f);
  CHECK(ms < 2000.0f);
  CHECK(cudaEventRecord(untimed, nullptr) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, a, untimed) == cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  CHECK(cudaEventDestroy(a) == cudaSuccess);
  CHECK(cudaEventDestroy(b) == cudaSuccess);
  CHECK(cudaEventDestroy(untimed) == cudaSuccess);
}

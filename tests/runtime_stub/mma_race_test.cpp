// Host emulation of ldmatrix / mma.sync (runtime_stub/host/mma.h), exact per lane, and the
// shared-memory race check (runtime_stub/host/engine.h).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "device.h"
#include "fault_of.h"

namespace {

std::string site(int line) { return "mma_race_test.cpp:" + std::to_string(line); }

// ---- ldmatrix ------------------------------------------------------------------------------------

// The code of element (row, col) of matrix i: its bits, unique per element.
unsigned short code(int i, int row, int col) { return static_cast<unsigned short>(0x1000 + i * 64 + row * 8 + col); }

constexpr int kLd = 24;  // halves per staged row: 48 bytes, 16-byte aligned rows

// Stages 4 matrices of 8 x 8 codes (matrix i at rows 8i.., row pitch kLd), then every lane runs
// ldmatrix<N, Trans>; lanes beyond 8N give a misaligned address, which must be ignored.
template <int N, bool Trans>
__global__ void ldmatrix_kernel(const unsigned short* codes, unsigned* out) {
  __shared__ __align__(16) unsigned short s[32 * kLd];
  const int l = static_cast<int>(threadIdx.x);
  for (int e = l; e < 4 * 64; e += 32) mc::st_shared(&s[(e / 8) * kLd + e % 8], codes[e]);
  __syncthreads();
  const unsigned short* row = l < 8 * N ? &s[l * kLd] : &s[1];
  unsigned r[N];
  mc::ldmatrix<N, Trans>(r, row);
  for (int i = 0; i < N; ++i) out[l * 4 + i] = r[i];
}

template <int N, bool Trans>
void check_ldmatrix() {
  std::vector<unsigned short> codes(4 * 64);
  for (int i = 0; i < 4; ++i)
    for (int r = 0; r < 8; ++r)
      for (int c = 0; c < 8; ++c) codes[static_cast<size_t>(i * 64 + r * 8 + c)] = code(i, r, c);
  std::vector<unsigned> out(32 * 4, 0);
  REQUIRE(mc::launch(ldmatrix_kernel<N, Trans>, dim3(1), dim3(32), 0, nullptr,
                     static_cast<const unsigned short*>(codes.data()), out.data()) == cudaSuccess);
  // PTX ISA: lane l holds (row l / 4, columns 2 (l % 4) and + 1) of each matrix; .trans: the
  // matrix transposed, (rows 2 (l % 4) and + 1, column l / 4). The lower element in the low half.
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < N; ++i) {
      const int a = l / 4, b = 2 * (l % 4);
      const unsigned lo = Trans ? code(i, b, a) : code(i, a, b);
      const unsigned hi = Trans ? code(i, b + 1, a) : code(i, a, b + 1);
      INFO("x" << N << (Trans ? ".trans" : "") << " lane " << l << " register " << i);
      CHECK(out[static_cast<size_t>(l * 4 + i)] == (lo | (hi << 16)));
    }
}

TEST_CASE("emulation: ldmatrix x1 / x2 / x4, plain and .trans, gives each lane its PTX registers") {
  check_ldmatrix<1, false>();
  check_ldmatrix<2, false>();
  check_ldmatrix<4, false>();
  check_ldmatrix<1, true>();
  check_ldmatrix<2, true>();
  check_ldmatrix<4, true>();
}

__global__ void ldmatrix_misaligned(unsigned* out) {
  __shared__ __align__(16) unsigned short s[8 * kLd];
  const int l = static_cast<int>(threadIdx.x);
  unsigned r[1];
  mc::ldmatrix<1>(r, &s[l * kLd % (8 * kLd) + (l == 3 ? 4 : 0)]);  // lane 3: 8-byte aligned only
  out[l] = r[0];
}

TEST_CASE("emulation: a misaligned ldmatrix row address faults") {
  std::vector<unsigned> out(32);
  const std::string e = fault_of([&] { mc::launch(ldmatrix_misaligned, dim3(1), dim3(32), 0, nullptr, out.data()); });
  INFO(e);
  CHECK(e.find("lane 3's row address") != std::string::npos);
  CHECK(e.find("not 16-byte aligned") != std::string::npos);
  CHECK(e.find("ldmatrix_misaligned") != std::string::npos);  // the kernel is named
}

// ---- mma.sync --------------------------------------------------------------------------------------

// Registers from memory by the PTX layouts (g = lane / 4, t = lane % 4), written out here.
unsigned pair(const half* p) { return __half_as_ushort(p[0]) | (static_cast<unsigned>(__half_as_ushort(p[1])) << 16); }
unsigned pack(float lo, float hi) {
  return __half_as_ushort(__float2half(lo)) | (static_cast<unsigned>(__half_as_ushort(__float2half(hi))) << 16);
}
float low(unsigned r) { return __half2float(__ushort_as_half(static_cast<unsigned short>(r & 0xffffu))); }
float high(unsigned r) { return __half2float(__ushort_as_half(static_cast<unsigned short>(r >> 16))); }

// D (16 x 8) = A (16 x K, row-major) x B (stored [n][k]) + C, one warp; each lane loads its
// registers from global memory by the documented layout. Acc: float, or unsigned (FP16 pairs).
template <int K, class Acc>
__global__ void mma_kernel(const half* A, const half* Bt, const float* C, float* D) {
  const int l = static_cast<int>(threadIdx.x), g = l / 4, t = 2 * (l % 4);
  unsigned a[K / 4], b[K / 8];
  for (int h = 0; h < K / 8; ++h) {
    a[2 * h] = pair(A + g * K + 8 * h + t);
    a[2 * h + 1] = pair(A + (g + 8) * K + 8 * h + t);
    b[h] = pair(Bt + g * K + 8 * h + t);
  }
  const float c4[4] = {C[g * 8 + t], C[g * 8 + t + 1], C[(g + 8) * 8 + t], C[(g + 8) * 8 + t + 1]};
  float d4[4];
  if constexpr (std::is_same<Acc, float>::value) {
    float d[4] = {c4[0], c4[1], c4[2], c4[3]};
    if constexpr (K == 16) {
      mc::mma_m16n8k16(d, a, b, d);  // d aliases c
    } else {
      mc::mma_m16n8k8(d, a, b[0], d);
    }
    for (int e = 0; e < 4; ++e) d4[e] = d[e];
  } else {
    unsigned d[2] = {pack(c4[0], c4[1]), pack(c4[2], c4[3])};
    if constexpr (K == 16) {
      mc::mma_m16n8k16(d, a, b, d);
    } else {
      mc::mma_m16n8k8(d, a, b[0], d);
    }
    d4[0] = low(d[0]);
    d4[1] = high(d[0]);
    d4[2] = low(d[1]);
    d4[3] = high(d[1]);
  }
  D[g * 8 + t] = d4[0];
  D[g * 8 + t + 1] = d4[1];
  D[(g + 8) * 8 + t] = d4[2];
  D[(g + 8) * 8 + t + 1] = d4[3];
}

struct Problem {
  int K;
  std::vector<half> A, Bt;
  std::vector<float> C;
};

Problem random_problem(int K, bool half_c, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  Problem p{K, {}, {}, {}};
  for (int i = 0; i < 16 * K; ++i) p.A.push_back(__float2half(u(rng)));
  for (int i = 0; i < 8 * K; ++i) p.Bt.push_back(__float2half(u(rng)));
  for (int i = 0; i < 16 * 8; ++i) p.C.push_back(half_c ? __half2float(__float2half(u(rng))) : u(rng));
  return p;
}

// The expected D: products exact, summed in float in k order from C, rounded to half after each 8
// k with FP16 accumulators. Checked against a double sum within the rounding it allows.
std::vector<float> reference(const Problem& p, bool half_acc) {
  std::vector<float> D(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = p.C[static_cast<size_t>(i * 8 + j)];
      double exact = acc;
      for (int k = 0; k < p.K; ++k) {
        const float prod = __half2float(p.A[static_cast<size_t>(i * p.K + k)]) * __half2float(p.Bt[static_cast<size_t>(j * p.K + k)]);
        acc += prod;
        exact += prod;
        if (half_acc && k % 8 == 7) acc = __half2float(__float2half(acc));
      }
      REQUIRE(std::fabs(acc - exact) <= (half_acc ? 4e-3 : 1e-5) * (1.0 + std::fabs(exact)));
      D[static_cast<size_t>(i * 8 + j)] = acc;
    }
  return D;
}

template <int K, class Acc>
void check_mma(unsigned seed) {
  constexpr bool half_acc = !std::is_same<Acc, float>::value;
  const Problem p = random_problem(K, half_acc, seed);
  std::vector<float> D(16 * 8, -1.0f);
  REQUIRE(mc::launch(mma_kernel<K, Acc>, dim3(1), dim3(32), 0, nullptr, p.A.data(), p.Bt.data(), p.C.data(), D.data()) ==
          cudaSuccess);
  const std::vector<float> expect = reference(p, half_acc);
  for (int e = 0; e < 16 * 8; ++e) {
    INFO("m16n8k" << K << (half_acc ? " f16" : " f32") << " element (" << e / 8 << ", " << e % 8 << ")");
    CHECK(D[static_cast<size_t>(e)] == expect[static_cast<size_t>(e)]);
  }
}

TEST_CASE("emulation: mma m16n8k16 and m16n8k8 (FP32 and FP16 accumulators) equal the matmul, exactly") {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    check_mma<16, float>(seed);
    check_mma<16, unsigned>(seed);
    check_mma<8, float>(seed);
    check_mma<8, unsigned>(seed);
  }
}

// A 16 x 16 x 8 product staged in shared memory and loaded with ldmatrix (A: x4, B: x2), as a
// tensor-core main loop does; Variant 1 loads A with .trans where the plain form belongs, Variant
// 2 gives row addresses shifted by one lane: both put elements in the wrong lanes.
template <int Variant>
__global__ void ldmatrix_gemm(const half* A, const half* Bt, float* D) {
  __shared__ __align__(16) half sa[16 * kLd];
  __shared__ __align__(16) half sb[8 * kLd];
  const int l = static_cast<int>(threadIdx.x);
  for (int e = l; e < 16 * 16; e += 32) mc::st_shared(&sa[(e / 16) * kLd + e % 16], A[e]);
  for (int e = l; e < 8 * 16; e += 32) mc::st_shared(&sb[(e / 16) * kLd + e % 16], Bt[e]);
  __syncthreads();
  const int i = l / 8, j = Variant == 2 ? (l + 1) % 8 : l % 8;
  unsigned a[4], b[2];
  mc::ldmatrix<4, Variant == 1>(a, &sa[(j + 8 * (i & 1)) * kLd + 8 * (i >> 1)]);  // a0..a3: (m, k) quarters
  mc::ldmatrix<2>(b, &sb[(l % 8) * kLd + 8 * (i & 1)]);                          // b0, b1: k halves
  float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mc::mma_m16n8k16(d, a, b, d);
  const int g = l / 4, t = 2 * (l % 4);
  D[g * 8 + t] = d[0];
  D[g * 8 + t + 1] = d[1];
  D[(g + 8) * 8 + t] = d[2];
  D[(g + 8) * 8 + t + 1] = d[3];
}

template <int Variant>
std::vector<float> run_ldmatrix_gemm(const Problem& p) {
  std::vector<float> D(16 * 8, -1.0f);
  REQUIRE(mc::launch(ldmatrix_gemm<Variant>, dim3(1), dim3(32), 0, nullptr, p.A.data(), p.Bt.data(), D.data()) ==
          cudaSuccess);
  return D;
}

TEST_CASE("emulation: ldmatrix + mma give the product; a wrong lane mapping gives a wrong one") {
  Problem p = random_problem(16, false, 7);
  std::fill(p.C.begin(), p.C.end(), 0.0f);
  const std::vector<float> expect = reference(p, false);
  CHECK(run_ldmatrix_gemm<0>(p) == expect);
  CHECK(run_ldmatrix_gemm<1>(p) != expect);  // .trans where the plain form belongs
  CHECK(run_ldmatrix_gemm<2>(p) != expect);  // rows shifted by one lane
}

// ---- the race check ---------------------------------------------------------------------------------

int g_line_a = 0, g_line_b = 0;  // the lines of the two accesses a kernel reports

// Thread 0 writes a word, thread 33 (another warp) reads it: a race unless a barrier lies between.
__global__ void race_write_read(int* out, bool barrier) {
  __shared__ int s[64];
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) { g_line_a = __LINE__; mc::st_shared(&s[5], 42); }
  if (barrier) __syncthreads();
  if (t == 33) { g_line_b = __LINE__; out[0] = mc::ld_shared(&s[5]); }
}

TEST_CASE("race check: a write and another warp's read with no barrier between are reported") {
  int out = 0;
  const std::string e = fault_of([&] { mc::launch(race_write_read, dim3(1), dim3(64), 0, nullptr, &out, false); });
  INFO(e);
  CHECK(e.find("race_write_read") != std::string::npos);
  CHECK(e.find("block (0,0,0)") != std::string::npos);
  CHECK(e.find("shared-memory race") != std::string::npos);
  CHECK(e.find("written by thread (0,0,0) in mc::st_shared at " + site(g_line_a)) != std::string::npos);
  CHECK(e.find("read by thread (33,0,0) in mc::ld_shared at " + site(g_line_b)) != std::string::npos);

  REQUIRE(mc::launch(race_write_read, dim3(1), dim3(64), 0, nullptr, &out, true) == cudaSuccess);
  CHECK(out == 42);
  cudaGetLastError();
}

// Lane 0 writes, lane 5 of the same warp reads: ordered by a __syncwarp, a race without.
__global__ void warp_write_read(int* out, bool syncwarp) {
  __shared__ int s[32];
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) mc::st_shared(&s[3], 9);
  if (syncwarp) __syncwarp();
  if (t == 5) out[0] = mc::ld_shared(&s[3]);
}

TEST_CASE("race check: lanes of a warp are ordered by __syncwarp, not without it") {
  int out = 0;
  REQUIRE(mc::launch(warp_write_read, dim3(1), dim3(32), 0, nullptr, &out, true) == cudaSuccess);
  CHECK(out == 9);
  const std::string e = fault_of([&] { mc::launch(warp_write_read, dim3(1), dim3(32), 0, nullptr, &out, false); });
  INFO(e);
  CHECK(e.find("written by thread (0,0,0)") != std::string::npos);
  CHECK(e.find("read by thread (5,0,0)") != std::string::npos);
  cudaGetLastError();
}

// Threads 0 and 32 (two warps) write the two halves of one word, then thread 33 reads thread 0's
// half (race: another warp, no barrier) or thread 32's (its own warp, after a __syncwarp).
__global__ void halves_of_a_word(float* out, bool race) {
  __shared__ __align__(4) half s[2];
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) mc::st_shared(&s[0], __float2half(1.0f));
  if (t == 32) mc::st_shared(&s[1], __float2half(2.0f));
  __syncwarp();
  if (t == 33) out[0] = __half2float(mc::ld_shared(&s[race ? 0 : 1]));
}

TEST_CASE("race check: bytes count, not words (two warps write the two halves of one word)") {
  float out = 0.0f;
  REQUIRE(mc::launch(halves_of_a_word, dim3(1), dim3(64), 0, nullptr, &out, false) == cudaSuccess);
  CHECK(out == 2.0f);
  const std::string e = fault_of([&] { mc::launch(halves_of_a_word, dim3(1), dim3(64), 0, nullptr, &out, true); });
  INFO(e);
  CHECK(e.find("written by thread (0,0,0)") != std::string::npos);
  CHECK(e.find("read by thread (33,0,0)") != std::string::npos);
  cudaGetLastError();
}

// Warp 0 stores an accumulator tile to shared memory; thread 40 reads an element of it.
__global__ void wmma_store_read(float* out, bool barrier) {
  __shared__ __align__(32) float s[16 * 16];
  if (threadIdx.x < 32) {
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c;
    nvcuda::wmma::fill_fragment(c, 2.5f);
    g_line_a = __LINE__; nvcuda::wmma::store_matrix_sync(s, c, 16, nvcuda::wmma::mem_row_major);
  }
  if (barrier) __syncthreads();
  if (threadIdx.x == 40) out[0] = mc::ld_shared(&s[17]);
}

TEST_CASE("race check: a wmma tile in shared memory is the warp's access") {
  float out = 0.0f;
  const std::string e = fault_of([&] { mc::launch(wmma_store_read, dim3(1), dim3(64), 0, nullptr, &out, false); });
  INFO(e);
  CHECK(e.find("written by warp 0 (threads 0-31) in wmma::store_matrix_sync at " + site(g_line_a)) != std::string::npos);
  CHECK(e.find("read by thread (40,0,0)") != std::string::npos);
  REQUIRE(mc::launch(wmma_store_read, dim3(1), dim3(64), 0, nullptr, &out, true) == cudaSuccess);
  CHECK(out == 2.5f);
  cudaGetLastError();
}

// Thread 0 issues a cp.async; thread 33 reads its destination after a barrier, before thread 0
// waits for it (the second barrier keeps thread 0's wait after the read in the emulation).
__global__ void cp_async_read_before_wait(const float* X, float* out) {
  __shared__ __align__(16) float s[4];
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    g_line_a = __LINE__; mc::cp_async_16(s, X);
    mc::cp_async_commit();
  }
  __syncthreads();
  if (t == 33) { g_line_b = __LINE__; out[0] = mc::ld_shared(&s[2]); }
  __syncthreads();
  mc::cp_async_wait_all();
}

TEST_CASE("race check: a cp.async destination read before its wait is reported") {
  alignas(16) const float X[4] = {1, 2, 3, 4};
  float out = 0.0f;
  const std::string e =
      fault_of([&] { mc::launch(cp_async_read_before_wait, dim3(1), dim3(64), 0, nullptr, X, &out); });
  INFO(e);
  CHECK(e.find("cp.async destination read before its wait") != std::string::npos);
  CHECK(e.find("cp.async by thread (0,0,0) in mc::cp_async_16 at " + site(g_line_a)) != std::string::npos);
  CHECK(e.find("read by thread (33,0,0) in mc::ld_shared at " + site(g_line_b)) != std::string::npos);
  cudaGetLastError();
}

constexpr int kSlice = 256;  // floats per pipeline slice: 16 bytes per thread of 64

// A 3-stage cp.async pipeline over `slices` slices of X; each thread sums, from every slice, the
// chunk another warp's thread copied. BarrierFirst: one barrier per slice, after the wait and
// before the prefetch into the stage read in the previous slice (correct). Otherwise the barrier
// follows the prefetch, which may overwrite a stage another warp still reads.
template <bool BarrierFirst>
__global__ void pipeline(const float* X, float* out, int slices) {
  __shared__ __align__(16) float stage[3][kSlice];
  const int t = static_cast<int>(threadIdx.x);
  float sum = 0.0f;
  for (int s = 0; s < 2; ++s) {
    if (s < slices) mc::cp_async_16(&stage[s % 3][t * 4], X + s * kSlice + t * 4);
    mc::cp_async_commit();
  }
  for (int s = 0; s < slices; ++s) {
    mc::cp_async_wait<1>();  // slice s has landed (this thread's part of it)
    if (BarrierFirst) __syncthreads();
    if (s + 2 < slices) mc::cp_async_16(&stage[(s + 2) % 3][t * 4], X + (s + 2) * kSlice + t * 4);
    mc::cp_async_commit();
    if (!BarrierFirst) __syncthreads();
    const int other = (t + 33) % 64;
    for (int j = 0; j < 4; ++j) sum += mc::ld_shared(&stage[s % 3][other * 4 + j]);
  }
  out[t] = sum;
}

TEST_CASE("race check: a correct 3-stage cp.async pipeline passes; the barrier after the prefetch is reported") {
  const int slices = 6;
  std::vector<float> X(static_cast<size_t>(slices * kSlice));
  for (size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>(i % 97);
  std::vector<float> out(64, -1.0f);
  REQUIRE(mc::launch(pipeline<true>, dim3(2), dim3(64), 0, nullptr, static_cast<const float*>(X.data()), out.data(),
                     slices) == cudaSuccess);
  for (int t = 0; t < 64; ++t) {
    float expect = 0.0f;
    for (int s = 0; s < slices; ++s)
      for (int j = 0; j < 4; ++j) expect += X[static_cast<size_t>(s * kSlice + ((t + 33) % 64) * 4 + j)];
    CHECK(out[static_cast<size_t>(t)] == expect);
  }
  const std::string e = fault_of([&] {
    mc::launch(pipeline<false>, dim3(2), dim3(64), 0, nullptr, static_cast<const float*>(X.data()), out.data(), slices);
  });
  INFO(e);
  CHECK(e.find("pipeline<false>") != std::string::npos);
  CHECK(e.find("cp.async destination read before its wait") != std::string::npos);
  cudaGetLastError();
}

}  // namespace

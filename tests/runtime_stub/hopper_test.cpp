// The host emulation of Hopper's asynchronous machinery (runtime_stub/host/hopper.h): wgmma with its
// shared-memory matrix descriptors in every layout and swizzle and its accumulator fragments,
// fence / commit / wait, mbarrier phases, TMA tiled loads and stores from tensor maps, the proxy
// fence, setmaxnreg, grid flags. Operands are placed by this file's own reading of the PTX ISA's
// layouts (written per row: "16-byte chunk c of row r lands at chunk c ^ f(r)"), not through the
// emulation's address function; every planted error (a wrong swizzle, stride or base offset in a
// descriptor, an element in the wrong lane, a missing wait_group or fence, a read before the wait,
// a wait on the wrong phase, a stage refilled too early) gives a wrong answer or a reported fault.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device.h"
#include "fault_of.h"

namespace {

using mc::Swizzle;

// ---- this file's layouts --------------------------------------------------------------------------

/// Byte offset, from a 1024-aligned base, of element (mn, k) of an operand of e-byte elements in
/// the PTX ISA's canonical layouts, per row of the swizzle atom: K-major atoms are 8 rows (mn) of
/// `span` bytes of k; MN-major atoms are 8 rows (k) of `span` bytes of mn; a row's 16-byte chunk c
/// is stored at chunk c ^ (row / (8 / (span / 16))) — rows 0-7 for 128 bytes, pairs for 64, fours for
/// 32. No swizzle: 8 x 16-byte core matrices.
size_t place(int span, bool mn_major, int e, int mn, int k, unsigned lbo, unsigned sbo) {
  if (!mn_major) {
    const int kb = k * e;
    if (span == 0) return (mn / 8) * sbo + (kb / 16) * lbo + (mn % 8) * 16 + kb % 16;
    const int row = mn % 8, chunk = kb / 16, per = 8 / (span / 16);
    return (mn / 8) * sbo + row * span + ((chunk ^ (row / per)) * 16) + kb % 16;
  }
  const int mb = mn * e;
  if (span == 0) return (mb / 16) * sbo + mb % 16 + (k % 8) * 16 + (k / 8) * lbo;
  const int row = k % 8, chunk = (mb % span) / 16, per = 8 / (span / 16);
  return (mb / span) * lbo + (k / 8) * sbo + row * span + ((chunk ^ (row / per)) * 16) + mb % 16;
}

/// The stride arguments of a layout holding `rows` mn x `ks` k (an operand of one instruction here).
void strides(int span, bool mn_major, int e, int rows, int ks, unsigned& lbo, unsigned& sbo) {
  if (!mn_major) {
    sbo = span == 0 ? 128u : 8u * static_cast<unsigned>(span);
    lbo = span == 0 ? static_cast<unsigned>(rows / 8) * 128u : 16u;  // swizzled K-major: unused
  } else if (span == 0) {
    sbo = static_cast<unsigned>(ks / 8) * 128u;  // next 16 bytes of mn
    lbo = 128u;                                  // next 8 k
  } else {
    lbo = static_cast<unsigned>(ks / 8) * 8u * static_cast<unsigned>(span);  // next span of mn
    sbo = 8u * static_cast<unsigned>(span);                                    // next 8 k
  }
  (void)e;
}

/// The 1024-aligned byte of the dynamic shared memory (its window address is not: 0x480).
unsigned char* aligned_smem() {
  unsigned char* s = mc::dynamic_smem<unsigned char>();
  const unsigned a = mc::smem_address(s);
  return s + ((1024 - a % 1024) % 1024);
}

// ---- wgmma -------------------------------------------------------------------------------------------

enum class Plant { none, wrong_swizzle, wrong_sbo, wrong_base_offset, lane_shift, read_early, no_wait, no_fence, overwrite };

struct WgmmaCase {
  int span_a = 128, span_b = 128;
  bool trans_b = false;
  Plant plant = Plant::none;
};

/// D (64 x N) = A (64 x K, [m][k]) x B (K x N: [n][k], or [k][n] with trans_b) on one warpgroup:
/// thread 0 places both operands, then the warpgroup issues one wgmma and writes D from its
/// fragments (row 16 w + g + 8 ((i / 2) % 2), column 8 (i / 4) + 2 q + i % 2).
/// B's element type: T, or int8 for 8-bit operands (wgmma takes .s8 B with .s8 or .u8 A).
template <class T>
using BOf = typename std::conditional<sizeof(T) == 1, int8_t, T>::type;

template <int N, class T, class Acc, bool TransB>
__global__ void wgmma_kernel(const T* A, const BOf<T>* B, Acc* D, WgmmaCase c) {
  constexpr int E = sizeof(T), K = 32 / E;
  unsigned char* sa = aligned_smem();
  unsigned char* sb = sa + 8192;  // A: 64 rows of up to 128 bytes (a swizzle atom row)
  unsigned lbo_a, sbo_a, lbo_b, sbo_b;
  strides(c.span_a, false, E, 64, K, lbo_a, sbo_a);
  strides(c.span_b, TransB, E, N, K, lbo_b, sbo_b);
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0) {
    for (int m = 0; m < 64; ++m)
      for (int k = 0; k < K; ++k) std::memcpy(sa + place(c.span_a, false, E, m, k, lbo_a, sbo_a), &A[m * K + k], E);
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) {
        const BOf<T> v = TransB ? B[k * N + n] : B[n * K + k];
        std::memcpy(sb + place(c.span_b, TransB, E, n, k, lbo_b, sbo_b), &v, E);
      }
  }
  __syncthreads();
  const Swizzle swa = static_cast<Swizzle>(c.span_a);
  Swizzle swb = static_cast<Swizzle>(c.span_b);
  if (c.plant == Plant::wrong_swizzle) swb = c.span_b == 128 ? Swizzle::b64 : Swizzle::b128;
  if (c.plant == Plant::wrong_sbo) sbo_b += 16;
  const uint64_t da = mc::wgmma_descriptor(mc::smem_address(sa), lbo_a, sbo_a, swa);
  const uint64_t db = mc::wgmma_descriptor(mc::smem_address(sb), lbo_b, sbo_b, swb, c.plant == Plant::wrong_base_offset ? 1 : 0);
  Acc d[N / 2] = {};
  if (c.plant != Plant::no_fence) mc::wgmma_fence();
  if constexpr (std::is_same<Acc, int>::value) {
    mc::wgmma_m64k32<N, T>(d, da, db, false);
  } else {
    mc::wgmma_m64k16<N, T, false, TransB>(d, da, db, false);
  }
  mc::wgmma_commit();
  if (c.plant == Plant::overwrite && t == 0) sb[0] ^= 1;  // the stage refilled under the wgmma
  Acc early[N / 2];
  for (int i = 0; i < N / 2; ++i) early[i] = d[i];
  if (c.plant != Plant::no_wait) mc::wgmma_wait<0>();
  mc::wgmma_fence_operand(d);
  const int src = c.plant == Plant::lane_shift ? (t + 1) % 128 : t;  // thread t writes thread src's elements
  for (int i = 0; i < N / 2; ++i) {
    const int w = src / 32, g = (src % 32) / 4, q = src % 4;
    const int row = 16 * w + g + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * q + i % 2;
    D[row * N + col] = c.plant == Plant::read_early ? early[i] : d[i];
  }
}

template <class T>
T make(std::mt19937& rng) {
  if constexpr (sizeof(T) == 1) {
    return static_cast<T>(std::uniform_int_distribution<int>(-128, 127)(rng));
  } else {
    const float v = static_cast<float>(std::uniform_int_distribution<int>(-64, 64)(rng)) / 16.0f;  // exact in 16 bits
    return static_cast<T>(v);
  }
}
template <class T>
double value(T v) {
  if constexpr (sizeof(T) == 1) {
    return static_cast<double>(v);
  } else if constexpr (std::is_same<T, __half>::value) {
    return static_cast<double>(__half2float(v));
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

/// Runs one case; "" and D == the product (exact: small products), or the fault's message.
template <int N, class T, class Acc = float, bool TransB = false>
std::string run_wgmma(const WgmmaCase& c, unsigned seed, bool* exact) {
  constexpr int K = 32 / static_cast<int>(sizeof(T));
  std::mt19937 rng(seed);
  std::vector<T> A(64 * K);
  std::vector<BOf<T>> B(static_cast<size_t>(K) * N);
  for (T& v : A) v = make<T>(rng);
  for (BOf<T>& v : B) v = make<BOf<T>>(rng);
  std::vector<Acc> D(64 * N, Acc(-7));
  const std::string f = fault_of([&] {
    mc::launch(wgmma_kernel<N, T, Acc, TransB>, dim3(1), dim3(128), 1024 + 8192 + 8192, nullptr, A.data(), B.data(), D.data(), c);
  });
  *exact = true;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k) s += value(A[m * K + k]) * value(TransB ? B[k * N + n] : B[n * K + k]);
      const double got = static_cast<double>(D[m * N + n]);
      if (!(got == s)) *exact = false;
    }
  return f;
}

}  // namespace

TEST_CASE("emulation: wgmma m64nNk16 (FP16, BF16) reads K-major operands in every swizzle, FP32 fragments per the PTX ISA") {
  for (int span : {0, 32, 64, 128}) {
    INFO("swizzle " << span);
    bool exact = false;
    CHECK(run_wgmma<32, __half>({span, span, false, Plant::none}, 1, &exact) == "");
    CHECK(exact);
    CHECK(run_wgmma<16, mc::bf16>({span, 128, false, Plant::none}, 2, &exact) == "");
    CHECK(exact);
  }
}

TEST_CASE("emulation: wgmma with an N-major (transposed) B in every swizzle") {
  for (int span : {0, 32, 64, 128}) {
    INFO("swizzle " << span);
    bool exact = false;
    CHECK(run_wgmma<64, __half, float, true>({128, span, true, Plant::none}, 3, &exact) == "");
    CHECK(exact);
  }
}

TEST_CASE("emulation: wgmma m64nNk32 on 8-bit operands (s8 and u8 A), INT32 exactly") {
  for (int span : {0, 32, 64, 128}) {
    INFO("swizzle " << span);
    bool exact = false;
    CHECK(run_wgmma<32, int8_t, int>({span, span, false, Plant::none}, 4, &exact) == "");
    CHECK(exact);
    CHECK(run_wgmma<16, uint8_t, int>({span, 64, false, Plant::none}, 5, &exact) == "");
    CHECK(exact);
  }
}

TEST_CASE("emulation: a wrong wgmma descriptor, lane, wait or fence never gives the right product") {
  bool exact = true;
  for (int span : {32, 64, 128}) {  // the data swizzled one way, the descriptor says another
    CHECK(run_wgmma<32, __half>({128, span, false, Plant::wrong_swizzle}, 6, &exact) == "");
    CHECK(!exact);
  }
  CHECK(run_wgmma<32, __half>({128, 0, false, Plant::wrong_sbo}, 7, &exact) == "");
  CHECK(!exact);
  CHECK(run_wgmma<32, __half>({128, 128, false, Plant::wrong_sbo}, 7, &exact) == "");
  CHECK(!exact);
  CHECK(run_wgmma<32, __half>({128, 128, false, Plant::lane_shift}, 8, &exact) == "");
  CHECK(!exact);
  CHECK(run_wgmma<32, int8_t, int>({128, 128, false, Plant::lane_shift}, 8, &exact) == "");
  CHECK(!exact);
  CHECK(run_wgmma<32, __half>({128, 128, false, Plant::read_early}, 9, &exact) == "");  // poison (NaN)
  CHECK(!exact);
  CHECK(run_wgmma<32, int8_t, int>({128, 128, false, Plant::read_early}, 9, &exact) == "");
  CHECK(!exact);
  std::string e = run_wgmma<32, __half>({128, 128, false, Plant::no_wait}, 10, &exact);
  CHECK(!exact);  // the accumulators still hold the poison when written out
  CHECK(e.find("not waited for") != std::string::npos);  // and the exit is reported
  e = run_wgmma<32, __half>({128, 128, false, Plant::no_fence}, 11, &exact);
  CHECK(e.find("without a wgmma.fence") != std::string::npos);
  e = run_wgmma<32, __half>({128, 128, false, Plant::overwrite}, 12, &exact);
  CHECK(e.find("changed between its issue and the wgmma.wait_group") != std::string::npos);
  e = run_wgmma<32, __half>({128, 128, false, Plant::wrong_base_offset}, 13, &exact);
  CHECK(e.find("base offset 1") != std::string::npos);
}

namespace {

/// Two wgmmas into the same accumulators in one commit group (the second chains on the first),
/// then a third after a wait with accumulate: D = A0 B0 + A1 B1 + A0 B0.
__global__ void wgmma_chain(const __half* A0, const __half* B0, const __half* A1, const __half* B1, float* D) {
  unsigned char* s = aligned_smem();
  const int t = static_cast<int>(threadIdx.x);
  if (t == 0)
    for (int i = 0; i < 64; ++i)
      for (int k = 0; k < 16; ++k) {
        std::memcpy(s + place(128, false, 2, i, k, 16, 1024), &A0[i * 16 + k], 2);
        std::memcpy(s + 8192 + place(128, false, 2, i, k, 16, 1024), &A1[i * 16 + k], 2);
        if (i < 16) {
          std::memcpy(s + 16384 + place(128, false, 2, i, k, 16, 1024), &B0[i * 16 + k], 2);
          std::memcpy(s + 24576 + place(128, false, 2, i, k, 16, 1024), &B1[i * 16 + k], 2);
        }
      }
  __syncthreads();
  auto desc = [&](int off) { return mc::wgmma_descriptor(mc::smem_address(s + off), 16, 1024, Swizzle::b128); };
  float d[8];
  mc::wgmma_fence();
  mc::wgmma_m64k16<16, __half>(d, desc(0), desc(16384), false);
  mc::wgmma_m64k16<16, __half>(d, desc(8192), desc(24576), true);
  mc::wgmma_commit();
  mc::wgmma_wait<0>();
  mc::wgmma_fence();
  mc::wgmma_m64k16<16, __half>(d, desc(0), desc(16384), true);
  mc::wgmma_commit();
  mc::wgmma_wait<0>();
  for (int i = 0; i < 8; ++i) {
    const int w = t / 32, g = (t % 32) / 4, q = t % 4;
    D[(16 * w + g + 8 * ((i / 2) % 2)) * 16 + 8 * (i / 4) + 2 * q + i % 2] = d[i];
  }
}

}  // namespace

TEST_CASE("emulation: wgmmas chain on their accumulators in flight, in issue order") {
  std::mt19937 rng(21);
  std::vector<__half> A0(64 * 16), B0(16 * 16), A1(64 * 16), B1(16 * 16);
  for (auto* v : {&A0, &B0, &A1, &B1})
    for (__half& x : *v) x = make<__half>(rng);
  std::vector<float> D(64 * 16);
  REQUIRE(mc::launch(wgmma_chain, dim3(1), dim3(128), 40000, nullptr, A0.data(), B0.data(), A1.data(), B1.data(), D.data()) ==
          cudaSuccess);
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < 16; ++n) {
      double s = 0;
      for (int k = 0; k < 16; ++k)
        s += 2 * value(A0[m * 16 + k]) * value(B0[n * 16 + k]) + value(A1[m * 16 + k]) * value(B1[n * 16 + k]);
      CHECK(D[m * 16 + n] == doctest::Approx(s));
    }
}

// ---- mbarriers and TMA ---------------------------------------------------------------------------

namespace {

enum class Phase { right, wrong_parity, no_wait, too_few_bytes, no_arrive };

/// A 2-stage ring: thread 0 loads `steps` boxes of a 2-D FP16 tensor (rows x cols) with TMA, box
/// [rows_box][span bytes] at (col0, row0 + 8 s); 32 consumer threads wait for each stage, copy it
/// out (in the order the swizzle put it), and release it.
struct RingArgs {
  mc::TensorMap map;
  int steps, col0, row0, span;
  Phase plant;
  unsigned char* out;  // steps x box bytes, as shared memory held them
};

__global__ void tma_ring(const __grid_constant__ RingArgs a) {
  unsigned char* s = aligned_smem();
  uint64_t* full = reinterpret_cast<uint64_t*>(s + 2 * 4096);
  uint64_t* empty = full + 2;
  const int t = static_cast<int>(threadIdx.x);
  const int box = static_cast<int>(a.map.box[0] * a.map.box[1]) * 2;
  if (t == 0) {
    for (int i = 0; i < 2; ++i) {
      mc::mbarrier_init(&full[i], 1);
      mc::mbarrier_init(&empty[i], 32);
    }
    mc::fence_mbarrier_init();
  }
  __syncthreads();
  if (t == 32) {  // the producer
    for (int i = 0; i < a.steps; ++i) {
      const int stage = i % 2;
      mc::mbarrier_wait(&empty[stage], ((i / 2) & 1) ^ 1);
      const unsigned bytes = a.plant == Phase::too_few_bytes ? box + 16 : box;
      if (a.plant != Phase::no_arrive) mc::mbarrier_arrive_expect_tx(&full[stage], bytes);
      mc::tma_load<2>(s + stage * 4096, &a.map, &full[stage], {a.col0, a.row0 + 8 * i});
    }
  } else if (t < 32) {  // the consumers
    for (int i = 0; i < a.steps; ++i) {
      const int stage = i % 2;
      const unsigned parity = (i / 2) & 1;
      if (a.plant == Phase::right || a.plant == Phase::too_few_bytes || a.plant == Phase::no_arrive)
        mc::mbarrier_wait(&full[stage], parity);
      if (a.plant == Phase::wrong_parity) mc::mbarrier_wait(&full[stage], parity ^ 1);
      for (int b = t; b < box; b += 32) a.out[i * box + b] = s[stage * 4096 + b];
      mc::mbarrier_arrive(&empty[stage]);
    }
  }
}

std::vector<__half> tensor(int rows, int cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<__half> x(static_cast<size_t>(rows) * cols);
  for (__half& v : x) v = make<__half>(rng);
  return x;
}

mc::TensorMap map2d(const std::vector<__half>& x, int rows, int cols, int box_cols, int box_rows, Swizzle sw) {
  mc::TensorMap m;
  const uint64_t dims[2] = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)};
  const uint64_t strides[1] = {static_cast<uint64_t>(cols) * 2};
  const uint32_t box[2] = {static_cast<uint32_t>(box_cols), static_cast<uint32_t>(box_rows)}, es[2] = {1, 1};
  REQUIRE(mc::make_tensor_map(&m, 2, 2, x.data(), dims, strides, box, es, sw) == cudaSuccess);
  return m;
}

/// Whether out holds, step by step, the boxes this file's layout says (zeros out of bounds).
bool ring_matches(const RingArgs& a, const std::vector<__half>& x, int rows, int cols, const std::vector<unsigned char>& out) {
  const int bc = static_cast<int>(a.map.box[0]), br = static_cast<int>(a.map.box[1]), box = bc * br * 2;
  for (int i = 0; i < a.steps; ++i)
    for (int r = 0; r < br; ++r)
      for (int c = 0; c < bc; ++c) {
        const int gr = a.row0 + 8 * i + r, gc = a.col0 + c;
        __half want = __float2half(0.0f);
        if (gr >= 0 && gr < rows && gc >= 0 && gc < cols) want = x[static_cast<size_t>(gr) * cols + gc];
        // a box row of `span` bytes is one K-major atom row: this file's place() with mn = r, k = c
        const size_t off = a.span == 0 ? static_cast<size_t>(r) * bc * 2 + c * 2 : place(a.span, false, 2, r, c, 0, 8u * a.span);
        if (std::memcmp(&out[i * box + off], &want, 2) != 0) return false;
      }
  return true;
}

}  // namespace

TEST_CASE("emulation: TMA tiled loads through an mbarrier ring, every swizzle, zeros out of bounds") {
  const int rows = 50, cols = 72;
  const std::vector<__half> x = tensor(rows, cols, 31);
  for (int span : {0, 32, 64, 128}) {
    INFO("swizzle " << span);
    const int bc = span == 0 ? 24 : span / 2;
    RingArgs a{map2d(x, rows, cols, bc, 16, static_cast<Swizzle>(span)), 5, cols - bc + 8, -3, span, Phase::right, nullptr};
    std::vector<unsigned char> out(static_cast<size_t>(5 * bc * 16 * 2), 0xee);
    a.out = out.data();
    REQUIRE(mc::launch(tma_ring, dim3(1), dim3(64), 12 * 1024, nullptr, a) == cudaSuccess);
    CHECK(ring_matches(a, x, rows, cols, out));
  }
}

TEST_CASE("emulation: an mbarrier wait on the wrong phase reads stale data; one that cannot complete is a deadlock") {
  const int rows = 64, cols = 64;
  const std::vector<__half> x = tensor(rows, cols, 32);
  RingArgs a{map2d(x, rows, cols, 64, 16, Swizzle::b128), 4, 0, 0, 128, Phase::wrong_parity, nullptr};
  std::vector<unsigned char> out(static_cast<size_t>(4 * 64 * 16 * 2), 0xee);
  a.out = out.data();
  for (Phase p : {Phase::wrong_parity, Phase::no_wait}) {  // the consumers run ahead of the copies:
    a.plant = p;                                           // stale data, or the ring falls out of step
    const std::string e = fault_of([&] { mc::launch(tma_ring, dim3(1), dim3(64), 12 * 1024, nullptr, a); });
    INFO(e);
    CHECK((e.find("deadlock") != std::string::npos || (e.empty() && !ring_matches(a, x, rows, cols, out))));
  }
  for (Phase p : {Phase::too_few_bytes, Phase::no_arrive}) {
    a.plant = p;
    const std::string e = fault_of([&] { mc::launch(tma_ring, dim3(1), dim3(64), 12 * 1024, nullptr, a); });
    INFO(e);
    CHECK(e.find("deadlock") != std::string::npos);
    CHECK(e.find("mc::mbarrier_wait (parity 0; mbarrier at dynamic shared memory byte") != std::string::npos);
  }
  a.plant = Phase::right;
  REQUIRE(mc::launch(tma_ring, dim3(1), dim3(64), 12 * 1024, nullptr, a) == cudaSuccess);
  CHECK(ring_matches(a, x, rows, cols, out));
}

namespace {

/// A 4-D NHWC box with traversal steps (a strided convolution's taps): X [2][9][11][16] FP16, box
/// (16 channels, 4 w, 3 h, 1 n) stepping 2 along w and h from (0, w0, h0, n0); then stored back
/// with a TMA store into Y (same shape) at the same coordinates.
struct StridedArgs {
  mc::TensorMap x, y;
  int w0, h0, n0;
  bool overwrite_before_wait;
};

__global__ void tma_strided(const __grid_constant__ StridedArgs a, unsigned char* out) {
  unsigned char* s = aligned_smem();
  uint64_t* bar = reinterpret_cast<uint64_t*>(s + 4096);
  mc::mbarrier_init(bar, 1);
  mc::fence_mbarrier_init();
  mc::mbarrier_arrive_expect_tx(bar, 16 * 4 * 3 * 2);
  mc::tma_load<4>(s, &a.x, bar, {0, a.w0, a.h0, a.n0});
  mc::mbarrier_wait(bar, 0);
  std::memcpy(out, s, 16 * 4 * 3 * 2);
  mc::tma_store<4>(&a.y, s, {0, a.w0, a.h0, a.n0});
  mc::bulk_commit();
  if (a.overwrite_before_wait) std::memset(s, 0, 64);  // the store reads shared memory until its wait
  mc::bulk_wait<0>();
}

}  // namespace

TEST_CASE("emulation: TMA traversal steps, 4-D boxes, and bulk tensor stores that skip out-of-bounds elements") {
  const int N = 2, H = 9, W = 11, C = 16;
  const float kUnwritten = -100.0f;  // no value make() draws
  std::vector<__half> x(static_cast<size_t>(N) * H * W * C), y(x.size());
  std::mt19937 rng(41);
  for (__half& v : x) v = make<__half>(rng);
  StridedArgs a{};
  const uint64_t dims[4] = {C, W, H, N}, strides[3] = {C * 2, W * C * 2, H * W * C * 2};
  const uint32_t box[4] = {16, 8, 6, 1}, es[4] = {1, 2, 2, 1};
  REQUIRE(mc::make_tensor_map(&a.x, 2, 4, x.data(), dims, strides, box, es, Swizzle::none) == cudaSuccess);
  REQUIRE(mc::make_tensor_map(&a.y, 2, 4, y.data(), dims, strides, box, es, Swizzle::none) == cudaSuccess);
  a.w0 = 5;
  a.n0 = 1;
  for (int h0 : {-1, 1}) {
    for (bool overwrite : {false, true}) {
      INFO("h0 " << h0 << (overwrite ? ", shared memory overwritten before the store's wait" : ""));
      a.h0 = h0;
      a.overwrite_before_wait = overwrite;
      y.assign(y.size(), __float2half(kUnwritten));
      std::vector<unsigned char> out(16 * 4 * 3 * 2);
      REQUIRE(mc::launch(tma_strided, dim3(1), dim3(1), 8192, nullptr, a, out.data()) == cudaSuccess);
      std::vector<bool> in_box(y.size(), false);
      for (int ih = 0; ih < 3; ++ih)
        for (int iw = 0; iw < 4; ++iw)
          for (int c = 0; c < C; ++c) {
            const int h = a.h0 + 2 * ih, w = a.w0 + 2 * iw, e = (ih * 4 + iw) * C + c;
            const bool in = h >= 0 && h < H && w < W;
            const size_t g = ((static_cast<size_t>(a.n0) * H + h) * W + w) * C + c;
            const __half want = in ? x[g] : __float2half(0.0f);
            CHECK(std::memcmp(&out[e * 2], &want, 2) == 0);  // loaded: the element, or zero outside
            if (!in) continue;
            in_box[g] = true;
            const __half stored = overwrite && e < 32 ? __float2half(0.0f) : x[g];  // the store read the overwrite
            CHECK(std::memcmp(&y[g], &stored, 2) == 0);
          }
      for (size_t g = 0; g < y.size(); ++g)
        if (!in_box[g]) CHECK(__half2float(y[g]) == kUnwritten);  // nothing outside the box, nothing out of bounds
    }
  }
}

TEST_CASE("emulation: make_tensor_map refuses what cuTensorMapEncodeTiled documents as invalid") {
  std::vector<__half> x(64 * 64);
  mc::TensorMap m;
  const uint64_t dims[2] = {64, 64}, good[1] = {128}, bad[1] = {120};
  const uint32_t box[2] = {64, 8}, wide[2] = {128, 8}, es[2] = {1, 1}, es9[2] = {1, 9};
  CHECK(mc::make_tensor_map(&m, 2, 2, x.data(), dims, good, box, es, Swizzle::b128) == cudaSuccess);
  CHECK(mc::make_tensor_map(&m, 2, 2, x.data(), dims, bad, box, es, Swizzle::b128) == cudaErrorInvalidValue);
  CHECK(mc::host::tensor_map_error().find("not a multiple of 16") != std::string::npos);
  CHECK(mc::make_tensor_map(&m, 2, 2, x.data(), dims, good, box, es, Swizzle::b64) == cudaErrorInvalidValue);  // 128-byte rows
  CHECK(mc::make_tensor_map(&m, 2, 2, x.data(), dims, good, wide, es, Swizzle::none) == cudaSuccess);
  CHECK(mc::make_tensor_map(&m, 2, 2, x.data(), dims, good, box, es9, Swizzle::none) == cudaErrorInvalidValue);
  CHECK(mc::make_tensor_map(&m, 2, 2, x.data() + 1, dims, good, box, es, Swizzle::none) == cudaErrorInvalidValue);
}

// ---- the proxy fence, setmaxnreg, grid flags --------------------------------------------------------

namespace {

/// Operands written with st_shared (the generic proxy) and read by wgmma: fenced or not.
__global__ void generic_then_wgmma(bool fence, float* D) {
  unsigned char* s = aligned_smem();
  const int t = static_cast<int>(threadIdx.x);
  for (int i = t; i < 64 * 16 + 16 * 16; i += 128) mc::st_shared(reinterpret_cast<__half*>(s) + i, __float2half(1.0f));
  if (fence) mc::fence_proxy_async();
  __syncthreads();
  float d[8];
  mc::wgmma_fence();
  mc::wgmma_m64k16<16, __half>(d, mc::wgmma_descriptor(mc::smem_address(s), 256, 128, Swizzle::none),
                               mc::wgmma_descriptor(mc::smem_address(s + 2048), 64, 128, Swizzle::none), false);
  mc::wgmma_commit();
  mc::wgmma_wait<0>();
  D[t] = d[0];
}

template <int R0, int R>
__global__ void setmaxnreg_mixed() {
  if (threadIdx.x == 0) {
    mc::setmaxnreg_inc<R0>();
  } else {
    mc::setmaxnreg_inc<R>();
  }
}

__global__ void flag_kernel(unsigned* flags) {
  const unsigned b = blockIdx.x;
  if (threadIdx.x != 0) return;
  if (b > 0) mc::grid_flag_wait(&flags[b - 1], 1);  // an earlier block's: set already
  mc::grid_flag_set(&flags[b], 1);
  if (b == 0 && gridDim.x == 1) mc::grid_flag_wait(&flags[1], 1);  // a later block's: never here
}

}  // namespace

TEST_CASE("emulation: wgmma reading st_shared data needs fence.proxy.async in the writers") {
  std::vector<float> D(128);
  REQUIRE(mc::launch(generic_then_wgmma, dim3(1), dim3(128), 8192, nullptr, true, D.data()) == cudaSuccess);
  CHECK(D[0] == 16.0f);
  const std::string e = fault_of([&] { mc::launch(generic_then_wgmma, dim3(1), dim3(128), 8192, nullptr, false, D.data()); });
  INFO(e);
  CHECK(e.find("no fence.proxy.async") != std::string::npos);
}

TEST_CASE("emulation: setmaxnreg is one count for the whole warpgroup") {
  CHECK(mc::launch(setmaxnreg_mixed<232, 232>, dim3(1), dim3(128), 0, nullptr) == cudaSuccess);
  const std::string e = fault_of([&] { mc::launch(setmaxnreg_mixed<232, 240>, dim3(1), dim3(128), 0, nullptr); });
  CHECK(e.find("another count") != std::string::npos);
  const std::string part = fault_of([&] { mc::launch(setmaxnreg_mixed<232, 232>, dim3(1), dim3(96), 0, nullptr); });
  CHECK(part.find("full warpgroup") != std::string::npos);
}

TEST_CASE("emulation: a grid flag may be waited for only when an earlier block set it") {
  std::vector<unsigned> flags(4, 0);
  CHECK(mc::launch(flag_kernel, dim3(4), dim3(32), 0, nullptr, flags.data()) == cudaSuccess);
  CHECK(flags == std::vector<unsigned>(4, 1));
  flags.assign(4, 0);
  const std::string e = fault_of([&] { mc::launch(flag_kernel, dim3(1), dim3(32), 0, nullptr, flags.data()); });
  CHECK(e.find("no earlier block set") != std::string::npos);
}

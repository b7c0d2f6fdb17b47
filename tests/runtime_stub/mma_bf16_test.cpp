// Host emulation of mma.sync m16n8k16 on BF16 operands (runtime_stub/host/mma.h: mc::mma_m16n8k16_bf16),
// exact per lane in the PTX fragment layouts, and mc::bf16's conversions (runtime_stub/device.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <ios>
#include <random>
#include <vector>

#include "device.h"
#include "ir/dtype.h"

namespace {

using mc::bf16;

unsigned short bits_of(bf16 v) { return v.bits; }
unsigned pair(const bf16* p) { return bits_of(p[0]) | (static_cast<unsigned>(bits_of(p[1])) << 16); }

// D (16 x 8) = A (16 x 16, row-major) x B (stored [n][k]) + C on one warp, each lane loading its
// registers by the PTX layout (g = lane / 4, t = lane % 4): a0 (g, 2t..), a1 (g + 8, 2t..), a2 (g,
// 2t + 8..), a3 (g + 8, 2t + 8..); b0 (k 2t.., n g), b1 (k 2t + 8.., n g); c0 c1 (g, 2t..), c2 c3
// (g + 8, 2t..). Shift moves every lane's A registers to the lane `shift` places on: a wrong lane.
__global__ void mma_bf16_kernel(const bf16* A, const bf16* Bt, const float* C, float* D, int shift) {
  const int l = static_cast<int>(threadIdx.x), src = (l + shift) % 32;
  const int g = l / 4, t = 2 * (l % 4), gs = src / 4, ts = 2 * (src % 4);
  unsigned a[4], b[2];
  for (int h = 0; h < 2; ++h) {
    a[2 * h] = pair(A + gs * 16 + 8 * h + ts);
    a[2 * h + 1] = pair(A + (gs + 8) * 16 + 8 * h + ts);
    b[h] = pair(Bt + g * 16 + 8 * h + t);
  }
  float d[4] = {C[g * 8 + t], C[g * 8 + t + 1], C[(g + 8) * 8 + t], C[(g + 8) * 8 + t + 1]};
  mc::mma_m16n8k16_bf16(d, a, b, d);  // d aliases c
  D[g * 8 + t] = d[0];
  D[g * 8 + t + 1] = d[1];
  D[(g + 8) * 8 + t] = d[2];
  D[(g + 8) * 8 + t + 1] = d[3];
}

struct Problem {
  std::vector<bf16> A, Bt;
  std::vector<float> C;
};

// Values over a range FP16 cannot hold (|x| from 2^-30 to 2^30): BF16's exponent is FP32's.
Problem random_problem(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 30), sign(0, 1);
  auto value = [&] { return (sign(rng) ? -1.0f : 1.0f) * std::ldexp(mantissa(rng), exponent(rng)); };
  Problem p;
  for (int i = 0; i < 16 * 16; ++i) p.A.push_back(bf16(value()));
  for (int i = 0; i < 8 * 16; ++i) p.Bt.push_back(bf16(value()));
  for (int i = 0; i < 16 * 8; ++i) p.C.push_back(value());
  return p;
}

// Products exact (8-bit mantissas: 16 bits, within float's 24), summed in float in k order from C.
std::vector<float> reference(const Problem& p) {
  std::vector<float> D(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      float acc = p.C[static_cast<size_t>(i * 8 + j)];
      for (int k = 0; k < 16; ++k) {
        const double a = static_cast<float>(p.A[static_cast<size_t>(i * 16 + k)]);
        const double b = static_cast<float>(p.Bt[static_cast<size_t>(j * 16 + k)]);
        const float prod = static_cast<float>(a * b);
        REQUIRE(static_cast<double>(prod) == a * b);  // exact in float
        acc += prod;
      }
      D[static_cast<size_t>(i * 8 + j)] = acc;
    }
  return D;
}

std::vector<float> run(const Problem& p, int shift) {
  std::vector<float> D(16 * 8, -1.0f);
  REQUIRE(mc::launch(mma_bf16_kernel, dim3(1), dim3(32), 0, nullptr, p.A.data(), p.Bt.data(), p.C.data(), D.data(),
                     shift) == cudaSuccess);
  return D;
}

}  // namespace

TEST_CASE("emulation: mma m16n8k16 .bf16 (FP32 accumulators) equals the matmul exactly; a wrong lane does not") {
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const Problem p = random_problem(seed);
    const std::vector<float> expect = reference(p), got = run(p, 0);
    for (int e = 0; e < 16 * 8; ++e) {
      INFO("seed " << seed << " element (" << e / 8 << ", " << e % 8 << ")");
      CHECK(got[static_cast<size_t>(e)] == expect[static_cast<size_t>(e)]);
    }
    CHECK(run(p, 1) != expect);   // every lane's A registers from its neighbour
    CHECK(run(p, 4) != expect);   // from the next group (row g + 1)
  }
}

TEST_CASE("emulation: the BF16 MMA reads bfloat16 bits, not half bits") {
  Problem p;
  p.A.assign(16 * 16, bf16(0.0f));
  p.Bt.assign(8 * 16, bf16(0.0f));
  p.C.assign(16 * 8, 0.0f);
  p.A[0] = bf16(3.0e20f);  // beyond FP16's range; 0x61 0x82: a different number as half bits
  p.Bt[0] = bf16(-2.0f);
  const std::vector<float> got = run(p, 0);
  CHECK(got[0] == static_cast<float>(p.A[0]) * -2.0f);
  for (int e = 1; e < 16 * 8; ++e) CHECK(got[static_cast<size_t>(e)] == 0.0f);
}

TEST_CASE("mc::bf16: round to nearest even from float and back, as compiler/ir/dtype.cpp's") {
  std::mt19937 rng(5);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t x = any(rng);
    float f;
    std::memcpy(&f, &x, 4);
    const bf16 b(f);
    INFO("float bits " << std::hex << x);
    REQUIRE(b.bits == modelc::float_to_bfloat16(f));
    const float back = static_cast<float>(b), want = modelc::bfloat16_to_float(b.bits);
    REQUIRE(std::memcmp(&back, &want, 4) == 0);
  }
  CHECK(bf16(1.0f).bits == 0x3f80);
  CHECK(bf16(1.00390625f).bits == 0x3f80);   // 1 + 2^-8: a tie, to even
  CHECK(bf16(1.01171875f).bits == 0x3f82);   // 1 + 3 x 2^-8: a tie, to even (up)
  CHECK(bf16(3.4e38f).bits == 0x7f80);       // beyond the largest bfloat16 (3.3895e38): infinity
  CHECK(std::isnan(static_cast<float>(bf16(std::nanf("")))));
  CHECK(static_cast<float>(bf16::from_bits(0xc040)) == -3.0f);
}

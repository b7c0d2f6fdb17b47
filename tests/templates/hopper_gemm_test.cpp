// templates/hopper_gemm.cuh on the host emulation (runtime_stub/host/hopper.h: wgmma, TMA and
// mbarriers as the PTX ISA documents them): GEMMs of odd shapes through every swizzle mode and
// stage count, FP16 / BF16 with a fused epilogue (bias, activation, residual, cast), a transposed
// (N-major) B, batches; INT8 with the requantizing epilogue, bit for bit against tc8::Gemm;
// convolutions (3x3 s1, 3x3 s2 on odd images) against tc::Conv and tc8::Conv; persistent grids
// smaller than the tiles and stream-K grids larger. Planted errors — a descriptor with the wrong
// swizzle, a ring that waits on the wrong phase, a stage that announces more bytes than it loads —
// give a wrong answer or a reported deadlock, never the right product. The sweep (more
// shapes, seeds, grids: about 2.5 s on the emulation) runs in the unit run too.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "templates/hopper_gemm.cuh"
#include "tests/runtime_stub/fault_of.h"

namespace {

using mc::Swizzle;
namespace gemm = mc::gemm;
namespace hopper = mc::hopper;

template <class T>
std::vector<T> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (sizeof(T) == 1) {
      x = static_cast<T>(std::uniform_int_distribution<int>(-128, 127)(rng));
    } else {
      x = static_cast<T>(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng));
    }
  }
  return v;
}
template <class T>
double as_double(T v) {
  if constexpr (std::is_same<T, __half>::value) {
    return __half2float(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}

/// Launches Hopper kernel K with `ctas` blocks (stream-K workspace and flags zeroed as at create);
/// returns the fault's message ("" when none).
/// The emulated device is an sm_90 (its shared-memory limits) while one lives.
struct Sm90 {
  int prev = 80;
  Sm90() {
    cudaDeviceProp d{};
    if (cudaGetDeviceProperties(&d, 0) == cudaSuccess) prev = d.major * 10 + d.minor;
    mc::host::set_emulated_arch(90);
  }
  ~Sm90() { mc::host::set_emulated_arch(prev); }
};

template <class K>
std::string launch(typename K::Params p, int ctas) {
  std::vector<float> ws(K::workspace_bytes(ctas) / 4 + 1);
  std::vector<unsigned> flags(K::flag_bytes(ctas) / 4 + 1, 0);
  p.workspace = reinterpret_cast<mc::tc::PartialOf<typename K::Acc>*>(ws.data());
  p.flags = flags.data();
  const Sm90 sm90;
  REQUIRE(cudaFuncSetAttribute(reinterpret_cast<const void*>(mc::hopper::kernel<K>), cudaFuncAttributeMaxDynamicSharedMemorySize,
                               K::kSmemBytes) == cudaSuccess);
  cudaError_t r = cudaSuccess;
  std::string f = fault_of([&] { r = mc::launch(mc::hopper::kernel<K>, K::grid(ctas), K::block(), K::kSmemBytes, nullptr, p); });
  if (f.empty() && r != cudaSuccess) f = std::string("launch failed: ") + cudaGetErrorString(r);
  for (unsigned x : flags)
    if (f.empty() && x != 0) return "a stream-K flag was left set";  // self-cleaning for the next launch
  return f;
}

// ---- FP16 / BF16 GEMM -------------------------------------------------------------------------------

/// Y [batch][M][N] = relu(A x B + bias[n]) + R, A [batch][M][K], B [batch][N][K] (or [K][N] with
/// TransB); float64 reference; the relative error against it, or -1 on a fault (message in *fault).
template <class T, int Batch, int M, int N, int K, bool TransB, class Tl>
struct GemmCase {
  using Sh = gemm::Shape<1, 1, Batch, M, N, K>;
  using SA = gemm::Strides<0, 0, int64_t{M} * K, K, 1>;
  using SB = typename std::conditional<TransB, gemm::Strides<0, 0, int64_t{K} * N, N, 1>,
                                       gemm::Strides<0, 0, int64_t{N} * K, 1, K>>::type;
  using SY = gemm::Strides<0, 0, int64_t{M} * N, N, 1>;
  using Epi = gemm::EpilogueFused<T, gemm::Strides<0, 0, 0, 0, 1>, true, mc::Act::relu, gemm::Residual::after_activation>;
  using Mma = typename mc::tc::Mma16<T, float>::type;
  using Kern = hopper::Gemm<Mma, T, Sh, SA, SB, SY, Tl, Epi>;

  static double run(unsigned seed, int ctas, std::string* fault) {
    const std::vector<T> A = random_values<T>(size_t{Batch} * M * K, seed), B = random_values<T>(size_t{Batch} * N * K, seed + 1);
    const std::vector<T> bias = random_values<T>(N, seed + 2), R = random_values<T>(size_t{Batch} * M * N, seed + 3);
    std::vector<T> Y(size_t{Batch} * M * N, static_cast<T>(-99.0f));
    typename Kern::Params p;
    REQUIRE(Kern::make_maps(p, A.data(), B.data()) == cudaSuccess);
    p.Y = Y.data();
    p.epilogue.bias = bias.data();
    p.epilogue.residual = R.data();
    *fault = launch<Kern>(p, ctas);
    if (!fault->empty()) return -1;
    double err = 0, norm = 0;
    for (int b = 0; b < Batch; ++b)
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double s = 0;
          for (int k = 0; k < K; ++k) {
            const size_t bi = TransB ? (static_cast<size_t>(b) * K + k) * N + n : (static_cast<size_t>(b) * N + n) * K + k;
            s += as_double(A[(static_cast<size_t>(b) * M + m) * K + k]) * as_double(B[bi]);
          }
          const size_t y = (static_cast<size_t>(b) * M + m) * N + n;
          const double want = std::max(0.0, s + as_double(bias[n])) + as_double(R[y]);
          err += (as_double(Y[y]) - want) * (as_double(Y[y]) - want);
          norm += want * want;
        }
    return std::sqrt(err / norm);
  }
};

template <Swizzle Sw, int Stages>
void fp16_case(unsigned seed) {
  constexpr int BK = Sw == Swizzle::none ? 32 : static_cast<int>(Sw) / 2;
  using Tl = hopper::Tile<64, 32, BK, Stages, Sw, 1>;
  std::string fault;
  for (int ctas : {3, 11}) {  // persistent (6 tiles on 3 blocks), stream-K (11 blocks)
    INFO("swizzle " << static_cast<int>(Sw) << ", " << Stages << " stages, " << ctas << " blocks");
    const double e = GemmCase<__half, 1, 77, 44, 104, false, Tl>::run(seed, ctas, &fault);
    CHECK(fault == "");
    CHECK(e >= 0);
    CHECK(e < 2e-3);
  }
}

}  // namespace

TEST_CASE("hopper GEMM (emulation): FP16, odd M and N, every swizzle mode and stage count, persistent and stream-K") {
  fp16_case<Swizzle::none, 2>(1);
  fp16_case<Swizzle::b32, 3>(2);
  fp16_case<Swizzle::b64, 4>(3);
  fp16_case<Swizzle::b128, 5>(4);
  fp16_case<Swizzle::b128, 2>(5);
  fp16_case<Swizzle::b64, 5>(6);
}

TEST_CASE("hopper GEMM (emulation): BF16 with two consumer warpgroups, N-major B, batches") {
  std::string fault;
  using Two = hopper::Tile<128, 48, 64, 3, Swizzle::b128, 2>;
  CHECK(GemmCase<mc::bf16, 1, 130, 48, 128, false, Two>::run(11, 4, &fault) < 2e-2);
  CHECK(fault == "");
  using OneTall = hopper::Tile<128, 32, 32, 4, Swizzle::b64, 1>;  // two m64 wgmmas per consumer
  CHECK(GemmCase<__half, 2, 100, 64, 72, true, OneTall>::run(12, 3, &fault) < 2e-3);
  CHECK(fault == "");
  using None = hopper::Tile<64, 16, 16, 3, Swizzle::none, 1>;
  CHECK(GemmCase<__half, 3, 40, 24, 56, true, None>::run(13, 5, &fault) < 2e-3);
  CHECK(fault == "");
}

// ---- planted errors -------------------------------------------------------------------------------

namespace {

/// The consumers wait on the other parity of `full`: they run ahead of the copies.
template <class P>
struct WrongPhase : P {
  struct Ring : hopper::Ring<P::Tl::kStages> {
    __device__ static unsigned full_parity(int g) { return hopper::Ring<P::Tl::kStages>::full_parity(g) ^ 1u; }
  };
};

/// The producer loads one box fewer than the stage announces: the phase never completes.
template <class P>
struct ShortLoad : P {
  __device__ static void load(const typename P::Params& p, unsigned char* sa, unsigned char* sb, uint64_t* bar, int tile, int it) {
    (void)sb;
    int batch, m0, n0;
    P::where(tile, batch, m0, n0);
    for (int x = 0; x < P::SA::kBoxes; ++x)
      mc::tma_load<2>(sa + P::SA::box_offset(x), &p.a, bar, {it * P::Tl::kBK + P::SA::box_k(x), m0});
  }
};

constexpr int kM = 70, kN = 32, kK = 128;
using PlantTile = hopper::Tile<64, 32, 64, 3, Swizzle::b128, 1>;
using Right = hopper::GemmProblem<mc::tc::MmaF16<float>, float, gemm::Shape<1, 1, 1, kM, kN, kK>, gemm::Strides<0, 0, 0, kK, 1>,
                                  gemm::Strides<0, 0, 0, 1, kK>, gemm::Strides<0, 0, 0, kN, 1>, PlantTile, gemm::EpilogueIdentity>;

/// Y = A x B (FP32 out) through problem P: whether it is the product, or the fault.
template <class P>
std::string planted(int ctas, bool* right) {
  using Kern = hopper::Kernel<P>;
  const std::vector<__half> A = random_values<__half>(kM * kK, 51), B = random_values<__half>(kN * kK, 52);
  std::vector<float> Y(kM * kN, -99.0f);
  typename Kern::Params p;
  REQUIRE(Kern::make_maps(p, A.data(), B.data()) == cudaSuccess);
  p.Y = Y.data();
  const std::string f = launch<Kern>(p, ctas);
  *right = true;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n) {
      double s = 0;
      for (int k = 0; k < kK; ++k) s += as_double(A[m * kK + k]) * as_double(B[n * kK + k]);
      if (!(std::fabs(Y[m * kN + n] - s) <= 1e-3 * (1 + std::fabs(s)))) *right = false;
    }
  return f;
}

}  // namespace

TEST_CASE("hopper GEMM (emulation): a planted wrong descriptor or phase never gives the right product") {
  bool right = false;
  CHECK(planted<Right>(2, &right) == "");
  CHECK(right);
  CHECK(planted<Right>(5, &right) == "");  // stream-K
  CHECK(right);
  {
    struct P : Right {
      struct SB : Right::SB {
        __device__ static uint64_t desc(unsigned base, int j, int x0) {
          return Right::SB::desc(base, j, x0) ^ (uint64_t{2} << 62);  // the 128-byte swizzle (1) read as 32 bytes (3)
        }
      };
    };
    const std::string f = planted<P>(2, &right);
    INFO(f);
    CHECK(f == "");
    CHECK(!right);
  }
  {
    const std::string f = planted<WrongPhase<Right>>(2, &right);
    INFO(f);
    CHECK((f.find("deadlock") != std::string::npos || (f.empty() && !right)));
  }
  {
    const std::string f = planted<ShortLoad<Right>>(2, &right);
    INFO(f);
    CHECK(f.find("deadlock") != std::string::npos);
    CHECK(f.find("transaction bytes expected and not issued") != std::string::npos);
  }
}

// ---- INT8 GEMM and the convolutions against the mma.sync templates --------------------------------

namespace {

/// Runs Hopper kernel Kern (p: maps and epilogue set) and the mma.sync kernel Ref (r: operands and
/// epilogue set) into outputs of ny elements each, poisoned first; the outputs' count of elements
/// that differ by more than tol relative (tol 0: bit for bit).
template <class Kern, class Ref, class TY>
int mismatches(typename Kern::Params p, typename Ref::Params r, size_t ny, int ctas, double tol) {
  std::vector<TY> Y(ny, static_cast<TY>(99)), want(ny, static_cast<TY>(98));
  p.Y = Y.data();
  r.Y = want.data();
  CHECK(launch<Kern>(p, ctas) == "");
  REQUIRE(mc::launch(mc::tc::kernel<Ref>, Ref::grid(), Ref::block(), Ref::kSmemBytes, nullptr, r) == cudaSuccess);
  int bad = 0;
  for (size_t i = 0; i < ny; ++i) {
    const double a = as_double(Y[i]), b = as_double(want[i]);
    if (tol == 0 ? std::memcmp(&Y[i], &want[i], sizeof(TY)) != 0 : !(std::fabs(a - b) <= tol * (1 + std::fabs(b)))) ++bad;
  }
  return bad;
}

/// Hopper's INT8 GEMM against tc8::Gemm (proven against the reference in tensor_core_int8_test.cpp):
/// the INT32 sums are exact and the requantizing epilogue the same code, so the outputs are equal.
template <class TA, int M, int N, int K, class Tl>
void int8_gemm_case(unsigned seed, int ctas) {
  using Epi = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::relu, 0, true, true, true>;  // zero point, per-channel scales
  using Kern = hopper::Gemm<mc::tc::MmaS8<TA>, int8_t, gemm::Shape<1, 1, 1, M, N, K>, gemm::Strides<0, 0, 0, K, 1>,
                            gemm::Strides<0, 0, 0, 1, K>, gemm::Strides<0, 0, 0, N, 1>, Tl, Epi>;
  using Ref = mc::tc8::Gemm<TA, int8_t, M, N, K, K, 1, K, N, mc::tc::Tile<32, 32, 64, 1, 1, true, 3>, Epi>;
  const std::vector<TA> A = random_values<TA>(size_t{M} * K, seed);
  const std::vector<int8_t> B = random_values<int8_t>(size_t{N} * K, seed + 1);
  std::vector<float> w_scale(N), bias(N);
  std::vector<int> w_sum(N, 0);
  for (int n = 0; n < N; ++n) {
    w_scale[n] = 0.01f + 0.001f * n;
    bias[n] = 0.5f * (n % 7) - 1.5f;
    for (int k = 0; k < K; ++k) w_sum[n] += B[static_cast<size_t>(n) * K + k];
  }
  typename Epi::Params ep;
  ep.x_scale = 0.05f;
  ep.w_scale = w_scale.data();
  ep.bias = bias.data();
  ep.y_scale = 0.4f;
  ep.y_zero_point = 3;
  ep.w_sum = w_sum.data();
  ep.x_zero_point = std::is_same<TA, uint8_t>::value ? 128 : 5;
  typename Kern::Params p;
  REQUIRE(Kern::make_maps(p, A.data(), B.data()) == cudaSuccess);
  p.epilogue = ep;
  typename Ref::Params r;
  r.A = A.data();
  r.B = B.data();
  r.epilogue = ep;
  CHECK(mismatches<Kern, Ref, int8_t>(p, r, size_t{M} * N, ctas, 0) == 0);
}

using Conv3x3 = mc::conv::Shape<2, 24, 40, 1, mc::conv::Dims3<1, 11, 13>, mc::conv::Dims3<1, 3, 3>, mc::conv::Dims3<1, 11, 13>,
                                mc::conv::Dims3<1, 1, 1>, mc::conv::Dims3<0, 1, 1>, mc::conv::Dims3<1, 1, 1>>;
using Conv3x3s2 = mc::conv::Shape<1, 16, 24, 1, mc::conv::Dims3<1, 15, 17>, mc::conv::Dims3<1, 3, 3>, mc::conv::Dims3<1, 8, 9>,
                                  mc::conv::Dims3<1, 2, 2>, mc::conv::Dims3<0, 1, 1>, mc::conv::Dims3<1, 1, 1>>;

/// An FP16 convolution (bias + relu) on Hopper against tc::Conv on the same inputs.
template <class Sh, int Cp, int Yp, class Tl, int PH, int PW>
void fp16_conv_case(unsigned seed, int ctas) {
  using Epi = gemm::EpilogueBias<__half>;
  using Kern = hopper::Conv<mc::tc::MmaF16<float>, __half, Sh, Cp, Yp, Tl, Epi, PH, PW>;
  using Ref = mc::tc::Conv<__half, __half, float, Sh, Cp, Yp, mc::tc::Tile<32, 32, 32, 1, 1, true, 3>, Epi>;
  using I = typename Sh::InDims;
  using O = typename Sh::OutDims;
  std::vector<__half> X = random_values<__half>(size_t{Sh::kN} * I::kSize * Cp, seed);
  std::vector<__half> W = random_values<__half>(size_t{Sh::kM} * 9 * Cp, seed + 1), bias = random_values<__half>(Sh::kM, seed + 2);
  for (size_t i = 0; i < X.size(); ++i)
    if (static_cast<int>(i % Cp) >= Sh::kC) X[i] = __float2half(0.0f);  // the pitch's padding is zero
  for (size_t i = 0; i < W.size(); ++i)
    if (static_cast<int>(i % Cp) >= Sh::kC) W[i] = __float2half(0.0f);
  typename Kern::Params p;
  REQUIRE(Kern::make_maps(p, X.data(), W.data()) == cudaSuccess);
  p.epilogue.bias = bias.data();
  typename Ref::Params r;
  r.X = X.data();
  r.W = W.data();
  r.epilogue.bias = bias.data();
  CHECK(mismatches<Kern, Ref, __half>(p, r, size_t{Sh::kN} * O::kSize * Yp, ctas, 2e-3) == 0);
}

/// An INT8 convolution (requantized, no zero point) on Hopper against tc8::Conv, bit for bit.
template <class Sh, int Cp, int Yp, class Tl, int PH, int PW>
void int8_conv_case(unsigned seed, int ctas) {
  using Epi = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::none, 0, true, true, false>;
  using Kern = hopper::Conv<mc::tc::MmaS8<int8_t>, int8_t, Sh, Cp, Yp, Tl, Epi, PH, PW>;
  using Ref = mc::tc8::Conv<int8_t, int8_t, Sh, Cp, Yp, mc::tc::Tile<32, 32, 64, 1, 1, true, 3>, Epi>;
  using I = typename Sh::InDims;
  using O = typename Sh::OutDims;
  std::vector<int8_t> X = random_values<int8_t>(size_t{Sh::kN} * I::kSize * Cp, seed);
  std::vector<int8_t> W = random_values<int8_t>(size_t{Sh::kM} * 9 * Cp, seed + 1);
  for (size_t i = 0; i < W.size(); ++i)
    if (static_cast<int>(i % Cp) >= Sh::kC) W[i] = 0;
  std::vector<float> w_scale(Sh::kM, 0.002f), bias(Sh::kM, 0.25f);
  typename Epi::Params ep;
  ep.x_scale = 0.1f;
  ep.w_scale = w_scale.data();
  ep.bias = bias.data();
  ep.y_scale = 0.5f;
  typename Kern::Params p;
  REQUIRE(Kern::make_maps(p, X.data(), W.data()) == cudaSuccess);
  p.epilogue = ep;
  typename Ref::Params r;
  r.X = X.data();
  r.W = W.data();
  r.epilogue = ep;
  CHECK(mismatches<Kern, Ref, int8_t>(p, r, size_t{Sh::kN} * O::kSize * Yp, ctas, 0) == 0);
}

}  // namespace

TEST_CASE("hopper GEMM (emulation): INT8 (s8 and u8 A) with the requantizing epilogue equals tc8::Gemm") {
  int8_gemm_case<int8_t, 70, 40, 160, hopper::Tile<64, 40, 128, 3, Swizzle::b128, 1>>(61, 2);
  int8_gemm_case<uint8_t, 70, 40, 160, hopper::Tile<64, 40, 64, 4, Swizzle::b64, 1>>(62, 7);  // stream-K
}

TEST_CASE("hopper convolution (emulation): per-tap TMA boxes, padding and strides, FP16 and INT8") {
  fp16_conv_case<Conv3x3, 24, 40, hopper::Tile<64, 40, 16, 3, Swizzle::b32, 1>, 8, 8>(71, 5);
  fp16_conv_case<Conv3x3s2, 16, 24, hopper::Tile<64, 24, 16, 4, Swizzle::b32, 1>, 4, 16>(72, 9);  // stream-K
  int8_conv_case<Conv3x3, 32, 40, hopper::Tile<64, 40, 32, 3, Swizzle::b32, 1>, 8, 8>(73, 4);
}

// ---- the sweep (part of the unit run: about 2.5 s) ----

namespace {

template <class T, bool TransB, Swizzle Sw, int Stages, int Consumers, int BM, int BN>
void sweep_one(unsigned seed) {
  constexpr int E = sizeof(T), BK = Sw == Swizzle::none ? 32 : static_cast<int>(Sw) / E;
  using Tl = hopper::Tile<BM, BN, BK, Stages, Sw, Consumers>;
  std::string fault;
  for (int ctas : {1, 2, 5, 13}) {
    INFO("swizzle " << static_cast<int>(Sw) << ", " << Stages << " stages, " << Consumers << " consumers, " << BM << "x" << BN
                    << (TransB ? ", N-major B" : "") << ", " << ctas << " blocks, seed " << seed);
    const double e = GemmCase<T, 2, 93, 56, 136, TransB, Tl>::run(seed, ctas, &fault);
    CHECK(fault == "");
    CHECK(e >= 0);
    CHECK(e < (std::is_same<T, mc::bf16>::value ? 2e-2 : 2e-3));
  }
}

template <Swizzle Sw, int Stages>
void sweep_swizzle(unsigned seed) {
  sweep_one<__half, false, Sw, Stages, 1, 64, 24>(seed);
  sweep_one<__half, true, Sw, Stages, 2, 128, 64>(seed + 1);
  sweep_one<mc::bf16, false, Sw, Stages, 1, 128, 40>(seed + 2);
}

}  // namespace

TEST_CASE("hopper sweep (emulation): every swizzle x stages 2..5 x FP16 / BF16 x B layout x grids") {
  sweep_swizzle<Swizzle::none, 2>(101);
  sweep_swizzle<Swizzle::none, 5>(102);
  sweep_swizzle<Swizzle::b32, 3>(103);
  sweep_swizzle<Swizzle::b32, 4>(104);
  sweep_swizzle<Swizzle::b64, 2>(105);
  sweep_swizzle<Swizzle::b64, 5>(106);
  sweep_swizzle<Swizzle::b128, 3>(107);
  sweep_swizzle<Swizzle::b128, 4>(108);
  for (int ctas : {1, 3, 8, 20}) {
    int8_gemm_case<int8_t, 131, 72, 224, hopper::Tile<128, 72, 128, 3, Swizzle::b128, 2>>(109, ctas);
    int8_gemm_case<uint8_t, 131, 72, 224, hopper::Tile<64, 24, 32, 5, Swizzle::b32, 1>>(110, ctas);
  }
  fp16_conv_case<Conv3x3, 24, 40, hopper::Tile<128, 40, 32, 4, Swizzle::b64, 2>, 8, 16>(111, 3);
  fp16_conv_case<Conv3x3s2, 16, 24, hopper::Tile<64, 24, 16, 2, Swizzle::b32, 1>, 8, 8>(112, 20);
  int8_conv_case<Conv3x3s2, 16, 24, hopper::Tile<64, 24, 32, 3, Swizzle::none, 1>, 8, 8>(113, 2);
}

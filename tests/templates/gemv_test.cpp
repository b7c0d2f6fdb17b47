// templates/gemv.cuh on the host emulation: M = 1..8 rows, odd and even N and K (1, 7, 8, 9, 63,
// 1000, 2049), B K-contiguous (transB) and N-contiguous, batched with a broadcast B, FP16 and FP32
// storage, K splits, an offset B (the scalar loads), against a host reference in double; and every
// epilogue (Gemm's alpha / beta / C, FusedGemm's bias + activation + residual, identity) against
// the reference interpreter.
#include "linear_test_util.h"
#include "schedule/families.h"
#include "schedule/tactics.h"
#include "templates/gemv.cuh"

using namespace linear_test;
using modelc::linear::GemmLowering;

namespace {

template <class T>
T to_t(double v) {
  return static_cast<T>(static_cast<float>(v));
}

/// Values in [-1, 1), rounded to T (the reference then sees what the kernel sees).
template <class T>
std::vector<T> values(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> r;
  for (int64_t i = 0; i < n; ++i) r.push_back(to_t<T>(u(rng)));
  return r;
}

/// Runs Gemv<T, ..., Config<Warps, KSplit>, EpilogueLinear> on batch x M x N x K (A [batch][M][K],
/// B [N][K] (K-contiguous) or [K][N], shared by the batch, at `offset` elements into its buffer;
/// C [N]; alpha 0.5, beta 2) and compares with the double reference.
template <class T, int Batch, int M, int N, int K, bool KContiguous, int Warps, int KSplit, int Offset = 0>
void check_shape(uint64_t seed) {
  using Sh = mc::gemm::Shape<1, 1, Batch, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, int64_t{M} * K, K, 1>;
  using SB = std::conditional_t<KContiguous, mc::gemm::Strides<0, 0, 0, 1, K>, mc::gemm::Strides<0, 0, 0, N, 1>>;
  using SY = mc::gemm::Strides<0, 0, int64_t{M} * N, N, 1>;
  using SC = mc::gemm::Strides<0, 0, 0, 0, 1>;
  using Epi = mc::gemm::EpilogueLinear<T, SC, true>;
  using G = mc::gemv::Gemv<T, float, Sh, SA, SB, SY, mc::gemv::Config<Warps, KSplit>, Epi>;
  static_assert(G::kKContiguous == KContiguous, "the form follows B's strides");
  INFO("batch " << Batch << " M " << M << " N " << N << " K " << K << (KContiguous ? " K-contiguous" : " N-contiguous")
                << " warps " << Warps << " K split " << KSplit << " offset " << Offset << " vector B " << G::kVectorB
                << (sizeof(T) == 2 ? " FP16" : " FP32"));
  const std::vector<T> a = values<T>(int64_t{Batch} * M * K, seed), c = values<T>(N, seed + 2);
  std::vector<T> b(static_cast<std::size_t>(Offset), to_t<T>(std::nan("")));  // the offset never read
  for (const T& v : values<T>(int64_t{N} * K, seed + 1)) b.push_back(v);
  std::vector<T> y(static_cast<std::size_t>(Batch * M * N), to_t<T>(std::nan("")));
  const typename Epi::Params epi{0.5f, 2.0f, c.data()};
  launch<G>({a.data(), b.data() + Offset, y.data(), epi});

  std::vector<double> want;
  std::vector<float> got;
  for (int bt = 0; bt < Batch; ++bt) {
    for (int m = 0; m < M; ++m) {
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) {
          const T bv = b[static_cast<std::size_t>(Offset + (KContiguous ? int64_t{n} * K + k : int64_t{k} * N + n))];
          s += static_cast<double>(static_cast<float>(a[static_cast<std::size_t>((int64_t{bt} * M + m) * K + k)])) *
               static_cast<double>(static_cast<float>(bv));
        }
        want.push_back(0.5 * s + 2.0 * static_cast<double>(static_cast<float>(c[static_cast<std::size_t>(n)])));
        got.push_back(static_cast<float>(y[static_cast<std::size_t>((int64_t{bt} * M + m) * N + n)]));
      }
    }
  }
  // FP32 sums of up to 2049 products against double; FP16: one rounding of the result to half.
  if constexpr (sizeof(T) == 2) {
    check_close(got, Tensor::from_f64(DType::float32, {static_cast<int64_t>(want.size())}, want), 1e-2, 1e-3);
  } else {
    check_close(got, Tensor::from_f64(DType::float32, {static_cast<int64_t>(want.size())}, want), 1e-4, 2e-4);
  }
}

}  // namespace

TEST_CASE("gemv template: K-contiguous B (transB), FP16 and FP32, odd and even N and K, 1 to 8 rows") {
  // (K 1 makes B N-contiguous whatever its layout: the next case has it)
  // 16-byte loads (K a multiple of 8), with a scalar tail (K 1000 is not a multiple of 32 x 8)
  check_shape<__half, 1, 1, 1000, 2048, true, 4, 1>(1);
  check_shape<float, 1, 1, 1000, 2048, true, 4, 1>(2);
  check_shape<__half, 1, 8, 63, 1000, true, 4, 4>(3);
  check_shape<float, 2, 3, 9, 1000, true, 4, 2>(4);
  check_shape<__half, 3, 2, 8, 8, true, 4, 1>(5);
  // odd K: the column stride forbids 16-byte loads
  check_shape<__half, 1, 5, 7, 2049, true, 4, 2>(6);
  check_shape<float, 1, 8, 2049, 9, true, 4, 1>(7);
  check_shape<__half, 2, 4, 1, 63, true, 4, 4>(8);
  check_shape<float, 1, 7, 8, 7, true, 4, 1>(9);
  check_shape<__half, 1, 6, 1000, 9, true, 4, 1>(10);
  // an offset view: aligned strides, a pointer 2 elements off 16 bytes (the scalar loop at run time)
  check_shape<__half, 1, 1, 63, 2048, true, 4, 2, 2>(11);
  check_shape<float, 1, 2, 9, 1000, true, 4, 1, 1>(12);
  // 8 rows of FP32 K = 2049 in chunks of 512 (A's rows larger than the shared chunk)
  check_shape<float, 1, 8, 7, 2049, true, 4, 4>(13);
}

TEST_CASE("gemv template: N-contiguous B, FP16 and FP32, odd and even N and K, 1 to 8 rows") {
  check_shape<__half, 1, 1, 1000, 2048, false, 4, 4>(21);
  check_shape<float, 1, 1, 1000, 2048, false, 4, 1>(22);
  check_shape<__half, 2, 8, 2049, 63, false, 4, 2>(23);  // N odd: row stride forbids 16-byte loads
  check_shape<float, 1, 3, 63, 9, false, 4, 4>(24);
  check_shape<__half, 1, 5, 8, 1000, false, 4, 1>(25);
  check_shape<float, 3, 6, 9, 7, false, 4, 2>(26);
  check_shape<__half, 1, 7, 1, 2049, false, 4, 4>(27);
  check_shape<float, 1, 4, 7, 1, false, 4, 1>(28);
  check_shape<__half, 1, 2, 1000, 8, false, 4, 1, 4>(29);  // an offset view
  check_shape<__half, 1, 8, 2049, 2049, false, 4, 4>(30);  // 8 rows of FP16 K = 2049 in chunks of 1024
}

namespace {

/// FusedGemm (A [M, K], B [N, K] with transB or [K, N], bias [N], activation A, residual R) of
/// T storage against the reference interpreter.
template <class T, int M, int N, int K, bool TransB, mc::gemm::Act A, mc::gemm::Residual R>
void check_fused(const modelc::ops::EpilogueActivation& act, const std::string& residual, uint64_t seed) {
  const DType dt = sizeof(T) == 2 ? DType::float16 : DType::float32;
  std::vector<Tensor> in = {random({M, K}, seed), random(TransB ? Shape{N, K} : Shape{K, N}, seed + 1),
                            random({N}, seed + 2)};
  if (R != mc::gemm::Residual::none) in.push_back(random({M, N}, seed + 3));
  for (Tensor& t : in) t = t.cast(dt);
  OneNode t("FusedGemm", 13, in);
  t.n->set_attr_int("transB", TransB ? 1 : 0);
  t.n->set_attr_float("alpha", 0.5);
  t.n->set_attr_float("beta", 2.0);
  fuse(t, act, residual);
  const Tensor want = t.reference()[0];
  const GemmLowering g = modelc::linear::lower_gemm(t.kernel("gemm"));
  REQUIRE(g.M == M);
  using Sh = mc::gemm::Shape<1, 1, 1, M, N, K>;
  using SA = mc::gemm::Strides<0, 0, 0, K, 1>;
  using SB = std::conditional_t<TransB, mc::gemm::Strides<0, 0, 0, 1, K>, mc::gemm::Strides<0, 0, 0, N, 1>>;
  using SY = mc::gemm::Strides<0, 0, 0, N, 1>;
  using SBias = mc::gemm::Strides<0, 0, 0, 0, 1>;
  CHECK(g.b.row == SB::kRow);
  CHECK(g.b.col == SB::kCol);
  CHECK(g.c.col == 1);
  using Epi = mc::gemm::EpilogueFused<T, SBias, true, A, R>;
  using G = mc::gemv::Gemv<T, float, Sh, SA, SB, SY, mc::gemv::Config<4, 2>, Epi>;
  auto ptr = [&](int i) { return reinterpret_cast<const T*>(t.feeds.at("x" + std::to_string(i)).raw()); };
  const typename Epi::Params epi{0.5f, 2.0f, ptr(2), R != mc::gemm::Residual::none ? ptr(3) : nullptr,
                                 {float(act.alpha), float(act.beta), act.min ? float(*act.min) : -INFINITY,
                                  act.max ? float(*act.max) : INFINITY}};
  std::vector<T> y(static_cast<std::size_t>(M * N), to_t<T>(std::nan("")));
  launch<G>({ptr(0), ptr(1), y.data(), epi});
  std::vector<float> got;
  for (const T& v : y) got.push_back(static_cast<float>(v));
  if constexpr (sizeof(T) == 2) {
    check_close(got, want, 1e-2, 1e-3);
  } else {
    check_close(got, want);
  }
}

}  // namespace

TEST_CASE("gemv template: every epilogue (alpha / beta / bias, activations, residual before / after, identity)") {
  using modelc::ops::Activation;
  using mc::gemm::Act;
  using mc::gemm::Residual;
  check_fused<float, 1, 63, 1000, true, Act::relu, Residual::before_activation>(activation(Activation::relu),
                                                                                 "before_activation", 41);
  check_fused<__half, 1, 63, 1000, true, Act::gelu, Residual::after_activation>(activation(Activation::gelu),
                                                                                 "after_activation", 42);
  check_fused<__half, 4, 9, 64, false, Act::clip, Residual::none>(activation(Activation::clip, 0, 0, 0.0, 0.5), "", 43);
  check_fused<float, 2, 1000, 7, false, Act::sigmoid, Residual::after_activation>(activation(Activation::sigmoid),
                                                                                  "after_activation", 44);
  SUBCASE("identity: MatMul [3, 2049] x [2049, 8]") {
    OneNode t("MatMul", 13, {random({3, 2049}, 45), random({2049, 8}, 46)});
    const Tensor want = t.reference()[0];
    using G = mc::gemv::Gemv<float, float, mc::gemm::Shape<1, 1, 1, 3, 8, 2049>, mc::gemm::Strides<0, 0, 0, 2049, 1>,
                             mc::gemm::Strides<0, 0, 0, 8, 1>, mc::gemm::Strides<0, 0, 0, 8, 1>, mc::gemv::Config<4, 4>,
                             mc::gemm::EpilogueIdentity>;
    const std::vector<float> a = floats(t.feeds.at("x0")), b = floats(t.feeds.at("x1"));
    std::vector<float> y = output_buffer(24);
    launch<G>({a.data(), b.data(), y.data(), {}});
    check_close(y, want, 1e-4, 2e-4);
  }
}

TEST_CASE("gemm family: products of at most 8 rows run on the GEMV, with a tactic, a note and an estimate") {
  const modelc::KernelFamily* f = modelc::FamilyRegistry::instance().find("gemm");
  REQUIRE(f);
  SUBCASE("the FC layer at batch 1: 1 x 2048 x 1000 FP16 Gemm with transB, on sm_90") {
    OneNode t("Gemm", 13, {random({1, 2048}, 51).cast(DType::float16), random({1000, 2048}, 52).cast(DType::float16),
                           random({1000}, 53).cast(DType::float16)});
    t.n->set_attr_int("transB", 1);
    modelc::Kernel k = t.kernel("gemm");
    const modelc::Target sm90 = modelc::target_for("sm_90");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {sm90});
    CHECK(k.engine == modelc::Engine::gemv);
    CHECK(k.fallback_reason == "at most 8 rows: GEMV");
    // A warp per column, 4 columns per block: 250 blocks, more than the 132 SMs, so no K split.
    CHECK(k.tactic == modelc::Tactic{modelc::GemvTactic{4, 1, 4}});
    CHECK(k.estimate.us > 0);
    CHECK(k.estimate.blocks == 250);
    CHECK(k.estimate.flops == 2.0 * 2048 * 1000);
    CHECK(k.estimate.bytes == 2.0 * (2048 + 1000 * 2048 + 1000 + 1000));
    CHECK(k.estimate.bound == "memory");
    INFO(k.note);
    CHECK(k.note.find("K-contiguous, a warp per column") != std::string::npos);
    CHECK(k.note.find("; estimate for sm_90 (H100 SXM5): ") != std::string::npos);  // the arch it is for
    CHECK(k.note.find("; the tensor-core tactic it replaces: ") != std::string::npos);
    CHECK(k.note.find("(M 1 in tiles of ") != std::string::npos);
    const modelc::KernelLaunches e = f->emit(k, NameContext{});
    REQUIRE(e.launches.size() == 1);
    INFO(e.launches[0].type);
    CHECK(e.launches[0].type.find("mc::gemv::Gemv<float, float, mc::gemm::Shape<1, 1, 1, 1, 1000, 2048>") == 0);
    CHECK(e.launches[0].type.find("/*B*/ mc::gemm::Strides<0, 0, 0, 1, 2048>") != std::string::npos);
    CHECK(e.launches[0].type.find("mc::gemv::Config<4, 1>, mc::gemm::EpilogueLinear<") != std::string::npos);
  }
  SUBCASE("N-contiguous B with few columns: the K split gives the most blocks") {
    OneNode t("MatMul", 13, {random({8, 512}, 54), random({512, 256}, 55)});
    modelc::Kernel k = t.kernel("gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::target_for("sm_80")});
    CHECK(k.engine == modelc::Engine::gemv);
    // FP32: 4 columns per thread, 128 per warp; K split 4: one warp per column group, 2 blocks.
    CHECK(k.tactic == modelc::Tactic{modelc::GemvTactic{4, 4, 128}});
    CHECK(k.estimate.blocks == 2);
    CHECK(k.note.find("tensor-core tactic") == std::string::npos);  // FP32: no tensor cores to compare
  }
  SUBCASE("9 rows: tensor cores") {
    OneNode t("MatMul", 13, {random({9, 512}, 56).cast(DType::float16), random({512, 256}, 57).cast(DType::float16)});
    modelc::Kernel k = t.kernel("gemm");
    modelc::plan_kernel(k);
    modelc::choose_tactic(k, {modelc::target_for("sm_80")});
    // tc::Gemm or the small-M kernel (schedule/small_m.h), both tensor cores.
    CHECK((k.engine == modelc::Engine::tensor_core || k.engine == modelc::Engine::small_m));
  }
}

// templates/attention.cuh on the host emulation (exact ldmatrix / mma.sync lanes, deferred
// cp.async, the shared-memory race check) against softmax(Q K^T * scale + bias) V computed in
// double from the same rounded inputs. Tolerance, per output element, from the kernel's roundings:
// P rounded to T before the second product (u = 2^-11 for FP16, 2^-8 for BF16, relative to each p,
// plus 2^-25 absolute below FP16's normal range), the output rounded to T, and 2^-16 relative for
// the FP32 scores, exponentials and sums:
//   |got - want| <= (u + 2^-16) sum_k p_k |v_k| + 2^-25 sum_k |v_k| [FP16] + u |want| + 2^-25.
// Cases: head dims 32, 40 (a multiple of 8, not of 16), 64, 96, 128; odd sequence lengths and
// query length != key length; Q, K, V read out of one packed QKV buffer [B, S, 3 H D] and O written
// heads-interleaved [B, S, H D] (or into a padded buffer whose gaps must stay untouched); padding
// masks with -inf (a fully masked batch gives NaN rows, as the unfused softmax), relative position
// biases, shifted-window masks indexed by batch % windows, causal top-left, bottom-right and with a
// negative offset (rows that see no key: NaN),
// grouped-query heads; FP16 and BF16; 1..4 warps, 1 or 2 row tiles a warp, 2..4 stages. Planted
// faults (a P fragment element from the wrong lane, the output not rescaled when the running max
// grows) must fail the same check. The long sweep (4100 keys, D = 128 at 1000) is skipped in the
// unit run: ctest -R template_attention_long (label long).
#include <doctest/doctest.h>

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "narrow_float_test_util.h"
#include "templates/attention.cuh"

namespace {

using mc::attn::Plant;

using narrow_float::random_t;
using narrow_float::to_d;
using narrow_float::to_t;

/// The elements a [batch][head][seq][d] view with strides (sb, sh, ss) reaches, for a buffer size.
inline std::size_t extent(int b, int h, int s, int d, int64_t sb, int64_t sh, int64_t ss) {
  return static_cast<std::size_t>((b - 1) * sb + (h - 1) * sh + (s - 1) * ss + d);
}

/// What a case checks: elements outside the tolerance (NaN where the reference is NaN counts as
/// right, anything else as wrong), output elements outside the view that changed, and the largest
/// error relative to its bound.
struct Outcome {
  int bad = 0, touched = 0;
  double worst = 0.0;
  std::string first;
};

/// The bias terms of one case: element (b % batches, h, q, k) at the strides, as doubles.
struct BiasData {
  int batches = 1;
  int64_t sb = 0, sh = 0, sq = 0, sk = 0;
  std::vector<double> values;
  double at(int b, int h, int q, int k) const {
    return values[static_cast<std::size_t>((b % batches) * sb + h * sh + q * sq + k * sk)];
  }
};

/// Fills a bias term of kind B (mc::attn::Bias<TB, Batches, SB, SH, SQ, SK>): values in [-2, 2),
/// `masked(b, h, q, k)` entries -inf. Returns the T storage and the doubles the reference reads.
template <class TB, int Batches, int64_t SB, int64_t SH, int64_t SQ, int64_t SK, class Masked>
std::vector<TB> make_bias(mc::attn::Bias<TB, Batches, SB, SH, SQ, SK>, int H, int Sq, int Skv, std::mt19937_64& rng,
                          Masked masked, BiasData& d) {
  const int hs = SH ? H : 1, qs = SQ ? Sq : 1, ks = SK ? Skv : 1, bs = SB ? Batches : 1;
  const std::size_t n = static_cast<std::size_t>((bs - 1) * SB + (hs - 1) * SH + (qs - 1) * SQ + (ks - 1) * SK + 1);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<TB> r(n, to_t<TB>(0.0));
  d.batches = Batches;
  d.sb = SB;
  d.sh = SH;
  d.sq = SQ;
  d.sk = SK;
  d.values.assign(n, 0.0);
  for (int b = 0; b < bs; ++b)
    for (int h = 0; h < hs; ++h)
      for (int q = 0; q < qs; ++q)
        for (int k = 0; k < ks; ++k) {
          const std::size_t i = static_cast<std::size_t>(b * SB + h * SH + q * SQ + k * SK);
          r[i] = to_t<TB>(masked(b, h, q, k) ? -INFINITY : u(rng));
          d.values[i] = to_d(r[i]);
        }
  return r;
}

struct NoMask {
  bool operator()(int, int, int, int) const { return false; }
};

/// Runs K on random data and compares with the double reference. `seed` varies the data;
/// `mask0(b, h, q, k)` / `mask1` choose the bias terms' -inf entries.
template <class K, class Sh, class VQ, class VK, class VV, class VO, class Mask, class B0, class B1, class T,
          class M0 = NoMask, class M1 = NoMask>
Outcome run_attention(uint64_t seed, bool packed, int64_t o_size, double qk_scale, M0 mask0 = {}, M1 mask1 = {}) {
  std::mt19937_64 rng(seed);
  constexpr int B = Sh::kBatch, H = Sh::kHeads, Hkv = Sh::kKvHeads, Sq = Sh::kQLen, Skv = Sh::kKvLen, D = Sh::kD;
  // Inputs: one buffer at three offsets (packed QKV: the views' strides span it), or three.
  std::vector<T> qkv, qb, kb, vb;
  const T *qp, *kp, *vp;
  const std::size_t nq = extent(B, H, Sq, D, VQ::kB, VQ::kH, VQ::kS);
  const std::size_t nk = extent(B, Hkv, Skv, D, VK::kB, VK::kH, VK::kS);
  const std::size_t nv = extent(B, Hkv, Skv, D, VV::kB, VV::kH, VV::kS);
  if (packed) {
    // Q at 0, K at H D, V at (H + Hkv) D of each row of the packed product.
    const std::size_t n = std::max({nq, nk + static_cast<std::size_t>(H * D), nv + static_cast<std::size_t>((H + Hkv) * D)});
    qkv = random_t<T>(n, rng, -1.5, 1.5);
    qp = qkv.data();
    kp = qkv.data() + H * D;
    vp = qkv.data() + (H + Hkv) * D;
  } else {
    qb = random_t<T>(nq, rng, -1.5, 1.5);
    kb = random_t<T>(nk, rng, -1.5, 1.5);
    vb = random_t<T>(nv, rng, -1.0, 1.0);
    qp = qb.data();
    kp = kb.data();
    vp = vb.data();
  }
  auto at = [](const T* base, int64_t sb, int64_t sh, int64_t ss, int b, int h, int s, int d) {
    return to_d(base[b * sb + h * sh + s * ss + d]);
  };

  BiasData d0, d1;
  std::vector<typename B0::Elem> b0;
  std::vector<typename B1::Elem> b1;
  if constexpr (B0::kPresent) b0 = make_bias(B0{}, H, Sq, Skv, rng, mask0, d0);
  if constexpr (B1::kPresent) b1 = make_bias(B1{}, H, Sq, Skv, rng, mask1, d1);

  std::vector<T> o(static_cast<std::size_t>(o_size), to_t<T>(NAN));
  typename K::Params p{};
  p.q = qp;
  p.k = kp;
  p.v = vp;
  p.o = o.data();
  if constexpr (B0::kPresent) p.bias0 = b0.data();
  if constexpr (B1::kPresent) p.bias1 = b1.data();
  p.scale = static_cast<float>(qk_scale);
  REQUIRE(cudaFuncSetAttribute(mc::attn::kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes) ==
          cudaSuccess);
  REQUIRE(mc::launch(mc::attn::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);

  constexpr bool kBf16 = std::is_same<T, mc::bf16>::value;
  const double u = narrow_float::unit_roundoff<T>();
  const double sub = kBf16 ? 0.0 : std::ldexp(1.0, -25);  // FP16's subnormal spacing / 2
  Outcome r;
  std::vector<bool> in_view(o.size(), false);
  std::vector<double> s(Skv), pk(Skv);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const int hk = h / (H / Hkv);
      for (int i = 0; i < Sq; ++i) {
        double mx = -INFINITY;
        for (int j = 0; j < Skv; ++j) {
          double acc = 0.0;
          for (int d = 0; d < D; ++d)
            acc += at(qp, VQ::kB, VQ::kH, VQ::kS, b, h, i, d) * at(kp, VK::kB, VK::kH, VK::kS, b, hk, j, d);
          double x = acc * static_cast<double>(p.scale);
          if constexpr (B0::kPresent) x += d0.at(b, h, i, j);
          if constexpr (B1::kPresent) x += d1.at(b, h, i, j);
          if (Mask::kOn && j > i + Mask::kOffset) x = -INFINITY;
          s[j] = x;
          mx = std::max(mx, x);
        }
        double l = 0.0;
        for (int j = 0; j < Skv; ++j) {
          pk[j] = mx == -INFINITY ? 0.0 : std::exp(s[j] - mx);
          l += pk[j];
        }
        for (int d = 0; d < D; ++d) {
          double num = 0.0, mag = 0.0, abs_sum = 0.0;
          for (int j = 0; j < Skv; ++j) {
            const double vv = at(vp, VV::kB, VV::kH, VV::kS, b, hk, j, d);
            num += pk[j] * vv;
            mag += pk[j] * std::abs(vv);
            abs_sum += std::abs(vv);
          }
          const double want = mx == -INFINITY ? NAN : num / l;
          const std::size_t oi = static_cast<std::size_t>(b * VO::kB + h * VO::kH + i * VO::kS + d);
          in_view[oi] = true;
          const double got = to_d(o[oi]);
          bool ok;
          if (std::isnan(want)) {
            ok = std::isnan(got);
          } else {
            const double bound = 1.05 * ((u + std::ldexp(1.0, -16)) * mag / l + sub * abs_sum + u * std::abs(want) + sub);
            const double err = std::abs(got - want);
            ok = err <= bound;  // false for NaN
            if (ok) r.worst = std::max(r.worst, err / bound);
          }
          if (!ok && r.bad++ == 0)
            r.first = "b " + std::to_string(b) + " h " + std::to_string(h) + " q " + std::to_string(i) + " d " +
                      std::to_string(d) + ": got " + std::to_string(got) + ", want " + std::to_string(want);
        }
      }
    }
  for (std::size_t i = 0; i < o.size(); ++i)
    if (!in_view[i] && !std::isnan(to_d(o[i]))) ++r.touched;
  return r;
}

void require_pass(const Outcome& r) {
  INFO(r.first);
  CHECK(r.bad == 0);
  CHECK(r.touched == 0);
  MESSAGE("worst error / bound " << r.worst);
}

using mc::attn::Bias;
using mc::attn::Causal;
using mc::attn::NoBias;
using mc::attn::NotCausal;
using mc::attn::Shape;
using mc::attn::Tile;
using mc::attn::View;

/// Views of a packed QKV product [B, S, (H + 2 Hkv) D] and of O heads-interleaved [B, S, H D].
template <int S, int H, int D, int Hkv = H>
using Packed = View<int64_t{S} * (H + 2 * Hkv) * D, D, (H + 2 * Hkv) * D>;
template <int S, int H, int D>
using Interleaved = View<int64_t{S} * H * D, D, H * D>;
/// [B, H, S, D] contiguous.
template <int S, int H, int D>
using Bhsd = View<int64_t{S} * H * D, int64_t{S} * D, D>;

/// The packed-QKV, heads-interleaved case (the BERT-like layer's), any Plant.
template <class T, Plant P, int D = 64, int S = 37, int H = 2, int B = 2>
Outcome packed_case(uint64_t seed) {
  using Sh = Shape<B, H, S, S, D>;
  using VP = Packed<S, H, D>;
  using VO = Interleaved<S, H, D>;
  using Tl = Tile<32, 32, 2, 2>;
  using K = mc::attn::Attention<T, Sh, VP, VP, VP, VO, Tl, NoBias, NoBias, NotCausal, P>;
  return run_attention<K, Sh, VP, VP, VP, VO, NotCausal, NoBias, NoBias, T>(seed, true, int64_t{B} * S * H * D,
                                                                             1.0 / std::sqrt(double{D}));
}

}  // namespace

TEST_CASE("attention: packed QKV in, heads interleaved out, odd length (37 over 32-key tiles), FP16 and BF16") {
  SUBCASE("fp16") { require_pass(packed_case<__half, Plant::none>(1)); }
  SUBCASE("bf16") { require_pass(packed_case<mc::bf16, Plant::none>(2)); }
  SUBCASE("one key tile, D 32, one warp") {
    using Sh = Shape<1, 3, 9, 9, 32>;
    using VP = Packed<9, 3, 32>;
    using VO = Interleaved<9, 3, 32>;
    using K = mc::attn::Attention<__half, Sh, VP, VP, VP, VO, Tile<16, 16, 1, 2>>;
    require_pass(run_attention<K, Sh, VP, VP, VP, VO, NotCausal, NoBias, NoBias, __half>(3, true, 9 * 3 * 32, 0.2));
  }
}

TEST_CASE("attention: planted faults fail the check (a P element from the wrong lane, no rescale of O)") {
  const Outcome good = packed_case<__half, Plant::none>(4);
  CHECK(good.bad == 0);
  const Outcome lane = packed_case<__half, Plant::p_fragment_lane>(4);
  INFO(lane.first);
  CHECK(lane.bad > 0);
  const Outcome rescale = packed_case<__half, Plant::no_rescale>(4);
  INFO(rescale.first);
  CHECK(rescale.bad > 0);
  const Outcome rescale_bf16 = packed_case<mc::bf16, Plant::no_rescale>(5);
  CHECK(rescale_bf16.bad > 0);
}

TEST_CASE("attention: padding mask [B, 1, 1, Skv] with -inf keys, Sq != Skv, [B, H, S, D] views, 2 row tiles a warp, 3 stages") {
  constexpr int B = 3, H = 2, Sq = 20, Skv = 75, D = 32;
  using Sh = Shape<B, H, Sq, Skv, D>;
  using VQ = Bhsd<Sq, H, D>;
  using VK = Bhsd<Skv, H, D>;
  using Pad = Bias<float, B, Skv, 0, 0, 1>;
  // Batch 1: its last 30 keys masked; batch 2: every key masked (NaN rows, as the unfused softmax).
  auto masked = [](int b, int, int, int k) { return (b == 1 && k >= Skv - 30) || b == 2; };
  using K = mc::attn::Attention<__half, Sh, VQ, VK, VK, VQ, Tile<64, 16, 2, 3>, Pad>;
  const Outcome r = run_attention<K, Sh, VQ, VK, VK, VQ, NotCausal, Pad, NoBias, __half>(
      6, false, int64_t{B} * H * Sq * D, 0.25, masked);
  require_pass(r);
}

TEST_CASE("attention: causal (top-left) with a relative position bias [1, H, S, S], D 128, one warp of 16 rows") {
  constexpr int B = 1, H = 2, S = 50, D = 128;
  using Sh = Shape<B, H, S, S, D>;
  using VP = Packed<S, H, D>;
  using VO = Interleaved<S, H, D>;
  using Rel = Bias<__half, 1, 0, int64_t{S} * S, S, 1>;
  using K = mc::attn::Attention<__half, Sh, VP, VP, VP, VO, Tile<16, 32, 1, 2>, Rel, NoBias, Causal<0>>;
  require_pass(run_attention<K, Sh, VP, VP, VP, VO, Causal<0>, Rel, NoBias, __half>(7, true, int64_t{B} * S * H * D,
                                                                                  1.0 / std::sqrt(128.0)));
}

TEST_CASE("attention: shifted windows (BF16, D 96): relative bias [1, H, 49, 49] plus a mask [nW, 1, 49, 49] read at batch % nW") {
  constexpr int Images = 2, Windows = 4, B = Images * Windows, H = 3, S = 49, D = 96;
  using Sh = Shape<B, H, S, S, D>;
  using VP = Packed<S, H, D>;
  using VO = Interleaved<S, H, D>;
  using Rel = Bias<mc::bf16, 1, 0, int64_t{S} * S, S, 1>;
  using Win = Bias<float, Windows, int64_t{S} * S, 0, S, 1>;
  // Window w masks the pairs whose regions differ (here: a block pattern that depends on w).
  auto region = [](int w, int i) { return w == 0 ? 0 : (i * (w + 1)) / S; };
  auto masked = [&](int w, int, int q, int k) { return region(w, q) != region(w, k); };
  using K = mc::attn::Attention<mc::bf16, Sh, VP, VP, VP, VO, Tile<32, 32, 2, 2>, Rel, Win>;
  require_pass(run_attention<K, Sh, VP, VP, VP, VO, NotCausal, Rel, Win, mc::bf16>(
      8, true, int64_t{B} * S * H * D, 1.0 / std::sqrt(96.0), NoMask{}, masked));
}

TEST_CASE("attention: D 40 (a multiple of 8, not 16), grouped-query heads (4 on 2), causal bottom-right (Sq 17, Skv 33)") {
  constexpr int B = 2, H = 4, Hkv = 2, Sq = 17, Skv = 33, D = 40;
  using Sh = Shape<B, H, Sq, Skv, D, Hkv>;
  using VQ = Bhsd<Sq, H, D>;
  using VK = Bhsd<Skv, Hkv, D>;
  // O into a padded buffer: rows of H D + 8, so the gaps must stay NaN.
  using VO = View<int64_t{Sq} * (H * D + 8), D, H * D + 8>;
  using M = Causal<Skv - Sq>;
  using K = mc::attn::Attention<__half, Sh, VQ, VK, VK, VO, Tile<32, 16, 2, 4>, NoBias, NoBias, M>;
  require_pass(run_attention<K, Sh, VQ, VK, VK, VO, M, NoBias, NoBias, __half>(9, false, int64_t{B} * Sq * (H * D + 8),
                                                                            1.0 / std::sqrt(40.0)));
}

TEST_CASE("attention: causal with a negative offset (Sq 20 > Skv 12): the first rows see no key and are NaN") {
  constexpr int B = 1, H = 2, Sq = 20, Skv = 12, D = 16;
  using Sh = Shape<B, H, Sq, Skv, D>;
  using VQ = Bhsd<Sq, H, D>;
  using VK = Bhsd<Skv, H, D>;
  using M = Causal<-4>;
  using K = mc::attn::Attention<__half, Sh, VQ, VK, VK, VQ, Tile<16, 16, 1, 2>, NoBias, NoBias, M>;
  require_pass(run_attention<K, Sh, VQ, VK, VK, VQ, M, NoBias, NoBias, __half>(13, false, int64_t{B} * H * Sq * D, 0.25));
  // Offset -16: the first block's 16 rows see no key at all (it runs no key tile).
  using M16 = Causal<-16>;
  using K16 = mc::attn::Attention<__half, Sh, VQ, VK, VK, VQ, Tile<16, 16, 1, 2>, NoBias, NoBias, M16>;
  require_pass(run_attention<K16, Sh, VQ, VK, VK, VQ, M16, NoBias, NoBias, __half>(14, false, int64_t{B} * H * Sq * D, 0.25));
}

TEST_CASE("attention: 4 warps of 32 rows, Q fragments from shared memory, causal with a padding mask in BF16 bias storage (FP16)") {
  constexpr int B = 2, H = 1, S = 130, D = 64;
  using Sh = Shape<B, H, S, S, D>;
  using VP = Packed<S, H, D>;
  using VO = Interleaved<S, H, D>;
  using Pad = Bias<mc::bf16, B, S, 0, 0, 1>;
  auto masked = [](int b, int, int, int k) { return b == 1 && k % 7 == 3; };
  using K = mc::attn::Attention<__half, Sh, VP, VP, VP, VO, Tile<128, 32, 4, 2, false>, Pad, NoBias, Causal<0>>;
  require_pass(run_attention<K, Sh, VP, VP, VP, VO, Causal<0>, Pad, NoBias, __half>(10, true, int64_t{B} * S * H * D,
                                                                                  0.125, masked));
}

// ---- the long sweep (label long: ctest -R template_attention_long) ------------------------------

TEST_CASE("attention long: 4100 keys (no S-sized buffer), 70 queries, FP16, 4 warps" * doctest::skip()) {
  constexpr int B = 1, H = 2, Sq = 70, Skv = 4100, D = 64;
  using Sh = Shape<B, H, Sq, Skv, D>;
  using VQ = Bhsd<Sq, H, D>;
  using VK = Bhsd<Skv, H, D>;
  using K = mc::attn::Attention<__half, Sh, VQ, VK, VK, VQ, Tile<64, 64, 4, 3>>;
  require_pass(run_attention<K, Sh, VQ, VK, VK, VQ, NotCausal, NoBias, NoBias, __half>(11, false,
                                                                                     int64_t{B} * H * Sq * D, 0.125));
}

TEST_CASE("attention long: D 128, 1000 x 1000 causal with a relative bias, BF16" * doctest::skip()) {
  constexpr int B = 1, H = 1, S = 1000, D = 128;
  using Sh = Shape<B, H, S, S, D>;
  using VP = Packed<S, H, D>;
  using VO = Interleaved<S, H, D>;
  using Rel = Bias<float, 1, 0, 0, S, 1>;
  using K = mc::attn::Attention<mc::bf16, Sh, VP, VP, VP, VO, Tile<64, 64, 4, 2>, Rel, NoBias, Causal<0>>;
  require_pass(run_attention<K, Sh, VP, VP, VP, VO, Causal<0>, Rel, NoBias, mc::bf16>(12, true, int64_t{B} * S * H * D,
                                                                                    1.0 / std::sqrt(128.0)));
}

TEST_CASE("attention long: seeds x head dims (32, 64, 80, 128) x odd lengths" * doctest::skip()) {
  for (uint64_t seed = 100; seed < 104; ++seed) {
    require_pass(packed_case<__half, Plant::none, 32, 97, 3, 2>(seed));
    require_pass(packed_case<mc::bf16, Plant::none, 64, 129, 2, 1>(seed));
    require_pass(packed_case<__half, Plant::none, 80, 61, 2, 2>(seed));
    require_pass(packed_case<__half, Plant::none, 128, 255, 1, 1>(seed));
  }
}

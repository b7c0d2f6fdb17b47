// templates/tensor_core_int8.cuh on the host emulation, against modelc.QConv / QMatMul's reference
// evaluation (compiler/ops/int8_products.cpp), bit for bit: the integer MMAs are exact and the
// epilogue runs the reference's float32 operations in its order. First the primitives: mma.sync
// m16n8k32 (int8 and uint8 A) and m8n8k16 with operands placed per the PTX ISA's per-lane fragment
// layouts give the exact product, and one element in the wrong lane gives a wrong one; ldmatrix
// delivers 8-bit rows as the m16n8k32 fragments. Then the kernels: convolutions (1x1, 3x3, 7x7 s2
// compact-K on C = 3, a 3-D one) with both stagings, 2..4 stages and split-K, int8 / uint8 inputs,
// zero points (a run-time one: the padding reads it), quantized / INT32 / FP16 / FP32 outputs, INT8
// and FP16 residuals; GEMMs of odd and aligned shapes.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <random>

#include "ops/quantize.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "reference/interpreter.h"
#include "schedule/layout.h"
#include "templates/tensor_core_int8.cuh"

using namespace modelc;

namespace {

// ---- the primitives ----------------------------------------------------------------------------

/// Lane `l` builds its fragments as lane perm[l] would (identity: the documented layout), runs the
/// m16n8k32 MMA and writes D at its own lane's positions.
template <class TA>
__global__ void mma_k32_kernel(const TA* A, const int8_t* B, const int* C, int* D, const int* perm) {
  const int lane = static_cast<int>(mc::lane_id());
  const int src = perm[lane], g = src / 4, t = src % 4;
  auto bytes = [](const void* p) {
    unsigned r;
    std::memcpy(&r, p, 4);
    return r;
  };
  unsigned a[4] = {bytes(A + g * 32 + 4 * t), bytes(A + (g + 8) * 32 + 4 * t), bytes(A + g * 32 + 16 + 4 * t),
                   bytes(A + (g + 8) * 32 + 16 + 4 * t)};
  unsigned b[2] = {0, 0};
  for (int i = 0; i < 4; ++i) {
    b[0] |= static_cast<unsigned>(static_cast<uint8_t>(B[(4 * t + i) * 8 + g])) << (8 * i);
    b[1] |= static_cast<unsigned>(static_cast<uint8_t>(B[(16 + 4 * t + i) * 8 + g])) << (8 * i);
  }
  const int G = lane / 4, T = lane % 4;
  const int c[4] = {C[G * 8 + 2 * T], C[G * 8 + 2 * T + 1], C[(G + 8) * 8 + 2 * T], C[(G + 8) * 8 + 2 * T + 1]};
  int d[4];
  mc::mma_m16n8k32<TA>(d, a, b, c);
  D[G * 8 + 2 * T] = d[0];
  D[G * 8 + 2 * T + 1] = d[1];
  D[(G + 8) * 8 + 2 * T] = d[2];
  D[(G + 8) * 8 + 2 * T + 1] = d[3];
}

/// The same for m8n8k16: A 8 x 16, B 16 x 8, C / D 8 x 8.
__global__ void mma_k16_kernel(const int8_t* A, const int8_t* B, const int* C, int* D, const int* perm) {
  const int lane = static_cast<int>(mc::lane_id());
  const int src = perm[lane], g = src / 4, t = src % 4;
  unsigned a, b = 0;
  std::memcpy(&a, A + g * 16 + 4 * t, 4);
  for (int i = 0; i < 4; ++i) b |= static_cast<unsigned>(static_cast<uint8_t>(B[(4 * t + i) * 8 + g])) << (8 * i);
  const int G = lane / 4, T = lane % 4;
  const int c[2] = {C[G * 8 + 2 * T], C[G * 8 + 2 * T + 1]};
  int d[2];
  mc::mma_m8n8k16<int8_t>(d, a, b, c);
  D[G * 8 + 2 * T] = d[0];
  D[G * 8 + 2 * T + 1] = d[1];
}

/// A 16 x 32 A tile and a 32 x 8 B tile (stored as 8 rows of k) staged in shared memory, loaded with
/// ldmatrix.x4 (lane 8i + j: row j of matrix i; `bad_lane` points one row too far), multiplied.
__global__ void ldmatrix_kernel(const int8_t* A, const int8_t* Bt, int* D, int bad_lane) {
  __shared__ __align__(16) unsigned char sa[16 * 48], sb[16 * 48];
  const int lane = static_cast<int>(mc::lane_id());
  for (int r = lane; r < 16; r += 32) {
    for (int q = 0; q < 2; ++q) {
      uint4 v;
      std::memcpy(&v, A + r * 32 + 16 * q, 16);
      mc::st_shared(reinterpret_cast<uint4*>(sa + r * 48 + 16 * q), v);
      if (r < 8) {
        std::memcpy(&v, Bt + r * 32 + 16 * q, 16);
        mc::st_shared(reinterpret_cast<uint4*>(sb + r * 48 + 16 * q), v);
      }
    }
  }
  __syncwarp();
  const int i = lane / 8, j = lane % 8 + (lane == bad_lane ? 1 : 0);
  unsigned a[4], b[2];
  // A: matrix i is (rows (i % 2) * 8 .., bytes (i / 2) * 16 ..); B (8 columns only): matrices 0, 1
  // are (n 0..7, bytes 0..15 / 16..31), x2.
  mc::ldmatrix<4>(a, sa + ((i % 2) * 8 + j) * 48 + (i / 2) * 16);
  unsigned r2[2];
  mc::ldmatrix<2>(r2, sb + (j % 8) * 48 + (i % 2) * 16);
  b[0] = r2[0];
  b[1] = r2[1];
  const int zero[4] = {0, 0, 0, 0};
  int d[4];
  mc::mma_m16n8k32<int8_t>(d, a, b, zero);
  const int G = lane / 4, T = lane % 4;
  D[G * 8 + 2 * T] = d[0];
  D[G * 8 + 2 * T + 1] = d[1];
  D[(G + 8) * 8 + 2 * T] = d[2];
  D[(G + 8) * 8 + 2 * T + 1] = d[3];
}

template <class T>
std::vector<T> random_bytes(std::size_t n, uint64_t seed, int lo, int hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(u(rng));
  return v;
}

std::vector<int> identity_lanes() {
  std::vector<int> p(32);
  for (int i = 0; i < 32; ++i) p[static_cast<std::size_t>(i)] = i;
  return p;
}

template <class K, class... Args>
void run1(K kernel, Args... args) {
  REQUIRE(mc::launch(kernel, dim3(1), dim3(32), 0, cudaStream_t{}, args...) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

}  // namespace

TEST_CASE("mma.sync m16n8k32 (int8 and uint8 A) and m8n8k16: exact in the PTX fragment layouts; a wrong lane is wrong") {
  const std::vector<int8_t> B = random_bytes<int8_t>(32 * 8, 2, -128, 127);
  const std::vector<int> C = random_bytes<int>(16 * 8, 3, -100000, 100000);
  std::vector<int> perm = identity_lanes();
  auto expect = [&](const auto& A) {
    std::vector<int> want(16 * 8);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 8; ++j) {
        int64_t s = C[static_cast<std::size_t>(i * 8 + j)];
        for (int k = 0; k < 32; ++k) s += static_cast<int64_t>(A[static_cast<std::size_t>(i * 32 + k)]) * B[static_cast<std::size_t>(k * 8 + j)];
        want[static_cast<std::size_t>(i * 8 + j)] = static_cast<int>(s);
      }
    return want;
  };
  const std::vector<int8_t> A = random_bytes<int8_t>(16 * 32, 1, -128, 127);
  const std::vector<uint8_t> U = random_bytes<uint8_t>(16 * 32, 4, 0, 255);
  std::vector<int> D(16 * 8, 0);
  run1(mma_k32_kernel<int8_t>, A.data(), B.data(), C.data(), D.data(), perm.data());
  CHECK(D == expect(A));
  run1(mma_k32_kernel<uint8_t>, U.data(), B.data(), C.data(), D.data(), perm.data());
  CHECK(D == expect(U));  // .u8 A: 255 is 255, not -1
  // Lanes 5 and 6 swap their fragments: elements land where the hardware does not take them.
  std::swap(perm[5], perm[6]);
  run1(mma_k32_kernel<int8_t>, A.data(), B.data(), C.data(), D.data(), perm.data());
  CHECK(D != expect(A));

  // m8n8k16 (what sm_75 runs): A 8 x 16, B 16 x 8.
  perm = identity_lanes();
  std::vector<int> want(64), D8(64, 0);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      int64_t s = C[static_cast<std::size_t>(i * 8 + j)];
      for (int k = 0; k < 16; ++k) s += static_cast<int64_t>(A[static_cast<std::size_t>(i * 16 + k)]) * B[static_cast<std::size_t>(k * 8 + j)];
      want[static_cast<std::size_t>(i * 8 + j)] = static_cast<int>(s);
    }
  run1(mma_k16_kernel, A.data(), B.data(), C.data(), D8.data(), perm.data());
  CHECK(D8 == want);
  std::swap(perm[0], perm[31]);
  run1(mma_k16_kernel, A.data(), B.data(), C.data(), D8.data(), perm.data());
  CHECK(D8 != want);
}

TEST_CASE("ldmatrix delivers 8-bit rows as m16n8k32 fragments; a wrong row address is wrong") {
  const std::vector<int8_t> A = random_bytes<int8_t>(16 * 32, 11, -128, 127);
  const std::vector<int8_t> Bt = random_bytes<int8_t>(8 * 32, 12, -128, 127);  // [n][k]
  std::vector<int> want(16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      int s = 0;
      for (int k = 0; k < 32; ++k) s += A[static_cast<std::size_t>(i * 32 + k)] * Bt[static_cast<std::size_t>(j * 32 + k)];
      want[static_cast<std::size_t>(i * 8 + j)] = s;
    }
  std::vector<int> D(16 * 8, 0);
  run1(ldmatrix_kernel, A.data(), Bt.data(), D.data(), -1);
  CHECK(D == want);
  run1(ldmatrix_kernel, A.data(), Bt.data(), D.data(), 13);  // lane 13 gives row 6 of matrix 1 for row 5
  CHECK(D != want);
}

// ---- the kernels against the reference -------------------------------------------------------------

namespace {

/// A graph of one modelc.QConv or QMatMul node: X (and a residual, and a run-time zero point) graph
/// inputs, the rest constants.
struct Int8Node {
  std::unique_ptr<Graph> g = std::make_unique<Graph>();  // movable: the node pointers stay valid
  Node* n = nullptr;
  TensorMap feeds;
  Int8Node(const std::string& op, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& residual,
           const Tensor& w_scale, const Tensor& zero_point, const Tensor& w_sum) {
    g->set_opset(17);
    auto input = [&](const std::string& name, const Tensor& t) -> Value* {
      if (!t.defined()) return nullptr;
      Value* v = g->add_value(name);
      v->set_type(t.dtype(), t.shape());
      g->add_input(v);
      feeds[name] = t;
      return v;
    };
    auto constant = [&](const std::string& name, const Tensor& t) -> Value* {
      return t.defined() ? g->add_constant(name, t, true) : nullptr;
    };
    std::vector<Value*> ins{input("x", x), constant("w", w), constant("b", bias), input("r", residual),
                            constant("ws", w_scale), input("zp", zero_point), constant("wsum", w_sum)};
    while (!ins.empty() && !ins.back()) ins.pop_back();
    Value* y = g->add_value("y");
    n = g->add_node(op, "node", ins, {y});
    n->set_domain(ops::kModelcDomain);
    n->set_covers({"node"});
    g->add_output(y);
  }
  Tensor run() {
    ops::infer_graph(*g);
    return run_reference(*g, feeds).at("y");
  }
};

Tensor random_int(DType t, Shape s, uint64_t seed, int lo, int hi) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int64_t> v(static_cast<std::size_t>(num_elements(s)));
  for (int64_t& x : v) x = u(rng);
  return Tensor::from_i64(t, std::move(s), v);
}

Tensor random_scales(int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = static_cast<float>(u(rng));
  return Tensor::from_f32({n}, v);
}

/// [N, C, spatial...] as NHWC bytes with channel pitch `pitch`, the padding `fill`.
template <class T>
std::vector<T> nhwc(const Tensor& t, int64_t pitch, T fill) {
  const Shape& s = t.shape();
  const int64_t N = s[0], C = s[1], P = t.numel() / (N * C);
  const std::vector<int64_t> v = t.to_i64();
  std::vector<T> r(static_cast<std::size_t>(N * P * pitch), fill);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) r[static_cast<std::size_t>((n * P + p) * pitch + c)] = static_cast<T>(v[static_cast<std::size_t>((n * C + c) * P + p)]);
  return r;
}

/// An NHWC buffer (pitch) read back as the [N, C, spatial...] values.
template <class T>
std::vector<double> from_nhwc(const std::vector<T>& y, const Shape& s, int64_t pitch) {
  const int64_t N = s[0], C = s[1], P = num_elements(s) / (N * C);
  std::vector<double> r(static_cast<std::size_t>(num_elements(s)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) r[static_cast<std::size_t>((n * C + c) * P + p)] = static_cast<double>(y[static_cast<std::size_t>((n * P + p) * pitch + c)]);
  return r;
}

Tensor weight_sum(const Tensor& w) {
  const int64_t M = w.shape()[0], K = w.numel() / M;
  const std::vector<int64_t> v = w.to_i64();
  std::vector<int64_t> s(static_cast<std::size_t>(M), 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) s[static_cast<std::size_t>(m)] += v[static_cast<std::size_t>(m * K + k)];
  return Tensor::from_i64(DType::int32, {M}, s);
}

template <class K>
void launch8(typename K::Params p) {
  REQUIRE(cudaFuncSetAttribute(mc::tc::kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, K::kSmemBytes) == cudaSuccess);
  std::vector<int> partial;
  if constexpr (K::Tl::kSplitK > 1) {
    partial.assign(static_cast<std::size_t>(K::Tl::kSplitK) * K::kRows * K::kCols, 0x5a5a5a5a);  // garbage a split must overwrite
    p.partial = partial.data();
  }
  REQUIRE(mc::launch(mc::tc::kernel<K>, K::grid(), K::block(), K::kSmemBytes, cudaStream_t{}, p) == cudaSuccess);
  if constexpr (K::Tl::kSplitK > 1) {
    using R = mc::tc8::SplitKReduce8<K>;
    REQUIRE(mc::launch(mc::tc::kernel<R>, R::grid(), R::block(), 0, cudaStream_t{}, p) == cudaSuccess);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

void check_equal(const std::vector<double>& got, const Tensor& want, double tol = 0) {
  const std::vector<double> w = want.to_f64();
  REQUIRE(got.size() == w.size());
  int bad = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (!(std::fabs(got[i] - w[i]) <= tol)) {
      if (++bad <= 5) {
        INFO("element " << i << ": got " << got[i] << ", want " << w[i]);
        CHECK(false);
      }
    }
  }
  CHECK(bad == 0);
}

using mc::conv::Dims3;

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> pads, strides;
  DType xt = DType::int8;
};

/// A QConv node for `c` with the epilogue set by `attrs` (to, scales, activation, residual).
Int8Node conv_node(const ConvCase& c, DType out, bool bias, DType residual, bool runtime_zp, int64_t zp, uint64_t seed) {
  const int64_t M = c.w[0];
  Shape y{c.x[0], M};
  for (std::size_t d = 2; d < c.x.size(); ++d) {
    y.push_back((c.x[d] + 2 * c.pads[d - 2] - c.w[d]) / c.strides[d - 2] + 1);
  }
  const bool u8 = c.xt == DType::uint8;
  const Tensor x = random_int(c.xt, c.x, seed, u8 ? 0 : -128, u8 ? 255 : 127);
  const Tensor w = random_int(DType::int8, c.w, seed + 1, -127, 127);
  const Tensor b = bias ? random_scales(M, seed + 2, -2, 2) : Tensor();
  Tensor r;
  if (residual == DType::int8) r = random_int(DType::int8, y, seed + 3, -128, 127);
  if (residual == DType::float16) r = random_scales(num_elements(y), seed + 3, -4, 4).reshaped(y).cast(DType::float16);
  const Tensor zpt = runtime_zp ? Tensor::from_i64(c.xt, {}, {zp}) : Tensor();
  const bool has_zp = runtime_zp || zp != 0;
  Int8Node t("QConv", x, w, b, r, out == DType::int32 ? Tensor() : random_scales(M, seed + 4, 0.004, 0.012), zpt,
             has_zp ? weight_sum(w) : Tensor());
  std::vector<int64_t> pads = c.pads;
  pads.insert(pads.end(), c.pads.begin(), c.pads.end());
  t.n->set_attr_ints("pads", pads);
  t.n->set_attr_ints("strides", c.strides);
  t.n->set_attr_int("to", static_cast<int64_t>(out));
  if (out != DType::int32) t.n->set_attr_float("x_scale", 0.03);
  if (!runtime_zp && zp != 0) t.n->set_attr_int("x_zero_point", zp);
  if (out == DType::int8 || out == DType::uint8) t.n->set_attr_float("y_scale", 0.4);
  if (residual != DType::undefined) t.n->set_attr_string("residual_position", "before_activation");
  if (residual == DType::int8) t.n->set_attr_float("residual_scale", 0.02);
  return t;
}

/// Runs tc8::Conv<TA, TY, Sh, Cp, Yp, Tl, Epi, Compact> on t's operands; Y read back as [N, M, ...].
template <class TA, class TY, class Sh, int Cp, int Yp, class Tl, class Epi, bool Compact = false, class TR = TY>
std::vector<double> run_conv8(Int8Node& t, const Tensor& want) {
  using K = mc::tc8::Conv<TA, TY, Sh, Cp, Yp, Tl, Epi, Compact>;
  const Tensor& x = t.feeds.at("x");
  const Tensor& w = t.n->input(1).constant();
  const std::vector<TA> xb = nhwc<TA>(x, Cp, static_cast<TA>(99));  // padded channels hold garbage
  const WeightStorage ws = Compact ? WeightStorage{Sh::kC, K::kKw, true}
                                   : WeightStorage{Cp, int64_t{Sh::KernelDims::kSize} * Cp, false};
  const Tensor wo = ohwi_weights(w, ws);
  std::vector<int8_t> wb(static_cast<std::size_t>(wo.numel()));
  std::memcpy(wb.data(), wo.raw(), wb.size());
  std::vector<TY> y(static_cast<std::size_t>(want.numel() / Sh::kM * Yp));
  typename K::Params p{};
  p.X = xb.data();
  p.W = wb.data();
  p.Y = y.data();
  const ops::Int8Epilogue e = ops::int8_epilogue(*t.n);
  p.epilogue.x_scale = static_cast<float>(e.x_scale);
  if (t.n->has_input(ops::kQWeightScaleInput)) p.epilogue.w_scale = t.n->input(ops::kQWeightScaleInput).constant().data<float>();
  if (t.n->has_input(ops::kQBiasInput)) p.epilogue.bias = t.n->input(ops::kQBiasInput).constant().data<float>();
  std::vector<TR> rb;
  if (t.n->has_input(ops::kQResidualInput)) {
    const Tensor& r = t.feeds.at("r");
    if constexpr (std::is_same<TR, __half>::value) {
      const std::vector<double> rv = r.to_f64();
      rb.assign(static_cast<std::size_t>(want.numel() / Sh::kM * Yp), __float2half(0.0f));
      const Shape& s = r.shape();
      const int64_t P = r.numel() / (s[0] * s[1]);
      for (int64_t n = 0; n < s[0]; ++n)
        for (int64_t c = 0; c < s[1]; ++c)
          for (int64_t q = 0; q < P; ++q) rb[static_cast<std::size_t>((n * P + q) * Yp + c)] = __float2half(static_cast<float>(rv[static_cast<std::size_t>((n * s[1] + c) * P + q)]));
    } else {
      rb = nhwc<TR>(r, Yp, TR{});
    }
    p.epilogue.residual = rb.data();
    p.epilogue.residual_scale = static_cast<float>(e.residual_scale);
  }
  p.epilogue.y_scale = static_cast<float>(e.y_scale);
  p.epilogue.y_zero_point = static_cast<int>(e.y_zero_point);
  p.epilogue.x_zero_point = static_cast<int>(e.x_zero_point);
  p.epilogue.act.alpha = static_cast<float>(e.act.alpha);
  p.epilogue.act.beta = static_cast<float>(e.act.beta);
  if (e.act.min) p.epilogue.act.min = static_cast<float>(*e.act.min);
  if (e.act.max) p.epilogue.act.max = static_cast<float>(*e.act.max);
  if (t.n->has_input(ops::kQWeightSumInput)) p.epilogue.w_sum = t.n->input(ops::kQWeightSumInput).constant().data<int32_t>();
  std::vector<TA> zpb;
  if (e.runtime_zero_point) {
    zpb.push_back(static_cast<TA>(t.feeds.at("zp").i64_at(0)));
    p.epilogue.x_zero_point_ptr = zpb.data();
  }
  launch8<K>(p);
  return from_nhwc(y, want.shape(), Yp);
}

using Sh3x3 = mc::conv::Shape<2, 20, 40, 1, Dims3<1, 9, 9>, Dims3<1, 3, 3>, Dims3<1, 9, 9>, Dims3<1, 1, 1>, Dims3<0, 1, 1>,
                              Dims3<1, 1, 1>>;
template <bool A, int S = 2, int K = 1>
using T64 = mc::tc::Tile<64, 64, 32, 2, 2, A, S, K>;
template <bool A, int S = 2, int K = 1>
using T32 = mc::tc::Tile<32, 32, 64, 1, 1, A, S, K>;

}  // namespace

TEST_CASE("tc8::Conv 3x3: quantized int8 output with bias, an INT8 residual and relu, exactly the reference") {
  Int8Node t = conv_node({{2, 20, 9, 9}, {40, 20, 3, 3}, {1, 1}, {1, 1}}, DType::int8, true, DType::int8, false, 0, 100);
  t.n->set_attr_string("activation", "relu");
  const Tensor want = t.run();
  using Epi = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::relu, 1, true, true, false>;
  check_equal(run_conv8<int8_t, int8_t, Sh3x3, 32, 48, T64<true, 3>, Epi>(t, want), want);
  check_equal(run_conv8<int8_t, int8_t, Sh3x3, 32, 48, T64<false>, Epi>(t, want), want);       // register staging
  check_equal(run_conv8<int8_t, int8_t, Sh3x3, 32, 48, T32<true, 4, 3>, Epi>(t, want), want);  // split-K 3
  check_equal(run_conv8<int8_t, int8_t, Sh3x3, 32, 40, T32<false, 2, 2>, Epi>(t, want), want); // Y unpadded
  // Not everything saturates or is zero: the output uses the range.
  int64_t inside = 0;
  for (int64_t v : want.to_i64()) inside += v > 0 && v < 127;
  CHECK(inside > want.numel() / 4);
}

TEST_CASE("tc8::Conv: uint8 X with a run-time zero point (the padding reads it), the INT32 accumulators") {
  Int8Node t = conv_node({{2, 20, 9, 9}, {40, 20, 3, 3}, {1, 1}, {1, 1}, DType::uint8}, DType::int32, false,
                         DType::undefined, true, 131, 200);
  const Tensor want = t.run();
  using Epi = mc::tc8::Epilogue<int32_t, int32_t, mc::Act::none, 0, false, false, true>;
  check_equal(run_conv8<uint8_t, int32_t, Sh3x3, 32, 40, T64<true, 2>, Epi>(t, want), want);
  check_equal(run_conv8<uint8_t, int32_t, Sh3x3, 32, 40, T64<false, 2, 2>, Epi>(t, want), want);
  // The zero point's correction is what makes it right: without it (an Epilogue that ignores it) the
  // sums are off by zx * sum(w) inside, less in the border.
  using NoZp = mc::tc8::Epilogue<int32_t, int32_t, mc::Act::none, 0, false, false, false>;
  const std::vector<double> wrong = run_conv8<uint8_t, int32_t, Sh3x3, 32, 40, T64<true, 2>, NoZp>(t, want);
  CHECK(wrong != want.to_f64());
}

TEST_CASE("tc8::Conv: a constant zero point, uint8 quantized output with its zero point") {
  Int8Node t = conv_node({{2, 20, 9, 9}, {40, 20, 3, 3}, {1, 1}, {1, 1}, DType::uint8}, DType::uint8, true,
                         DType::undefined, false, 17, 300);
  t.n->set_attr_int("y_zero_point", 100);
  const Tensor want = t.run();
  using Epi = mc::tc8::Epilogue<uint8_t, uint8_t, mc::Act::none, 0, true, true, true>;
  check_equal(run_conv8<uint8_t, uint8_t, Sh3x3, 32, 48, T64<true, 3>, Epi>(t, want), want);
}

TEST_CASE("tc8::Conv: FP16 output with an FP16 residual after the activation, FP32 output") {
  Int8Node t = conv_node({{2, 20, 9, 9}, {40, 20, 3, 3}, {1, 1}, {1, 1}}, DType::float16, true, DType::float16, false, 0, 400);
  t.n->set_attr_string("residual_position", "after_activation");
  t.n->set_attr_string("activation", "clip");
  t.n->set_attr_float("activation_min", -1.0);
  t.n->set_attr_float("activation_max", 2.5);
  const Tensor want = t.run();
  using Epi = mc::tc8::Epilogue<__half, __half, mc::Act::clip, 2, true, true, false>;
  check_equal(run_conv8<int8_t, __half, Sh3x3, 32, 48, T64<true, 3>, Epi>(t, want), want);
  check_equal(run_conv8<int8_t, __half, Sh3x3, 32, 48, T32<false, 2, 2>, Epi>(t, want), want);
  Int8Node u = conv_node({{2, 20, 9, 9}, {40, 20, 3, 3}, {1, 1}, {1, 1}}, DType::float32, true, DType::undefined, false, 0, 500);
  const Tensor want32 = u.run();
  using Epi32 = mc::tc8::Epilogue<float, float, mc::Act::none, 0, true, true, false>;
  check_equal(run_conv8<int8_t, float, Sh3x3, 32, 40, T64<true, 2>, Epi32>(u, want32), want32);
  check_equal(run_conv8<int8_t, float, Sh3x3, 32, 40, T32<false, 2, 4>, Epi32>(u, want32), want32);
}

TEST_CASE("tc8::Conv: 7x7 stride 2 pad 3 on C = 3, compact K (W rows of 160) and padded to a pitch of 16") {
  Int8Node t = conv_node({{1, 3, 20, 20}, {24, 3, 7, 7}, {3, 3}, {2, 2}}, DType::int8, true, DType::undefined, false, 0, 600);
  t.n->set_attr_string("activation", "relu");
  const Tensor want = t.run();
  using Sh = mc::conv::Shape<1, 3, 24, 1, Dims3<1, 20, 20>, Dims3<1, 7, 7>, Dims3<1, 10, 10>, Dims3<1, 2, 2>,
                             Dims3<0, 3, 3>, Dims3<1, 1, 1>>;
  using Epi = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::relu, 0, true, true, false>;
  check_equal(run_conv8<int8_t, int8_t, Sh, 3, 24, T64<true, 3>, Epi, true>(t, want), want);
  check_equal(run_conv8<int8_t, int8_t, Sh, 3, 24, T32<false>, Epi, true>(t, want), want);
  check_equal(run_conv8<int8_t, int8_t, Sh, 16, 32, T64<true, 2>, Epi>(t, want), want);
}

TEST_CASE("tc8::Conv: 3-D, 1x1") {
  Int8Node t = conv_node({{1, 16, 4, 5, 6}, {32, 16, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}}, DType::int8, false,
                         DType::undefined, false, 0, 700);
  const Tensor want = t.run();
  using Sh = mc::conv::Shape<1, 16, 32, 1, Dims3<4, 5, 6>, Dims3<3, 3, 3>, Dims3<4, 5, 6>, Dims3<1, 1, 1>,
                             Dims3<1, 1, 1>, Dims3<1, 1, 1>>;
  using Epi = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::none, 0, false, true, false>;
  check_equal(run_conv8<int8_t, int8_t, Sh, 16, 32, T32<true, 2>, Epi>(t, want), want);
  Int8Node u = conv_node({{3, 64, 5, 5}, {72, 64, 1, 1}, {0, 0}, {1, 1}}, DType::int8, true, DType::undefined, false, 0, 800);
  const Tensor want1 = u.run();
  using Sh1 = mc::conv::Shape<3, 64, 72, 1, Dims3<1, 5, 5>, Dims3<1, 1, 1>, Dims3<1, 5, 5>, Dims3<1, 1, 1>,
                              Dims3<0, 0, 0>, Dims3<1, 1, 1>>;
  using Epi1 = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::none, 0, true, true, false>;
  check_equal(run_conv8<int8_t, int8_t, Sh1, 64, 72, mc::tc::Tile<128, 64, 64, 2, 2, true, 2>, Epi1>(u, want1), want1);
}

namespace {

Int8Node gemm_node(int64_t M, int64_t N, int64_t K, DType out, DType at, int64_t zp, uint64_t seed) {
  const bool u8 = at == DType::uint8;
  const Tensor a = random_int(at, {M, K}, seed, u8 ? 0 : -128, u8 ? 255 : 127);
  const Tensor b = random_int(DType::int8, {N, K}, seed + 1, -127, 127);
  Int8Node t("QMatMul", a, b, out == DType::int32 ? Tensor() : random_scales(N, seed + 2, -1, 1), Tensor(),
             out == DType::int32 ? Tensor() : random_scales(N, seed + 3, 0.004, 0.012), Tensor(),
             zp != 0 ? weight_sum(b) : Tensor());
  t.n->set_attr_int("to", static_cast<int64_t>(out));
  if (out != DType::int32) t.n->set_attr_float("x_scale", 0.02);
  if (zp != 0) t.n->set_attr_int("x_zero_point", zp);
  if (out == DType::int8) t.n->set_attr_float("y_scale", 0.04);
  return t;
}

template <class TA, class TY, int M, int N, int K, class Tl, class Epi>
std::vector<double> run_gemm8(Int8Node& t) {
  using Kern = mc::tc8::Gemm<TA, TY, M, N, K, K, 1, K, N, Tl, Epi>;
  std::vector<TA> a(static_cast<std::size_t>(M * K));
  std::vector<int8_t> b(static_cast<std::size_t>(N * K));
  const std::vector<int64_t> av = t.feeds.at("x").to_i64(), bv = t.n->input(1).constant().to_i64();
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<TA>(av[i]);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(bv[i]);
  std::vector<TY> y(static_cast<std::size_t>(M * N));
  typename Kern::Params p{};
  p.A = a.data();
  p.B = b.data();
  p.Y = y.data();
  const ops::Int8Epilogue e = ops::int8_epilogue(*t.n);
  p.epilogue.x_scale = static_cast<float>(e.x_scale);
  if (t.n->has_input(ops::kQWeightScaleInput)) p.epilogue.w_scale = t.n->input(ops::kQWeightScaleInput).constant().data<float>();
  if (t.n->has_input(ops::kQBiasInput)) p.epilogue.bias = t.n->input(ops::kQBiasInput).constant().data<float>();
  p.epilogue.y_scale = static_cast<float>(e.y_scale);
  p.epilogue.x_zero_point = static_cast<int>(e.x_zero_point);
  if (t.n->has_input(ops::kQWeightSumInput)) p.epilogue.w_sum = t.n->input(ops::kQWeightSumInput).constant().data<int32_t>();
  launch8<Kern>(p);
  std::vector<double> r;
  for (const TY& v : y) r.push_back(static_cast<double>(v));
  return r;
}

}  // namespace

TEST_CASE("tc8::Gemm: odd shapes (element loads), aligned ones (16-byte chunks), uint8 A with a zero point, split-K") {
  Int8Node t = gemm_node(37, 29, 19, DType::int8, DType::int8, 0, 900);
  const Tensor want = t.run();
  using Q = mc::tc8::Epilogue<int8_t, int8_t, mc::Act::none, 0, true, true, false>;
  check_equal(run_gemm8<int8_t, int8_t, 37, 29, 19, T32<true, 2>, Q>(t), want);
  check_equal(run_gemm8<int8_t, int8_t, 37, 29, 19, T64<false>, Q>(t), want);
  Int8Node u = gemm_node(64, 96, 256, DType::float32, DType::int8, 0, 1000);
  const Tensor want_u = u.run();
  using F = mc::tc8::Epilogue<float, float, mc::Act::none, 0, true, true, false>;
  check_equal(run_gemm8<int8_t, float, 64, 96, 256, T64<true, 3>, F>(u), want_u);
  check_equal(run_gemm8<int8_t, float, 64, 96, 256, T32<true, 2, 2>, F>(u), want_u);
  Int8Node v = gemm_node(40, 48, 96, DType::int32, DType::uint8, 128, 1100);
  const Tensor want_v = v.run();
  using R = mc::tc8::Epilogue<int32_t, int32_t, mc::Act::none, 0, false, false, true>;
  check_equal(run_gemm8<uint8_t, int32_t, 40, 48, 96, T32<false>, R>(v), want_v);
}

// compiler/ops/gemm.cpp — Gemm, MatMul, Einsum.
//
// Float products run through reference/kernels.h (BLAS over threads, double accumulation, or
// float32 on the precision simulations' path); integer products and Einsum run over double
// buffers in i-k-j order: the innermost loop streams a row of B into a row of Y, both contiguous.
#include <algorithm>
#include <array>

#include "ops/common.h"
#include "ops/gemm.h"
#include "reference/kernels.h"

namespace modelc::ops {
namespace {

void require_numeric(const Node& n, int i) {
  if (n.has_input(i) && n.input(i).has_type()) {
    require_dtype(n, i, {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int32, DType::int64,
                         DType::uint32, DType::uint64});
  }
}

void require_same_dtype(const Node& n, int a, int b) {
  if (!n.has_input(a) || !n.has_input(b) || !n.input(a).has_type() || !n.input(b).has_type()) return;
  if (n.input(a).dtype() != n.input(b).dtype()) {
    throw n.error("input " + std::to_string(b) + " ('" + n.input(b).name() + "') is " +
                  dtype_name(n.input(b).dtype()) + ", input " + std::to_string(a) + " ('" + n.input(a).name() +
                  "') is " + dtype_name(n.input(a).dtype()) + ": they must have the same type");
  }
}

/// Y[M x N] += A[M x K] * B[K x N], all row-major and contiguous.
/// i-k-j order, blocked over k and j so that the block of B being streamed
/// (kKBlock x kJBlock doubles, 512 KiB) stays in cache while every row of A
/// passes over it: B is read from memory once instead of once per row.
void matmul_accumulate(const double* A, const double* B, double* Y, int64_t M, int64_t K, int64_t N) {
  constexpr int64_t kKBlock = 128, kJBlock = 512;
  for (int64_t k0 = 0; k0 < K; k0 += kKBlock) {
    const int64_t k1 = std::min(K, k0 + kKBlock);
    for (int64_t j0 = 0; j0 < N; j0 += kJBlock) {
      const int64_t jn = std::min(N, j0 + kJBlock) - j0;
      for (int64_t i = 0; i < M; ++i) {
        double* __restrict y = Y + i * N + j0;
        for (int64_t k = k0; k < k1; ++k) {
          const double a = A[i * K + k];
          const double* __restrict b = B + k * N + j0;
          int64_t j = 0;
          // Unrolled by 4 so the compiler can pair the lanes into vector ops.
          for (; j + 4 <= jn; j += 4) {
            y[j] += a * b[j];
            y[j + 1] += a * b[j + 1];
            y[j + 2] += a * b[j + 2];
            y[j + 3] += a * b[j + 3];
          }
          for (; j < jn; ++j) y[j] += a * b[j];
        }
      }
    }
  }
}

// ---- Gemm ------------------------------------------------------------------

struct GemmDims {
  int64_t M = 0, K = 0, N = 0;
};

GemmDims gemm_dims(const Node& n) {
  const Shape& a = n.input(0).shape();
  const Shape& b = n.input(1).shape();
  if (a.size() != 2) throw n.error("input A ('" + n.input(0).name() + "') has shape " + shape_str(a) + ", expected rank 2");
  if (b.size() != 2) throw n.error("input B ('" + n.input(1).name() + "') has shape " + shape_str(b) + ", expected rank 2");
  const GemmAttributes at = gemm_attributes(n);
  const bool ta = at.trans_a, tb = at.trans_b;
  GemmDims d;
  d.M = ta ? a[1] : a[0];
  d.K = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0];
  d.N = tb ? b[0] : b[1];
  if (kb != d.K) {
    throw n.error("inner dims differ: A ('" + n.input(0).name() + "') is " + shape_str(a) + (ta ? " transposed" : "") +
                  ", B ('" + n.input(1).name() + "') is " + shape_str(b) + (tb ? " transposed" : "") + " (K " +
                  std::to_string(d.K) + " vs " + std::to_string(kb) + ")");
  }
  if (n.has_input(2)) {
    // C broadcasts unidirectionally to M x N (before opset 7 only with broadcast=1).
    const Shape& c = n.input(2).shape();
    const Shape target{d.M, d.N};
    const bool may_broadcast = n.opset() >= 7 || n.attr_int("broadcast", 0) != 0;
    if (!may_broadcast && c != target) {
      throw n.error("input C ('" + n.input(2).name() + "') has shape " + shape_str(c) + ", expected " +
                    shape_str(target) + " (attribute 'broadcast' is 0)");
    }
    bool ok = c.size() <= 2;
    for (std::size_t i = 0; ok && i < c.size(); ++i) {
      const int64_t t = target[2 - c.size() + i];
      ok = c[i] == 1 || c[i] == t;
    }
    if (!ok) {
      throw n.error("input C ('" + n.input(2).name() + "') has shape " + shape_str(c) +
                    ", which does not broadcast to the result " + shape_str(target));
    }
  }
  return d;
}

void validate_gemm(const Node& n) {
  for (const char* t : {"transA", "transB"}) {
    const int64_t v = n.attr_int(t, 0);
    if (v != 0 && v != 1) throw n.error(std::string("attribute '") + t + "' is " + std::to_string(v) + ", expected 0 or 1");
  }
  gemm_attributes(n);  // alpha and beta are floats
  for (int i = 0; i < 3; ++i) require_numeric(n, i);
  require_same_dtype(n, 0, 1);
  require_same_dtype(n, 0, 2);
}

/// The product of float operands through reference/kernels.h (BLAS, threads), as doubles:
/// op(A[a_index[t]]) * op(B[b_index[t]]) for each batch t. The float32 path
/// (reference::Accumulation::f32) multiplies float32 data as it is stored (sgemm) and widens the
/// result exactly; otherwise the operands are doubles (dgemm).
std::vector<double> float_product(const Tensor& A, bool t_a, const Tensor& B, bool t_b, int64_t batches,
                                  const int64_t* a_index, const int64_t* b_index, int64_t M, int64_t K, int64_t N) {
  if (reference::accumulation() == reference::Accumulation::f32 && A.dtype() == DType::float32 &&
      B.dtype() == DType::float32) {
    std::vector<float> y(static_cast<std::size_t>(batches * M * N));
    reference::matmul<float>(batches, a_index, b_index, M, K, N, A.data<float>(), t_a, B.data<float>(), t_b, y.data());
    return std::vector<double>(y.begin(), y.end());
  }
  const std::vector<double> a = A.to_f64(), b = B.to_f64();
  std::vector<double> y(static_cast<std::size_t>(batches * M * N));
  reference::matmul<double>(batches, a_index, b_index, M, K, N, a.data(), t_a, b.data(), t_b, y.data());
  return y;
}

Tensor eval_gemm(const Node& n, const TensorRefs& in) {
  const GemmDims d = gemm_dims(n);
  const GemmAttributes at = gemm_attributes(n);
  const bool ta = at.trans_a, tb = at.trans_b;
  const double alpha = at.alpha, beta = at.beta;
  std::vector<double> y;
  if (is_float(in[0]->dtype())) {
    const int64_t first = 0;
    y = float_product(*in[0], ta, *in[1], tb, 1, &first, &first, d.M, d.K, d.N);
  } else {
    // Integers: the plain loops, in double as before (BLAS would sum in another order).
    std::vector<double> a = in[0]->to_f64(), b = in[1]->to_f64();
    auto transpose = [](const std::vector<double>& v, int64_t rows, int64_t cols) {
      std::vector<double> t(v.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
      return t;
    };
    if (ta) a = transpose(a, d.K, d.M);
    if (tb) b = transpose(b, d.N, d.K);
    y.assign(static_cast<std::size_t>(d.M * d.N), 0.0);
    matmul_accumulate(a.data(), b.data(), y.data(), d.M, d.K, d.N);
  }
  for (double& v : y) v *= alpha;
  if (in.size() > 2 && in[2]) {
    const std::vector<double> c = in[2]->to_f64();
    const std::vector<int64_t> ci = broadcast_index(in[2]->shape(), {d.M, d.N});
    for (std::size_t k = 0; k < y.size(); ++k) y[k] += beta * c[ci[k]];
  }
  return Tensor::from_f64(in[0]->dtype(), {d.M, d.N}, y);
}

// ---- MatMul ----------------------------------------------------------------

/// numpy matmul: 1-D operands are promoted to matrices and the added dim is
/// removed from the result; batch dims broadcast.
struct MatMulDims {
  int64_t M = 0, K = 0, N = 0;
  Shape batch_a, batch_b, batch;  // batch dims of A, B, and their broadcast
  Shape out;
};

MatMulDims matmul_dims(const Node& n) {
  const Shape& a = n.input(0).shape();
  const Shape& b = n.input(1).shape();
  if (a.empty()) throw n.error("input A ('" + n.input(0).name() + "') is a scalar, MatMul needs rank 1 or more");
  if (b.empty()) throw n.error("input B ('" + n.input(1).name() + "') is a scalar, MatMul needs rank 1 or more");
  MatMulDims d;
  Shape a2 = a, b2 = b;
  if (a.size() == 1) a2.insert(a2.begin(), 1);
  if (b.size() == 1) b2.push_back(1);
  d.M = a2[a2.size() - 2];
  d.K = a2.back();
  d.N = b2.back();
  const int64_t kb = b2[b2.size() - 2];
  if (kb != d.K) {
    throw n.error("inner dims differ: A ('" + n.input(0).name() + "') is " + shape_str(a) + ", B ('" +
                  n.input(1).name() + "') is " + shape_str(b) + " (K " + std::to_string(d.K) + " vs " +
                  std::to_string(kb) + ")");
  }
  d.batch_a.assign(a2.begin(), a2.end() - 2);
  d.batch_b.assign(b2.begin(), b2.end() - 2);
  d.batch = broadcast_shapes(n, d.batch_a, d.batch_b);
  d.out = d.batch;
  if (a.size() > 1) d.out.push_back(d.M);
  if (b.size() > 1) d.out.push_back(d.N);
  return d;
}

void validate_matmul(const Node& n) {
  require_numeric(n, 0);
  require_numeric(n, 1);
  require_same_dtype(n, 0, 1);
}

Tensor eval_matmul(const Node& n, const TensorRefs& in) {
  const MatMulDims d = matmul_dims(n);
  const std::vector<int64_t> ia = broadcast_index(d.batch_a, d.batch);
  const std::vector<int64_t> ib = broadcast_index(d.batch_b, d.batch);
  const int64_t batches = num_elements(d.batch);
  if (is_float(in[0]->dtype())) {
    return Tensor::from_f64(in[0]->dtype(), d.out,
                            float_product(*in[0], false, *in[1], false, batches, ia.data(), ib.data(), d.M, d.K, d.N));
  }
  // Integers: the plain loops, in double as before.
  const std::vector<double> a = in[0]->to_f64(), b = in[1]->to_f64();
  std::vector<double> y(static_cast<std::size_t>(batches * d.M * d.N), 0.0);
  for (int64_t t = 0; t < batches; ++t) {
    matmul_accumulate(a.data() + ia[t] * d.M * d.K, b.data() + ib[t] * d.K * d.N, y.data() + t * d.M * d.N, d.M,
                      d.K, d.N);
  }
  return Tensor::from_f64(in[0]->dtype(), d.out, y);
}

// ---- Einsum ----------------------------------------------------------------

bool is_label(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Letters in loop order (output letters first), with their sizes.
struct EinsumPlan {
  EinsumEquation spec;
  std::string letters;
  std::vector<int64_t> dims;
  Shape out;
};

EinsumPlan einsum_plan(const Node& n) {
  EinsumPlan p;
  p.spec = parse_einsum(n);
  const std::string eq = n.attr_string("equation", "");
  std::array<int64_t, 128> size;
  size.fill(-1);
  for (std::size_t t = 0; t < p.spec.terms.size(); ++t) {
    const std::string& term = p.spec.terms[t];
    const Shape& s = n.input(static_cast<int>(t)).shape();
    if (term.size() != s.size()) {
      throw n.error("equation '" + eq + "': operand " + std::to_string(t) + " ('" + term + "') has " +
                    std::to_string(term.size()) + " letters, input '" + n.input(static_cast<int>(t)).name() +
                    "' has shape " + shape_str(s));
    }
    for (std::size_t i = 0; i < term.size(); ++i) {
      int64_t& sz = size[static_cast<unsigned char>(term[i])];
      if (sz >= 0 && sz != s[i]) {
        throw n.error("equation '" + eq + "': letter '" + std::string(1, term[i]) + "' has sizes " +
                      std::to_string(sz) + " and " + std::to_string(s[i]));
      }
      sz = s[i];
    }
  }
  p.letters = p.spec.out;
  for (const std::string& term : p.spec.terms) {
    for (char c : term) {
      if (p.letters.find(c) == std::string::npos) p.letters += c;
    }
  }
  for (char c : p.letters) p.dims.push_back(size[static_cast<unsigned char>(c)]);
  p.out.assign(p.dims.begin(), p.dims.begin() + static_cast<std::ptrdiff_t>(p.spec.out.size()));
  return p;
}

// General evaluator: for each output element, sum over the remaining letters
// the product of the operands. Each operand's stride per letter is the sum of
// its strides for that letter, so a letter repeated in one term walks its
// diagonal.
Tensor eval_einsum(const Node& n, const TensorRefs& in) {
  const EinsumPlan p = einsum_plan(n);
  const std::size_t L = p.letters.size(), nout = p.spec.out.size(), nops = in.size();
  std::vector<std::vector<double>> v(nops);
  std::vector<std::vector<int64_t>> stride(nops, std::vector<int64_t>(L, 0));
  for (std::size_t t = 0; t < nops; ++t) {
    v[t] = in[t]->to_f64();
    const std::vector<int64_t> st = strides_of(in[t]->shape());
    const std::string& term = p.spec.terms[t];
    for (std::size_t i = 0; i < term.size(); ++i) stride[t][p.letters.find(term[i])] += st[i];
  }
  const int64_t out_count = num_elements(p.out);
  int64_t sum_count = 1;
  for (std::size_t l = nout; l < L; ++l) sum_count *= p.dims[l];
  std::vector<double> y(static_cast<std::size_t>(out_count), 0.0);
  std::vector<int64_t> idx(L, 0), off(nops, 0);
  // Advances the odometer over letters [first, last) (the last fastest); false when it wraps.
  auto step = [&](std::size_t first, std::size_t last) {
    for (std::size_t l = last; l-- > first;) {
      for (std::size_t t = 0; t < nops; ++t) off[t] += stride[t][l];
      if (++idx[l] < p.dims[l]) return true;
      for (std::size_t t = 0; t < nops; ++t) off[t] -= stride[t][l] * p.dims[l];
      idx[l] = 0;
    }
    return false;
  };
  for (int64_t o = 0; o < out_count; ++o) {
    double acc = 0.0;
    for (int64_t s = 0; s < sum_count; ++s) {
      double prod = 1.0;
      for (std::size_t t = 0; t < nops; ++t) prod *= v[t][static_cast<std::size_t>(off[t])];
      acc += prod;
      step(nout, L);
    }
    y[static_cast<std::size_t>(o)] = acc;
    step(0, nout);
  }
  return Tensor::from_f64(in[0]->dtype(), p.out, y);
}

void validate_einsum(const Node& n) {
  parse_einsum(n);
  for (int i = 0; i < n.num_inputs(); ++i) {
    require_numeric(n, i);
    require_same_dtype(n, 0, i);
  }
}

}  // namespace

GemmAttributes gemm_attributes(const Node& n) {
  GemmAttributes a;
  a.trans_a = n.attr_int("transA", 0) != 0;
  a.trans_b = n.attr_int("transB", 0) != 0;
  a.alpha = n.attr_float("alpha", 1.0);
  a.beta = n.attr_float("beta", 1.0);
  return a;
}

namespace {

// The equation with each '...' replaced by letters it does not use (numpy's rule): in an operand,
// the dims its letters do not name, right-aligned across operands (the last ones of the same
// letters); in the output, all of them, in order; an implicit output is those letters, then the
// letters that appear once, alphabetically. `s` has no spaces.
std::string expand_ellipsis(const Node& n, const std::string& eq, const std::string& s) {
  const std::size_t arrow = s.find("->");
  const std::string lhs = arrow == std::string::npos ? s : s.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  auto ellipsis_at = [&](const std::string& t) {
    const std::size_t at = t.find("...");
    const std::size_t dots = static_cast<std::size_t>(std::count(t.begin(), t.end(), '.'));
    if (dots != 0 && (at == std::string::npos || dots != 3)) {
      throw n.error("equation '" + eq + "' has a '.' that is not part of one ellipsis ('...') in '" + t + "'");
    }
    return at;
  };
  std::vector<int64_t> extra(terms.size(), 0);
  int64_t most = 0;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    if (ellipsis_at(terms[t]) == std::string::npos) continue;
    if (static_cast<int>(t) >= n.num_inputs() || !n.has_input(static_cast<int>(t)) ||
        !n.input(static_cast<int>(t)).has_type()) {
      throw n.error("equation '" + eq + "': operand " + std::to_string(t) + " has an ellipsis and no known rank");
    }
    extra[t] = n.input(static_cast<int>(t)).rank() - static_cast<int64_t>(terms[t].size() - 3);
    if (extra[t] < 0) {
      throw n.error("equation '" + eq + "': operand " + std::to_string(t) + " ('" + terms[t] + "') names more dims than input '" +
                    n.input(static_cast<int>(t)).name() + "' " + shape_str(n.input(static_cast<int>(t)).shape()) + " has");
    }
    most = std::max(most, extra[t]);
  }
  std::string fresh;  // the ellipsis's letters, outermost first
  for (char c = 'A'; static_cast<int64_t>(fresh.size()) < most && c <= 'z'; c = c == 'Z' ? 'a' : static_cast<char>(c + 1)) {
    if (s.find(c) == std::string::npos) fresh += c;
  }
  if (static_cast<int64_t>(fresh.size()) < most) throw n.error("equation '" + eq + "' leaves too few letters for its ellipsis");
  std::string out_lhs;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    std::string term = terms[t];
    const std::size_t at = ellipsis_at(term);
    if (at != std::string::npos) term.replace(at, 3, fresh.substr(static_cast<std::size_t>(most - extra[t])));
    out_lhs += (t ? "," : "") + term;
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = s.substr(arrow + 2);
    const std::size_t at = ellipsis_at(out);
    if (at != std::string::npos) out.replace(at, 3, fresh);
  } else {
    std::array<int, 128> count{};
    for (char c : lhs) {
      if (is_label(c)) ++count[static_cast<unsigned char>(c)];
    }
    out = fresh;
    for (int c = 0; c < 128; ++c) {
      if (count[c] == 1) out += static_cast<char>(c);
    }
  }
  return out_lhs + "->" + out;
}

}  // namespace

EinsumEquation parse_einsum(const Node& n) {
  if (!n.has_attr("equation")) throw n.error("attribute 'equation' is missing");
  const std::string eq = n.attr_string("equation", "");
  std::string s;
  for (char c : eq) {
    if (c != ' ') s += c;
  }
  if (s.find('.') != std::string::npos) s = expand_ellipsis(n, eq, s);
  EinsumEquation spec;
  spec.text = eq;
  const std::size_t arrow = s.find("->");
  const std::string lhs = arrow == std::string::npos ? s : s.substr(0, arrow);
  std::string cur;
  for (char c : lhs) {
    if (c == ',') {
      spec.terms.push_back(cur);
      cur.clear();
    } else if (is_label(c)) {
      cur += c;
    } else {
      throw n.error("equation '" + eq + "' has the character '" + std::string(1, c) +
                    "', expected letters, ',' and '->'");
    }
  }
  spec.terms.push_back(cur);
  if (arrow != std::string::npos) {
    spec.out = s.substr(arrow + 2);
    for (char c : spec.out) {
      if (!is_label(c)) {
        throw n.error("equation '" + eq + "' has the character '" + std::string(1, c) + "' in its output");
      }
      if (std::count(spec.out.begin(), spec.out.end(), c) > 1) {
        throw n.error("equation '" + eq + "' repeats '" + std::string(1, c) + "' in its output");
      }
      if (lhs.find(c) == std::string::npos) {
        throw n.error("equation '" + eq + "' has output letter '" + std::string(1, c) + "' that no operand has");
      }
    }
  } else {
    // Implicit output: the letters that appear exactly once, in alphabetical order.
    std::array<int, 128> count{};
    for (char c : lhs) {
      if (is_label(c)) ++count[static_cast<unsigned char>(c)];
    }
    for (int c = 0; c < 128; ++c) {
      if (count[c] == 1) spec.out += static_cast<char>(c);
    }
  }
  if (static_cast<int>(spec.terms.size()) != n.num_inputs()) {
    throw n.error("equation '" + eq + "' has " + std::to_string(spec.terms.size()) + " operands, the node has " +
                  std::to_string(n.num_inputs()) + " inputs");
  }
  return spec;
}


MODELC_REGISTER_OP(Gemm)
    .since(1)
    .attrs({"alpha", "beta", "broadcast", "transA", "transB"})
    .inputs(3, 3)
    .validate(validate_gemm)
    .infer([](Node& n) {
      const GemmDims d = gemm_dims(n);
      n.output(0).set_type(n.input(0).dtype(), {d.M, d.N});
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_gemm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .kernel("gemm")
    .family("gemm")
    .flops([](const Node& n) {
      const GemmDims d = gemm_dims(n);
      return 2 * d.M * d.N * d.K + d.M * d.N;
    })
    .doc("alpha * op(A) * op(B) + beta * C, C broadcast to M x N when broadcast=1");

MODELC_REGISTER_OP(Gemm)
    .since(7)
    .attrs({"alpha", "beta", "transA", "transB"})
    .inputs(3, 3)
    .validate(validate_gemm)
    .infer([](Node& n) {
      const GemmDims d = gemm_dims(n);
      n.output(0).set_type(n.input(0).dtype(), {d.M, d.N});
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_gemm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .kernel("gemm")
    .family("gemm")
    .flops([](const Node& n) {
      const GemmDims d = gemm_dims(n);
      return 2 * d.M * d.N * d.K + (n.has_input(2) ? d.M * d.N : 0);
    })
    .doc("alpha * op(A) * op(B) + beta * C, C broadcast to M x N");

MODELC_REGISTER_OP(Gemm)
    .since(11)
    .attrs({"alpha", "beta", "transA", "transB"})
    .inputs(2, 3)
    .validate(validate_gemm)
    .infer([](Node& n) {
      const GemmDims d = gemm_dims(n);
      n.output(0).set_type(n.input(0).dtype(), {d.M, d.N});
    })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_gemm(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .kernel("gemm")
    .family("gemm")
    .flops([](const Node& n) {
      const GemmDims d = gemm_dims(n);
      return 2 * d.M * d.N * d.K + (n.has_input(2) ? d.M * d.N : 0);
    })
    .doc("alpha * op(A) * op(B) + beta * C, C optional and broadcast to M x N");

MODELC_REGISTER_OP(MatMul)
    .since(1)
    .inputs(2, 2)
    .validate(validate_matmul)
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), matmul_dims(n).out); })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_matmul(n, in)}; })
    .precision(Precision::fp16)
    .fusion(Fusion::producer)
    .kernel("gemm")
    .family("gemm")
    .flops([](const Node& n) {
      const MatMulDims d = matmul_dims(n);
      return 2 * d.M * d.N * d.K * num_elements(d.batch);
    })
    .doc("numpy matmul: batched, batch dims broadcast, 1-D operands promoted");

MODELC_REGISTER_OP(Einsum)
    .since(12)
    .attrs({"equation"})
    .inputs(1, -1)
    .validate(validate_einsum)
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), einsum_plan(n).out); })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{eval_einsum(n, in)}; })
    .precision(Precision::fp16)
    .kernel("gemm")
    .family("gemm")
    .flops([](const Node& n) {
      // One multiply-add per point of the full index space (a plain sum for one operand).
      const EinsumPlan p = einsum_plan(n);
      return (n.num_inputs() > 1 ? 2 : 1) * num_elements(p.dims);
    })
    .doc("Einstein summation (an ellipsis stands for the unnamed dims), any number of operands");

}  // namespace modelc::ops

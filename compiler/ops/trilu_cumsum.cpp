// compiler/ops/trilu_cumsum.cpp — Trilu (a triangle of the last two dims kept, the rest zero) and
// CumSum (running sums along an axis). Their rules are declared in ops/indexing.h.
//
// Trilu copies raw bytes (bit-exact for every dtype; the zeros are all-zero bits, 0 of every type).
// CumSum sums in double for float data, rounding each running sum once to the type, and exactly in
// int64 (wrapping like the type) for integers.
#include <cstring>

#include "ops/common.h"
#include "ops/elementwise_rules.h"
#include "ops/indexing.h"

namespace modelc::ops {
namespace {

// ---- Trilu ------------------------------------------------------------------------

const Tensor* trilu_k_tensor(const Node& n) { return n.has_input(1) && n.input(1).is_constant() ? &n.input(1).constant() : nullptr; }

void validate_trilu(const Node& n) {
  require_types(n, 0, {{14, kAllTypes}});
  require_types(n, 1, {{14, dtype_bit(DType::int64)}});
  trilu_upper(n);
  if (n.has_input(1)) {
    const Shape& s = n.input(1).shape();
    if (!(s.empty() || (s.size() == 1 && s[0] == 1))) {
      throw n.error("input 1 ('k', '" + n.input(1).name() + "') must be a scalar, it has shape " + shape_str(s));
    }
  }
}

void infer_trilu(Node& n) {
  if (n.input(0).rank() < 2) {
    throw n.error("input 0 has rank " + std::to_string(n.input(0).rank()) + "; Trilu needs rank >= 2");
  }
  infer_same_as_input(n);
}

std::vector<Tensor> eval_trilu(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const int64_t k = in.size() > 1 && in[1] ? in[1]->i64_at(0) : 0;
  const bool upper = trilu_upper(n);
  const int64_t rows = x.shape()[x.shape().size() - 2], cols = x.shape().back();
  const std::size_t esize = dtype_size(x.dtype());
  Tensor out(x.dtype(), x.shape(), std::vector<uint8_t>(x.raw(), x.raw() + x.nbytes()));
  uint8_t* y = out.mutable_raw();
  for (int64_t e = 0; e < x.numel(); ++e) {
    const int64_t j = e % cols, i = e / cols % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    if (!keep) std::memset(y + e * static_cast<int64_t>(esize), 0, esize);
  }
  return {out};
}

// ---- CumSum -----------------------------------------------------------------------

void validate_cumsum(const Node& n) {
  require_types(n, 0, {{11, dtype_bit(DType::float32) | kFloat64 | kInt32_64}, {14, kFloats | kFloat64 | kInt32_64}});
  require_types(n, 1, {{11, kInt32_64}});
  for (const char* a : {"exclusive", "reverse"}) {
    const int64_t v = n.attr_int(a, 0);
    if (v != 0 && v != 1) throw n.error(std::string("attribute '") + a + "' is " + std::to_string(v) + "; it must be 0 or 1");
  }
}

void infer_cumsum(Node& n) {
  cumsum_params(n);
  infer_same_as_input(n);
}

std::vector<Tensor> eval_cumsum(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const CumSumParams p = cumsum_params(n, in[1]);
  const Shape& s = x.shape();
  const int64_t len = s[static_cast<std::size_t>(p.axis)];
  int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(p.axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
  // Visits each line along the axis in summation order, with the element index of each position.
  auto each_line = [&](auto&& visit) {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t t = 0; t < len; ++t) {
          const int64_t j = p.reverse ? len - 1 - t : t;
          visit(t == 0, (o * len + j) * inner + i);
        }
      }
    }
  };
  if (is_float(x.dtype())) {
    const std::vector<double> v = x.to_f64();
    std::vector<double> r(v.size());
    double acc = 0;
    each_line([&](bool first, int64_t e) {
      if (first) acc = 0;
      const auto k = static_cast<std::size_t>(e);
      if (p.exclusive) {
        r[k] = acc;
        acc += v[k];
      } else {
        acc += v[k];
        r[k] = acc;
      }
    });
    return {Tensor::from_f64(x.dtype(), s, r)};
  }
  const std::vector<int64_t> v = x.to_i64();
  std::vector<int64_t> r(v.size());
  int64_t acc = 0;
  each_line([&](bool first, int64_t e) {
    if (first) acc = 0;
    const auto k = static_cast<std::size_t>(e);
    if (p.exclusive) {
      r[k] = acc;
      acc = wrap_add(acc, v[k]);
    } else {
      acc = wrap_add(acc, v[k]);
      r[k] = acc;
    }
  });
  return {Tensor::from_i64(x.dtype(), s, r)};
}

}  // namespace

bool trilu_upper(const Node& n) {
  const int64_t u = n.attr_int("upper", 1);
  if (u != 0 && u != 1) throw n.error("attribute 'upper' is " + std::to_string(u) + "; it must be 0 or 1");
  return u == 1;
}

std::optional<int64_t> trilu_k(const Node& n) {
  if (!n.has_input(1)) return 0;
  if (const Tensor* t = trilu_k_tensor(n)) return t->i64_at(0);
  return std::nullopt;
}

CumSumParams cumsum_params(const Node& n, const Tensor* axis_value) {
  CumSumParams p;
  std::vector<int64_t> axis;
  if (axis_value) {
    axis = axis_value->to_i64();
  } else {
    axis = *const_ints(n, 1, "axis");
  }
  const Shape& s = n.has_input(1) ? n.input(1).shape() : Shape{};
  if (axis.size() != 1 || s.size() > 1) {
    throw n.error("input 1 (axis) must be a scalar, it has shape " + shape_str(s));
  }
  const int64_t rank = n.input(0).rank();
  if (rank < 1) throw n.error("input 0 is a scalar; CumSum needs rank >= 1");
  p.axis = normalize_axis(n, axis[0], rank);
  p.exclusive = n.attr_int("exclusive", 0) == 1;
  p.reverse = n.attr_int("reverse", 0) == 1;
  return p;
}

MODELC_REGISTER_OP(Trilu)
    .since(14)
    .attrs({"upper"})
    .inputs(1, 2)
    .validate(validate_trilu)
    .infer(infer_trilu)
    .eval(eval_trilu)
    .precision(Precision::fp16)
    .kernel("trilu")
    .family("data")
    .doc("the upper (upper = 1) or lower triangle of the last two dims from diagonal k, zeros elsewhere");

MODELC_REGISTER_OP(CumSum)
    .since(11)
    .attrs({"exclusive", "reverse"})
    .inputs(2, 2)
    .const_inputs({1})
    .validate(validate_cumsum)
    .infer(infer_cumsum)
    .eval(eval_cumsum)
    .precision(Precision::fp32_compute)
    .kernel("cumsum")
    .family("reduce")
    .flops(flops_per_output(1))
    .doc("running sums along a constant axis ('exclusive', 'reverse'); FP32 sums on FP16 storage");

}  // namespace modelc::ops

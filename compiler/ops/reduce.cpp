// compiler/ops/reduce.cpp — reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare;
// ArgMax, ArgMin; TopK.
//
// Reduce* come in two forms: axes as an attribute (ReduceSum before opset 13,
// the others before 18) and axes as an optional input (with
// noop_with_empty_axes). Floats reduce in double; integer Sum/Prod/Max/Min/
// L1/SumSquare reduce exactly in int64 and wrap to the element type like a C cast.
#include "ops/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ops/common.h"
#include "reference/parallel.h"

namespace modelc::ops {
namespace {

enum class Reduction { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };
enum class AxesFrom { attribute, input };

void require_flag(const Node& n, const std::string& name, int64_t def) {
  const int64_t v = n.attr_int(name, def);
  if (v != 0 && v != 1) throw n.error("attribute '" + name + "' is " + std::to_string(v) + ", expected 0 or 1");
}

// normalize_axes lets axis 0 through on a scalar (rank 0); a scalar has no
// axes to name, so that is an Error here.
std::vector<int64_t> checked_axes(const Node& n, const std::vector<int64_t>& axes, int64_t rank) {
  if (rank == 0 && !axes.empty()) {
    throw n.error("'axes' names axis " + std::to_string(axes[0]) + " of a scalar input, which has none");
  }
  return normalize_axes(n, axes, rank);
}

bool has_int_path(Reduction r) {
  return r == Reduction::sum || r == Reduction::prod || r == Reduction::max || r == Reduction::min ||
         r == Reduction::l1 || r == Reduction::sum_square;
}

// The element type's range, for the max/min of an empty set of integers.
std::pair<int64_t, int64_t> int_range(DType t) {
  switch (t) {
    case DType::int8: return {INT8_MIN, INT8_MAX};
    case DType::uint8: return {0, UINT8_MAX};
    case DType::int16: return {INT16_MIN, INT16_MAX};
    case DType::uint16: return {0, UINT16_MAX};
    case DType::int32: return {INT32_MIN, INT32_MAX};
    case DType::uint32: return {0, UINT32_MAX};
    case DType::boolean: return {0, 1};
    default: return {INT64_MIN, INT64_MAX};
  }
}

Shape reduced_shape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  Shape out;
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) out.push_back(in[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

// For every input element (C order), the flat index of the output element it
// reduces into.
std::vector<int64_t> reduce_index(const Shape& in, const std::vector<bool>& reduced) {
  Shape kept = in;
  for (std::size_t d = 0; d < in.size(); ++d) if (reduced[d]) kept[d] = 1;
  return broadcast_index(kept, in);
}

void validate_reduce(const Node& n, Reduction r, AxesFrom from) {
  require_flag(n, "keepdims", 1);
  if (from == AxesFrom::input) require_flag(n, "noop_with_empty_axes", 0);
  if (n.has_input(0) && n.input(0).has_type()) {
    const bool bool_ok = (r == Reduction::max || r == Reduction::min) && n.opset() >= 20;
    if (bool_ok) {
      require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8, DType::uint8,
                           DType::int16, DType::uint16, DType::int32, DType::uint32, DType::int64, DType::boolean});
    } else {
      require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8, DType::uint8,
                           DType::int16, DType::uint16, DType::int32, DType::uint32, DType::int64});
    }
  }
  if (from == AxesFrom::input && n.has_input(1) && n.input(1).has_type()) {
    require_dtype(n, 1, {DType::int64, DType::int32});
    if (n.input(1).rank() > 1) throw n.error("input 'axes' must be 1-D, it is " + n.input(1).type_str());
  }
}

void infer_reduce(Node& n) {
  const Value& x = n.input(0);
  const ReduceDims p = reduce_dims(n, x.rank());
  if (p.noop) {
    n.output(0).set_type(x.dtype(), x.shape());
    return;
  }
  n.output(0).set_type(x.dtype(), reduced_shape(x.shape(), p.reduced, p.keepdims));
}

// The value of reducing a single element: what noop_with_empty_axes gives
// (each element is its own reduction).
double reduce_one(Reduction r, double x) {
  switch (r) {
    case Reduction::l1:
    case Reduction::l2: return std::fabs(x);
    case Reduction::sum_square: return x * x;
    case Reduction::log_sum: return std::log(x);
    default: return x;
  }
}

int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_abs(int64_t a) { return a < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(a)) : a; }

Tensor reduce_integers(const Tensor& x, Reduction r, const std::vector<int64_t>& to_out, const Shape& out_shape) {
  const std::vector<int64_t> v = x.to_i64();
  const auto [lo, hi] = int_range(x.dtype());
  int64_t init = 0;
  if (r == Reduction::prod) init = 1;
  if (r == Reduction::max) init = lo;
  if (r == Reduction::min) init = hi;
  std::vector<int64_t> acc(static_cast<std::size_t>(num_elements(out_shape)), init);
  for (std::size_t i = 0; i < v.size(); ++i) {
    int64_t& a = acc[static_cast<std::size_t>(to_out[i])];
    const int64_t e = v[i];
    switch (r) {
      case Reduction::sum: a = wrap_add(a, e); break;
      case Reduction::prod: a = wrap_mul(a, e); break;
      case Reduction::max: a = std::max(a, e); break;
      case Reduction::min: a = std::min(a, e); break;
      case Reduction::l1: a = wrap_add(a, wrap_abs(e)); break;
      case Reduction::sum_square: a = wrap_add(a, wrap_mul(e, e)); break;
      default: break;
    }
  }
  return Tensor::from_i64(x.dtype(), out_shape, acc);
}

/// Offsets (C order) of every coordinate of the dims where `pick` is true, strides `st`.
std::vector<int64_t> offsets_of(const Shape& in, const std::vector<int64_t>& st, const std::vector<bool>& reduced,
                                bool pick) {
  std::vector<int64_t> r{0};
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (reduced[d] != pick) continue;
    std::vector<int64_t> next;
    next.reserve(r.size() * static_cast<std::size_t>(std::max<int64_t>(0, in[d])));
    for (int64_t o : r) {
      for (int64_t i = 0; i < in[d]; ++i) next.push_back(o + i * st[d]);
    }
    r = std::move(next);
  }
  return r;
}

// Per output element (threads over them, reference/parallel.h), its input elements in C order:
// the same order, and so the same sums, as one pass over the input.
Tensor reduce_floats(const Tensor& x, Reduction r, const std::vector<bool>& reduced, const Shape& out_shape) {
  const std::vector<double> v = x.to_f64();
  const std::vector<int64_t> st = strides_of(x.shape());
  const std::vector<int64_t> base = offsets_of(x.shape(), st, reduced, false);
  const std::vector<int64_t> taps = offsets_of(x.shape(), st, reduced, true);
  const std::size_t out_n = static_cast<std::size_t>(num_elements(out_shape));
  const double inf = std::numeric_limits<double>::infinity();
  double init = 0;
  if (r == Reduction::prod) init = 1;
  if (r == Reduction::max) init = -inf;
  if (r == Reduction::min) init = inf;
  std::vector<double> acc(out_n, init);
  const double count = static_cast<double>(taps.size());
  reference::parallel_items(static_cast<int64_t>(out_n), 2 * static_cast<int64_t>(taps.size()), [&](int64_t k) {
    // Indexes, not a pointer: with nothing reduced over (an empty axis) v is empty and its data()
    // may be null while base[k] is not 0.
    const int64_t b0 = base[static_cast<std::size_t>(k)];
    const auto src = [&](int64_t t) { return v[static_cast<std::size_t>(b0 + t)]; };
    double a = init;
    // LogSumExp: shift by the largest finite-or-infinite element so exp never overflows.
    double shift = 0.0;
    if (r == Reduction::log_sum_exp) {
      double m = -inf;
      for (int64_t t : taps) {
        if (src(t) > m) m = src(t);
      }
      shift = std::isfinite(m) ? m : 0.0;
    }
    for (int64_t t : taps) {
      const double e = src(t);
      switch (r) {
        case Reduction::sum:
        case Reduction::mean:
        case Reduction::log_sum: a += e; break;
        case Reduction::prod: a *= e; break;
        case Reduction::max: if (std::isnan(e) || e > a) a = e; break;  // NaN propagates and stays
        case Reduction::min: if (std::isnan(e) || e < a) a = e; break;
        case Reduction::l1: a += std::fabs(e); break;
        case Reduction::l2:
        case Reduction::sum_square: a += e * e; break;
        case Reduction::log_sum_exp: a += std::exp(e - shift); break;
      }
    }
    if (r == Reduction::mean) a = a / count;  // empty set: 0/0 = NaN, as numpy
    if (r == Reduction::l2) a = std::sqrt(a);
    if (r == Reduction::log_sum) a = std::log(a);
    if (r == Reduction::log_sum_exp) a = shift + std::log(a);
    acc[static_cast<std::size_t>(k)] = a;
  });
  return Tensor::from_f64(x.dtype(), out_shape, acc);
}

std::vector<Tensor> eval_reduce(const Node& n, const TensorRefs& in, Reduction r) {
  const Tensor& x = *in[0];
  const std::vector<int64_t> axes = in.size() > 1 ? ints_of(in[1]) : std::vector<int64_t>{};
  const ReduceDims p = reduce_dims(n, x.rank(), in.size() > 1 && in[1] ? &axes : nullptr);
  const bool ints = !is_float(x.dtype());
  if (p.noop) {
    if (ints && has_int_path(r)) {
      std::vector<int64_t> v = x.to_i64();
      for (int64_t& e : v) {
        if (r == Reduction::l1) e = wrap_abs(e);
        if (r == Reduction::sum_square) e = wrap_mul(e, e);
      }
      return {Tensor::from_i64(x.dtype(), x.shape(), v)};
    }
    return {map_unary(x, [r](double e) { return reduce_one(r, e); })};
  }
  const Shape out_shape = reduced_shape(x.shape(), p.reduced, p.keepdims);
  if (ints && has_int_path(r)) return {reduce_integers(x, r, reduce_index(x.shape(), p.reduced), out_shape)};
  return {reduce_floats(x, r, p.reduced, out_shape)};
}

std::vector<std::string> reduce_attrs(AxesFrom from) {
  if (from == AxesFrom::attribute) return {"axes", "keepdims"};
  return {"keepdims", "noop_with_empty_axes"};
}

// One operation per input element (two for the squaring reductions).
int64_t reduce_flops(const Node& n, Reduction r) {
  const int64_t per = (r == Reduction::l2 || r == Reduction::sum_square || r == Reduction::log_sum_exp) ? 2 : 1;
  return per * n.input(0).numel();
}

// ---- ArgMax / ArgMin ------------------------------------------------------

void validate_arg(const Node& n) {
  require_flag(n, "keepdims", 1);
  require_flag(n, "select_last_index", 0);
  if (n.has_input(0) && n.input(0).has_type()) {
    require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8, DType::uint8,
                         DType::int16, DType::uint16, DType::int32, DType::uint32, DType::int64});
  }
}

void infer_arg(Node& n) {
  const Shape& x = n.input(0).shape();
  const ArgReduce a = arg_reduce(n, x);
  std::vector<bool> reduced(x.size(), false);
  reduced[static_cast<std::size_t>(a.axis)] = true;
  n.output(0).set_type(DType::int64, reduced_shape(x, reduced, a.keepdims));
}

template <class T>
std::vector<int64_t> arg_index(const std::vector<T>& v, const Shape& x, int64_t axis, bool is_max, bool last) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < x.size(); ++d) inner *= x[d];
  const int64_t len = x[static_cast<std::size_t>(axis)];
  std::vector<int64_t> out(static_cast<std::size_t>(outer * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      int64_t best = 0;
      T bv = v[static_cast<std::size_t>(base)];
      for (int64_t k = 1; k < len; ++k) {
        const T e = v[static_cast<std::size_t>(base + k * inner)];
        const bool better = is_max ? (last ? e >= bv : e > bv) : (last ? e <= bv : e < bv);
        if (better) {
          best = k;
          bv = e;
        }
      }
      out[static_cast<std::size_t>(o * inner + i)] = best;
    }
  }
  return out;
}

std::vector<Tensor> eval_arg(const Node& n, const TensorRefs& in, bool is_max) {
  const Tensor& x = *in[0];
  const ArgReduce a = arg_reduce(n, x.shape());
  std::vector<bool> reduced(x.shape().size(), false);
  reduced[static_cast<std::size_t>(a.axis)] = true;
  const Shape out_shape = reduced_shape(x.shape(), reduced, a.keepdims);
  const bool last = a.select_last_index;
  const std::vector<int64_t> idx = is_float(x.dtype()) ? arg_index(x.to_f64(), x.shape(), a.axis, is_max, last)
                                                       : arg_index(x.to_i64(), x.shape(), a.axis, is_max, last);
  return {Tensor::from_i64(DType::int64, out_shape, idx)};
}

// ---- TopK -------------------------------------------------------------------

enum class KFrom { attribute, input };

void validate_topk(const Node& n, KFrom from) {
  if (from == KFrom::attribute && !n.has_attr("k")) throw n.error("attribute 'k' is required");
  if (from == KFrom::attribute && n.attr_int("k", 0) < 0) {
    throw n.error("attribute 'k' is " + std::to_string(n.attr_int("k", 0)) + ", expected >= 0");
  }
  require_flag(n, "largest", 1);
  require_flag(n, "sorted", 1);
  if (n.has_input(0) && n.input(0).has_type()) {
    require_dtype(n, 0, {DType::float32, DType::float16, DType::bfloat16, DType::float64, DType::int8, DType::uint8,
                         DType::int16, DType::uint16, DType::int32, DType::uint32, DType::int64});
  }
  if (from == KFrom::input && n.has_input(1) && n.input(1).has_type()) require_dtype(n, 1, {DType::int64});
}

void infer_topk(Node& n) {
  const Value& x = n.input(0);
  const TopKParams p = topk_params(n, x.shape());
  Shape out = x.shape();
  out[static_cast<std::size_t>(p.axis)] = p.k;
  if (n.has_output(0)) n.output(0).set_type(x.dtype(), out);
  if (n.has_output(1)) n.output(1).set_type(DType::int64, out);
}

// Order of two elements of a slice: the better value first (NaN after every
// number), equal values by lower index first, as the spec says.
template <class T>
bool topk_before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na != nb) return nb;
    if (na) return ia < ib;
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

template <class T>
std::vector<int64_t> topk_indices(const std::vector<T>& v, const Shape& x, int64_t axis, int64_t k, bool largest) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < x.size(); ++d) inner *= x[d];
  const int64_t len = x[static_cast<std::size_t>(axis)];
  // Output layout: [outer, k, inner]; each entry is an index along `axis`.
  std::vector<int64_t> out(static_cast<std::size_t>(outer * k * inner));
  std::vector<int64_t> order(static_cast<std::size_t>(len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      auto at = [&](int64_t j) { return v[static_cast<std::size_t>(base + j * inner)]; };
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) { return topk_before(at(a), a, at(b), b, largest); });
      for (int64_t j = 0; j < k; ++j) out[static_cast<std::size_t>((o * k + j) * inner + i)] = order[j];
    }
  }
  return out;
}

std::vector<Tensor> eval_topk(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const TopKParams p = in.size() > 1 ? topk_params(n, x.shape(), ints_of(in[1])) : topk_params(n, x.shape());
  const int64_t axis = p.axis, k = p.k;
  const bool largest = p.largest;
  const std::vector<int64_t> along = is_float(x.dtype()) ? topk_indices(x.to_f64(), x.shape(), axis, k, largest)
                                                         : topk_indices(x.to_i64(), x.shape(), axis, k, largest);
  Shape out_shape = x.shape();
  out_shape[static_cast<std::size_t>(axis)] = k;
  // Values are copied bit for bit from X.
  int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  const int64_t len = x.shape()[static_cast<std::size_t>(axis)];
  const std::size_t es = dtype_size(x.dtype());
  Tensor values(x.dtype(), out_shape);
  uint8_t* dst = values.mutable_raw();
  for (std::size_t e = 0; e < along.size(); ++e) {
    const int64_t i = static_cast<int64_t>(e) % inner;
    const int64_t o = static_cast<int64_t>(e) / (inner * k);
    const int64_t src = (o * len + along[e]) * inner + i;
    std::memcpy(dst + e * es, x.raw() + static_cast<std::size_t>(src) * es, es);
  }
  return {values, Tensor::from_i64(DType::int64, out_shape, along)};
}

}  // namespace

ReduceDims reduce_dims(const Node& n, int64_t rank, const std::vector<int64_t>* axes_input) {
  // The forms that take an 'axes' input know no 'axes' attribute, and the attribute forms no
  // input nor noop_with_empty_axes (validate_node refuses them): one rule reads every form.
  const std::vector<int64_t> axes = axes_input ? *axes_input : n.attr_ints("axes");
  ReduceDims p;
  p.keepdims = n.attr_int("keepdims", 1) != 0;
  if (axes.empty()) {
    p.noop = n.attr_int("noop_with_empty_axes", 0) != 0;
    p.reduced.assign(static_cast<std::size_t>(rank), !p.noop);
    return p;
  }
  p.reduced.assign(static_cast<std::size_t>(rank), false);
  for (int64_t a : checked_axes(n, axes, rank)) p.reduced[static_cast<std::size_t>(a)] = true;
  return p;
}

ReduceDims reduce_dims(const Node& n, int64_t rank) {
  const std::optional<std::vector<int64_t>> axes = const_ints(n, 1, "axes");
  return reduce_dims(n, rank, axes ? &*axes : nullptr);
}

ArgReduce arg_reduce(const Node& n, const Shape& x) {
  if (x.empty()) throw n.error("input 'data' is a scalar; " + n.op() + " needs rank >= 1");
  ArgReduce a;
  a.axis = normalize_axis(n, n.attr_int("axis", 0), static_cast<int64_t>(x.size()));
  if (x[static_cast<std::size_t>(a.axis)] == 0) {
    throw n.error("axis " + std::to_string(a.axis) + " of input 'data' (" + shape_str(x) + ") is empty: no " + n.op());
  }
  a.keepdims = n.attr_int("keepdims", 1) != 0;
  a.select_last_index = n.attr_int("select_last_index", 0) != 0;
  return a;
}

TopKParams topk_params(const Node& n, const Shape& x, const std::vector<int64_t>& k_values) {
  if (x.empty()) throw n.error("input 'X' is a scalar; TopK needs rank >= 1");
  TopKParams p;
  p.axis = normalize_axis(n, n.attr_int("axis", -1), static_cast<int64_t>(x.size()));
  if (k_values.size() != 1) {
    throw n.error("input 'K' must hold exactly one value, it holds " + std::to_string(k_values.size()));
  }
  p.k = k_values[0];
  const int64_t len = x[static_cast<std::size_t>(p.axis)];
  if (p.k < 0 || p.k > len) {
    throw n.error("k = " + std::to_string(p.k) + " is out of range for axis " + std::to_string(p.axis) +
                  " of size " + std::to_string(len));
  }
  p.largest = n.attr_int("largest", 1) != 0;
  p.sorted = n.attr_int("sorted", 1) != 0;
  return p;
}

TopKParams topk_params(const Node& n, const Shape& x) {
  if (n.opset() < 10) return topk_params(n, x, {n.attr_int("k", 0)});
  return topk_params(n, x, *const_ints(n, 1, "K"));
}

// Every Reduce* form shares one set of rules; only the reduction and where the
// axes come from differ.
#define MODELC_REGISTER_REDUCE(NAME, SINCE, R, FROM, DOC)                                           \
  MODELC_REGISTER_OP(NAME)                                                                          \
      .since(SINCE)                                                                                 \
      .attrs(reduce_attrs(FROM))                                                                    \
      .inputs(1, (FROM) == AxesFrom::input ? 2 : 1)                                                 \
      .const_inputs((FROM) == AxesFrom::input ? std::vector<int>{1} : std::vector<int>{})           \
      .validate([](const Node& n) { validate_reduce(n, R, FROM); })                                 \
      .infer(infer_reduce)                                                                          \
      .eval([](const Node& n, const TensorRefs& in) { return eval_reduce(n, in, R); })              \
      .precision(Precision::fp32_compute)                                                           \
      .kernel("reduce")                                                                             \
      .family("reduce")                                                                             \
      .flops([](const Node& n) { return reduce_flops(n, R); })                                      \
      .doc(DOC)

MODELC_REGISTER_REDUCE(ReduceSum, 1, Reduction::sum, AxesFrom::attribute, "sum over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceSum, 13, Reduction::sum, AxesFrom::input, "sum over axes (axes input)");
MODELC_REGISTER_REDUCE(ReduceMean, 1, Reduction::mean, AxesFrom::attribute, "mean over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceMean, 18, Reduction::mean, AxesFrom::input, "mean over axes (axes input)");
MODELC_REGISTER_REDUCE(ReduceMax, 1, Reduction::max, AxesFrom::attribute, "max over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceMax, 18, Reduction::max, AxesFrom::input, "max over axes (axes input)");
MODELC_REGISTER_REDUCE(ReduceMin, 1, Reduction::min, AxesFrom::attribute, "min over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceMin, 18, Reduction::min, AxesFrom::input, "min over axes (axes input)");
MODELC_REGISTER_REDUCE(ReduceProd, 1, Reduction::prod, AxesFrom::attribute, "product over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceProd, 18, Reduction::prod, AxesFrom::input, "product over axes (axes input)");
MODELC_REGISTER_REDUCE(ReduceL1, 1, Reduction::l1, AxesFrom::attribute, "sum of |x| over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceL1, 18, Reduction::l1, AxesFrom::input, "sum of |x| over axes (axes input)");
MODELC_REGISTER_REDUCE(ReduceL2, 1, Reduction::l2, AxesFrom::attribute, "sqrt of the sum of x^2 (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceL2, 18, Reduction::l2, AxesFrom::input, "sqrt of the sum of x^2 (axes input)");
MODELC_REGISTER_REDUCE(ReduceLogSum, 1, Reduction::log_sum, AxesFrom::attribute, "log of the sum (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceLogSum, 18, Reduction::log_sum, AxesFrom::input, "log of the sum (axes input)");
MODELC_REGISTER_REDUCE(ReduceLogSumExp, 1, Reduction::log_sum_exp, AxesFrom::attribute,
                       "log of the sum of exp(x) (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceLogSumExp, 18, Reduction::log_sum_exp, AxesFrom::input,
                       "log of the sum of exp(x) (axes input)");
MODELC_REGISTER_REDUCE(ReduceSumSquare, 1, Reduction::sum_square, AxesFrom::attribute,
                       "sum of x^2 over axes (axes attribute)");
MODELC_REGISTER_REDUCE(ReduceSumSquare, 18, Reduction::sum_square, AxesFrom::input,
                       "sum of x^2 over axes (axes input)");

#undef MODELC_REGISTER_REDUCE

MODELC_REGISTER_OP(ArgMax)
    .since(1)
    .attrs({"axis", "keepdims"})
    .inputs(1, 1)
    .validate(validate_arg)
    .infer(infer_arg)
    .eval([](const Node& n, const TensorRefs& in) { return eval_arg(n, in, true); })
    .precision(Precision::never)
    .kernel("argminmax")
    .family("reduce")
    .flops([](const Node& n) { return n.input(0).numel(); })
    .doc("index of the largest element along axis (first one on ties)");

MODELC_REGISTER_OP(ArgMax)
    .since(12)
    .attrs({"axis", "keepdims", "select_last_index"})
    .inputs(1, 1)
    .validate(validate_arg)
    .infer(infer_arg)
    .eval([](const Node& n, const TensorRefs& in) { return eval_arg(n, in, true); })
    .precision(Precision::never)
    .kernel("argminmax")
    .family("reduce")
    .flops([](const Node& n) { return n.input(0).numel(); })
    .doc("index of the largest element along axis (first or last one on ties)");

MODELC_REGISTER_OP(ArgMin)
    .since(1)
    .attrs({"axis", "keepdims"})
    .inputs(1, 1)
    .validate(validate_arg)
    .infer(infer_arg)
    .eval([](const Node& n, const TensorRefs& in) { return eval_arg(n, in, false); })
    .precision(Precision::never)
    .kernel("argminmax")
    .family("reduce")
    .flops([](const Node& n) { return n.input(0).numel(); })
    .doc("index of the smallest element along axis (first one on ties)");

MODELC_REGISTER_OP(ArgMin)
    .since(12)
    .attrs({"axis", "keepdims", "select_last_index"})
    .inputs(1, 1)
    .validate(validate_arg)
    .infer(infer_arg)
    .eval([](const Node& n, const TensorRefs& in) { return eval_arg(n, in, false); })
    .precision(Precision::never)
    .kernel("argminmax")
    .family("reduce")
    .flops([](const Node& n) { return n.input(0).numel(); })
    .doc("index of the smallest element along axis (first or last one on ties)");

MODELC_REGISTER_OP(TopK)
    .since(1)
    .attrs({"axis", "k"})
    .inputs(1, 1)
    .outputs(2, 2)
    .validate([](const Node& n) { validate_topk(n, KFrom::attribute); })
    .infer(infer_topk)
    .eval(eval_topk)
    .precision(Precision::never)
    .kernel("topk")
    .family("reduce")
    .doc("k largest elements along axis and their indices (k attribute)");

MODELC_REGISTER_OP(TopK)
    .since(10)
    .const_inputs({1})
    .attrs({"axis"})
    .inputs(2, 2)
    .outputs(2, 2)
    .validate([](const Node& n) { validate_topk(n, KFrom::input); })
    .infer(infer_topk)
    .eval(eval_topk)
    .precision(Precision::never)
    .kernel("topk")
    .family("reduce")
    .doc("k largest elements along axis and their indices (K input)");

MODELC_REGISTER_OP(TopK)
    .since(11)
    .const_inputs({1})
    .attrs({"axis", "largest", "sorted"})
    .inputs(2, 2)
    .outputs(2, 2)
    .validate([](const Node& n) { validate_topk(n, KFrom::input); })
    .infer(infer_topk)
    .eval(eval_topk)
    .precision(Precision::never)
    .kernel("topk")
    .family("reduce")
    .doc("k largest or smallest elements along axis and their indices, ties by lower index");

}  // namespace modelc::ops

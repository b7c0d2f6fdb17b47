#include "ops/common.h"

#include <algorithm>

#include "reference/parallel.h"

namespace modelc::ops {

Shape broadcast_shapes(const Node& n, const Shape& a, const Shape& b) {
  const std::size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw n.error("shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be broadcast together");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_inputs(const Node& n) {
  Shape s;
  bool first = true;
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) continue;
    s = first ? n.input(i).shape() : broadcast_shapes(n, s, n.input(i).shape());
    first = false;
  }
  return s;
}

std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out) {
  const int64_t total = num_elements(out);
  std::vector<int64_t> idx(static_cast<std::size_t>(total));
  const std::size_t r = out.size();
  // Strides of `in` aligned to `out`'s rank; 0 along broadcast dims.
  std::vector<int64_t> st(r, 0);
  const std::vector<int64_t> in_st = strides_of(in);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::size_t o = r - in.size() + i;
    st[o] = in[i] == 1 ? 0 : in_st[i];
  }
  std::vector<int64_t> coord(r, 0);
  int64_t flat = 0;
  for (int64_t k = 0; k < total; ++k) {
    idx[static_cast<std::size_t>(k)] = flat;
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      if (++coord[d] < out[d]) {
        flat += st[d];
        break;
      }
      flat -= st[d] * (out[d] - 1);
      coord[d] = 0;
    }
  }
  return idx;
}

int64_t normalize_axis(const Node& n, int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    throw n.error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                  std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const Node& n, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = normalize_axis(n, a, rank, "axis");
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) throw n.error("axes repeat an axis");
  return axes;
}

std::string not_constant_hint(const Value& v) {
  if (v.is_graph_input()) {
    return "'" + v.name() + "' is a graph input: bind it to its value with --bind " + v.name() +
           "=FILE (an .npy or .pb file), which makes it a constant";
  }
  return "bind the graph inputs it is computed from with --bind NAME=FILE (an .npy or .pb file), fold the "
         "computation into a constant, or fix the input shapes with --shape";
}

std::optional<std::vector<int64_t>> const_ints(const Node& n, int i, const char* what) {
  if (!n.has_input(i)) return std::nullopt;
  const Value& v = n.input(i);
  if (!v.is_constant()) {
    throw n.error(std::string(what) + " (input " + std::to_string(i) + ", '" + v.name() +
                      "') must be a constant for modelc to give the output a static shape",
                  not_constant_hint(v));
  }
  return v.constant().to_i64();
}

std::optional<std::vector<double>> const_floats(const Node& n, int i, const char* what) {
  if (!n.has_input(i)) return std::nullopt;
  const Value& v = n.input(i);
  if (!v.is_constant()) {
    throw n.error(std::string(what) + " (input " + std::to_string(i) + ", '" + v.name() + "') must be a constant",
                  not_constant_hint(v));
  }
  return v.constant().to_f64();
}

std::optional<std::vector<int64_t>> attr_or_input_ints(const Node& n, const std::string& attr, int input) {
  if (n.has_attr(attr)) return n.attr_ints(attr);
  return const_ints(n, input, attr.c_str());
}

std::vector<int64_t> ints_of(const Tensor* t) { return t ? t->to_i64() : std::vector<int64_t>{}; }

void infer_same_as_input(Node& n) { n.output(0).set_type(n.input(0).dtype(), n.input(0).shape()); }

void infer_broadcast(Node& n) { n.output(0).set_type(n.input(0).dtype(), broadcast_inputs(n)); }

void infer_broadcast_bool(Node& n) { n.output(0).set_type(DType::boolean, broadcast_inputs(n)); }

void require_dtype(const Node& n, int i, std::initializer_list<DType> allowed) {
  if (!n.has_input(i)) return;
  const DType t = n.input(i).dtype();
  for (DType a : allowed) if (a == t) return;
  std::string names;
  for (DType a : allowed) names += std::string(names.empty() ? "" : ", ") + dtype_name(a);
  throw n.error("input " + std::to_string(i) + " ('" + n.input(i).name() + "') is " + dtype_name(t) +
                ", expected one of: " + names);
}

Tensor map_unary(const Tensor& x, const std::function<double(double)>& f, DType out) {
  const DType od = out == DType::undefined ? x.dtype() : out;
  if (x.dtype() == DType::float32 && od == DType::float32) {
    // float32 to float32 with no double copy of the tensor: each element widened, f, rounded once
    // (what to_f64 and from_f64 give).
    Tensor y(DType::float32, x.shape());
    const float* src = x.data<float>();
    float* dst = y.mutable_data<float>();
    const int64_t count = x.numel();
    const reference::Split pieces(count, int64_t{1} << 14);
    reference::parallel_for(
        pieces.pieces,
        [&](int64_t t) {
          for (int64_t i = pieces.begin(t); i < pieces.end(t); ++i) dst[i] = static_cast<float>(f(static_cast<double>(src[i])));
        },
        count * 8);
    return y;
  }
  std::vector<double> v = x.to_f64();
  // Threads over pieces of the elements (reference/parallel.h); each element is its own.
  const int64_t count = static_cast<int64_t>(v.size());
  const reference::Split pieces(count, int64_t{1} << 14);
  reference::parallel_for(
      pieces.pieces,
      [&](int64_t t) {
        for (int64_t i = pieces.begin(t); i < pieces.end(t); ++i) v[static_cast<std::size_t>(i)] = f(v[static_cast<std::size_t>(i)]);
      },
      count * 8);
  return Tensor::from_f64(out == DType::undefined ? x.dtype() : out, x.shape(), v);
}

namespace {

/// fn(k, ia, ib) for every output element k of a broadcast of shapes `a` and `b` to `s` (ia, ib: the
/// flat indexes into a and b), threads over pieces of the output, each piece walking its elements in
/// order with an odometer (no index vectors the size of the output).
template <class Fn>
void for_each_broadcast(const Shape& s, const Shape& a, const Shape& b, Fn fn) {
  const std::size_t r = s.size();
  auto aligned = [&](const Shape& in) {
    std::vector<int64_t> st(r, 0);
    const std::vector<int64_t> in_st = strides_of(in);
    for (std::size_t i = 0; i < in.size(); ++i) st[r - in.size() + i] = in[i] == 1 ? 0 : in_st[i];
    return st;
  };
  const std::vector<int64_t> sa = aligned(a), sb = aligned(b);
  const int64_t total = num_elements(s);
  const reference::Split pieces(total, int64_t{1} << 14);
  reference::parallel_for(
      pieces.pieces,
      [&](int64_t t) {
        const int64_t k0 = pieces.begin(t), k1 = pieces.end(t);
        std::vector<int64_t> coord(r, 0);
        int64_t ia = 0, ib = 0;
        for (int64_t d = static_cast<int64_t>(r) - 1, rest = k0; d >= 0; --d) {
          const std::size_t u = static_cast<std::size_t>(d);
          coord[u] = s[u] > 0 ? rest % s[u] : 0;
          rest = s[u] > 0 ? rest / s[u] : 0;
          ia += coord[u] * sa[u];
          ib += coord[u] * sb[u];
        }
        for (int64_t k = k0; k < k1; ++k) {
          fn(k, ia, ib);
          for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
            const std::size_t u = static_cast<std::size_t>(d);
            if (++coord[u] < s[u]) {
              ia += sa[u];
              ib += sb[u];
              break;
            }
            ia -= sa[u] * (s[u] - 1);
            ib -= sb[u] * (s[u] - 1);
            coord[u] = 0;
          }
        }
      },
      total * 8);
}

}  // namespace

Tensor map_binary(const Node& n, const Tensor& a, const Tensor& b, const std::function<double(double, double)>& f,
                  DType out, const std::function<int64_t(int64_t, int64_t)>& fi,
                  const std::function<uint64_t(uint64_t, uint64_t)>& fu) {
  const Shape s = broadcast_shapes(n, a.shape(), b.shape());
  const DType od = out == DType::undefined ? a.dtype() : out;
  const std::size_t count = static_cast<std::size_t>(num_elements(s));
  if (fu && a.dtype() == DType::uint64 && b.dtype() == DType::uint64) {
    const std::vector<int64_t> va = a.to_i64(), vb = b.to_i64();  // the bit patterns
    std::vector<int64_t> r(count);
    for_each_broadcast(s, a.shape(), b.shape(), [&](int64_t k, int64_t ia, int64_t ib) {
      r[static_cast<std::size_t>(k)] = static_cast<int64_t>(fu(static_cast<uint64_t>(va[static_cast<std::size_t>(ia)]),
                                                               static_cast<uint64_t>(vb[static_cast<std::size_t>(ib)])));
    });
    return Tensor::from_i64(od, s, r);
  }
  if (fi && !is_float(a.dtype()) && !is_float(b.dtype())) {
    const std::vector<int64_t> va = a.to_i64(), vb = b.to_i64();
    std::vector<int64_t> r(count);
    for_each_broadcast(s, a.shape(), b.shape(), [&](int64_t k, int64_t ia, int64_t ib) {
      r[static_cast<std::size_t>(k)] = fi(va[static_cast<std::size_t>(ia)], vb[static_cast<std::size_t>(ib)]);
    });
    return Tensor::from_i64(od, s, r);
  }
  if (a.dtype() == DType::float32 && b.dtype() == DType::float32 && od == DType::float32) {
    // float32 operands and result: no double copies (each element widened, f, rounded once).
    Tensor y(DType::float32, s);
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    float* py = y.mutable_data<float>();
    for_each_broadcast(s, a.shape(), b.shape(), [&](int64_t k, int64_t ia, int64_t ib) {
      py[k] = static_cast<float>(f(static_cast<double>(pa[ia]), static_cast<double>(pb[ib])));
    });
    return y;
  }
  const std::vector<double> va = a.to_f64(), vb = b.to_f64();
  std::vector<double> r(count);
  for_each_broadcast(s, a.shape(), b.shape(), [&](int64_t k, int64_t ia, int64_t ib) {
    r[static_cast<std::size_t>(k)] = f(va[static_cast<std::size_t>(ia)], vb[static_cast<std::size_t>(ib)]);
  });
  return Tensor::from_f64(od, s, r);
}

std::vector<int64_t> spatial_attr(const Node& n, const std::string& name, std::size_t count, int64_t def) {
  if (!n.has_attr(name)) return std::vector<int64_t>(count, def);
  std::vector<int64_t> v = n.attr_ints(name);
  if (v.size() != count) {
    throw n.error("attribute '" + name + "' has " + std::to_string(v.size()) + " values, the input has " +
                  std::to_string(count) + " spatial dims");
  }
  return v;
}

FlopsFn flops_per_output(int64_t per_element) {
  return [per_element](const Node& n) { return per_element * n.output(0).numel(); };
}

}  // namespace modelc::ops

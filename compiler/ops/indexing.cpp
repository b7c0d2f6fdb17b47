// compiler/ops/indexing.cpp — gathers and scatters by index tensors: GatherElements, GatherND,
// ScatterElements (and Scatter 9, its deprecated first name), ScatterND, OneHot, NonZero. (Trilu and
// CumSum, also declared in ops/indexing.h: ops/trilu_cumsum.cpp.)
//
// Gathers and scatters without a reduction copy raw bytes, so they are bit-exact for every dtype.
// A scatter with a reduction (add, mul, max, min) computes in double for float data (rounded once
// to the type at the end) and exactly in int64 for integers, applying the updates in index order,
// as ONNX's reference does. Indices may be negative (counted from the end of their axis); an index
// out of range is an Error naming the node (the kernels, which cannot report it, skip it or read 0).
//
// NonZero's output shape depends on its input's values: see nonzero_bounded (ops/indexing.h).
#include "ops/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/common.h"
#include "ops/elementwise_rules.h"

namespace modelc::ops {
namespace {

const DTypeSet kIndexTypes = dtype_bit(DType::int32) | dtype_bit(DType::int64);
// Data of any type modelc has; bfloat16 from opset 13.
const TypeRule kDataTypes = {{1, kAllTypes & ~kBf16}, {13, kAllTypes}};

std::string input_desc(const Node& n, int i) {
  return "input " + std::to_string(i) + " ('" + n.input(i).name() + "')";
}

/// C-order coordinates of element `flat` of `shape`.
void unravel(int64_t flat, const Shape& shape, std::vector<int64_t>& coord) {
  coord.assign(shape.size(), 0);
  for (std::size_t d = shape.size(); d-- > 0;) {
    coord[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
}

int64_t ravel(const std::vector<int64_t>& coord, const std::vector<int64_t>& strides) {
  int64_t r = 0;
  for (std::size_t d = 0; d < coord.size(); ++d) r += coord[d] * strides[d];
  return r;
}

/// An index into an axis of length `dim`, negative ones counted from the end; Error when out of range.
int64_t checked_index(const Node& n, int64_t i, int64_t dim, const std::string& what) {
  if (i < -dim || i >= dim) {
    throw n.error("index " + std::to_string(i) + " in input 'indices' is out of range for " + what + " of length " +
                  std::to_string(dim));
  }
  return i < 0 ? i + dim : i;
}

// ---- GatherElements ------------------------------------------------------------

// indices has data's rank; along every other axis it may not be longer than data.
void check_elements_shapes(const Node& n, const Shape& data, const Shape& indices, int64_t axis, bool equal) {
  if (indices.size() != data.size()) {
    throw n.error(input_desc(n, 1) + " has rank " + std::to_string(indices.size()) + ", data has rank " +
                  std::to_string(data.size()) + "; they must have the same rank");
  }
  for (std::size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) == axis) continue;
    if (equal ? indices[d] != data[d] : indices[d] > data[d]) {
      throw n.error(input_desc(n, 1) + " has shape " + shape_str(indices) + " and data " + shape_str(data) +
                    ": along axis " + std::to_string(d) + " (not 'axis') indices may not be longer than data");
    }
  }
}

void validate_gather_elements(const Node& n) {
  require_types(n, 0, kDataTypes);
  require_types(n, 1, {{1, kIndexTypes}});
}

void infer_gather_elements(Node& n) {
  const Shape& data = n.input(0).shape();
  const Shape& indices = n.input(1).shape();
  if (data.empty()) throw n.error("input 0 (data) is a scalar; GatherElements needs rank >= 1");
  const int64_t axis = elements_axis(n, static_cast<int64_t>(data.size()));
  check_elements_shapes(n, data, indices, axis, false);
  n.output(0).set_type(n.input(0).dtype(), indices);
}

std::vector<Tensor> eval_gather_elements(const Node& n, const TensorRefs& in) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  const int64_t axis = elements_axis(n, data.rank());
  const std::vector<int64_t> idx = indices.to_i64();
  const std::vector<int64_t> ds = strides_of(data.shape());
  const std::size_t esize = dtype_size(data.dtype());
  Tensor out(data.dtype(), indices.shape());
  uint8_t* dst = out.mutable_raw();
  std::vector<int64_t> c;
  for (int64_t i = 0; i < indices.numel(); ++i) {
    unravel(i, indices.shape(), c);
    c[axis] = checked_index(n, idx[i], data.shape()[axis], "axis " + std::to_string(axis));
    std::memcpy(dst + i * esize, data.raw() + ravel(c, ds) * esize, esize);
  }
  return {out};
}

// ---- GatherND --------------------------------------------------------------------

void validate_gather_nd(const Node& n) {
  require_types(n, 0, kDataTypes);
  require_types(n, 1, {{1, dtype_bit(DType::int64)}});  // GatherND's indices are int64 only
  if (n.attr_int("batch_dims", 0) < 0) throw n.error("attribute 'batch_dims' is negative");
}

void infer_gather_nd(Node& n) {
  const Shape& data = n.input(0).shape();
  const Shape& indices = n.input(1).shape();
  const GatherNdDims d = gather_nd_dims(n, data, indices);
  n.output(0).set_type(n.input(0).dtype(), gather_nd_shape(data, indices, d));
}

std::vector<Tensor> eval_gather_nd(const Node& n, const TensorRefs& in) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  const GatherNdDims d = gather_nd_dims(n, data.shape(), indices.shape());
  const Shape out_shape = gather_nd_shape(data.shape(), indices.shape(), d);
  const std::vector<int64_t> idx = indices.to_i64();
  const std::vector<int64_t> ds = strides_of(data.shape());
  const std::size_t esize = dtype_size(data.dtype());
  const auto b = static_cast<std::size_t>(d.batch_dims), k = static_cast<std::size_t>(d.k);
  // Each index row copies one slice of data: data's dims from b + k on.
  int64_t slice = 1;
  for (std::size_t i = b + k; i < data.shape().size(); ++i) slice *= data.shape()[i];
  const Shape rows_shape(indices.shape().begin(), indices.shape().end() - 1);
  const int64_t rows = num_elements(rows_shape);
  Tensor out(data.dtype(), out_shape);
  uint8_t* dst = out.mutable_raw();
  std::vector<int64_t> c;
  for (int64_t r = 0; r < rows; ++r) {
    unravel(r, rows_shape, c);
    int64_t src = 0;
    for (std::size_t i = 0; i < b; ++i) src += c[i] * ds[i];  // the batch dims align with data's
    for (std::size_t j = 0; j < k; ++j) {
      const int64_t dim = data.shape()[b + j];
      src += checked_index(n, idx[r * d.k + static_cast<int64_t>(j)], dim, "data's axis " + std::to_string(b + j)) *
             ds[b + j];
    }
    std::memcpy(dst + r * slice * static_cast<int64_t>(esize), data.raw() + src * static_cast<int64_t>(esize),
                static_cast<std::size_t>(slice) * esize);
  }
  return {out};
}

// ---- scatters ----------------------------------------------------------------------

/// Applies updates to a copy of data: for each update element u (in order), the destination is
/// `dest(u)`, an element index into data. Bytes for `none`, values otherwise.
template <class Dest>
Tensor scatter(const Tensor& data, const Tensor& updates, ScatterReduction red, Dest dest) {
  const std::size_t esize = dtype_size(data.dtype());
  if (red == ScatterReduction::none) {
    Tensor out(data.dtype(), data.shape(),
               std::vector<uint8_t>(data.raw(), data.raw() + data.nbytes()));
    uint8_t* dst = out.mutable_raw();
    for (int64_t u = 0; u < updates.numel(); ++u) {
      std::memcpy(dst + dest(u) * static_cast<int64_t>(esize), updates.raw() + u * static_cast<int64_t>(esize), esize);
    }
    return out;
  }
  if (is_float(data.dtype())) {
    std::vector<double> v = data.to_f64();
    const std::vector<double> up = updates.to_f64();
    for (int64_t u = 0; u < updates.numel(); ++u) {
      double& t = v[static_cast<std::size_t>(dest(u))];
      const double x = up[static_cast<std::size_t>(u)];
      switch (red) {
        case ScatterReduction::add: t += x; break;
        case ScatterReduction::mul: t *= x; break;
        case ScatterReduction::max: t = std::isnan(t) || std::isnan(x) ? t + x : std::max(t, x); break;
        case ScatterReduction::min: t = std::isnan(t) || std::isnan(x) ? t + x : std::min(t, x); break;
        case ScatterReduction::none: break;
      }
    }
    return Tensor::from_f64(data.dtype(), data.shape(), v);
  }
  std::vector<int64_t> v = data.to_i64();
  const std::vector<int64_t> up = updates.to_i64();
  for (int64_t u = 0; u < updates.numel(); ++u) {
    int64_t& t = v[static_cast<std::size_t>(dest(u))];
    const int64_t x = up[static_cast<std::size_t>(u)];
    switch (red) {
      case ScatterReduction::add: t = wrap_add(t, x); break;
      case ScatterReduction::mul: t = wrap_mul(t, x); break;
      case ScatterReduction::max: t = std::max(t, x); break;
      case ScatterReduction::min: t = std::min(t, x); break;
      case ScatterReduction::none: break;
    }
  }
  return Tensor::from_i64(data.dtype(), data.shape(), v);
}

void validate_scatter_elements(const Node& n) {
  require_types(n, 0, kDataTypes);
  require_types(n, 1, {{1, kIndexTypes}});
  require_same_type(n, 0, 2);
  scatter_reduction(n);
}

void infer_scatter_elements(Node& n) {
  const Shape& data = n.input(0).shape();
  if (data.empty()) throw n.error("input 0 (data) is a scalar; " + n.op() + " needs rank >= 1");
  const int64_t axis = elements_axis(n, static_cast<int64_t>(data.size()));
  check_elements_shapes(n, data, n.input(1).shape(), axis, false);
  if (n.input(2).shape() != n.input(1).shape()) {
    throw n.error(input_desc(n, 2) + " (updates) has shape " + shape_str(n.input(2).shape()) + ", indices have " +
                  shape_str(n.input(1).shape()) + "; they must have the same shape");
  }
  infer_same_as_input(n);
}

std::vector<Tensor> eval_scatter_elements(const Node& n, const TensorRefs& in) {
  const Tensor& data = *in[0];
  const int64_t axis = elements_axis(n, data.rank());
  const std::vector<int64_t> idx = in[1]->to_i64();
  const std::vector<int64_t> ds = strides_of(data.shape());
  const Shape& ushape = in[2]->shape();
  std::vector<int64_t> c;
  const std::string what = "axis " + std::to_string(axis);
  return {scatter(data, *in[2], scatter_reduction(n), [&](int64_t u) {
    unravel(u, ushape, c);
    c[axis] = checked_index(n, idx[u], data.shape()[axis], what);
    return ravel(c, ds);
  })};
}

void validate_scatter_nd(const Node& n) {
  require_types(n, 0, kDataTypes);
  require_types(n, 1, {{1, dtype_bit(DType::int64)}});  // ScatterND's indices are int64 only
  require_same_type(n, 0, 2);
  scatter_reduction(n);
}

void infer_scatter_nd(Node& n) {
  scatter_nd_k(n, n.input(0).shape(), n.input(1).shape(), n.input(2).shape());
  infer_same_as_input(n);
}

std::vector<Tensor> eval_scatter_nd(const Node& n, const TensorRefs& in) {
  const Tensor& data = *in[0];
  const Shape& dshape = data.shape();
  const int64_t k = scatter_nd_k(n, dshape, in[1]->shape(), in[2]->shape());
  const std::vector<int64_t> idx = in[1]->to_i64();
  const std::vector<int64_t> ds = strides_of(dshape);
  int64_t slice = 1;
  for (std::size_t i = static_cast<std::size_t>(k); i < dshape.size(); ++i) slice *= dshape[i];
  return {scatter(data, *in[2], scatter_reduction(n), [&](int64_t u) {
    const int64_t row = u / slice, s = u % slice;
    int64_t at = 0;
    for (int64_t j = 0; j < k; ++j) {
      at += checked_index(n, idx[row * k + j], dshape[j], "data's axis " + std::to_string(j)) * ds[j];
    }
    return at + s;
  })};
}

// ---- OneHot ---------------------------------------------------------------------------

void validate_onehot(const Node& n) {
  const TypeRule numeric = {{9, kFloat16_32 | kInts}, {11, kFloat16_32 | kInts}};
  require_types(n, 0, numeric);
  require_types(n, 1, numeric);
  require_types(n, 2, {{9, kAllTypes & ~kBf16}, {11, kAllTypes}});
  const Shape& v = n.input(2).shape();
  if (v.size() != 1 || v[0] != 2) {
    throw n.error(input_desc(n, 2) + " (values) has shape " + shape_str(v) + "; it must be [2]: [off_value, on_value]");
  }
}

Shape onehot_shape(const Node& n, const Shape& indices, int64_t depth) {
  const int64_t axis = onehot_axis(n, static_cast<int64_t>(indices.size()));
  Shape out = indices;
  out.insert(out.begin() + axis, depth);
  return out;
}

void infer_onehot(Node& n) {
  const int64_t depth = onehot_depth(n);
  n.output(0).set_type(n.input(2).dtype(), onehot_shape(n, n.input(0).shape(), depth));
}

std::vector<Tensor> eval_onehot(const Node& n, const TensorRefs& in) {
  const Tensor& indices = *in[0];
  const Tensor& values = *in[2];
  const int64_t depth = onehot_depth(n, in[1]);
  const int64_t axis = onehot_axis(n, indices.rank());
  const Shape out_shape = onehot_shape(n, indices.shape(), depth);
  int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(axis); d < indices.shape().size(); ++d) inner *= indices.shape()[d];
  const std::vector<int64_t> idx = indices.to_i64();  // float indices truncate toward zero
  const std::size_t esize = dtype_size(values.dtype());
  Tensor out(values.dtype(), out_shape);
  uint8_t* dst = out.mutable_raw();
  const int64_t total = num_elements(out_shape);
  for (int64_t e = 0; e < total; ++e) {
    const int64_t i = e % inner, d = e / inner % depth, o = e / (inner * depth);
    int64_t at = idx[static_cast<std::size_t>(o * inner + i)];
    if (at < 0) at += depth;  // out of [-depth, depth): no position is on
    std::memcpy(dst + e * static_cast<int64_t>(esize), values.raw() + (at == d ? esize : 0), esize);
  }
  return {out};
}

// ---- NonZero --------------------------------------------------------------------------

int64_t count_nonzero(const Tensor& x) {
  int64_t c = 0;
  for (double v : x.to_f64()) c += v != 0;  // NaN counts, as numpy's nonzero
  return c;
}

void infer_nonzero(Node& n) {
  const Value& x = n.input(0);
  const int64_t cols = nonzero_bounded(n) ? x.numel() : count_nonzero(x.constant());
  n.output(0).set_type(DType::int64, {x.rank(), cols});
}

std::vector<Tensor> eval_nonzero(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const std::vector<double> v = x.to_f64();
  const int64_t rank = x.rank();
  // The columns the graph gives the output: the count (folded), or the bound (nonzero_bounded).
  const int64_t cols = n.has_output(0) && n.output(0).rank() == 2 ? n.output(0).shape()[1] : count_nonzero(x);
  std::vector<int64_t> out(static_cast<std::size_t>(rank * cols), -1);
  std::vector<int64_t> c;
  int64_t col = 0;
  for (int64_t e = 0; e < x.numel(); ++e) {
    if (v[static_cast<std::size_t>(e)] == 0) continue;
    if (col >= cols) {
      throw n.error("internal: more non-zero elements than the output's " + std::to_string(cols) + " columns");
    }
    unravel(e, x.shape(), c);
    for (int64_t d = 0; d < rank; ++d) out[static_cast<std::size_t>(d * cols + col)] = c[static_cast<std::size_t>(d)];
    ++col;
  }
  return {Tensor::from_i64(DType::int64, {rank, cols}, out)};
}

}  // namespace

// ---- the rules the families read ----------------------------------------------------------

int64_t elements_axis(const Node& n, int64_t rank) { return normalize_axis(n, n.attr_int("axis", 0), rank); }

GatherNdDims gather_nd_dims(const Node& n, const Shape& data, const Shape& indices) {
  GatherNdDims d;
  d.batch_dims = n.attr_int("batch_dims", 0);
  const auto r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) throw n.error("data and indices must have rank >= 1 (they have " + std::to_string(r) + " and " + std::to_string(q) + ")");
  if (d.batch_dims < 0 || d.batch_dims >= std::min(r, q)) {
    throw n.error("attribute 'batch_dims' is " + std::to_string(d.batch_dims) + "; it must be below both ranks (" +
                  std::to_string(r) + " and " + std::to_string(q) + ")");
  }
  for (int64_t i = 0; i < d.batch_dims; ++i) {
    if (data[i] != indices[i]) {
      throw n.error("the batch dims of data " + shape_str(data) + " and indices " + shape_str(indices) + " differ");
    }
  }
  d.k = indices.back();
  if (d.k < 1 || d.k > r - d.batch_dims) {
    throw n.error("indices' last dim is " + std::to_string(d.k) + "; it must be in [1, " +
                  std::to_string(r - d.batch_dims) + "] (data's rank less batch_dims)");
  }
  return d;
}

Shape gather_nd_shape(const Shape& data, const Shape& indices, const GatherNdDims& d) {
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + d.batch_dims + d.k, data.end());
  return out;
}

ScatterReduction scatter_reduction(const Node& n) {
  const std::string r = n.attr_string("reduction", "none");
  if (r == "none") return ScatterReduction::none;
  if (r == "add") return ScatterReduction::add;
  if (r == "mul") return ScatterReduction::mul;
  if (n.opset() >= 18 && r == "max") return ScatterReduction::max;
  if (n.opset() >= 18 && r == "min") return ScatterReduction::min;
  throw n.error("attribute 'reduction' is '" + r + "'; " + n.op() + " at opset " + std::to_string(n.opset()) +
                " takes none, add, mul" + (n.opset() >= 18 ? ", max or min" : " (max and min from opset 18)"));
}

const char* reduction_name(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::none: return "none";
    case ScatterReduction::add: return "add";
    case ScatterReduction::mul: return "mul";
    case ScatterReduction::max: return "max";
    case ScatterReduction::min: return "min";
  }
  return "?";
}

int64_t scatter_nd_k(const Node& n, const Shape& data, const Shape& indices, const Shape& updates) {
  if (data.empty() || indices.empty()) throw n.error("data and indices must have rank >= 1");
  const int64_t k = indices.back();
  if (k < 1 || k > static_cast<int64_t>(data.size())) {
    throw n.error("indices' last dim is " + std::to_string(k) + "; it must be in [1, " + std::to_string(data.size()) +
                  "] (data's rank)");
  }
  Shape want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (updates != want) {
    throw n.error("input 2 (updates) has shape " + shape_str(updates) + "; for data " + shape_str(data) +
                  " and indices " + shape_str(indices) + " it must be " + shape_str(want));
  }
  return k;
}

int64_t onehot_axis(const Node& n, int64_t indices_rank) {
  return normalize_axis(n, n.attr_int("axis", -1), indices_rank + 1);
}

int64_t onehot_depth(const Node& n, const Tensor* value) {
  std::optional<Tensor> t;
  if (value) {
    t = *value;
  } else {
    if (!n.input(1).is_constant()) const_ints(n, 1, "depth");  // the Error naming the input
    t = n.input(1).constant();
  }
  if (t->numel() != 1) throw n.error("input 1 (depth) has " + std::to_string(t->numel()) + " elements; it must have one");
  const int64_t depth = t->i64_at(0);
  if (depth < 1) throw n.error("input 1 (depth) is " + std::to_string(depth) + "; it must be positive");
  return depth;
}

bool nonzero_bounded(const Node& n) {
  // ops::infer_node folds outputs of up to 2^24 elements (shape_inference.cpp kMaxFoldElements): a
  // constant input whose exact output could be larger is bounded like a computed one.
  const Value& x = n.input(0);
  return !x.is_constant() || std::max<int64_t>(x.rank(), 1) * x.numel() > (int64_t{1} << 24);
}

MODELC_REGISTER_OP(GatherElements)
    .since(11)
    .attrs({"axis"})
    .inputs(2, 2)
    .validate(validate_gather_elements)
    .infer(infer_gather_elements)
    .eval(eval_gather_elements)
    .precision(Precision::fp16)
    .kernel("gather_elements")
    .family("data")
    .doc("y[i][j] = data[indices[i][j]][j] along 'axis' (any rank; negative indices count from the end)");

MODELC_REGISTER_OP(GatherND)
    .since(11)
    .attrs({"batch_dims"})
    .inputs(2, 2)
    .validate(validate_gather_nd)
    .infer(infer_gather_nd)
    .eval(eval_gather_nd)
    .precision(Precision::fp16)
    .kernel("gather_nd")
    .family("data")
    .doc("slices of data at the index tuples of indices' last dim, after 'batch_dims' shared leading dims");

// Scatter 9 is ScatterElements without the name (deprecated at 11).
MODELC_REGISTER_OP(Scatter)
    .since(9)
    .attrs({"axis"})
    .inputs(3, 3)
    .validate(validate_scatter_elements)
    .infer(infer_scatter_elements)
    .eval(eval_scatter_elements)
    .precision(Precision::fp16)
    .kernel("scatter_elements")
    .family("data")
    .doc("ScatterElements' first name (deprecated at opset 11)");

MODELC_REGISTER_OP(ScatterElements)
    .since(11)
    .attrs({"axis", "reduction"})
    .inputs(3, 3)
    .validate(validate_scatter_elements)
    .infer(infer_scatter_elements)
    .eval(eval_scatter_elements)
    .precision(Precision::fp16)
    .kernel("scatter_elements")
    .family("data")
    .doc("data with updates written at indices along 'axis'; 'reduction' none, add, mul (16), max, min (18), "
         "applied in index order");

MODELC_REGISTER_OP(ScatterND)
    .since(11)
    .attrs({"reduction"})
    .inputs(3, 3)
    .validate(validate_scatter_nd)
    .infer(infer_scatter_nd)
    .eval(eval_scatter_nd)
    .precision(Precision::fp16)
    .kernel("scatter_nd")
    .family("data")
    .doc("data with update slices written at the index tuples of indices' last dim; 'reduction' as ScatterElements");

// No precision policy: float indices (which OneHot takes) would round in FP16 beyond 2048.
MODELC_REGISTER_OP(OneHot)
    .since(9)
    .attrs({"axis"})
    .inputs(3, 3)
    .const_inputs({1})
    .validate(validate_onehot)
    .infer(infer_onehot)
    .eval(eval_onehot)
    .kernel("onehot")
    .family("data")
    .doc("values[1] where the new 'axis' equals the index (negative ones from the end), values[0] elsewhere "
         "(constant depth)");

// NonZero's input decides its output's shape, so the conformance runner (and --bind) bind it as a
// constant where a test feeds it; computed at run time, the output is bounded (nonzero_bounded).
MODELC_REGISTER_OP(NonZero)
    .since(9)
    .inputs(1, 1)
    .const_inputs({0})
    .validate([](const Node& n) { require_types(n, 0, kDataTypes); })
    .infer(infer_nonzero)
    .eval(eval_nonzero)
    .precision(Precision::never)
    .kernel("nonzero")
    .family("data")
    .doc("coordinates of the non-zero elements, [rank, count]; computed at run time, [rank, input elements] "
         "with -1 after the count");

}  // namespace modelc::ops

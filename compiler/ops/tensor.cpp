// compiler/ops/tensor.cpp — data movement: Concat, Split, Slice, Gather, Transpose.
//
// Every evaluation here copies raw bytes (never a round trip through double),
// so it is bit-exact for every dtype: float16, bfloat16, bool and int64 alike.
// Index and size arithmetic is int64 throughout.
#include "ops/tensor.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/common.h"

namespace modelc::ops {
namespace {

// ---- shared helpers -----------------------------------------------------------

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// An axis in [-rank, rank) made non-negative. Negative axes are part of the
// spec only from opset 11 on (Concat, Split, Slice, Gather, ...).
int64_t checked_axis(const Node& n, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < 0 && n.opset() < 11) {
    throw n.error(what + " " + std::to_string(axis) + " is negative; negative axes are allowed from opset 11 on",
                  "re-export the model at opset 11 or later, or use a non-negative axis");
  }
  if (axis < -rank || axis >= rank) {
    throw n.error(what + " " + std::to_string(axis) + " is out of range for an input of rank " +
                  std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t product(const Shape& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

// Copies a strided view of `src` into the contiguous `dst`: element k of dst
// (C order over `shape`) is src element offset + sum(coord[d] * strides[d]).
// Strides may be negative (Slice with negative steps) or permuted (Transpose).
void copy_strided(const uint8_t* src, uint8_t* dst, const Shape& shape, const std::vector<int64_t>& strides,
                  int64_t offset, std::size_t esize) {
  const int64_t total = num_elements(shape);
  if (total == 0) return;
  const std::size_t r = shape.size();
  if (r == 0) {
    std::memcpy(dst, src + offset * static_cast<int64_t>(esize), esize);
    return;
  }
  const int64_t inner = shape[r - 1];
  const int64_t inner_stride = strides[r - 1];
  const int64_t rows = total / inner;
  std::vector<int64_t> coord(r - 1, 0);
  int64_t base = offset;
  for (int64_t row = 0; row < rows; ++row) {
    if (inner_stride == 1) {
      std::memcpy(dst, src + base * static_cast<int64_t>(esize), static_cast<std::size_t>(inner) * esize);
      dst += static_cast<std::size_t>(inner) * esize;
    } else {
      for (int64_t j = 0; j < inner; ++j) {
        std::memcpy(dst, src + (base + j * inner_stride) * static_cast<int64_t>(esize), esize);
        dst += esize;
      }
    }
    // Odometer over the outer dims.
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) {
      if (++coord[d] < shape[d]) {
        base += strides[d];
        break;
      }
      base -= strides[d] * (shape[d] - 1);
      coord[d] = 0;
    }
  }
}

// ---- Concat -------------------------------------------------------------------

struct ConcatPlan {
  int64_t axis = 0;
  Shape out;
};

ConcatPlan concat_plan(const Node& n, const std::vector<Shape>& shapes, const std::vector<DType>& dtypes) {
  if (shapes.empty()) throw n.error("needs at least one input");
  const Shape& first = shapes[0];
  const int64_t rank = static_cast<int64_t>(first.size());
  if (rank == 0) throw n.error("input 0 is a scalar; Concat needs inputs of rank 1 or more");
  ConcatPlan p;
  p.axis = concat_axis(n, rank);
  p.out = first;
  p.out[p.axis] = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (dtypes[i] != dtypes[0]) {
      throw n.error("input " + std::to_string(i) + " is " + dtype_name(dtypes[i]) + ", input 0 is " +
                    dtype_name(dtypes[0]) + ": every input must have the same dtype");
    }
    if (shapes[i].size() != first.size()) {
      throw n.error("input " + std::to_string(i) + " has rank " + std::to_string(shapes[i].size()) +
                    ", input 0 has rank " + std::to_string(rank) + ": every input must have the same rank");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != p.axis && shapes[i][d] != first[d]) {
        throw n.error("input " + std::to_string(i) + " has shape " + shape_str(shapes[i]) + ", input 0 has " +
                      shape_str(first) + ": they may differ only along axis " + std::to_string(p.axis));
      }
    }
    p.out[p.axis] += shapes[i][p.axis];
  }
  return p;
}

void validate_concat(const Node& n) {
  if (!n.has_attr("axis")) throw n.error("attribute 'axis' is required");
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!n.has_input(i)) throw n.error("input " + std::to_string(i) + " is omitted; Concat inputs are all required");
  }
}

void infer_concat(Node& n) {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (int i = 0; i < n.num_inputs(); ++i) {
    shapes.push_back(n.input(i).shape());
    dtypes.push_back(n.input(i).dtype());
  }
  const ConcatPlan p = concat_plan(n, shapes, dtypes);
  n.output(0).set_type(dtypes[0], p.out);
}

std::vector<Tensor> eval_concat(const Node& n, const TensorRefs& in) {
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (const Tensor* t : in) {
    if (!t) throw n.error("an input is omitted; Concat inputs are all required");
    shapes.push_back(t->shape());
    dtypes.push_back(t->dtype());
  }
  const ConcatPlan p = concat_plan(n, shapes, dtypes);
  const std::size_t esize = dtype_size(dtypes[0]);
  Tensor out(dtypes[0], p.out);
  const int64_t outer = product(p.out, 0, static_cast<std::size_t>(p.axis));
  const int64_t inner = product(p.out, static_cast<std::size_t>(p.axis) + 1, p.out.size());
  uint8_t* dst = out.mutable_raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor* t : in) {
      const std::size_t block = static_cast<std::size_t>(t->shape()[p.axis] * inner) * esize;
      if (block == 0) continue;
      std::memcpy(dst, t->raw() + static_cast<std::size_t>(o) * block, block);
      dst += block;
    }
  }
  return {out};
}

// ---- Split --------------------------------------------------------------------

// `split`: the explicit lengths (attribute before opset 13, input from 13), if any.
SplitParts split_plan(const Node& n, const Shape& in, const std::optional<std::vector<int64_t>>& split) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (rank == 0) throw n.error("input 0 is a scalar; Split needs an input of rank 1 or more");
  SplitParts p;
  // Split-2 leaves a negative axis undefined; ONNX's own shape inference
  // counts it from the back, since models exported at opsets 2-10 use -1
  // (pytorch-converted/test_GLU), and so does modelc.
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0 && axis >= -rank) axis += rank;
  p.axis = checked_axis(n, axis, rank, "attribute 'axis'");
  const int64_t dim = in[p.axis];
  const int64_t outputs = n.num_outputs();
  const char* split_name = n.opset() >= 13 ? "input 'split'" : "attribute 'split'";
  if (split) {
    if (n.has_attr("num_outputs")) {
      throw n.error("attribute 'num_outputs' and input 'split' are both given; give one of them");
    }
    if (static_cast<int64_t>(split->size()) != outputs) {
      throw n.error(std::string(split_name) + " has " + std::to_string(split->size()) + " values for " +
                    std::to_string(outputs) + " outputs");
    }
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) throw n.error(std::string(split_name) + " " + ints_str(*split) + " has a negative length");
      if (s > dim || sum > dim - s) {
        sum = dim + 1;  // overflow-safe "too long"
        break;
      }
      sum += s;
    }
    if (sum != dim) {
      throw n.error(std::string(split_name) + " " + ints_str(*split) + " does not add up to the length " +
                    std::to_string(dim) + " of axis " + std::to_string(p.axis));
    }
    p.sizes = *split;
    return p;
  }
  if (n.opset() >= 18) {
    // Opset 18: num_outputs parts of ceil(dim / num_outputs); the last may be smaller.
    if (!n.has_attr("num_outputs")) {
      throw n.error("neither input 'split' nor attribute 'num_outputs' is given; opset 18 needs one of them");
    }
    const int64_t parts = n.attr_int("num_outputs", 0);
    if (parts < 1) throw n.error("attribute 'num_outputs' is " + std::to_string(parts) + ", must be >= 1");
    if (parts != outputs) {
      throw n.error("attribute 'num_outputs' is " + std::to_string(parts) + " but the node has " +
                    std::to_string(outputs) + " outputs");
    }
    const int64_t chunk = dim / parts + (dim % parts != 0 ? 1 : 0);
    const int64_t last = dim - chunk * (parts - 1);
    if (last < 0) {
      throw n.error("attribute 'num_outputs' " + std::to_string(parts) + " cannot split a length of " +
                    std::to_string(dim) + " into chunks of " + std::to_string(chunk) + " with a smaller last one");
    }
    p.sizes.assign(static_cast<std::size_t>(parts), chunk);
    p.sizes.back() = last;
    return p;
  }
  if (dim % outputs != 0) {
    throw n.error("axis " + std::to_string(p.axis) + " has length " + std::to_string(dim) +
                      ", which does not split into " + std::to_string(outputs) + " equal parts",
                  std::string("give the part lengths with the 'split' ") + (n.opset() >= 13 ? "input" : "attribute"));
  }
  p.sizes.assign(static_cast<std::size_t>(outputs), dim / outputs);
  return p;
}

void validate_split(const Node& n) {
  require_dtype(n, 1, {DType::int64});
  if (n.has_attr("num_outputs") && n.has_input(1)) {
    throw n.error("attribute 'num_outputs' and input 'split' are both given; give one of them");
  }
}

void infer_split(Node& n) {
  const Value& x = n.input(0);
  const SplitParts p = split_parts(n, x.shape());
  for (int i = 0; i < n.num_outputs(); ++i) {
    if (!n.has_output(i)) continue;
    Shape s = x.shape();
    s[p.axis] = p.sizes[i];
    n.output(i).set_type(x.dtype(), s);
  }
}

std::vector<Tensor> eval_split(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const std::vector<int64_t> split = in.size() > 1 ? ints_of(in[1]) : std::vector<int64_t>{};
  const SplitParts p = split_parts(n, x.shape(), in.size() > 1 && in[1] ? &split : nullptr);
  const std::size_t esize = dtype_size(x.dtype());
  const int64_t outer = product(x.shape(), 0, static_cast<std::size_t>(p.axis));
  const int64_t inner = product(x.shape(), static_cast<std::size_t>(p.axis) + 1, x.shape().size());
  const std::size_t in_block = static_cast<std::size_t>(x.shape()[p.axis] * inner) * esize;
  std::vector<Tensor> out;
  std::size_t start = 0;  // byte offset of this part inside one outer block
  for (int64_t size : p.sizes) {
    Shape s = x.shape();
    s[p.axis] = size;
    Tensor t(x.dtype(), s);
    const std::size_t block = static_cast<std::size_t>(size * inner) * esize;
    if (block > 0) {
      uint8_t* dst = t.mutable_raw();
      for (int64_t o = 0; o < outer; ++o) {
        std::memcpy(dst + static_cast<std::size_t>(o) * block, x.raw() + static_cast<std::size_t>(o) * in_block + start,
                    block);
      }
    }
    start += block;
    out.push_back(std::move(t));
  }
  return out;
}

// ---- Slice --------------------------------------------------------------------

struct SliceView {
  Shape out;
  std::vector<int64_t> strides;  // in elements of the input, per output dim
  int64_t offset = 0;
};

SliceView slice_plan(const Node& n, const Shape& in, const SliceParams& sp) {
  const std::vector<SliceRange> ranges = slice_ranges(n, in, sp);
  SliceView v;
  v.out = in;
  for (const SliceRange& r : ranges) v.out[r.axis] = r.count;
  v.strides = strides_of(in);
  v.offset = slice_view(ranges, v.strides);
  return v;
}

void validate_slice(const Node& n) {
  if (n.opset() < 10) {
    if (!n.has_attr("starts")) throw n.error("attribute 'starts' is required");
    if (!n.has_attr("ends")) throw n.error("attribute 'ends' is required");
    return;
  }
  for (int i = 1; i <= 4; ++i) require_dtype(n, i, {DType::int32, DType::int64});
  if (n.has_input(1) && n.has_input(2) && n.input(1).dtype() != n.input(2).dtype()) {
    throw n.error("input 'starts' is " + std::string(dtype_name(n.input(1).dtype())) + ", input 'ends' is " +
                  dtype_name(n.input(2).dtype()) + ": they must have the same dtype");
  }
}

void infer_slice(Node& n) {
  const SliceView v = slice_plan(n, n.input(0).shape(), slice_params(n));
  n.output(0).set_type(n.input(0).dtype(), v.out);
}

std::vector<Tensor> eval_slice(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  SliceParams sp;
  if (n.opset() < 10) {
    sp = slice_params(n);
  } else {
    if (in.size() < 3 || !in[1] || !in[2]) throw n.error("inputs 'starts' and 'ends' are required");
    sp.starts = ints_of(in[1]);
    sp.ends = ints_of(in[2]);
    if (in.size() > 3 && in[3]) sp.axes = ints_of(in[3]);
    if (in.size() > 4 && in[4]) sp.steps = ints_of(in[4]);
  }
  const SliceView v = slice_plan(n, x.shape(), sp);
  Tensor out(x.dtype(), v.out);
  copy_strided(x.raw(), out.mutable_raw(), v.out, v.strides, v.offset, dtype_size(x.dtype()));
  return {out};
}

// ---- Gather -------------------------------------------------------------------

Shape gather_shape(const Shape& data, const Shape& indices, int64_t axis) {
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return out;
}

void validate_gather(const Node& n) { require_dtype(n, 1, {DType::int32, DType::int64}); }

void infer_gather(Node& n) {
  const Value& data = n.input(0);
  const int64_t axis = gather_axis(n, data.shape());
  n.output(0).set_type(data.dtype(), gather_shape(data.shape(), n.input(1).shape(), axis));
}

std::vector<Tensor> eval_gather(const Node& n, const TensorRefs& in) {
  const Tensor& data = *in[0];
  const Tensor& indices = *in[1];
  const int64_t axis = gather_axis(n, data.shape());
  const int64_t dim = data.shape()[axis];
  // Negative indices count from the end (the spec states it from opset 11;
  // earlier forms leave it undefined and runtimes accept it, so do we).
  std::vector<int64_t> idx = indices.to_i64();
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim) {
      throw n.error("index " + std::to_string(i) + " in input 'indices' is out of range for axis " +
                    std::to_string(axis) + " of length " + std::to_string(dim));
    }
    if (i < 0) i += dim;
  }
  const Shape out_shape = gather_shape(data.shape(), indices.shape(), axis);
  Tensor out(data.dtype(), out_shape);
  const std::size_t esize = dtype_size(data.dtype());
  const int64_t outer = product(data.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t inner = product(data.shape(), static_cast<std::size_t>(axis) + 1, data.shape().size());
  const std::size_t row = static_cast<std::size_t>(inner) * esize;
  if (row == 0 || idx.empty()) return {out};
  uint8_t* dst = out.mutable_raw();
  for (int64_t o = 0; o < outer; ++o) {
    const uint8_t* src = data.raw() + static_cast<std::size_t>(o * dim) * row;
    for (int64_t i : idx) {
      std::memcpy(dst, src + static_cast<std::size_t>(i) * row, row);
      dst += row;
    }
  }
  return {out};
}

// ---- Transpose ----------------------------------------------------------------

void validate_transpose(const Node& n) {
  // Rank-independent checks; the rank check is in infer.
  if (!n.has_attr("perm")) return;
  for (int64_t p : n.attr_ints("perm")) {
    if (p < 0) throw n.error("attribute 'perm' has a negative entry " + std::to_string(p));
  }
}

void infer_transpose(Node& n) {
  const Value& x = n.input(0);
  const std::vector<int64_t> perm = transpose_perm(n, x.rank());
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape()[p]);
  n.output(0).set_type(x.dtype(), out);
}

std::vector<Tensor> eval_transpose(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const std::vector<int64_t> perm = transpose_perm(n, x.rank());
  const std::vector<int64_t> in_strides = strides_of(x.shape());
  Shape out_shape;
  std::vector<int64_t> strides;
  for (int64_t p : perm) {
    out_shape.push_back(x.shape()[p]);
    strides.push_back(in_strides[p]);
  }
  Tensor out(x.dtype(), out_shape);
  copy_strided(x.raw(), out.mutable_raw(), out_shape, strides, 0, dtype_size(x.dtype()));
  return {out};
}

}  // namespace

int64_t concat_axis(const Node& n, int64_t rank) {
  if (!n.has_attr("axis")) throw n.error("attribute 'axis' is required");
  return checked_axis(n, n.attr_int("axis", 0), rank, "attribute 'axis'");
}

SplitParts split_parts(const Node& n, const Shape& in, const std::vector<int64_t>* split_input) {
  std::optional<std::vector<int64_t>> split;
  if (n.opset() < 13) {
    if (n.has_attr("split")) split = n.attr_ints("split");
  } else if (split_input) {
    split = *split_input;
  }
  return split_plan(n, in, split);
}

SplitParts split_parts(const Node& n, const Shape& in) {
  const std::optional<std::vector<int64_t>> split = n.opset() < 13 ? std::nullopt : const_ints(n, 1, "split");
  return split_parts(n, in, split ? &*split : nullptr);
}

SliceParams slice_params(const Node& n) {
  SliceParams sp;
  if (n.opset() < 10) {
    sp.starts = n.attr_ints("starts");
    sp.ends = n.attr_ints("ends");
    if (n.has_attr("axes")) sp.axes = n.attr_ints("axes");
    return sp;
  }
  sp.starts = *const_ints(n, 1, "starts");
  sp.ends = *const_ints(n, 2, "ends");
  sp.axes = const_ints(n, 3, "axes");
  sp.steps = const_ints(n, 4, "steps");
  return sp;
}

std::vector<SliceRange> slice_ranges(const Node& n, const Shape& in, const SliceParams& sp) {
  const int64_t rank = static_cast<int64_t>(in.size());
  const bool inputs = n.opset() >= 10;
  const std::string starts_name = inputs ? "input 'starts'" : "attribute 'starts'";
  const std::string ends_name = inputs ? "input 'ends'" : "attribute 'ends'";
  const std::string axes_name = inputs ? "input 'axes'" : "attribute 'axes'";
  const std::size_t k = sp.starts.size();
  if (sp.ends.size() != k) {
    throw n.error(starts_name + " has " + std::to_string(k) + " values, " + ends_name + " has " +
                  std::to_string(sp.ends.size()));
  }
  std::vector<int64_t> axes;
  if (sp.axes) {
    if (sp.axes->size() != k) {
      throw n.error(axes_name + " has " + std::to_string(sp.axes->size()) + " values, " + starts_name + " has " +
                    std::to_string(k));
    }
    for (int64_t a : *sp.axes) axes.push_back(checked_axis(n, a, rank, axes_name));
    std::vector<int64_t> sorted = axes;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      throw n.error(axes_name + " " + ints_str(*sp.axes) + " repeats an axis");
    }
  } else {
    if (static_cast<int64_t>(k) > rank) {
      throw n.error(starts_name + " has " + std::to_string(k) + " values for an input of rank " +
                    std::to_string(rank));
    }
    for (std::size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> steps(k, 1);
  if (sp.steps) {
    if (sp.steps->size() != k) {
      throw n.error("input 'steps' has " + std::to_string(sp.steps->size()) + " values, " + starts_name + " has " +
                    std::to_string(k));
    }
    steps = *sp.steps;
  }
  std::vector<SliceRange> ranges;
  for (std::size_t i = 0; i < k; ++i) {
    const int64_t a = axes[i];
    const int64_t dim = in[a];
    const int64_t step = steps[i];
    if (step == 0) throw n.error("input 'steps' " + ints_str(steps) + " has a 0 step");
    // No overflow: dim >= 0, so INT64_MIN + dim and INT64_MAX stay representable.
    int64_t start = sp.starts[i], end = sp.ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      if (end > start) count = (end - start - 1) / step + 1;
    } else {
      start = std::max<int64_t>(0, std::min<int64_t>(start, dim - 1));
      end = std::max<int64_t>(-1, std::min<int64_t>(end, dim - 1));
      if (dim > 0 && start > end) {
        // (start - end - 1) / -step without negating INT64_MIN.
        const uint64_t span = static_cast<uint64_t>(start - end - 1);
        const uint64_t mag = static_cast<uint64_t>(-(step + 1)) + 1;
        count = static_cast<int64_t>(span / mag) + 1;
      }
    }
    ranges.push_back(SliceRange{a, start, step, count});
  }
  return ranges;
}

int64_t slice_view(const std::vector<SliceRange>& ranges, std::vector<int64_t>& strides) {
  int64_t offset = 0;
  for (const SliceRange& r : ranges) {
    if (r.count == 0) continue;
    const auto a = static_cast<std::size_t>(r.axis);
    offset += r.start * strides[a];
    // |step| may be huge with a count of 1: the stride is then never applied.
    strides[a] = r.count > 1 ? r.step * strides[a] : 0;
  }
  return offset;
}

int64_t gather_axis(const Node& n, const Shape& data) {
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0) throw n.error("input 'data' is a scalar; Gather needs data of rank 1 or more");
  return checked_axis(n, n.attr_int("axis", 0), rank, "attribute 'axis'");
}

std::vector<int64_t> transpose_perm(const Node& n, int64_t rank) {
  std::vector<int64_t> perm;
  if (!n.has_attr("perm")) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);  // default: reverse the dims
    return perm;
  }
  perm = n.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank) {
    throw n.error("attribute 'perm' " + ints_str(perm) + " has " + std::to_string(perm.size()) +
                  " values, the input has rank " + std::to_string(rank));
  }
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<std::size_t>(p)]) {
      throw n.error("attribute 'perm' " + ints_str(perm) + " is not a permutation of 0.." +
                    std::to_string(rank - 1));
    }
    seen[static_cast<std::size_t>(p)] = true;
  }
  return perm;
}

bool transpose_moves_unit_dims_only(const Node& n) {
  if (n.op() != "Transpose" || !(n.domain().empty() || n.domain() == "ai.onnx") || !n.has_input(0)) return false;
  const Shape& in = n.input(0).shape();
  int64_t last = -1;
  for (int64_t p : transpose_perm(n, static_cast<int64_t>(in.size()))) {
    if (in[static_cast<std::size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

// Data movement is exact in any dtype, so it runs in FP16 wherever its
// producer does: no casts around a Concat or a Transpose.

MODELC_REGISTER_OP(Concat)
    .since(4)
    .attrs({"axis"})
    .inputs(1, -1)
    .validate(validate_concat)
    .infer(infer_concat)
    .eval(eval_concat)
    .precision(Precision::fp16)
    .kernel("concat")
    .family("data")
    .doc("joins the inputs along 'axis' (negative axis from opset 11)");

MODELC_REGISTER_OP(Split)
    .since(2)
    .attrs({"axis", "split"})
    .inputs(1, 1)
    .outputs(1, -1)
    .validate(validate_split)
    .infer(infer_split)
    .eval(eval_split)
    .precision(Precision::fp16)
    .kernel("split")
    .family("data")
    .doc("splits along 'axis' into parts of the 'split' attribute's lengths, or equal parts");

MODELC_REGISTER_OP(Split)
    .since(13)
    .const_inputs({1})
    .attrs({"axis"})
    .inputs(1, 2)
    .outputs(1, -1)
    .validate(validate_split)
    .infer(infer_split)
    .eval(eval_split)
    .precision(Precision::fp16)
    .kernel("split")
    .family("data")
    .doc("splits along 'axis' into parts of the 'split' input's lengths (constant), or equal parts");

MODELC_REGISTER_OP(Split)
    .since(18)
    .const_inputs({1})
    .attrs({"axis", "num_outputs"})
    .inputs(1, 2)
    .outputs(1, -1)
    .validate(validate_split)
    .infer(infer_split)
    .eval(eval_split)
    .precision(Precision::fp16)
    .kernel("split")
    .family("data")
    .doc("splits along 'axis' by the 'split' input, or into 'num_outputs' parts (the last may be smaller)");

MODELC_REGISTER_OP(Slice)
    .since(1)
    .attrs({"starts", "ends", "axes"})
    .inputs(1, 1)
    .validate(validate_slice)
    .infer(infer_slice)
    .eval(eval_slice)
    .precision(Precision::fp16)
    .kernel("slice")
    .family("data")
    .doc("takes [starts, ends) along 'axes' (attributes), clamped to the dims");

MODELC_REGISTER_OP(Slice)
    .since(10)
    .const_inputs({1, 2, 3, 4})
    .inputs(3, 5)
    .validate(validate_slice)
    .infer(infer_slice)
    .eval(eval_slice)
    .precision(Precision::fp16)
    .kernel("slice")
    .family("data")
    .doc("takes starts:ends:steps along axes (constant inputs), clamped to the dims; negative steps go backward");

MODELC_REGISTER_OP(Gather)
    .since(1)
    .attrs({"axis"})
    .inputs(2, 2)
    .validate(validate_gather)
    .infer(infer_gather)
    .eval(eval_gather)
    .precision(Precision::fp16)
    .kernel("gather")
    .family("data")
    .doc("picks entries of 'data' along 'axis' at 'indices' (negative indices count from the end)");

MODELC_REGISTER_OP(Transpose)
    .since(1)
    .attrs({"perm"})
    .inputs(1, 1)
    .validate(validate_transpose)
    .infer(infer_transpose)
    .eval(eval_transpose)
    .precision(Precision::fp16)
    .kernel("transpose")
    .family("data")
    .doc("permutes the dims by 'perm' (default: reversed)");

}  // namespace modelc::ops

// compiler/ops/shape.cpp — views and shape math: Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, Dropout (inference), Shape, Size, ConstantOfShape,
// Constant, Range.
//
// Views keep the input's bytes (Tensor::reshaped), so they are bit-exact for
// every dtype. Shape math is int64 throughout (to_i64 / from_i64, never a
// double round trip). Shape and Size give constant outputs even when their
// input is computed at run time: the input's shape is static, and that is what
// lets Reshape/Expand/... shape chains resolve at import.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/common.h"

namespace modelc::ops {
namespace {

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// An axis in [-rank, rank) made non-negative; negative axes are part of the
// spec from opset 11 on.
int64_t checked_axis(const Node& n, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < 0 && n.opset() < 11) {
    throw n.error(what + " has the negative axis " + std::to_string(axis) +
                      "; negative axes are allowed from opset 11 on",
                  "re-export the model at opset 11 or later, or use non-negative axes");
  }
  if (axis < -rank || axis >= rank) {
    throw n.error(what + " has the axis " + std::to_string(axis) + ", out of range for rank " +
                  std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

// Every axis checked, made non-negative, and no axis twice.
std::vector<int64_t> checked_axes(const Node& n, const std::vector<int64_t>& axes, int64_t rank,
                                  const std::string& what) {
  std::vector<int64_t> r;
  for (int64_t a : axes) r.push_back(checked_axis(n, a, rank, what));
  std::vector<int64_t> sorted = r;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw n.error(what + " " + ints_str(axes) + " repeats an axis");
  }
  return r;
}

// Product of dims, or an Error when it does not fit in int64.
int64_t checked_numel(const Node& n, const Shape& s, const std::string& what) {
  int64_t p = 1;
  for (int64_t d : s) {
    if (d < 0) throw n.error(what + " " + ints_str(s) + " has a negative dimension");
    if (d != 0 && p > std::numeric_limits<int64_t>::max() / d) {
      throw n.error(what + " " + ints_str(s) + " has more elements than fit in int64");
    }
    p *= d;
  }
  return p;
}

// ---- Reshape ------------------------------------------------------------------

Shape reshape_shape(const Node& n, const Shape& in, const std::vector<int64_t>& target) {
  const bool allowzero = n.opset() >= 14 && n.attr_int("allowzero", 0) != 0;
  Shape out(target.size());
  int64_t infer_at = -1;
  bool has_zero = false;
  int64_t known = 1;  // product of the dims other than the -1
  for (std::size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (infer_at >= 0) throw n.error("input 'shape' " + ints_str(target) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (t < -1) throw n.error("input 'shape' " + ints_str(target) + " has the invalid dimension " + std::to_string(t));
    if (t == 0) {
      has_zero = true;
      if (!allowzero) {
        // 0 copies the input's dim at the same position.
        if (i >= in.size()) {
          throw n.error("input 'shape' " + ints_str(target) + " has a 0 at position " + std::to_string(i) +
                        ", past the input's rank " + std::to_string(in.size()) + " (0 copies the input's dim there)");
        }
        t = in[i];
      }
    }
    out[i] = t;
    if (t != 0 && known > std::numeric_limits<int64_t>::max() / t) {
      throw n.error("input 'shape' " + ints_str(target) + " has more elements than fit in int64");
    }
    known *= t;
  }
  const int64_t numel = num_elements(in);
  if (allowzero && has_zero && infer_at >= 0) {
    throw n.error("input 'shape' " + ints_str(target) + " has both 0 and -1, which allowzero=1 forbids");
  }
  if (infer_at >= 0) {
    if (known == 0) {
      throw n.error("input 'shape' " + ints_str(target) + " cannot infer its -1: the other dims multiply to 0");
    }
    if (numel % known != 0) {
      throw n.error("cannot reshape " + shape_str(in) + " (" + std::to_string(numel) + " elements) to " +
                    ints_str(target) + ": the element count is not a multiple of " + std::to_string(known));
    }
    out[infer_at] = numel / known;
  } else if (known != numel) {
    throw n.error("cannot reshape " + shape_str(in) + " (" + std::to_string(numel) + " elements) to " +
                  ints_str(target) + " (" + std::to_string(known) + " elements)");
  }
  return out;
}

void validate_reshape(const Node& n) {
  require_dtype(n, 1, {DType::int64});
  const int64_t allowzero = n.attr_int("allowzero", 0);
  if (allowzero != 0 && allowzero != 1) {
    throw n.error("attribute 'allowzero' is " + std::to_string(allowzero) + ", must be 0 or 1");
  }
}

void infer_reshape(Node& n) {
  const Shape out = reshape_shape(n, n.input(0).shape(), *const_ints(n, 1, "shape"));
  n.output(0).set_type(n.input(0).dtype(), out);
}

std::vector<Tensor> eval_reshape(const Node& n, const TensorRefs& in) {
  return {in[0]->reshaped(reshape_shape(n, in[0]->shape(), ints_of(in[1])))};
}

// ---- Flatten ------------------------------------------------------------------

Shape flatten_shape(const Node& n, const Shape& in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = n.attr_int("axis", 1);
  // The axis is in [0, rank] (rank included): [-rank, rank] from opset 11.
  if (axis < 0 && n.opset() < 11) {
    throw n.error("attribute 'axis' is " + std::to_string(axis) + "; negative axes are allowed from opset 11 on",
                  "re-export the model at opset 11 or later, or use a non-negative axis");
  }
  if (axis < -rank || axis > rank) {
    throw n.error("attribute 'axis' " + std::to_string(axis) + " is out of range [" + std::to_string(-rank) + ", " +
                  std::to_string(rank) + "] for an input of rank " + std::to_string(rank));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[d];
  return {outer, inner};
}

// ---- Squeeze / Unsqueeze ------------------------------------------------------

// Squeeze's axes: the attribute before opset 13, the (optional, constant) input from 13.
std::optional<std::vector<int64_t>> squeeze_axes_static(const Node& n) {
  if (n.opset() < 13) {
    if (!n.has_attr("axes")) return std::nullopt;
    return n.attr_ints("axes");
  }
  return const_ints(n, 1, "axes");
}

std::optional<std::vector<int64_t>> axes_of_eval(const Node& n, const TensorRefs& in) {
  if (n.opset() < 13) {
    if (!n.has_attr("axes")) return std::nullopt;
    return n.attr_ints("axes");
  }
  if (in.size() < 2 || !in[1]) return std::nullopt;
  return ints_of(in[1]);
}

Shape squeeze_shape(const Node& n, const Shape& in, const std::optional<std::vector<int64_t>>& axes) {
  const std::string what = n.opset() >= 13 ? "input 'axes'" : "attribute 'axes'";
  Shape out;
  if (!axes) {  // no axes: every dim of 1 goes
    for (int64_t d : in) if (d != 1) out.push_back(d);
    return out;
  }
  const std::vector<int64_t> ax = checked_axes(n, *axes, static_cast<int64_t>(in.size()), what);
  for (int64_t a : ax) {
    if (in[a] != 1) {
      throw n.error(what + " " + ints_str(*axes) + " names axis " + std::to_string(a) + ", whose length is " +
                    std::to_string(in[a]) + ", not 1");
    }
  }
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (std::find(ax.begin(), ax.end(), static_cast<int64_t>(d)) == ax.end()) out.push_back(in[d]);
  }
  return out;
}

Shape unsqueeze_shape(const Node& n, const Shape& in, const std::vector<int64_t>& axes) {
  const std::string what = n.opset() >= 13 ? "input 'axes'" : "attribute 'axes'";
  // Axes index the output, whose rank is the input's plus one per axis.
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes.size());
  const std::vector<int64_t> ax = checked_axes(n, axes, out_rank, what);
  Shape out(static_cast<std::size_t>(out_rank), 1);
  std::size_t k = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::find(ax.begin(), ax.end(), d) == ax.end()) out[d] = in[k++];
  }
  return out;
}

void validate_squeeze(const Node& n) { require_dtype(n, 1, {DType::int64}); }

void validate_unsqueeze(const Node& n) {
  if (n.opset() < 13 && !n.has_attr("axes")) throw n.error("attribute 'axes' is required");
  require_dtype(n, 1, {DType::int64});
}

// ---- Dropout ------------------------------------------------------------------

// Dropout from opset 12 takes training_mode as input 2: modelc is inference
// only, so it must be absent or a constant false, or the ratio (input 1) a
// constant 0: training mode with ratio 0 keeps every element and scales by
// 1 / (1 - 0), the identity (torchvision's swin_t exports its attention
// dropout so: F.dropout(attn, p=0.0) without training=False).
void validate_dropout(const Node& n) {
  if (n.opset() < 12) return;
  require_dtype(n, 1, {DType::float32, DType::float16, DType::bfloat16});
  require_dtype(n, 2, {DType::boolean});
  if (n.has_input(2) && n.input(2).is_constant()) {
    const Tensor& t = n.input(2).constant();
    if (t.numel() != 1) throw n.error("input 'training_mode' must be a scalar, it has shape " + shape_str(t.shape()));
    const bool zero_ratio = n.has_input(1) && n.input(1).is_constant() && n.input(1).numel() == 1 &&
                            n.input(1).constant().f64_at(0) == 0.0;
    if (t.i64_at(0) != 0 && !zero_ratio) {
      throw n.error("input 'training_mode' is true: training mode is not supported (but with a constant ratio of 0)",
                    "modelc compiles for inference; export the model in eval mode");
    }
  }
}

void infer_dropout(Node& n) {
  if (n.opset() >= 12 && n.has_input(2) && !n.input(2).is_constant()) {
    throw n.error("input 'training_mode' ('" + n.input(2).name() +
                      "') is computed at run time; modelc supports only inference (a constant false)",
                  "export the model in eval mode, or fold training_mode into a constant");
  }
  const Value& x = n.input(0);
  n.output(0).set_type(x.dtype(), x.shape());
  // The mask is bool from opset 10 on; before, it has the input's type. In
  // inference it is all ones whatever the input: a constant.
  if (n.has_output(1)) {
    const DType mask_type = n.opset() >= 10 ? DType::boolean : x.dtype();
    n.output(1).set_constant(
        Tensor::from_i64(mask_type, x.shape(), std::vector<int64_t>(static_cast<std::size_t>(x.numel()), 1)));
  }
}

std::vector<Tensor> eval_dropout(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  std::vector<Tensor> out{x};
  // Inference keeps every element: the mask is all true (all ones), set by infer_dropout.
  if (n.has_output(1)) out.push_back(n.output(1).constant());
  return out;
}

// ---- Shape / Size -------------------------------------------------------------

Tensor shape_of(const Node& n, const Shape& s) {
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t start = 0, end = rank;
  if (n.opset() >= 15) {
    // Opset 15: [start, end) of the dims, negative from the back, clamped to [0, rank].
    start = n.attr_int("start", 0);
    end = n.has_attr("end") ? n.attr_int("end", rank) : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
  }
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(s[d]);
  return Tensor::from_i64(DType::int64, {static_cast<int64_t>(dims.size())}, dims);
}

// ---- ConstantOfShape ----------------------------------------------------------

Tensor constant_of_shape(const Node& n, const std::vector<int64_t>& dims) {
  const Shape shape(dims.begin(), dims.end());
  checked_numel(n, shape, "input 'input'");
  Tensor value = Tensor::from_f64(DType::float32, {1}, {0.0});  // the default: float 0
  if (const Tensor* v = n.attr_tensor("value")) value = *v;
  Tensor out(value.dtype(), shape);
  const std::size_t esize = dtype_size(value.dtype());
  uint8_t* dst = out.mutable_raw();
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + static_cast<std::size_t>(i) * esize, value.raw(), esize);
  return out;
}

void validate_constant_of_shape(const Node& n) {
  require_dtype(n, 0, {DType::int64});
  if (const Tensor* v = n.attr_tensor("value")) {
    if (!v->defined()) throw n.error("attribute 'value' has no supported dtype");
    if (v->numel() != 1) {
      throw n.error("attribute 'value' must hold one element, it has shape " + shape_str(v->shape()));
    }
  }
}

void infer_constant_of_shape(Node& n) {
  if (n.input(0).rank() != 1) {
    throw n.error("input 'input' must be 1-D (the output shape), it is " + n.input(0).type_str());
  }
  const Tensor t = constant_of_shape(n, *const_ints(n, 0, "input"));
  n.output(0).set_type(t.dtype(), t.shape());
}

// ---- Constant -----------------------------------------------------------------

const char* const kConstantAttrs[] = {"value",       "sparse_value", "value_float",  "value_floats",
                                      "value_int",   "value_ints",   "value_string", "value_strings"};

void validate_constant(const Node& n) {
  std::vector<std::string> given;
  for (const char* a : kConstantAttrs) if (n.has_attr(a)) given.push_back(a);
  if (given.size() != 1) {
    std::string names;
    for (const std::string& g : given) names += (names.empty() ? "'" : ", '") + g + "'";
    throw n.error(given.empty() ? std::string("has none of the value attributes; it needs exactly one")
                                : "has the attributes " + names + "; it needs exactly one value attribute");
  }
  const std::string& a = given[0];
  if (a == "sparse_value") {
    throw n.error("attribute 'sparse_value': sparse constants are not supported",
                  "store the constant as a dense tensor ('value')");
  }
  if (a == "value_string" || a == "value_strings") {
    throw n.error("attribute '" + a + "': string constants are not supported");
  }
  if (a == "value" && !n.attr_tensor("value")->defined()) throw n.error("attribute 'value' has no supported dtype");
}

Tensor constant_value(const Node& n) {
  if (const Tensor* t = n.attr_tensor("value")) return *t;
  if (n.has_attr("value_float")) return Tensor::from_f64(DType::float32, {}, {n.attr_float("value_float", 0)});
  if (n.has_attr("value_floats")) {
    const std::vector<double> v = n.attr_floats("value_floats");
    return Tensor::from_f64(DType::float32, {static_cast<int64_t>(v.size())}, v);
  }
  if (n.has_attr("value_int")) return Tensor::scalar_i64(n.attr_int("value_int", 0));
  if (n.has_attr("value_ints")) {
    const std::vector<int64_t> v = n.attr_ints("value_ints");
    return Tensor::from_i64(DType::int64, {static_cast<int64_t>(v.size())}, v);
  }
  throw n.error("has no value attribute");
}

// ---- Range --------------------------------------------------------------------

// modelc's limit on Range's length: far beyond any real model, and it keeps a
// bad start/limit/delta from asking for terabytes.
constexpr int64_t kMaxRange = std::numeric_limits<int32_t>::max();

const char* const kRangeInputs[] = {"start", "limit", "delta"};

void validate_range(const Node& n) {
  for (int i = 0; i < 3; ++i) {
    require_dtype(n, i, {DType::float32, DType::float64, DType::int16, DType::int32, DType::int64});
    const Value& v = n.input(i);
    if (v.dtype() != n.input(0).dtype()) {
      throw n.error(std::string("input '") + kRangeInputs[i] + "' is " + dtype_name(v.dtype()) + ", input 'start' is " +
                    dtype_name(n.input(0).dtype()) + ": all three must have the same dtype");
    }
    if (v.numel() != 1 || v.rank() > 1) {
      throw n.error(std::string("input '") + kRangeInputs[i] + "' must be a scalar, it is " + v.type_str());
    }
  }
}

int64_t range_count_int(const Node& n, int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0) throw n.error("input 'delta' is 0");
  // ceil((limit - start) / delta) in unsigned arithmetic: no int64 overflow.
  uint64_t span = 0, step = 0;
  if (delta > 0) {
    if (limit <= start) return 0;
    span = static_cast<uint64_t>(limit) - static_cast<uint64_t>(start);
    step = static_cast<uint64_t>(delta);
  } else {
    if (limit >= start) return 0;
    span = static_cast<uint64_t>(start) - static_cast<uint64_t>(limit);
    step = static_cast<uint64_t>(-(delta + 1)) + 1;
  }
  const uint64_t count = span / step + (span % step != 0 ? 1 : 0);
  if (count > static_cast<uint64_t>(kMaxRange)) {
    throw n.error("Range(" + std::to_string(start) + ", " + std::to_string(limit) + ", " + std::to_string(delta) +
                  ") would have " + std::to_string(count) + " elements, more than modelc's limit of " +
                  std::to_string(kMaxRange));
  }
  return static_cast<int64_t>(count);
}

// Float Range follows the spec's formula in the element type F (float for float32, double for
// float64): count = max(ceil((limit - start) / delta), 0).
template <class F>
int64_t range_count_float(const Node& n, double start, double limit, double delta) {
  const F s = static_cast<F>(start), l = static_cast<F>(limit), d = static_cast<F>(delta);
  if (!std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d)) {
    throw n.error("inputs 'start', 'limit' and 'delta' must be finite");
  }
  if (d == F(0)) throw n.error("input 'delta' is 0");
  const F q = std::ceil((l - s) / d);
  if (!(q > F(0))) return 0;
  if (q > static_cast<F>(kMaxRange)) {
    throw n.error("Range would have about " + std::to_string(static_cast<double>(q)) +
                  " elements, more than modelc's limit of " + std::to_string(kMaxRange));
  }
  return static_cast<int64_t>(q);
}

Tensor range_values(const Node& n, const Tensor& start, const Tensor& limit, const Tensor& delta) {
  const DType t = start.dtype();
  if (is_float(t)) {
    const double s = start.f64_at(0), d = delta.f64_at(0);
    const int64_t count = t == DType::float64 ? range_count_float<double>(n, s, limit.f64_at(0), d)
                                              : range_count_float<float>(n, s, limit.f64_at(0), d);
    std::vector<double> v(static_cast<std::size_t>(count));
    for (int64_t i = 0; i < count; ++i) v[i] = s + static_cast<double>(i) * d;
    return Tensor::from_f64(t, {count}, v);
  }
  const int64_t s = start.i64_at(0), d = delta.i64_at(0);
  const int64_t count = range_count_int(n, s, limit.i64_at(0), d);
  std::vector<int64_t> v(static_cast<std::size_t>(count));
  // start + i * delta stays between start and limit; unsigned arithmetic keeps
  // the intermediate product from overflowing.
  for (int64_t i = 0; i < count; ++i) {
    v[i] = static_cast<int64_t>(static_cast<uint64_t>(s) + static_cast<uint64_t>(i) * static_cast<uint64_t>(d));
  }
  return Tensor::from_i64(t, {count}, v);
}

void infer_range(Node& n) {
  for (int i = 0; i < 3; ++i) {
    if (!n.input(i).is_constant()) {
      throw n.error(std::string("input '") + kRangeInputs[i] + "' ('" + n.input(i).name() +
                        "') must be a constant for modelc to give Range's output a static shape",
                    not_constant_hint(n.input(i)));
    }
  }
  const Tensor t = range_values(n, n.input(0).constant(), n.input(1).constant(), n.input(2).constant());
  n.output(0).set_type(t.dtype(), t.shape());
}

}  // namespace

// Views: the same bytes under another shape.

MODELC_REGISTER_OP(Reshape)
    .since(5)
    .const_inputs({1})
    .inputs(2, 2)
    .validate(validate_reshape)
    .infer(infer_reshape)
    .eval(eval_reshape)
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("same data, shape from the constant 'shape' input (0 copies a dim, -1 is inferred)");

MODELC_REGISTER_OP(Reshape)
    .since(14)
    .const_inputs({1})
    .attrs({"allowzero"})
    .inputs(2, 2)
    .validate(validate_reshape)
    .infer(infer_reshape)
    .eval(eval_reshape)
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("same data, shape from the constant 'shape' input (0 copies a dim unless allowzero=1, -1 is inferred)");

MODELC_REGISTER_OP(Flatten)
    .since(1)
    .attrs({"axis"})
    .inputs(1, 1)
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), flatten_shape(n, n.input(0).shape())); })
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{in[0]->reshaped(flatten_shape(n, in[0]->shape()))};
    })
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("2-D view: dims before 'axis' times dims from it (negative axis from opset 11)");

MODELC_REGISTER_OP(Squeeze)
    .since(1)
    .attrs({"axes"})
    .inputs(1, 1)
    .validate(validate_squeeze)
    .infer([](Node& n) {
      n.output(0).set_type(n.input(0).dtype(), squeeze_shape(n, n.input(0).shape(), squeeze_axes_static(n)));
    })
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{in[0]->reshaped(squeeze_shape(n, in[0]->shape(), axes_of_eval(n, in)))};
    })
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("drops the dims of length 1 named by the 'axes' attribute (all of them when absent)");

MODELC_REGISTER_OP(Squeeze)
    .since(13)
    .const_inputs({1})
    .inputs(1, 2)
    .validate(validate_squeeze)
    .infer([](Node& n) {
      n.output(0).set_type(n.input(0).dtype(), squeeze_shape(n, n.input(0).shape(), squeeze_axes_static(n)));
    })
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{in[0]->reshaped(squeeze_shape(n, in[0]->shape(), axes_of_eval(n, in)))};
    })
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("drops the dims of length 1 named by the constant 'axes' input (all of them when absent)");

MODELC_REGISTER_OP(Unsqueeze)
    .since(1)
    .attrs({"axes"})
    .inputs(1, 1)
    .validate(validate_unsqueeze)
    .infer([](Node& n) {
      n.output(0).set_type(n.input(0).dtype(), unsqueeze_shape(n, n.input(0).shape(), n.attr_ints("axes")));
    })
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{in[0]->reshaped(unsqueeze_shape(n, in[0]->shape(), n.attr_ints("axes")))};
    })
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("inserts dims of length 1 at the output positions in the 'axes' attribute");

MODELC_REGISTER_OP(Unsqueeze)
    .since(13)
    .const_inputs({1})
    .inputs(2, 2)
    .validate(validate_unsqueeze)
    .infer([](Node& n) {
      n.output(0).set_type(n.input(0).dtype(), unsqueeze_shape(n, n.input(0).shape(), *const_ints(n, 1, "axes")));
    })
    .eval([](const Node& n, const TensorRefs& in) {
      return std::vector<Tensor>{in[0]->reshaped(unsqueeze_shape(n, in[0]->shape(), ints_of(in[1])))};
    })
    .precision(Precision::fp16)
    .kernel("view")
    .family("data")
    .doc("inserts dims of length 1 at the output positions in the constant 'axes' input");

MODELC_REGISTER_OP(Identity)
    .since(1)
    .moves_data()
    .inputs(1, 1)
    .infer(infer_same_as_input)
    .eval([](const Node&, const TensorRefs& in) { return std::vector<Tensor>{*in[0]}; })
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("view")
    .family("data")
    .doc("the input, unchanged");

// Dropout at inference passes its input through. The old forms' is_test
// attribute is accepted and ignored: modelc always runs inference.
MODELC_REGISTER_OP(Dropout)
    .since(1)
    .moves_data()
    .attrs({"ratio", "is_test", "consumed_inputs"})
    .inputs(1, 1)
    .outputs(1, 2)
    .validate(validate_dropout)
    .infer(infer_dropout)
    .eval(eval_dropout)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("view")
    .family("data")
    .doc("inference: the input unchanged; the optional mask is all ones (is_test ignored)");

MODELC_REGISTER_OP(Dropout)
    .since(6)
    .moves_data()
    .attrs({"ratio", "is_test"})
    .inputs(1, 1)
    .outputs(1, 2)
    .validate(validate_dropout)
    .infer(infer_dropout)
    .eval(eval_dropout)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("view")
    .family("data")
    .doc("inference: the input unchanged; the optional mask is all ones (is_test ignored)");

MODELC_REGISTER_OP(Dropout)
    .since(7)
    .moves_data()
    .attrs({"ratio"})
    .inputs(1, 1)
    .outputs(1, 2)
    .validate(validate_dropout)
    .infer(infer_dropout)
    .eval(eval_dropout)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("view")
    .family("data")
    .doc("inference: the input unchanged; the optional mask is all ones (input's type; bool from opset 10)");

// Its ratio and training_mode decide at compile time whether it is the identity (validate_dropout).
MODELC_REGISTER_OP(Dropout)
    .since(12)
    .moves_data()
    .const_inputs({1, 2})
    .attrs({"seed"})
    .inputs(1, 3)
    .outputs(1, 2)
    .validate(validate_dropout)
    .infer(infer_dropout)
    .eval(eval_dropout)
    .precision(Precision::fp16)
    .layout(Layout::agnostic)
    .kernel("view")
    .family("data")
    .doc("inference: the input unchanged, the optional mask all true; training_mode must be absent or false "
         "(or the ratio a constant 0)");

// Shape math: always constant-folded.

MODELC_REGISTER_OP(Shape)
    .since(1)
    .inputs(1, 1)
    .infer([](Node& n) { n.output(0).set_constant(shape_of(n, n.input(0).shape())); })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{shape_of(n, in[0]->shape())}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("the input's dims as int64 (a constant: shapes are static)");

MODELC_REGISTER_OP(Shape)
    .since(15)
    .attrs({"start", "end"})
    .inputs(1, 1)
    .infer([](Node& n) { n.output(0).set_constant(shape_of(n, n.input(0).shape())); })
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{shape_of(n, in[0]->shape())}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("the input's dims [start, end) as int64 (a constant: shapes are static)");

MODELC_REGISTER_OP(Size)
    .since(1)
    .inputs(1, 1)
    .infer([](Node& n) { n.output(0).set_constant(Tensor::scalar_i64(n.input(0).numel())); })
    .eval([](const Node&, const TensorRefs& in) { return std::vector<Tensor>{Tensor::scalar_i64(in[0]->numel())}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("the input's element count as an int64 scalar (a constant: shapes are static)");

MODELC_REGISTER_OP(ConstantOfShape)
    .since(9)
    .const_inputs({0})
    .attrs({"value"})
    .inputs(1, 1)
    .validate(validate_constant_of_shape)
    .infer(infer_constant_of_shape)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{constant_of_shape(n, ints_of(in[0]))}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("a tensor of the constant input's shape filled with 'value' (default float 0)");

MODELC_REGISTER_OP(Constant)
    .since(1)
    .attrs({"value"})
    .inputs(0, 0)
    .validate(validate_constant)
    .infer([](Node& n) { n.output(0).set_constant(constant_value(n)); })
    .eval([](const Node& n, const TensorRefs&) { return std::vector<Tensor>{constant_value(n)}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("the tensor in 'value'");

MODELC_REGISTER_OP(Constant)
    .since(11)
    .attrs({"value", "sparse_value"})
    .inputs(0, 0)
    .validate(validate_constant)
    .infer([](Node& n) { n.output(0).set_constant(constant_value(n)); })
    .eval([](const Node& n, const TensorRefs&) { return std::vector<Tensor>{constant_value(n)}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("the tensor in 'value' (sparse_value is not supported)");

MODELC_REGISTER_OP(Constant)
    .since(12)
    .attrs({"value", "sparse_value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
            "value_strings"})
    .inputs(0, 0)
    .validate(validate_constant)
    .infer([](Node& n) { n.output(0).set_constant(constant_value(n)); })
    .eval([](const Node& n, const TensorRefs&) { return std::vector<Tensor>{constant_value(n)}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("the tensor in 'value', or value_float(s) as float32, value_int(s) as int64 (no sparse, no strings)");

MODELC_REGISTER_OP(Range)
    .since(11)
    .const_inputs({0, 1, 2})
    .inputs(3, 3)
    .validate(validate_range)
    .infer(infer_range)
    .eval([](const Node& n, const TensorRefs& in) { return std::vector<Tensor>{range_values(n, *in[0], *in[1], *in[2])}; })
    .precision(Precision::never)
    .kernel("none")
    .family("shape")
    .doc("start, start + delta, ... up to limit (constant scalar inputs; int32, int64, float32)");

}  // namespace modelc::ops

// compiler/ops/pad.cpp — Pad: pads as an attribute (opset 2), as an input with
// an optional constant_value input (11), with an optional axes input (18), and
// the wrap mode (19). Negative pads crop; the padding modes then work on the
// cropped tensor (crop first, as ONNX's reference and onnxruntime do).
#include "ops/pad.h"

#include <cstring>

#include "ops/common.h"

namespace modelc::ops {
namespace {

enum class Form { attribute2, input11, axes18, wrap19 };

// The form of the node's opset (the registrations below, one per form).
Form pad_form(const Node& n) {
  if (n.opset() < 11) return Form::attribute2;
  if (n.opset() < 18) return Form::input11;
  return n.opset() < 19 ? Form::axes18 : Form::wrap19;
}

std::string pad_mode(const Node& n, Form f) {
  const std::string m = n.attr_string("mode", "constant");
  if (m == "constant" || m == "reflect" || m == "edge" || (m == "wrap" && f == Form::wrap19)) return m;
  throw n.error("attribute 'mode' is '" + m + "', which Pad (opset " + std::to_string(n.opset()) +
                    ") does not support; expected one of: constant, reflect, edge" +
                    (f == Form::wrap19 ? ", wrap" : ""),
                m == "wrap" ? "wrap needs opset 19" : "");
}

void validate_pad(const Node& n) {
  const Form f = pad_form(n);
  pad_mode(n, f);
  if (f == Form::attribute2 && !n.has_attr("pads")) throw n.error("attribute 'pads' is required");
  if (f != Form::attribute2 && n.has_input(1) && n.input(1).has_type()) require_dtype(n, 1, {DType::int64});
  if ((f == Form::axes18 || f == Form::wrap19) && n.has_input(3) && n.input(3).has_type()) {
    require_dtype(n, 3, {DType::int64, DType::int32});
  }
  if (f != Form::attribute2 && n.has_input(2) && n.has_input(0) && n.input(2).has_type() && n.input(0).has_type()) {
    if (n.input(2).dtype() != n.input(0).dtype()) {
      throw n.error("input 'constant_value' is " + n.input(2).type_str() + ", it must have the data's type " +
                    dtype_name(n.input(0).dtype()));
    }
    if (n.input(2).numel() != 1) {
      throw n.error("input 'constant_value' must hold one value, it is " + n.input(2).type_str());
    }
  }
}

// normalize_axes lets axis 0 through on a scalar (rank 0); a scalar has no
// axes to name, so that is an Error here.
std::vector<int64_t> checked_axes(const Node& n, const std::vector<int64_t>& axes, int64_t rank) {
  if (rank == 0 && !axes.empty()) {
    throw n.error("'axes' names axis " + std::to_string(axes[0]) + " of a scalar input, which has none");
  }
  return normalize_axes(n, axes, rank);
}

// `pads`: the pads attribute or input; `axes`: the axes input's data (null
// when absent: every axis).
PadParams full_pads(const Node& n, const Shape& in, const std::vector<int64_t>& pads, const std::vector<int64_t>* axes_in) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = checked_axes(n, *axes_in, rank);
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const std::size_t k = axes.size();
  if (pads.size() != 2 * k) {
    throw n.error("'pads' has " + std::to_string(pads.size()) + " values, expected " + std::to_string(2 * k) +
                  " (begin and end for " + (axes_in ? "each axis in 'axes'" : "each of the input's " +
                                                                                  std::to_string(rank) + " axes") +
                  ")");
  }
  PadParams p;
  p.begin.assign(in.size(), 0);
  p.end.assign(in.size(), 0);
  for (std::size_t i = 0; i < k; ++i) {
    const std::size_t d = static_cast<std::size_t>(axes[i]);
    p.begin[d] = pads[i];
    p.end[d] = pads[k + i];
    // Magnitudes first: negating or adding values near INT64_MIN below would overflow.
    constexpr int64_t kLimit = int64_t{1} << 40;
    for (int64_t v : {pads[i], pads[k + i]}) {
      if (v > kLimit || v < -kLimit) {
        throw n.error("'pads' value " + std::to_string(v) + " for axis " + std::to_string(d) + " is too large");
      }
    }
    const int64_t crop = (pads[i] < 0 ? -pads[i] : 0) + (pads[k + i] < 0 ? -pads[k + i] : 0);
    if (crop > in[d]) {
      throw n.error("'pads' crop " + std::to_string(crop) + " elements from axis " + std::to_string(d) +
                    ", which has " + std::to_string(in[d]));
    }
  }
  return p;
}

// The output shape; Error when a non-constant mode must pad an axis left
// with no elements to repeat.
Shape padded_shape(const Node& n, const Shape& in, const PadParams& p) {
  const std::string& mode = p.mode;
  Shape out = in;
  for (std::size_t d = 0; d < in.size(); ++d) {
    out[d] = in[d] + p.begin[d] + p.end[d];
    const int64_t kept = in[d] + (p.begin[d] < 0 ? p.begin[d] : 0) + (p.end[d] < 0 ? p.end[d] : 0);
    if (mode != "constant" && kept == 0 && out[d] > 0) {
      throw n.error("mode '" + mode + "' cannot pad axis " + std::to_string(d) + ": it has no elements to repeat");
    }
  }
  // Refuse outputs whose element count would overflow the shape math.
  constexpr int64_t kMaxElements = int64_t{1} << 48;
  int64_t total = 1;
  for (int64_t d : out) {
    if (d != 0 && total > kMaxElements / d) throw n.error("the output shape " + shape_str(out) + " is too large");
    total *= d;
  }
  return out;
}

void infer_pad(Node& n) {
  const Value& x = n.input(0);
  n.output(0).set_type(x.dtype(), padded_shape(n, x.shape(), pad_params(n, x.shape())));
}

// Source coordinate (in the input) of output coordinate o along one axis, or
// -1 for the constant value.
int64_t source_index(const std::string& mode, int64_t o, int64_t len, int64_t begin, int64_t end) {
  const int64_t lo = begin < 0 ? -begin : 0;             // first kept input element
  const int64_t m = len - lo - (end < 0 ? -end : 0);     // kept elements
  const int64_t j = o - (begin > 0 ? begin : 0);         // coordinate in the kept range
  if (j >= 0 && j < m) return lo + j;
  if (mode == "constant") return -1;
  if (mode == "edge") return lo + (j < 0 ? 0 : m - 1);
  if (mode == "wrap") return lo + ((j % m) + m) % m;
  // reflect: mirror without repeating the edge; the pattern has period 2(m-1)
  if (m == 1) return lo;
  const int64_t period = 2 * (m - 1);
  int64_t r = ((j % period) + period) % period;
  if (r >= m) r = period - r;
  return lo + r;
}

std::vector<Tensor> eval_pad(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  auto input = [&](int i) -> const Tensor* { return static_cast<int>(in.size()) > i ? in[i] : nullptr; };
  const std::vector<int64_t> pads = ints_of(input(1)), axes = ints_of(input(3));
  const PadParams p = pad_params(n, x.shape(), &pads, input(3) ? &axes : nullptr);
  const std::string& mode = p.mode;
  const Shape out = padded_shape(n, x.shape(), p);
  const Tensor fill = pad_fill(n, x.dtype(), input(2));

  const std::size_t rank = out.size();
  std::vector<std::vector<int64_t>> src(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    src[d].resize(static_cast<std::size_t>(out[d]));
    for (int64_t o = 0; o < out[d]; ++o) {
      src[d][static_cast<std::size_t>(o)] = source_index(mode, o, x.shape()[d], p.begin[d], p.end[d]);
    }
  }
  const std::vector<int64_t> in_strides = strides_of(x.shape());
  const std::size_t es = dtype_size(x.dtype());
  Tensor y(x.dtype(), out);
  const int64_t total = y.numel();
  uint8_t* dst = y.mutable_raw();
  std::vector<int64_t> coord(rank, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t flat = 0;
    bool constant = false;
    for (std::size_t d = 0; d < rank; ++d) {
      const int64_t s = src[d][static_cast<std::size_t>(coord[d])];
      if (s < 0) {
        constant = true;
        break;
      }
      flat += s * in_strides[d];
    }
    const uint8_t* from = constant ? fill.raw() : x.raw() + static_cast<std::size_t>(flat) * es;
    std::memcpy(dst + static_cast<std::size_t>(k) * es, from, es);
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return {y};
}

}  // namespace

PadParams pad_params(const Node& n, const Shape& in, const std::vector<int64_t>* pads_input,
                     const std::vector<int64_t>* axes_input) {
  const Form f = pad_form(n);
  const std::vector<int64_t> pads =
      f == Form::attribute2 ? n.attr_ints("pads") : pads_input ? *pads_input : std::vector<int64_t>{};
  PadParams p = full_pads(n, in, pads, f == Form::axes18 || f == Form::wrap19 ? axes_input : nullptr);
  p.mode = pad_mode(n, f);
  return p;
}

PadParams pad_params(const Node& n, const Shape& in) {
  const std::optional<std::vector<int64_t>> pads = const_ints(n, 1, "pads"), axes = const_ints(n, 3, "axes");
  return pad_params(n, in, pads ? &*pads : nullptr, axes ? &*axes : nullptr);
}

Tensor pad_fill(const Node& n, DType dtype, const Tensor* constant_value) {
  if (pad_form(n) == Form::attribute2) return Tensor::from_f64(dtype, {}, {n.attr_float("value", 0.0)});
  if (!constant_value) return Tensor(dtype, {});
  if (constant_value->numel() != 1) throw n.error("input 'constant_value' must hold one value");
  return constant_value->cast(dtype).reshaped({});
}

MODELC_REGISTER_OP(Pad)
    .since(2)
    .attrs({"mode", "pads", "value"})
    .inputs(1, 1)
    .validate(validate_pad)
    .infer(infer_pad)
    .eval(eval_pad)
    .precision(Precision::fp16)
    .kernel("pad")
    .family("data")
    .doc("constant, reflect or edge padding by the 'pads' attribute; negative pads crop");

MODELC_REGISTER_OP(Pad)
    .since(11)
    .const_inputs({1})
    .attrs({"mode"})
    .inputs(2, 3)
    .validate(validate_pad)
    .infer(infer_pad)
    .eval(eval_pad)
    .precision(Precision::fp16)
    .kernel("pad")
    .family("data")
    .doc("constant, reflect or edge padding by the 'pads' input; negative pads crop");

MODELC_REGISTER_OP(Pad)
    .since(18)
    .const_inputs({1, 3})
    .attrs({"mode"})
    .inputs(2, 4)
    .validate(validate_pad)
    .infer(infer_pad)
    .eval(eval_pad)
    .precision(Precision::fp16)
    .kernel("pad")
    .family("data")
    .doc("constant, reflect or edge padding of the listed 'axes'; negative pads crop");

MODELC_REGISTER_OP(Pad)
    .since(19)
    .const_inputs({1, 3})
    .attrs({"mode"})
    .inputs(2, 4)
    .validate(validate_pad)
    .infer(infer_pad)
    .eval(eval_pad)
    .precision(Precision::fp16)
    .kernel("pad")
    .family("data")
    .doc("constant, reflect, edge or wrap padding of the listed 'axes'; negative pads crop");

}  // namespace modelc::ops

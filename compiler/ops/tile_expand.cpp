// compiler/ops/tile_expand.cpp — Tile (repeats input, opset 6) and Expand
// (shape input with bidirectional broadcasting, opset 8). Both copy elements
// bit for bit, so every element type works.
#include <cstring>

#include "ops/common.h"

namespace modelc::ops {
namespace {

// Outputs bigger than this are refused: the shape math would overflow long before memory runs out.
constexpr int64_t kMaxElements = int64_t{1} << 48;

void check_size(const Node& n, const Shape& s) {
  int64_t total = 1;
  for (int64_t d : s) {
    if (d < 0) throw n.error("output shape " + shape_str(s) + " has a negative dimension");
    if (d != 0 && total > kMaxElements / d) {
      throw n.error("output shape " + shape_str(s) + " is too large");
    }
    total *= d;
  }
}

// y[k] = x[src[k]], copying bytes.
Tensor gather_elements(const Tensor& x, const Shape& out, const std::vector<int64_t>& src) {
  Tensor y(x.dtype(), out);
  const std::size_t es = dtype_size(x.dtype());
  uint8_t* dst = y.mutable_raw();
  for (std::size_t k = 0; k < src.size(); ++k) {
    std::memcpy(dst + k * es, x.raw() + static_cast<std::size_t>(src[k]) * es, es);
  }
  return y;
}

// ---- Tile -------------------------------------------------------------------

Shape tiled_shape(const Node& n, const Shape& in, const std::vector<int64_t>& repeats) {
  if (repeats.size() != in.size()) {
    throw n.error("input 'repeats' has " + std::to_string(repeats.size()) + " values, expected " +
                  std::to_string(in.size()) + " (the input's rank)");
  }
  Shape out = in;
  for (std::size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] < 0) {
      throw n.error("input 'repeats' holds " + std::to_string(repeats[d]) + " for axis " + std::to_string(d) +
                    ", expected >= 0");
    }
    if (in[d] != 0 && repeats[d] > kMaxElements / in[d]) throw n.error("input 'repeats' gives a too large output");
    out[d] = in[d] * repeats[d];
  }
  check_size(n, out);
  return out;
}

void validate_tile(const Node& n) {
  if (n.has_input(1) && n.input(1).has_type()) {
    require_dtype(n, 1, {DType::int64});
    if (n.input(1).rank() != 1) throw n.error("input 'repeats' must be 1-D, it is " + n.input(1).type_str());
  }
}

void infer_tile(Node& n) {
  const Value& x = n.input(0);
  n.output(0).set_type(x.dtype(), tiled_shape(n, x.shape(), *const_ints(n, 1, "repeats")));
}

std::vector<Tensor> eval_tile(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const Shape out = tiled_shape(n, x.shape(), ints_of(in[1]));
  const std::size_t rank = out.size();
  const std::vector<int64_t> in_strides = strides_of(x.shape());
  std::vector<int64_t> src(static_cast<std::size_t>(num_elements(out)));
  std::vector<int64_t> coord(rank, 0);
  for (std::size_t k = 0; k < src.size(); ++k) {
    int64_t flat = 0;
    for (std::size_t d = 0; d < rank; ++d) flat += (coord[d] % x.shape()[d]) * in_strides[d];
    src[k] = flat;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++coord[d] < out[d]) break;
      coord[d] = 0;
    }
  }
  return {gather_elements(x, out, src)};
}

// ---- Expand -----------------------------------------------------------------

Shape expanded_shape(const Node& n, const Shape& in, const std::vector<int64_t>& shape) {
  for (int64_t d : shape) {
    if (d < 0) throw n.error("input 'shape' holds " + std::to_string(d) + ", expected dimensions >= 0");
  }
  const Shape out = broadcast_shapes(n, in, shape);
  check_size(n, out);
  return out;
}

void validate_expand(const Node& n) {
  if (n.has_input(1) && n.input(1).has_type()) {
    require_dtype(n, 1, {DType::int64});
    if (n.input(1).rank() != 1) throw n.error("input 'shape' must be 1-D, it is " + n.input(1).type_str());
  }
}

void infer_expand(Node& n) {
  const Value& x = n.input(0);
  n.output(0).set_type(x.dtype(), expanded_shape(n, x.shape(), *const_ints(n, 1, "shape")));
}

std::vector<Tensor> eval_expand(const Node& n, const TensorRefs& in) {
  const Tensor& x = *in[0];
  const Shape out = expanded_shape(n, x.shape(), ints_of(in[1]));
  return {gather_elements(x, out, broadcast_index(x.shape(), out))};
}

}  // namespace

MODELC_REGISTER_OP(Tile)
    .since(6)
    .const_inputs({1})
    .inputs(2, 2)
    .validate(validate_tile)
    .infer(infer_tile)
    .eval(eval_tile)
    .precision(Precision::fp16)
    .kernel("tile")
    .family("data")
    .doc("repeats the input 'repeats[d]' times along each axis d");

MODELC_REGISTER_OP(Expand)
    .since(8)
    .const_inputs({1})
    .inputs(2, 2)
    .validate(validate_expand)
    .infer(infer_expand)
    .eval(eval_expand)
    .precision(Precision::fp16)
    .kernel("expand")
    .family("data")
    .doc("broadcasts the input to 'shape' (bidirectional, numpy rules)");

}  // namespace modelc::ops

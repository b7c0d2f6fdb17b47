// compiler/ops/depth_space.cpp — DepthToSpace (blocksize; mode DCR or CRD from
// opset 11) and SpaceToDepth, on NCHW tensors. Both are permutations, copied
// bit for bit.
#include "ops/depth_space.h"

#include <cstring>

#include "ops/common.h"

namespace modelc::ops {
namespace {

int64_t blocksize(const Node& n) {
  if (!n.has_attr("blocksize")) throw n.error("attribute 'blocksize' is required");
  const int64_t b = n.attr_int("blocksize", 0);
  if (b < 1 || b > (int64_t{1} << 20)) {
    throw n.error("attribute 'blocksize' is " + std::to_string(b) + ", expected a positive block size");
  }
  return b;
}

// DCR (depth-column-row, the default) or CRD (column-row-depth).
bool is_crd(const Node& n) {
  const std::string m = n.attr_string("mode", "DCR");
  if (m == "DCR") return false;
  if (m == "CRD") return true;
  throw n.error("attribute 'mode' is '" + m + "', expected DCR or CRD");
}

void require_rank4(const Node& n, const Shape& x) {
  if (x.size() != 4) throw n.error("input must be 4-D (N, C, H, W), it is " + shape_str(x));
}

void validate_depth_space(const Node& n) { depth_space(n); }

Shape depth_to_space_shape(const Node& n, const Shape& x) {
  require_rank4(n, x);
  const int64_t b = blocksize(n);
  if (x[1] % (b * b) != 0) {
    throw n.error("channels (" + std::to_string(x[1]) + ") must be divisible by blocksize^2 (" +
                  std::to_string(b * b) + ")");
  }
  return {x[0], x[1] / (b * b), x[2] * b, x[3] * b};
}

Shape space_to_depth_shape(const Node& n, const Shape& x) {
  require_rank4(n, x);
  const int64_t b = blocksize(n);
  if (x[2] % b != 0 || x[3] % b != 0) {
    throw n.error("height and width (" + std::to_string(x[2]) + "x" + std::to_string(x[3]) +
                  ") must be divisible by blocksize (" + std::to_string(b) + ")");
  }
  return {x[0], x[1] * b * b, x[2] / b, x[3] / b};
}

// Copies element (n, c_in, h_in, w_in) of x to (n, c, h, w) of y for every
// element of the space (large) side; `to_space` picks the direction.
std::vector<Tensor> eval_depth_space(const Node& n, const Tensor& x, bool to_space) {
  const DepthSpace ds = depth_space(n);
  const int64_t b = ds.blocksize;
  const bool crd = ds.crd;
  const Shape out = to_space ? depth_to_space_shape(n, x.shape()) : space_to_depth_shape(n, x.shape());
  // The "space" tensor is N x C x (H*b) x (W*b); the "depth" one N x C*b*b x H x W.
  const Shape& space = to_space ? out : x.shape();
  const int64_t N = space[0], C = space[1], H = space[2] / b, W = space[3] / b;
  const std::size_t es = dtype_size(x.dtype());
  Tensor y(x.dtype(), out);
  uint8_t* dst = y.mutable_raw();
  const uint8_t* src = x.raw();
  for (int64_t in = 0; in < N; ++in) {
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < b; ++i) {
          for (int64_t w = 0; w < W; ++w) {
            for (int64_t j = 0; j < b; ++j) {
              const int64_t dc = crd ? (c * b + i) * b + j : (i * b + j) * C + c;  // depth channel
              const int64_t space_at = ((in * C + c) * H * b + h * b + i) * W * b + w * b + j;
              const int64_t depth_at = ((in * C * b * b + dc) * H + h) * W + w;
              const int64_t from = to_space ? depth_at : space_at, to = to_space ? space_at : depth_at;
              std::memcpy(dst + static_cast<std::size_t>(to) * es, src + static_cast<std::size_t>(from) * es, es);
            }
          }
        }
      }
    }
  }
  return {y};
}

}  // namespace

DepthSpace depth_space(const Node& n) { return DepthSpace{blocksize(n), is_crd(n)}; }

MODELC_REGISTER_OP(DepthToSpace)
    .since(1)
    .attrs({"blocksize"})
    .inputs(1, 1)
    .validate(validate_depth_space)
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), depth_to_space_shape(n, n.input(0).shape())); })
    .eval([](const Node& n, const TensorRefs& in) { return eval_depth_space(n, *in[0], true); })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("depth_space")
    .family("data")
    .doc("moves blocksize x blocksize channel blocks into space (DCR order)");

MODELC_REGISTER_OP(DepthToSpace)
    .since(11)
    .attrs({"blocksize", "mode"})
    .inputs(1, 1)
    .validate(validate_depth_space)
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), depth_to_space_shape(n, n.input(0).shape())); })
    .eval([](const Node& n, const TensorRefs& in) { return eval_depth_space(n, *in[0], true); })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("depth_space")
    .family("data")
    .doc("moves blocksize x blocksize channel blocks into space (DCR or CRD order)");

MODELC_REGISTER_OP(SpaceToDepth)
    .since(1)
    .attrs({"blocksize"})
    .inputs(1, 1)
    .validate(validate_depth_space)
    .infer([](Node& n) { n.output(0).set_type(n.input(0).dtype(), space_to_depth_shape(n, n.input(0).shape())); })
    .eval([](const Node& n, const TensorRefs& in) { return eval_depth_space(n, *in[0], false); })
    .precision(Precision::fp16)
    .layout(Layout::channels)
    .kernel("depth_space")
    .family("data")
    .doc("moves blocksize x blocksize spatial blocks into channels");

}  // namespace modelc::ops

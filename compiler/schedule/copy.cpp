// compiler/schedule/copy.cpp — see copy.h.
#include "schedule/copy.h"

#include "ops/depth_space.h"
#include "ops/tensor.h"

namespace modelc {

Strides broadcast_strides(const TensorView& v, const Shape& out) {
  const std::size_t r = out.size(), rv = v.shape.size();
  if (rv > r) throw Error("internal: view '" + v.value + "' has a higher rank than the output");
  Strides s(r, 0);
  for (std::size_t i = 0; i < rv; ++i) {
    if (v.shape[i] != 1) s[r - rv + i] = v.strides[i];
  }
  return s;
}

void collapse(Shape& shape, std::vector<Strides*> strides) {
  Shape out_shape;
  std::vector<Strides> out(strides.size());
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !out_shape.empty();
    for (std::size_t k = 0; merge && k < strides.size(); ++k) {
      merge = out[k].back() == (*strides[k])[d] * shape[d];
    }
    if (merge) {
      out_shape.back() *= shape[d];
      for (std::size_t k = 0; k < strides.size(); ++k) out[k].back() = (*strides[k])[d];
    } else {
      out_shape.push_back(shape[d]);
      for (std::size_t k = 0; k < strides.size(); ++k) out[k].push_back((*strides[k])[d]);
    }
  }
  shape = out_shape;
  for (std::size_t k = 0; k < strides.size(); ++k) *strides[k] = out[k];
}

int tiled_dim(const StridedCopy& c) {
  const std::size_t r = c.shape.size();
  if (r < 2 || c.y_strides[r - 1] != 1 || c.shape[r - 1] < 8) return -1;
  for (std::size_t d = 0; d + 1 < r; ++d) {
    if (c.x_strides[d] == 1 && c.shape[d] >= 8) return static_cast<int>(d);
  }
  return -1;
}

StridedCopy transpose_plan(const Node& n, const TensorView& x, const TensorView& y) {
  StridedCopy c;
  c.shape = y.shape;
  c.y_strides = y.strides;
  for (int64_t p : ops::transpose_perm(n, static_cast<int64_t>(x.shape.size()))) {
    c.x_strides.push_back(x.strides[static_cast<std::size_t>(p)]);
  }
  return c;
}

StridedCopy slice_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const std::vector<ops::SliceRange> ranges = ops::slice_ranges(n, x.shape, ops::slice_params(n));
  StridedCopy c;
  c.shape = y.shape;
  c.y_strides = y.strides;
  c.x_strides = x.strides;
  c.x_offset = ops::slice_view(ranges, c.x_strides);
  for (const ops::SliceRange& r : ranges) {
    if (r.count != y.shape[static_cast<std::size_t>(r.axis)])
      throw n.error("internal: the slice of axis " + std::to_string(r.axis) + " has another length than the output");
  }
  return c;
}

StridedCopy expand_plan(const TensorView& x, const TensorView& y) {
  StridedCopy c;
  c.shape = y.shape;
  c.y_strides = y.strides;
  c.x_strides = broadcast_strides(x, y.shape);
  return c;
}

StridedCopy tile_plan(const TensorView& x, const TensorView& y) {
  StridedCopy c;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t len = x.shape[d];
    const int64_t repeats = len == 0 ? 0 : y.shape[d] / len;
    c.shape.insert(c.shape.end(), {repeats, len});
    c.x_strides.insert(c.x_strides.end(), {0, x.strides[d]});
    c.y_strides.insert(c.y_strides.end(), {len * y.strides[d], y.strides[d]});
  }
  return c;
}

StridedCopy depth_space_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const bool to_space = n.op() == "DepthToSpace";
  const ops::DepthSpace ds = ops::depth_space(n);
  const int64_t b = ds.blocksize;
  if (x.shape.size() != 4 || y.shape.size() != 4) throw n.error("expects 4-D input and output");
  const TensorView& space = to_space ? y : x;
  const TensorView& depth = to_space ? x : y;
  const int64_t N = space.shape[0], C = space.shape[1], H = depth.shape[2], W = depth.shape[3];
  const Strides& s = space.strides;
  const Strides& d = depth.strides;
  // Coordinates (n, c, h, i, w, j): space element (n, c, h*b + i, w*b + j).
  const Strides space_strides{s[0], s[1], b * s[2], s[2], b * s[3], s[3]};
  const Strides depth_strides = ds.crd ? Strides{d[0], b * b * d[1], d[2], b * d[1], d[3], d[1]}
                                    : Strides{d[0], d[1], d[2], b * C * d[1], d[3], C * d[1]};
  StridedCopy c;
  c.shape = {N, C, H, b, W, b};
  c.y_strides = to_space ? space_strides : depth_strides;
  c.x_strides = to_space ? depth_strides : space_strides;
  return c;
}

std::vector<StridedCopy> concat_plan(const Node& n, const std::vector<TensorView>& xs, const TensorView& y) {
  const auto a = static_cast<std::size_t>(ops::concat_axis(n, static_cast<int64_t>(y.shape.size())));
  std::vector<StridedCopy> copies;
  int64_t at = 0;  // where the next input starts along the axis
  for (const TensorView& x : xs) {
    StridedCopy c;
    c.shape = x.shape;
    c.x_strides = x.strides;
    c.y_strides = y.strides;
    c.y_offset = at * y.strides[a];
    at += x.shape[a];
    copies.push_back(c);
  }
  if (at != y.shape[a]) throw n.error("internal: the inputs do not fill the output along the axis");
  return copies;
}

std::vector<StridedCopy> split_plan(const Node& n, const TensorView& x, const std::vector<TensorView>& ys) {
  const ops::SplitParts parts = ops::split_parts(n, x.shape);
  const auto a = static_cast<std::size_t>(parts.axis);
  const std::vector<int64_t>& lengths = parts.sizes;
  if (lengths.size() < ys.size()) throw n.error("internal: fewer split lengths than outputs");
  std::vector<StridedCopy> copies;
  int64_t at = 0;  // where the next part starts along the axis
  for (std::size_t i = 0; i < ys.size(); ++i) {
    StridedCopy c;
    if (ys[i].dtype != DType::undefined) {
      c.shape = ys[i].shape;
      c.y_strides = ys[i].strides;
      c.x_strides = x.strides;
      c.x_offset = at * x.strides[a];
      if (c.shape[a] != lengths[i])
        throw n.error("internal: output " + std::to_string(i) + " has another length than its part");
    } else {
      c.shape = {0};  // absent: nothing to copy
      c.y_strides = c.x_strides = {1};
    }
    at += lengths[i];
    copies.push_back(c);
  }
  return copies;
}

}  // namespace modelc

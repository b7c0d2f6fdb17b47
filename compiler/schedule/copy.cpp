// compiler/schedule/copy.cpp — see copy.h.
#include "schedule/copy.h"

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

}  // namespace modelc

// compiler/schedule/reduction.cpp — see reduction.h.
#include "schedule/reduction.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "ops/normalization.h"
#include "support/error.h"

namespace modelc::reduction {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

}  // namespace

int64_t Split::rows() const {
  int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) if (!col[d]) n *= shape[d];
  return n;
}

int64_t Split::cols() const {
  int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) if (col[d]) n *= shape[d];
  return n;
}

Split split_range(const Shape& x, int64_t first, int64_t last) {
  Split s;
  s.shape = x;
  s.col.assign(x.size(), false);
  for (int64_t d = first; d < last; ++d) s.col[static_cast<std::size_t>(d)] = true;
  return s;
}

std::vector<MapDim> simplify(const std::vector<MapDim>& dims) {
  for (const MapDim& d : dims) if (d.extent == 0) return {MapDim{0, 0}};
  std::vector<MapDim> out;
  for (const MapDim& d : dims) {
    if (d.extent == 1) continue;
    if (!out.empty() && out.back().stride == d.extent * d.stride) {
      out.back().extent *= d.extent;
      out.back().stride = d.stride;
    } else {
      out.push_back(d);
    }
  }
  return out;
}

int64_t OperandMaps::inner_stride(const std::vector<MapDim>& side) { return side.empty() ? 0 : side.back().stride; }

OperandMaps maps_of(const Split& s, const std::vector<int64_t>& strides) {
  std::vector<MapDim> row, col;
  for (std::size_t d = 0; d < s.shape.size(); ++d) {
    (s.col[d] ? col : row).push_back(MapDim{s.shape[d], strides[d]});
  }
  return OperandMaps{simplify(row), simplify(col)};
}

std::vector<int64_t> view_strides(const TensorView& v) {
  if (v.strides.size() == v.shape.size()) return v.strides;
  return strides_of(v.shape);
}

std::vector<int64_t> strides_same(const Kernel& k, const Split& s, const TensorView& v, const char* what) {
  if (v.shape != s.shape) {
    throw k.error(fmt::format("internal: {} '{}' has shape {}, expected {}", what, v.value, shape_str(v.shape),
                                      shape_str(s.shape)));
  }
  return view_strides(v);
}

std::vector<int64_t> strides_rows_only(const Kernel& k, const Split& s, const TensorView& v, const char* what) {
  const std::vector<int64_t> vs = view_strides(v);
  std::vector<int64_t> out(s.shape.size(), 0);
  if (v.shape.size() == s.shape.size()) {  // column dims kept as 1
    for (std::size_t d = 0; d < s.shape.size(); ++d) {
      const int64_t want = s.col[d] ? 1 : s.shape[d];
      if (v.shape[d] != want) {
        throw k.error(fmt::format("internal: {} '{}' has shape {}, which does not match the kept dims of {}",
                                          what, v.value, shape_str(v.shape), shape_str(s.shape)));
      }
      if (!s.col[d]) out[d] = vs[d];
    }
    return out;
  }
  std::size_t j = 0;
  for (std::size_t d = 0; d < s.shape.size(); ++d) {
    if (s.col[d]) continue;
    if (j >= v.shape.size() || v.shape[j] != s.shape[d]) break;
    out[d] = vs[j++];
  }
  if (j != v.shape.size() || static_cast<int64_t>(j) != static_cast<int64_t>(std::count(s.col.begin(), s.col.end(), false))) {
    throw k.error(fmt::format("internal: {} '{}' has shape {}, which does not match the kept dims of {}", what,
                                      v.value, shape_str(v.shape), shape_str(s.shape)));
  }
  return out;
}

std::vector<int64_t> strides_broadcast(const Kernel& k, const Split& s, const TensorView& v, const char* what) {
  const std::vector<int64_t> vs = view_strides(v);
  const std::size_t r = s.shape.size(), vr = v.shape.size();
  if (vr > r) {
    throw k.error(fmt::format("internal: {} '{}' ({}) does not broadcast to {}", what, v.value,
                                      shape_str(v.shape), shape_str(s.shape)));
  }
  std::vector<int64_t> out(r, 0);
  for (std::size_t j = 0; j < vr; ++j) {
    const std::size_t d = r - vr + j;
    if (v.shape[j] == s.shape[d]) {
      out[d] = s.shape[d] == 1 ? 0 : vs[j];
    } else if (v.shape[j] != 1) {
      throw k.error(fmt::format("internal: {} '{}' ({}) does not broadcast to {}", what, v.value,
                                        shape_str(v.shape), shape_str(s.shape)));
    }
  }
  return out;
}

void check_index_range(const Kernel& k) {
  auto check = [&](const TensorView& v) {
    if (v.dtype == DType::undefined) return;
    const std::vector<int64_t> vs = view_strides(v);
    int64_t last = 0;
    for (std::size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d] > 0) last += (v.shape[d] - 1) * vs[d];
    }
    if (v.numel() > kIntMax || last > kIntMax) {
      throw k.error(fmt::format("tensor '{}' ({}) has more elements than the {} template indexes (2^31 - 1)",
                                        v.value, shape_str(v.shape), k.family_name()),
                         "split the model's largest tensors, or export with a smaller batch");
    }
  };
  for (const TensorView& v : k.inputs) check(v);
  for (const TensorView& v : k.outputs) check(v);
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

// ---- each family's split --------------------------------------------------------------------------

ReduceLayout reduce_layout(const Kernel& k) {
  if (!k.source.node) throw Error("internal: reduce kernel " + k.id + " has no node");
  const Node& n = *k.source.node;
  if (k.inputs.empty() || k.outputs.empty()) throw n.error("internal: reduce kernel without input or output");
  const Shape& x = k.inputs[0].shape;
  const ops::ReduceDims r = ops::reduce_dims(n, static_cast<int64_t>(x.size()));
  ReduceLayout l;
  l.split.shape = x;
  l.split.col = r.reduced;
  l.noop = r.noop;
  for (std::size_t d = 0; d < x.size(); ++d) if (r.reduced[d]) l.axes.push_back(static_cast<int64_t>(d));
  return l;
}

Split softmax_split(const Kernel& k, ops::SoftmaxDims* dims_out) {
  if (!k.source.node || k.inputs.empty() || k.outputs.empty()) throw Error("internal: softmax kernel " + k.id + " is incomplete");
  const Shape& x = k.inputs[0].shape;
  const ops::SoftmaxDims d = ops::softmax_dims(*k.source.node, static_cast<int64_t>(x.size()));
  if (dims_out) *dims_out = d;
  return split_range(x, d.axis, d.end);
}

SoftmaxPlan softmax_plan(const Kernel& k) {
  SoftmaxPlan p;
  p.split = softmax_split(k, &p.dims);
  p.log = k.source.node->op() == "LogSoftmax";
  return p;
}

Split arg_split(const Kernel& k, ops::ArgReduce* arg_out) {
  if (k.inputs.empty() || k.outputs.empty()) throw Error("internal: argminmax kernel " + k.id + " is incomplete");
  const Shape& x = k.inputs[0].shape;
  const ops::ArgReduce& a = plan_of<ops::ArgReduce>(k);
  if (arg_out) *arg_out = a;
  return split_range(x, a.axis, a.axis + 1);
}

std::shared_ptr<const KernelPlan> argminmax_plan(const Kernel& k) {
  if (!k.source.node || k.inputs.empty() || k.outputs.empty()) throw Error("internal: argminmax kernel " + k.id + " is incomplete");
  return make_plan("argminmax", ops::arg_reduce(*k.source.node, k.inputs[0].shape));
}

Split layernorm_split(const Kernel& k, int64_t* axis_out) {
  if (!k.source.node || k.inputs.size() < 2 || k.outputs.empty()) throw Error("internal: layernorm kernel " + k.id + " is incomplete");
  const Shape& x = k.inputs[0].shape;
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t axis = ops::layernorm_axis(*k.source.node, rank);
  if (axis_out) *axis_out = axis;
  return split_range(x, axis, rank);
}

Split instancenorm_split(const Kernel& k) {
  if (!k.source.node || k.inputs.size() < 3 || k.outputs.empty()) {
    throw Error("internal: instancenorm kernel " + k.id + " is incomplete");
  }
  const Shape& x = k.inputs[0].shape;
  return split_range(x, ops::instancenorm_axis(*k.source.node, x), static_cast<int64_t>(x.size()));
}

NormPlan layernorm_plan(const Kernel& k) {
  NormPlan p;
  p.split = layernorm_split(k, &p.axis);
  p.epsilon = ops::norm_epsilon(*k.source.node);
  return p;
}

NormPlan instancenorm_plan(const Kernel& k) {
  NormPlan p;
  p.split = instancenorm_split(k);
  p.axis = ops::instancenorm_axis(*k.source.node, k.inputs[0].shape);
  p.epsilon = ops::norm_epsilon(*k.source.node);
  return p;
}

TopKLayout topk_layout(const Kernel& k) {
  if (k.inputs.empty()) throw Error("internal: topk kernel " + k.id + " is incomplete");
  const Shape& x = k.inputs[0].shape;
  TopKLayout l;
  l.p = plan_of<ops::TopKParams>(k);
  l.split = split_range(x, l.p.axis, l.p.axis + 1);
  if (k.outputs.size() > 0 && k.outputs[0].dtype != DType::undefined) l.values = &k.outputs[0];
  if (k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined) l.indices = &k.outputs[1];
  return l;
}

std::shared_ptr<const KernelPlan> topk_plan(const Kernel& k) {
  if (!k.source.node || k.inputs.empty()) throw Error("internal: topk kernel " + k.id + " is incomplete");
  return make_plan("topk", ops::topk_params(*k.source.node, k.inputs[0].shape));
}

bool topk_sorts(const TopKLayout& l, DType t) {
  int64_t p = 1;
  while (p < l.split.cols()) p *= 2;
  return p <= (t == DType::int64 ? 2048 : 4096);
}

}  // namespace modelc::reduction

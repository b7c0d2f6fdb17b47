// codegen/families/slice.cpp — the "slice" family: Slice as a strided copy from an offset with
// stepped strides (negative steps walk backward), the starts/ends clamped as the reference does
// (compiler/ops/tensor.cpp); mc::dm::Copy.
#include <algorithm>

#include "codegen/families/data_movement.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

std::vector<int64_t> ints_of_input(const Node& n, int i, const char* what) {
  if (!n.has_input(i)) return {};
  if (!n.input(i).is_constant()) throw n.error(std::string("input '") + what + "' must be a constant");
  return n.input(i).constant().to_i64();
}

}  // namespace

StridedCopy slice_plan(const Node& n, const TensorView& x, const TensorView& y) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset() < 10) {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    starts = ints_of_input(n, 1, "starts");
    ends = ints_of_input(n, 2, "ends");
    axes = ints_of_input(n, 3, "axes");
    steps = ints_of_input(n, 4, "steps");
  }
  const auto rank = static_cast<int64_t>(x.shape.size());
  if (axes.empty()) {
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    throw n.error("starts, ends, axes and steps disagree in length");
  }
  StridedCopy c;
  c.shape = y.shape;
  c.y_strides = y.strides;
  c.x_strides = x.strides;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank) throw n.error("axis " + std::to_string(axes[i]) + " is out of range");
    const auto d = static_cast<std::size_t>(a);
    const int64_t dim = x.shape[d], step = steps[i];
    if (step == 0) throw n.error("a step is 0");
    int64_t start = starts[i], end = ends[i];
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
        const auto span = static_cast<uint64_t>(start - end - 1);
        const uint64_t mag = static_cast<uint64_t>(-(step + 1)) + 1;
        count = static_cast<int64_t>(span / mag) + 1;
      }
    }
    if (count != y.shape[d])
      throw n.error("internal: the slice of axis " + std::to_string(a) + " has another length than the output");
    if (count > 0) {
      c.x_offset += start * x.strides[d];
      c.x_strides[d] = count > 1 ? step * x.strides[d] : 0;
    }
  }
  return c;
}

namespace {

KernelLaunches emit_slice(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  return copy_kernel(ctx, y, x, slice_plan(*k.node, x, y), "x sliced to " + shape_str(y.shape));
}

}  // namespace

MODELC_REGISTER_FAMILY(slice_family)
(KernelFamily{
    "slice", {"tensor_index.cuh", "data_movement.cuh"}, data_plan("strided copy from an offset"), emit_slice});

}  // namespace modelc::codegen

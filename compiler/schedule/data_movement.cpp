// compiler/schedule/data_movement.cpp — see data_movement.h.
#include "schedule/data_movement.h"

#include "ops/depth_space.h"
#include "ops/pad.h"
#include "ops/resize.h"
#include "ops/tensor.h"
#include "support/error.h"

namespace modelc {

PadPlan pad_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const ops::PadParams params = ops::pad_params(n, x.shape);
  PadPlan p;
  p.mode = params.mode;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t begin = params.begin[d], end = params.end[d];
    p.begin.push_back(begin);
    p.lo.push_back(begin < 0 ? -begin : 0);
    p.kept.push_back(x.shape[d] - p.lo.back() - (end < 0 ? -end : 0));
    if (x.shape[d] + begin + end != y.shape[d]) throw n.error("internal: the pads disagree with the output shape");
  }
  // The fill value of the constant mode, in x's type: known now, or read from a tensor computed at
  // run time.
  if (n.has_input(2) && !n.input(2).is_constant()) {
    p.fill_input = 2;
  } else {
    p.fill = ops::pad_fill(n, x.dtype, n.has_input(2) ? &n.input(2).constant() : nullptr);
  }
  return p;
}

GatherPlan gather_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const int64_t axis = ops::gather_axis(n, x.shape);
  const auto a = static_cast<std::size_t>(axis);
  GatherPlan p;
  p.axis = n.attr_int("axis", 0);
  p.outer.assign(x.shape.begin(), x.shape.begin() + axis);
  p.x_outer_strides.assign(x.strides.begin(), x.strides.begin() + axis);
  p.inner.assign(x.shape.begin() + axis + 1, x.shape.end());
  p.x_inner_strides.assign(x.strides.begin() + axis + 1, x.strides.end());
  p.axis_len = x.shape[a];
  p.x_axis_stride = x.strides[a];
  collapse(p.outer, {&p.x_outer_strides});
  collapse(p.inner, {&p.x_inner_strides});
  if (num_elements(p.outer) * num_elements(p.inner) != 0 &&
      y.numel() % (num_elements(p.outer) * num_elements(p.inner)) != 0) {
    throw n.error("internal: the output shape disagrees with the data's");
  }
  return p;
}

ResizePlan resize_plan(const Node& n, const TensorView& x, const TensorView& y) {
  // The roi / scales / sizes inputs are constants by the time a kernel exists (lowering folds them).
  ops::TensorRefs in(n.inputs().size(), nullptr);
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (!n.has_input(static_cast<int>(i))) continue;
    if (!n.input(static_cast<int>(i)).is_constant())
      throw n.error("input " + std::to_string(i) + " must be a constant (it decides the sampling)");
    in[i] = &n.input(static_cast<int>(i)).constant();
  }
  const ops::ResizeSampling s = ops::resize_sampling(n, x.shape, in);
  if (s.out != y.shape)
    throw n.error("internal: the resize plan disagrees with the output shape " + shape_str(y.shape));
  ResizePlan r;
  r.extrapolation = s.extrapolation;
  r.summary = s.mode + ", " + s.coord + (s.mode == "nearest" ? ", " + s.nearest_mode : "");
  for (const std::vector<ops::ResizeTaps>& taps : s.axes) {
    if (taps.empty()) {  // the identity: the dim is copied
      r.taps.push_back(0);
      r.start.push_back(0);
      continue;
    }
    r.taps.push_back(s.width);
    r.start.push_back(static_cast<int64_t>(r.table.size()));
    for (const ops::ResizeTaps& t : taps) {
      for (int64_t k = 0; k < s.width; ++k) {
        if (t.extrapolate) {
          r.table.push_back({k == 0 ? -2 : -1, 0.0});
        } else if (k < static_cast<int64_t>(t.w.size())) {
          const auto& [index, weight] = t.w[static_cast<std::size_t>(k)];
          r.table.push_back({static_cast<int32_t>(index), weight});
        } else {
          r.table.push_back({-1, 0.0});
        }
      }
    }
  }
  return r;
}

std::shared_ptr<const KernelPlan> transpose_kernel_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  return make_plan("transpose", TransposePlan{transpose_plan(n, k.inputs.at(0), k.outputs.at(0)), n.attr_ints("perm")});
}

std::shared_ptr<const KernelPlan> slice_kernel_plan(const Kernel& k) {
  return make_plan("slice", slice_plan(node_to_plan(k), k.inputs.at(0), k.outputs.at(0)));
}

std::shared_ptr<const KernelPlan> concat_kernel_plan(const Kernel& k) {
  return make_plan("concat", concat_plan(node_to_plan(k), k.inputs, k.outputs.at(0)));
}

std::shared_ptr<const KernelPlan> split_kernel_plan(const Kernel& k) {
  return make_plan("split", split_plan(node_to_plan(k), k.inputs.at(0), k.outputs));
}

std::shared_ptr<const KernelPlan> depth_space_kernel_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  const ops::DepthSpace ds = ops::depth_space(n);
  return make_plan("depth_space",
                   DepthSpacePlan{depth_space_plan(n, k.inputs.at(0), k.outputs.at(0)), ds.blocksize, ds.crd});
}

std::shared_ptr<const KernelPlan> pad_kernel_plan(const Kernel& k) {
  return make_plan("pad", pad_plan(node_to_plan(k), k.inputs.at(0), k.outputs.at(0)));
}

std::shared_ptr<const KernelPlan> gather_kernel_plan(const Kernel& k) {
  return make_plan("gather", gather_plan(node_to_plan(k), k.inputs.at(0), k.outputs.at(0)));
}

std::shared_ptr<const KernelPlan> resize_kernel_plan(const Kernel& k) {
  return make_plan("resize", resize_plan(node_to_plan(k), k.inputs.at(0), k.outputs.at(0)));
}

}  // namespace modelc

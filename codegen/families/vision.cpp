// codegen/families/vision.cpp — the grid_sample, roi_align and nms families (templates/vision.cuh):
// GridSample and RoiAlign as one grid-stride launch each over their views' strides; NonMaxSuppression
// as two launches on the kernel's workspace (a block per (batch, class) selecting, one block writing
// selected_indices up to its static bound).
#include <fmt/format.h>

#include "codegen/families/elementwise_util.h"
#include "ops/vision.h"
#include "schedule/reduction.h"
#include "schedule/vision.h"
#include "support/error.h"

namespace modelc::codegen {
namespace {

std::string strides_of_view(const TensorView& v) { return dims(reduction::view_strides(v)); }

KernelLaunches emit_grid_sample(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &g = k.inputs.at(1), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  const ops::GridSample& s = plan_of<ops::GridSample>(k);
  Launch l;
  l.comment = fmt::format("{} sampling, {} padding, align_corners {}", s.mode_name(), s.padding_name(),
                          s.align_corners ? 1 : 0);
  l.type = fmt::format("mc::vision::GridSample<{}, {}, {}, {}, {}, {},\n      {}, {}, {}, {}, {}>", elem_type(x.dtype),
                       elem_type(g.dtype), elem_type(y.dtype), static_cast<int>(s.mode), static_cast<int>(s.padding),
                       s.align_corners ? "true" : "false", dims(x.shape), strides_of_view(x), strides_of_view(g),
                       dims(y.shape), strides_of_view(y));
  l.params = {{"x", ctx.ptr(x, true)}, {"grid", ctx.ptr(g, true)}, {"y", ctx.ptr(y, false)}};
  return single_launch(std::move(l));
}

KernelLaunches emit_roi_align(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &rois = k.inputs.at(1), &batch = k.inputs.at(2), &y = k.outputs.at(0);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty");
  const ops::RoiAlign& r = plan_of<ops::RoiAlign>(k);
  Launch l;
  l.comment = fmt::format("{} of the samples, {} coordinates, sampling ratio {}, spatial scale {}",
                          r.max_mode ? "max" : "average", r.half_pixel ? "half_pixel" : "output_half_pixel",
                          r.sampling_ratio, r.spatial_scale);
  l.type = fmt::format("mc::vision::RoiAlign<{}, {}, {}, {}, {}, {},\n      {}, {}, {}, {}, {}, {}>", elem_type(x.dtype),
                       elem_type(rois.dtype), elem_type(y.dtype), r.max_mode ? "true" : "false",
                       r.half_pixel ? "true" : "false", r.sampling_ratio, dims(x.shape), strides_of_view(x),
                       strides_of_view(rois), strides_of_view(batch), dims(y.shape), strides_of_view(y));
  l.params = {{"x", ctx.ptr(x, true)},
              {"rois", ctx.ptr(rois, true)},
              {"batch_indices", ctx.ptr(batch, true)},
              {"y", ctx.ptr(y, false)},
              {"spatial_scale", float_literal(r.spatial_scale)}};
  return single_launch(std::move(l));
}

KernelLaunches emit_nms(const Kernel& k, const EmitContext& ctx) {
  const TensorView &boxes = k.inputs.at(0), &scores = k.inputs.at(1), &y = k.outputs.at(0);
  const ops::Nms& s = plan_of<ops::Nms>(k);
  if (s.bound() == 0) return nothing_to_run(node_str(k) + ": the bound of selected boxes is 0");
  const int64_t bytes = vision::nms_workspace_bytes(s);
  if (k.workspace.dtype == DType::undefined || k.workspace_bytes < bytes) {
    throw kernel_error(k, "internal: the NonMaxSuppression kernel has no workspace of " + std::to_string(bytes) + " bytes");
  }
  const std::string sizes = fmt::format("{}, {}, {}, {}", s.batches, s.classes, s.boxes, s.max_per_class);
  KernelLaunches r;
  // The workspace the schedule sized (schedule/vision.cpp) holds the template's layout.
  r.declarations = fmt::format(
      "static_assert(mc::vision::NmsWorkspace<{}>::kBytes <= {}, \"{}: the NonMaxSuppression workspace\");\n", sizes,
      k.workspace_bytes, k.id);
  Launch select;
  select.comment = fmt::format("a block per (batch, class): up to {} greedy rounds over {} boxes ({})", s.max_per_class,
                               s.boxes, s.center_point_box ? "center_point_box" : "corners [y1, x1, y2, x2]");
  select.type = fmt::format("mc::vision::NmsSelect<{}, {}, {}, {},\n      {}, {}>", elem_type(boxes.dtype),
                            elem_type(scores.dtype), s.center_point_box ? "true" : "false", sizes,
                            strides_of_view(boxes), strides_of_view(scores));
  select.params = {{"boxes", ctx.ptr(boxes, true)}, {"scores", ctx.ptr(scores, true)}};
  for (int i : {3, 4}) {
    if (i < static_cast<int>(k.inputs.size()) && k.inputs[static_cast<std::size_t>(i)].dtype != DType::undefined) {
      const TensorView& t = k.inputs[static_cast<std::size_t>(i)];
      if (t.dtype != scores.dtype) {
        throw kernel_error(k, fmt::format("'{}' is {}, the scores {}: one type for the scores and thresholds", t.value,
                                          dtype_name(t.dtype), dtype_name(scores.dtype)));
      }
      select.params.push_back({i == 3 ? "iou_threshold" : "score_threshold", ctx.ptr(t, true)});
    }
  }
  select.params.push_back({"workspace", ctx.ptr(k.workspace, false)});
  Launch compact;
  compact.comment = fmt::format("selected_indices: the selections in (batch, class, score) order, -1 up to {} rows",
                                s.bound());
  compact.type = fmt::format("mc::vision::NmsCompact<{}, {}>", sizes, strides_of_view(y));
  compact.params = {{"workspace", ctx.ptr(k.workspace, false)}, {"y", ctx.ptr(y, false)}};
  r.launches.push_back(std::move(select));
  r.launches.push_back(std::move(compact));
  return r;
}

}  // namespace

MODELC_REGISTER_FAMILY(grid_sample_family)(KernelFamily{"grid_sample", {"tensor_index.cuh", "vision.cuh"}, emit_grid_sample});
MODELC_REGISTER_FAMILY(roi_align_family)(KernelFamily{"roi_align", {"tensor_index.cuh", "vision.cuh"}, emit_roi_align});
MODELC_REGISTER_FAMILY(nms_family)(KernelFamily{"nms", {"tensor_index.cuh", "vision.cuh"}, emit_nms});

}  // namespace modelc::codegen

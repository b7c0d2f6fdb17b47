// compiler/schedule/data_movement.h — the plans of the data-movement families (transpose, slice,
// concat, split, depth_space, pad, gather, resize): the index math of each op, worked out before
// any code is written by applying the op's axes, ranges and parameters (compiler/ops, the
// reference's own rules) to its views. The plan_kernels stage keeps them as the kernels' plans
// (FamilyFacts::plan, families.cpp); the families print them; tests check them against the
// reference interpreter. The copies themselves are schedule/copy.h's; expand and tile plan nothing
// (their copies are their views': expand_plan, tile_plan).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "schedule/copy.h"

namespace modelc {

/// \brief Transpose's plan: the copy, and the 'perm' attribute as written (empty: the dims
/// reversed) for comments.
struct TransposePlan {
  StridedCopy copy;
  std::vector<int64_t> perm;
};

/// \brief DepthToSpace / SpaceToDepth's plan: the copy over six dims, and the block size and
/// order (ops::depth_space) for comments.
struct DepthSpacePlan {
  StridedCopy copy;
  int64_t blocksize = 1;
  bool crd = false;  ///< DepthToSpace's CRD order (DCR otherwise)
};

/// \brief Pad along each dim d: output coordinate o reads input coordinate lo[d] + (o - max(begin[d], 0))
/// when that falls in the kept range [lo[d], lo[d] + kept[d]), else by the mode (templates/
/// data_movement.cuh, mc::dm::Pad).
struct PadPlan {
  std::string mode;  ///< constant, edge, reflect, wrap
  std::vector<int64_t> lo, kept, begin;
  Tensor fill;          ///< the constant-mode value as x's dtype, when known at emit time
  int fill_input = -1;  ///< else the node input that holds it (a tensor computed at run time)
};
PadPlan pad_plan(const Node& n, const TensorView& x, const TensorView& y);

/// \brief Gather: y = [outer..., indices..., inner...], x = [outer..., axis_len, inner...].
struct GatherPlan {
  Shape outer, inner;
  Strides x_outer_strides, x_inner_strides;
  int64_t axis_len = 0, x_axis_stride = 0;
  int64_t axis = 0;  ///< the 'axis' attribute as written (negative counts from the end), for comments
};
GatherPlan gather_plan(const Node& n, const TensorView& x, const TensorView& y);

/// \brief Resize: per dim, the taps of every output coordinate (none for a dim the reference leaves
/// as it is). Each coordinate has `taps[d]` entries in `table`, from `start[d]`: index -1 is an
/// unused tap, index -2 on the first tap marks a coordinate outside the crop box.
struct ResizePlan {
  std::vector<int64_t> taps, start;
  std::vector<std::pair<int32_t, double>> table;
  double extrapolation = 0.0;
  std::string summary;  ///< "linear, half_pixel" for comments
};
ResizePlan resize_plan(const Node& n, const TensorView& x, const TensorView& y);

// ---- the families' plans (FamilyFacts::plan), from k.source and the views --------------------------

/// TransposePlan.
std::shared_ptr<const KernelPlan> transpose_kernel_plan(const Kernel& k);
/// StridedCopy (slice_plan).
std::shared_ptr<const KernelPlan> slice_kernel_plan(const Kernel& k);
/// std::vector<StridedCopy>: one per input (concat_plan).
std::shared_ptr<const KernelPlan> concat_kernel_plan(const Kernel& k);
/// std::vector<StridedCopy>: one per output (split_plan).
std::shared_ptr<const KernelPlan> split_kernel_plan(const Kernel& k);
/// DepthSpacePlan.
std::shared_ptr<const KernelPlan> depth_space_kernel_plan(const Kernel& k);
/// PadPlan.
std::shared_ptr<const KernelPlan> pad_kernel_plan(const Kernel& k);
/// GatherPlan.
std::shared_ptr<const KernelPlan> gather_kernel_plan(const Kernel& k);
/// ResizePlan.
std::shared_ptr<const KernelPlan> resize_kernel_plan(const Kernel& k);

}  // namespace modelc

// compiler/schedule/indexing.h — the plans of the index families (gather_elements, gather_nd,
// scatter_elements, scatter_nd, onehot; templates/gather_scatter.cuh) and of the scans cumsum and
// trilu (scan.cuh, triangular.cuh): the ops' parameters (ops/indexing.h, the reference's rules),
// read from the node once by the plan_kernels stage (FamilyFacts::plan, families.cpp). nonzero
// plans nothing (its printer reads only its views).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ops/indexing.h"
#include "schedule/schedule.h"

namespace modelc {

/// \brief GatherElements, ScatterElements and OneHot: the axis (made non-negative: ops::
/// elements_axis, ops::onehot_axis) and a scatter's reduction (ops::scatter_reduction).
struct ElementsPlan {
  int64_t axis = 0;
  ops::ScatterReduction reduction = ops::ScatterReduction::none;
};

/// \brief ScatterND: indices' last dim k (ops::scatter_nd_k) and the reduction.
struct ScatterNdPlan {
  int64_t k = 0;
  ops::ScatterReduction reduction = ops::ScatterReduction::none;
};

/// \brief Trilu: which triangle, and the diagonal k when known at compile time (none: read from
/// input 1 at run time).
struct TriluPlan {
  bool upper = true;
  std::optional<int64_t> k;
};

/// ElementsPlan (no reduction).
std::shared_ptr<const KernelPlan> gather_elements_kernel_plan(const Kernel& k);
/// ops::GatherNdDims.
std::shared_ptr<const KernelPlan> gather_nd_kernel_plan(const Kernel& k);
/// ElementsPlan.
std::shared_ptr<const KernelPlan> scatter_elements_kernel_plan(const Kernel& k);
/// ScatterNdPlan.
std::shared_ptr<const KernelPlan> scatter_nd_kernel_plan(const Kernel& k);
/// ElementsPlan (the axis of the one-hot dim in the output, no reduction).
std::shared_ptr<const KernelPlan> onehot_kernel_plan(const Kernel& k);
/// ops::CumSumParams.
std::shared_ptr<const KernelPlan> cumsum_kernel_plan(const Kernel& k);
/// TriluPlan.
std::shared_ptr<const KernelPlan> trilu_kernel_plan(const Kernel& k);

}  // namespace modelc

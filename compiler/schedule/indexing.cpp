// compiler/schedule/indexing.cpp — see indexing.h.
#include "schedule/indexing.h"

#include "support/error.h"

namespace modelc {
namespace {

int64_t rank_of(const TensorView& v) { return static_cast<int64_t>(v.shape.size()); }

}  // namespace

std::shared_ptr<const KernelPlan> gather_elements_kernel_plan(const Kernel& k) {
  return make_plan("gather_elements", ElementsPlan{ops::elements_axis(node_to_plan(k), rank_of(k.inputs.at(0)))});
}

std::shared_ptr<const KernelPlan> gather_nd_kernel_plan(const Kernel& k) {
  return make_plan("gather_nd", ops::gather_nd_dims(node_to_plan(k), k.inputs.at(0).shape, k.inputs.at(1).shape));
}

std::shared_ptr<const KernelPlan> scatter_elements_kernel_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  return make_plan("scatter_elements",
                   ElementsPlan{ops::elements_axis(n, rank_of(k.inputs.at(0))), ops::scatter_reduction(n)});
}

std::shared_ptr<const KernelPlan> scatter_nd_kernel_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  const int64_t kk = ops::scatter_nd_k(n, k.inputs.at(0).shape, k.inputs.at(1).shape, k.inputs.at(2).shape);
  return make_plan("scatter_nd", ScatterNdPlan{kk, ops::scatter_reduction(n)});
}

std::shared_ptr<const KernelPlan> onehot_kernel_plan(const Kernel& k) {
  return make_plan("onehot", ElementsPlan{ops::onehot_axis(node_to_plan(k), rank_of(k.inputs.at(0)))});
}

std::shared_ptr<const KernelPlan> cumsum_kernel_plan(const Kernel& k) {
  return make_plan("cumsum", ops::cumsum_params(node_to_plan(k)));
}

std::shared_ptr<const KernelPlan> trilu_kernel_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  return make_plan("trilu", TriluPlan{ops::trilu_upper(n), ops::trilu_k(n)});
}

}  // namespace modelc

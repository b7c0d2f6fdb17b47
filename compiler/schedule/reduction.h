// compiler/schedule/reduction.h — a reduction-shaped kernel (reduce, softmax, argminmax, layernorm,
// instancenorm, topk) as its templates see it.
//
// The model (templates/reduce.cuh says the same from the device side): a kernel's logical dims are
// the dims of its main input X, each either a row dim (one output row each) or a column dim (what
// a row reduces over); which dims are columns is the op's meaning (ops/softmax.h, ops/reduce.h,
// ops/normalization.h). Every operand gives a stride per logical dim (0 where it repeats, e.g. a
// broadcast Scale); its row map and column map are its strides over the row dims and over the
// column dims, with extent-1 dims dropped and chained dims merged. The tactics stage reads these to
// choose the block tiling; the families print them as template arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/reduce.h"
#include "ops/softmax.h"
#include "schedule/schedule.h"

namespace modelc::reduction {

/// \brief The logical index space: X's shape, and which dims are column dims.
struct Split {
  Shape shape;
  std::vector<bool> col;
  int64_t rows() const;
  int64_t cols() const;
};
/// \brief The split of X's shape whose column dims are [first, last) (the dims an ops/ rule says
/// a row runs over).
Split split_range(const Shape& x, int64_t first, int64_t last);

/// One (extent, stride) pair of a map.
struct MapDim {
  int64_t extent;
  int64_t stride;
};

/// \brief The dims of a map after dropping extent-1 dims and merging dims whose strides chain
/// (outer stride == inner extent * inner stride). A map over an empty extent is {(0, 0)}.
std::vector<MapDim> simplify(const std::vector<MapDim>& dims);

/// \brief One operand's maps: its strides (one per logical dim) split into the row side and the
/// column side, simplified.
struct OperandMaps {
  std::vector<MapDim> row, col;
  /// The stride of the innermost dim of a side (0 when the side has no dim).
  static int64_t inner_stride(const std::vector<MapDim>& side);
};
OperandMaps maps_of(const Split& s, const std::vector<int64_t>& strides);

/// The strides of a view (C order when the view gives none).
std::vector<int64_t> view_strides(const TensorView& v);
/// \brief Strides per logical dim of a view that has X's shape.
std::vector<int64_t> strides_same(const Kernel& k, const Split& s, const TensorView& v, const char* what);
/// \brief Strides per logical dim of an output that holds only the row dims: rank == X's rank
/// (column dims kept as 1: keepdims) or rank == the number of row dims. Column dims get 0.
std::vector<int64_t> strides_rows_only(const Kernel& k, const Split& s, const TensorView& v, const char* what);
/// \brief Strides per logical dim of a view that broadcasts to X's shape (numpy, right-aligned):
/// 0 on the dims it repeats over.
std::vector<int64_t> strides_broadcast(const Kernel& k, const Split& s, const TensorView& v, const char* what);

/// \brief Checks that every view of k is addressable with 32-bit offsets (the templates' index
/// type); an Error naming the node otherwise.
void check_index_range(const Kernel& k);

/// "{0, 2}"
std::string list_str(const std::vector<int64_t>& v);

// ---- each family's split --------------------------------------------------------------------------

/// reduce: the reduced axes (ops::reduce_dims) are the columns (the family's plan).
struct ReduceLayout {
  Split split;
  std::vector<int64_t> axes;  ///< normalized, for the note
  bool noop = false;          ///< noop_with_empty_axes with no axes: each element on its own
};
ReduceLayout reduce_layout(const Kernel& k);

/// softmax: the dims a row runs over (ops::softmax_dims); `dims_out` receives them.
Split softmax_split(const Kernel& k, ops::SoftmaxDims* dims_out = nullptr);
/// \brief softmax's plan: softmax_split with its dims, and whether the op is LogSoftmax.
struct SoftmaxPlan {
  Split split;
  ops::SoftmaxDims dims;
  bool log = false;  ///< LogSoftmax: log of the softmax
};
SoftmaxPlan softmax_plan(const Kernel& k);

/// argminmax: the one dim ArgMax / ArgMin runs along (the kernel's plan, ops::ArgReduce); `arg_out`
/// receives it.
Split arg_split(const Kernel& k, ops::ArgReduce* arg_out = nullptr);
/// argminmax's plan (FamilyFacts::plan): ops::arg_reduce of the node over X's shape.
std::shared_ptr<const KernelPlan> argminmax_plan(const Kernel& k);

/// layernorm: the dims from ops::layernorm_axis on; `axis_out` receives the axis.
Split layernorm_split(const Kernel& k, int64_t* axis_out = nullptr);

/// instancenorm: the dims from ops::instancenorm_axis on (the spatial dims).
Split instancenorm_split(const Kernel& k);

/// \brief The plan of layernorm and instancenorm: the split, its first column dim (layernorm's
/// axis; instancenorm's first spatial dim) and the node's 'epsilon' (ops::norm_epsilon).
struct NormPlan {
  Split split;
  int64_t axis = 0;
  double epsilon = 0;
};
NormPlan layernorm_plan(const Kernel& k);
NormPlan instancenorm_plan(const Kernel& k);

/// topk: the axis, k and order (the kernel's plan, ops::TopKParams), and the outputs present.
struct TopKLayout {
  Split split;
  ops::TopKParams p;
  const TensorView* values = nullptr;
  const TensorView* indices = nullptr;
};
TopKLayout topk_layout(const Kernel& k);
/// topk's plan (FamilyFacts::plan): ops::topk_params of the node over X's shape.
std::shared_ptr<const KernelPlan> topk_plan(const Kernel& k);
/// True when a row fits templates/topk.cuh's bitonic sort (kMaxSort: 4096 columns of 4-byte keys,
/// 2048 of 8-byte keys); else the template runs k selection rounds.
bool topk_sorts(const TopKLayout& l, DType t);

}  // namespace modelc::reduction

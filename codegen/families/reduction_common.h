// codegen/families/reduction_common.h — what the reduction-shaped families share (reduce,
// argminmax, softmax, layernorm, instancenorm, topk): the row/column split of a kernel's index
// space, each operand's compile-time strided maps, the block tiling, and the launch.
//
// The model (templates/reduce.cuh says the same from the device side): a kernel's logical dims are
// the dims of its main input X, each either a row dim (one output row each) or a column dim (what
// a row reduces over). Every operand gives a stride per logical dim (0 where it repeats, e.g. a
// broadcast Scale); its row map and column map are its strides over the row dims and over the
// column dims, with extent-1 dims dropped and chained dims merged, written as
// mc::reduction::Strided<Dims<...>, Strides<...>>.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/family.h"

namespace modelc::reduction_codegen {

/// \brief The logical index space: X's shape, and which dims are column dims.
struct Split {
  Shape shape;
  std::vector<bool> col;
  int64_t rows() const;
  int64_t cols() const;
};

/// One (extent, stride) pair of a map.
struct MapDim {
  int64_t extent;
  int64_t stride;
};

/// \brief The dims of a map after dropping extent-1 dims and merging dims whose strides chain
/// (outer stride == inner extent * inner stride). A map over an empty extent is {(0, 0)}.
std::vector<MapDim> simplify(const std::vector<MapDim>& dims);

/// \brief "mc::reduction::Strided<mc::reduction::Dims<4, 3>, mc::reduction::Strides<12, 1>>",
/// or "mc::reduction::NoDims" for no dims.
std::string map_type(const std::vector<MapDim>& dims);

/// \brief One operand's maps: its strides (one per logical dim) split into the row side and the
/// column side, simplified.
struct OperandMaps {
  std::vector<MapDim> row, col;
  /// The stride of the innermost dim of a side (0 when the side has no dim).
  static int64_t inner_stride(const std::vector<MapDim>& side);
};
OperandMaps maps_of(const Split& s, const std::vector<int64_t>& strides);

/// \brief "mc::reduction::Operand<float, ROW, COL>" (COL left out when `with_col` is false).
std::string operand_type(const std::string& ctype, const OperandMaps& m, bool with_col = true);

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

/// \brief The block tiling (templates/reduce.cuh Tiling<kThreads, kGroup, kLanesContiguous>).
struct Tile {
  int threads = 128;
  int group = 1;
  bool lanes_contiguous = true;
};
/// \brief Picks the tiling for `rows` rows of `cols` columns. Contiguous columns (inner stride 1)
/// get a group of consecutive threads per row (about 4 columns per thread, at most 512 threads);
/// columns that are strided while the rows are contiguous get interleaved groups (consecutive
/// threads serve consecutive rows: coalesced), at most 8 threads per row, fewer when the rows alone
/// fill the GPU.
Tile choose_tile(int64_t rows, int64_t cols, int64_t col_inner_stride, int64_t row_inner_stride, const Target& t);
/// One block per row (TopK): threads for a row of `cols` columns.
Tile choose_block_per_row(int64_t cols, bool sorts);
void set_tactic(Kernel& k, const Tile& tile, const std::string& note);
/// The tiling plan() chose (k.tactic); `fallback` when plan did not run.
Tile tile_of(const Kernel& k, const Tile& fallback);
std::string tiling_type(const Tile& t);

/// \brief C++ element type of a dtype, through the emitter; an Error naming the node when the
/// templates do not support it (bfloat16).
std::string ctype_of(const Kernel& k, const EmitContext& ctx, DType t, const char* what);

/// \brief Checks that every view of k is addressable with 32-bit offsets (the templates' index
/// type); an Error naming the node otherwise.
void check_index_range(const Kernel& k);

/// A C++ float literal that reads back as exactly v ("1e-05f", "1.0f").
std::string float_literal(float v);
/// \brief How a tiling splits the work, for k.note: "4 threads per row, interleaved (...), row kept
/// in registers". kept_in_registers: the template keeps a row of at most 16 per thread
/// (softmax, normalization) and the note says whether this one fits.
std::string tile_note(const Tile& t, int64_t cols, const char* per, bool kept_in_registers);
/// "{0, 2}"
std::string list_str(const std::vector<int64_t>& v);

/// \brief The one launch of a kernel: its instantiation `type` with the Params fields `params`,
/// commented with the node (the emitter writes the kernel's own comment: shapes, tactic, k.note).
KernelLaunches reduction_launch(const Kernel& k, const std::string& type, std::vector<LaunchParam> params);

/// \brief The operands of a Normalize kernel (layernorm, instancenorm); absent optional ones null.
struct NormalizeOperands {
  const TensorView* x = nullptr;
  const TensorView* scale = nullptr;
  const TensorView* bias = nullptr;
  const TensorView* y = nullptr;
  const TensorView* mean = nullptr;
  const TensorView* inv_std_dev = nullptr;
  /// Strides per logical dim of Scale and B (they broadcast differently per op).
  std::function<std::vector<int64_t>(const TensorView&, const char*)> param_strides;
};
/// \brief The Normalize instantiation and launch (mean and inv_std_dev: row maps only).
KernelLaunches emit_normalize(const Kernel& k, const EmitContext& ctx, const Split& s, const NormalizeOperands& ops,
                              double epsilon);

/// \brief Axis `a` of a rank-`rank` tensor, negative counted from the end; an Error naming the
/// node when out of range.
int64_t normalized_axis(const Kernel& k, int64_t a, int64_t rank, const char* what);

}  // namespace modelc::reduction_codegen

// codegen/families/elementwise_util.h — what the elementwise and data-movement families share:
// C++ spellings of element types, shapes and literals for templates/tensor_index.cuh, dim
// collapsing, broadcast strides, and the strided copy (mc::dm::Copy) that most data ops reduce to.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/family.h"

namespace modelc::codegen {

using Strides = std::vector<int64_t>;

/// "mc::ix::Dims<2, 3, 4>" ("mc::ix::Dims<>" for a scalar).
std::string dims(const std::vector<int64_t>& v);
/// The element type the templates compute with: "float", "__half", "mc::ix::bf16", "int8_t",
/// "uint8_t", "int32_t", "int64_t", "bool".
std::string elem_type(DType t);
/// The raw-bits type of an element of t's size (exact copies): "uint8_t" ... "uint64_t".
std::string bits_type(DType t);
/// The compute type of t's elements in the templates: "float", "int64_t" or "bool".
std::string compute_type(DType t);
/// A float literal that reads back as the float nearest to v ("0.01f", "-INFINITY").
std::string float_literal(double v);
/// A double literal that reads back as v exactly.
std::string double_literal(double v);
/// An int64_t literal ("INT64_MIN" where a plain literal would not be one).
std::string int_literal(int64_t v);
/// "0x3c00": the bits of element 0 of a tensor, as an unsigned literal of its bits type.
std::string bits_literal(const Tensor& t);
/// "2x3x4 float32" for comments.
std::string view_str(const TensorView& v);
/// `PTR + offset` (elements) of a view's pointer, or PTR when offset is 0.
std::string ptr_at(const EmitContext& ctx, const TensorView& v, bool is_const, int64_t offset = 0);
/// "Add 'name'" (or the kernel's id when it has no node) for comments and errors.
std::string node_str(const Kernel& k);
/// An Error naming the kernel's node: what the family cannot do.
[[nodiscard]] Error kernel_error(const Kernel& k, const std::string& message);

/// Strides of view v as an operand over `out` (numpy broadcasting: v's dims align with the last
/// dims of out; a dim of length 1 and every missing leading dim get stride 0).
Strides broadcast_strides(const TensorView& v, const Shape& out);

/// Drops dims of length 1 and merges neighbouring dims that every stride list walks as one
/// (s[d] == s[d+1] * shape[d+1]), so the kernels do the least index math. Keeps the element order.
void collapse(Shape& shape, std::vector<Strides*> strides);

/// \brief A strided copy: y[offset(i, y_strides) + y_offset] = x[offset(i, x_strides) + x_offset]
/// for every element i (C order) of `shape`. Offsets and strides are in elements.
struct StridedCopy {
  Shape shape;
  Strides y_strides, x_strides;
  int64_t y_offset = 0, x_offset = 0;
};

/// The dim along which x is contiguous when a (collapsed) copy should go through shared-memory
/// tiles: x and y contiguous along different dims, both at least 8 long. -1 otherwise.
int tiled_dim(const StridedCopy& collapsed);

/// A plan function for the data families: block size and `note` (report.md).
std::function<void(Kernel&, const Target&)> data_plan(const std::string& note);

/// y = x, element for element, through a copy plan (for tests and the reference of a plan).
void apply_copy(const StridedCopy& c, const uint8_t* x, uint8_t* y, std::size_t elem_size);

/// The launch of one copy (collapsed; mc::dm::TiledCopy where reads and writes run along different
/// dims, else mc::dm::Copy), commented with `comment` and how it copies; none when the copy is empty.
std::optional<Launch> copy_launch(const EmitContext& ctx, const TensorView& y, const TensorView& x, StridedCopy c,
                                  const std::string& comment);
/// A kernel of one copy: copy_launch's, or nothing to run when the copy is empty.
KernelLaunches copy_kernel(const EmitContext& ctx, const TensorView& y, const TensorView& x, const StridedCopy& c,
                           const std::string& comment);

}  // namespace modelc::codegen

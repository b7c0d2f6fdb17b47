// codegen/families/elementwise_util.h — what the elementwise and data-movement families share:
// C++ spellings of element types and shapes for templates/tensor_index.cuh (literals: codegen/
// literals.h), and the printing of the strided copy (mc::dm::Copy) that most data ops reduce to
// (the copy itself, dim collapsing and broadcast strides: schedule/copy.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/family.h"
#include "codegen/literals.h"
#include "schedule/copy.h"

namespace modelc::codegen {

/// "mc::ix::Dims<2, 3, 4>" ("mc::ix::Dims<>" for a scalar).
std::string dims(const std::vector<int64_t>& v);
/// The element type of t in the templates: "float", "__half", "mc::ix::bf16" (runtime_stub/device.h's
/// mc::bf16), "double", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
/// "uint64_t", "bool".
std::string elem_type(DType t);
/// The raw-bits type of an element of t's size (exact copies): "uint8_t" ... "uint64_t".
std::string bits_type(DType t);
/// The compute type of t's elements in the templates: "float", "double", "int64_t", "uint64_t" or "bool".
std::string compute_type(DType t);
/// "2x3x4 float32" for comments.
std::string view_str(const TensorView& v);
/// `PTR + offset` (elements) of a view's pointer, or PTR when offset is 0.
std::string ptr_at(const EmitContext& ctx, const TensorView& v, bool is_const, int64_t offset = 0);
/// "Add 'name'" (or the kernel's id when it has no node) for comments and errors.
std::string node_str(const Kernel& k);
/// An Error naming the kernel's node: what the family cannot do.
[[nodiscard]] Error kernel_error(const Kernel& k, const std::string& message);

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

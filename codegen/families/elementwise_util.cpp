#include "codegen/families/elementwise_util.h"

#include <cstring>

#include "support/error.h"

namespace modelc::codegen {

std::string dims(const std::vector<int64_t>& v) {
  std::string s = "mc::ix::Dims<";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ">";
}

namespace {

// How the templates spell each element type: its storage type in a kernel and the type it is
// computed in (templates/tensor_index.cuh's ComputeOf), one row per DType.
struct TemplateTypes {
  DType dtype;
  const char* elem;
  const char* compute;
};

const TemplateTypes kTemplateTypes[] = {
    {DType::float32, "float", "float"},        {DType::float16, "__half", "float"},
    {DType::bfloat16, "mc::ix::bf16", "float"}, {DType::float64, "double", "double"},
    {DType::int8, "int8_t", "int64_t"},        {DType::uint8, "uint8_t", "int64_t"},
    {DType::int16, "int16_t", "int64_t"},      {DType::uint16, "uint16_t", "int64_t"},
    {DType::int32, "int32_t", "int64_t"},      {DType::uint32, "uint32_t", "int64_t"},
    {DType::int64, "int64_t", "int64_t"},      {DType::uint64, "uint64_t", "uint64_t"},
    {DType::boolean, "bool", "bool"},
};

const TemplateTypes& template_types(DType t) {
  for (const TemplateTypes& r : kTemplateTypes) {
    if (r.dtype == t) return r;
  }
  throw Error("internal: no template element type for dtype " + std::string(dtype_name(t)));
}

}  // namespace

std::string elem_type(DType t) { return template_types(t).elem; }

std::string bits_type(DType t) {
  switch (dtype_size(t)) {
    case 1:
      return "uint8_t";
    case 2:
      return "uint16_t";
    case 4:
      return "uint32_t";
    case 8:
      return "uint64_t";
    default:
      break;
  }
  throw Error("internal: no bits type for dtype " + std::string(dtype_name(t)));
}

std::string compute_type(DType t) { return template_types(t).compute; }

std::string view_str(const TensorView& v) { return shape_str(v.shape) + " " + dtype_name(v.dtype); }

std::string ptr_at(const EmitContext& ctx, const TensorView& v, bool is_const, int64_t offset) {
  const std::string p = ctx.ptr(v, is_const);
  if (offset == 0) return p;
  return "(" + p + ") + " + std::to_string(offset);
}

std::string node_str(const Kernel& k) {
  if (k.op.empty()) return "kernel " + k.id;
  return k.op.type + " '" + k.op.name + "'";
}

Error kernel_error(const Kernel& k, const std::string& message) { return k.error(message); }

void apply_copy(const StridedCopy& c, const uint8_t* x, uint8_t* y, std::size_t elem_size) {
  const int64_t total = num_elements(c.shape);
  const std::size_t r = c.shape.size();
  std::vector<int64_t> coord(r, 0);
  const auto es = static_cast<int64_t>(elem_size);
  for (int64_t i = 0; i < total; ++i) {
    int64_t xo = c.x_offset, yo = c.y_offset;
    for (std::size_t d = 0; d < r; ++d) {
      xo += coord[d] * c.x_strides[d];
      yo += coord[d] * c.y_strides[d];
    }
    std::memcpy(y + yo * es, x + xo * es, elem_size);
    for (std::size_t d = r; d-- > 0;) {
      if (++coord[d] < c.shape[d]) break;
      coord[d] = 0;
    }
  }
}

std::optional<Launch> copy_launch(const EmitContext& ctx, const TensorView& y, const TensorView& x, StridedCopy c,
                                  const std::string& comment) {
  if (num_elements(c.shape) == 0) return std::nullopt;
  collapse(c.shape, {&c.y_strides, &c.x_strides});
  const std::string over = c.shape.empty() ? std::string("one element") : shape_str(c.shape);
  Launch l;
  l.params = {{"y", ptr_at(ctx, y, false, c.y_offset)}, {"x", ptr_at(ctx, x, true, c.x_offset)}};
  // Reads contiguous along another dim than the writes (a transpose of the inner dims): through
  // shared-memory tiles, when both dims are long enough to fill them.
  const std::size_t r = c.shape.size();
  if (tiled_dim(c) >= 0) {
    const auto p = static_cast<std::size_t>(tiled_dim(c));
    Shape batch;
    Strides yb, xb;
    for (std::size_t d = 0; d + 1 < r; ++d) {
      if (d == p) continue;
      batch.push_back(c.shape[d]);
      yb.push_back(c.y_strides[d]);
      xb.push_back(c.x_strides[d]);
    }
    const std::size_t q = r - 1;
    l.comment = comment + ": a copy over " + over + " through 32x32 shared-memory tiles";
    l.type = "mc::dm::TiledCopy<" + bits_type(x.dtype) + ", " + dims(batch) + ", " + dims(yb) + ", " + dims(xb) +
             ",\n      " + std::to_string(c.shape[p]) + ", " + std::to_string(c.shape[q]) + ", " +
             std::to_string(c.y_strides[p]) + ", " + std::to_string(c.y_strides[q]) + ", " +
             std::to_string(c.x_strides[p]) + ", " + std::to_string(c.x_strides[q]) + ">";
    return l;
  }
  l.comment = comment + ": a strided copy over " + over;
  l.type = "mc::dm::Copy<" + bits_type(x.dtype) + ", " + dims(c.shape) + ", " + dims(c.y_strides) + ", " +
           dims(c.x_strides) + ">";
  return l;
}

KernelLaunches copy_kernel(const EmitContext& ctx, const TensorView& y, const TensorView& x, const StridedCopy& c,
                           const std::string& comment) {
  std::optional<Launch> l = copy_launch(ctx, y, x, c, comment);
  return l ? single_launch(std::move(*l)) : nothing_to_run(comment + ": empty, nothing to copy");
}

}  // namespace modelc::codegen

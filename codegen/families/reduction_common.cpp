// codegen/families/reduction_common.cpp — see reduction_common.h.
#include "codegen/families/reduction_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "support/error.h"

namespace modelc::reduction_codegen {
namespace {

std::string ints(const std::vector<MapDim>& dims, bool extents) {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(extents ? dims[i].extent : dims[i].stride);
  }
  return s;
}

}  // namespace

std::string map_type(const std::vector<MapDim>& dims) {
  if (dims.empty()) return "mc::reduction::NoDims";
  return fmt::format("mc::reduction::Strided<mc::reduction::Dims<{}>, mc::reduction::Strides<{}>>", ints(dims, true),
                     ints(dims, false));
}

std::string operand_type(const std::string& ctype, const OperandMaps& m, bool with_col) {
  if (!with_col || m.col.empty()) return fmt::format("mc::reduction::Operand<{}, {}>", ctype, map_type(m.row));
  return fmt::format("mc::reduction::Operand<{}, {}, {}>", ctype, map_type(m.row), map_type(m.col));
}

std::string tiling_type(const Tile& t) {
  return fmt::format("mc::reduction::Tiling<{}, {}, {}>", t.threads, t.group, t.lanes_contiguous ? "true" : "false");
}

std::string ctype_of(const Kernel& k, const EmitContext& ctx, DType t, const char* what) {
  switch (t) {
    case DType::float32:
    case DType::float16:
    case DType::float64:
    case DType::bfloat16:
    case DType::int8:
    case DType::uint8:
    case DType::int16:
    case DType::uint16:
    case DType::int32:
    case DType::uint32:
    case DType::int64:
    case DType::boolean: return ctx.ctype(t);
    default: break;
  }
  throw k.error(fmt::format("{} has element type {}, which the {} template does not support", what,
                                    dtype_name(t), k.family_name()));
}

KernelLaunches reduction_launch(const Kernel& k, const std::string& type, std::vector<LaunchParam> params) {
  Launch l;
  l.comment = k.op.empty() ? "kernel " + k.id : fmt::format("{} '{}'", k.op.type, k.op.name);
  l.type = type;
  l.params = std::move(params);
  return single_launch(std::move(l));
}

KernelLaunches emit_normalize(const Kernel& k, const EmitContext& ctx, const Split& s, const NormalizeOperands& ops,
                              double epsilon) {
  check_index_range(k);
  const TensorView& x = *ops.x;
  if (s.rows() == 0) return nothing_to_run("no rows");
  if (!is_float(x.dtype)) {
    throw k.error(fmt::format("input X has element type {}; normalization needs floats", dtype_name(x.dtype)));
  }
  const OperandMaps xm = maps_of(s, view_strides(x));
  const OperandMaps ym = maps_of(s, strides_same(k, s, *ops.y, "output Y"));
  auto param = [&](const TensorView* v, const char* what) {
    if (!v) return std::string("mc::reduction::Absent");
    return operand_type(ctype_of(k, ctx, v->dtype, what), maps_of(s, ops.param_strides(*v, what)));
  };
  auto stat = [&](const TensorView* v, const char* what) {
    if (!v) return std::string("mc::reduction::Absent");
    return operand_type(ctype_of(k, ctx, v->dtype, what), maps_of(s, strides_rows_only(k, s, *v, what)), false);
  };
  const std::string t = ctype_of(k, ctx, x.dtype, "input X");
  const Tile tile = tile_of(k);
  const std::string type = fmt::format("mc::reduction::Normalize<{}, {}, {}, {}, {}, {}, {}>", operand_type(t, xm),
                                       param(ops.scale, "input Scale"), param(ops.bias, "input B"),
                                       operand_type(ctype_of(k, ctx, ops.y->dtype, "output Y"), ym),
                                       stat(ops.mean, "output Mean"), stat(ops.inv_std_dev, "output InvStdDev"),
                                       tiling_type(tile));
  std::vector<LaunchParam> params = {{"x", ctx.ptr(x, true)}, {"scale", ctx.ptr(*ops.scale, true)}};
  if (ops.bias) params.push_back({"bias", ctx.ptr(*ops.bias, true)});
  params.push_back({"y", ctx.ptr(*ops.y, false)});
  if (ops.mean) params.push_back({"mean", ctx.ptr(*ops.mean, false)});
  if (ops.inv_std_dev) params.push_back({"inv_std_dev", ctx.ptr(*ops.inv_std_dev, false)});
  params.push_back({"epsilon", float_literal(epsilon)});
  return reduction_launch(k, type, std::move(params));
}

}  // namespace modelc::reduction_codegen

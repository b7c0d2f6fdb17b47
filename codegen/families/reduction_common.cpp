// codegen/families/reduction_common.cpp — see reduction_common.h.
#include "codegen/families/reduction_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "support/error.h"

namespace modelc::reduction_codegen {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

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
    case DType::int8:
    case DType::uint8:
    case DType::int32:
    case DType::int64:
    case DType::boolean: return ctx.ctype(t);
    default: break;
  }
  throw k.error(fmt::format("{} has element type {}, which the {} template does not support", what,
                                    dtype_name(t), k.family));
}

std::string alias_of(const Kernel& k) { return k.id + "_" + k.family; }

Emitted emit_kernel(const Kernel& k, const std::string& type, const std::vector<std::string>& params) {
  const std::string a = alias_of(k);
  Emitted e;
  e.declarations = fmt::format("using {} = {};\n", a, type);
  std::string args;
  for (std::size_t i = 0; i < params.size(); ++i) args += (i ? ", " : "") + params[i];
  e.launch = fmt::format("MC_LAUNCH(mc::reduction::kernel<{}>, dim3({}::kBlocks), dim3({}::kThreads), 0, ({}::Params{{{}}}));\n",
                         a, a, a, a, args);
  return e;
}

Emitted emit_normalize(const Kernel& k, const EmitContext& ctx, const Split& s, const NormalizeOperands& ops,
                       double epsilon) {
  check_index_range(k);
  const TensorView& x = *ops.x;
  if (s.rows() == 0) return Emitted{"", "// nothing to run: no rows\n"};
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
  auto ptr = [&](const TensorView* v, bool is_const) { return v ? ctx.ptr(*v, is_const) : std::string("nullptr"); };
  const std::string t = ctype_of(k, ctx, x.dtype, "input X");
  const Tile tile = tile_of(k);
  const std::string type = fmt::format("mc::reduction::Normalize<{}, {}, {}, {}, {}, {}, {}>", operand_type(t, xm),
                                       param(ops.scale, "input Scale"), param(ops.bias, "input B"),
                                       operand_type(ctype_of(k, ctx, ops.y->dtype, "output Y"), ym),
                                       stat(ops.mean, "output Mean"), stat(ops.inv_std_dev, "output InvStdDev"),
                                       tiling_type(tile));
  const std::string eps = float_literal(epsilon);
  return emit_kernel(k, type,
                     {ptr(ops.x, true), ptr(ops.scale, true), ptr(ops.bias, true), ptr(ops.y, false),
                      ptr(ops.mean, false), ptr(ops.inv_std_dev, false), eps});
}

}  // namespace modelc::reduction_codegen

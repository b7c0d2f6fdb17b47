// codegen/families/reduction_common.cpp — see reduction_common.h.
#include "codegen/families/reduction_common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "support/error.h"

namespace modelc::reduction_codegen {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

Error kernel_error(const Kernel& k, const std::string& msg, const std::string& hint = {}) {
  if (k.node) return k.node->error(msg, hint);
  return Error("kernel " + k.id + " (" + k.family + "): " + msg, hint);
}

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

int64_t Split::rows() const {
  int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) if (!col[d]) n *= shape[d];
  return n;
}

int64_t Split::cols() const {
  int64_t n = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) if (col[d]) n *= shape[d];
  return n;
}

std::vector<MapDim> simplify(const std::vector<MapDim>& dims) {
  for (const MapDim& d : dims) if (d.extent == 0) return {MapDim{0, 0}};
  std::vector<MapDim> out;
  for (const MapDim& d : dims) {
    if (d.extent == 1) continue;
    if (!out.empty() && out.back().stride == d.extent * d.stride) {
      out.back().extent *= d.extent;
      out.back().stride = d.stride;
    } else {
      out.push_back(d);
    }
  }
  return out;
}

std::string map_type(const std::vector<MapDim>& dims) {
  if (dims.empty()) return "mc::reduction::NoDims";
  return fmt::format("mc::reduction::Strided<mc::reduction::Dims<{}>, mc::reduction::Strides<{}>>", ints(dims, true),
                     ints(dims, false));
}

int64_t OperandMaps::inner_stride(const std::vector<MapDim>& side) { return side.empty() ? 0 : side.back().stride; }

OperandMaps maps_of(const Split& s, const std::vector<int64_t>& strides) {
  std::vector<MapDim> row, col;
  for (std::size_t d = 0; d < s.shape.size(); ++d) {
    (s.col[d] ? col : row).push_back(MapDim{s.shape[d], strides[d]});
  }
  return OperandMaps{simplify(row), simplify(col)};
}

std::string operand_type(const std::string& ctype, const OperandMaps& m, bool with_col) {
  if (!with_col || m.col.empty()) return fmt::format("mc::reduction::Operand<{}, {}>", ctype, map_type(m.row));
  return fmt::format("mc::reduction::Operand<{}, {}, {}>", ctype, map_type(m.row), map_type(m.col));
}

std::vector<int64_t> view_strides(const TensorView& v) {
  if (v.strides.size() == v.shape.size()) return v.strides;
  return strides_of(v.shape);
}

std::vector<int64_t> strides_same(const Kernel& k, const Split& s, const TensorView& v, const char* what) {
  if (v.shape != s.shape) {
    throw kernel_error(k, fmt::format("internal: {} '{}' has shape {}, expected {}", what, v.value, shape_str(v.shape),
                                      shape_str(s.shape)));
  }
  return view_strides(v);
}

std::vector<int64_t> strides_rows_only(const Kernel& k, const Split& s, const TensorView& v, const char* what) {
  const std::vector<int64_t> vs = view_strides(v);
  std::vector<int64_t> out(s.shape.size(), 0);
  if (v.shape.size() == s.shape.size()) {  // column dims kept as 1
    for (std::size_t d = 0; d < s.shape.size(); ++d) {
      const int64_t want = s.col[d] ? 1 : s.shape[d];
      if (v.shape[d] != want) {
        throw kernel_error(k, fmt::format("internal: {} '{}' has shape {}, which does not match the kept dims of {}",
                                          what, v.value, shape_str(v.shape), shape_str(s.shape)));
      }
      if (!s.col[d]) out[d] = vs[d];
    }
    return out;
  }
  std::size_t j = 0;
  for (std::size_t d = 0; d < s.shape.size(); ++d) {
    if (s.col[d]) continue;
    if (j >= v.shape.size() || v.shape[j] != s.shape[d]) break;
    out[d] = vs[j++];
  }
  if (j != v.shape.size() || static_cast<int64_t>(j) != static_cast<int64_t>(std::count(s.col.begin(), s.col.end(), false))) {
    throw kernel_error(k, fmt::format("internal: {} '{}' has shape {}, which does not match the kept dims of {}", what,
                                      v.value, shape_str(v.shape), shape_str(s.shape)));
  }
  return out;
}

std::vector<int64_t> strides_broadcast(const Kernel& k, const Split& s, const TensorView& v, const char* what) {
  const std::vector<int64_t> vs = view_strides(v);
  const std::size_t r = s.shape.size(), vr = v.shape.size();
  if (vr > r) {
    throw kernel_error(k, fmt::format("internal: {} '{}' ({}) does not broadcast to {}", what, v.value,
                                      shape_str(v.shape), shape_str(s.shape)));
  }
  std::vector<int64_t> out(r, 0);
  for (std::size_t j = 0; j < vr; ++j) {
    const std::size_t d = r - vr + j;
    if (v.shape[j] == s.shape[d]) {
      out[d] = s.shape[d] == 1 ? 0 : vs[j];
    } else if (v.shape[j] != 1) {
      throw kernel_error(k, fmt::format("internal: {} '{}' ({}) does not broadcast to {}", what, v.value,
                                        shape_str(v.shape), shape_str(s.shape)));
    }
  }
  return out;
}

Tile choose_tile(int64_t rows, int64_t cols, int64_t col_inner_stride, int64_t row_inner_stride, const Target& t) {
  Tile tile;
  if (cols <= 1) {
    tile.group = 1;
    tile.threads = static_cast<int>(std::clamp<int64_t>(pow2_at_least(rows), 32, 256));
  } else if (col_inner_stride == 1 || row_inner_stride != 1) {
    tile.group = static_cast<int>(std::clamp<int64_t>(pow2_at_least((cols + 3) / 4), 1, 512));
    const int64_t want = std::min<int64_t>(pow2_at_least(std::min<int64_t>(rows, 1 << 20) * tile.group), 128);
    tile.threads = static_cast<int>(std::max<int64_t>({tile.group, want, 32}));
  } else {
    // Columns strided, rows contiguous: consecutive threads take consecutive rows. More threads
    // per row only while the rows alone leave the GPU idle.
    const int64_t enough = static_cast<int64_t>(std::max(t.sm_count, 1)) * 2048;
    tile.lanes_contiguous = false;
    tile.threads = 256;
    tile.group = 1;
    while (tile.group < 8 && tile.group * 2 <= cols && rows * tile.group < enough) tile.group *= 2;
  }
  return tile;
}

Tile choose_block_per_row(int64_t cols, bool sorts) {
  Tile tile;
  tile.lanes_contiguous = true;
  tile.threads = sorts ? static_cast<int>(std::clamp<int64_t>(pow2_at_least(cols) / 2, 32, 256)) : 256;
  tile.group = tile.threads;
  return tile;
}

void set_tactic(Kernel& k, const Tile& tile, const std::string& note) {
  k.tactic["threads"] = tile.threads;
  k.tactic["group"] = tile.group;
  k.tactic["lanes_contiguous"] = tile.lanes_contiguous ? 1 : 0;
  k.note = note;
}

Tile tile_of(const Kernel& k, const Tile& fallback) {
  auto get = [&](const char* key) -> const int64_t* {
    auto it = k.tactic.find(key);
    return it == k.tactic.end() ? nullptr : &it->second;
  };
  const int64_t* threads = get("threads");
  const int64_t* group = get("group");
  const int64_t* contiguous = get("lanes_contiguous");
  if (!threads || !group || !contiguous) return fallback;
  Tile t;
  t.threads = static_cast<int>(*threads);
  t.group = static_cast<int>(*group);
  t.lanes_contiguous = *contiguous != 0;
  return t;
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
  throw kernel_error(k, fmt::format("{} has element type {}, which the {} template does not support", what,
                                    dtype_name(t), k.family));
}

void check_index_range(const Kernel& k) {
  auto check = [&](const TensorView& v) {
    if (v.dtype == DType::undefined) return;
    const std::vector<int64_t> vs = view_strides(v);
    int64_t last = 0;
    for (std::size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d] > 0) last += (v.shape[d] - 1) * vs[d];
    }
    if (v.numel() > kIntMax || last > kIntMax) {
      throw kernel_error(k, fmt::format("tensor '{}' ({}) has more elements than the {} template indexes (2^31 - 1)",
                                        v.value, shape_str(v.shape), k.family),
                         "split the model's largest tensors, or export with a smaller batch");
    }
  };
  for (const TensorView& v : k.inputs) check(v);
  for (const TensorView& v : k.outputs) check(v);
}

std::string float_literal(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  std::string s = fmt::format("{}", v);  // shortest text that reads back as the same float
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string tile_note(const Tile& t, int64_t cols, const char* per, bool kept_in_registers) {
  std::string s = fmt::format("{} thread{} per {}", t.group, t.group == 1 ? "" : "s", per);
  if (!t.lanes_contiguous) s += fmt::format(", interleaved (consecutive threads take consecutive {}s)", per);
  if (kept_in_registers) {
    const int64_t per_thread = (cols + t.group - 1) / t.group;
    s += per_thread <= 16 ? fmt::format(", {} kept in registers", per) : fmt::format(", {} re-read each pass", per);
  }
  return s;
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

KernelLaunches reduction_launch(const Kernel& k, const std::string& type, std::vector<LaunchParam> params) {
  Launch l;
  l.comment = k.node ? fmt::format("{} '{}'", k.node->op(), k.node->name()) : "kernel " + k.id;
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
    throw kernel_error(k, fmt::format("input X has element type {}; normalization needs floats", dtype_name(x.dtype)));
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
  const Tile tile = tile_of(
      k, choose_tile(s.rows(), s.cols(), OperandMaps::inner_stride(xm.col), OperandMaps::inner_stride(xm.row), Target{}));
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
  params.push_back({"epsilon", float_literal(static_cast<float>(epsilon))});
  return reduction_launch(k, type, std::move(params));
}

int64_t normalized_axis(const Kernel& k, int64_t a, int64_t rank, const char* what) {
  const int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= rank) {
    throw kernel_error(k, fmt::format("attribute '{}' is {}, out of range for rank {}", what, a, rank));
  }
  return n;
}

}  // namespace modelc::reduction_codegen

// codegen/families/pool.cpp — the pool family (templates/pool.cuh): MaxPool (with Indices and
// storage_order), AveragePool (count_include_pad, ceil_mode), dilations, GlobalAveragePool and
// GlobalMaxPool. Windows over 1 to 3 spatial dims; pads from pool_geometry (auto_pad, ceil_mode).
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "support/error.h"

namespace modelc::linear {
namespace {

bool is_global(const Node& n) { return n.op() == "GlobalAveragePool" || n.op() == "GlobalMaxPool"; }

void plan_pool(Kernel& k, const Target&) {
  check_size(k);
  const Node& n = *k.node;
  k.tactic["threads"] = 128;
  if (is_global(n)) {
    k.note = "one warp per (n, c) plane, shuffle reduction";
    return;
  }
  const ConvGeometry g = pool_geometry(k);
  k.note = fmt::format("{}: one thread per output", g.str());
}

Emitted emit_pool(const Kernel& k, const EmitContext& ctx) {
  require_dense(k);
  const Node& n = *k.node;
  const TensorView &vx = k.inputs[0], &vy = k.outputs[0];
  const std::string T = ctx.ctype(vy.dtype);
  if (is_global(n)) {
    if (vx.shape.size() < 2) throw n.error("input X has rank " + std::to_string(vx.shape.size()) + ", expected 2 or more");
    int64_t inner = 1;
    for (std::size_t i = 2; i < vx.shape.size(); ++i) inner *= vx.shape[i];
    const std::string comment =
        fmt::format("{}: {} '{}' {} -> {}", k.id, n.op(), n.name(), shape_text(vx.shape), shape_text(vy.shape));
    const std::string decl = fmt::format("mc::pool::GlobalPool<{}, {}, {}, {}, mc::conv::Layout::nchw, {}>", T,
                                         vx.shape[0], vx.shape[1], inner, n.op() == "GlobalMaxPool" ? "true" : "false");
    return emit_instance(k, comment, k.id + "_pool", decl, {ctx.ptr(vx, true), ctx.ptr(vy, false)});
  }
  const ConvGeometry g = pool_geometry(k);
  const bool is_max = n.op() == "MaxPool";
  const bool indices = is_max && k.outputs.size() > 1 && k.outputs[1].dtype != DType::undefined;
  std::string kind = "mc::pool::Kind::max";
  if (!is_max) {
    kind = n.attr_int("count_include_pad", 0) != 0 ? "mc::pool::Kind::average_include_pad"
                                                   : "mc::pool::Kind::average_exclude_pad";
  }
  const bool column_major = n.attr_int("storage_order", 0) != 0;
  const std::string comment = fmt::format("{}: {} '{}' {} -> {} {}{}", k.id, n.op(), n.name(), shape_text(vx.shape),
                                          shape_text(vy.shape), g.str(), indices ? " + Indices" : "");
  const std::string decl = fmt::format(
      "mc::pool::Pool<{}, mc::pool::Shape<{}, {},\n"
      "    /*in*/ {}, /*kernel*/ {}, /*out*/ {},\n"
      "    /*stride*/ {}, /*pad*/ {}, /*pad end*/ {}, /*dilation*/ {}>,\n"
      "    mc::conv::Layout::nchw, {}, {}, {}>",
      T, g.N, g.C, dims3(g.in), dims3(g.kernel), dims3(g.out), dims3(g.stride), dims3(g.pad), dims3(g.pad_end),
      dims3(g.dilation), kind, indices ? "true" : "false", column_major ? "true" : "false");
  return emit_instance(k, comment, k.id + "_pool", decl,
                       {ctx.ptr(vx, true), ctx.ptr(vy, false), indices ? ctx.ptr(k.outputs[1], false) : "nullptr"});
}

}  // namespace

MODELC_REGISTER_FAMILY(pool_family)({"pool", {"gemm.cuh", "conv.cuh", "pool.cuh"}, plan_pool, emit_pool});

}  // namespace modelc::linear

// codegen/families/hopper.cpp — the Hopper engine's launches (--arch sm_90a; the schedule's
// HopperTile, schedule/hopper.h) for the gemm and conv printers: instantiations of
// templates/hopper_gemm.cuh whose TMA tensor maps the enqueue builds (Launch::tensor_maps), on a
// persistent grid.
#include <fmt/format.h>

#include "codegen/families/linear.h"
#include "schedule/hopper.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

/// The MMA policy of 16-bit operands of type t (templates/tensor_core.cuh): FP32 accumulators.
std::string hopper_mma(const Kernel& k, DType t) {
  if (t == DType::float16) return "mc::tc::MmaF16<float>";
  if (t == DType::bfloat16) return "mc::tc::MmaBF16";
  throw Error("internal: kernel " + k.id + " runs on the Hopper engine with " + dtype_name(t) + " operands");
}

std::string hopper_tile_text(const HopperTile& t) {
  return fmt::format("mc::hopper::Tile<{}, {}, {}, {}, mc::Swizzle::b128, {}>", t.bm, t.bn, t.bk, t.stages, t.consumers);
}

HopperTile hopper_tile_of(const Kernel& k) {
  if (const HopperTile* t = std::get_if<HopperTile>(&k.tactic)) return *t;
  throw Error("internal: kernel " + k.id + " (" + k.family + ") runs on the Hopper engine without a Hopper tile");
}

}  // namespace

KernelLaunches hopper_gemm_launches(const Kernel& k, const EmitContext& ctx, const GemmLowering& g,
                                    const std::string& epilogue, std::vector<LaunchParam> params,
                                    const std::string& comment) {
  const TensorView& y = k.outputs.at(0);
  if (k.outputs.empty() || y.numel() == 0) return nothing_to_run(comment + ": empty output, nothing to run");
  const HopperTile t = hopper_tile_of(k);
  const TensorView &a = k.inputs.at(g.a_input), &b = k.inputs.at(g.b_input);
  if (a.dtype != b.dtype) throw Error("internal: kernel " + k.id + " runs on the Hopper engine with two operand types");
  const std::string type = fmt::format(
      "mc::hopper::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
      "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
      "    {}, {}>",
      hopper_mma(k, a.dtype), ctx.ctype(y.dtype), g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a),
      strides_text(g.b), y_text(g), hopper_tile_text(t), epilogue);
  // A and B are read through the tensor maps only; Params has no pointer of them.
  std::vector<LaunchParam> rest;
  for (LaunchParam& p : params) {
    if (p.field != "A" && p.field != "B") rest.push_back(std::move(p));
  }
  Launch l{comment + ", Hopper engine " + t.name(), type, std::move(rest), 0, t.smem_bytes(), 1};
  l.tensor_maps = ctx.ptr(a, true) + ", " + ctx.ptr(b, true);
  KernelLaunches r = single_launch(std::move(l));
  r.includes.push_back("hopper_gemm.cuh");
  return r;
}

KernelLaunches hopper_conv_launches(const Kernel& k, const EmitContext& ctx, const ConvPlan& c,
                                    const std::string& epilogue, std::vector<LaunchParam> params,
                                    const std::string& comment) {
  const TensorView& y = k.outputs.at(0);
  if (k.outputs.empty() || y.numel() == 0) return nothing_to_run(comment + ": empty output, nothing to run");
  const HopperTile t = hopper_tile_of(k);
  const TensorView &x = k.inputs.at(0), &w = k.inputs.at(1);
  if (x.dtype != w.dtype) throw Error("internal: kernel " + k.id + " runs on the Hopper engine with two operand types");
  const PixelRect r = hopper_pixel_rect(c.geometry, t.bm);
  const std::string type = fmt::format(
      "mc::hopper::Conv<{}, {}, {},\n    /*X pitch*/ {}, /*Y pitch*/ {}, {}, {},\n    /*pixels PH x PW*/ {}, {}>",
      hopper_mma(k, x.dtype), ctx.ctype(y.dtype), conv_shape(c.geometry), c.x_pitch, c.y_pitch, hopper_tile_text(t),
      epilogue, r.ph, r.pw);
  std::vector<LaunchParam> rest;  // X and W are read through the tensor maps only
  for (LaunchParam& p : params) {
    if (p.field != "X" && p.field != "W") rest.push_back(std::move(p));
  }
  Launch l{fmt::format("{}, Hopper engine {}, {} x {} pixels a tile", comment, t.name(), r.ph, r.pw), type, std::move(rest),
           0, t.smem_bytes(), 1};
  l.tensor_maps = ctx.ptr(x, true) + ", " + ctx.ptr(w, true);
  KernelLaunches kl = single_launch(std::move(l));
  kl.includes.push_back("hopper_gemm.cuh");
  return kl;
}

}  // namespace modelc::linear

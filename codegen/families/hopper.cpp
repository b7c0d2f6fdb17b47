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

HopperTile hopper_tile_of(const Kernel& k, bool int8) {
  const HopperTile* t = std::get_if<HopperTile>(&k.tactic);
  if (!t || t->int8 != int8) {
    throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") runs on the Hopper engine without its " +
                (int8 ? "INT8 " : "") + "Hopper tile");
  }
  return *t;
}

/// The one launch of Hopper kernel `type`: `params` less the operands `a_field` and `b_field`
/// (read through the tensor maps only, built from views a and b), commented `comment`.
KernelLaunches hopper_launch(const EmitContext& ctx, const HopperTile& t, const std::string& type,
                             std::vector<LaunchParam> params, const std::string& comment, const char* a_field,
                             const char* b_field, const TensorView& a, const TensorView& b) {
  std::vector<LaunchParam> rest;
  for (LaunchParam& p : params) {
    if (p.field != a_field && p.field != b_field) rest.push_back(std::move(p));
  }
  Launch l{comment + ", Hopper engine " + t.name(), type, std::move(rest), 0, t.smem_bytes(), 1};
  l.tensor_maps = ctx.ptr(a, true) + ", " + ctx.ptr(b, true);
  KernelLaunches r = single_launch(std::move(l));
  r.includes.push_back("hopper_gemm.cuh");
  return r;
}

bool empty_output(const Kernel& k) { return k.outputs.empty() || k.outputs[0].numel() == 0; }

/// The launch of convolution g (X and Y channel pitches cp, yp) on the Hopper engine with MMA
/// policy `mma` (FP16 / BF16, or INT8): mc::hopper::Conv<MMA, TY, Shape, pitches, Tile, epilogue,
/// PH, PW>, the pixel rectangle hopper_pixel_rect's.
KernelLaunches conv_launch(const Kernel& k, const EmitContext& ctx, const ConvGeometry& g, int64_t cp, int64_t yp, bool int8,
                           const std::string& epilogue, std::vector<LaunchParam> params, const std::string& comment) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  const HopperTile t = hopper_tile_of(k, int8);
  const TensorView &x = k.inputs.at(0), &w = k.inputs.at(1), &y = k.outputs.at(0);
  const std::string mma = int8 ? "mc::tc::MmaS8<" + ctx.ctype(x.dtype) + ">" : hopper_mma(k, x.dtype);
  if (!int8 && x.dtype != w.dtype) throw Error("internal: kernel " + k.id + " runs on the Hopper engine with two operand types");
  const PixelRect r = hopper_pixel_rect(g, t.bm);
  const std::string type =
      fmt::format("mc::hopper::Conv<{}, {}, {},\n    /*X pitch*/ {}, /*Y pitch*/ {}, {}, {},\n    /*pixels PH x PW*/ {}, {}>",
                  mma, ctx.ctype(y.dtype), conv_shape(g), cp, yp, hopper_tile_text(t), epilogue, r.ph, r.pw);
  return hopper_launch(ctx, t, type, std::move(params), fmt::format("{}, {} x {} pixels a tile", comment, r.ph, r.pw), "X",
                       "W", x, w);
}

}  // namespace

KernelLaunches hopper_gemm_launches(const Kernel& k, const EmitContext& ctx, const GemmLowering& g,
                                    const std::string& epilogue, std::vector<LaunchParam> params,
                                    const std::string& comment) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  const HopperTile t = hopper_tile_of(k, false);
  const TensorView &a = k.inputs.at(g.a_input), &b = k.inputs.at(g.b_input), &y = k.outputs.at(0);
  if (a.dtype != b.dtype) throw Error("internal: kernel " + k.id + " runs on the Hopper engine with two operand types");
  const std::string type = fmt::format(
      "mc::hopper::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
      "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
      "    {}, {}>",
      hopper_mma(k, a.dtype), ctx.ctype(y.dtype), g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a),
      strides_text(g.b), y_text(g), hopper_tile_text(t), epilogue);
  return hopper_launch(ctx, t, type, std::move(params), comment, "A", "B", a, b);
}

KernelLaunches hopper_conv_launches(const Kernel& k, const EmitContext& ctx, const ConvPlan& c,
                                    const std::string& epilogue, std::vector<LaunchParam> params,
                                    const std::string& comment) {
  return conv_launch(k, ctx, c.geometry, c.x_pitch, c.y_pitch, false, epilogue, std::move(params), comment);
}

KernelLaunches hopper_int8_gemm_launches(const Kernel& k, const EmitContext& ctx, const Int8Gemm& g,
                                         const std::string& epilogue, std::vector<LaunchParam> params,
                                         const std::string& comment) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  const HopperTile t = hopper_tile_of(k, true);
  const TensorView &a = k.inputs.at(0), &b = k.inputs.at(1), &y = k.outputs.at(0);
  // B stored [N, K] (K-major: row stride 1 along k, N's stride K), as tc8::Gemm reads it.
  const std::string type = fmt::format(
      "mc::hopper::Gemm<mc::tc::MmaS8<{}>, {}, mc::gemm::Shape<1, 1, 1, {}, {}, {}>,\n"
      "    /*A*/ mc::gemm::Strides<0, 0, 0, {}, 1>, /*B [N][K]*/ mc::gemm::Strides<0, 0, 0, 1, {}>,\n"
      "    /*Y*/ mc::gemm::Strides<0, 0, 0, {}, 1>, {}, {}>",
      ctx.ctype(a.dtype), ctx.ctype(y.dtype), g.M, g.N, g.K, g.a_row, g.K, g.y_row, hopper_tile_text(t), epilogue);
  return hopper_launch(ctx, t, type, std::move(params), comment, "A", "B", a, b);
}

KernelLaunches hopper_int8_conv_launches(const Kernel& k, const EmitContext& ctx, const Int8ConvPlan& c,
                                         const std::string& epilogue, std::vector<LaunchParam> params,
                                         const std::string& comment) {
  return conv_launch(k, ctx, c.geometry, c.x_pitch, c.y_pitch, true, epilogue, std::move(params), comment);
}

}  // namespace modelc::linear


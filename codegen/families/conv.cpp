// codegen/families/conv.cpp — the conv family: Conv as a tiled implicit GEMM (templates/conv.cuh);
// plan hands depthwise convolutions (one input channel per group) to conv_depthwise. Also the
// convolution and pooling geometry the conv_transpose, conv_depthwise and pool families share.
//
// The padding rules are those of compiler/ops/conv.cpp and compiler/ops/pool.cpp (auto_pad,
// output_shape, ceil_mode), recomputed here from the node's attributes and the views' shapes; the
// output extents are checked against the output view, so the two cannot silently disagree.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/families/linear.h"
#include "schedule/layout.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

enum class AutoPad { notset, same_upper, same_lower, valid };

AutoPad auto_pad(const Node& n) {
  const std::string s = n.attr_string("auto_pad", "NOTSET");
  if (s == "SAME_UPPER") return AutoPad::same_upper;
  if (s == "SAME_LOWER") return AutoPad::same_lower;
  if (s == "VALID") return AutoPad::valid;
  if (s == "NOTSET" || s.empty()) return AutoPad::notset;
  throw n.error("attribute 'auto_pad' is '" + s + "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

std::vector<int64_t> ints_or(const Node& n, const char* name, std::size_t count, int64_t def) {
  std::vector<int64_t> v = n.attr_ints(name);
  if (v.empty()) v.assign(count, def);
  if (v.size() != count) {
    throw n.error(fmt::format("attribute '{}' has {} values, expected {}", name, v.size(), count));
  }
  return v;
}

const TensorView& view(const Kernel& k, bool input, std::size_t i) {
  const std::vector<TensorView>& v = input ? k.inputs : k.outputs;
  if (i >= v.size() || v[i].dtype == DType::undefined) {
    throw Error(fmt::format("internal: kernel {} ({}) has no {} view {}", k.id, k.family, input ? "input" : "output", i));
  }
  return v[i];
}

/// Fills N, C, spatial rank, input extents, kernel (from W or kernel_shape), strides, dilations and
/// the explicit pads; places the model's dims at the end of the 3-D arrays.
ConvGeometry common(const Kernel& k, const Shape& x, const std::vector<int64_t>& kernel) {
  const Node& n = *k.node;
  if (x.size() < 3 || x.size() > 5) {
    throw n.error(fmt::format("{} over {} spatial dims: the templates run 1 to 3", n.op(), static_cast<int>(x.size()) - 2));
  }
  ConvGeometry g;
  g.spatial = static_cast<int>(x.size()) - 2;
  const std::size_t ns = static_cast<std::size_t>(g.spatial), off = 3 - ns;
  g.N = x[0];
  g.C = x[1];
  const std::vector<int64_t> stride = ints_or(n, "strides", ns, 1), dil = ints_or(n, "dilations", ns, 1);
  const std::vector<int64_t> pads = ints_or(n, "pads", 2 * ns, 0);
  for (std::size_t i = 0; i < ns; ++i) {
    g.in[off + i] = x[2 + i];
    g.kernel[off + i] = kernel[i];
    g.stride[off + i] = stride[i];
    g.dilation[off + i] = dil[i];
    g.pad[off + i] = pads[i];
    g.pad_end[off + i] = pads[ns + i];
  }
  return g;
}

void check_out(const Kernel& k, ConvGeometry& g, const Shape& y) {
  const std::size_t off = 3 - static_cast<std::size_t>(g.spatial);
  for (int i = 0; i < g.spatial; ++i) {
    const int64_t want = y[2 + static_cast<std::size_t>(i)];
    if (g.out[off + static_cast<std::size_t>(i)] != want) {
      throw Error(fmt::format("internal: kernel {} ({} '{}'): output dim {} is {} in the view, the geometry gives {}",
                              k.id, k.node->op(), k.node->name(), i, want, g.out[off + static_cast<std::size_t>(i)]));
    }
  }
}

}  // namespace

std::string ConvGeometry::str() const {
  auto part = [&](const std::array<int64_t, 3>& a) {
    std::string s;
    for (int i = 3 - spatial; i < 3; ++i) s += (s.empty() ? "" : "x") + std::to_string(a[static_cast<std::size_t>(i)]);
    return s;
  };
  std::string pads = part(pad);
  if (pad_end != pad) pads += "/" + part(pad_end);
  return fmt::format("k{} s{} p{} d{}{}", part(kernel), part(stride), pads, part(dilation),
                     G > 1 ? " g" + std::to_string(G) : "");
}

ConvGeometry conv_geometry(const Kernel& k) {
  const Node& n = *k.node;
  const TensorView &x = view(k, true, 0), &w = view(k, true, 1), &y = view(k, false, 0);
  if (w.shape.size() != x.shape.size()) throw n.error("W and X have different ranks");
  ConvGeometry g = common(k, x.shape, std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()));
  g.M = w.shape[0];
  g.G = n.attr_int("group", 1);
  if (g.G < 1 || g.C % g.G != 0 || g.M % g.G != 0 || w.shape[1] * g.G != g.C) {
    throw n.error(fmt::format("group {} does not divide the channels (C {}, M {}, W {})", g.G, g.C, g.M, shape_text(w.shape)));
  }
  const AutoPad ap = auto_pad(n);
  for (std::size_t i = 3 - static_cast<std::size_t>(g.spatial); i < 3; ++i) {
    const int64_t ek = (g.kernel[i] - 1) * g.dilation[i] + 1;
    if (ap == AutoPad::same_upper || ap == AutoPad::same_lower) {
      g.out[i] = (g.in[i] + g.stride[i] - 1) / g.stride[i];
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.stride[i] + ek - g.in[i]);
      g.pad[i] = ap == AutoPad::same_upper ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad[i];
    } else {
      if (ap == AutoPad::valid) g.pad[i] = g.pad_end[i] = 0;
      g.out[i] = (g.in[i] + g.pad[i] + g.pad_end[i] - ek) / g.stride[i] + 1;
    }
  }
  check_out(k, g, y.shape);
  return g;
}

ConvGeometry conv_transpose_geometry(const Kernel& k) {
  const Node& n = *k.node;
  const TensorView &x = view(k, true, 0), &w = view(k, true, 1), &y = view(k, false, 0);
  if (w.shape.size() != x.shape.size()) throw n.error("W and X have different ranks");
  ConvGeometry g = common(k, x.shape, std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()));
  g.G = n.attr_int("group", 1);
  g.M = w.shape[1] * g.G;
  if (g.G < 1 || g.C % g.G != 0 || w.shape[0] != g.C) {
    throw n.error(fmt::format("group {} and W {} do not match C {}", g.G, shape_text(w.shape), g.C));
  }
  const std::size_t ns = static_cast<std::size_t>(g.spatial), off = 3 - ns;
  const AutoPad ap = auto_pad(n);
  const std::vector<int64_t> out_pad = ints_or(n, "output_padding", ns, 0);
  std::vector<int64_t> out_shape = n.attr_ints("output_shape");
  if (out_shape.size() == ns + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != ns) throw n.error("attribute 'output_shape' does not match the spatial rank");
  if (out_shape.empty() && (ap == AutoPad::same_upper || ap == AutoPad::same_lower)) {
    for (std::size_t i = 0; i < ns; ++i) out_shape.push_back(g.in[off + i] * g.stride[off + i]);
  }
  for (std::size_t i = 0; i < ns; ++i) {
    const std::size_t d = off + i;
    const int64_t full = g.stride[d] * (g.in[d] - 1) + out_pad[i] + (g.kernel[d] - 1) * g.dilation[d] + 1;
    if (!out_shape.empty()) {
      // As compiler/ops/conv.cpp: pads generated from output_shape, floor division for the split.
      const int64_t total = full - out_shape[i];
      const int64_t half = floor_div(total, 2);
      g.pad[d] = ap == AutoPad::same_upper ? half : total - half;
      g.pad_end[d] = total - g.pad[d];
      g.out[d] = out_shape[i];
    } else {
      if (ap == AutoPad::valid) g.pad[d] = g.pad_end[d] = 0;
      g.out[d] = full - g.pad[d] - g.pad_end[d];
    }
  }
  check_out(k, g, y.shape);
  return g;
}

ConvGeometry pool_geometry(const Kernel& k) {
  const Node& n = *k.node;
  const TensorView &x = view(k, true, 0), &y = view(k, false, 0);
  const std::size_t ns = x.shape.size() >= 2 ? x.shape.size() - 2 : 0;
  ConvGeometry g = common(k, x.shape, ints_or(n, "kernel_shape", ns, 1));
  g.M = g.C;
  const AutoPad ap = auto_pad(n);
  const bool ceil_mode = n.attr_int("ceil_mode", 0) != 0;
  for (std::size_t i = 3 - ns; i < 3; ++i) {
    const int64_t ek = (g.kernel[i] - 1) * g.dilation[i] + 1, s = g.stride[i];
    if (ap == AutoPad::same_upper || ap == AutoPad::same_lower) {
      g.out[i] = (g.in[i] + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * s + ek - g.in[i]);
      g.pad[i] = ap == AutoPad::same_upper ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad[i];
      continue;
    }
    if (ap == AutoPad::valid) g.pad[i] = g.pad_end[i] = 0;
    const int64_t span = g.in[i] + g.pad[i] + g.pad_end[i] - ek;
    g.out[i] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (ceil_mode && (g.out[i] - 1) * s >= g.in[i] + g.pad[i]) --g.out[i];
  }
  check_out(k, g, y.shape);
  return g;
}

std::string dims3(const std::array<int64_t, 3>& d) {
  return fmt::format("mc::conv::Dims3<{}, {}, {}>", d[0], d[1], d[2]);
}

std::string conv_shape(const ConvGeometry& g) {
  return fmt::format(
      "mc::conv::Shape<{}, {}, {}, {},\n"
      "    /*in*/ {}, /*kernel*/ {}, /*out*/ {},\n"
      "    /*stride*/ {}, /*pad*/ {}, /*dilation*/ {}>",
      g.N, g.C, g.M, g.G, dims3(g.in), dims3(g.kernel), dims3(g.out), dims3(g.stride), dims3(g.pad),
      dims3(g.dilation));
}

void check_size(const Kernel& k) {
  constexpr int64_t kMax = 2147483647;
  for (const auto* views : {&k.inputs, &k.outputs}) {
    for (const TensorView& v : *views) {
      if (v.dtype != DType::undefined && v.numel() > kMax) {
        throw k.node->error("tensor '" + v.value + "' has " + std::to_string(v.numel()) +
                            " elements; the templates index with 32 bits");
      }
    }
  }
}

void require_dense(const Kernel& k) {
  for (const auto* views : {&k.inputs, &k.outputs}) {
    for (const TensorView& v : *views) {
      if (v.dtype != DType::undefined && !v.dense()) {
        throw Error("internal: kernel " + k.id + " (" + k.family + ") got a strided view of '" + v.value + "'");
      }
    }
  }
}

std::string bias_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, std::vector<LaunchParam>* params,
                          std::string* what) {
  const bool has_bias = k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined;
  if (is_fused(*k.node)) {
    MatrixStrides per_channel;
    per_channel.row = 1;
    return fused_epilogue(k, ctx, T, per_channel, has_bias, 1.0, 1.0, params, what);
  }
  *what = has_bias ? " + bias" : "";
  if (has_bias) {
    params->push_back({"epilogue.bias", ctx.ptr(k.inputs[2], true)});
    return "mc::gemm::EpilogueBias<" + T + ">";
  }
  return "mc::gemm::EpilogueIdentity";
}

namespace {

/// Why a convolution cannot run on the tensor-core template ("" when it can): float16 X and W,
/// groups = 1, channels-last views (schedule/layout.h) with W in OHWI at X's channel pitch, a pitch
/// that is a multiple of 8 (16-byte chunks of channels), 16-byte aligned buffers.
std::string conv_fallback(const Kernel& k, const ConvGeometry& g) {
  const TensorView &x = k.inputs[0], &w = k.inputs[1], &y = k.outputs[0];
  for (DType t : {x.dtype, w.dtype, y.dtype}) {
    if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return "integer data";
  }
  if (x.dtype == DType::float32 || w.dtype == DType::float32) return "FP32 storage";
  if (x.dtype != DType::float16 || w.dtype != DType::float16) {
    return std::string(dtype_name(x.dtype != DType::float16 ? x.dtype : w.dtype)) + " storage";
  }
  if (g.G > 1) return fmt::format("groups = {}", g.G);
  const int64_t cp = channels_last_pitch(x), wp = channels_last_pitch(w), yp = channels_last_pitch(y);
  if (cp == 0 || yp == 0) return "NCHW layout";
  if (wp != cp) return "weights not in OHWI at the input's channel pitch";
  if (cp % 8 != 0) return fmt::format("channels {} not padded to a multiple of 8", g.C);
  if (!aligned16(x) || !aligned16(w) || !aligned16(y)) return "a buffer not 16-byte aligned";
  DType epi = DType::undefined;
  for (std::size_t i = 2; i < k.inputs.size(); ++i) {
    if (k.inputs[i].dtype == DType::undefined) continue;
    if (epi != DType::undefined && k.inputs[i].dtype != epi) return "bias and residual of different types";
    epi = k.inputs[i].dtype;
  }
  return "";
}

/// The channel pitches of an NHWC convolution (X, Y, W), or all 0 when every view is dense NCHW.
struct Pitches {
  int64_t x = 0, y = 0, w = 0;
};

Pitches conv_pitches(const Kernel& k) {
  const TensorView &x = k.inputs[0], &w = k.inputs[1], &y = k.outputs[0];
  const bool dense = x.dense() && w.dense() && y.dense();
  if (dense) return {};
  Pitches p{channels_last_pitch(x), channels_last_pitch(y), channels_last_pitch(w)};
  if (p.x == 0 || p.y == 0 || p.w == 0) {
    throw Error("internal: kernel " + k.id + " (" + k.family + "): X, W and Y are neither dense NCHW nor channels-last");
  }
  return p;
}

void plan_conv(Kernel& k, const Target& t) {
  const ConvGeometry g = conv_geometry(k);
  check_size(k);
  if (g.Cg() == 1 && g.G > 1) {
    k.family = "conv_depthwise";
    k.tactic["threads"] = 128;
    k.note = fmt::format("{}: depthwise (one input channel per group), direct, one thread per output", g.str());
    return;
  }
  if (g.G > 65535) throw k.node->error(fmt::format("{} groups exceed the grid's z limit (65535)", g.G));
  std::string why;
  const TileConfig tile = choose_tile(g.G, g.Mg(), g.N * g.out_pixels(), t, &why);
  check_grid(k, tile, g.Mg());
  record_tile(k, tile);
  k.note = fmt::format("{}: implicit GEMM, M {} (channels per group) N {} (pixels) K {}; {}", g.str(), g.Mg(),
                       g.N * g.out_pixels(), g.Cg() * g.kernel[0] * g.kernel[1] * g.kernel[2], why);
}

void plan_conv_archs(Kernel& k, const std::vector<Target>& targets) {
  const ConvGeometry g = conv_geometry(k);
  check_size(k);
  k.arch_tactic.clear();
  k.engine = "simt";
  if (g.Cg() == 1 && g.G > 1) {
    k.fallback_reason = g.M == g.G ? "depthwise (groups = C)" : fmt::format("depthwise (groups = {})", g.G);
    plan_conv(k, targets.front());
    return;
  }
  k.fallback_reason = conv_fallback(k, g);
  if (k.fallback_reason.empty()) {
    k.engine = "tensor_core";
    const int64_t pixels = g.N * g.out_pixels();
    const std::string why = plan_tc_archs(k, targets, 1, pixels, g.M);
    k.note = fmt::format("{}: implicit GEMM on tensor cores, M {} (pixels) N {} (channels) K {} (taps x pitch {}); {}",
                         g.str(), pixels, g.M, g.kernel[0] * g.kernel[1] * g.kernel[2] * channels_last_pitch(k.inputs[0]),
                         channels_last_pitch(k.inputs[0]), why);
    return;
  }
  plan_conv(k, targets.front());
  k.note += " (SIMT: " + k.fallback_reason + ")";
}

/// The element type a convolution's epilogue operands (bias, residual) are read as.
std::string conv_epilogue_type(const Kernel& k, const EmitContext& ctx) {
  for (std::size_t i = 2; i < k.inputs.size(); ++i) {
    if (k.inputs[i].dtype != DType::undefined) return ctx.ctype(k.inputs[i].dtype);
  }
  return ctx.ctype(k.outputs[0].dtype);
}

KernelLaunches emit_conv(const Kernel& k, const EmitContext& ctx) {
  const ConvGeometry g = conv_geometry(k);
  const TensorView& vy = k.outputs[0];
  std::vector<LaunchParam> params = {
      {"X", ctx.ptr(k.inputs[0], true)}, {"W", ctx.ptr(k.inputs[1], true)}, {"Y", ctx.ptr(vy, false)}};
  std::string what;
  const std::string epilogue = bias_epilogue(k, ctx, conv_epilogue_type(k, ctx), &params, &what);
  if (k.engine == "tensor_core") {
    const int64_t cp = channels_last_pitch(k.inputs[0]), yp = channels_last_pitch(vy);
    const std::string TY = ctx.ctype(vy.dtype);
    const std::string TAcc = k.tactic.count("fp16_accumulate") && k.tactic.at("fp16_accumulate") ? "__half" : "float";
    auto decl = [&](const TcTile& t) {
      return fmt::format("mc::tc::Conv<{}, {}, {},\n    /*X pitch*/ {}, /*Y pitch*/ {}, mc::tc::Tile<{}, {}, {}, {}, {}, {}>, {}>",
                         TY, TAcc, conv_shape(g), cp, yp, t.bm, t.bn, t.bk, t.warps_m, t.warps_n,
                         t.async ? "true" : "false", epilogue);
    };
    const std::string comment =
        fmt::format("{} '{}' {} * W{} -> {} {}{}, NHWC (pitch {} -> {}), implicit GEMM on tensor cores", k.node->op(),
                    k.node->name(), shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape), shape_text(vy.shape),
                    g.str(), what, cp, yp);
    return tc_launches(k, comment, decl, params);
  }
  const Pitches p = conv_pitches(k);
  const bool nhwc = p.x != 0;
  const TileConfig tile = tile_of(k);
  const std::string T = ctx.ctype(vy.dtype);
  const std::string comment = fmt::format("{} '{}' {} * W{} -> {} {}{}, {}implicit GEMM, SIMT tile {}", k.node->op(),
                                          k.node->name(), shape_text(k.inputs[0].shape), shape_text(k.inputs[1].shape),
                                          shape_text(vy.shape), g.str(), what,
                                          nhwc ? fmt::format("NHWC (pitch {} -> {}), ", p.x, p.y) : "", tile.name());
  const std::string pitches = nhwc ? fmt::format(", /*pitches X Y W*/ {}, {}, {}", p.x, p.y, p.w) : "";
  const std::string type =
      fmt::format("mc::conv::Conv<{}, {}, {},\n    mc::conv::Layout::{}, mc::gemm::Tile<{}, {}, {}, {}, {}>, {}{}>", T,
                  acc_type(vy.dtype), conv_shape(g), nhwc ? "nhwc" : "nchw", tile.bm, tile.bn, tile.bk, tile.tm,
                  tile.tn, epilogue, pitches);
  return linear_launch(k, comment, type, std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(conv_family)({"conv", {"gemm.cuh", "conv.cuh", "tensor_core.cuh"},
                                     [](Kernel& k, const Target& t) { plan_conv_archs(k, {t}); }, emit_conv,
                                     plan_conv_archs});

}  // namespace modelc::linear

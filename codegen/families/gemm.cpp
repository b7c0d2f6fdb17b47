// codegen/families/gemm.cpp — the gemm family: Gemm, MatMul and Einsum as one batched strided
// GEMM (templates/gemm.cuh), one-operand Einsum as a strided sum; plus the tile heuristic and the
// helpers the conv and pool families share (codegen/families/linear.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "codegen/families/linear.h"
#include "schedule/layout.h"
#include "ops/fused.h"
#include "support/error.h"

namespace modelc::linear {

// ---- shared helpers ----------------------------------------------------------------------------

static std::string strides_text(const MatrixStrides& s) {
  return fmt::format("mc::gemm::Strides<{}, {}, {}, {}, {}>", s.batch[0], s.batch[1], s.batch[2], s.row, s.col);
}

std::string TileConfig::name() const { return fmt::format("{}x{}x{} t{}x{}", bm, bn, bk, tm, tn); }

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The configurations choose_tile picks from (all 128 threads).
constexpr TileConfig kTile128x64{128, 64, 8, 8, 8};
constexpr TileConfig kTile64x128{64, 128, 8, 8, 8};
constexpr TileConfig kTile64x64{64, 64, 8, 4, 8};
constexpr TileConfig kTile32x32{32, 32, 8, 4, 2};
constexpr TileConfig kTileSkinnyM{16, 64, 16, 2, 4};
constexpr TileConfig kTileSkinnyN{64, 16, 16, 4, 2};

}  // namespace

TileConfig choose_tile(int64_t batch, int64_t M, int64_t N, const Target& target, std::string* why) {
  auto blocks = [&](const TileConfig& t) { return batch * ceil_div(M, t.bm) * ceil_div(N, t.bn); };
  auto say = [&](const TileConfig& t, const std::string& reason) {
    if (why) *why = fmt::format("SIMT tile {} ({} blocks of {} threads): {}", t.name(), blocks(t), t.threads(), reason);
    return t;
  };
  if (M <= 16) return say(kTileSkinnyM, "M <= 16, a skinny-row tile");
  if (N <= 16) return say(kTileSkinnyN, "N <= 16, a skinny-column tile");
  const TileConfig big = M >= N ? kTile128x64 : kTile64x128;
  const int64_t sms = std::max(1, target.sm_count);
  for (const TileConfig& t : {big, kTile64x64}) {
    if (blocks(t) >= sms) {
      return say(t, fmt::format("the largest tile with at least one block per SM ({} SMs)", sms));
    }
  }
  return say(kTile32x32, fmt::format("no larger tile gives one block per SM ({} SMs)", sms));
}

void check_grid(const Kernel& k, const TileConfig& t, int64_t M) {
  if (ceil_div(M, t.bm) > 65535) {
    refuse_node(k, fmt::format("{} rows make {} row tiles of {}, over the grid's y limit (65535)", M, ceil_div(M, t.bm), t.bm));
  }
}

void refuse_node(const Kernel& k, const std::string& message, const std::string& hint) {
  if (k.node) throw k.node->error(message, hint);
  throw Error("kernel " + k.id + ": " + message, hint);
}

void record_tile(Kernel& k, const TileConfig& t) {
  k.tactic["BM"] = t.bm;
  k.tactic["BN"] = t.bn;
  k.tactic["BK"] = t.bk;
  k.tactic["TM"] = t.tm;
  k.tactic["TN"] = t.tn;
  k.tactic["threads"] = t.threads();
}

TileConfig tile_of(const Kernel& k) {
  TileConfig t;
  auto get = [&](const char* key) {
    auto it = k.tactic.find(key);
    if (it == k.tactic.end()) throw Error("internal: kernel " + k.id + " (" + k.family + ") has no tactic '" + key + "'");
    return static_cast<int>(it->second);
  };
  t.bm = get("BM");
  t.bn = get("BN");
  t.bk = get("BK");
  t.tm = get("TM");
  t.tn = get("TN");
  return t;
}

std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r + "]";
}

std::string acc_type(DType t) {
  switch (t) {
    case DType::float32:
    case DType::float16:
    case DType::bfloat16: return "float";
    default: return "int64_t";
  }
}

namespace {

bool empty_output(const Kernel& k) { return k.outputs.empty() || k.outputs[0].numel() == 0; }

}  // namespace

KernelLaunches linear_launch(const Kernel& k, const std::string& comment, const std::string& type,
                             std::vector<LaunchParam> params) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  return single_launch(Launch{comment, type, std::move(params)});
}

std::string float_literal(double v) {
  if (v != v) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  std::string s = fmt::format("{}", static_cast<float>(v));
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s + "f";
}

bool is_fused(const Node& n) { return !ops::producer_of_fused(n.op()).empty(); }

std::string producer_op(const Node& n) {
  const std::string p = ops::producer_of_fused(n.op());
  return p.empty() ? n.op() : p;
}

std::string fused_epilogue(const Kernel& k, const EmitContext& ctx, const std::string& T, const MatrixStrides& bias,
                           bool has_bias, double alpha, double beta, std::vector<LaunchParam>* params, std::string* what) {
  const Node& n = *k.node;
  const ops::EpilogueActivation act = ops::activation_of_fused(n);
  const bool has_residual = k.inputs.size() > ops::kFusedResidualInput &&
                            k.inputs[ops::kFusedResidualInput].dtype != DType::undefined;
  std::string residual = "mc::gemm::Residual::none";
  if (has_residual) {
    const TensorView& r = k.inputs[ops::kFusedResidualInput];
    const TensorView& y = k.outputs.at(0);
    if (r.shape != y.shape || r.strides != y.strides) {
      throw Error("internal: kernel " + k.id + ": the residual '" + r.value + "' is laid out unlike the output");
    }
    const std::string pos = n.attr_string("residual_position", "");
    if (pos != "before_activation" && pos != "after_activation") {
      throw n.error("attribute 'residual_position' is '" + pos + "', expected before_activation or after_activation");
    }
    residual = "mc::gemm::Residual::" + pos;
  }
  const std::string act_name = ops::activation_name(act.kind);
  *what = std::string(has_bias ? " + bias" : "") + (act.kind != ops::Activation::none ? " + " + act_name : "") +
          (has_residual ? " + residual (" + n.attr_string("residual_position", "") + ")" : "");
  // The fields that differ from the defaults (alpha = beta = 1, no bias or residual, a neutral
  // activation): what this epilogue reads.
  if (alpha != 1.0) params->push_back({"epilogue.alpha", float_literal(alpha)});
  if (has_bias && beta != 1.0) params->push_back({"epilogue.beta", float_literal(beta)});
  if (has_bias) params->push_back({"epilogue.bias", ctx.ptr(k.inputs[ops::kFusedBiasInput], true)});
  if (has_residual) params->push_back({"epilogue.residual", ctx.ptr(k.inputs[ops::kFusedResidualInput], true)});
  switch (act.kind) {
    case ops::Activation::leaky_relu: params->push_back({"epilogue.act.alpha", float_literal(act.alpha)}); break;
    case ops::Activation::hard_sigmoid:
    case ops::Activation::hard_swish:
      params->push_back({"epilogue.act.alpha", float_literal(act.alpha)});
      params->push_back({"epilogue.act.beta", float_literal(act.beta)});
      break;
    case ops::Activation::clip:
      if (act.min) params->push_back({"epilogue.act.min", float_literal(*act.min)});
      if (act.max) params->push_back({"epilogue.act.max", float_literal(*act.max)});
      break;
    default: break;
  }
  return fmt::format("mc::gemm::EpilogueFused<{}, {}, {}, mc::gemm::Act::{}, {}>", T, strides_text(bias),
                     has_bias ? "true" : "false", act_name, residual);
}

// ---- tensor-core tiles ---------------------------------------------------------------------------

int TcTile::smem_bytes(bool fp16_accumulate) const {
  // Per operand the larger staging orientation (k-fast [X][BK + 8] or x-fast [BK][X + 8]), two
  // stages each; or the epilogue's 16 x 24 scratch per warp, whichever is larger.
  auto stage = [&](int x) { return std::max(x * (bk + 8), bk * (x + 8)) * 2; };
  const int staging = 2 * (stage(bm) + stage(bn));
  const int scratch = warps_m * warps_n * 16 * 24 * (fp16_accumulate ? 2 : 4);
  return std::max(staging, scratch);
}

std::string TcTile::name() const {
  return fmt::format("{}x{}x{} w{}x{} {}", bm, bn, bk, warps_m, warps_n, async ? "cp.async" : "register-staged");
}

namespace {

// The tensor-core configurations, largest first (choose_tc_tile's candidates).
constexpr TcTile kTcTiles[] = {
    {128, 128, 32, 2, 4, false}, {128, 64, 32, 2, 2, false}, {64, 128, 32, 2, 2, false},
    {64, 64, 32, 2, 2, false},   {32, 64, 32, 1, 4, false},
};

}  // namespace

TcTile choose_tc_tile(int64_t batch, int64_t M, int64_t N, const Target& target, std::string* why) {
  const int64_t sms = std::max(1, target.sm_count);
  const TcTile* best = nullptr;
  double best_score = -1, best_eff = 0, best_occ = 0;
  int64_t best_blocks = 0;
  for (const TcTile& t : kTcTiles) {
    if (t.smem_bytes(target.fp16_accumulate) > target.smem_per_block) continue;
    const int64_t mt = ceil_div(M, t.bm), nt = ceil_div(N, t.bn), blocks = batch * mt * nt;
    const double eff = static_cast<double>(M * N) / static_cast<double>(mt * t.bm * nt * t.bn);
    const double occ = blocks < sms ? static_cast<double>(blocks) / static_cast<double>(sms)
                                    : static_cast<double>(blocks) / static_cast<double>(ceil_div(blocks, sms) * sms);
    const double reuse = (static_cast<double>(t.bm) * t.bn / (t.bm + t.bn)) / 64.0;  // 128x128: 1
    const double score = eff * occ * reuse;
    if (score > best_score * (1 + 1e-9)) {
      best = &t;
      best_score = score;
      best_eff = eff;
      best_occ = occ;
      best_blocks = blocks;
    }
  }
  if (!best) throw Error("internal: no tensor-core tile fits in " + std::to_string(target.smem_per_block) + " bytes");
  TcTile r = *best;
  r.async = target.sm >= 80;
  if (why) {
    *why = fmt::format("tensor-core tile {} for sm_{}: {} blocks on {} SMs (occupancy {:.2f}), tile efficiency {:.2f}",
                       r.name(), target.sm, best_blocks, sms, best_occ, best_eff);
  }
  return r;
}

std::map<std::string, int64_t> tc_tactic(const TcTile& t, bool fp16_accumulate) {
  return {{"BM", t.bm},           {"BN", t.bn},           {"BK", t.bk},
          {"warps_m", t.warps_m}, {"warps_n", t.warps_n}, {"async", t.async ? 1 : 0},
          {"threads", t.threads()}, {"fp16_accumulate", fp16_accumulate ? 1 : 0}};
}

TcTile tc_tile_of(const Kernel& k, const std::map<std::string, int64_t>& tactic) {
  auto get = [&](const char* key) {
    auto it = tactic.find(key);
    if (it == tactic.end()) throw Error("internal: kernel " + k.id + " (" + k.family + ") has no tactic '" + key + "'");
    return static_cast<int>(it->second);
  };
  TcTile t;
  t.bm = get("BM");
  t.bn = get("BN");
  t.bk = get("BK");
  t.warps_m = get("warps_m");
  t.warps_n = get("warps_n");
  t.async = get("async") != 0;
  return t;
}

std::string plan_tc_archs(Kernel& k, const std::vector<Target>& targets, int64_t batch, int64_t M, int64_t N) {
  std::string first_why;
  k.arch_tactic.clear();
  std::map<int, std::map<std::string, int64_t>> per;
  std::string others;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    std::string why;
    const TcTile t = choose_tc_tile(batch, M, N, targets[i], &why);
    per[targets[i].sm] = tc_tactic(t, targets[i].fp16_accumulate);
    if (i == 0) {
      first_why = why;
      k.tactic = per[targets[i].sm];
    } else if (per[targets[i].sm] != k.tactic) {
      others += "; " + why;
    }
  }
  bool differ = false;
  for (const auto& [sm, tactic] : per) differ = differ || tactic != k.tactic;
  if (differ) k.arch_tactic = per;
  return first_why + others;
}

KernelLaunches tc_launches(const Kernel& k, const std::string& comment,
                           const std::function<std::string(const TcTile&)>& decl, const std::vector<LaunchParam>& params) {
  if (empty_output(k)) return nothing_to_run(comment + ": empty output, nothing to run");
  if (k.arch_tactic.empty()) {
    const TcTile t = tc_tile_of(k, k.tactic);
    return single_launch(Launch{comment + ", tile " + t.name(), decl(t), params});
  }
  KernelLaunches r;
  for (const auto& [sm, tactic] : k.arch_tactic) {
    const TcTile t = tc_tile_of(k, tactic);
    r.launches.push_back(Launch{comment + ", tile " + t.name() + " (sm_" + std::to_string(sm) + ")", decl(t), params, sm});
  }
  return r;
}

int64_t channels_last_pitch(const TensorView& v) {
  int64_t pitch = 0;
  return channels_last_view(v, &pitch) ? pitch : 0;
}

bool aligned16(const TensorView& v) { return v.offset % 16 == 0; }

// ---- GEMM lowering -----------------------------------------------------------------------------

namespace {

[[noreturn]] void refuse(const Kernel& k, const std::string& message, const std::string& hint = {}) {
  refuse_node(k, message, hint);
}

void require_view(const Kernel& k, const std::vector<TensorView>& views, std::size_t i, const char* what) {
  if (i >= views.size() || views[i].dtype == DType::undefined) {
    throw Error("internal: kernel " + k.id + " (" + k.family + ") has no " + what + " view " + std::to_string(i));
  }
}

/// Batch dims with one stride per operand: drops unit dims, merges adjacent dims that chain in
/// every operand, and pads to 3 (leading unit dims).
struct BatchDims {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

void compress_batch(const Kernel& k, BatchDims& b) {
  BatchDims r;
  r.strides.resize(b.strides.size());
  for (std::size_t i = 0; i < b.dims.size(); ++i) {
    if (b.dims[i] == 1) continue;
    bool merge = !r.dims.empty();
    for (std::size_t o = 0; merge && o < b.strides.size(); ++o) merge = r.strides[o].back() == b.strides[o][i] * b.dims[i];
    if (merge) {
      r.dims.back() *= b.dims[i];
      for (std::size_t o = 0; o < b.strides.size(); ++o) r.strides[o].back() = b.strides[o][i];
    } else {
      r.dims.push_back(b.dims[i]);
      for (std::size_t o = 0; o < b.strides.size(); ++o) r.strides[o].push_back(b.strides[o][i]);
    }
  }
  if (r.dims.size() > 3) {
    refuse(k, fmt::format("{} batch dims that do not merge into 3 (the GEMM template's limit)", r.dims.size()),
           "reshape the operands so that at most 3 batch dims remain");
  }
  while (r.dims.size() < 3) {
    r.dims.insert(r.dims.begin(), 1);
    for (auto& s : r.strides) s.insert(s.begin(), 0);
  }
  b = std::move(r);
}

void set_batch(GemmLowering& g, const BatchDims& b, std::vector<MatrixStrides*> operands) {
  for (int i = 0; i < 3; ++i) {
    g.batch[i] = b.dims[i];
    for (std::size_t o = 0; o < operands.size(); ++o) operands[o]->batch[i] = b.strides[o][i];
  }
}

GemmLowering lower_matmul(const Kernel& k) {
  require_view(k, k.inputs, 0, "input");
  require_view(k, k.inputs, 1, "input");
  require_view(k, k.outputs, 0, "output");
  const TensorView &va = k.inputs[0], &vb = k.inputs[1], &vy = k.outputs[0];
  GemmLowering g;
  const std::size_t ra = va.shape.size(), rb = vb.shape.size(), ry = vy.shape.size();
  if (ra == 0 || rb == 0) refuse(k, "MatMul of a scalar");
  // A: [..., M, K] (1-D: [K], M = 1); B: [..., K, N] (1-D: [K], N = 1).
  if (ra == 1) {
    g.M = 1;
    g.K = va.shape[0];
    g.a.row = 0;
    g.a.col = va.strides[0];
  } else {
    g.M = va.shape[ra - 2];
    g.K = va.shape[ra - 1];
    g.a.row = va.strides[ra - 2];
    g.a.col = va.strides[ra - 1];
  }
  if (rb == 1) {
    g.N = 1;
    g.b.row = vb.strides[0];
    g.b.col = 0;
  } else {
    g.N = vb.shape[rb - 1];
    g.b.row = vb.strides[rb - 2];
    g.b.col = vb.strides[rb - 1];
  }
  // Y: batch + [M if A is a matrix] + [N if B is a matrix].
  const std::size_t y_mat = (ra > 1 ? 1 : 0) + (rb > 1 ? 1 : 0);
  if (ry < y_mat) refuse(k, "output rank " + std::to_string(ry) + " is too small for the product");
  g.y.row = ra > 1 ? vy.strides[ry - y_mat] : 0;
  g.y.col = rb > 1 ? vy.strides[ry - 1] : 0;
  const std::size_t nb = ry - y_mat;
  const std::size_t ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
  BatchDims b;
  b.strides.resize(3);
  for (std::size_t i = 0; i < nb; ++i) {
    const int64_t d = vy.shape[i];
    b.dims.push_back(d);
    // Right-aligned operand dims; a missing or unit dim broadcasts (stride 0).
    auto stride = [&](const TensorView& v, std::size_t batch_rank) -> int64_t {
      if (i + batch_rank < nb) return 0;
      const std::size_t j = i + batch_rank - nb;
      return v.shape[j] == 1 ? 0 : v.strides[j];
    };
    b.strides[0].push_back(stride(va, ba));
    b.strides[1].push_back(stride(vb, bb));
    b.strides[2].push_back(vy.strides[i]);
  }
  compress_batch(k, b);
  set_batch(g, b, {&g.a, &g.b, &g.y});
  g.what = fmt::format("{} x {} -> {}", shape_text(va.shape), shape_text(vb.shape), shape_text(vy.shape));
  return g;
}

GemmLowering lower_gemm_op(const Kernel& k) {
  require_view(k, k.inputs, 0, "input");
  require_view(k, k.inputs, 1, "input");
  require_view(k, k.outputs, 0, "output");
  const Node& n = *k.node;
  const TensorView &va = k.inputs[0], &vb = k.inputs[1], &vy = k.outputs[0];
  if (va.shape.size() != 2 || vb.shape.size() != 2 || vy.shape.size() != 2) refuse(k, "Gemm needs 2-D A, B and Y");
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  GemmLowering g;
  g.M = vy.shape[0];
  g.N = vy.shape[1];
  g.K = ta ? va.shape[0] : va.shape[1];
  g.a.row = ta ? va.strides[1] : va.strides[0];
  g.a.col = ta ? va.strides[0] : va.strides[1];
  g.b.row = tb ? vb.strides[1] : vb.strides[0];
  g.b.col = tb ? vb.strides[0] : vb.strides[1];
  g.y.row = vy.strides[0];
  g.y.col = vy.strides[1];
  g.alpha = n.attr_float("alpha", 1.0);
  g.beta = n.attr_float("beta", 1.0);
  std::string c_text;
  if (k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined) {
    const TensorView& vc = k.inputs[2];
    g.has_c = true;
    // C broadcasts (right-aligned) to [M, N].
    const std::size_t rc = vc.shape.size();
    if (rc > 2) refuse(k, "input C has rank " + std::to_string(rc) + ", expected at most 2");
    auto stride = [&](std::size_t dim) -> int64_t {  // dim 0: rows, 1: columns
      if (dim + rc < 2) return 0;
      const std::size_t j = dim + rc - 2;
      return vc.shape[j] == 1 ? 0 : vc.strides[j];
    };
    g.c.row = stride(0);
    g.c.col = stride(1);
    c_text = " + C" + shape_text(vc.shape);
  }
  g.what = fmt::format("{}{} x {}{}{} -> {}", shape_text(va.shape), ta ? "^T" : "", shape_text(vb.shape),
                       tb ? "^T" : "", c_text, shape_text(vy.shape));
  return g;
}

// ---- Einsum ----

struct Equation {
  std::vector<std::string> terms;
  std::string out;
  std::string text;
};

Equation parse_equation(const Kernel& k) {
  const Node& n = *k.node;
  Equation e;
  e.text = n.attr_string("equation", "");
  std::string s;
  for (char c : e.text) {
    if (c != ' ') s += c;
  }
  if (s.find('.') != std::string::npos) refuse(k, "Einsum equation '" + e.text + "' uses an ellipsis");
  const std::size_t arrow = s.find("->");
  const std::string lhs = arrow == std::string::npos ? s : s.substr(0, arrow);
  std::string cur;
  for (char c : lhs) {
    if (c == ',') {
      e.terms.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  e.terms.push_back(cur);
  if (arrow != std::string::npos) {
    e.out = s.substr(arrow + 2);
  } else {
    std::map<char, int> count;
    for (char c : lhs) {
      if (c != ',') ++count[c];
    }
    for (auto [c, m] : count) {
      if (m == 1) e.out += c;
    }
  }
  return e;
}

/// A group of letters (batch, M, N or K) as one strided dim per operand: unit letters dropped,
/// the rest must chain (outer stride = inner stride * inner size) in every operand.
struct Merged {
  int64_t size = 1;
  std::vector<int64_t> strides;  // per operand
};

Merged merge_letters(const Kernel& k, const Equation& e, const std::string& letters, const char* what,
                     const std::map<char, int64_t>& size, const std::vector<std::map<char, int64_t>>& strides) {
  Merged m;
  m.strides.assign(strides.size(), 0);
  bool first = true;
  for (char c : letters) {
    const int64_t d = size.at(c);
    if (d == 1) continue;
    for (std::size_t o = 0; o < strides.size(); ++o) {
      const int64_t s = strides[o].count(c) ? strides[o].at(c) : 0;
      if (!first && m.strides[o] != s * d) {
        refuse(k, "Einsum equation '" + e.text + "': the " + what + " letters '" + letters +
                      "' are not laid out as one dim in every operand, which the GEMM template needs",
               "write the equation so that these letters appear in the same order in every term");
      }
      m.strides[o] = s;
    }
    m.size *= d;
    first = false;
  }
  return m;
}

GemmLowering lower_einsum(const Kernel& k) {
  const Equation e = parse_equation(k);
  require_view(k, k.outputs, 0, "output");
  const TensorView& vy = k.outputs[0];
  if (e.terms.size() != k.inputs.size()) refuse(k, "Einsum equation '" + e.text + "' does not match the inputs");
  std::map<char, int64_t> size;
  // strides[o][letter]: operand o's stride for the letter (summed when a term repeats it).
  std::vector<std::map<char, int64_t>> strides(e.terms.size() + 1);
  for (std::size_t t = 0; t < e.terms.size(); ++t) {
    require_view(k, k.inputs, t, "input");
    const TensorView& v = k.inputs[t];
    if (v.shape.size() != e.terms[t].size()) refuse(k, "Einsum equation '" + e.text + "' does not match the input ranks");
    for (std::size_t i = 0; i < e.terms[t].size(); ++i) {
      size[e.terms[t][i]] = v.shape[i];
      strides[t][e.terms[t][i]] += v.strides[i];
    }
  }
  for (std::size_t i = 0; i < e.out.size(); ++i) strides.back()[e.out[i]] = vy.strides[i];
  GemmLowering g;
  std::vector<std::string> in_shapes;
  for (const TensorView& v : k.inputs) in_shapes.push_back(shape_text(v.shape));
  g.what = fmt::format("'{}': {} -> {}", e.text, fmt::join(in_shapes, ", "), shape_text(vy.shape));

  if (e.terms.size() == 1) {
    // A strided sum: output letters (repeats walk the diagonal), then every other letter summed.
    if (!vy.dense()) throw Error("internal: Einsum kernel " + k.id + " writes a strided output view");
    g.kind = GemmLowering::Kind::strided_sum;
    for (char c : e.out) {
      g.out_dims.push_back(size.at(c));
      g.out_strides.push_back(strides[0].at(c));
    }
    std::string summed;
    for (char c : e.terms[0]) {
      if (e.out.find(c) == std::string::npos && summed.find(c) == std::string::npos) {
        summed += c;
        g.sum_dims.push_back(size.at(c));
        g.sum_strides.push_back(strides[0].at(c));
      }
    }
    return g;
  }
  if (e.terms.size() != 2) {
    refuse(k, "Einsum equation '" + e.text + "' has " + std::to_string(e.terms.size()) +
                  " operands; modelc runs one operand (a strided sum) or two (a batched matmul)",
           "split the equation into pairwise Einsum nodes");
  }
  const std::string &ta = e.terms[0], &tb = e.terms[1];
  for (const std::string& t : {ta, tb}) {
    for (char c : t) {
      if (std::count(t.begin(), t.end(), c) > 1) {
        refuse(k, "Einsum equation '" + e.text + "' repeats '" + std::string(1, c) +
                      "' within a term (a diagonal), which is not a batched matmul");
      }
    }
  }
  std::string batch, rows, cols, depth;
  for (char c : e.out) {
    const bool in_a = ta.find(c) != std::string::npos, in_b = tb.find(c) != std::string::npos;
    (in_a && in_b ? batch : in_a ? rows : cols) += c;
  }
  for (char c : ta) {
    if (e.out.find(c) != std::string::npos) continue;
    if (tb.find(c) == std::string::npos) {
      refuse(k, "Einsum equation '" + e.text + "' sums '" + std::string(1, c) +
                    "' over the first operand alone, which is not a batched matmul",
             "sum that letter out with a separate one-operand Einsum or ReduceSum first");
    }
    depth += c;
  }
  for (char c : tb) {
    if (e.out.find(c) == std::string::npos && ta.find(c) == std::string::npos) {
      refuse(k, "Einsum equation '" + e.text + "' sums '" + std::string(1, c) +
                    "' over the second operand alone, which is not a batched matmul",
             "sum that letter out with a separate one-operand Einsum or ReduceSum first");
    }
  }
  // strides: [0] A, [1] B, [2] Y.
  const Merged m = merge_letters(k, e, rows, "row (M)", size, strides);
  const Merged n = merge_letters(k, e, cols, "column (N)", size, strides);
  const Merged kk = merge_letters(k, e, depth, "summed (K)", size, strides);
  g.M = m.size;
  g.N = n.size;
  g.K = kk.size;
  g.a.row = m.strides[0];
  g.a.col = kk.strides[0];
  g.b.row = kk.strides[1];
  g.b.col = n.strides[1];
  g.y.row = m.strides[2];
  g.y.col = n.strides[2];
  BatchDims b;
  b.strides.resize(3);
  for (char c : batch) {
    b.dims.push_back(size.at(c));
    for (int o = 0; o < 3; ++o) b.strides[o].push_back(strides[o].at(c));
  }
  compress_batch(k, b);
  set_batch(g, b, {&g.a, &g.b, &g.y});
  return g;
}

}  // namespace

GemmLowering lower_gemm(const Kernel& k) {
  if (!k.node) throw Error("internal: gemm kernel " + k.id + " has no node");
  const std::string op = producer_op(*k.node);
  GemmLowering g;
  if (op == "MatMul") {
    g = lower_matmul(k);
    if (is_fused(*k.node) && k.inputs.size() > 2 && k.inputs[2].dtype != DType::undefined) {
      // FusedMatMul's bias: one value per element of Y's last dim (n, or m when B is a vector).
      const TensorView& vb = k.inputs[2];
      if (vb.shape.size() != 1) refuse(k, "the bias of a FusedMatMul must be 1-D");
      g.has_c = true;
      (k.inputs[1].shape.size() == 1 ? g.c.row : g.c.col) = vb.strides[0];
    }
  } else if (op == "Gemm") {
    g = lower_gemm_op(k);
  } else if (op == "Einsum") {
    g = lower_einsum(k);
  } else {
    throw Error("internal: the gemm family does not run " + op + " (node '" + k.node->name() + "')");
  }
  // Offsets inside a matrix are 32-bit in the templates.
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  for (const auto* views : {&k.inputs, &k.outputs}) {
    for (const TensorView& v : *views) {
      if (v.dtype != DType::undefined && v.numel() > kMax) {
        refuse(k, "tensor '" + v.value + "' has " + std::to_string(v.numel()) + " elements; the templates index with 32 bits");
      }
    }
  }
  if (g.kind == GemmLowering::Kind::gemm && g.batch_count() > 65535) {
    refuse(k, fmt::format("{} batched products exceed the grid's z limit (65535)", g.batch_count()));
  }
  return g;
}

// ---- the family --------------------------------------------------------------------------------

namespace {


std::string ints_text(const std::vector<int64_t>& v) { return fmt::format("mc::gemm::Ints<{}>", fmt::join(v, ", ")); }

/// Why a GEMM cannot run on the tensor-core template ("" when it can). Documented thresholds:
/// float16 A and B (FP16 storage), at least kTinyGemmMacs multiply-adds per product, 16-byte
/// aligned operands, one element type for the epilogue's operands (C / bias and residual).
std::string gemm_fallback(const Kernel& k, const GemmLowering& g) {
  if (g.kind == GemmLowering::Kind::strided_sum) return "one-operand Einsum (a strided sum)";
  const DType ta = k.inputs[g.a_input].dtype, tb = k.inputs[g.b_input].dtype, ty = k.outputs[0].dtype;
  for (DType t : {ta, tb, ty}) {
    if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return "integer data";
  }
  if (ta == DType::float32 || tb == DType::float32) return "FP32 storage";
  if (ta != DType::float16 || tb != DType::float16) return std::string(dtype_name(ta != DType::float16 ? ta : tb)) + " storage";
  if (g.M * g.N * g.K < kTinyGemmMacs) return fmt::format("tiny GEMM: {}x{}x{}", g.M, g.N, g.K);
  if (!aligned16(k.inputs[g.a_input]) || !aligned16(k.inputs[g.b_input]) || !aligned16(k.outputs[0])) {
    return "an operand not 16-byte aligned";
  }
  DType epi = DType::undefined;
  for (std::size_t i = 2; i < k.inputs.size(); ++i) {
    if (k.inputs[i].dtype == DType::undefined) continue;
    if (epi != DType::undefined && k.inputs[i].dtype != epi) return "bias and residual of different types";
    epi = k.inputs[i].dtype;
  }
  return "";
}

void plan_gemm(Kernel& k, const Target& t) {
  const GemmLowering g = lower_gemm(k);
  if (g.kind == GemmLowering::Kind::strided_sum) {
    k.tactic["threads"] = 128;
    k.note = "equation '" + k.node->attr_string("equation", "") + "': a strided sum, one thread per output element";
    return;
  }
  std::string why;
  const TileConfig tile = choose_tile(g.batch_count(), g.M, g.N, t, &why);
  check_grid(k, tile, g.M);
  record_tile(k, tile);
  const std::string equation =
      producer_op(*k.node) == "Einsum" ? "equation '" + k.node->attr_string("equation", "") + "': " : "";
  k.note = fmt::format("{}batch {} M {} N {} K {}; {}", equation, g.batch_count(), g.M, g.N, g.K, why);
}

void plan_gemm_archs(Kernel& k, const std::vector<Target>& targets) {
  const GemmLowering g = lower_gemm(k);
  k.fallback_reason = gemm_fallback(k, g);
  k.arch_tactic.clear();
  const std::string equation =
      producer_op(*k.node) == "Einsum" ? "equation '" + k.node->attr_string("equation", "") + "': " : "";
  if (k.fallback_reason.empty()) {
    k.engine = "tensor_core";
    const std::string why = plan_tc_archs(k, targets, g.batch_count(), g.M, g.N);
    for (const auto& [sm, tactic] : k.arch_tactic) check_grid(k, TileConfig{static_cast<int>(tactic.at("BM")), 64, 8, 4, 8}, g.M);
    check_grid(k, TileConfig{static_cast<int>(k.tactic.at("BM")), 64, 8, 4, 8}, g.M);
    k.note = fmt::format("{}batch {} M {} N {} K {}; {}", equation, g.batch_count(), g.M, g.N, g.K, why);
    return;
  }
  k.engine = "simt";
  plan_gemm(k, targets.front());
  k.note += " (SIMT: " + k.fallback_reason + ")";
}

/// The element type the epilogue's operands (C / bias, residual) are read as: theirs, else Y's.
std::string epilogue_type(const Kernel& k, const EmitContext& ctx) {
  for (std::size_t i = 2; i < k.inputs.size(); ++i) {
    if (k.inputs[i].dtype != DType::undefined) return ctx.ctype(k.inputs[i].dtype);
  }
  return ctx.ctype(k.outputs[0].dtype);
}

KernelLaunches emit_gemm(const Kernel& k, const EmitContext& ctx) {
  const GemmLowering g = lower_gemm(k);
  const Node& n = *k.node;
  const TensorView& vy = k.outputs[0];
  const bool tc = k.engine == "tensor_core";
  const std::string T = tc ? epilogue_type(k, ctx) : ctx.ctype(vy.dtype), Acc = acc_type(vy.dtype);
  if (g.kind == GemmLowering::Kind::strided_sum) {
    const std::string type = fmt::format(
        "mc::gemm::StridedSum<{}, {}, mc::gemm::StridedIndex<{}, {}>,\n    mc::gemm::StridedIndex<{}, {}>>", T, Acc,
        ints_text(g.out_dims), ints_text(g.out_strides), ints_text(g.sum_dims), ints_text(g.sum_strides));
    return linear_launch(k, fmt::format("{} '{}' {}, strided sum", n.op(), n.name(), g.what), type,
                         {{"X", ctx.ptr(k.inputs[0], true)}, {"Y", ctx.ptr(vy, false)}});
  }
  std::vector<LaunchParam> params = {{"A", ctx.ptr(k.inputs[g.a_input], true)},
                                     {"B", ctx.ptr(k.inputs[g.b_input], true)},
                                     {"Y", ctx.ptr(vy, false)}};
  std::string epilogue, fused;
  if (is_fused(n)) {
    epilogue = fused_epilogue(k, ctx, T, g.c, g.has_c, g.alpha, g.beta, &params, &fused);
  } else if (g.has_c || g.alpha != 1.0) {
    epilogue = fmt::format("mc::gemm::EpilogueLinear<{}, {}, {}>", T, strides_text(g.c), g.has_c ? "true" : "false");
    // The fields that differ from the defaults (alpha = beta = 1, no C).
    if (g.alpha != 1.0) params.push_back({"epilogue.alpha", float_literal(g.alpha)});
    if (g.has_c && g.beta != 1.0) params.push_back({"epilogue.beta", float_literal(g.beta)});
    if (g.has_c) params.push_back({"epilogue.C", ctx.ptr(k.inputs[g.c_input], true)});
  } else {
    epilogue = "mc::gemm::EpilogueIdentity";
  }
  if (tc) {
    const std::string TY = ctx.ctype(vy.dtype);
    const std::string TAcc = k.tactic.count("fp16_accumulate") && k.tactic.at("fp16_accumulate") ? "__half" : "float";
    auto decl = [&](const TcTile& t) {
      return fmt::format(
          "mc::tc::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
          "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
          "    mc::tc::Tile<{}, {}, {}, {}, {}, {}>, {}>",
          TY, TAcc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a), strides_text(g.b),
          strides_text(g.y), t.bm, t.bn, t.bk, t.warps_m, t.warps_n, t.async ? "true" : "false", epilogue);
    };
    return tc_launches(k, fmt::format("{} '{}' {}{}, tensor cores", n.op(), n.name(), g.what, fused), decl, params);
  }
  const TileConfig tile = tile_of(k);
  const std::string type = fmt::format(
      "mc::gemm::Gemm<{}, {}, mc::gemm::Shape<{}, {}, {}, {}, {}, {}>,\n"
      "    /*A*/ {}, /*B*/ {}, /*Y*/ {},\n"
      "    mc::gemm::Tile<{}, {}, {}, {}, {}>, {}>",
      T, Acc, g.batch[0], g.batch[1], g.batch[2], g.M, g.N, g.K, strides_text(g.a), strides_text(g.b),
      strides_text(g.y), tile.bm, tile.bn, tile.bk, tile.tm, tile.tn, epilogue);
  return linear_launch(k, fmt::format("{} '{}' {}{}, SIMT tile {}", n.op(), n.name(), g.what, fused, tile.name()), type,
                       std::move(params));
}

}  // namespace

MODELC_REGISTER_FAMILY(gemm_family)({"gemm", {"gemm.cuh", "conv.cuh", "tensor_core.cuh"},
                                     [](Kernel& k, const Target& t) { plan_gemm_archs(k, {t}); }, emit_gemm,
                                     plan_gemm_archs});

}  // namespace modelc::linear

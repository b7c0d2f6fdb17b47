// compiler/schedule/winograd.cpp — see winograd.h.
#include "schedule/winograd.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "schedule/cost_model.h"
#include "schedule/linear_plans.h"
#include "schedule/tactics.h"
#include "support/error.h"

namespace modelc::linear {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

/// Registers per thread of the transforms, as ptxas reports them for tiny_cnn's convolutions on
/// sm_75 and sm_90 (report.json resources; ctest codegen_resources_tiny_cnn_winograd): the input
/// transform holds a 4x4 patch of 8 channels in FP32 (158-168), the output transform 2 x 4 x 8
/// partial sums (72-75).
constexpr int kInputTransformRegisters = 168;
constexpr int kOutputTransformRegisters = 76;

}  // namespace

std::string winograd_unfit(const Kernel& k, const ConvGeometry& g) {
  if (g.spatial != 2 || g.kernel != std::array<int64_t, 3>{1, 3, 3}) return "not a 2-D 3x3 filter";
  if (g.stride != std::array<int64_t, 3>{1, 1, 1}) return "stride " + std::to_string(std::max(g.stride[1], g.stride[2]));
  if (g.dilation != std::array<int64_t, 3>{1, 1, 1}) return "dilation";
  if (g.G != 1) return "groups";
  if (!k.ranges.empty()) return "horizontally fused";
  if (tc_conv_depth(k).compact) return "compact K (fewer than 8 channels, or X a channel slice of a wider buffer)";
  if (k.inputs[0].dtype != DType::float16) return "BF16 storage (the transforms stage FP16)";
  return "";
}

WinogradPlan winograd_plan(const Kernel& k, const ConvGeometry& g) {
  WinogradPlan p;
  p.tiles = g.N * ceil_div(g.out[1], 2) * ceil_div(g.out[2], 2);
  p.x_pitch = channels_last_pitch(k.inputs[0]);
  if (p.x_pitch == 0 || p.x_pitch % 8 != 0) {
    throw Error("internal: kernel " + k.id + " runs Winograd without a channels-last input of pitch 8k");
  }
  p.m_pitch = round_up(g.M, 8);
  p.v_bytes = round_up(16 * p.tiles * p.x_pitch * 2, 256);
  p.m_offset = p.v_bytes;
  p.m_bytes = 16 * p.tiles * p.m_pitch * 4;
  p.u_bytes = 16 * g.M * p.x_pitch * 2;
  return p;
}

Estimate winograd_estimate(const Kernel& k, const TcTile& gemm, const Target& t) {
  const ConvGeometry g = conv_geometry(k);
  const WinogradPlan p = winograd_plan(k, g);
  const double x_bytes = distinct_bytes(k.inputs[0]), w_bytes = distinct_bytes(k.inputs[1]);
  const double v = static_cast<double>(p.v_bytes), m = static_cast<double>(p.m_bytes);
  // V and M go from one launch to the next through L2 while both fit in half of it.
  const bool in_l2 = v + m <= static_cast<double>(t.l2_bytes) / 2;
  KernelWork in;  // 16 stores of 8 channels per tile, each value 4 adds in each direction
  in.flops = 16.0 * 8 * static_cast<double>(p.tiles * p.x_pitch);
  in.bytes = x_bytes + (in_l2 ? 0 : v);
  in.l2_bytes = in_l2 ? v : 0;
  in.blocks = ceil_div(p.tiles * p.x_pitch / 8, WinogradTactic::kTransformThreads);
  in.threads = WinogradTactic::kTransformThreads;
  in.regs_per_thread = kInputTransformRegisters;
  KernelWork products = tc_gemm_work(16, p.tiles, g.M, g.C, static_cast<double>(p.u_bytes) + (in_l2 ? 0 : v + m), gemm);
  products.l2_bytes = in_l2 ? v + m : 0;
  KernelWork out;  // 4 outputs from 16 values per channel: 24 adds, plus the epilogue
  out.flops = 28.0 * static_cast<double>(p.tiles * g.M);
  out.bytes = (in_l2 ? 0 : m) + std::max(0.0, kernel_bytes(k) - x_bytes - w_bytes);
  out.l2_bytes = in_l2 ? m : 0;
  out.blocks = ceil_div(p.tiles * p.m_pitch / 8, WinogradTactic::kTransformThreads);
  out.threads = WinogradTactic::kTransformThreads;
  out.regs_per_thread = kOutputTransformRegisters;
  return sum_estimates({estimate(in, t), estimate(products, t), estimate(out, t)});
}

std::string plan_winograd(Kernel& k, const ConvGeometry& g, const std::vector<Target>& targets) {
  if (!winograd_unfit(k, g).empty() || targets.front().winograd == Target::Winograd::never) return "";
  const WinogradPlan p = winograd_plan(k, g);
  std::map<int, Tactic> per;
  std::string versus;
  bool wins = true;
  for (const Target& t : targets) {
    const TcTile tile =
        choose_tc_tile({16, p.tiles, g.M, g.C, static_cast<double>(p.v_bytes + p.u_bytes + p.m_bytes), false}, t);
    const Estimate wino = winograd_estimate(k, tile, t), direct = estimate_kernel(k, t);
    per[t.sm] = WinogradTactic{tile};
    wins = wins && wino.us < direct.us * (1 - kWinogradMargin);
    versus += fmt::format("{}sm_{}: {:.2f} us against {:.2f} us direct", versus.empty() ? "" : ", ", t.sm, wino.us,
                          direct.us);
  }
  const bool forced = targets.front().winograd == Target::Winograd::always;
  if (!wins && !forced) {
    return fmt::format("not Winograd F(2x2,3x3) ({}: not {:.0f}% faster)", versus, kWinogradMargin * 100);
  }
  k.engine = Engine::winograd;
  k.tactic = per.at(targets.front().sm);
  const bool differ = std::any_of(per.begin(), per.end(), [&](const auto& e) { return e.second != k.tactic; });
  k.arch_tactic = differ ? per : std::map<int, Tactic>{};
  k.workspace_bytes = p.workspace_bytes();
  ConvPlan plan = plan_of<ConvPlan>(k);  // the printer lays the workspace out by it
  plan.winograd = p;
  k.plan = make_plan("conv", std::move(plan));
  const TcTile first = std::get<WinogradTactic>(k.tactic).gemm;
  return fmt::format("Winograd F(2x2,3x3){}: {} tiles of 2x2, 16 GEMMs of {}x{}x{} on tile {} ({})",
                     forced ? " (--winograd always)" : "", p.tiles, p.tiles, g.M, g.C, first.name(), versus);
}

Tensor winograd_weights(const Tensor& ohwi) {
  const Shape& s = ohwi.shape();
  if (s.size() != 4 || s[1] != 3 || s[2] != 3) {
    throw Error("internal: Winograd weights from OHWI weights of shape " + shape_text(s));
  }
  const int64_t M = s[0], P = s[3];
  const std::vector<double> w = ohwi.to_f64();
  std::vector<double> u(static_cast<std::size_t>(16 * M * P));
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
  constexpr double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t c = 0; c < P; ++c) {
      auto g = [&](int kh, int kw) { return w[static_cast<std::size_t>(((m * 3 + kh) * 3 + kw) * P + c)]; };
      double gg[4][3];  // G g
      for (int i = 0; i < 4; ++i) {
        for (int kw = 0; kw < 3; ++kw) gg[i][kw] = G[i][0] * g(0, kw) + G[i][1] * g(1, kw) + G[i][2] * g(2, kw);
      }
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const double v = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];  // (G g) G^T
          u[static_cast<std::size_t>(((4 * i + j) * M + m) * P + c)] = v;
        }
      }
    }
  }
  return Tensor::from_f64(ohwi.dtype(), {16, M, P}, u);
}

}  // namespace modelc::linear

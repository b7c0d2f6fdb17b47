// compiler/schedule/family_work.cpp — each family's work for a tactic, for the cost model.
#include "schedule/family_work.h"

#include <algorithm>

#include "schedule/channel_norm.h"
#include "schedule/conv_tiled.h"
#include "schedule/hopper.h"
#include "schedule/linear_plans.h"
#include "schedule/reduction.h"
#include "schedule/rnn.h"
#include "schedule/small_m.h"

namespace modelc::work {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

double out_numel(const Kernel& k) { return k.outputs.empty() ? 0.0 : static_cast<double>(k.outputs[0].numel()); }

// The blocks of a direct kernel: one thread per output.
void direct(KernelWork& w, const Kernel& k, const DirectTactic& t, double flops) {
  w.flops = flops;
  w.blocks = ceil_div(k.outputs.empty() ? 0 : k.outputs[0].numel(), t.threads);
  w.threads = t.threads;
}

// A reduction of `rows` rows (with a ReductionTile), else the default.
void reduction_rows(KernelWork& w, const Kernel& k, const Tactic& tactic, int64_t rows) {
  if (const ReductionTile* t = std::get_if<ReductionTile>(&tactic)) return reduction_work(w, k, *t, rows);
  default_work(w, k, tactic);
}

// An implicit-GEMM convolution of geometry g on tensor cores, K = its GEMM depth.
void tc_conv(KernelWork& w, const linear::ConvGeometry& g, int64_t K, const TcTile& t) {
  w = tc_gemm_work(1, g.N * g.out_pixels(), g.M, K, w.bytes, t);
  w.flops = 2.0 * static_cast<double>(g.N * g.out_pixels() * g.M * g.Cg() * g.k_size());
}

}  // namespace

void gemm(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const linear::GemmLowering& g = plan_of<linear::GemmPlan>(k).gemm;
  if (const TcTile* t = std::get_if<TcTile>(&tactic)) {
    w = tc_gemm_work(g.batch_count(), g.M, g.N, g.K, w.bytes, *t);
  } else if (const HopperTile* t = std::get_if<HopperTile>(&tactic)) {
    w = hopper_gemm_work(g.batch_count(), g.M, g.N, g.K, w.bytes, *t);
  } else if (const SmallMTile* t = std::get_if<SmallMTile>(&tactic)) {
    w = linear::small_m_gemm_work(g.batch_count(), g.M, g.N, g.K, w.bytes, *t);
  } else if (const GemvTactic* t = std::get_if<GemvTactic>(&tactic)) {
    gemv_work(w, g.batch_count(), g.M, g.N, g.K, g.b.row == 1 && g.b.col != 1, k.outputs[0].dtype, *t);
  } else if (const TileConfig* t = std::get_if<TileConfig>(&tactic)) {
    simt_gemm_work(w, g.batch_count(), g.M, g.N, g.K, *t);
    w.flops = 2.0 * static_cast<double>(g.batch_count() * g.M * g.N * g.K);
  } else {
    default_work(w, k, tactic);  // a strided sum: one add per input element
  }
  if (k.row_norm.active) {
    // The panel tails (fuse_row_norm): each panel's last block reads its rows back from L2 after a
    // ticket's round trip; the normalized rows and gamma / beta are in `bytes` already.
    w.l2_bytes += static_cast<double>(k.outputs.at(0).nbytes());
    w.handoffs += 1;
  }
}

void conv(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const linear::ConvPlan& c = plan_of<linear::ConvPlan>(k);
  const linear::ConvGeometry& g = c.geometry;
  if (const TcTile* t = std::get_if<TcTile>(&tactic)) {
    if (g.G > 1) return linear::grouped_work(w, g, *t, c.x_pitch);  // tc::ConvGrouped
    tc_conv(w, g, c.depth.K, *t);
    if (c.prologue.active()) {
      // The prologue's operands (FP32 scale and shift, the gate) are inputs 4..6: in w.bytes once
      // (kernel_bytes). Each block reads them again for every k of its A slices: per k, 8 bytes of
      // scale and shift and the gate's 2, from L2 (L1 at best).
      const double per_k = (c.prologue.affine ? 8.0 : 0.0) + (c.prologue.gate ? 2.0 : 0.0);
      w.l2_bytes += static_cast<double>(w.blocks) * static_cast<double>(c.depth.K) * per_k;
    }
  } else if (const HopperTile* t = std::get_if<HopperTile>(&tactic)) {
    w = linear::hopper_conv_work(g, c.x_pitch, w.bytes, *t);
  } else if (const TileConfig* t = std::get_if<TileConfig>(&tactic)) {
    simt_gemm_work(w, g.G, g.Mg(), g.N * g.out_pixels(), g.Cg() * g.k_size(), *t);
    w.flops = 2.0 * static_cast<double>(g.G * g.Mg() * g.N * g.out_pixels() * g.Cg() * g.k_size());
  } else {
    default_work(w, k, tactic);
  }
}

void conv_int8(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const linear::Int8ConvPlan& c = plan_of<linear::Int8ConvPlan>(k);
  if (const TcTile* t = std::get_if<TcTile>(&tactic)) return tc_conv(w, c.geometry, c.depth.K, *t);
  if (const HopperTile* t = std::get_if<HopperTile>(&tactic)) {
    w = linear::hopper_conv_work(c.geometry, c.x_pitch, w.bytes, *t);
    return;
  }
  default_work(w, k, tactic);
}

void gemm_int8(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const linear::Int8Gemm& g = plan_of<linear::Int8GemmPlan>(k).gemm;
  if (const TcTile* t = std::get_if<TcTile>(&tactic)) {
    w = tc_gemm_work(1, g.M, g.N, g.K, w.bytes, *t);
    return;
  }
  if (const HopperTile* t = std::get_if<HopperTile>(&tactic)) {
    w = hopper_gemm_work(1, g.M, g.N, g.K, w.bytes, *t);
    return;
  }
  default_work(w, k, tactic);
}

void conv_depthwise(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  if (const DepthwiseTactic* d = std::get_if<DepthwiseTactic>(&tactic)) return linear::depthwise_tiled_work(w, k, *d);
  const DirectTactic* t = std::get_if<DirectTactic>(&tactic);
  if (!t) return default_work(w, k, tactic);
  const linear::ConvGeometry& g = plan_of<linear::DirectConvPlan>(k).geometry;
  direct(w, k, *t, 2.0 * out_numel(k) * static_cast<double>(g.k_size()));
}

void conv_transpose(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const DirectTactic* t = std::get_if<DirectTactic>(&tactic);
  if (!t) return default_work(w, k, tactic);
  const linear::ConvGeometry& g = plan_of<linear::DirectConvPlan>(k).geometry;
  direct(w, k, *t, 2.0 * static_cast<double>(g.N * g.C * g.in_size() * g.Mg() * g.k_size()));
}

void pool(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const DirectTactic* t = std::get_if<DirectTactic>(&tactic);
  if (!t || k.inputs.empty()) return default_work(w, k, tactic);
  const linear::PoolPlan& p = plan_of<linear::PoolPlan>(k);
  if (!p.global) return direct(w, k, *t, out_numel(k) * static_cast<double>(p.geometry.k_size()));
  direct(w, k, *t, static_cast<double>(k.inputs[0].numel()));  // one add (compare) per input
  // A global pool runs a thread per plane channels-last, a warp per plane NCHW (templates/pool.cuh).
  if (linear::channels_last_pitch(k.inputs[0]) == 0) w.blocks = ceil_div(k.outputs[0].numel(), t->threads / 32);
}

void qlinear(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  default_work(w, k, tactic);
  if (std::holds_alternative<DirectTactic>(tactic) && k.flops > 0) w.flops = static_cast<double>(k.flops);
}

void rnn(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const DirectTactic* t = std::get_if<DirectTactic>(&tactic);
  if (!t) return default_work(w, k, tactic);
  const rnn::RnnKernel& r = plan_of<rnn::RnnKernel>(k);
  w.flops = static_cast<double>(k.flops);
  w.blocks = r.blocks();
  w.threads = t->threads;
  w.smem_bytes = static_cast<int>(r.smem_bytes);
  w.k_slices = r.p.seq;  // each step waits for its loads of R and XW
}

void elementwise(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  default_work(w, k, tactic);
  w.flops = static_cast<double>(std::max<std::size_t>(k.nodes.size(), 1)) * numel_of_outputs(k);
}

void softmax(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  reduction_rows(w, k, tactic, plan_of<reduction::SoftmaxPlan>(k).split.rows());
}
void layernorm(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  reduction_rows(w, k, tactic, plan_of<reduction::NormPlan>(k).split.rows());
}
void instancenorm(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  reduction_rows(w, k, tactic, plan_of<reduction::NormPlan>(k).split.rows());
}
void groupnorm(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  reduction_rows(w, k, tactic, plan_of<reduction::GroupNormPlan>(k).split.rows());
}
void topk(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  reduction_rows(w, k, tactic, reduction::topk_layout(k).split.rows());
}

}  // namespace modelc::work

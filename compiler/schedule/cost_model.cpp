#include "schedule/cost_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "schedule/families.h"
#include "schedule/winograd.h"
#include "support/error.h"

namespace modelc {

namespace {

// ---- the model's constants --------------------------------------------------------------------

/// Launch overhead per kernel launch, in microseconds: back-to-back launches in a replayed CUDA
/// graph (what the emitted program's --bench measures) cost about 1 us each; stream launches
/// without a graph cost 2-3 us.
constexpr double kLaunchUs = 1.0;
/// A global load's latency under load, ns (DRAM ~500-700 cycles at 1.4-2 GHz on the parts of
/// target.cpp; L2 hits are faster, so this is the pessimistic end for weights read once).
constexpr double kMemoryLatencyNs = 400;
/// The issue cost of one K slice beyond its loads, in cycles: the barrier, the address arithmetic,
/// the fragment loads that cannot overlap the previous slice's MMAs.
constexpr double kSliceOverheadCycles = 64;
/// An SM has 4 sub-partitions, each with its own tensor cores: a warp per sub-partition issues
/// back-to-back MMAs on independent accumulators, so 4 resident warps reach the SM's tensor rate;
/// FP32 FMAs (4-cycle latency, one accumulator chain per output) need 8.
constexpr int kTensorCoreWarpsForPeak = 4;
constexpr int kSimtWarpsForPeak = 8;
/// Memory round trips of one in-launch hand-off between blocks (a small-M tile's split waiting on
/// the previous split's ticket): the waiting block's poll sees the ticket, it loads the partial
/// sums from L2, and its fence publishes its own sum before it sets the next ticket.
constexpr double kHandoffRoundTrips = 3;
/// One SM can draw about this many times its even share (bandwidth / SMs) of DRAM bandwidth, so
/// a kernel on few SMs is slower than bytes / bandwidth by SMs / (active SMs x this).
constexpr double kSmBandwidthShare = 4;
/// L2 serves the SMs at about this many times the DRAM rate (chips and cheese, "Nvidia's H100:
/// Funny L2, and Tons of Bandwidth", 2023: L2 bandwidth measured at several times VRAM's on H100
/// and A100): the rate of KernelWork::l2_bytes, data the previous launch left in L2.
constexpr double kL2BandwidthRatio = 3;
/// Registers of a tensor-core thread besides its accumulators (fragments, staging addresses,
/// loop state): ptxas reports 60-90 for the WMMA tiles (report.json "resources").
constexpr int kTcBaseRegisters = 64;
/// Registers of a SIMT GEMM thread besides its TM x TN accumulators and TM + TN fragment values.
constexpr int kSimtBaseRegisters = 32;
/// templates/gemv.cuh Gemv::kChunkBytes: the most shared memory A's rows take at once.
constexpr int64_t kGemvChunkBytes = 16384;
/// Registers of every other kernel (grid-stride loops, direct and reduction kernels).
constexpr int kPlainRegisters = 32;
/// Shared memory the driver reserves per resident block (sm_80 and newer; 0 on sm_75 — counted
/// on every arch, a 1 KB error at most).
constexpr int kReservedSmemPerBlock = 1024;
/// templates/tensor_index.cuh: threads per block and most blocks of a grid-stride loop.
constexpr int64_t kGridStrideBlock = 256, kGridStrideMaxBlocks = 4096;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

double numel_of_outputs(const Kernel& k) {
  double n = 0;
  for (const TensorView& v : k.outputs) {
    if (v.dtype != DType::undefined) n += static_cast<double>(v.numel());
  }
  return n;
}

double kernel_bytes(const Kernel& k) {
  double b = 0;
  for (const TensorView& v : k.inputs) {
    if (v.dtype != DType::undefined) b += distinct_bytes(v);
  }
  for (const TensorView& v : k.outputs) {
    if (v.dtype != DType::undefined) b += distinct_bytes(v);
  }
  return b;
}

namespace {

int simt_registers(const TileConfig& t) {
  return std::min(255, kSimtBaseRegisters + t.tm * t.tn + t.tm + t.tn);
}

}  // namespace

void simt_gemm_work(KernelWork& w, int64_t groups, int64_t M, int64_t N, int64_t K, const TileConfig& t) {
  w.engine = Engine::simt;
  w.blocks = groups * ceil_div(M, t.bm) * ceil_div(N, t.bn);
  w.threads = t.threads();
  w.regs_per_thread = simt_registers(t);
  w.k_slices = ceil_div(K, t.bk);
  w.executed_flops = 2.0 * static_cast<double>(w.blocks) * t.bm * t.bn * static_cast<double>(w.k_slices * t.bk);
}

// Grid ceil(N / columns) x batch; shared memory: A's rows in chunks of at most kGemvChunkBytes (a
// multiple of 32 V elements, V = 16 bytes of T), plus the K split's FP32 partial sums; each chunk is
// staged behind a barrier before B streams through it (a K slice each). Registers: the thread's
// sums (M, or M x V for an N-contiguous B) and V values of B.
void gemv_work(KernelWork& w, int64_t batch, int64_t M, int64_t N, int64_t K, bool k_contiguous, DType out,
               const GemvTactic& t) {
  const int64_t size = dtype_size(out), v = 16 / size;
  const int64_t sums = k_contiguous ? M : M * v;
  const int64_t limit = kGemvChunkBytes / (M * size) / (32 * v) * (32 * v);
  const int64_t chunk = std::min(std::max(ceil_div(K, v), int64_t{1}) * v, limit);
  w.engine = Engine::gemv;
  w.flops = 2.0 * static_cast<double>(batch * M * N * K);
  w.blocks = batch * ceil_div(N, t.columns);
  w.threads = t.threads();
  w.smem_bytes = static_cast<int>(M * chunk * size + (t.k_split > 1 ? sums * 32 * (t.warps / t.k_split) * 4 : 0));
  w.regs_per_thread = static_cast<int>(std::min<int64_t>(255, kSimtBaseRegisters + sums + v));
  w.k_slices = ceil_div(K, chunk);
}

void reduction_work(KernelWork& w, const Kernel& k, const ReductionTile& t, int64_t rows) {
  w.flops = k.inputs.empty() ? 0.0 : static_cast<double>(k.inputs[0].numel());
  w.blocks = ceil_div(rows, std::max(t.threads / std::max(t.group, 1), 1));
  w.threads = t.threads;
}

void default_work(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const int64_t n = k.outputs.empty() ? 0 : k.outputs[0].numel();
  if (const DirectTactic* t = std::get_if<DirectTactic>(&tactic)) {
    w.flops = k.inputs.empty() ? 0.0 : static_cast<double>(k.inputs[0].numel());  // e.g. a strided sum: one add per input
    w.blocks = ceil_div(n, t->threads);
    w.threads = t->threads;
    return;
  }
  if (const ReductionTile* t = std::get_if<ReductionTile>(&tactic)) return reduction_work(w, k, *t, n);
  if (std::holds_alternative<TcTile>(tactic) || std::holds_alternative<TileConfig>(tactic) ||
      std::holds_alternative<GemvTactic>(tactic) || std::holds_alternative<HopperTile>(tactic) ||
      std::holds_alternative<SmallMTile>(tactic)) {
    throw Error("internal: kernel " + k.id + " (" + k.family_name() + ") has a GEMM-shaped tactic and its family no work for it");
  }
  // Grid-stride loops (data movement; resize has no tactic of its own): no arithmetic.
  const GridStrideTactic* gs = std::get_if<GridStrideTactic>(&tactic);
  w.flops = 0;
  w.threads = gs ? gs->block : static_cast<int>(kGridStrideBlock);
  w.blocks = gs && gs->grid ? *gs->grid : std::clamp<int64_t>(ceil_div(n, kGridStrideBlock), 1, kGridStrideMaxBlocks);
}

double distinct_bytes(const TensorView& v) {
  double n = 1;
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (i >= v.strides.size() || v.strides[i] != 0) n *= static_cast<double>(v.shape[i]);
  }
  return n * static_cast<double>(dtype_size(v.dtype));
}

int blocks_per_sm(int threads, int regs_per_thread, int smem_bytes, const Target& t) {
  const int regs = (std::max(regs_per_thread, 1) + 7) / 8 * 8;
  int n = t.max_blocks_per_sm;
  n = std::min(n, t.max_threads_per_sm / std::max(threads, 1));
  n = std::min(n, t.regs_per_sm / (regs * std::max(threads, 1)));
  if (smem_bytes > 0) n = std::min(n, t.smem_per_sm / (smem_bytes + kReservedSmemPerBlock));
  return std::max(n, 0);
}

int tc_registers(const TcTile& t) {
  const int acc = (t.bm / t.warps_m) * (t.bn / t.warps_n) / 32;
  return std::min(255, kTcBaseRegisters + (t.fp16_accumulate ? acc / 2 : acc));
}

namespace {

/// The name of e's largest term (the first of equal ones, in the order compute, memory, latency, launch).
const char* largest_term(const Estimate& e) {
  const std::pair<double, const char*> terms[] = {
      {e.compute_us, "compute"}, {e.memory_us, "memory"}, {e.latency_us, "latency"}, {e.launch_us, "launch"}};
  return std::max_element(std::begin(terms), std::end(terms), [](const auto& a, const auto& b) {
           return a.first < b.first;
         })->second;
}

}  // namespace

Estimate estimate(const KernelWork& w, const Target& t) {
  Estimate e;
  e.flops = w.flops;
  e.bytes = w.bytes + w.split_bytes + w.l2_bytes;
  e.blocks = std::max<int64_t>(w.blocks, 1);
  const int64_t sms = std::max(t.sm_count, 1);
  e.blocks_per_sm = std::max(blocks_per_sm(w.threads, w.regs_per_thread, w.smem_bytes, t), 1);
  e.waves = static_cast<double>(e.blocks) / static_cast<double>(sms * e.blocks_per_sm);
  const double clock_hz = t.boost_mhz * 1e6;
  const bool hopper = w.engine == Engine::hopper;
  const bool tc = w.engine == Engine::tensor_core || hopper;
  const bool int8 = tc && w.int8;

  // Compute: the busiest SM runs ceil(blocks / SMs) blocks' FLOPs at its share of the rate, less
  // when its resident warps cannot keep the sub-partitions busy.
  const double executed = w.executed_flops < 0 ? w.flops : w.executed_flops;
  const double per_block = executed / static_cast<double>(e.blocks);
  const int64_t on_busiest = ceil_div(e.blocks, sms);
  const double resident_warps = static_cast<double>(std::min<int64_t>(on_busiest, e.blocks_per_sm)) * std::max(w.threads / 32, 1);
  const double warp_share = std::min(1.0, resident_warps / (tc ? kTensorCoreWarpsForPeak : kSimtWarpsForPeak));
  const double rate = hopper ? hopper_tflops(w, t) : int8 ? t.tc_int8_tops : tc ? t.tc_fp16_tflops : t.fp32_tflops;
  const double sm_flops_per_us = rate * 1e6 / static_cast<double>(sms);
  e.compute_us = static_cast<double>(on_busiest) * per_block / (sm_flops_per_us * warp_share);

  // Memory: the bytes (and split-K's partials) at the DRAM rate, as far as the active SMs draw it.
  const double active = static_cast<double>(std::min(e.blocks, sms));
  const double share = std::min(1.0, kSmBandwidthShare * active / static_cast<double>(sms));
  e.memory_us = (w.bytes + w.split_bytes + w.l2_bytes / kL2BandwidthRatio) / (t.dram_gbps * 1e3 * share);

  // Latency: per round of resident blocks, the K-slice chain (each slice waits for its load, the
  // stages - 1 slices in flight hiding part of it), else one memory round trip.
  const double rounds = std::ceil(e.waves);
  const double load_us = kMemoryLatencyNs * 1e-3 / std::max(w.stages - 1, 1);
  // A warp's own MMAs of a slice at one sub-partition's share of the SM's rate.
  const double issue_us = w.warp_flops_per_slice / (sm_flops_per_us / kTensorCoreWarpsForPeak);
  const double slice_us = std::max(load_us, issue_us) + kSliceOverheadCycles / clock_hz * 1e6;
  e.latency_us = rounds * (w.k_slices > 0 ? static_cast<double>(w.k_slices) * slice_us : kMemoryLatencyNs * 1e-3);
  // Blocks handing their partial sums on in a chain within the launch: a round trip per hand-off.
  e.latency_us += rounds * static_cast<double>(w.handoffs) * kHandoffRoundTrips * kMemoryLatencyNs * 1e-3;
  // Split-K's reduction launch waits one memory round trip after the product.
  if (w.split_bytes > 0) e.latency_us += kMemoryLatencyNs * 1e-3;

  e.launch_us = kLaunchUs * (w.split_bytes > 0 ? 2 : 1);
  e.us = std::max({e.compute_us, e.memory_us, e.latency_us}) + e.launch_us;
  e.bound = largest_term(e);
  return e;
}

namespace {

// A product of batch x M x N x K on bm x bn x bk tiles: its useful FLOPs, the FLOPs its whole tiles
// execute, and its bytes; returns its tiles and K slices.
std::pair<int64_t, int64_t> tiled_product(KernelWork& w, int64_t batch, int64_t M, int64_t N, int64_t K, double bytes,
                                          int bm, int bn, int bk) {
  const int64_t tiles = batch * ceil_div(M, bm) * ceil_div(N, bn);
  const int64_t slices = ceil_div(K, bk);
  w.flops = 2.0 * static_cast<double>(batch) * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  w.executed_flops = 2.0 * static_cast<double>(tiles) * bm * bn * static_cast<double>(slices * bk);
  w.bytes = bytes;
  return {tiles, slices};
}

}  // namespace

KernelWork tc_gemm_work(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const TcTile& t) {
  KernelWork w;
  w.engine = Engine::tensor_core;
  w.int8 = t.int8;
  const auto [tiles, slices] = tiled_product(w, batch, M, N, K, bytes, t.bm, t.bn, t.bk);
  w.blocks = tiles * t.split_k;
  w.threads = t.threads();
  w.smem_bytes = t.smem_bytes();
  w.regs_per_thread = tc_registers(t);
  w.k_slices = ceil_div(slices, t.split_k);
  w.stages = t.stages;
  if (t.split_k > 1) {
    w.split_bytes = 2.0 * static_cast<double>(t.split_k) * static_cast<double>(batch * M * N) * 4;
  }
  return w;
}

double hopper_tflops(const KernelWork& w, const Target& t) {
  const double r = w.hopper_consumers == 1 ? (w.int8 ? t.hopper_tops_64 : t.hopper_tflops_64)
                   : w.hopper_bn >= 256    ? (w.int8 ? t.hopper_tops_128x256 : t.hopper_tflops_128x256)
                                           : (w.int8 ? t.hopper_tops_128x128 : t.hopper_tflops_128x128);
  if (r <= 0) throw Error("internal: a Hopper engine kernel estimated for sm_" + std::to_string(t.sm) + ", which has no Hopper engine");
  return r;
}

KernelWork hopper_gemm_work(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const HopperTile& t) {
  KernelWork w;
  w.engine = Engine::hopper;
  w.hopper_bn = t.bn;
  w.hopper_consumers = t.consumers;
  w.int8 = t.int8;
  const auto [tiles, slices] = tiled_product(w, batch, M, N, K, bytes, t.bm, t.bn, t.bk);
  w.blocks = tiles;
  w.threads = t.threads();
  w.smem_bytes = t.smem_bytes();
  w.regs_per_thread = 65536 / t.threads() / 8 * 8;  // __launch_bounds__(threads, 1): the cap at entry (setmaxnreg moves it)
  w.k_slices = slices;
  w.stages = t.stages;
  return w;
}

KernelWork kernel_work(const Kernel& k, const Tactic& tactic) {
  if (std::holds_alternative<WinogradTactic>(tactic)) {
    throw Error("internal: kernel " + k.id + " runs Winograd: three launches, no single work (winograd_estimate)");
  }
  KernelWork w;
  w.bytes = kernel_bytes(k);
  const FamilyFacts* f = k.family;
  if (f && f->work) {
    f->work(w, k, tactic);
  } else {
    default_work(w, k, tactic);
  }
  return w;
}

Estimate estimate_kernel(const Kernel& k, const Target& t) {
  const auto it = k.arch_tactic.find(t.sm);
  const Tactic& tactic = it != k.arch_tactic.end() ? it->second : k.tactic;
  if (const WinogradTactic* w = std::get_if<WinogradTactic>(&tactic)) return linear::winograd_estimate(k, w->gemm, t);
  return estimate(kernel_work(k, tactic), t);
}

Estimate sum_estimates(const std::vector<Estimate>& parts) {
  Estimate e;
  for (const Estimate& p : parts) {
    e.us += p.us;
    e.compute_us += p.compute_us;
    e.memory_us += p.memory_us;
    e.latency_us += p.latency_us;
    e.launch_us += p.launch_us;
    e.flops += p.flops;
    e.bytes += p.bytes;
    if (p.blocks > e.blocks) {
      e.blocks = p.blocks;
      e.blocks_per_sm = p.blocks_per_sm;
      e.waves = p.waves;
    }
  }
  e.bound = largest_term(e);
  return e;
}

std::string estimate_text(const Estimate& e) {
  return fmt::format("{:.2f} us, {} bound, {} blocks, {:.2f} waves", e.us, e.bound, e.blocks, e.waves);
}

}  // namespace modelc

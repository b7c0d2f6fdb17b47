// compiler/schedule/cost_model.h — what a kernel costs on a target: FLOPs, the fewest bytes it must
// move, its blocks and waves, occupancy, and an estimated time with the term that bounds it. The
// tactics stage chooses tensor-core tiles and engines by it; report.json prints it per kernel.
//
// The estimate (estimate()): four terms, each documented with its constant in cost_model.cpp:
//   compute  the busiest SM's share of the executed FLOPs (tiles rounded up) at its share of the
//            tensor-core or SIMT rate, scaled down when too few warps are resident to keep its
//            four sub-partitions busy;
//   memory   the bytes at the DRAM rate (those that stay in L2 between launches faster), scaled
//            down when too few SMs are active to draw it;
//   latency  the K-slice chain: each round of resident blocks walks its K slices one after another,
//            each waiting for its load (a memory latency divided by the stages in flight), or, for
//            a kernel that says how much each warp issues per slice, its MMAs where longer; kernels
//            without a K loop wait one memory latency per round;
//            a chain of in-launch hand-offs (small-M split-K tickets) adds three memory latencies
//            each (the ticket seen, the partials loaded, its own published);
//   launch   a fixed launch overhead per launch (two with split-K).
// us = max(compute, memory, latency) + launch; `bound` names the largest of the four. Split-K's
// reduction (its partials written and read, its launch) is added to the memory and launch terms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/target.h"

namespace modelc {

/// \brief A kernel's work as the model sees it.
struct KernelWork {
  /// The rate its FLOPs run at: Engine::tensor_core the target's tensor-core rate (FP16, or INT8
  /// where `int8`), Engine::hopper the Hopper engine's rate for its tile (Target::hopper_tflops_*,
  /// hopper_tops_* where `int8`), every other engine (simt, gemv) the SIMT rate.
  Engine engine = Engine::simt;
  bool int8 = false;            ///< integer MMAs (tensor_core, hopper): the INT8 rates
  /// The Hopper engine: its tile's BN and consumer warpgroups (which of the target's rates applies).
  int hopper_bn = 0, hopper_consumers = 0;
  double flops = 0;             ///< useful FLOPs (2 per multiply-add)
  double executed_flops = -1;   ///< FLOPs the tiles execute (rounded-up tiles); < 0: flops
  double bytes = 0;             ///< the fewest bytes: each input read once, each output written once
  int64_t blocks = 1;
  int threads = 128;            ///< per block
  int smem_bytes = 0;           ///< per block
  int regs_per_thread = 32;
  int64_t k_slices = 0;         ///< slices each block walks in sequence (0: no K loop)
  int stages = 2;               ///< pipeline stages of the K loop
  /// Split-K: the FP32 partial bytes the reduction launch moves (written by the product, read by
  /// the reduction); 0 without split-K.
  double split_bytes = 0;
  /// Bytes that move between launches through L2 (a buffer written by one launch and read by the
  /// next while it fits in L2: Winograd's transformed input and products), at kL2BandwidthRatio
  /// times the DRAM rate; not part of `bytes`.
  double l2_bytes = 0;
  /// Blocks of the launch that wait on others of it in a chain (a small-M tile's splits, each
  /// adding its partial after the previous one's ticket): the chain's hand-offs per round, each a
  /// kHandoffRoundTrips memory round trips in the latency term.
  int64_t handoffs = 0;
  /// FLOPs one warp issues per K slice, one MMA after another (the small-M kernel: its share of
  /// the slice's k16 steps on its outputs). Where set, a slice of the latency chain takes the longer
  /// of its load's share and this issue at one sub-partition's tensor rate (the warp's K chain);
  /// 0: the chain is the loads' alone (every other kernel: their MMAs are the compute term's).
  double warp_flops_per_slice = 0;
};

/// \brief Resident blocks per SM: the least of the target's block limit and what the threads, the
/// registers (`regs_per_thread` rounded up to 8) and the shared memory (plus the 1 KB the driver
/// reserves per block) allow; 0 when one block does not fit.
int blocks_per_sm(int threads, int regs_per_thread, int smem_bytes, const Target& t);

/// \brief Registers per thread of a tensor-core block, estimated: kTcBaseRegisters (fragments,
/// addresses, loop state) plus its accumulators (one register per FP32 value of the warp's
/// (BM / warps_m) x (BN / warps_n) tile over 32 lanes; half as many FP16), at most 255.
int tc_registers(const TcTile& t);

/// The estimate of `w` on `t`.
Estimate estimate(const KernelWork& w, const Target& t);

/// \brief The work of kernel k run with `tactic` (k.tactic or one of k.arch_tactic): its bytes
/// from its views (kernel_bytes), then its family's FamilyFacts::work (schedule/families.h: FLOPs
/// and blocks as its template's grid() computes them from the tactic and the kernel's plan), or
/// default_work for a family without one. An internal Error for a WinogradTactic (three launches:
/// schedule/winograd.h winograd_estimate).
KernelWork kernel_work(const Kernel& k, const Tactic& tactic);

/// \brief The work of a kernel whose family says nothing of its own, by the tactic's kind: a
/// direct kernel (DirectTactic) one operation per element of input 0 and a thread per output
/// element; a reduction (ReductionTile) one operation per input element and a row per output
/// element (reduction_work); a grid-stride loop no FLOPs, blocks as templates/tensor_index.cuh
/// launches it. An internal Error for a GEMM-shaped tactic (its family must say its product).
void default_work(KernelWork& w, const Kernel& k, const Tactic& tactic);
/// \brief A reduction-shaped kernel of `rows` rows with tile t: one operation per element of input
/// 0; the blocks its grid() gives (rows over the rows per block).
void reduction_work(KernelWork& w, const Kernel& k, const ReductionTile& t, int64_t rows);
/// \brief A SIMT GEMM of `groups` x (M x N x K) with tile t (templates/gemm.cuh and conv.cuh
/// grid(): ceil(N / BN) x ceil(M / BM) x groups): engine, blocks, threads, registers, K slices and
/// the FLOPs the tiles execute (the useful FLOPs are the caller's).
void simt_gemm_work(KernelWork& w, int64_t groups, int64_t M, int64_t N, int64_t K, const TileConfig& t);
/// \brief A GEMV (templates/gemv.cuh Gemv) of the batched product `batch` x (M x N x K) whose B is
/// K-contiguous or not, storing `out` elements, with tactic t.
void gemv_work(KernelWork& w, int64_t batch, int64_t M, int64_t N, int64_t K, bool k_contiguous, DType out,
               const GemvTactic& t);
/// Elements of k's present outputs.
double numel_of_outputs(const Kernel& k);

/// \brief The estimate of k on t, with the tactic chosen for t (k.arch_tactic's, else k.tactic).
Estimate estimate_kernel(const Kernel& k, const Target& t);

/// \brief The estimate of launches run one after another: times, terms, FLOPs and bytes summed;
/// blocks, occupancy and waves of the launch with the most blocks; bound: the largest summed term.
Estimate sum_estimates(const std::vector<Estimate>& parts);

/// \brief The work of `batch` tensor-core GEMMs of M x N x K with tile `t` (split-K included)
/// moving at least `bytes`.
KernelWork tc_gemm_work(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const TcTile& t);

/// \brief The work of `batch` GEMMs of M x N x K on the Hopper engine with tile `t` (persistent:
/// min(SMs, tiles) blocks of one per SM, each walking its tiles' K slices; counted as `tiles`
/// blocks of one per SM, so the waves are the rounds of the loop) moving at least `bytes`.
KernelWork hopper_gemm_work(int64_t batch, int64_t M, int64_t N, int64_t K, double bytes, const HopperTile& t);

/// \brief The Hopper engine's rate (TFLOP/s) for work w's tile on target t (Target::hopper_tflops_*).
double hopper_tflops(const KernelWork& w, const Target& t);

/// The fewest bytes kernel k moves: distinct_bytes of each input and output.
double kernel_bytes(const Kernel& k);
/// The fewest bytes of a view: each distinct element once (broadcast dims, stride 0, count once).
double distinct_bytes(const TensorView& v);

/// "12.3 us, latency bound, 64 blocks, 0.12 waves" (the kernels' notes).
std::string estimate_text(const Estimate& e);

}  // namespace modelc

// compiler/schedule/target.h — the GPUs a compile targets: one Target per --arch, with the facts of
// one named part of that architecture (the cost model's inputs: schedule/cost_model.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace modelc {

struct TuningCache;  // schedule/tuning_cache.h

/// \brief The target of a tactic choice: one --arch (a fat binary has a tactic per arch where they
/// differ), with the facts of the part target_for names for it (target.cpp cites each source).
/// The code is correct on any part of the arch; the facts only steer the cost model.
struct Target {
  int sm = 75;                  ///< 75, 80, 86, 89, 90, ...
  std::string part = "T4";      ///< the part whose facts these are
  int sm_count = 40;            ///< streaming multiprocessors
  int boost_mhz = 1590;         ///< boost clock
  double tc_fp16_tflops = 65;   ///< dense FP16 tensor-core rate, FP32 accumulation
  double fp32_tflops = 8.1;     ///< FP32 SIMT rate (FMA = 2 FLOPs)
  double dram_gbps = 320;       ///< DRAM bandwidth, GB/s (10^9 bytes)
  int smem_per_sm = 64 * 1024;  ///< shared memory of an SM (bytes)
  /// The most shared memory one block may have (bytes): the opt-in maximum
  /// (cudaFuncAttributeMaxDynamicSharedMemorySize); above 48 KB only dynamic shared memory.
  int smem_per_block = 64 * 1024;
  int regs_per_sm = 65536;      ///< 32-bit registers of an SM
  int max_threads_per_sm = 1024;
  int max_blocks_per_sm = 16;
  int64_t l2_bytes = 4 << 20;
  /// --fp16-accumulate: FP16 accumulators where the family offers them.
  bool fp16_accumulate = false;
  /// --winograd: 3x3 convolutions as Winograd F(2x2, 3x3) where the cost model predicts a win
  /// (automatic), wherever they qualify (always) or never (schedule/winograd.h plan_winograd).
  enum class Winograd { automatic, always, never } winograd = Winograd::automatic;
  /// Dense INT8 tensor-core rate, TOPS (INT32 accumulation): the INT8 kernels' compute term
  /// (templates/tensor_core_int8.cuh); twice the FP16 rate on every part of the table.
  double tc_int8_tops = 130;
  /// --arch sm_90a (and no plain sm_90 beside it): the Hopper engine's instructions (wgmma,
  /// setmaxnreg) exist in the image, so the GEMM tactic may choose templates/hopper_gemm.cuh.
  bool hopper = false;
  /// The Hopper engine's FP16 / BF16 main-loop rates (TFLOP/s, FP32 accumulation) by tile shape:
  /// two consumer warpgroups on 128 x 256 and on 128 x 128 (or 128 x 64), one consumer on 64 rows.
  /// Fractions of the wgmma peak (tc_fp16_tflops) from published Hopper GEMMs of this form
  /// (docs/hopper.md, "Expected rates"): leads, not measurements; 0 without the engine.
  double hopper_tflops_128x256 = 0, hopper_tflops_128x128 = 0, hopper_tflops_64 = 0;
  /// The same for INT8 (TOPS, INT32 accumulation), fractions of tc_int8_tops.
  double hopper_tops_128x256 = 0, hopper_tops_128x128 = 0, hopper_tops_64 = 0;
  /// --tuning-cache: measured tactic choices (schedule/tuning_cache.h); they apply where the
  /// cache's device is this target's SM (TuningCache::device.sm == sm). Null: the cost model alone.
  const TuningCache* tuning = nullptr;
  /// `modelc tune` (PassOptions::tune_candidates): the tensor-core kernels keep this many candidate
  /// tactics on the first target (Kernel::tune_candidates); 0: none.
  int tune_candidates = 0;
};

/// "auto" / "always" / "never" (PassOptions::winograd) -> Target::Winograd; Error otherwise.
Target::Winograd parse_winograd(const std::string& s);

/// "sm_86" -> 86, "sm_90a" -> 90. Throws Error for anything that is not sm_XX (XX >= 75: the oldest
/// modelc targets) or sm_XXa (XX >= 90).
int arch_number(const std::string& arch);

/// \brief Whether an --arch is sm_90a, the one arch-specific target with the Hopper engine.
bool hopper_arch(const std::string& arch);

/// \brief Whether an --arch is arch-specific, sm_90a: SASS with the Hopper engine's instructions
/// (wgmma, setmaxnreg) for compute capability 9.0 only, built with -gencode
/// arch=compute_90a,code=sm_90a, no PTX of it. Its Target is sm_90's (the same chip).
bool arch_specific(const std::string& arch);

/// \brief The Target of an arch: the facts of the newest row of the table (sm_75 T4, sm_80 A100
/// SXM4 80 GB, sm_86 A10, sm_89 L4, sm_90 H100 SXM5) whose SM number is at most the arch's, so
/// sm_87 takes sm_86's and sm_100 / sm_120 take sm_90's.
Target target_for(const std::string& arch);

/// \brief The distinct targets of an --arch list, ascending by SM number (never empty: sm_75 when
/// the list is), each with `fp16_accumulate` set. sm_90 and sm_90a are one target (one plan for
/// both images): it has the Hopper engine (Target::hopper) only when the list has no plain sm_90.
std::vector<Target> targets_for(const std::vector<std::string>& archs, bool fp16_accumulate);

}  // namespace modelc

#include "schedule/target.h"

#include <algorithm>

#include "support/error.h"

namespace modelc {

int arch_number(const std::string& arch) {
  // sm_XX, or sm_XXa (arch-specific features, sm_90a's wgmma: SASS for compute capability XX only)
  const std::string digits = arch_specific(arch) ? arch.substr(0, arch.size() - 1) : arch;
  const bool form = digits.size() > 3 && digits.compare(0, 3, "sm_") == 0 && digits.size() <= 6 &&
                    digits.find_first_not_of("0123456789", 3) == std::string::npos;
  const int n = form ? std::stoi(digits.substr(3)) : 0;
  if (!form || n < 75 || (digits != arch && n < 90)) {
    throw Error("--arch '" + arch + "' is not a GPU architecture modelc targets",
                "write sm_XX with XX >= 75 (compute capability 7.5 and newer), e.g. sm_75, sm_86, sm_90, or sm_90a (the "
                "Hopper engine: runs on compute capability 9.0 only)");
  }
  return n;
}

bool arch_specific(const std::string& arch) { return arch.size() > 4 && arch.back() == 'a'; }

bool hopper_arch(const std::string& arch) { return arch == "sm_90a"; }

namespace {

// One row per architecture: the facts of one part. Sources:
//   sm_75  T4: NVIDIA T4 Tensor Core GPU datasheet (40 SMs, 1590 MHz boost, 65 TFLOPS FP16/FP32
//          mixed precision, 8.1 TFLOPS FP32, 320 GB/s GDDR6) and the Turing whitepaper (4 MB L2).
//   sm_80  A100 SXM4 80 GB: NVIDIA A100 datasheet (312 TFLOPS FP16 tensor dense, 19.5 TFLOPS FP32,
//          2039 GB/s HBM2e) and the Ampere GA100 whitepaper (108 SMs, 1410 MHz, 40 MB L2).
//   sm_86  A10: NVIDIA A10 datasheet (125 TFLOPS FP16 tensor dense, 31.2 TFLOPS FP32, 600 GB/s)
//          and the Ampere GA102 whitepaper (72 SMs at 1695 MHz in the A10, 6 MB L2). The GeForce
//          GA102s (RTX 3090) halve the FP32-accumulate tensor rate; the A10 does not.
//   sm_89  L4: NVIDIA L4 datasheet (121 TFLOPS FP16 tensor dense, 30.3 TFLOPS FP32, 300 GB/s) and
//          the Ada whitepaper (58 SMs at 2040 MHz in the L4, 48 MB L2).
//   sm_90  H100 SXM5: NVIDIA H100 datasheet (989 TFLOPS FP16 tensor dense, 67 TFLOPS FP32,
//          3.35 TB/s HBM3) and the Hopper whitepaper (132 SMs, 1980 MHz boost, 50 MB L2).
// Shared memory per SM and the opt-in maximum per block, registers, threads and blocks per SM: the
// CUDA C++ Programming Guide, "Technical Specifications per Compute Capability" (7.5: 64 KB / 64 KB,
// 1024 threads, 16 blocks; 8.0: 164 KB / 163 KB, 2048, 32; 8.6: 100 KB / 99 KB, 1536, 16; 8.9:
// 100 KB / 99 KB, 1536, 24; 9.0: 228 KB / 227 KB, 2048, 32; 64 K registers on all).
// The tensor-core rates are the datasheets' dense peaks: wgmma's on sm_90 (mma.sync reaches less:
// the cost model's estimates are optimistic there by that factor). INT8 (Target::tc_int8_tops, the
// same datasheets, dense): T4 130 TOPS, A100 624, A10 250, L4 242 (485 with sparsity), H100 SXM5
// 1979 (3958 with sparsity).
const Target kTargets[] = {
    {75, "T4", 40, 1590, 65, 8.1, 320, 64 * 1024, 64 * 1024, 65536, 1024, 16, int64_t{4} << 20, false},
    {80, "A100 SXM4 80GB", 108, 1410, 312, 19.5, 2039, 164 * 1024, 163 * 1024, 65536, 2048, 32, int64_t{40} << 20, false},
    {86, "A10", 72, 1695, 125, 31.2, 600, 100 * 1024, 99 * 1024, 65536, 1536, 16, int64_t{6} << 20, false},
    {89, "L4", 58, 2040, 121, 30.3, 300, 100 * 1024, 99 * 1024, 65536, 1536, 24, int64_t{48} << 20, false},
    {90, "H100 SXM5", 132, 1980, 989, 67, 3350, 228 * 1024, 227 * 1024, 65536, 2048, 32, int64_t{50} << 20, false},
};

/// The dense INT8 rates of the rows above, by SM number.
double int8_tops(int sm) {
  switch (sm) {
    case 75: return 130;
    case 80: return 624;
    case 86: return 250;
    case 89: return 242;
    default: return 1979;  // 90
  }
}

}  // namespace

Target target_for(const std::string& arch) {
  const int sm = arch_number(arch);
  Target t = kTargets[0];
  for (const Target& row : kTargets) {
    if (row.sm <= sm) t = row;
  }
  t.tc_int8_tops = int8_tops(t.sm);
  t.sm = sm;
  if (hopper_arch(arch)) {
    // The Hopper engine's main loop at large K, as fractions of the wgmma peak (docs/hopper.md
    // "Expected rates", from published TMA + wgmma warp-specialized persistent GEMMs; cuBLAS
    // reaches 713 of 989 at 4096^3 FP16): 128x256x64 in 3 stages 0.75 (most MACs per shared-memory
    // byte), 128x128x64 in 4 stages 0.68 (half the B reuse), one consumer warpgroup 0.50 (the
    // epilogue and the waits are not overlapped by a second one). To be fitted to measurements.
    t.hopper = true;
    t.hopper_tflops_128x256 = 0.75 * t.tc_fp16_tflops;
    t.hopper_tflops_128x128 = 0.68 * t.tc_fp16_tflops;
    t.hopper_tflops_64 = 0.50 * t.tc_fp16_tflops;
    // INT8 (BK 128 bytes, k32 wgmmas): 0.65 / 0.60 / 0.45 of the INT8 peak (the same leads: twice the
    // MACs per shared-memory byte strain the issue of the epilogue and the requantize more).
    t.hopper_tops_128x256 = 0.65 * t.tc_int8_tops;
    t.hopper_tops_128x128 = 0.60 * t.tc_int8_tops;
    t.hopper_tops_64 = 0.45 * t.tc_int8_tops;
  }
  return t;
}

Target::Winograd parse_winograd(const std::string& s) {
  if (s == "auto") return Target::Winograd::automatic;
  if (s == "always") return Target::Winograd::always;
  if (s == "never") return Target::Winograd::never;
  throw Error("--winograd '" + s + "' is not a mode modelc knows", "write auto, always or never");
}

std::vector<Target> targets_for(const std::vector<std::string>& archs, bool fp16_accumulate) {
  std::vector<Target> targets;
  for (const std::string& a : archs) {
    Target t = target_for(a);
    t.fp16_accumulate = fp16_accumulate;
    const auto same = std::find_if(targets.begin(), targets.end(), [&](const Target& x) { return x.sm == t.sm; });
    if (same == targets.end()) {
      targets.push_back(t);
    } else if (same->hopper && !t.hopper) {
      *same = t;  // sm_90 beside sm_90a: one plan for both images, without the Hopper engine
    }
  }
  if (targets.empty()) {
    targets.push_back(target_for("sm_75"));
    targets.back().fp16_accumulate = fp16_accumulate;
  }
  std::sort(targets.begin(), targets.end(), [](const Target& a, const Target& b) { return a.sm < b.sm; });
  return targets;
}

}  // namespace modelc

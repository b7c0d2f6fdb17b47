// runtime_stub/profile.h — `./NAME --profile [N]` and `--export-times FILE.json`: each kernel's
// measured time (NAME_time_kernels: N runs outside the CUDA graph, CUDA events around each kernel,
// medians) beside the cost model's estimate, which NAME_main.cu carries as a table (mc_cli::Estimates:
// per --arch target its rates, per kernel its estimate there). Header-only; host code only.
//
// Per kernel, with the target row of the device's arch (the newest --arch not above the device's
// SM, else the oldest):
//   ratio     measured / estimate
//   share     measured / the sum of every kernel's measured time
//   roofline  the kernel's roofline bound over its measured time: the bound is the larger of its
//             bytes at the target's DRAM rate and its FLOPs at its engine's rate (tensor_core: the
//             FP16 tensor-core rate, tensor_core_int8: the INT8 one, anything else the FP32 SIMT
//             rate); 100% would be a kernel at the roofline
//   flagged   above kFlagUs microseconds at under kFlagFraction of its bound: where time is lost
// On the host emulation the times are host times: the flow runs, the figures say nothing of a GPU.
//
// The JSON (schema "modelc-times/1"; `modelc report DIR --times FILE.json` reads it into the report):
//   {"schema": "modelc-times/1", "model": NAME, "batch": B, "profile": P, "runs": N,
//    "device": {"name", "sm": 90, "sm_count", "driver": 12040, "runtime": 12040, "emulation": false},
//    "estimate_arch": "sm_90", "estimate_part": "H100 SXM5",
//    "timing": "...", "total_us", "estimate_total_us",
//    "kernels": [{"id", "family", "tactic", "engine", "measured_us", "estimate_us", "ratio", "share",
//                 "flops", "bytes", "roofline_us", "roofline_fraction", "flagged"}, ...]}
// with the kernels in the order they run; ratio and roofline_fraction are null where a time is 0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "device.h"

namespace mc_cli {

/// \brief One --arch target's rates (compiler/schedule/target.cpp's row for it).
struct TargetRates {
  int sm;                 ///< 75, 80, 86, 89, 90
  const char* part;       ///< the part whose datasheet the rates are: "T4"
  double dram_gbps;       ///< DRAM bandwidth, GB/s (10^9 bytes)
  double tc_fp16_tflops;  ///< dense FP16 tensor-core rate
  double tc_int8_tops;    ///< dense INT8 tensor-core rate
  double fp32_tflops;     ///< FP32 SIMT rate
};

/// \brief The cost model's estimate of one kernel on one target, with the tactic chosen there.
struct KernelEstimate {
  double us;
  double flops;        ///< useful FLOPs
  double bytes;        ///< the fewest bytes it moves (and split-K's partials)
  const char* engine;  ///< the rate its FLOPs run at: "tensor_core", "tensor_core_int8", "simt"
};

/// \brief One kernel as report.json names it, and its estimates, one per target.
struct KernelFacts {
  const char* id;
  const char* family;
  const char* tactic;                 ///< report.json's tactic as "BM=64 BN=64 ..." ("" when none)
  const KernelEstimate* estimates;    ///< Estimates::num_targets of them, in the targets' order
};

/// \brief The kernels of one batch profile, in the order they run.
struct ProfileFacts {
  int num_kernels;
  const KernelFacts* kernels;
};

/// \brief What NAME_main.cu knows of the model's kernels for --profile.
struct Estimates {
  int num_targets;
  const TargetRates* targets;  ///< ascending SM
  int num_profiles;
  const ProfileFacts* profiles;
};

/// Kernels above this many microseconds at under kFlagFraction of their roofline bound are flagged.
constexpr double kFlagUs = 5.0;
constexpr double kFlagFraction = 0.2;

/// \brief The device the times were taken on.
struct DeviceFacts {
  std::string name;
  int sm = 0;
  int sm_count = 0;
  int driver = 0;
  int runtime = 0;
  bool emulation = false;
};

/// \brief One row of the profile.
struct KernelTime {
  std::string id, family, tactic, engine;
  double measured_us = 0, estimate_us = 0, flops = 0, bytes = 0, roofline_us = 0;
  double ratio = -1, share = 0, roofline_fraction = -1;  ///< -1: undefined (a time of 0)
  bool flagged = false;
};

/// \brief A whole profile: the rows and what they were measured and estimated on.
struct ProfileReport {
  std::string model;
  int64_t batch = 0;
  int profile = 0;
  int runs = 0;
  DeviceFacts device;
  int estimate_sm = 0;  ///< the target row used (0: the program has no estimates)
  std::string estimate_part;
  double total_us = 0, estimate_total_us = 0;
  std::vector<KernelTime> kernels;
};

/// \brief The target row for a device of SM `sm`: the newest not above it, else the oldest; -1 when
/// there is none.
inline int target_for(const Estimates& e, int sm) {
  int best = -1;
  for (int t = 0; t < e.num_targets; ++t) {
    if (e.targets[t].sm <= sm && (best < 0 || e.targets[t].sm > e.targets[best].sm)) best = t;
  }
  if (best < 0 && e.num_targets > 0) best = 0;
  return best;
}

/// \brief The roofline bound of `k` on `t`, microseconds: the larger of its bytes at the DRAM rate
/// and its FLOPs at its engine's rate.
inline double roofline_us(const KernelEstimate& k, const TargetRates& t) {
  const std::string engine = k.engine ? k.engine : "";
  const double tflops = engine == "tensor_core_int8" ? t.tc_int8_tops : engine == "tensor_core" ? t.tc_fp16_tflops : t.fp32_tflops;
  const double memory = t.dram_gbps > 0 ? k.bytes / (t.dram_gbps * 1e3) : 0;  // GB/s = 10^3 bytes per us
  const double compute = tflops > 0 ? k.flops / (tflops * 1e6) : 0;          // TFLOPS = 10^6 FLOPs per us
  return std::max(memory, compute);
}

/// \brief The rows of profile `p` from the measured times `us` (the model's kernel ids in `ids`),
/// with the estimates of the device's target row where `estimates` has them.
inline ProfileReport make_profile_report(const std::string& model, const std::vector<std::string>& ids,
                                         const std::vector<float>& us, const Estimates* estimates, int p,
                                         const DeviceFacts& device) {
  ProfileReport r;
  r.model = model;
  r.profile = p;
  r.device = device;
  const int t = estimates ? target_for(*estimates, device.sm) : -1;
  const ProfileFacts* facts = estimates && p >= 0 && p < estimates->num_profiles ? &estimates->profiles[p] : nullptr;
  if (t >= 0) {
    r.estimate_sm = estimates->targets[t].sm;
    r.estimate_part = estimates->targets[t].part;
  }
  for (std::size_t k = 0; k < ids.size(); ++k) {
    KernelTime row;
    row.id = ids[k];
    row.measured_us = k < us.size() ? us[k] : 0;
    // The table's row of this kernel (the same id: a NAME_main.cu of another compile has none).
    const KernelFacts* f = facts && static_cast<int>(k) < facts->num_kernels && ids[k] == facts->kernels[k].id
                               ? &facts->kernels[k] : nullptr;
    if (f && t >= 0) {
      const KernelEstimate& e = f->estimates[t];
      row.family = f->family;
      row.tactic = f->tactic;
      row.engine = e.engine ? e.engine : "";
      row.estimate_us = e.us;
      row.flops = e.flops;
      row.bytes = e.bytes;
      row.roofline_us = roofline_us(e, estimates->targets[t]);
    }
    r.total_us += row.measured_us;
    r.estimate_total_us += row.estimate_us;
    r.kernels.push_back(row);
  }
  for (KernelTime& row : r.kernels) {
    row.share = r.total_us > 0 ? row.measured_us / r.total_us : 0;
    if (row.measured_us > 0 && row.estimate_us > 0) row.ratio = row.measured_us / row.estimate_us;
    if (row.measured_us > 0 && row.roofline_us > 0) row.roofline_fraction = row.roofline_us / row.measured_us;
    row.flagged = row.roofline_fraction >= 0 && row.measured_us > kFlagUs && row.roofline_fraction < kFlagFraction;
  }
  return r;
}

namespace detail {

inline std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

inline std::string pad(std::string s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

// A JSON string literal (UTF-8 passes through; quotes, backslashes and control characters escaped).
inline std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      r += b;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r + "\"";
}

// A JSON number (null for an undefined value, < 0 where only non-negative ones exist).
inline std::string json_number(double v, bool may_be_undefined = false) {
  if (may_be_undefined && v < 0) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

}  // namespace detail

/// \brief Where the times came from, one line.
inline std::string timing_text(const ProfileReport& r) {
  return std::to_string(r.runs) + " runs outside the CUDA graph, kernel by kernel (CUDA events around each, each waited "
         "for before the next), medians" + (r.device.emulation ? "; host emulation: host times, not a GPU's" : "");
}

/// \brief The table --profile prints.
inline std::string profile_text(const ProfileReport& r) {
  using detail::fmt;
  using detail::pad;
  std::string s = "profile  " + timing_text(r) + "\n";
  s += "  device " + r.device.name + " (sm_" + std::to_string(r.device.sm) + ", " + std::to_string(r.device.sm_count) +
       " SMs); estimates for " +
       (r.estimate_sm ? "sm_" + std::to_string(r.estimate_sm) + " (" + r.estimate_part + ")" : std::string("none")) +
       "; roofline: bytes at the DRAM rate, FLOPs at the engine's rate\n";
  s += "  " + pad("kernel", 8) + pad("family", 16) + pad("measured us", 13, true) + pad("estimate us", 13, true) +
       pad("ratio", 8, true) + pad("share", 8, true) + pad("roofline", 10, true) + "  tactic\n";
  std::vector<const KernelTime*> flagged;
  for (const KernelTime& k : r.kernels) {
    std::string line = "  " + pad(k.id, 8) + pad(k.family.empty() ? "-" : k.family, 16) +
                       pad(fmt("%.3f", k.measured_us), 13, true) +
                       pad(k.estimate_us > 0 ? fmt("%.3f", k.estimate_us) : "-", 13, true) +
                       pad(k.ratio >= 0 ? fmt("%.2f", k.ratio) : "-", 8, true) + pad(fmt("%.1f%%", 100 * k.share), 8, true) +
                       pad(k.roofline_fraction >= 0 ? fmt("%.1f%%", 100 * k.roofline_fraction) : "-", 10, true) + "  " +
                       (k.flagged ? "[flagged] " : "") + k.tactic;
    while (line.back() == ' ') line.pop_back();
    s += line + "\n";
    if (k.flagged) flagged.push_back(&k);
  }
  s += "  " + pad("total", 24) + pad(fmt("%.3f", r.total_us), 13, true) +
       pad(r.estimate_total_us > 0 ? fmt("%.3f", r.estimate_total_us) : "-", 13, true) +
       pad(r.estimate_total_us > 0 && r.total_us > 0 ? fmt("%.2f", r.total_us / r.estimate_total_us) : "-", 8, true) +
       pad("100.0%", 8, true) + "\n";
  s += "  flagged (above " + fmt("%g", kFlagUs) + " us at under " + fmt("%g", 100 * kFlagFraction) +
       "% of the roofline bound): ";
  if (flagged.empty()) s += "none";
  for (std::size_t i = 0; i < flagged.size(); ++i) {
    s += (i ? ", " : "") + flagged[i]->id + " (" + flagged[i]->family + ", " + fmt("%.1f us", flagged[i]->measured_us) +
         ", " + fmt("%.1f%%", 100 * flagged[i]->roofline_fraction) + ")";
  }
  return s + "\n";
}

/// \brief The JSON --export-times writes (schema at the top of this file).
inline std::string profile_json(const ProfileReport& r) {
  using detail::json_number;
  using detail::json_string;
  std::string s = "{\n";
  s += "  \"schema\": \"modelc-times/1\",\n";
  s += "  \"model\": " + json_string(r.model) + ",\n";
  s += "  \"batch\": " + std::to_string(r.batch) + ",\n";
  s += "  \"profile\": " + std::to_string(r.profile) + ",\n";
  s += "  \"runs\": " + std::to_string(r.runs) + ",\n";
  s += "  \"device\": {\"name\": " + json_string(r.device.name) + ", \"sm\": " + std::to_string(r.device.sm) +
       ", \"sm_count\": " + std::to_string(r.device.sm_count) + ", \"driver\": " + std::to_string(r.device.driver) +
       ", \"runtime\": " + std::to_string(r.device.runtime) + ", \"emulation\": " + (r.device.emulation ? "true" : "false") +
       "},\n";
  s += "  \"estimate_arch\": " + (r.estimate_sm ? json_string("sm_" + std::to_string(r.estimate_sm)) : std::string("null")) +
       ",\n";
  s += "  \"estimate_part\": " + (r.estimate_sm ? json_string(r.estimate_part) : std::string("null")) + ",\n";
  s += "  \"timing\": " + json_string(timing_text(r)) + ",\n";
  s += "  \"total_us\": " + json_number(r.total_us) + ",\n";
  s += "  \"estimate_total_us\": " + json_number(r.estimate_total_us) + ",\n";
  s += "  \"kernels\": [";
  for (std::size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelTime& k = r.kernels[i];
    s += std::string(i ? "," : "") + "\n    {\"id\": " + json_string(k.id) + ", \"family\": " + json_string(k.family) +
         ", \"tactic\": " + json_string(k.tactic) + ", \"engine\": " + json_string(k.engine) +
         ", \"measured_us\": " + json_number(k.measured_us) + ", \"estimate_us\": " + json_number(k.estimate_us) +
         ", \"ratio\": " + json_number(k.ratio, true) + ", \"share\": " + json_number(k.share) +
         ", \"flops\": " + json_number(k.flops) + ", \"bytes\": " + json_number(k.bytes) +
         ", \"roofline_us\": " + json_number(k.roofline_us) +
         ", \"roofline_fraction\": " + json_number(k.roofline_fraction, true) +
         ", \"flagged\": " + (k.flagged ? "true" : "false") + "}";
  }
  s += r.kernels.empty() ? "]\n" : "\n  ]\n";
  return s + "}\n";
}

/// \brief The device's facts (device D): its name, SM, SM count, driver and runtime versions.
inline DeviceFacts device_facts(int device) {
  DeviceFacts d;
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    d.name = prop.name;
    d.sm = prop.major * 10 + prop.minor;
    d.sm_count = prop.multiProcessorCount;
  }
  cudaDriverGetVersion(&d.driver);
  cudaRuntimeGetVersion(&d.runtime);
#if defined(MODELC_HOST_EMULATION)
  d.emulation = true;
#endif
  return d;
}

}  // namespace mc_cli

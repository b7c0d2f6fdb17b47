// compiler/cli/commands/precision_flags.cpp — --fp16 / --bf16 / --int8 (and its calibration) /
// --fp16-accumulate / --io-fp16 / --winograd / --keep-fp32, the same on the compile command and on
// `modelc verify`.
#include <algorithm>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "passes/pass.h"
#include "support/error.h"

namespace modelc::cli {

void add_precision_flags(CLI::App& sub, PrecisionFlags& flags) {
  CLI::Option* fp16 = sub.add_flag(
      "--fp16", flags.fp16,
      "FP16 storage (passes/precision): convolutions, matrix products, elementwise ops and pooling in FP16, "
      "Softmax, normalizations, reductions and Exp/Log/Pow/Erf/Sigmoid/Tanh computing in FP32 on FP16 storage; "
      "inputs and outputs stay FP32");
  CLI::Option* bf16 = sub.add_flag("--bf16", flags.bf16,
               "BF16 storage: --fp16's policy (the same nodes, the same Casts) with bfloat16 (FP32's range, 8-bit "
               "mantissa) instead of float16; tensor cores from sm_80 (sm_75 has no BF16 MMA: SIMT there); "
               "inputs and outputs stay FP32")
      ->excludes(fp16);
  sub.add_flag("--fp16-accumulate", flags.fp16_accumulate,
               "accumulate in FP16 in GEMM and convolution kernels where that is faster (default: FP32)")
      ->needs(fp16);
  sub.add_flag("--io-fp16", flags.io_fp16, "the model takes and returns FP16 tensors instead of FP32")->needs(fp16);
  sub.add_option("--winograd", flags.winograd,
                 "3x3 stride-1 convolutions on tensor cores as Winograd F(2x2, 3x3): auto (where the cost model "
                 "predicts a win on every --arch), always (wherever they qualify) or never")
      ->type_name("auto|always|never")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->needs(fp16);
  sub.add_option("--keep-fp32", flags.keep_fp32,
                 "keep these ONNX nodes in FP32 (comma list, repeatable; with --fp16, --bf16 or --int8)")
      ->type_name("NODE,...")
      ->allow_extra_args(false)
      ->delimiter(',');
  CLI::Option* int8 = sub.add_flag(
      "--int8", flags.int8,
      "INT8 (passes/precision_int8.cpp): calibrated convolutions and matrix products on INT8 tensor cores "
      "(per-output-channel weight scales, per-tensor activation scales, INT32 accumulation), the rest as with --fp16; "
      "needs --calibrate or --calibration-cache");
  int8->excludes(bf16);
  CLI::Option* cal = sub.add_option("--calibrate", flags.calibrate,
                                    "with --int8: calibration data, a folder of .npy / .pb inputs (one per sample, or "
                                    "one sub-folder per sample with a file per input) or random:N (N seeded random "
                                    "inputs); the cache is written beside the output")
                         ->type_name("DIR|random:N")
                         ->needs(int8);
  add_calibrate_max_flag(sub, flags, cal);
  sub.add_option("--calibration", flags.calibration,
                 "with --int8: how a tensor's range is chosen: entropy (KL divergence, the default), percentile "
                 "(99.99%) or max")
      ->type_name("entropy|percentile|max")
      ->capture_default_str()
      ->check(CLI::IsMember({"entropy", "percentile", "max"}))
      ->needs(int8);
  sub.add_option("--calibration-cache", flags.calibration_cache,
                 "with --int8: the calibration of an earlier build (NAME_calibration.json): no data needed")
      ->type_name("FILE")
      ->needs(int8)
      ->excludes(cal);
}

void add_calibrate_max_flag(CLI::App& sub, PrecisionFlags& flags, CLI::Option* calibrate) {
  sub.add_option("--calibrate-max", flags.calibrate_max,
                 "with --calibrate: use only the first N samples (in file-name order; random:M: the first N seeds)")
      ->type_name("N")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->needs(calibrate);
}

void check_precision_flags(const PrecisionFlags& flags) {
  if (!flags.keep_fp32.empty() && !flags.fp16 && !flags.bf16 && !flags.int8) {
    throw CLI::ValidationError("--keep-fp32", "needs --fp16, --bf16 or --int8");
  }
}

void add_layout_flag(CLI::App& sub, std::string& layout) {
  sub.add_option("--layout", layout,
                 "activation layout: auto (convolutional networks channels-last, channels padded for tensor "
                 "cores) or nchw (every buffer dense NCHW)")
      ->type_name("auto|nchw")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "nchw"}));
}

void add_streams_flag(CLI::App& sub, int& streams) {
  sub.add_option("--streams", streams,
                 "run independent branches on at most N CUDA streams, with events where they meet (default: as "
                 "many as the widest set of independent kernels needs, up to 4; 1: every kernel on the caller's "
                 "stream)")
      ->type_name("N")
      ->check(CLI::Range(1, 32));
}

void apply_precision_flags(const PrecisionFlags& flags, PassOptions& o) {
  check_precision_flags(flags);
  o.fp16 = flags.fp16;
  o.bf16 = flags.bf16;
  o.fp16_accumulate = flags.fp16_accumulate;
  o.io_fp16 = flags.io_fp16;
  o.winograd = flags.winograd;
  o.int8 = flags.int8;
  if (flags.int8) o.fp16 = true;  // --int8: what is not INT8 runs as with --fp16
  o.keep_fp32.clear();
  for (const std::string& raw : flags.keep_fp32) {
    std::string name = raw;
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name.empty()) {
      throw Error("--keep-fp32: an empty node name", "give ONNX node names, comma separated: --keep-fp32 conv1,fc");
    }
    if (std::find(o.keep_fp32.begin(), o.keep_fp32.end(), name) == o.keep_fp32.end()) o.keep_fp32.push_back(name);
  }
}

}  // namespace modelc::cli

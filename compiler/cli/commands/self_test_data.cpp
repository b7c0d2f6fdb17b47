// compiler/cli/commands/self_test_data.cpp — the data a compile puts into the program for its
// self-test (NAME_self_test.h; runtime_stub/self_test.h checks them): seeded random inputs of the
// model at its largest batch, and the outputs modelc's reference interpreter computes for them
// after the compile's graph stages, so at the program's own precision (FP16, BF16 and INT8 as the
// simulations of `run-reference --fp16 / --bf16 / --int8` compute them).
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cli/commands/commands.h"
#include "cli/commands/self_test_data.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "support/error.h"

namespace modelc::cli {

namespace {

std::string gflops(double flops) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", flops / 1e9);
  return b;
}

}  // namespace

std::string add_self_test_data(EmitOptions& eo, const std::string& model, const LoadFlags& load, const LowerOptions& opt,
                               const Schedule& s, SelfTestMode mode) {
  if (mode == SelfTestMode::off) {
    eo.no_self_test = "compiled with --no-self-test-data: the self-test checks the weights only";
    return "self-test: the weights' checksum only (--no-self-test-data)";
  }
  double flops = 0;
  for (const Kernel& k : s.kernels) flops += k.estimate.flops;
  if (mode == SelfTestMode::automatic && flops > kSelfTestMaxFlops) {
    eo.no_self_test = "left out of a model of " + gflops(flops) +
                      " GFLOPs, whose reference run would lengthen the compile (modelc --self-test-data compiles them in)";
    return "self-test: the weights' checksum only (a model of " + gflops(flops) +
           " GFLOPs; --self-test-data adds an input and the reference's outputs)";
  }
  try {
    // The model at the batch the program's run() runs (the largest profile's), through the same
    // graph stages as the compile: what the program computes, at its precision.
    const std::vector<int64_t> batches = batch_profiles(load);
    const std::unique_ptr<Graph> g = load_onnx(model, load_options(load, batches.size() > 1 ? batches.back() : 0));
    run_graph_stages(*g, opt.passes);
    const TensorMap feeds = random_inputs(*g, 0);
    const TensorMap reference = run_reference(*g, feeds);
    SelfTestData d;
    for (const ModelTensor& t : s.inputs) {
      const auto it = feeds.find(t.name);
      if (it == feeds.end()) throw Error("no input '" + t.name + "' in the graph the stages leave");
      d.inputs.push_back(it->second.dtype() == t.dtype ? it->second : it->second.cast(t.dtype));
    }
    for (const ModelTensor& t : s.outputs) {
      const auto it = reference.find(t.name);
      if (it == reference.end()) throw Error("no output '" + t.name + "' from the reference");
      d.outputs.push_back(it->second.dtype() == t.dtype ? it->second : it->second.cast(t.dtype));
    }
    // The tolerance `modelc verify` holds the precision to.
    const bool bf16_model = std::any_of(s.inputs.begin(), s.inputs.end(), [](const ModelTensor& t) { return t.dtype == DType::bfloat16; }) ||
                            std::any_of(s.outputs.begin(), s.outputs.end(), [](const ModelTensor& t) { return t.dtype == DType::bfloat16; });
    std::string precision = "FP32";
    if (opt.passes.bf16 || bf16_model) {
      d.max_rel_l2 = kBf16MaxRelL2;
      precision = "BF16";
    } else if (opt.passes.int8) {
      d.max_rel_l2 = 1e-2;
      precision = "INT8";
    } else if (opt.passes.fp16) {
      d.max_rel_l2 = 1e-2;
      precision = "FP16";
    }
    d.about = "seeded random inputs (seed 0) drawn at compile time and the outputs modelc's reference interpreter "
              "computes for them at the program's precision (" + precision + ")";
    eo.self_test = std::move(d);
    return "self-test: an input and the reference's outputs compiled in (./NAME --self-test)";
  } catch (const Error& e) {
    eo.self_test.reset();
    eo.no_self_test = "left out: the reference interpreter could not compute them (" + e.message() + ")";
    return "self-test: the weights' checksum only (the reference interpreter could not run the model: " + e.message() + ")";
  }
}

}  // namespace modelc::cli

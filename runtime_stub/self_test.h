// runtime_stub/self_test.h — NAME_self_test (./NAME --self-test): a generated library checks itself
// against what modelc compiled into it. Header-only; NAME.cu includes it with NAME_self_test.h, the
// data.
//
//   the weights   the weights on the device, read back, have the checksum (runtime.h checksum64) of
//                 the weights the code was compiled with: a corrupted weights file, a blob linked
//                 from another compile, or memory that changed under the model
//   the outputs   where the build carries self-test data (modelc compiles it in unless the model is
//                 large or --no-self-test-data): one run on the input drawn at compile time gives the
//                 outputs modelc's reference interpreter computed for it at the program's precision,
//                 within the tolerance the compile set (compare.h, as ./NAME --compare-dir compares:
//                 rtol/atol, or the relative L2 error and no NaN/Inf where the reference is finite)
// The report is text, one line per check, ending in PASS or FAIL.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "compare.h"
#include "runtime.h"

namespace mc {

/// \brief What a build carries for its self-test (NAME_self_test.h). Without data (inputs null),
/// only the weights are checked.
struct SelfTestData {
  const unsigned char* const* inputs;   ///< per model input its bytes at the largest batch; null: no data
  const unsigned char* const* outputs;  ///< per model output the reference's bytes
  double rtol, atol;                    ///< mismatch: |got - want| > atol + rtol * |want|
  double max_rel_l2;                    ///< > 0: the relative L2 error (at most this) decides instead
  const char* about;                    ///< where the data come from, one line
};

namespace detail {

inline std::string hex64(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace detail

/// \brief Checks `ctx` (a created context of `model`) against `data`; the report (when `report` is
/// not null) gets the text, truncated to `report_size` bytes with its NUL. Returns kOk when every
/// check passes, kSelfTestFailed when one does not, or the code of an error that stopped it.
inline int self_test(Context& ctx, const ModelInfo& model, const SelfTestData& data, char* report, size_t report_size) {
  std::string text = std::string("self-test of ") + model.name + "\n";
  bool pass = true;
  auto finish = [&](int code) {
    if (code == kOk || code == kSelfTestFailed) text += pass ? "PASS\n" : "FAIL\n";
    if (report && report_size > 0) {
      const size_t n = std::min(text.size(), report_size - 1);
      std::memcpy(report, text.data(), n);
      report[n] = '\0';
    }
    return code;
  };
  uint64_t sum = 0;
  if (const int r = ctx.device_weights_checksum(&sum)) {
    text += std::string("  error: ") + ctx.error() + "\n";
    return finish(r);
  }
  const bool weights_ok = sum == model.weights_checksum;
  pass = pass && weights_ok;
  text += "  weights: " + std::to_string(model.weights_bytes) + " bytes on the device, checksum " + detail::hex64(sum) +
          (weights_ok ? ", as compiled" : ", compiled " + detail::hex64(model.weights_checksum) + ": they differ") + "\n";
  if (!data.inputs) {
    text += std::string("  outputs: not checked (") + data.about + ")\n";
    return finish(pass ? kOk : kSelfTestFailed);
  }
  text += std::string("  input: ") + data.about + "\n";
  // One run on the embedded input, at the largest profile's batch (the data's).
  std::vector<std::vector<unsigned char>> outs(static_cast<size_t>(model.num_outputs));
  std::vector<void*> out_ptr;
  std::vector<const void*> in_ptr;
  for (int i = 0; i < model.num_inputs; ++i) in_ptr.push_back(data.inputs[i]);
  for (int i = 0; i < model.num_outputs; ++i) {
    outs[static_cast<size_t>(i)].assign(model.outputs[i].bytes, 0);
    out_ptr.push_back(outs[static_cast<size_t>(i)].data());
  }
  if (const int r = ctx.run_host(in_ptr.data(), out_ptr.data())) {
    text += std::string("  error: ") + ctx.error() + "\n";
    return finish(r);
  }
  char tolerance[128];
  if (data.max_rel_l2 > 0) {
    std::snprintf(tolerance, sizeof tolerance, "rel L2 <= %g and no NaN/Inf where the reference is finite", data.max_rel_l2);
  } else {
    std::snprintf(tolerance, sizeof tolerance, "rtol %g, atol %g", data.rtol, data.atol);
  }
  text += std::string("  outputs against the reference (") + tolerance + "):\n";
  for (int i = 0; i < model.num_outputs; ++i) {
    const TensorInfo& t = model.outputs[i];
    mc_npy::Array got, want;
    got.dtype = want.dtype = t.dtype;
    got.shape = want.shape = std::vector<int64_t>(t.shape, t.shape + t.rank);
    got.data = outs[static_cast<size_t>(i)];
    want.data.assign(data.outputs[i], data.outputs[i] + t.bytes);
    mc_npy::Comparison c = mc_npy::compare(got, want, data.rtol, data.atol);
    const size_t nonfinite = mc_npy::new_nonfinite(got, want);
    if (data.max_rel_l2 > 0 && c.problem.empty()) c.pass = nonfinite == 0 && c.rel_l2 <= data.max_rel_l2;
    pass = pass && c.pass;
    text += "    " + mc_npy::comparison_line(t.name, want, c) + "\n";
  }
  return finish(pass ? kOk : kSelfTestFailed);
}

}  // namespace mc

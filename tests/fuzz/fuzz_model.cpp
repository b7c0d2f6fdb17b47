// tests/fuzz/fuzz_model.cpp — fuzz target: model bytes -> load_onnx_model_bytes (ONNX's checker and
// shape inference on, as users run it) -> the whole pipeline (graph passes and schedule stages,
// FP32 and then --fp16, for sm_75 and sm_90) -> the emitted text files (render_model, in memory:
// nothing is written). A modelc::Error is a clear refusal and a fine outcome; an Error whose
// message starts with "internal", any other exception, a crash or a sanitizer report is a finding.
// External data resolves in tests/fuzz/external/ (read only).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "codegen/emitter.h"
#include "frontend/onnx_import.h"
#include "pipeline/pipeline.h"
#include "support/error.h"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_model: finding: %s\n", what.c_str());
  std::abort();
}

// Load, lower and render once; false when modelc refused the model with a clear Error.
bool compile(const std::string& bytes, bool fp16) {
  try {
    modelc::LoadOptions lo;
    const std::unique_ptr<modelc::Graph> g = modelc::load_onnx_bytes(bytes, MODELC_FUZZ_EXTERNAL_DIR, "fuzz.onnx", lo);
    modelc::LowerOptions o;
    o.archs = {"sm_75", "sm_90"};
    o.passes.fp16 = fp16;
    const modelc::Schedule s = modelc::lower(*g, o);
    modelc::EmitOptions eo;
    eo.source = "fuzz.onnx";
    eo.format = false;  // libFormat is clang's, and slow: the fuzzer runs modelc's own code
    modelc::render_model(s, eo);
    return true;
  } catch (const modelc::Error& e) {
    if (e.message().rfind("internal", 0) == 0) finding(std::string("an internal error: ") + e.what());
    return false;
  } catch (const std::bad_alloc&) {
    finding("std::bad_alloc: a size taken from the model was allocated before it was checked");
  } catch (const std::exception& e) {
    finding(std::string("an exception that is not a modelc::Error: ") + e.what());
  } catch (...) {
    finding("an exception of an unknown type");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (compile(bytes, false)) compile(bytes, true);
  return 0;
}

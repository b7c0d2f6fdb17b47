// tests/codegen/two_models_driver.cpp — two generated models (the sample emitted as `sample`
// and as `other`) linked into one program, two contexts each, all run: no global state, no
// clashing symbols.   two_models_driver DATA_DIR
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "other.h"
#include "sample.h"

namespace {

std::vector<char> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

template <class Ctx, class Run>
bool run_and_check(Ctx* ctx, Run run, const std::string& data, const char* what) {
  const std::vector<char> in = read(data + "/input_0.bin");
  const std::vector<char> expected = read(data + "/output_0.bin");
  std::vector<char> out[4];
  for (int i = 0; i < 4; ++i) out[i].resize(read(data + "/output_" + std::to_string(i) + ".bin").size());
  const void* inputs[] = {in.data()};
  void* outputs[] = {out[0].data(), out[1].data(), out[2].data(), out[3].data()};
  if (run(ctx, inputs, outputs) != 0) {
    std::printf("FAIL: %s did not run\n", what);
    return false;
  }
  const float* a = reinterpret_cast<const float*>(out[0].data());
  const float* b = reinterpret_cast<const float*>(expected.data());
  for (std::size_t k = 0; k < expected.size() / 4; ++k) {
    if (std::fabs(a[k] - b[k]) > 1e-5f + 1e-5f * std::fabs(b[k])) {
      std::printf("FAIL: %s output 0[%zu] = %g, expected %g\n", what, k, a[k], b[k]);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  sample_ctx* s[2] = {nullptr, nullptr};
  other_ctx* o[2] = {nullptr, nullptr};
  bool ok = true;
  for (int i = 0; i < 2; ++i) {
    ok = ok && sample_create(&s[i], 0) == 0 && other_create(&o[i], 0) == 0;
  }
  for (int rep = 0; ok && rep < 2; ++rep) {
    for (int i = 0; i < 2; ++i) {
      ok = ok && run_and_check(s[i], sample_run_host, argv[1], "sample");
      ok = ok && run_and_check(o[i], other_run_host, argv[1], "other");
    }
  }
  for (int i = 0; i < 2; ++i) {
    sample_destroy(s[i]);
    other_destroy(o[i]);
  }
  std::printf(ok ? "two_models_driver: all checks passed\n" : "two_models_driver: FAILED\n");
  return ok ? 0 : 1;
}

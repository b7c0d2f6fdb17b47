// tests/codegen/sample_driver.cpp — runs the emitted sample model through its C API (linked from
// libsample_emu.a or libsample.a) on test_data/ (emit_sample.cpp) and checks every output, plus
// the API's metadata and error paths:  sample_driver DATA_DIR [WEIGHTS_FILE]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "sample.h"

namespace {

std::vector<char> read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const std::string data = argv[1];
  check(sample_num_inputs() == 1, "one input");
  check(sample_num_outputs() == 4, "four outputs");
  check(std::strcmp(sample_input_name(0), "x") == 0, "input name");
  check(sample_input_dtype(0) == 1 && sample_input_rank(0) == 3 && sample_input_shape(0)[2] == 4, "input type");
  check(std::strcmp(sample_output_name(1), "x") == 0, "output 1 keeps the input's name");
  check(sample_output_rank(3) == 1 && sample_output_shape(3)[0] == 5, "output 3 shape");
  check(sample_input_name(1) == nullptr && sample_output_rank(-1) == -1, "out of range");
  check(sample_workspace_bytes() > 0, "workspace");
  check(std::strlen(sample_error(nullptr)) > 0, "error of a null context");

  sample_ctx* ctx = nullptr;
#ifdef SAMPLE_WEIGHTS_FILE
  {
    // Missing, a character device (never ends) and a FIFO (would block): error 5 at once; a read
    // that blocks ends the driver (SIGALRM) rather than hang the test.
    const std::string fifo = data + "/fifo_weights.bin";
    ::unlink(fifo.c_str());
    check(::mkfifo(fifo.c_str(), 0600) == 0, "mkfifo " + fifo);
    ::alarm(20);
    for (const std::string& path : {std::string("/nonexistent/sample_weights.bin"), std::string("/dev/zero"), fifo}) {
      sample_ctx* bad = nullptr;
      const int r = sample_create_with_weights(&bad, 0, path.c_str());
      check(r == 5, path + ": a weights file that cannot be read is error 5");
      check(std::strstr(sample_error(bad), ("the weights file " + path + ": ").c_str()) != nullptr,
            path + ": the error names the file");
      sample_destroy(bad);
    }
    ::alarm(0);
    ::unlink(fifo.c_str());
  }
  const int rc = sample_create_with_weights(&ctx, 0, argc > 2 ? argv[2] : nullptr);
#else
  const int rc = sample_create(&ctx, 0);
#endif
  if (rc != 0) {
    std::printf("FAIL: create: %d %s\n", rc, sample_error(ctx));
    return 1;
  }
  check(sample_run_host(ctx, nullptr, nullptr) == 2, "null arrays are a bad argument");
  check(std::strstr(sample_error(ctx), "null") != nullptr, "... and the error says so");

  const std::vector<char> in = read(data + "/input_0.bin");
  std::vector<std::vector<char>> expected, out;
  for (int i = 0; i < 4; ++i) {
    expected.push_back(read(data + "/output_" + std::to_string(i) + ".bin"));
    out.emplace_back(expected.back().size(), 0);
  }
  const void* inputs[] = {in.data()};
  void* outputs[] = {out[0].data(), out[1].data(), out[2].data(), out[3].data()};
  for (int rep = 0; rep < 2; ++rep) {  // the second run replays the graph
    for (auto& o : out) std::fill(o.begin(), o.end(), 0);
    const int r = sample_run_host(ctx, inputs, outputs);
    check(r == 0, std::string("run_host: ") + sample_error(ctx));
    check(sample_error(ctx)[0] == '\0', "no error after a run");
    for (int i = 0; i < 4; ++i) {
      const float* a = reinterpret_cast<const float*>(out[i].data());
      const float* b = reinterpret_cast<const float*>(expected[i].data());
      for (std::size_t k = 0; k < out[i].size() / 4; ++k) {
        if (std::fabs(a[k] - b[k]) > 1e-5f + 1e-5f * std::fabs(b[k])) {
          check(false, "output " + std::to_string(i) + "[" + std::to_string(k) + "] = " + std::to_string(a[k]) +
                           ", expected " + std::to_string(b[k]));
          break;
        }
      }
    }
  }
  sample_destroy(ctx);
  sample_destroy(nullptr);
  if (failures == 0) std::printf("sample_driver: all checks passed\n");
  return failures == 0 ? 0 : 1;
}

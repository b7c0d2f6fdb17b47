// tests/verdict/verify_planted.cpp — `modelc verify --emulate --fp16` on a model (issue 28: PP-OCRv4's
// text detector at 320x320, whose output is a [0, 1] probability map, mostly near 0) must PASS, and
// the same program with a planted FP16 bug must FAIL: in a copy of the emitted folder, one kernel's
// output is scaled by 1.01 (a kernel launched after it, on the same stream, multiplies every
// element of its output buffer by 1.01), chosen as the convolution two thirds of the way through
// the kernel list whose output is an FP16 arena buffer.
//
// usage: verify_planted MODEL.onnx WORK_DIR [--shape NAME=DIMS]...
// Exit 0 when both hold; 1 naming what did not.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace modelc;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The planted bug: after kernel `id`'s launch, a launch on the same stream that scales `count`
// float16 values at arena + `offset` by 1.01.
struct Plant {
  std::string id, what;
  int64_t offset = 0, count = 0;
};

Plant choose(const fs::path& dir) {
  const nlohmann::json report = nlohmann::json::parse(read(dir / "report.json"));
  std::vector<Plant> candidates;
  for (const auto& k : report.at("kernels")) {
    if (k.value("family", "").rfind("conv", 0) != 0 || !k.contains("outputs") || k["outputs"].empty()) continue;
    const auto& y = k["outputs"][0];
    if (y.is_null() || y.value("space", "") != "arena" || y.value("dtype", "") != "float16") continue;
    // The buffer's extent: the last element's index + 1 (strided, padded channels included).
    const std::vector<int64_t> shape = y.at("shape").get<std::vector<int64_t>>();
    std::vector<int64_t> strides(shape.size(), 1);
    if (y.contains("strides")) {
      strides = y["strides"].get<std::vector<int64_t>>();
    } else {
      for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
    }
    int64_t last = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) last += (shape[d] - 1) * strides[d];
    candidates.push_back({k.at("id").get<std::string>(), k.value("op", "") + " " + k.at("nodes")[0].get<std::string>(),
                          y.at("offset").get<int64_t>(), last + 1});
  }
  if (candidates.empty()) throw Error("no convolution with an FP16 arena output to plant the bug in");
  // In the second half of the network, the convolution with the largest output (a feature map, not
  // a squeeze-and-excitation gate of a few channels).
  std::size_t best = candidates.size() / 2;
  for (std::size_t i = best; i < candidates.size(); ++i) {
    if (candidates[i].count > candidates[best].count) best = i;
  }
  return candidates[best];
}

void plant(const std::string& dir, Plant* chosen) {
  const Plant p = choose(dir);
  *chosen = p;
  // The file that launches it: its block starts with the comment "// kN (family): ..." and launches
  // with MC_LAUNCH(SYMBOL, ...) or MC_LAUNCH_ON(stream, SYMBOL, ...) (the symbol may be an earlier
  // kernel's, of the same instantiation).
  const std::regex launch("(MC_LAUNCH(_ON)?\\((mc_bindings\\.streams\\[\\d+\\], )?)\\w+,[^;]*;");
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".cu") continue;
    std::string text = read(e.path());
    const std::size_t block = text.find("\n  // " + p.id + " (");
    if (block == std::string::npos) continue;
    std::smatch m;
    const std::string rest = text.substr(block);
    if (!std::regex_search(rest, m, launch)) throw Error("kernel " + p.id + "'s block in " + e.path().string() + " has no launch");
    const std::string scale = m[1].str() + "planted_scale, dim3(64), dim3(256), 0, reinterpret_cast<__half*>(arena + " +
                              std::to_string(p.offset) + "), " + std::to_string(p.count) + "LL);";
    text.insert(block + static_cast<std::size_t>(m.position(0) + m.length(0)), "\n    " + scale);
    // The kernel, after the file's last #include (the runtime's headers define __half and launch).
    const std::string kernel =
        "// planted by tests/verdict/verify_planted.cpp: kernel " + p.id + "'s output scaled by 1.01\n"
        "extern \"C\" __global__ void planted_scale(__half* y, long long n) {\n"
        "  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"
        "    y[i] = __float2half(__half2float(y[i]) * 1.01f);\n"
        "}\n";
    const std::size_t include = text.rfind("\n#include ");
    const std::size_t line_end = include == std::string::npos ? std::string::npos : text.find('\n', include + 1);
    if (line_end == std::string::npos) throw Error("no #include line in " + e.path().string());
    text.insert(line_end + 1, kernel);
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << text;
    return;
  }
  throw Error("no .cu file of " + dir + " launches kernel " + p.id);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: verify_planted MODEL.onnx WORK_DIR [--shape NAME=DIMS]...\n";
    return 2;
  }
  const fs::path work = fs::absolute(argv[2]);
  fs::remove_all(work);
  fs::create_directories(work);
  cli::VerifyOptions v;
  v.model = argv[1];
  v.emulate = true;
  v.precision.fp16 = true;
  v.against_simulation = true;  // what `modelc verify --fp16` sets (register_verify)
  v.rtol = 1e-2;
  v.atol = 1e-3;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--shape") v.load.shapes.push_back(argv[i + 1]);
  }
  int failures = 0;
  auto run = [&](cli::VerifyOptions o, const std::string& name, int want) {
    std::ostringstream out;
    int code = -1;
    try {
      code = cli::verify_model(o, out);
    } catch (const Error& e) {
      out << "error: " << e.what() << "\n";
    }
    std::cout << "---- verify " << name << ":\n" << out.str();
    const bool ok = code == want;
    std::cout << (ok ? "ok   " : "FAIL ") << name << ": exit " << code << " (expected " << want << ")\n";
    failures += !ok;
    return out.str();
  };

  v.keep = (work / "healthy").string();
  const std::string healthy = run(v, "the FP16 program", 0);
  if (!has(healthy, "[PASS by ")) {
    std::cout << "FAIL the healthy program's lines do not say which rule decided\n";
    ++failures;
  }
  Plant chosen;
  cli::VerifyOptions bad = v;
  bad.keep = (work / "planted").string();
  bad.patch_emitted = [&](const std::string& dir) { plant(dir, &chosen); };
  const std::string planted = run(bad, "the FP16 program with kernel " + std::string("(planted)") + " x 1.01",
                                  cli::kExitMismatch);
  std::cout << "planted: kernel " << chosen.id << " (" << chosen.what << "), " << chosen.count
            << " float16 values at arena+" << chosen.offset << " scaled by 1.01\n";
  if (!has(planted, "[FAIL: ")) {
    std::cout << "FAIL the planted program's lines do not say which rule failed\n";
    ++failures;
  }
  std::cout << (failures ? "FAILED: " + std::to_string(failures) + " check(s)" : std::string("PASS")) << "\n";
  return failures ? 1 : 0;
}

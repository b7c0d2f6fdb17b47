// --tuning-cache FILE [--strict-cache] on the compile command: a cache changes a tensor-core
// kernel's tactic, two compiles with it write the same bytes, a cache for another GPU warns (or is
// refused with --strict-cache), and a bad cache is an error naming it with nothing written.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;
namespace fs = std::filesystem;

namespace {

// The tensor-core kernel of a compiled folder's report.json.
nlohmann::json tc_kernel(const fs::path& dir) {
  const nlohmann::json r = nlohmann::json::parse(read_bytes((dir / "report.json").string()));
  for (const auto& k : r.at("kernels")) {
    if (k.contains("tuning_signature")) return k;
  }
  FAIL("no kernel with a tuning_signature in " << (dir / "report.json").string());
  return {};
}

// Every file under `a` has the same bytes under `b`, and the other way round.
void same_folders(const fs::path& a, const fs::path& b) {
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_regular_file()) continue;
    const fs::path rel = fs::relative(e.path(), a);
    INFO(rel.string());
    REQUIRE(fs::exists(b / rel));
    CHECK(read_bytes(e.path().string()) == read_bytes((b / rel).string()));
    ++files;
  }
  std::size_t other = 0;
  for (const auto& e : fs::recursive_directory_iterator(b)) other += e.is_regular_file() ? 1 : 0;
  CHECK(files == other);
  CHECK(files > 5);
}

std::string cache_json(int sm, int sm_count, const std::string& signature, const std::string& winner,
                       const std::string& loser) {
  nlohmann::ordered_json j;
  j["modelc_tuning"] = 1;
  j["device"] = {{"name", "Test GPU"}, {"sm", sm}, {"sm_count", sm_count}, {"driver", "1.0"}};
  j["kernels"] = nlohmann::ordered_json::array(
      {{{"signature", signature},
        {"tactic", winner},
        {"candidates", {{{"tactic", winner}, {"us", 3.0}}, {{"tactic", loser}, {"us", 4.5}}}}}});
  return j.dump(1);
}

}  // namespace

TEST_CASE("--tuning-cache: the measured winner, byte-identical compiles, another GPU, a bad cache") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(conv_relu_model(32, 16)));
  Result r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 -o plain");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  const nlohmann::json plain = tc_kernel(dir / "plain");
  const std::string signature = plain.at("tuning_signature");
  CHECK(signature.rfind("conv float16 nhwc batch 1 M 256 N 32 K ", 0) == 0);
  const std::string note = plain.at("note");
  INFO(note);
  // The estimate's choice, as the note names it, measured slower than a candidate it did not
  // choose: 32x32 tiles (or 64x64 ones), 2 stages, no split.
  const std::size_t from = note.find("tensor-core tile "), to = note.find(" for sm_80");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  const std::string loser = note.substr(from + 17, to - from - 17);
  const std::string small = "32x32x32 w1x1 cp.async 2 stages", big = "64x64x32 w2x2 cp.async 2 stages";
  const std::string winner = loser == small ? big : small;

  write_bytes(dir / "cache.json", cache_json(80, 108, signature, winner, loser));
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache cache.json -o tuned");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "tuning cache: 1 kernel signatures measured on Test GPU (sm_80, 108 SMs, driver 1.0)"));
  CHECK(r.err.find("warning") == std::string::npos);
  const nlohmann::json tuned = tc_kernel(dir / "tuned");
  CHECK(tuned.at("tactic") != plain.at("tactic"));
  const std::string tuned_note = tuned.at("note");
  CHECK(has(tuned_note, "tensor-core tile " + winner + " for sm_80: tuned, 3.00 us measured on Test GPU (cache.json)"));
  CHECK(has(tuned_note, "measured 4.50 us (1.50x the tuned time)"));
  CHECK(has(read_bytes((fs::path(dir / "tuned") / "report.md").string()), "tuned, 3.00 us"));
  // The same model, flags and cache: the same bytes.
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache cache.json -o tuned_again");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  same_folders(dir / "tuned", dir / "tuned_again");

  // Another GPU: a cache for sm_90 on an sm_80 compile is not used (a warning), refused with
  // --strict-cache (exit 1, naming the file, nothing written); another SM count likewise.
  write_bytes(dir / "h100.json", cache_json(90, 132, signature, winner, loser));
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache h100.json -o other");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.err, "warning: h100.json: the tuning cache is for another GPU"));
  CHECK(has(r.err, "which no --arch targets: it is not used"));
  CHECK(tc_kernel(dir / "other").at("tactic") == plain.at("tactic"));
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache h100.json --strict-cache -o strict");
  CHECK(r.code == 1);
  CHECK(has(r.err, "h100.json"));
  CHECK(has(r.err, "--strict-cache"));
  CHECK_FALSE(fs::exists(dir / "strict"));
  write_bytes(dir / "a100_40.json", cache_json(80, 100, signature, winner, loser));
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache a100_40.json -o other_count");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.err, "(100 SMs); the cost model's sm_80 is A100 SXM4 80GB (108 SMs)"));
  CHECK(tc_kernel(dir / "other_count").at("tactic") == tuned.at("tactic"));  // used anyway
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache a100_40.json --strict-cache -o strict");
  CHECK(r.code == 1);
  CHECK_FALSE(fs::exists(dir / "strict"));

  // Usage and bad caches.
  r = run_modelc(dir, "m.onnx --fp16 --strict-cache -o strict");
  CHECK(r.code == 2);
  CHECK(has(r.err, "--tuning-cache"));
  write_bytes(dir / "bad.json", "{\"modelc_tuning\": 1}");
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache bad.json -o bad");
  CHECK(r.code == 1);
  CHECK(has(r.err, "bad.json"));
  CHECK(has(r.err, "not a modelc tuning cache"));
  CHECK_FALSE(fs::exists(dir / "bad"));
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 --tuning-cache missing.json -o bad");
  CHECK(r.code == 1);
  CHECK(has(r.err, "missing.json"));
  CHECK_FALSE(fs::exists(dir / "bad"));
}

TEST_CASE("modelc tune: the tuning folder, its flags, and what it refuses") {
  TempDir dir;
  write_bytes(dir / "m.onnx", serialize(conv_relu_model(32, 16)));
  Result r = run_modelc(dir, "tune m.onnx --fp16 --arch sm_80 --candidates 3 -o t");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "wrote t (sm_80): 1 kernel signatures, 3 candidates (at most 3 each)"));
  const nlohmann::json manifest = nlohmann::json::parse(read_bytes((fs::path(dir / "t") / "tuning.json").string()));
  CHECK(manifest.at("generator") == "modelc");
  CHECK(manifest.at("flags") == "--arch sm_80 --fp16");
  REQUIRE(manifest.at("signatures").size() == 1);
  CHECK(manifest.at("signatures")[0].at("candidates").size() == 3);
  for (const char* f : {"Makefile", "README.md", "m_tune.cu", "m_tune_s0.cu", "runtime/tune.h", "runtime/runtime.h",
                        "kernels/tensor_core.cuh"}) {
    CHECK_MESSAGE(fs::exists(fs::path(dir / "t") / f), f);
  }
  CHECK(has(read_bytes((fs::path(dir / "t") / "README.md").string()), "modelc m.onnx --arch sm_80 --fp16 --tuning-cache m.tuning.json"));
  // The same command again: the same bytes (the folder is replaced).
  r = run_modelc(dir, "tune m.onnx --fp16 --arch sm_80 --candidates 3 -o t2");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_modelc(dir, "tune m.onnx --fp16 --arch sm_80 --candidates 3 -o t");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  same_folders(dir / "t", dir / "t2");

  // Refused: FP32 (nothing on tensor cores), two archs, two batches, a model folder as -o, no
  // model, --collect without -o or with a model, a bad times file; nothing written.
  r = run_modelc(dir, "tune m.onnx --arch sm_80 -o fp32");
  CHECK(r.code == 1);
  CHECK(has(r.err, "no tensor-core convolution or matrix product on sm_80"));
  CHECK_FALSE(fs::exists(dir / "fp32"));
  r = run_modelc(dir, "tune m.onnx --fp16 --arch sm_80,sm_90 -o two");
  CHECK(r.code == 2);
  CHECK(has(r.err, "give one --arch"));
  r = run_modelc(dir, "tune m.onnx --fp16 --arch sm_80 --batch 1,2 -o two");
  CHECK(r.code == 2);
  CHECK(has(r.err, "one batch"));
  CHECK_FALSE(fs::exists(dir / "two"));
  r = run_modelc(dir, "m.onnx --fp16 --arch sm_80 -o model");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_modelc(dir, "tune m.onnx --fp16 --arch sm_80 -o model");
  CHECK(r.code == 1);
  CHECK(has(r.err, "is not a modelc output"));
  CHECK(fs::exists(fs::path(dir / "model") / "report.json"));
  r = run_modelc(dir, "tune --fp16");
  CHECK(r.code == 2);
  CHECK(has(r.err, "needs a model"));
  r = run_modelc(dir, "tune --candidates 0 m.onnx --fp16");
  CHECK(r.code == 2);
  r = run_modelc(dir, "tune --collect t/tuning.json");
  CHECK(r.code == 2);
  CHECK(has(r.err, "-o"));
  r = run_modelc(dir, "tune m.onnx --collect t/tuning.json -o c.json");
  CHECK(r.code == 2);
  r = run_modelc(dir, "tune --collect t/tuning.json -o c.json");
  CHECK(r.code == 1);
  CHECK(has(r.err, "t/tuning.json"));
  CHECK(has(r.err, "not a tuning driver's times"));
  CHECK_FALSE(fs::exists(dir / "c.json"));
}

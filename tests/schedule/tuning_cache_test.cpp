// schedule/tuning_cache: the cache's reader and writer (a hostile file is an Error naming it), and
// the tensor-core tactic rule taking a measured winner only where it is one of its candidates.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "schedule/tactics.h"
#include "schedule/target.h"
#include "schedule/tuning_cache.h"
#include "support/error.h"

using namespace modelc;

namespace {

TuningCache sample_cache() {
  TuningCache c;
  c.device = {"NVIDIA H100 80GB HBM3", 90, 132, "570.86"};
  TunedKernel k;
  k.signature = "conv float16 nhwc batch 1 M 3136 N 64 K 576";
  k.tactic = "64x64x32 w2x2 cp.async 3 stages";
  k.candidates = {{"128x64x32 w2x2 cp.async 2 stages", 13.9}, {"64x64x32 w2x2 cp.async 3 stages", 11.25}};
  c.kernels[k.signature] = k;
  return c;
}

// from_json's Error for `text`: it must name the file and say it is not a tuning cache.
std::string refusal(const std::string& text) {
  try {
    TuningCache::from_json(text, "cache.json");
  } catch (const Error& e) {
    CHECK(e.where().file == "cache.json");
    CHECK(std::string(e.what()).find("not a modelc tuning cache") != std::string::npos);
    return e.what();
  }
  FAIL("accepted: " << text);
  return "";
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const std::size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("tuning cache: to_json and from_json round trip, candidates fastest first") {
  const TuningCache c = sample_cache();
  const std::string json = c.to_json();
  // Readable and diffable: the winner and the candidates by name, fastest first.
  CHECK(json.find("\"modelc_tuning\": 1") != std::string::npos);
  CHECK(json.find("64x64x32 w2x2 cp.async 3 stages") < json.find("128x64x32 w2x2 cp.async 2 stages"));
  const TuningCache r = TuningCache::from_json(json, "cache.json");
  CHECK(r.file == "cache.json");
  CHECK(r.device.name == "NVIDIA H100 80GB HBM3");
  CHECK(r.device.sm == 90);
  CHECK(r.device.sm_count == 132);
  CHECK(r.device.driver == "570.86");
  REQUIRE(r.kernels.size() == 1);
  const TunedKernel* k = r.find("conv float16 nhwc batch 1 M 3136 N 64 K 576");
  REQUIRE(k);
  CHECK(k->tactic == "64x64x32 w2x2 cp.async 3 stages");
  CHECK(k->us_of("128x64x32 w2x2 cp.async 2 stages") == 13.9);
  CHECK(k->us_of("32x32x32 w1x1 cp.async 2 stages") < 0);
  CHECK(r.to_json() == json);  // the same bytes again
  CHECK(r.find("gemm float16 batch 1 M 1 N 1 K 1") == nullptr);
}

TEST_CASE("tuning cache: a file that is not one is refused, naming the file") {
  const std::string good = sample_cache().to_json();
  CHECK(refusal("not json").find("invalid JSON") != std::string::npos);
  CHECK(refusal("{\"x\": 1}").find("no \"modelc_tuning\": 1") != std::string::npos);
  CHECK(refusal(replaced(good, "\"modelc_tuning\": 1", "\"modelc_tuning\": 2")).find("modelc_tuning") != std::string::npos);
  CHECK(refusal(std::string(100, '[') + std::string(100, ']')).find("deeper than") != std::string::npos);
  CHECK(refusal(replaced(good, "\"sm\": 90", "\"sm\": \"90\"")).find("\"sm\" is not an integer") != std::string::npos);
  CHECK(refusal(replaced(good, "\"sm_count\": 132", "\"sm_count\": 0")).find("not in [1, 100000]") != std::string::npos);
  CHECK(refusal(replaced(good, "\"sm_count\": 132,", "")).find("missing") != std::string::npos);
  CHECK(refusal(replaced(good, "\"driver\": \"570.86\"", "\"driver\": \"" + std::string(5000, 'x') + "\""))
            .find("more than 4096") != std::string::npos);
  CHECK(refusal(replaced(good, "13.9", "-1")).find("not in (0, 1e9]") != std::string::npos);
  CHECK(refusal(replaced(good, "13.9", "0")).find("not in (0, 1e9]") != std::string::npos);
  CHECK(refusal(replaced(good, "13.9", "1e300")).find("not in (0, 1e9]") != std::string::npos);
  // The winner must be measured, and the fastest.
  CHECK(refusal(replaced(good, "\"tactic\": \"64x64x32 w2x2 cp.async 3 stages\",", "\"tactic\": \"16x16x16 w1x1\","))
            .find("is not among its candidates") != std::string::npos);
  CHECK(refusal(replaced(good, "11.25", "20")).find("is not the fastest candidate") != std::string::npos);
  CHECK(refusal(replaced(good, "128x64x32 w2x2 cp.async 2 stages", "64x64x32 w2x2 cp.async 3 stages"))
            .find("listed twice") != std::string::npos);
  // A signature listed twice.
  const std::string entry_start = "  {\n   \"signature\"";
  const std::size_t a = good.find(entry_start), b = good.rfind("\n ]");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string entry = good.substr(a, b - a);
  const std::string twice = good.substr(0, b) + ",\n" + entry + good.substr(b);
  CHECK(refusal(twice).find("is listed twice") != std::string::npos);
  // Reading a file: a missing file and a folder are refused naming the path.
  CHECK_THROWS_WITH_AS(TuningCache::read("/nonexistent/cache.json"), doctest::Contains("--tuning-cache"), Error);
  CHECK_THROWS_WITH_AS(TuningCache::read("/"), doctest::Contains("--tuning-cache"), Error);
}

TEST_CASE("tuning cache: choose_tc_tile takes the measured winner only where it is a candidate") {
  const Target t80 = target_for("sm_80");
  const linear::TcProblem p{1, 3136, 64, 576, 2.0 * (3136 * 576 + 64 * 576 + 3136 * 64)};
  std::string why_default;
  const TcTile def = linear::choose_tc_tile(p, t80, &why_default);
  // A candidate other than the estimate's choice: 32x32 tiles, 2 stages, no split.
  TcTile other{32, 32, 32, 1, 1, true, false};
  other.stages = 2;
  if (other == def) other = TcTile{64, 64, 32, 2, 2, true, false};
  REQUIRE(other != def);

  TuningCache cache;
  cache.file = "cache.json";
  cache.device = {"NVIDIA A100-SXM4-80GB", 80, 108, "570.86"};
  Target tuned_target = t80;
  tuned_target.tuning = &cache;
  TunedKernel k;
  k.signature = "s";
  k.tactic = other.name();
  k.candidates = {{other.name(), 5.0}, {def.name(), 7.5}};

  std::string why;
  const TcTile got = linear::choose_tc_tile(p, tuned_target, &why, &k);
  CHECK(got == other);
  INFO(why);
  CHECK(why.find("tuned, 5.00 us measured on NVIDIA A100-SXM4-80GB (cache.json)") != std::string::npos);
  CHECK(why.find("the estimate's choice, " + def.name() + ", measured 7.50 us (1.50x the tuned time)") !=
        std::string::npos);

  // The estimate's own choice measured fastest: the same tile, said so.
  TunedKernel same = k;
  same.tactic = def.name();
  same.candidates = {{def.name(), 4.0}, {other.name(), 5.0}};
  CHECK(linear::choose_tc_tile(p, tuned_target, &why, &same) == def);
  CHECK(why.find("the estimate's choice too") != std::string::npos);

  // A winner that is not a candidate for this problem (a 256-wide tile, or a split-K of 64): the
  // estimate's choice, and the note says why the cache was not followed.
  TunedKernel planted = k;
  planted.tactic = "256x256x32 w4x4 cp.async 2 stages";
  planted.candidates = {{planted.tactic, 1.0}};
  CHECK(linear::choose_tc_tile(p, tuned_target, &why, &planted) == def);
  CHECK(why.find("the tuning cache's tactic, 256x256x32 w4x4 cp.async 2 stages, is not a candidate here") !=
        std::string::npos);
  TunedKernel split = k;
  TcTile split_tile = def;
  split_tile.split_k = 64;
  split.tactic = split_tile.name();
  split.candidates = {{split.tactic, 1.0}};
  CHECK(linear::choose_tc_tile(p, tuned_target, &why, &split) == def);
}

TEST_CASE("tuning: tc_candidates lists the cost model's choice first, then distinct tiles by its ranking") {
  const Target t80 = target_for("sm_80");
  const linear::TcProblem p{1, 3136, 64, 576, 2.0 * (3136 * 576 + 64 * 576 + 3136 * 64)};
  const TcTile def = linear::choose_tc_tile(p, t80);
  const std::vector<TcCandidate> c = linear::tc_candidates(p, t80, 8);
  REQUIRE(c.size() == 8);
  CHECK(c[0].tile == def);
  for (std::size_t i = 0; i < c.size(); ++i) {
    CHECK(c[i].estimate.us > 0);
    CHECK(c[i].workspace_bytes == c[i].tile.workspace_bytes(1, 3136, 64));
    CHECK(c[i].tile.smem_bytes() <= t80.smem_per_block);
    for (std::size_t j = 0; j < i; ++j) CHECK(c[i].tile != c[j].tile);
  }
  // After the choice, the classes in turn (SM-filling, split-K, the rest), each by estimate.
  auto rank = [&](const TcCandidate& x) { return x.estimate.blocks >= t80.sm_count ? 0 : x.tile.split_k > 1 ? 1 : 2; };
  std::map<int, double> last;
  for (std::size_t i = 1; i < c.size(); ++i) {
    const int r = rank(c[i]);
    if (last.count(r)) CHECK(last[r] <= c[i].estimate.us);
    last[r] = c[i].estimate.us;
  }
  CHECK(last.size() >= 2);  // more than one class for this problem
  // One asked: the choice alone; a tuning cache on the target does not move it.
  TuningCache cache;
  cache.device = {"x", 80, 108, "1"};
  Target tuned = t80;
  tuned.tuning = &cache;
  const std::vector<TcCandidate> one = linear::tc_candidates(p, tuned, 1);
  REQUIRE(one.size() == 1);
  CHECK(one[0].tile == def);
}

namespace {

// A tuning driver's times file (runtime_stub/tune.h) with one kernel.
std::string times_json(const std::string& device, const std::string& candidates) {
  return "{\"modelc_tuning_times\": 1, \"model\": \"m.onnx\", \"name\": \"m\", \"arch\": \"sm_80\", \"runs\": 5, "
         "\"warmup\": 1, \"device\": " + device + ", \"kernels\": [{\"signature\": \"conv float16 nhwc batch 1 M 256 N 16 K 144\", "
         "\"kernel\": \"k3\", \"candidates\": [" + candidates + "]}]}";
}

const char* kA100 = "{\"name\": \"NVIDIA A100-SXM4-80GB\", \"sm\": 80, \"sm_count\": 108, \"driver\": 12040, \"emulation\": false}";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / ("modelc_tuning_test_" + name)).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

}  // namespace

TEST_CASE("tuning: collect keeps the candidates that agreed, fastest first, and refuses other files") {
  const std::string a = write_temp(
      "a.json", times_json(kA100, "{\"tactic\": \"T1\", \"estimate_us\": 2, \"status\": \"ok\", \"us\": 3.5, \"max_error\": 0},"
                                  "{\"tactic\": \"T2\", \"estimate_us\": 3, \"status\": \"rejected\", \"max_error\": 1, \"error\": \"e\"},"
                                  "{\"tactic\": \"T3\", \"estimate_us\": 4, \"status\": \"ok\", \"us\": 2.25, \"max_error\": 0},"
                                  "{\"tactic\": \"T4\", \"estimate_us\": 4, \"status\": \"failed\", \"error\": \"launch\"}"));
  std::vector<std::string> notes;
  TuningCache c = TuningCache::collect({a}, &notes);
  CHECK(c.device.name == "NVIDIA A100-SXM4-80GB");
  CHECK(c.device.sm == 80);
  CHECK(c.device.sm_count == 108);
  CHECK(c.device.driver == "12.4");
  REQUIRE(c.kernels.size() == 1);
  const TunedKernel& k = c.kernels.begin()->second;
  CHECK(k.tactic == "T3");
  REQUIRE(k.candidates.size() == 2);  // the rejected and the failed one left out
  CHECK(k.candidates[0].tactic == "T3");
  CHECK(k.us_of("T2") < 0);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].find("2 candidate(s) rejected or failed") != std::string::npos);
  // What collect writes, the cache reader takes.
  CHECK(TuningCache::from_json(c.to_json(), "c.json").kernels.size() == 1);

  // A second file of the same device: each tactic's smallest time.
  const std::string b = write_temp(
      "b.json", times_json(kA100, "{\"tactic\": \"T1\", \"estimate_us\": 2, \"status\": \"ok\", \"us\": 1.5, \"max_error\": 0}"));
  c = TuningCache::collect({a, b});
  CHECK(c.kernels.begin()->second.tactic == "T1");
  CHECK(c.kernels.begin()->second.us_of("T1") == 1.5);

  // Another device's file, or one that is not a times file: an Error naming it.
  const std::string other = write_temp(
      "other.json",
      times_json("{\"name\": \"NVIDIA H100\", \"sm\": 90, \"sm_count\": 132, \"driver\": 12040, \"emulation\": false}",
                 "{\"tactic\": \"T1\", \"estimate_us\": 2, \"status\": \"ok\", \"us\": 1.0, \"max_error\": 0}"));
  CHECK_THROWS_WITH_AS(TuningCache::collect({a, other}), doctest::Contains("a cache holds one device's times"), Error);
  for (const std::string& bad :
       {std::string("[]"), std::string("{\"modelc_tuning\": 1}"),
        times_json(kA100, "{\"tactic\": \"T1\", \"status\": \"ok\", \"us\": -1}"),
        times_json(kA100, "{\"tactic\": \"T1\", \"status\": \"ok\"}"),
        times_json(kA100, "{\"tactic\": \"T1\", \"status\": \"great\", \"us\": 1}"),
        times_json(kA100, "{\"tactic\": \"\", \"status\": \"ok\", \"us\": 1}"),
        times_json("{\"name\": \"x\", \"sm\": 80, \"sm_count\": 0, \"driver\": 1}", "{\"tactic\": \"T\", \"status\": \"ok\", \"us\": 1}"),
        times_json(kA100, ""), std::string(100, '[')}) {
    const std::string path = write_temp("bad.json", bad);
    try {
      TuningCache::collect({path});
      FAIL("accepted: " << bad);
    } catch (const Error& e) {
      CHECK(e.where().file == path);
    }
  }
  CHECK_THROWS_WITH_AS(TuningCache::collect({"/nonexistent/times.json"}), doctest::Contains("--collect"), Error);
  for (const std::string& p : {a, b, other}) std::filesystem::remove(p);
}

TEST_CASE("tuning: collect refuses a signature whose files list more candidates than a cache may hold") {
  // fuzz_tuning's finding: one signature listed twice, 3000 distinct tactics each, distilled into one
  // entry of 6000 candidates, which the cache reader (at most 4096 for a kernel) then refused.
  auto listing = [](int first) {
    std::string s;
    for (int i = first; i < first + 3000; ++i) {
      s += std::string(s.empty() ? "" : ",") + "{\"tactic\": \"T" + std::to_string(i) + "\", \"status\": \"ok\", \"us\": 1}";
    }
    return s;
  };
  std::string twice = times_json(kA100, listing(0));
  const std::string tail = "]}]}";
  REQUIRE(twice.size() > tail.size());
  twice = twice.substr(0, twice.size() - 2) +
          ", {\"signature\": \"conv float16 nhwc batch 1 M 256 N 16 K 144\", \"candidates\": [" + listing(3000) + "]}]}";
  CHECK_THROWS_WITH_AS(TuningCache::collect_texts({{"twice.json", twice}}), doctest::Contains("distinct candidates"), Error);
  // Each half alone is a cache the reader takes.
  const TuningCache half = TuningCache::collect_texts({{"half.json", times_json(kA100, listing(0))}});
  CHECK(TuningCache::from_json(half.to_json(), "half.json").kernels.begin()->second.candidates.size() == 3000);
}

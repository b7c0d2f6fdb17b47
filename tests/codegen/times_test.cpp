// codegen/times: `modelc report DIR --times FILE.json` (the program's --export-times): the schema,
// the merge into report.json, and report.md's section.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "codegen/times.h"
#include "support/error.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using Json = nlohmann::ordered_json;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

Json kernel_times(const std::string& id, double us, bool flagged) {
  return Json{{"id", id},          {"family", "conv"},  {"tactic", "BM=64"},     {"engine", "tensor_core"},
              {"measured_us", us}, {"estimate_us", 2.0}, {"ratio", us / 2.0},     {"share", 0.5},
              {"flops", 1e6},      {"bytes", 1e5},       {"roofline_us", 0.5},    {"roofline_fraction", 0.5 / us},
              {"flagged", flagged}};
}

Json sample_times() {
  return Json{{"schema", "modelc-times/1"},
              {"model", "m"},
              {"batch", 1},
              {"profile", 0},
              {"runs", 3},
              {"device", {{"name", "a GPU"}, {"sm", 90}, {"sm_count", 132}, {"driver", 12040}, {"runtime", 12040}, {"emulation", false}}},
              {"estimate_arch", "sm_90"},
              {"estimate_part", "H100 SXM5"},
              {"timing", "3 runs"},
              {"total_us", 14.0},
              {"estimate_total_us", 4.0},
              {"kernels", Json::array({kernel_times("k0", 12.0, true), kernel_times("k1", 2.0, false)})}};
}

Json sample_report() {
  return Json{{"generator", "modelc"},
              {"model", "m"},
              {"kernels", Json::array({Json{{"id", "k0"}, {"family", "conv"}}, Json{{"id", "k1"}, {"family", "conv"}}})}};
}

std::string errors_of(const Json& times) {
  try {
    read_times(times.dump(), "t.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("times: the schema, key by key") {
  CHECK(errors_of(sample_times()).empty());
  CHECK(has(errors_of(Json::array()), "not a JSON object"));
  Json j = sample_times();
  j["schema"] = "modelc-times/2";
  CHECK(has(errors_of(j), "\"schema\" is \"modelc-times/2\""));
  j = sample_times();
  j.erase("runs");
  CHECK(has(errors_of(j), "the file has no \"runs\""));
  j = sample_times();
  j["runs"] = 0;
  CHECK(has(errors_of(j), "\"runs\" is below 1"));
  j = sample_times();
  j["device"]["sm"] = "90";
  CHECK(has(errors_of(j), "\"device\"'s \"sm\" is \"90\", not an integer"));
  j = sample_times();
  j["kernels"][1]["measured_us"] = -1.0;
  CHECK(has(errors_of(j), "kernel 1's \"measured_us\" is negative"));
  j = sample_times();
  j["kernels"][1]["flagged"] = 1;
  CHECK(has(errors_of(j), "kernel 1's \"flagged\" is 1, not true or false"));
  j = sample_times();
  j["kernels"][0]["ratio"] = nullptr;  // undefined: allowed
  CHECK(errors_of(j).empty());
  j["kernels"][1]["id"] = "k0";
  CHECK(has(errors_of(j), "kernel 1 is \"k0\" again"));
  try {
    read_times("{\"schema\": ", "t.json");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(has(e.what(), "not JSON"));
    CHECK(has(e.what(), "t.json"));
  }
}

TEST_CASE("times: merged into report.json, refused for another model's kernels") {
  Json report = sample_report();
  merge_times(report, read_times(sample_times().dump(), "t.json"), "t.json");
  CHECK(report["measured"]["device"]["name"] == "a GPU");
  CHECK(report["measured"]["estimate_arch"] == "sm_90");
  CHECK(report["kernels"][0]["measured"]["us"] == 12.0);
  CHECK(report["kernels"][0]["measured"]["flagged"] == true);
  CHECK(report["kernels"][1]["measured"]["estimate_us"] == 2.0);

  Json other = sample_report();
  other["model"] = "n";
  CHECK_THROWS_WITH(merge_times(other, sample_times(), "t.json"), doctest::Contains("the times are of model \"m\""));
  Json fewer = sample_report();
  fewer["kernels"].erase(1);
  CHECK_THROWS_WITH(merge_times(fewer, sample_times(), "t.json"), doctest::Contains("the times have 2 kernels, the report 1"));
  Json renamed = sample_report();
  renamed["kernels"][1]["id"] = "k7";
  CHECK_THROWS_WITH(merge_times(renamed, sample_times(), "t.json"), doctest::Contains("kernel 1 is \"k1\" in the times"));
  // Batch profiles: the profile the times were taken on.
  Json profiles{{"model", "m"}, {"profiles", Json::array({Json{{"kernels", Json::array({Json{{"id", "k0"}}})}},
                                                           sample_report()})}};
  Json t = sample_times();
  t["profile"] = 1;
  merge_times(profiles, t, "t.json");
  CHECK(profiles["profiles"][1]["kernels"][1]["measured"]["us"] == 2.0);
  t["profile"] = 2;
  CHECK_THROWS_WITH(merge_times(profiles, t, "t.json"), doctest::Contains("batch profile 2; the report has 2"));
}

TEST_CASE("times: report.md's section beside the roofline, replaced when folded again") {
  const std::string section = times_markdown(sample_times());
  CHECK(has(section, "## Measured times (a GPU, sm_90)"));
  CHECK(has(section, "| kernel | family | estimate us | measured us | measured / estimate | share | roofline | |"));
  CHECK(has(section, "| k0 | conv | 2.00 | 12.00 | 6.00 | 50.0% | 4.2% | flagged |"));
  CHECK(has(section, "| total | | 4.00 | 14.00 | 3.50 | 100.0% | | |"));
  CHECK(has(section, "Flagged (above 5 us at under 20% of the roofline bound): k0."));
  CHECK_FALSE(has(section, "host times"));
  Json emu = sample_times();
  emu["device"]["emulation"] = true;
  CHECK(has(times_markdown(emu), "host times of the CPU emulation"));

  const std::string md = "# m\n\n## Roofline (estimates for sm_90)\n\n| k0 |\n\n## Streams\n\nnone\n";
  const std::string once = with_times_section(md, section);
  CHECK(once.find("## Measured times") > once.find("## Roofline"));
  CHECK(once.find("## Measured times") < once.find("## Streams"));
  CHECK(has(once, "| k0 |\n\n## Measured times"));
  CHECK(has(once, "k0.\n\n## Streams"));
  const std::string twice = with_times_section(once, section);
  CHECK(twice == once);
  CHECK(count(twice, "## Measured times") == 1);
  CHECK(with_times_section("# m\n", section) == "# m\n\n" + section);  // no roofline: at the end
}

TEST_CASE("times: the command writes report.json and report.md, and says what is wrong with its input") {
  modelc::test::TempDir dir;
  {
    std::ofstream(dir / "report.json") << sample_report().dump(2);
    std::ofstream(dir / "report.md") << "# m\n\n## Roofline\n\nrows\n";
    std::ofstream(dir / "t.json") << sample_times().dump(2);
  }
  const std::string line = report_times(dir.str(), (dir / "t.json"));
  CHECK(has(line, "2 kernels measured on a GPU (14.00 us in all, 1 flagged)"));
  std::ifstream md(dir / "report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  CHECK(has(text, "## Roofline\n\nrows\n\n## Measured times"));
  std::ifstream rj(dir / "report.json");
  const Json report = Json::parse(rj);
  CHECK(report["kernels"][1]["measured"]["us"] == 2.0);
  CHECK_THROWS_WITH(report_times(dir.str(), (dir / "missing.json")),
                    doctest::Contains("not a regular file"));
  CHECK_THROWS_WITH(report_times((dir / "nowhere"), (dir / "t.json")),
                    doctest::Contains("has no report.json"));
}

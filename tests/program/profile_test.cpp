// runtime_stub/profile.h (./NAME --profile, --export-times) and its reader, codegen/times.h
// (`modelc report DIR --times`): the figures, the target row, the flags, and that the JSON the
// program writes is what the reader's schema takes.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "codegen/times.h"
#include "runtime_stub/cli.h"
#include "support/error.h"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

char* arg(const char* s) { return const_cast<char*>(s); }

// Two targets (sm_75, sm_90) and three kernels: a memory-bound copy, a tensor-core product, and a
// kernel with nothing to run.
const mc_cli::TargetRates kTargets[] = {{75, "T4", 320, 65, 130, 8.1}, {90, "H100 SXM5", 3350, 989, 1979, 67}};
const mc_cli::KernelEstimate kEstimates[] = {
    {2.0, 0, 3.2e6, "simt"},         {1.0, 0, 3.2e6, "simt"},          // k0: 3.2 MB
    {10.0, 6.5e8, 1e5, "tensor_core"}, {2.0, 6.5e8, 1e5, "tensor_core"},  // k1: 650 MFLOP
    {1.4, 0, 0, "simt"},             {1.4, 0, 0, "simt"},              // k2
};
const mc_cli::KernelFacts kKernels[] = {{"k0", "elementwise", "block=256", kEstimates + 0},
                                        {"k1", "gemm", "BM=64 BN=64", kEstimates + 2},
                                        {"k2", "concat", "", kEstimates + 4}};
const mc_cli::ProfileFacts kProfiles[] = {{3, kKernels}};
const mc_cli::Estimates kFacts = {2, kTargets, 1, kProfiles};

mc_cli::DeviceFacts device(int sm) {
  mc_cli::DeviceFacts d;
  d.name = "a GPU";
  d.sm = sm;
  d.sm_count = 100;
  d.driver = 12040;
  d.runtime = 12040;
  return d;
}

}  // namespace

TEST_CASE("profile.h: the device's target row, the roofline, the ratios and the flags") {
  CHECK(mc_cli::target_for(kFacts, 75) == 0);
  CHECK(mc_cli::target_for(kFacts, 86) == 0);  // the newest not above it
  CHECK(mc_cli::target_for(kFacts, 90) == 1);
  CHECK(mc_cli::target_for(kFacts, 100) == 1);
  CHECK(mc_cli::target_for(kFacts, 70) == 0);  // below all: the oldest
  // On sm_90: k0's 3.2 MB at 3350 GB/s is 0.955 us; k1's 650 MFLOP at 989 TFLOPS 0.657 us.
  const mc_cli::ProfileReport r =
      mc_cli::make_profile_report("m", {"k0", "k1", "k2"}, {20.0f, 3.0f, 0.0f}, &kFacts, 0, device(90));
  REQUIRE(r.kernels.size() == 3);
  CHECK(r.estimate_sm == 90);
  CHECK(r.estimate_part == "H100 SXM5");
  CHECK(r.total_us == doctest::Approx(23.0));
  CHECK(r.estimate_total_us == doctest::Approx(4.4));
  const mc_cli::KernelTime& k0 = r.kernels[0];
  CHECK(k0.family == "elementwise");
  CHECK(k0.estimate_us == doctest::Approx(1.0));
  CHECK(k0.ratio == doctest::Approx(20.0));
  CHECK(k0.share == doctest::Approx(20.0 / 23.0));
  CHECK(k0.roofline_us == doctest::Approx(3.2e6 / 3.35e6));
  CHECK(k0.roofline_fraction == doctest::Approx(3.2e6 / 3.35e6 / 20.0));
  CHECK(k0.flagged);  // above 5 us at 4.8% of its bound
  const mc_cli::KernelTime& k1 = r.kernels[1];
  CHECK(k1.roofline_us == doctest::Approx(6.5e8 / 9.89e8));  // FLOPs at the tensor-core rate
  CHECK_FALSE(k1.flagged);  // below 5 us
  const mc_cli::KernelTime& k2 = r.kernels[2];
  CHECK(k2.ratio < 0);  // no time: undefined
  CHECK(k2.roofline_fraction < 0);
  CHECK_FALSE(k2.flagged);
  // On sm_75 the same times read against T4's rates and estimates.
  const mc_cli::ProfileReport t4 = mc_cli::make_profile_report("m", {"k0", "k1", "k2"}, {20.0f, 3.0f, 0.0f}, &kFacts, 0, device(75));
  CHECK(t4.kernels[0].estimate_us == doctest::Approx(2.0));
  CHECK(t4.kernels[1].roofline_us == doctest::Approx(6.5e8 / 6.5e7));  // 10 us at 65 TFLOPS
  CHECK(t4.kernels[1].roofline_fraction == doctest::Approx(10.0 / 3.0));
  // Kernels the table does not name (a NAME_main.cu of another compile) keep their times only.
  const mc_cli::ProfileReport other = mc_cli::make_profile_report("m", {"k0", "k5"}, {1.0f, 2.0f}, &kFacts, 0, device(90));
  CHECK(other.kernels[1].family.empty());
  CHECK(other.kernels[1].estimate_us == 0);
  const mc_cli::ProfileReport none = mc_cli::make_profile_report("m", {"k0"}, {1.0f}, nullptr, 0, device(90));
  CHECK(none.estimate_sm == 0);

  const std::string text = mc_cli::profile_text(r);
  CHECK(has(text, "estimates for sm_90 (H100 SXM5)"));
  CHECK(has(text, "  k0      elementwise            20.000        1.000   20.00   87.0%      4.8%  [flagged] block=256\n"));
  CHECK(has(text, "  k2      concat                  0.000        1.400       -    0.0%         -\n"));
  CHECK(has(text, "flagged (above 5 us at under 20% of the roofline bound): k0 (elementwise, 20.0 us, 4.8%)"));
}

TEST_CASE("profile.h: --export-times' JSON is what `modelc report --times` reads") {
  mc_cli::ProfileReport r =
      mc_cli::make_profile_report("m \"q\"", {"k0", "k1", "k2"}, {20.0f, 3.0f, 0.0f}, &kFacts, 0, device(90));
  r.batch = 1;
  r.runs = 5;
  const std::string json = mc_cli::profile_json(r);
  const nlohmann::ordered_json j = modelc::read_times(json, "t.json");
  CHECK(j["model"] == "m \"q\"");
  CHECK(j["runs"] == 5);
  CHECK(j["device"]["sm"] == 90);
  CHECK(j["estimate_arch"] == "sm_90");
  REQUIRE(j["kernels"].size() == 3);
  CHECK(j["kernels"][0]["flagged"] == true);
  CHECK(j["kernels"][2]["ratio"].is_null());
  CHECK(j["kernels"][1]["roofline_us"].get<double>() == doctest::Approx(6.5e8 / 9.89e8));
  CHECK(j["total_us"].get<double>() == doctest::Approx(23.0));
}

TEST_CASE("cli.h: --profile takes an optional count; --export-times implies it") {
  {
    char* argv[] = {arg("./m"), arg("--profile")};
    CHECK(mc_cli::parse_args(2, argv).profile == mc_cli::kDefaultProfileRuns);
  }
  {
    char* argv[] = {arg("./m"), arg("--profile"), arg("3"), arg("--seed"), arg("2")};
    const mc_cli::Args a = mc_cli::parse_args(5, argv);
    CHECK(a.profile == 3);
    CHECK(a.seed == 2);
  }
  {
    char* argv[] = {arg("./m"), arg("--profile"), arg("--seed"), arg("2")};
    CHECK(mc_cli::parse_args(4, argv).profile == mc_cli::kDefaultProfileRuns);
  }
  {
    char* argv[] = {arg("./m"), arg("--profile=7")};
    CHECK(mc_cli::parse_args(2, argv).profile == 7);
  }
  {
    char* argv[] = {arg("./m"), arg("--export-times"), arg("t.json")};
    const mc_cli::Args a = mc_cli::parse_args(3, argv);
    CHECK(a.profile == mc_cli::kDefaultProfileRuns);
    CHECK(a.export_times == "t.json");
  }
  for (const char* bad : {"--profile=0", "--profile=x", "--profile=-1"}) {
    char* argv[] = {arg("./m"), arg(bad)};
    CHECK_THROWS_AS(mc_cli::parse_args(2, argv), mc_cli::Failure);
  }
  char* empty[] = {arg("./m"), arg("--export-times"), arg("")};
  CHECK_THROWS_AS(mc_cli::parse_args(3, empty), mc_cli::Failure);
}

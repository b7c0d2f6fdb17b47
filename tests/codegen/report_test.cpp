// codegen/report: tensor core or SIMT per convolution and matrix product, with the reason and
// the tactic per arch; the nodes a fused kernel covers; the entry points each kernel launches.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "codegen/emitter.h"
#include "codegen/report.h"
#include "schedule/families.h"
#include "frontend/onnx_import.h"
#include "pipeline/pipeline.h"
#include "support/build_paths.h"

using namespace modelc;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Kernel conv_kernel(const std::string& id, Engine engine, const std::string& reason) {
  Kernel k;
  k.id = id;
  k.family = &family_facts("conv");
  k.engine = engine;
  k.fallback_reason = reason;
  k.nodes = {"/conv_" + id + "/Conv"};
  k.tactic = DirectTactic{64};
  return k;
}

}  // namespace

TEST_CASE("report: GEMV kernels counted apart from SIMT, with their reason") {
  Schedule s;
  s.name = "m";
  s.archs = {"sm_80"};
  s.kernels.push_back(conv_kernel("k0", Engine::tensor_core, ""));
  s.kernels.push_back(conv_kernel("k1", Engine::gemv, "at most 8 rows: GEMV"));
  s.kernels.push_back(conv_kernel("k2", Engine::simt, "FP32 storage"));
  CHECK(engine_summary(s) ==
        "3 kernels; 3 convolutions/matrix products: 1 on tensor cores, 1 on GEMV, 1 on SIMT (FP32 storage: 1)");
  CHECK(fallback_reason_of(s.kernels[1]) == "at most 8 rows: GEMV");
  const nlohmann::json j = nlohmann::json::parse(report_json(s, ReportInfo{}));
  CHECK(j["engines"]["gemv"] == 1);
  CHECK(j["engines"]["simt"] == 1);
  CHECK_FALSE(j["engines"]["simt_reasons"].contains("at most 8 rows: GEMV"));
  CHECK(j["kernels"][1]["engine"] == "gemv");
  CHECK(report_markdown(s, ReportInfo{}).find("| GEMV | at most 8 rows: GEMV |") != std::string::npos);
}

TEST_CASE("report: tensor core or SIMT per convolution and matrix product, and why") {
  Schedule s;
  s.name = "m";
  s.archs = {"sm_75", "sm_90"};
  s.kernels.push_back(conv_kernel("k0", Engine::tensor_core, ""));
  s.kernels.back().arch_tactic = {{75, TcTile{128, 64, 32, 2, 2, false, false}}, {90, TcTile{64, 64, 32, 2, 2, true, false}}};
  s.kernels.push_back(conv_kernel("k1", Engine::simt, "depthwise (groups = C)"));
  s.kernels.push_back(conv_kernel("k2", Engine::simt, "FP32 storage"));
  s.kernels.push_back(conv_kernel("k3", Engine::simt, "FP32 storage"));
  Kernel other;
  other.id = "k4";
  other.family = &family_facts("elementwise");
  other.nodes = {"/relu/Relu"};
  s.kernels.push_back(other);
  Kernel fused = conv_kernel("k5", Engine::tensor_core, "");
  fused.nodes = {"/c/Conv", "/bn/BatchNormalization", "/r/Relu"};
  s.kernels.push_back(fused);

  CHECK(engine_summary(s) ==
        "6 kernels; 5 convolutions/matrix products: 2 on tensor cores, 3 on SIMT (FP32 storage: 2, depthwise "
        "(groups = C): 1)");
  CHECK(is_conv_or_matmul(s.kernels[0]));
  CHECK_FALSE(is_conv_or_matmul(s.kernels[4]));
  CHECK(engine_of(s.kernels[4]).empty());
  CHECK(fallback_reason_of(s.kernels[0]).empty());
  CHECK(fallback_reason_of(s.kernels[1]) == "depthwise (groups = C)");

  ReportInfo info;
  info.source = "m.onnx";
  info.launches["k0"] = {"m_k0_sm75", "m_k0_sm90"};
  const nlohmann::json j = nlohmann::json::parse(report_json(s, info));
  CHECK(j["engines"]["summary"] == engine_summary(s));
  CHECK(j["engines"]["tensor_core"] == 2);
  CHECK(j["engines"]["simt"] == 3);
  CHECK(j["engines"]["simt_reasons"]["FP32 storage"] == 2);
  CHECK(j["kernels"][0]["engine"] == "tensor_core");
  CHECK(j["kernels"][0]["fallback_reason"] == "");
  CHECK(j["kernels"][0]["arch_tactic"]["sm_75"]["BM"] == 128);
  CHECK(j["kernels"][0]["arch_tactic"]["sm_90"]["BM"] == 64);
  CHECK(j["kernels"][0]["launches"] == nlohmann::json::array({"m_k0_sm75", "m_k0_sm90"}));
  CHECK(j["kernels"][1]["engine"] == "simt");
  CHECK(j["kernels"][1]["fallback_reason"] == "depthwise (groups = C)");
  CHECK_FALSE(j["kernels"][1].contains("arch_tactic"));
  CHECK(j["kernels"][1]["launches"].empty());
  CHECK_FALSE(j["kernels"][4].contains("engine"));
  CHECK(j["kernels"][5]["nodes"].size() == 3);

  const std::string md = report_markdown(s, info);
  CHECK(has(md, "## Tensor cores\n\n" + engine_summary(s) + ".\n"));
  CHECK(has(md, "| k0 |  | /conv_k0/Conv | tensor core |  | sm_75: BK=32 BM=128 BN=64 async=0 fp16_accumulate=0 split_k=1 "
                "stages=2 threads=128 warps_m=2 warps_n=2<br>sm_90: BK=32 BM=64 BN=64 async=1 fp16_accumulate=0 "
                "split_k=1 stages=2 threads=128 warps_m=2 warps_n=2 |"));
  CHECK(has(md, "| k1 |  | /conv_k1/Conv | SIMT | depthwise (groups = C) | threads=64 |"));
  CHECK(has(md, "| k5 |  | /c/Conv + /bn/BatchNormalization + /r/Relu | tensor core |"));
  CHECK_FALSE(has(md, "| k4 |  | /relu/Relu | SIMT"));
}

TEST_CASE("report: models/tiny_cnn.onnx lists its convolutions and its Gemm, fused nodes, launches") {
  std::unique_ptr<Graph> g = load_onnx(std::string(build_source_dir()) + "/models/tiny_cnn.onnx");
  LowerOptions lo;
  lo.name = "tiny_cnn";
  lo.archs = {"sm_75", "sm_90"};
  lo.passes.fuse_epilogue = true;
  lo.count_stage_kernels = true;
  const Schedule s = lower(*g, lo);
  EmitOptions eo;
  eo.source = "tiny_cnn.onnx";
  eo.format = false;
  const auto files = render_model(s, eo);
  const nlohmann::json j = nlohmann::json::parse(files.at("report.json"));
  int convs = 0, gemms = 0, fused = 0;
  double estimated = 0;
  for (const auto& k : j["kernels"]) {
    // The cost model's estimate on sm_75 (the first --arch), every field present.
    REQUIRE_MESSAGE(k.contains("estimate"), k["id"]);
    const auto& e = k["estimate"];
    CHECK(e["us"].get<double>() > 0);
    const std::string bound = e["bound"];
    CHECK_MESSAGE((bound == "compute" || bound == "memory" || bound == "latency" || bound == "launch"), bound);
    CHECK(e["blocks"].get<int64_t>() >= 1);
    CHECK(e["waves"].get<double>() > 0);
    CHECK(e["flops"].get<int64_t>() >= 0);
    CHECK(e["bytes"].get<int64_t>() > 0);
    estimated += e["us"].get<double>();
    CHECK_MESSAGE(k["launches"].size() >= 1, k["id"]);  // every kernel here runs something
    for (const auto& f : k["launches"]) {  // entry points: the model's name and a kernel id
      const std::string text = f.get<std::string>();
      CHECK_MESSAGE(text.compare(0, 10, "tiny_cnn_k") == 0, text);
      CHECK_MESSAGE(has(files.at("tiny_cnn.cu"), "void __launch_bounds__(" + text + "_t::kThreads) " + text + "("), text);
    }
    const std::string op = k["op"];
    if (op == "Conv" || op == "FusedConv" || op == "Gemm" || op == "FusedGemm") {
      REQUIRE_MESSAGE(k.contains("engine"), k["id"]);
      CHECK((k["engine"] == "simt" || k["engine"] == "tensor_core" || k["engine"] == "gemv"));
      if (k["engine"] != "tensor_core") CHECK_FALSE(k["fallback_reason"].get<std::string>().empty());
      (op.find("Conv") != std::string::npos ? convs : gemms)++;
      if (k["nodes"].size() > 1) ++fused;
    } else {
      CHECK_FALSE(k.contains("engine"));
    }
  }
  CHECK(convs >= 3);
  CHECK(gemms == 1);
  CHECK(j["estimate_arch"] == "sm_75 (T4)");
  CHECK(j["estimate_us"].get<double>() == doctest::Approx(estimated).epsilon(1e-3));
  CHECK(fused >= 1);  // a conv with its ReLU (and residual) covers several ONNX nodes
  CHECK(j["engines"]["convolutions_and_matrix_products"] == convs + gemms);
  const std::string& md = files.at("report.md");
  CHECK(has(md, "## Tensor cores"));
  CHECK(has(md, "## Roofline (estimates for sm_75, T4)"));
  CHECK(has(md, "| kernel | engine | tile | blocks | waves | GFLOP | MB | us | bound |"));
  // Kernels per optional stage: fuse_epilogue saves the ReLUs' (and residual Adds') kernels.
  bool epilogue_listed = false;
  for (const auto& p : j["passes"]) {
    CHECK(p["kernels"] == s.kernels.size());
    if (p["name"] != "fuse_epilogue") continue;
    epilogue_listed = true;
    CHECK(p["kernels_without"].get<int64_t>() > p["kernels"].get<int64_t>());
    CHECK(has(md, "| fuse_epilogue | " + std::to_string(p["kernels_without"].get<int64_t>()) + " | " +
                      std::to_string(s.kernels.size()) + " | "));
  }
  CHECK(epilogue_listed);
  CHECK(has(md, "## Kernels per stage"));
  CHECK(has(md, std::to_string(s.kernels.size()) + " kernels; " + std::to_string(convs + gemms) +
                    " convolutions/matrix products: "));
}

// codegen/resources: ptxas -v logs, PTX, resources per kernel and arch matched by entry-point
// symbol, the report's round trip and the tensor-core check (`modelc resources DIR`).
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "codegen/resources.h"
#include "support/error.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using Json = nlohmann::ordered_json;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'm_k0' for 'sm_75'\n"
    "ptxas info    : Function properties for _ZN2mc4gemm6helperEv\n"
    "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    "ptxas info    : Function properties for m_k0\n"
    "    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 16384 bytes smem, 368 bytes cmem[0]\n"
    "ptxas info    : Compile time = 11.030 ms\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'm_k0' for 'sm_90'\n"
    "ptxas info    : Function properties for m_k0\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 0 barriers\n";

// k0 and k2 share an instantiation (k2 launches k0's entry point); k1 has arch variants; k3 runs
// nothing.
const char* kReport = R"({
  "generator": "modelc",
  "model": "m",
  "archs": ["sm_75", "sm_90"],
  "parts": 0,
  "kernels": [
    {"id": "k0", "family": "gemm", "engine": "tensor_core", "launches": ["m_k0"]},
    {"id": "k1", "family": "elementwise", "launches": ["m_k1_sm75", "m_k1_sm90"]},
    {"id": "k2", "family": "gemm", "engine": "simt", "launches": ["m_k0"]},
    {"id": "k3", "family": "copy", "launches": []}
  ]
})";

std::vector<PtxasEntry> compiled_functions() {
  std::vector<PtxasEntry> compiled = parse_ptxas_log(kLog);
  PtxasEntry variant;
  variant.registers = 10;
  for (const char* arch : {"sm_75", "sm_90"}) {
    variant.arch = arch;
    for (const char* f : {"m_k1_sm75", "m_k1_sm90"}) {
      variant.function = f;
      compiled.push_back(variant);
    }
    compiled.back().registers = 12;
  }
  PtxasEntry stray = variant;
  stray.function = "stray";
  compiled.push_back(stray);
  return compiled;
}

}  // namespace

TEST_CASE("resources: ptxas -v logs, per function and arch") {
  const std::vector<PtxasEntry> r = parse_ptxas_log(kLog);
  REQUIRE(r.size() == 2);
  CHECK(r[0].function == "m_k0");
  CHECK(r[0].arch == "sm_75");
  CHECK(r[0].registers == 255);
  CHECK(r[0].barriers == 1);
  CHECK(r[0].shared_bytes == 16384);
  CHECK(r[0].constant_bytes == 368);
  CHECK(r[0].stack_bytes == 16);  // its own frame, not the helper's
  CHECK(r[0].spill_store_bytes == 12);
  CHECK(r[0].spill_load_bytes == 8);
  CHECK(r[1].arch == "sm_90");
  CHECK(r[1].registers == 40);
  CHECK(r[1].shared_bytes == 0);
  CHECK(r[1].spill_store_bytes == 0);
  CHECK(parse_ptxas_log("").empty());
  CHECK(parse_ptxas_log("nvcc warning : something\n").empty());
}

TEST_CASE("resources: PTX entries and their MMAs") {
  const std::string ptx =
      "//\n.version 8.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry m_k0(\n\t.param .u64 m_k0_param_0\n)\n{\n\t.reg .f32 %f<9>;\n"
      "\t{ inner block }\n"
      "\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1}, {%r1}, {%r2}, {%f1};\n\tret;\n}\n"
      ".entry m_k1(\n\t.param .u64 p\n)\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret;\n}\n"
      ".entry m_k2(\n)\n{\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];\n"
      "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n}\n"
      // An MMA in a function that was not inlined, called through another one; a declaration.
      ".func _Z4leafv;\n"
      ".func (.param .b32 func_retval0) _Z4leafv()\n{\n\tldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r1, %r2}, [%r5];\n"
      "\tmma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f1};\n}\n"
      ".func _Z3midv()\n{\n\tcall.uni (retval0), _Z4leafv, ();\n}\n"
      ".entry m_k3(\n)\n.maxntid 128, 1, 1\n{\n\tcall.uni _Z3midv, ();\n}\n"
      ".entry m_k4(\n)\n{\n\tret;\n}\n";
  const std::vector<PtxEntry> e = parse_ptx(ptx);
  REQUIRE(e.size() == 5);
  CHECK(e[0].function == "m_k0");
  CHECK(e[0].arch == "sm_75");
  CHECK_FALSE(e[0].mma);  // WMMA: not the mma.sync main loop
  CHECK(e[1].function == "m_k1");
  CHECK_FALSE(e[1].mma);
  CHECK(e[2].mma);
  CHECK(e[3].function == "m_k3");
  CHECK(e[3].mma);
  CHECK(e[4].function == "m_k4");
  CHECK_FALSE(e[4].mma);
}

TEST_CASE("resources: merge per kernel and arch by entry point; the tensor-core check") {
  Json report = Json::parse(kReport);
  std::vector<PtxasEntry> compiled = compiled_functions();
  std::vector<PtxEntry> ptx = {{"m_k0", "sm_75", true}, {"m_k0", "sm_90", false}};

  SUBCASE("resources per kernel") {
    const ResourcesOutcome o = merge_resources(report, compiled, ptx, false);
    CHECK(o.archs == std::vector<std::string>{"sm_75", "sm_90"});
    CHECK(o.kernels == 3);
    CHECK(o.kernels_with_resources == 3);
    CHECK(o.unmatched == std::vector<std::string>{"stray"});
    CHECK(o.failures.empty());
    const Json& k = report["kernels"];
    const Json& r0 = k[0]["resources"];
    CHECK(r0["sm_75"]["registers"] == 255);
    CHECK(r0["sm_75"]["shared_bytes"] == 16384);
    CHECK(r0["sm_75"]["spill_store_bytes"] == 12);
    CHECK(r0["sm_75"]["mma"] == true);
    CHECK(r0["sm_90"]["registers"] == 40);
    CHECK(r0["sm_90"]["mma"] == false);
    CHECK(k[2]["resources"] == r0);  // the same entry point
    // Arch variants: the larger numbers, and each one's.
    const Json& r1 = k[1]["resources"]["sm_75"];
    CHECK(r1["functions"] == 2);
    CHECK(r1["registers"] == 12);
    REQUIRE(r1["per_function"].size() == 2);
    CHECK(r1["per_function"][0]["function"] == "m_k1_sm75");
    CHECK(r1["per_function"][0]["registers"] == 10);
    CHECK(r1["per_function"][1]["registers"] == 12);
    CHECK_FALSE(k[1]["resources"]["sm_75"].contains("mma"));  // no PTX of its entry points
    CHECK_FALSE(k[3].contains("resources"));
    CHECK(report["resources"]["kernels_with_resources"] == 3);
    CHECK(report["resources"]["unmatched_functions"] == Json::array({"stray"}));
    const std::string md = resources_markdown(report, o);
    CHECK(has(md, "| k0 | gemm | tensor_core | 255 / 16,384 / 16 / 20 mma | 40 / 0 / 0 / 0 |"));
    CHECK(has(md, "| k1 | elementwise |  | 12 / 0 / 0 / 0 | 12 / 0 / 0 / 0 |"));
    CHECK(has(md, "- `stray`"));
    // Merging again gives the same report (resources are replaced, not added).
    const std::string once = report.dump(2);
    merge_resources(report, compiled, ptx, false);
    CHECK(report.dump(2) == once);
    // report.md keeps one section.
    const std::string twice = with_resources_section(with_resources_section("# m\n\ntext\n", md), md);
    CHECK(twice == "# m\n\ntext\n\n" + md);
  }
  SUBCASE("the check fails: no MMA on sm_90, spills and a stack frame on sm_75, an entry point no kernel launches") {
    const ResourcesOutcome o = merge_resources(report, compiled, ptx, true);
    REQUIRE(o.failures.size() == 4);
    CHECK(o.failures[0] == "k0 sm_75: ptxas spills 12 bytes stored, 8 bytes loaded");
    CHECK(o.failures[1] == "k0 sm_75: a 16-byte stack frame (local memory in the main loop)");
    CHECK(o.failures[2] == "k0 sm_90: no ldmatrix + mma.sync.aligned.m16n8k* in the PTX");
    CHECK(o.failures[3] == "stray: compiled, but no kernel of the report launches it");
  }
  SUBCASE("the check passes with MMAs everywhere, no spills, no stack and every entry point a kernel's") {
    ptx[1].mma = true;
    compiled.pop_back();
    for (PtxasEntry& r : compiled) r.spill_store_bytes = r.spill_load_bytes = r.stack_bytes = 0;
    const ResourcesOutcome o = merge_resources(report, compiled, ptx, true);
    CHECK(o.failures.empty());
    CHECK(o.tensor_core_kernels == 1);
  }
  SUBCASE("an arch where report.json's arch_engine says simt (BF16 below sm_80) wants no MMA there") {
    compiled.pop_back();
    for (PtxasEntry& r : compiled) r.spill_store_bytes = r.spill_load_bytes = r.stack_bytes = 0;
    report["kernels"][0]["arch_engine"] = Json{{"sm_75", "tensor_core"}, {"sm_90", "simt"}};
    CHECK(merge_resources(report, compiled, ptx, true).failures.empty());
    report["kernels"][0]["arch_engine"] = Json{{"sm_75", "simt"}, {"sm_90", "tensor_core"}};
    const ResourcesOutcome o = merge_resources(report, compiled, ptx, true);
    REQUIRE(o.failures.size() == 1);
    CHECK(o.failures[0] == "k0 sm_90: no ldmatrix + mma.sync.aligned.m16n8k* in the PTX");
  }
  SUBCASE("the check needs PTX for every arch, and resources for every kernel") {
    compiled.pop_back();
    for (PtxasEntry& r : compiled) r.spill_store_bytes = r.spill_load_bytes = r.stack_bytes = 0;
    ptx.pop_back();
    compiled.erase(std::remove_if(compiled.begin(), compiled.end(),
                                  [](const PtxasEntry& r) { return r.function == "m_k1_sm90"; }),
                   compiled.end());
    const ResourcesOutcome o = merge_resources(report, compiled, ptx, true);
    REQUIRE(o.failures.size() == 2);
    CHECK(has(o.failures[0], "k0 sm_90: no PTX for sm_90"));
    CHECK(o.failures[1] == "k1: no compiled entry point m_k1_sm90");
    CHECK(o.kernels_with_resources == 2);
  }
}

TEST_CASE("resources: a folder's report.json and report.md (modelc resources DIR)") {
  test::TempDir dir;
  test::write_bytes(dir / "report.json", Json::parse(kReport).dump(2) + "\n");
  test::write_bytes(dir / "report.md", "# m: modelc report\n");
  CHECK_THROWS_WITH_AS(report_resources(dir.str(), "", false), doctest::Contains("no ptxas -v log"), Error);
  std::filesystem::create_directories(dir.path / "build/sm_75_90/keep/m");
  std::string log = kLog;
  for (const char* f : {"m_k1_sm75", "m_k1_sm90"}) {
    for (const char* arch : {"sm_75", "sm_90"}) {
      log += std::string("ptxas info    : Compiling entry function '") + f + "' for '" + arch + "'\n" +
             "ptxas info    : Used 10 registers, used 0 barriers\n";
    }
  }
  test::write_bytes(dir / "build/sm_75_90/m.ptxas", log);
  test::write_bytes(dir / "build/sm_75_90/keep/m/m.sm_75.ptx", ".target sm_75\n.entry m_k0(\n)\n{\n\tldmatrix.sync.aligned.x;\n\tmma.sync.aligned.m16n8k8.x;\n}\n");
  // Another build's log in the folder is not read.
  test::write_bytes(dir / "build/sm_75_90/other.ptxas", "ptxas info    : Compiling entry function 'x' for 'sm_75'\n");

  const ResourcesOutcome o = report_resources(dir.str(), "", false);
  CHECK(o.kernels_with_resources == 3);
  CHECK(o.unmatched.empty());
  CHECK(o.ptx_archs == std::vector<std::string>{"sm_75"});
  const Json report = Json::parse(test::read_bytes(dir / "report.json"));
  CHECK(report["kernels"][0]["resources"]["sm_75"]["registers"] == 255);
  CHECK(report["kernels"][0]["resources"]["sm_75"]["mma"] == true);
  CHECK(report["model"] == "m");  // the rest as it was, in its order
  CHECK(report.begin().key() == "generator");
  const std::string md = test::read_bytes(dir / "report.md");
  CHECK(md.compare(0, 20, "# m: modelc report\n\n") == 0);
  CHECK(has(md, "## Registers and shared memory"));
  // The objects of other archs: --objects.
  std::filesystem::rename(dir.path / "build/sm_75_90", dir.path / "build/sm_86");
  CHECK_THROWS_AS(report_resources(dir.str(), "", false), Error);
  CHECK(report_resources(dir.str(), "build/sm_86", false).kernels_with_resources == 3);
  CHECK_THROWS_WITH_AS(report_resources((dir / "none"), "", false), doctest::Contains("has no report.json"), Error);
}

TEST_CASE("resources: INT8 kernels (conv_int8, gemm_int8) must multiply .s8 operands") {
  const std::string ptx =
      ".version 8.0\n.target sm_75\n"
      ".entry m_k0(\n)\n{\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];\n"
      "\tmma.sync.aligned.m8n8k16.row.col.s32.s8.s8.s32 {%r6, %r7}, {%r1}, {%r2}, {%r6, %r7};\n}\n"
      ".entry m_k1(\n)\n{\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];\n"
      "\tmma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%r6, %r7, %r8, %r9}, {%r1, %r2, %r3, %r4}, {%r1, %r2}, "
      "{%r6, %r7, %r8, %r9};\n}\n"
      ".entry m_k2(\n)\n{\n\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];\n"
      "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n}\n";
  const std::vector<PtxEntry> e = parse_ptx(ptx);
  REQUIRE(e.size() == 3);
  CHECK(e[0].mma);  // sm_75's 8-bit m8n8k16 counts as an MMA
  CHECK(e[0].mma_s8);
  CHECK(e[1].mma_s8);  // uint8 A
  CHECK(e[2].mma);
  CHECK_FALSE(e[2].mma_s8);

  Json report = Json::parse(R"({"kernels": [
    {"id": "k0", "family": "conv_int8", "engine": "tensor_core", "launches": ["m_k0"]},
    {"id": "k1", "family": "gemm_int8", "engine": "tensor_core", "launches": ["m_k2"]},
    {"id": "k2", "family": "gemm_int8", "engine": "tensor_core", "launches": ["m_k1"]}]})");
  std::vector<PtxasEntry> compiled;
  for (const char* f : {"m_k0", "m_k1", "m_k2"}) {
    PtxasEntry r;
    r.function = f;
    r.arch = "sm_75";
    r.registers = 64;
    compiled.push_back(r);
  }
  const ResourcesOutcome o = merge_resources(report, compiled, e, true);
  REQUIRE(o.failures.size() == 1);  // k1's PTX multiplies FP16
  CHECK(o.failures[0] == "k1 sm_75: an INT8 kernel without ldmatrix + mma.sync on .s8 operands in the PTX");
  CHECK(report["kernels"][0]["resources"]["sm_75"]["mma_s8"] == true);
  CHECK(report["kernels"][1]["resources"]["sm_75"]["mma_s8"] == false);
  CHECK(report["kernels"][2]["resources"]["sm_75"]["mma_s8"] == true);
}

TEST_CASE("resources: batch profiles: each profile's kernels by their entry points, every source's log") {
  // Two profiles (report_json_profiles): their kernels under "profiles", their sources listed.
  const char* kProfiles = R"({
    "generator": "modelc",
    "model": "m",
    "archs": ["sm_75"],
    "batch_profiles": [1, 4],
    "parts": 2,
    "sources": ["m", "m_b1", "m_b4"],
    "profiles": [
      {"batch": 1, "sources": ["m_b1"], "kernels": [{"id": "k0", "family": "gemm", "engine": "tensor_core", "launches": ["m_b1_k0"]}]},
      {"batch": 4, "sources": ["m_b4"], "kernels": [{"id": "k0", "family": "gemm", "engine": "tensor_core", "launches": ["m_b4_k0"]},
                                                    {"id": "k1", "family": "copy", "launches": []}]}
    ]
  })";
  test::TempDir dir;
  test::write_bytes(dir / "report.json", Json::parse(kProfiles).dump(2) + "\n");
  test::write_bytes(dir / "report.md", "# m: modelc report\n");
  std::filesystem::create_directories(dir.path / "build/sm_75");
  auto entry = [](const std::string& f, int registers, int spill) {
    return "ptxas info    : Compiling entry function '" + f + "' for 'sm_75'\nptxas info    : Function properties for " + f +
           "\n    0 bytes stack frame, " + std::to_string(spill) + " bytes spill stores, 0 bytes spill loads\n" +
           "ptxas info    : Used " + std::to_string(registers) + " registers, used 1 barriers\n";
  };
  test::write_bytes(dir / "build/sm_75/m.ptxas", "");
  test::write_bytes(dir / "build/sm_75/m_b1.ptxas", entry("m_b1_k0", 64, 0));
  // Without m_b4's log: an error naming it.
  CHECK_THROWS_WITH_AS(report_resources(dir.str(), "", false), doctest::Contains("m_b4.ptxas"), Error);
  test::write_bytes(dir / "build/sm_75/m_b4.ptxas", entry("m_b4_k0", 96, 8));
  const ResourcesOutcome o = report_resources(dir.str(), "", false);
  CHECK(o.kernels == 2);
  CHECK(o.kernels_with_resources == 2);
  CHECK(o.unmatched.empty());
  const Json report = Json::parse(test::read_bytes(dir / "report.json"));
  CHECK(report["profiles"][0]["kernels"][0]["resources"]["sm_75"]["registers"] == 64);
  CHECK(report["profiles"][1]["kernels"][0]["resources"]["sm_75"]["registers"] == 96);
  const std::string md = test::read_bytes(dir / "report.md");
  CHECK(has(md, "| b1/k0 | gemm | tensor_core | 64 / 0 / 0 / 0 |"));
  CHECK(has(md, "| b4/k0 | gemm | tensor_core | 96 / 0 / 0 / 8 |"));
  // The check names a profile's kernel by its batch.
  const ResourcesOutcome c = report_resources(dir.str(), "", true);
  bool named = false;
  for (const std::string& f : c.failures) named = named || has(f, "b4/k0 sm_75: ptxas spills 8 bytes");
  CHECK(named);
}

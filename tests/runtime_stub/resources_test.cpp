// runtime_stub/tools/resources.h: ptxas -v logs, PTX, the canonical names that map compiled
// functions to the report's kernels, report.json's round trip and the tensor-core check.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tools/resources.h"

using namespace mc_resources;

namespace {

const char* kLog =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_ZN2mc4gemm6kernelINS0_4GemmIfLl64ELb1EEEEEvNT_6ParamsE' for 'sm_75'\n"
    "ptxas info    : Function properties for _ZN2mc4gemm6helperEv\n"
    "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    "ptxas info    : Function properties for _ZN2mc4gemm6kernelINS0_4GemmIfLl64ELb1EEEEEvNT_6ParamsE\n"
    "    16 bytes stack frame, 12 bytes spill stores, 8 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 16384 bytes smem, 368 bytes cmem[0]\n"
    "ptxas info    : Compile time = 11.030 ms\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_ZN2mc4gemm6kernelINS0_4GemmIfLl64ELb1EEEEEvNT_6ParamsE' for 'sm_90'\n"
    "ptxas info    : Function properties for _ZN2mc4gemm6kernelINS0_4GemmIfLl64ELb1EEEEEvNT_6ParamsE\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 40 registers, used 0 barriers\n";

// The demangled form of the kernel above: void mc::gemm::kernel<mc::gemm::Gemm<float, 64l, true> >(...)
const char* kMangled = "_ZN2mc4gemm6kernelINS0_4GemmIfLl64ELb1EEEEEvNT_6ParamsE";

EnumTable gemm_enums() {
  EnumTable e;
  parse_enums(
      "#pragma once\n#include \"device.h\"\nnamespace mc {\nnamespace gemm {\n"
      "struct Strides;\n"
      "enum class Act { none, relu, clip };\n"
      "enum class PadMode : int { constant = 0, edge = 4, wrap };\n"
      "struct Holder { enum Inner { a = -1, b }; };\n"
      "template <class T> struct Gemm { static constexpr int k = 1; };\n"
      "}  // namespace gemm\n}  // namespace mc\n"
      "namespace other { enum class Act { x, y }; }\n",
      e);
  return e;
}

}  // namespace

TEST_CASE("resources: ptxas -v logs, per function and arch") {
  const std::vector<Resources> r = parse_ptxas_log(kLog);
  REQUIRE(r.size() == 2);
  CHECK(r[0].function == kMangled);
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
      ".visible .entry _Z3tcPv(\n\t.param .u64 _Z3tcPv_param_0\n)\n{\n\t.reg .f32 %f<9>;\n"
      "\t{ inner block }\n"
      "\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1}, {%r1}, {%r2}, {%f1};\n\tret;\n}\n"
      ".entry _Z4simtPv(\n\t.param .u64 p\n)\n{\n\tfma.rn.f32 %f1, %f2, %f3, %f4;\n\tret;\n}\n"
      ".entry _Z3mmaPv(\n)\n{\n\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1}, {%r1}, {%r2}, {%f1};\n}\n"
      // An MMA in a function that was not inlined, called through another one; a declaration.
      ".func _Z4leafv;\n"
      ".func (.param .b32 func_retval0) _Z4leafv()\n{\n\twmma.mma.sync.aligned.row.col.m16n16k16.f32.f32 {%f1};\n}\n"
      ".func _Z3midv()\n{\n\tcall.uni (retval0), _Z4leafv, ();\n}\n"
      ".entry _Z6callerPv(\n)\n.maxntid 128, 1, 1\n{\n\tcall.uni _Z3midv, ();\n}\n"
      ".entry _Z6plainerPv(\n)\n{\n\tret;\n}\n";
  const std::vector<PtxEntry> e = parse_ptx(ptx);
  REQUIRE(e.size() == 5);
  CHECK(e[3].function == "_Z6callerPv");
  CHECK(e[3].mma);
  CHECK(e[4].function == "_Z6plainerPv");
  CHECK_FALSE(e[4].mma);
  CHECK(e[0].function == "_Z3tcPv");
  CHECK(e[0].arch == "sm_75");
  CHECK(e[0].mma);
  CHECK(e[1].function == "_Z4simtPv");
  CHECK_FALSE(e[1].mma);
  CHECK(e[2].mma);
}

TEST_CASE("resources: enums of the kernel headers, qualified") {
  const EnumTable e = gemm_enums();
  REQUIRE(e.count("mc::gemm::Act"));
  CHECK(e.at("mc::gemm::Act").at("none") == 0);
  CHECK(e.at("mc::gemm::Act").at("clip") == 2);
  CHECK(e.at("mc::gemm::PadMode").at("edge") == 4);
  CHECK(e.at("mc::gemm::PadMode").at("wrap") == 5);
  CHECK(e.at("mc::gemm::Holder::Inner").at("a") == -1);
  CHECK(e.at("mc::gemm::Holder::Inner").at("b") == 0);
  CHECK(e.at("other::Act").at("y") == 1);
}

TEST_CASE("resources: demangled and emitted names have one canonical form") {
  const EnumTable e = gemm_enums();
  CHECK(demangle(kMangled) == "void mc::gemm::kernel<mc::gemm::Gemm<float, 64l, true> >(mc::gemm::Gemm<float, 64l, true>::Params)");
  CHECK(demangle("not_mangled") == "not_mangled");
  const std::string want = "mc::gemm::kernel<mc::gemm::Gemm<float, 64, true>>";
  CHECK(canonical(demangle(kMangled), e) == want);
  CHECK(canonical("mc::gemm::kernel<mc::gemm::Gemm<float, 64, true> >", e) == want);
  CHECK(canonical("::mc::gemm::kernel< mc::gemm::Gemm<float,64,true>>", e) == want);
  // Integer casts and suffixes; negative values; the typedefs the emitted code uses.
  CHECK(canonical("void f<(long)64, (unsigned long)3, -5l, 7ul, (int)-2>(int)", e) == "f<64, 3, -5, 7, -2>");
  CHECK(canonical("f<int64_t, std::uint8_t, long int, unsigned, unsigned char>", e) ==
        "f<long, unsigned char, long, unsigned int, unsigned char>");
  CHECK(canonical("void f<(bool)1, (bool)0>()", e) == "f<true, false>");
  // Enums: (mc::gemm::Act)1 as the demangler writes it, mc::gemm::Act::relu as the code does.
  CHECK(canonical("void k<(mc::gemm::Act)1, (mc::gemm::PadMode)5>(P)", e) == canonical("k<mc::gemm::Act::relu, mc::gemm::PadMode::wrap>", e));
  CHECK(canonical("k<mc::gemm::Act::relu>", e) == "k<#mc::gemm::Act=1>");
  CHECK(canonical("k<other::Act::y>", e) == "k<#other::Act=1>");
  CHECK(canonical("k<mc::gemm::Act::relu>", e) != canonical("k<mc::gemm::Act::clip>", e));
  // Unnamed namespaces: the demangler's and nvcc's spellings.
  CHECK(canonical("void mc::k<(anonymous namespace)::k7_op>(int)", e) == "mc::k<k7_op>");
  CHECK(canonical("void mc::k<_GLOBAL__N__20120a98_4_t_cu_1ffd1000::k7_op>(int)", e) == "mc::k<k7_op>");
  // A parameter list with parentheses in the template arguments is still cut at the right place.
  CHECK(canonical("void mc::k<(mc::gemm::Act)2>(mc::k<(mc::gemm::Act)2>::Params)", e) == "mc::k<#mc::gemm::Act=2>");
}

TEST_CASE("resources: matching launched and compiled functions") {
  const EnumTable e = gemm_enums();
  auto c = [&](const std::string& s) { return canonical_tokens(s, e); };
  const auto compiled = c("void mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0l, 1l>, (mc::gemm::Act)1, 4> >(P)");
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0, 1>, mc::gemm::Act::relu, 4>>"), compiled) == 3);
  // Trailing default arguments left out.
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0, 1>, mc::gemm::Act::relu>>"), compiled) == 2);
  // An enum the table does not know: matched by its type, weakly.
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0, 1>, mc::x::Mode::fast, 4>>"),
                      c("void mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0l, 1l>, (mc::x::Mode)3, 4> >(P)")) == 1);
  // Different functions.
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0, 2>, mc::gemm::Act::relu, 4>>"), compiled) == 0);
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0, 1>, mc::gemm::Act::clip, 4>>"), compiled) == 0);
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<__half, mc::S<0, 1>, mc::gemm::Act::relu, 4>>"), compiled) == 0);
  CHECK(same_function(c("mc::ew::kernel<mc::gemm::Gemm<float, mc::S<0, 1>, mc::gemm::Act::relu, 4>>"), compiled) == 0);
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0, 1, 2>, mc::gemm::Act::relu, 4>>"), compiled) == 0);
  // Fewer arguments can be defaults anywhere (S<0> may be S<0, 1>): a weaker match than the exact one.
  CHECK(same_function(c("mc::gemm::kernel<mc::gemm::Gemm<float, mc::S<0>, mc::gemm::Act::relu, 4>>"), compiled) == 2);
}

TEST_CASE("resources: report.json keeps its form through the JSON round trip") {
  nlohmann::ordered_json j;
  j["generator"] = "modelc";
  j["text"] = "quote \" backslash \\ tab \t newline \n ctrl \x01 utf8 \xc3\xa9 \xe2\x82\xac";
  j["numbers"] = {0, -3, 1.5, 1e-07, 123456789012LL, 0.1};
  j["empty_array"] = nlohmann::ordered_json::array();
  j["empty_object"] = nlohmann::ordered_json::object();
  j["nested"] = {{"z", nullptr}, {"a", true}, {"m", {{"x", false}}}};
  j["kernels"] = nlohmann::ordered_json::array({{{"id", "k0"}, {"shape", {1, 2}}}});
  const std::string text = j.dump(2);
  const Json parsed = Json::parse(text);
  CHECK(parsed.dump() == text);
  CHECK(parsed.find("text")->as_string() == j["text"].get<std::string>());
  CHECK(parsed.find("kernels")->items.at(0).find("id")->as_string() == "k0");
  CHECK_THROWS(Json::parse("{\"a\": }"));
  CHECK_THROWS(Json::parse("{\"a\": 1} x"));
}

TEST_CASE("resources: merge per kernel and arch; the tensor-core check") {
  const EnumTable e = gemm_enums();
  // k0 and k2 share one instantiation; k1 is another; k3 launches nothing.
  Json report = Json::parse(R"({
  "generator": "modelc",
  "archs": ["sm_75", "sm_90"],
  "kernels": [
    {"id": "k0", "family": "gemm", "engine": "tensor_core", "launches": ["mc::gemm::kernel<mc::gemm::Gemm<float, 64, true>>"]},
    {"id": "k1", "family": "elementwise", "launches": ["other_kernel<mc::gemm::Act::clip>"]},
    {"id": "k2", "family": "gemm", "engine": "simt", "launches": ["mc::gemm::kernel<mc::gemm::Gemm<float, 64, true>>"]},
    {"id": "k3", "family": "copy", "launches": []}
  ]
})");
  std::vector<Resources> compiled = parse_ptxas_log(kLog);
  // other_kernel<(mc::gemm::Act)2>(): _Z12other_kernelILN2mc4gemm3ActE2EEvv
  Resources other;
  other.function = "_Z12other_kernelILN2mc4gemm3ActE2EEvv";
  REQUIRE(demangle(other.function) == "void other_kernel<(mc::gemm::Act)2>()");
  other.registers = 10;
  for (const char* arch : {"sm_75", "sm_90"}) {
    other.arch = arch;
    compiled.push_back(other);
  }
  Resources stray = other;
  stray.function = "_Z5strayv";
  compiled.push_back(stray);
  std::vector<PtxEntry> ptx = {{kMangled, "sm_75", true}, {kMangled, "sm_90", false}};

  SUBCASE("resources per kernel") {
    const Outcome o = merge(report, compiled, ptx, e, false);
    CHECK(o.archs == std::vector<std::string>{"sm_75", "sm_90"});
    CHECK(o.kernels == 3);
    CHECK(o.kernels_with_resources == 3);
    CHECK(o.unmapped == std::vector<std::string>{"stray()"});
    CHECK(o.failures.empty());
    const std::vector<Json>& k = report.find("kernels")->items;
    const Json* r0 = k[0].find("resources");
    REQUIRE(r0);
    CHECK(r0->find("sm_75")->find("registers")->as_int() == 255);
    CHECK(r0->find("sm_75")->find("shared_bytes")->as_int() == 16384);
    CHECK(r0->find("sm_75")->find("spill_store_bytes")->as_int() == 12);
    CHECK(r0->find("sm_75")->find("mma")->b);
    CHECK(r0->find("sm_90")->find("registers")->as_int() == 40);
    CHECK_FALSE(r0->find("sm_90")->find("mma")->b);
    CHECK(k[2].find("resources")->dump() == r0->dump());  // the same instantiation
    CHECK(k[1].find("resources")->find("sm_90")->find("registers")->as_int() == 10);
    CHECK_FALSE(k[3].find("resources"));
    CHECK(report.find("resources")->find("kernels_with_resources")->as_int() == 3);
    const std::string md = markdown(report, o);
    CHECK(md.find("| k0 | gemm | tensor_core | 255 / 16,384 / 16 / 20 mma | 40 / 0 / 0 / 0 |") != std::string::npos);
    CHECK(md.find("stray()") != std::string::npos);
    // Merging again gives the same report (resources are replaced, not added).
    const std::string once = report.dump();
    merge(report, compiled, ptx, e, false);
    CHECK(report.dump() == once);
    // report.md keeps one section.
    const std::string twice = with_section(with_section("# m\n\ntext\n", md), md);
    CHECK(twice == "# m\n\ntext\n\n" + md);
  }
  SUBCASE("a kernel launching two instantiations (a tactic per arch): the larger numbers, and each one's") {
    Json& k1 = report["kernels"].items[1];
    k1["launches"].items.push_back(Json::str("mc::gemm::kernel<mc::gemm::Gemm<float, 64, true>>"));
    merge(report, compiled, ptx, e, false);
    const Json* r = report.find("kernels")->items[1].find("resources")->find("sm_75");
    CHECK(r->find("functions")->as_int() == 2);
    CHECK(r->find("registers")->as_int() == 255);
    CHECK(r->find("per_function")->items.size() == 2);
    CHECK(r->find("per_function")->items[0].find("registers")->as_int() == 255);
    CHECK(r->find("per_function")->items[1].find("registers")->as_int() == 10);
  }
  SUBCASE("the check fails: no MMA on sm_90, spills on sm_75") {
    const Outcome o = merge(report, compiled, ptx, e, true);
    REQUIRE(o.failures.size() == 2);
    CHECK(o.failures[0] == "k0 sm_75: ptxas spills 12 bytes stored, 8 bytes loaded");
    CHECK(o.failures[1] == "k0 sm_90: no wmma.mma.sync / mma.sync in the PTX");
  }
  SUBCASE("the check passes with MMAs everywhere and no spills") {
    ptx[1].mma = true;
    for (Resources& r : compiled) r.spill_store_bytes = r.spill_load_bytes = 0;
    const Outcome o = merge(report, compiled, ptx, e, true);
    CHECK(o.failures.empty());
    CHECK(o.tensor_core_kernels == 1);
  }
  SUBCASE("the check needs PTX for every arch, and resources for every kernel") {
    for (Resources& r : compiled) r.spill_store_bytes = r.spill_load_bytes = 0;
    ptx.pop_back();
    compiled.erase(std::remove_if(compiled.begin(), compiled.end(),
                                  [](const Resources& r) { return r.function == "_Z12other_kernelILN2mc4gemm3ActE2EEvv"; }),
                   compiled.end());
    const Outcome o = merge(report, compiled, ptx, e, true);
    REQUIRE(o.failures.size() == 2);
    CHECK(o.failures[0].find("k0 sm_90: no PTX for sm_90") == 0);
    CHECK(o.failures[1].find("k1: no compiled function matches other_kernel<mc::gemm::Act::clip>") == 0);
  }
}

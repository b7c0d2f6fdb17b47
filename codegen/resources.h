// codegen/resources.h — `modelc resources DIR`: registers, shared memory, stack and spills per kernel
// and arch, from what ptxas -v said during an nvcc build of an emitted folder, into its report.json
// and report.md; with --check, the tensor-core check.
//
// The emitted entry points are extern "C" (codegen/launch.h): ptxas and the PTX name them by the
// symbols report.json lists per kernel ("launches"), so matching is by name, nothing to demangle.
//   parse_ptxas_log   "ptxas info : Compiling entry function 'NAME' for 'sm_75'" and the lines after
//                     it (stack frame, spill stores/loads, registers, barriers, smem, cmem)
//   parse_ptx         ".target sm_75", ".entry NAME(" and whether its body (or a function it
//                     calls) runs the tensor-core main loop: ldmatrix and mma.sync m16n8k* (WMMA's
//                     wmma.mma.sync does not count)
//   merge_resources   "resources" per kernel and arch into report.json, a summary, and the check
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace modelc {

/// \brief What ptxas says about one entry function for one arch.
struct PtxasEntry {
  std::string function;      ///< the entry point's symbol
  std::string arch;          ///< "sm_75"
  int registers = -1;        ///< -1: not reported
  int64_t shared_bytes = 0;  ///< static shared memory (smem)
  int64_t stack_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t constant_bytes = 0;  ///< cmem[0]
  int barriers = 0;
};

/// \brief The entry functions of a ptxas -v log (nvcc -Xptxas -v; any number of archs and
/// compilations concatenated), in order.
std::vector<PtxasEntry> parse_ptxas_log(const std::string& text);

/// \brief An .entry of a PTX file.
struct PtxEntry {
  std::string function;  ///< its symbol
  std::string arch;      ///< "sm_75" (the .target of its file)
  /// Issues ldmatrix and mma.sync.aligned.m16n8k* (or the 8-bit m8n8k16 of sm_75), itself or in a
  /// .func it calls (not WMMA).
  bool mma = false;
  /// Those MMAs take 8-bit operands (.s8 or .u8 A, .s8 B: the INT8 kernels, conv_int8 / gemm_int8).
  bool mma_s8 = false;
};

/// \brief The .entry functions of a PTX file and whether each issues tensor-core MMAs: in its own
/// body, or in a .func it calls (directly or through others), should one not be inlined.
std::vector<PtxEntry> parse_ptx(const std::string& text);

/// \brief What merge_resources found.
struct ResourcesOutcome {
  std::vector<std::string> archs;      ///< archs ptxas compiled for ("sm_75", ...)
  std::vector<std::string> ptx_archs;  ///< archs with PTX (KEEP_PTX=1 builds)
  int kernels = 0;                     ///< kernels that launch something
  int kernels_with_resources = 0;      ///< ... with resources for every arch
  std::vector<std::string> unmatched;  ///< compiled entry points no kernel launches
  std::vector<std::string> missing;    ///< "k7 sm_75: ..." (kernels without resources)
  std::vector<std::string> failures;   ///< the check's failures
  int tensor_core_kernels = 0;
  std::string summary;                 ///< one line
};

/// \brief Puts the resources of every kernel into `report` (report.json's value): per kernel
/// "resources": {ARCH: {registers, shared_bytes, stack_bytes, spill_store_bytes, spill_load_bytes,
/// barriers, constant_bytes, functions, mma (with PTX)}} and a top-level "resources" summary. A
/// kernel that launches several entry points (arch variants, a Concat's copies) gets the largest
/// registers / shared / stack and the summed spills, and each one's in "per_function". With
/// `check`, also checks that every kernel the report marks "tensor_core" or "winograd" issues mma.sync in its
/// PTX for every arch and spills nothing (except on an arch where report.json's "arch_engine" says
/// its variant is "simt": a BF16 product below sm_80), that every kernel has registers and shared
/// memory for every arch, and that every compiled entry point is one a kernel launches.
ResourcesOutcome merge_resources(nlohmann::ordered_json& report, const std::vector<PtxasEntry>& compiled,
                                 const std::vector<PtxEntry>& ptx, bool check);

/// The heading of the report.md section (report.md keeps one: a new one replaces it).
constexpr const char* kResourcesHeading = "## Registers and shared memory";

/// \brief The report.md section: one row per kernel, per arch "registers / shared bytes / stack
/// bytes / spilled bytes" (and "mma" when its PTX issues MMAs, with PTX kept).
std::string resources_markdown(const nlohmann::ordered_json& report, const ResourcesOutcome& o);

/// report.md with `section` in place of its previous one (or appended).
std::string with_resources_section(const std::string& md, const std::string& section);

/// \brief The command: reads DIR/report.json, the ptxas -v logs of its sources (NAME.ptxas and
/// NAME_partK.ptxas) in DIR/OBJECTS (default build/sm_<the report's archs, '_' between>: the
/// Makefile's folder for them) and the PTX kept under DIR/OBJECTS/keep/<source>/; writes
/// report.json and report.md. Throws Error when the report or a log is missing.
ResourcesOutcome report_resources(const std::string& dir, const std::string& objects, bool check);

}  // namespace modelc

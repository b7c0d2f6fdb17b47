// codegen/report.h — report.json and report.md of a generated folder.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace modelc {

struct ReportInfo {
  std::string source;          ///< the model's file name (no folders: the report is deterministic)
  bool weights_file = false;   ///< --weights-file: NAME_weights.bin is read at create
  int parts = 0;               ///< NAME_partK.cu files (0: everything in NAME.cu)
  /// Kernel id -> the entry points its code launches, by symbol ("resnet50_k12"; arch variants
  /// "resnet50_k12_sm75", "resnet50_k12_sm90"; a kernel whose instantiation an earlier one of its
  /// file has launches that one's). ptxas names them alike: `modelc resources` puts registers and
  /// shared memory per kernel into the report by these names (codegen/resources.h).
  std::map<std::string, std::vector<std::string>> launches;
  /// The kernel graph's picture beside report.md (codegen/report_graph.h: "report.svg"), which
  /// report.md links; "" for none.
  std::string graph_svg;
};

/// \brief True for a convolution or matrix product (a kernel of the gemm or conv families, or of
/// another family running Conv, ConvTranspose, Gemm, MatMul, Einsum or their fused forms): the
/// kernels the report lists as "tensor core" or "SIMT" with the reason.
bool is_conv_or_matmul(const Kernel& k);

/// \brief "tensor_core", "winograd" or "simt" for a convolution or matrix product (Kernel::engine;
/// "simt" where the family records none), "" for any other kernel.
std::string engine_of(const Kernel& k);
/// True for the engines whose products run on tensor cores: "tensor_core", "winograd".
bool on_tensor_cores(const std::string& engine);

/// \brief Why a convolution or matrix product runs on SIMT or the GEMV (Kernel::fallback_reason,
/// or what the family implies when it records none); "" on tensor cores and for other kernels.
std::string fallback_reason_of(const Kernel& k);

/// \brief "12 kernels; 5 convolutions/matrix products: 3 on tensor cores, 2 on SIMT (depthwise
/// (groups = C): 1, tiny GEMM: 4x4x8: 1)"; "N on GEMV, " before the SIMT count where there are any
/// (their reason is not listed: always at most 8 rows).
std::string engine_summary(const Schedule& s);

/// \brief report.json (nlohmann-json): the kernels (family, nodes, op, buffer views, tactic,
/// note, FLOPs), memory (arena, sum of activations, weights), the weights table, archs.
std::string report_json(const Schedule& s, const ReportInfo& info);

/// \brief report.md: the same for people, as tables.
std::string report_markdown(const Schedule& s, const ReportInfo& info);

/// \brief One batch profile of a folder compiled with several (schedule/profiles.h).
struct ProfileReport {
  const Schedule* s = nullptr;
  ReportInfo info;                   ///< its parts and launches (by its symbols: NAME_b8_k12)
  std::vector<std::string> sources;  ///< its .cu files' stems: NAME_b8, or NAME_b8_part0, ...
};

/// \brief report.json of a folder with batch profiles (ascending batch): the model (generator,
/// model, source, archs, "batch_profiles", inputs and outputs at the largest batch with "batched",
/// memory: the arena (the largest profile's) and the shared weights, "sources": every .cu stem
/// `modelc resources` reads, the weights table), then "profiles": per profile its "batch",
/// "sources" and everything report_json gives for its schedule but the model's own fields
/// (kernels, estimates, engines, memory plan, streams, concats, passes, precision).
std::string report_json_profiles(const std::vector<ProfileReport>& profiles);

/// \brief report.md with batch profiles: a summary table of the profiles, the tensors, then each
/// profile's report_markdown under "# Batch profile N".
std::string report_markdown_profiles(const std::vector<ProfileReport>& profiles);

/// "float32[4x32] @arena+256" (or @input0, @output1, @weights+512; "-" for an absent input).
std::string view_text(const TensorView& v);

/// "1,234,567"
std::string grouped(int64_t n);

}  // namespace modelc

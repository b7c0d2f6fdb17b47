// codegen/report.h — report.json and report.md of a generated folder.
#pragma once

#include <string>

#include "schedule/schedule.h"

namespace modelc {

struct ReportInfo {
  std::string source;          ///< the model's file name (no folders: the report is deterministic)
  bool weights_file = false;   ///< --weights-file: NAME_weights.bin is read at create
  int parts = 0;               ///< NAME_partK.cu files (0: everything in NAME.cu)
};

/// \brief report.json (nlohmann-json): the kernels (family, nodes, op, buffer views, tactic,
/// note, FLOPs), memory (arena, sum of activations, weights), the weights table, archs.
std::string report_json(const Schedule& s, const ReportInfo& info);

/// \brief report.md: the same for people, as tables.
std::string report_markdown(const Schedule& s, const ReportInfo& info);

/// "float32[4x32] @arena+256" (or @input0, @output1, @weights+512; "-" for an absent input).
std::string view_text(const TensorView& v);

/// "1,234,567"
std::string grouped(int64_t n);

}  // namespace modelc

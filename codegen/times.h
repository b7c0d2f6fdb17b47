// codegen/times.h — `modelc report DIR --times FILE.json`: a generated program's measured kernel
// times (`./NAME --profile N --export-times FILE.json`, schema "modelc-times/1", documented in
// runtime_stub/profile.h) folded into the folder's report.json and report.md.
//
//   read_times    parses and checks the file against the schema: every key of the schema with its
//                 type; an Error names the file and the key at fault
//   merge_times   into report.json: a top-level "measured" (device, runs, batch, estimate arch, totals)
//                 and per kernel "measured" {us, estimate_us, ratio, share, roofline_fraction,
//                 flagged}; the kernels must be the report's (the same ids in the same order)
//   times_markdown  report.md's section: per kernel the cost model's estimate beside the measured
//                 time, their ratio, the share and the roofline fraction, the flagged kernels
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace modelc {

/// The heading of report.md's section (a new one replaces the previous; placed after the roofline).
constexpr const char* kTimesHeading = "## Measured times";

/// \brief The file's JSON, checked against schema "modelc-times/1". Throws Error naming `file` and
/// what is wrong (not JSON, another schema, a key missing or of the wrong type, a kernel twice).
nlohmann::ordered_json read_times(const std::string& text, const std::string& file);

/// \brief Writes `times` into `report` (report.json's value; with batch profiles into the profile
/// the times were taken on). Throws Error when the times are another model's (its name, or kernels
/// the report does not have in that order).
void merge_times(nlohmann::ordered_json& report, const nlohmann::ordered_json& times, const std::string& file);

/// \brief report.md's section for `times`.
std::string times_markdown(const nlohmann::ordered_json& times);

/// \brief `md` with `section` in place of its previous measured-times section, else after the
/// roofline section, else at the end.
std::string with_times_section(const std::string& md, const std::string& section);

/// \brief The command: reads DIR/report.json and `times_file`, writes report.json and report.md.
/// Returns one line saying what it did. Throws Error for a missing or malformed file.
std::string report_times(const std::string& dir, const std::string& times_file);

}  // namespace modelc

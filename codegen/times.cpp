#include "codegen/times.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "codegen/emitter.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc {

using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kSchema = "modelc-times/1";

Error times_error(const std::string& file, const std::string& what) {
  Error::Where w;
  w.file = file;
  return Error(w, what, "write it with ./NAME --profile N --export-times FILE.json (the schema: runtime/profile.h)");
}

enum class Kind { string, number, integer, boolean, object, array, number_or_null, string_or_null };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::string: return "a string";
    case Kind::number: return "a number";
    case Kind::integer: return "an integer";
    case Kind::boolean: return "true or false";
    case Kind::object: return "an object";
    case Kind::array: return "an array";
    case Kind::number_or_null: return "a number or null";
    case Kind::string_or_null: return "a string or null";
  }
  return "";
}

bool is(const Json& v, Kind k) {
  switch (k) {
    case Kind::string: return v.is_string();
    case Kind::number: return v.is_number();
    case Kind::integer: return v.is_number_integer();
    case Kind::boolean: return v.is_boolean();
    case Kind::object: return v.is_object();
    case Kind::array: return v.is_array();
    case Kind::number_or_null: return v.is_number() || v.is_null();
    case Kind::string_or_null: return v.is_string() || v.is_null();
  }
  return false;
}

// Each key of `keys` is in `o` with its kind; `where` names the object in messages.
void check_keys(const Json& o, const std::vector<std::pair<const char*, Kind>>& keys, const std::string& where,
                const std::string& file) {
  if (!o.is_object()) throw times_error(file, where + " is not an object");
  for (const auto& [key, kind] : keys) {
    if (!o.contains(key)) throw times_error(file, where + " has no \"" + key + "\"");
    if (!is(o.at(key), kind)) {
      throw times_error(file, where + "'s \"" + key + "\" is " + o.at(key).dump() + ", not " + kind_name(kind));
    }
    if (kind == Kind::number && o.at(key).get<double>() < 0) {
      throw times_error(file, where + "'s \"" + key + "\" is negative");
    }
  }
}

std::string fixed(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string percent(const Json& v) { return v.is_number() ? fixed("%.1f%%", 100 * v.get<double>()) : "-"; }

// The kernels of the report the times are for: the profile's with batch profiles.
Json& report_kernels(Json& report, const Json& times, const std::string& file) {
  if (report.contains("profiles") && report["profiles"].is_array()) {
    const int64_t p = times.at("profile").get<int64_t>();
    if (p < 0 || p >= static_cast<int64_t>(report["profiles"].size())) {
      throw times_error(file, "the times are of batch profile " + std::to_string(p) + "; the report has " +
                                  std::to_string(report["profiles"].size()));
    }
    return report["profiles"][static_cast<std::size_t>(p)]["kernels"];
  }
  return report["kernels"];
}

}  // namespace

Json read_times(const std::string& text, const std::string& file) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw times_error(file, std::string("not JSON: ") + e.what());
  }
  if (!j.is_object()) throw times_error(file, "not a JSON object");
  if (!j.contains("schema") || j["schema"] != kSchema) {
    throw times_error(file, "its \"schema\" is " + (j.contains("schema") ? j["schema"].dump() : std::string("missing")) +
                                ", not \"" + kSchema + "\"");
  }
  check_keys(j,
             {{"model", Kind::string}, {"batch", Kind::integer}, {"profile", Kind::integer}, {"runs", Kind::integer},
              {"device", Kind::object}, {"estimate_arch", Kind::string_or_null}, {"estimate_part", Kind::string_or_null},
              {"timing", Kind::string}, {"total_us", Kind::number}, {"estimate_total_us", Kind::number},
              {"kernels", Kind::array}},
             "the file", file);
  if (j["runs"].get<int64_t>() < 1) throw times_error(file, "\"runs\" is below 1");
  check_keys(j["device"],
             {{"name", Kind::string}, {"sm", Kind::integer}, {"sm_count", Kind::integer}, {"driver", Kind::integer},
              {"runtime", Kind::integer}, {"emulation", Kind::boolean}},
             "\"device\"", file);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < j["kernels"].size(); ++i) {
    const Json& k = j["kernels"][i];
    const std::string where = "kernel " + std::to_string(i);
    check_keys(k,
               {{"id", Kind::string}, {"family", Kind::string}, {"tactic", Kind::string}, {"engine", Kind::string},
                {"measured_us", Kind::number}, {"estimate_us", Kind::number}, {"ratio", Kind::number_or_null},
                {"share", Kind::number}, {"flops", Kind::number}, {"bytes", Kind::number},
                {"roofline_us", Kind::number}, {"roofline_fraction", Kind::number_or_null}, {"flagged", Kind::boolean}},
               where, file);
    if (!ids.insert(k["id"].get<std::string>()).second) {
      throw times_error(file, where + " is \"" + k["id"].get<std::string>() + "\" again");
    }
  }
  return j;
}

void merge_times(Json& report, const Json& times, const std::string& file) {
  const std::string model = report.value("model", "");
  if (times.at("model") != model) {
    throw times_error(file, "the times are of model " + times.at("model").dump() + ", the report of \"" + model + "\"");
  }
  Json& kernels = report_kernels(report, times, file);
  const Json& measured = times.at("kernels");
  if (!kernels.is_array() || kernels.size() != measured.size()) {
    throw times_error(file, "the times have " + std::to_string(measured.size()) + " kernels, the report " +
                                std::to_string(kernels.is_array() ? kernels.size() : 0) +
                                " (times of another compile of the model?)");
  }
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const Json& t = measured[i];
    if (kernels[i].value("id", "") != t.at("id")) {
      throw times_error(file, "kernel " + std::to_string(i) + " is " + t.at("id").dump() + " in the times and \"" +
                                  kernels[i].value("id", "") + "\" in the report (times of another compile?)");
    }
    kernels[i]["measured"] = Json{{"us", t["measured_us"]},       {"estimate_us", t["estimate_us"]},
                                  {"ratio", t["ratio"]},          {"share", t["share"]},
                                  {"roofline_us", t["roofline_us"]}, {"roofline_fraction", t["roofline_fraction"]},
                                  {"flagged", t["flagged"]}};
  }
  report["measured"] = Json{{"device", times["device"]},
                            {"batch", times["batch"]},
                            {"profile", times["profile"]},
                            {"runs", times["runs"]},
                            {"timing", times["timing"]},
                            {"estimate_arch", times["estimate_arch"]},
                            {"estimate_part", times["estimate_part"]},
                            {"total_us", times["total_us"]},
                            {"estimate_total_us", times["estimate_total_us"]}};
}

std::string times_markdown(const Json& times) {
  const Json& d = times.at("device");
  const bool emulation = d.at("emulation").get<bool>();
  const std::string arch = times.at("estimate_arch").is_string() ? times.at("estimate_arch").get<std::string>() : "";
  std::string m = std::string(kTimesHeading) + " (" + d.at("name").get<std::string>() + ", sm_" +
                  std::to_string(d.at("sm").get<int>()) + ")\n\n";
  m += "Measured by the program (`--profile " + std::to_string(times.at("runs").get<int>()) + "`): " +
       times.at("timing").get<std::string>() + "; batch " + std::to_string(times.at("batch").get<int64_t>()) + ", " +
       std::to_string(d.at("sm_count").get<int>()) + " SMs, driver " + std::to_string(d.at("driver").get<int>()) +
       ". The estimates are the cost model's for " +
       (arch.empty() ? std::string("no arch") : arch + " (" + times.at("estimate_part").get<std::string>() + ")") +
       ", the --arch target of this device. roofline: the kernel's bound (its bytes at the DRAM rate, its FLOPs at its "
       "engine's rate) over its measured time.\n";
  if (emulation) m += "\nThese are host times of the CPU emulation: they say nothing of a GPU.\n";
  m += "\n| kernel | family | estimate us | measured us | measured / estimate | share | roofline | |\n";
  m += "|---|---|---:|---:|---:|---:|---:|---|\n";
  std::string flagged;
  for (const Json& k : times.at("kernels")) {
    const std::string id = k.at("id").get<std::string>();
    const bool flag = k.at("flagged").get<bool>();
    m += "| " + id + " | " + k.at("family").get<std::string>() + " | " + fixed("%.2f", k.at("estimate_us").get<double>()) +
         " | " + fixed("%.2f", k.at("measured_us").get<double>()) + " | " +
         (k.at("ratio").is_number() ? fixed("%.2f", k.at("ratio").get<double>()) : "-") + " | " + percent(k.at("share")) +
         " | " + percent(k.at("roofline_fraction")) + " | " + (flag ? "flagged" : "") + " |\n";
    if (flag) flagged += (flagged.empty() ? "" : ", ") + id;
  }
  const double total = times.at("total_us").get<double>(), estimate = times.at("estimate_total_us").get<double>();
  m += "| total | | " + fixed("%.2f", estimate) + " | " + fixed("%.2f", total) + " | " +
       (estimate > 0 ? fixed("%.2f", total / estimate) : "-") + " | 100.0% | | |\n";
  m += "\nFlagged (above 5 us at under 20% of the roofline bound): " + (flagged.empty() ? "none" : flagged) + ".\n";
  return m;
}

std::string with_times_section(const std::string& md, const std::string& section) {
  std::string base = md;
  const std::size_t previous = base.find(std::string("\n") + kTimesHeading);
  if (previous != std::string::npos) {
    const std::size_t next = base.find("\n## ", previous + 1);
    base.erase(previous, next == std::string::npos ? std::string::npos : next - previous);
  }
  // After the roofline section (the estimates it sits beside), else at the end.
  std::size_t at = base.size();
  const std::size_t roofline = base.find("\n## Roofline");
  if (roofline != std::string::npos) {
    const std::size_t next = base.find("\n## ", roofline + 1);
    if (next != std::string::npos) at = next;
  }
  std::string before = base.substr(0, at);
  while (!before.empty() && before.back() == '\n') before.pop_back();
  return before + (before.empty() ? "" : "\n\n") + section + base.substr(at);
}

std::string report_times(const std::string& dir, const std::string& times_file) {
  const fs::path folder(dir);
  const fs::path report_path = folder / "report.json";
  if (!fs::is_regular_file(report_path)) {
    throw Error(dir + " has no report.json", "give the folder modelc wrote (modelc MODEL.onnx -o DIR)");
  }
  if (!fs::is_regular_file(times_file)) throw times_error(times_file, "not a regular file");
  const Json times = read_times(read_text_file(times_file), times_file);
  Json report;
  try {
    report = Json::parse(read_text_file(report_path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(report_path.string() + " is not JSON: " + e.what());
  }
  merge_times(report, times, times_file);
  write_text_file(report_path, report.dump(2) + "\n");
  const fs::path md_path = folder / "report.md";
  const std::string md = fs::is_regular_file(md_path) ? read_text_file(md_path) : std::string();
  write_text_file(md_path, with_times_section(md, times_markdown(times)));
  int flagged = 0;
  for (const Json& k : times.at("kernels")) flagged += k.at("flagged").get<bool>() ? 1 : 0;
  return std::to_string(times.at("kernels").size()) + " kernels measured on " +
         times.at("device").at("name").get<std::string>() + " (" + fixed("%.2f", times.at("total_us").get<double>()) +
         " us in all, " + std::to_string(flagged) + " flagged)";
}

}  // namespace modelc

// compiler/cli/commands/report.cpp — `modelc report DIR --times FILE.json`: a generated program's
// measured kernel times (`./NAME --profile N --export-times FILE.json`) into the folder's
// report.json and report.md, beside the cost model's estimates (codegen/times.h).
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "codegen/times.h"

namespace modelc::cli {

namespace {

struct Report {
  std::string dir;
  std::string times;
};

}  // namespace

void register_report(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<Report>();
  CLI::App* sub = app.add_subcommand(
      "report", "fold a generated program's measured kernel times (--export-times) into its folder's report");
  sub->add_option("dir", a->dir, "a folder modelc wrote")->required()->type_name("DIR");
  sub->add_option("--times", a->times,
                  "the times the folder's program wrote (./NAME --profile N --export-times FILE.json)")
      ->required()
      ->type_name("FILE.json");
  sub->callback([a, &run] {
    run = [a] {
      std::cout << "report: " << report_times(a->dir, a->times) << " -> report.json, report.md\n";
      return 0;
    };
  });
}

}  // namespace modelc::cli

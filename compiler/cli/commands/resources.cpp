// compiler/cli/commands/resources.cpp — `modelc resources DIR [--check] [--objects DIR]`: registers,
// shared memory, stack and spills per kernel and arch, from ptxas -v during an nvcc build of an
// emitted folder, into its report.json and report.md (codegen/resources.h). The folder's
// `make resources` and `make check-tensor-cores` run it; `modelc MODEL --build` does after make.
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "codegen/resources.h"

namespace modelc::cli {

int run_resources(const std::string& dir, const std::string& objects, bool check, std::ostream& out) {
  const ResourcesOutcome o = report_resources(dir, objects, check);
  out << "resources: " << o.summary << " -> report.json, report.md\n";
  for (const std::string& m : o.missing) out << "  missing: " << m << "\n";
  for (const std::string& u : o.unmatched) out << "  unmatched: " << u << "\n";
  if (!check) return 0;
  if (!o.failures.empty()) {
    out << "check FAILED (" << o.failures.size() << "):\n";
    for (const std::string& f : o.failures) out << "  " << f << "\n";
    return 1;
  }
  std::string ptx_archs;
  for (const std::string& a : o.ptx_archs) ptx_archs += (ptx_archs.empty() ? "" : ", ") + a;
  out << "check passed: " << o.tensor_core_kernels << " tensor-core kernels, ldmatrix + mma.sync in each for "
      << (ptx_archs.empty() ? "(no PTX kept)" : ptx_archs) << ", no stack, no spills; " << o.kernels_with_resources << " of "
      << o.kernels << " kernels with registers and shared memory\n";
  return 0;
}

namespace {

struct Resources {
  std::string dir;
  std::string objects;
  bool check = false;
};

}  // namespace

void register_resources(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<Resources>();
  CLI::App* sub = app.add_subcommand(
      "resources", "registers, shared memory, stack and spills per kernel (ptxas -v of an nvcc build) into the report");
  sub->add_option("dir", a->dir, "a folder modelc wrote, built with nvcc (make, or make objs)")
      ->required()
      ->type_name("DIR");
  sub->add_option("--objects", a->objects,
                  "the objects' folder in DIR (default build/sm_<the report's archs>, as make builds them)")
      ->type_name("DIR");
  sub->add_flag("--check", a->check,
                "exit 1 unless every tensor-core kernel issues mma.sync for every arch (PTX kept: make KEEP_PTX=1) "
                "and spills nothing, every kernel has registers and shared memory, every entry point is a kernel's");
  sub->callback([a, &run] {
    run = [a] { return run_resources(a->dir, a->objects, a->check, std::cout); };
  });
}

}  // namespace modelc::cli

// compiler/cli/commands/commands.h — the subcommands of `modelc`.
//
// Adding a command: write compiler/cli/commands/NAME.cpp with a
// register_NAME(CLI::App&, RunFn&) that adds the CLI11 subcommand and, in its
// parse callback, stores the action in `run`; declare it here and list it in
// all_commands() (main.cpp). main parses, then calls `run`: usage errors
// (CLI11) exit 2, modelc::Error exits 1.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"

namespace CLI { class App; }

namespace modelc::cli {

/// A parsed command's action: returns the exit code (0, or 1 for a result
/// that is a failure, e.g. unsupported nodes); throws modelc::Error.
using RunFn = std::function<int()>;
using RegisterFn = void (*)(CLI::App& app, RunFn& run);

void register_inspect(CLI::App& app, RunFn& run);
void register_run_reference(CLI::App& app, RunFn& run);
void register_list_ops(CLI::App& app, RunFn& run);
/// The default command (`modelc MODEL.onnx ...`): registered on the app itself, not as a
/// subcommand; main calls it after the subcommands.
void register_compile(CLI::App& app, RunFn& run);

/// Every subcommand, in the order `modelc --help` lists them.
const std::vector<RegisterFn>& all_commands();

// ---- options shared by the commands that load a model -------------------------

/// --shape NAME=1x3x224x224 (repeatable), --batch N, --no-onnx-checks.
struct LoadFlags {
  std::vector<std::string> shapes;
  int64_t batch = 0;
  bool no_onnx_checks = false;
};
void add_load_flags(CLI::App& sub, LoadFlags& flags);
/// The LoadOptions the flags say; throws CLI::ValidationError (a usage
/// error) for a malformed or repeated --shape.
LoadOptions load_options(const LoadFlags& flags);
/// "NAME=1x3x224x224" -> (NAME, shape), split at the last '='; Error otherwise.
std::pair<std::string, Shape> parse_shape_arg(const std::string& arg);

// ---- the commands' work, callable from tests ------------------------------------

/// `modelc inspect`'s report for a model loaded with collect_unsupported.
std::string inspect_report(const LoadResult& r, bool verbose);

/// `modelc list-ops` (plain table) / `--markdown` (docs/operators.md).
std::string list_ops_text(bool markdown);

}  // namespace modelc::cli

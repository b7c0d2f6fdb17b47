// compiler/cli/main.cpp — the `modelc` command line: a dispatcher over the
// subcommands of compiler/cli/commands. Exit codes: 0 ok, 1 an Error (printed
// as "error: ..." and "hint: ..." on stderr) or a failing result, 2 a usage error.
#include <filesystem>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "support/error.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

int usage_error(const std::string& message) {
  std::cerr << "error: " << message << "\n"
            << "hint: run 'modelc --help' for the commands, 'modelc COMMAND --help' for their options\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace modelc;
  CLI::App app{"modelc: an ahead-of-time compiler from ONNX models to readable CUDA C++", "modelc"};
  app.set_version_flag("--version", "modelc 0.1");
  cli::RunFn run;
  for (cli::RegisterFn reg : cli::all_commands()) reg(app, run);
  cli::register_compile(app, run);  // the default command: `modelc MODEL.onnx --arch ...`
  // A first argument that is neither a command nor a model file is a mistyped command.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    bool known = false;
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == first;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    const bool model = first.find('.') != std::string::npos || first.find('/') != std::string::npos ||
                       std::filesystem::exists(first);
    if (!known && !model) {
      return usage_error("unknown command '" + first + "' (commands: " + names +
                         "; or give a model file to compile it)");
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return usage_error(e.what());
  } catch (const Error& e) {  // thrown by a parse callback
    std::cerr << "error: " << e.what() << "\n";
    return kExitError;
  }
  if (!run) {
    std::cerr << app.help();
    return usage_error("no command given");
  }
  try {
    return run();
  } catch (const CLI::ParseError& e) {
    return usage_error(e.what());
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitError;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << "error: internal: " << e.what() << "\n";
    return kExitError;
  }
}

// compiler/cli/main.cpp — the `modelc` command line: a dispatcher over the
// subcommands of compiler/cli/commands. Exit codes (docs/CLI.md, "Exit status"): 0 ok, 1 an Error
// (printed as "error: ..." and "hint: ..." on stderr) or a failing result (inspect: unsupported
// nodes), 2 a usage error (an unknown flag gets the nearest one: "did you mean"), 3 verify's
// outputs do not match (cli::kExitMismatch).
#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "support/data_dir.h"
#include "support/error.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// Edit distance (insertions, deletions, substitutions; a swap of two neighbours counts one).
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// The name of `names` nearest to `word`, "" when none is near (at most 2 edits, or a third of the
// word's length for long ones); the first in order on a tie.
std::string nearest(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  std::size_t best_d = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& n : names) {
    const std::size_t d = distance(word, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  return best;
}

// " (did you mean --fp16?)" for each unknown flag CLI11 names in `message` (an ExtrasError: "The
// following argument was not expected: --fp61"), from the options of the command that was parsed.
std::string did_you_mean(CLI::App& app, const std::string& message) {
  const std::size_t colon = message.rfind(": ");
  if (colon == std::string::npos) return "";
  CLI::App* cmd = &app;
  for (CLI::App* sub : app.get_subcommands()) cmd = sub;  // the command given (parsed)
  std::vector<std::string> flags;
  for (const CLI::Option* o : cmd->get_options()) {
    for (const std::string& l : o->get_lnames()) flags.push_back("--" + l);
    for (const std::string& n : o->get_snames()) flags.push_back("-" + n);
  }
  std::istringstream words(message.substr(colon + 2));
  std::string word, r;
  while (words >> word) {
    if (word.size() < 2 || word[0] != '-') continue;
    const std::string flag = word.substr(0, word.find('='));
    const std::string n = nearest(flag, flags);
    if (!n.empty()) r += " (" + flag + ": did you mean " + n + "?)";
  }
  return r;
}

int usage_error(const std::string& message) {
  std::cerr << "error: " << message << "\n"
            << "hint: run 'modelc --help' for the commands, 'modelc COMMAND --help' for their options\n";
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace modelc;
  CLI::App app{"modelc: an ahead-of-time compiler from ONNX models to readable CUDA C++", "modelc"};
  // The data folder too: where templates/ and runtime_stub/ come from (an installed modelc's
  // share/modelc, or the source tree it was built from; support/data_dir.h).
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return "modelc 0.1\ndata: " + modelc_data_dir();
                       }));
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
      std::vector<std::string> commands;
      for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
      const std::string near = nearest(first, commands);
      return usage_error("unknown command '" + first + "'" + (near.empty() ? "" : " (did you mean " + near + "?)") +
                         " (commands: " + names + "; or give a model file to compile it)");
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
    return usage_error(e.what() + (extras ? did_you_mean(app, e.what()) : std::string()));
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

// compiler/cli/commands/commands.cpp — the list of subcommands main registers.
#include "cli/commands/commands.h"

namespace modelc::cli {

const std::vector<RegisterFn>& all_commands() {
  static const std::vector<RegisterFn> commands = {
      register_inspect,
      register_run_reference,
      register_list_ops,
      register_verify,
      register_resources,
      register_report,
      register_tune,
      register_passes,
  };
  return commands;
}

}  // namespace modelc::cli

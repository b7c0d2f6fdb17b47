// compiler/cli/commands/passes.cpp — `modelc passes`: the pipeline's stages in order, what each
// needs and does, and which --disable-pass may skip (compiler/pipeline/pipeline.h).
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "pipeline/pipeline.h"

namespace modelc::cli {

void register_passes(CLI::App& app, RunFn& run) {
  CLI::App* sub = app.add_subcommand("passes", "list the stages of a compile in order (the names --print-after and "
                                               "--disable-pass take)");
  sub->callback([&run] {
    run = [] {
      std::cout << describe_pipeline();
      return 0;
    };
  });
}

}  // namespace modelc::cli

// compiler/cli/commands/load_flags.cpp — --shape / --batch / --no-onnx-checks / --plugin.
#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "plugin/plugin.h"
#include "support/error.h"

namespace modelc::cli {

std::pair<std::string, Shape> parse_shape_arg(const std::string& arg) {
  const std::size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error("'" + arg + "' is not NAME=DIMS (e.g. --shape input=1x3x224x224)");
  }
  return {arg.substr(0, eq), parse_shape(arg.substr(eq + 1))};
}

void add_load_flags(CLI::App& sub, LoadFlags& flags) {
  sub.add_option("--shape", flags.shapes, "static shape of an input, repeatable: NAME=1x3x224x224")
      ->type_name("NAME=DIMS")
      ->allow_extra_args(false)
      ->check(
          [](const std::string& s) {
            try {
              parse_shape_arg(s);
            } catch (const Error& e) {
              return e.message();
            }
            return std::string();
          },
          "");
  sub.add_option("--batch", flags.batch, "value of every input's symbolic first dim")
      ->type_name("N")
      ->check([](const std::string& s) {
        const bool ok = !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos &&
                        s.find_first_not_of('0') != std::string::npos;
        return ok ? std::string() : "'" + s + "' is not a positive integer below 10^9";
      }, "");
  sub.add_flag("--no-onnx-checks", flags.no_onnx_checks, "skip ONNX's checker and shape inference");
  sub.add_option("--plugin", flags.plugins,
                 "custom operators for this run, repeatable: a folder holding plugin.json (docs/PLUGINS.md)")
      ->type_name("DIR")
      ->allow_extra_args(false);
}

LoadOptions load_options(const LoadFlags& flags) {
  LoadOptions o;
  for (const std::string& s : flags.shapes) {
    std::pair<std::string, Shape> p;
    try {
      p = parse_shape_arg(s);
    } catch (const Error& e) {
      throw CLI::ValidationError("--shape", e.message());
    }
    if (!o.input_shapes.emplace(p.first, p.second).second) {
      throw CLI::ValidationError("--shape", "input '" + p.first + "' is given twice");
    }
  }
  o.batch = flags.batch;
  o.onnx_checks = !flags.no_onnx_checks;
  plugin::load_plugins(flags.plugins);
  return o;
}

}  // namespace modelc::cli

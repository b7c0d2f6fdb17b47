// compiler/cli/commands/load_flags.cpp — --shape / --bind / --batch / --no-onnx-checks / --plugin, and
// the batch profiles they ask for (--batch 1,8,32; --shape NAME=1..32x3x224x224 or NAME=1/8/32x3x224x224).
#include <algorithm>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "plugin/plugin.h"
#include "support/error.h"

namespace modelc::cli {

namespace {

constexpr int64_t kMaxBatch = 999999999;

// "8" -> 8: a positive integer below 10^9; Error naming `what` otherwise.
int64_t parse_batch_value(const std::string& s, const std::string& what) {
  const bool ok = !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos &&
                  s.find_first_not_of('0') != std::string::npos;
  if (!ok) throw Error(what + ": '" + s + "' is not a positive integer below 10^9");
  return std::stoll(s);
}

// Ascending, each once; Error when a value repeats or there are too many.
std::vector<int64_t> checked_profiles(std::vector<int64_t> v, const std::string& what) {
  std::sort(v.begin(), v.end());
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (v[i] == v[i - 1]) throw Error(what + ": batch " + std::to_string(v[i]) + " is given twice");
  }
  if (static_cast<int>(v.size()) > kMaxBatchProfiles) {
    throw Error(what + ": " + std::to_string(v.size()) + " batch profiles; at most " +
                std::to_string(kMaxBatchProfiles) + " (each is a whole compile)");
  }
  return v;
}

}  // namespace

std::vector<int64_t> parse_batch_list(const std::string& s, const std::string& what) {
  const std::size_t dots = s.find("..");
  std::vector<int64_t> v;
  if (dots != std::string::npos) {  // A..B: A, the powers of two between, B
    const int64_t lo = parse_batch_value(s.substr(0, dots), what);
    const int64_t hi = parse_batch_value(s.substr(dots + 2), what);
    if (hi <= lo) throw Error(what + ": the range " + s + " is empty or one batch (write A..B with A < B)");
    v.push_back(lo);
    for (int64_t p = 1; p < hi; p *= 2) {
      if (p > lo) v.push_back(p);
    }
    v.push_back(hi);
    return checked_profiles(v, what);
  }
  const char sep = s.find('/') != std::string::npos ? '/' : ',';
  for (std::size_t a = 0; a <= s.size();) {
    const std::size_t b = std::min(s.find(sep, a), s.size());
    v.push_back(parse_batch_value(s.substr(a, b - a), what));
    a = b + 1;
  }
  return checked_profiles(v, what);
}

ShapeArg parse_shape_arg(const std::string& arg) {
  const std::size_t eq = arg.rfind('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error("'" + arg + "' is not NAME=DIMS (e.g. --shape input=1x3x224x224)");
  }
  ShapeArg r;
  r.name = arg.substr(0, eq);
  const std::string dims = arg.substr(eq + 1);
  // The first dim may be batch profiles: A..B or A/B/C.
  const std::size_t end = dims.find_first_of("xX,");
  const std::string first = dims.substr(0, end);
  if (first.find("..") != std::string::npos || first.find('/') != std::string::npos) {
    r.batches = parse_batch_list(first, "--shape " + arg);
    r.shape = parse_shape(std::to_string(r.batches.back()) + (end == std::string::npos ? "" : dims.substr(end)));
    return r;
  }
  if (dims.find("..") != std::string::npos || dims.find('/') != std::string::npos) {
    throw Error("--shape " + arg + ": only the first dim (the batch) may be a range A..B or a list A/B/C");
  }
  r.shape = parse_shape(dims);
  return r;
}

void add_load_flags(CLI::App& sub, LoadFlags& flags) {
  sub.add_option("--shape", flags.shapes,
                 "static shape of an input, repeatable: NAME=1x3x224x224; a first dim A..B or A/B/C compiles batch "
                 "profiles (as --batch)")
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
  sub.add_option("--bind", flags.binds,
                 "fix a graph input to a file's data (.npy or .pb), repeatable: NAME=FILE; the input becomes a "
                 "compile-time constant (a shape tensor fed as an input)")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false)
      ->check(
          [](const std::string& s) {
            const std::size_t eq = s.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
              return "'" + s + "' is not NAME=FILE (e.g. --bind shape=shape.npy)";
            }
            return std::string();
          },
          "");
  sub.add_option("--batch", flags.batch,
                 "the batch: every input's symbolic first dim (a model that fixes its batch is re-batched); "
                 "N,M,... or A..B: one schedule per batch (profiles)")
      ->type_name("N[,M,...]")
      ->check(
          [](const std::string& s) {
            try {
              parse_batch_list(s, "--batch");
            } catch (const Error& e) {
              return e.message();
            }
            return std::string();
          },
          "");
  sub.add_flag("--no-onnx-checks", flags.no_onnx_checks, "skip ONNX's checker and shape inference");
  sub.add_option("--plugin", flags.plugins,
                 "custom operators for this run, repeatable: a folder holding plugin.json (docs/PLUGINS.md)")
      ->type_name("DIR")
      ->allow_extra_args(false);
}

std::vector<int64_t> batch_profiles(const LoadFlags& flags) {
  std::vector<int64_t> r;
  std::string from;  // the flag r came from
  auto take = [&](std::vector<int64_t> v, const std::string& flag) {
    if (!from.empty() && v != r) {
      auto text = [](const std::vector<int64_t>& b) {
        std::string t;
        for (int64_t x : b) t += (t.empty() ? "" : ",") + std::to_string(x);
        return t;
      };
      throw CLI::ValidationError(flag, "gives the batches " + text(v) + ", " + from + " gives " + text(r) +
                                           ": give one set of batch profiles");
    }
    r = std::move(v);
    from = flag;
  };
  try {
    if (!flags.batch.empty()) take(parse_batch_list(flags.batch, "--batch"), "--batch");
    for (const std::string& s : flags.shapes) {
      ShapeArg a = parse_shape_arg(s);
      if (!a.batches.empty()) take(a.batches, "--shape " + s);
    }
  } catch (const Error& e) {
    throw CLI::ValidationError("--batch", e.message());
  }
  return r;
}

LoadOptions load_options(const LoadFlags& flags, int64_t batch) {
  const std::vector<int64_t> profiles = batch_profiles(flags);
  if (batch == 0 && !profiles.empty()) {
    if (profiles.size() > 1) {
      throw CLI::ValidationError("--batch", "this command takes one batch, not batch profiles");
    }
    batch = profiles[0];
  }
  LoadOptions o;
  for (const std::string& s : flags.shapes) {
    ShapeArg p;
    try {
      p = parse_shape_arg(s);
    } catch (const Error& e) {
      throw CLI::ValidationError("--shape", e.message());
    }
    if (!p.batches.empty()) p.shape[0] = batch;
    if (!o.input_shapes.emplace(p.name, p.shape).second) {
      throw CLI::ValidationError("--shape", "input '" + p.name + "' is given twice");
    }
  }
  o.bind = flags.binds;
  o.batch = profiles.empty() ? 0 : batch;
  o.onnx_checks = !flags.no_onnx_checks;
  plugin::load_plugins(flags.plugins);
  return o;
}

}  // namespace modelc::cli

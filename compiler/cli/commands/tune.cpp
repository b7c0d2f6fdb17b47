// compiler/cli/commands/tune.cpp — `modelc tune`:
//   modelc tune MODEL.onnx [compile flags] [--arch sm_XX] [--candidates N] [-o DIR]
//       compiles the model as `modelc MODEL.onnx [flags]` would for one arch, and writes a tuning
//       folder (codegen/tune.h): each distinct tensor-core kernel signature's N best candidates by
//       the cost model, a driver that checks and times them (make run: times.json)
//   modelc tune --collect TIMES.json... -o NAME.tuning.json
//       the drivers' times as a tuning cache (schedule/tuning_cache.h) for --tuning-cache
// docs/TUNING.md is the guide.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "cli/commands/profiles.h"
#include "codegen/emitter.h"
#include "codegen/tune.h"
#include "pipeline/pipeline.h"
#include "schedule/tuning_cache.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc::cli {

namespace {

/// The most candidates per signature (each is a kernel the folder compiles).
constexpr int kMaxCandidates = 64;

struct Tune {
  std::string model;
  std::string out;
  std::string name;
  std::string arch = "sm_75";
  int candidates = 8;
  std::vector<std::string> collect;  ///< --collect TIMES.json...
  LoadFlags load;
  PrecisionFlags precision;
  std::string layout = "auto";
  std::string flags;  ///< the compile flags as given (compile_flags)
};

// The compile flags `modelc tune` was given, as a compile takes them (the folder's README repeats
// them): every option given but the model, -o, --candidates, --collect and --arch (run_tune puts the
// one arch first), in the command's order.
std::string compile_flags(const CLI::App& sub) {
  std::string r;
  auto quoted = [](const std::string& v) {  // as typed where nothing needs quoting
    return !v.empty() && v.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,:/@%") ==
                             std::string::npos
               ? v
               : shell_quote(v);
  };
  for (const CLI::Option* o : sub.get_options()) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    const std::string flag = "--" + o->get_lnames().front();
    if (flag == "--out" || flag == "--candidates" || flag == "--collect" || flag == "--help" || flag == "--arch") continue;
    if (o->get_expected_max() == 0) {  // a flag
      r += (r.empty() ? "" : " ") + flag;
      continue;
    }
    for (const std::string& v : o->results()) r += (r.empty() ? "" : " ") + flag + " " + quoted(v);
  }
  return r;
}

int run_collect(const Tune& t) {
  if (t.out.empty()) throw CLI::ValidationError("--collect writes a tuning cache: name it with -o NAME.tuning.json");
  std::vector<std::string> notes;
  const TuningCache cache = TuningCache::collect(t.collect, &notes);
  for (const std::string& n : notes) std::cerr << "note: " << n << "\n";
  if (cache.kernels.empty()) {
    throw Error("--collect: no kernel signature has a measured candidate in " + std::to_string(t.collect.size()) +
                " file(s): nothing to write");
  }
  write_text_file(t.out, cache.to_json());
  std::cout << "wrote " << t.out << ": " << cache.kernels.size() << " kernel signatures measured on "
            << cache.device.name << " (sm_" << cache.device.sm << ", " << cache.device.sm_count << " SMs); compile with "
            << "--tuning-cache " << t.out << "\n";
  return 0;
}

int run_tune(const Tune& t) {
  if (!t.collect.empty()) return run_collect(t);
  std::string name = t.name;
  if (name.empty()) {
    name = default_model_name(t.model);
  } else {
    check_model_name(name);
  }
  const std::vector<std::string> archs = checked_archs(t.arch, false);
  if (archs.size() != 1) {
    throw CLI::ValidationError("modelc tune times one GPU's tactics: give one --arch (" + t.arch + " names " +
                               std::to_string(archs.size()) + "), and tune each GPU on its own");
  }
  if (batch_profiles(t.load).size() > 1) {
    throw CLI::ValidationError("modelc tune takes one batch (--batch " + t.load.batch +
                               " names several): tune each batch on its own; their signatures differ");
  }
  const std::string out = t.out.empty() ? (fs::path("out") / (name + "_tune")).string() : t.out;
  LowerOptions opt;
  opt.name = name;
  opt.archs = archs;
  apply_precision_flags(t.precision, opt.passes);
  opt.layout = parse_layout_mode(t.layout);
  opt.passes.tune_candidates = t.candidates;
  std::shared_ptr<const CalibrationTable> calibration;
  if (t.precision.int8) {
    const std::unique_ptr<Graph> g = load_onnx(t.model, load_options(t.load));
    calibration = calibration_for(t.precision, *g, opt.passes, std::cout);
    opt.passes.calibration = calibration.get();
  }
  const LoweredModel lowered = lower_model(t.model, t.load, opt);
  const Schedule& s = lowered.schedules.back();
  TuneOptions to;
  to.source = t.model;
  to.flags = "--arch " + archs.front() + (t.flags.empty() ? "" : " " + t.flags);
  emit_tuning(s, out, to);
  std::size_t candidates = 0;
  const std::vector<const Kernel*> tuned = tuned_kernels(s);
  for (const Kernel* k : tuned) candidates += k->tune_candidates.size();
  std::cout << "wrote " << out << " (" << archs.front() << "): " << tuned.size() << " kernel signatures, " << candidates
            << " candidates (at most " << t.candidates << " each)\n";
  std::cout << "run it on the GPU: make -C " << out << " -j run   (or make -C " << out
            << " -j run-emu: the CPU emulation, host times)\n";
  std::cout << "then: modelc tune --collect " << out << "/times.json -o " << name << ".tuning.json\n";
  return 0;
}

}  // namespace

void register_tune(CLI::App& app, RunFn& run) {
  auto t = std::make_shared<Tune>();
  CLI::App* sub = app.add_subcommand(
      "tune", "write a tuning folder that times each tensor-core kernel's candidate tactics on the GPU, or "
              "(--collect) turn its times into a tuning cache for --tuning-cache");
  sub->add_option("model", t->model, "the model, with the flags it is compiled with")->type_name("MODEL.onnx");
  sub->add_option("-o,--out", t->out,
                  "the tuning folder (default out/NAME_tune); with --collect, the cache to write")
      ->type_name("DIR|FILE");
  sub->add_option("--name", t->name, "prefix of every symbol and file (default: the model file's name)")
      ->type_name("NAME");
  sub->add_option("--arch", t->arch, "the one GPU architecture to tune (default sm_75)")->type_name("sm_XX");
  sub->add_option("--candidates", t->candidates,
                  "candidates per kernel signature, the cost model's best first (default 8)")
      ->type_name("N")
      ->check(CLI::Range(1, kMaxCandidates));
  CLI::Option* collect = sub->add_option("--collect", t->collect,
                                         "the times.json files tuning drivers wrote (one device): write them as "
                                         "a tuning cache (-o FILE)")
                             ->type_name("TIMES.json")
                             ->expected(1, -1);
  add_load_flags(*sub, t->load);
  add_precision_flags(*sub, t->precision);
  add_layout_flag(*sub, t->layout);
  sub->callback([t, sub, collect, &run] {
    if (collect->count() > 0) {
      if (!t->model.empty()) throw CLI::ValidationError("--collect takes times files, not a model ('" + t->model + "')");
    } else {
      if (t->model.empty()) throw CLI::ValidationError("modelc tune needs a model (or --collect TIMES.json)");
      check_precision_flags(t->precision);
      batch_profiles(t->load);
      check_arch_usage(t->arch, true);
    }
    t->flags = compile_flags(*sub);
    run = [t] { return run_tune(*t); };
  });
}

}  // namespace modelc::cli

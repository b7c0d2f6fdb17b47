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
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "reference/interpreter.h"

namespace CLI { class App; class Option; }

namespace modelc {
struct PassOptions;
struct CalibrationTable;
}

namespace modelc::cli {

/// A parsed command's action: returns the exit code (0, or 1 for a result
/// that is a failure, e.g. unsupported nodes); throws modelc::Error.
using RunFn = std::function<int()>;
using RegisterFn = void (*)(CLI::App& app, RunFn& run);

void register_inspect(CLI::App& app, RunFn& run);
void register_run_reference(CLI::App& app, RunFn& run);
void register_list_ops(CLI::App& app, RunFn& run);
void register_verify(CLI::App& app, RunFn& run);
void register_resources(CLI::App& app, RunFn& run);
void register_report(CLI::App& app, RunFn& run);
void register_passes(CLI::App& app, RunFn& run);
void register_tune(CLI::App& app, RunFn& run);
/// The default command (`modelc MODEL.onnx ...`): registered on the app itself, not as a
/// subcommand; main calls it after the subcommands.
void register_compile(CLI::App& app, RunFn& run);

/// Every subcommand, in the order `modelc --help` lists them.
const std::vector<RegisterFn>& all_commands();

// ---- options shared by the commands that load a model -------------------------

/// --shape NAME=1x3x224x224 (repeatable), --bind NAME=FILE (repeatable), --batch N, --no-onnx-checks,
/// --plugin DIR (repeatable).
///
/// Batch profiles: `--batch 1,8,32` (or `--batch 1..32`: 1, the powers of two between, 32), or a
/// --shape whose first dim is a range `NAME=1..32x3x224x224` or a list `NAME=1/8/32x3x224x224`,
/// compile one schedule per batch (cli/commands/profiles.h). Where both are given they must name
/// the same batches.
struct LoadFlags {
  std::vector<std::string> shapes;
  std::vector<std::string> binds;  ///< LoadOptions::bind
  std::string batch;  ///< --batch as given: "8", "1,8,32" or "1..32"; "" when absent
  bool no_onnx_checks = false;
  std::vector<std::string> plugins;  ///< compiler/plugin/plugin.h: ops added to the table for this run
};
/// The most batch profiles one compile takes (each is a whole compile).
constexpr int kMaxBatchProfiles = 16;
void add_load_flags(CLI::App& sub, LoadFlags& flags);
/// \brief The batches the flags ask for, ascending (one for --batch N; empty when neither --batch
/// nor a ranged --shape is given). Throws CLI::ValidationError (a usage error) for a malformed
/// list, or --batch and a --shape naming different batches.
std::vector<int64_t> batch_profiles(const LoadFlags& flags);
/// \brief The LoadOptions the flags say, for `batch` (one of batch_profiles(); 0: the one batch
/// the flags give, a usage error when they give several). Throws CLI::ValidationError (a usage
/// error) for a malformed or repeated --shape. Loads the --plugin folders (their ops join the op
/// table; loading one again does nothing), throwing Error for a plugin that cannot be loaded.
LoadOptions load_options(const LoadFlags& flags, int64_t batch = 0);
/// \brief A --shape argument: "NAME=1x3x224x224" (split at the last '='), or with batch profiles as
/// its first dim, "NAME=1..32x3x224x224" / "NAME=1/8/32x3x224x224" (`batches` ascending, the
/// shape's first dim then the largest). Error otherwise.
struct ShapeArg {
  std::string name;
  Shape shape;
  std::vector<int64_t> batches;  ///< empty: a plain shape
};
ShapeArg parse_shape_arg(const std::string& arg);
/// \brief "8" / "1,8,32" / "1/8/32" / "1..32" (A, the powers of two between A and B, B) -> the
/// batches, ascending; Error starting with `what` for anything else, a repeated batch or more than
/// kMaxBatchProfiles.
std::vector<int64_t> parse_batch_list(const std::string& s, const std::string& what);

// ---- precision options of the commands that compile (compile, verify) -----------

/// `modelc verify --bf16`'s defaults (FP16's are rtol 1e-2, atol 1e-3, relative L2 1e-2): bfloat16
/// keeps 8 mantissa bits to float16's 11, so each rounding is up to 8x coarser (2^-9 against 2^-12
/// relative); see verify.cpp.
constexpr double kBf16Rtol = 5e-2, kBf16Atol = 1e-2, kBf16MaxRelL2 = 5e-2;

/// --fp16, --bf16, --fp16-accumulate, --io-fp16, --winograd MODE, --keep-fp32 NODE,... (repeatable,
/// comma lists); --int8 [--calibrate DIR|random:N [--calibrate-max N] | --calibration-cache FILE]
/// [--calibration METHOD].
struct PrecisionFlags {
  bool fp16 = false;
  bool bf16 = false;
  bool fp16_accumulate = false;
  bool io_fp16 = false;
  std::string winograd = "auto";
  std::vector<std::string> keep_fp32;
  bool int8 = false;
  std::string calibrate;          ///< --calibrate: a folder or random:N
  int64_t calibrate_max = 0;      ///< --calibrate-max N: the first N samples only (0: all)
  std::string calibration = "entropy";
  std::string calibration_cache;  ///< --calibration-cache FILE
};
/// Adds the flags; --fp16-accumulate, --io-fp16 and --winograd need --fp16, --bf16 and --int8 exclude
/// it and each other, --keep-fp32 needs one of the three, --calibrate / --calibration-cache /
/// --calibration need --int8 (usage errors otherwise; check_precision_flags checks what CLI11 cannot).
void add_precision_flags(CLI::App& sub, PrecisionFlags& flags);
/// --calibrate-max N (PrecisionFlags::calibrate_max; needs `calibrate`, the --calibrate option).
void add_calibrate_max_flag(CLI::App& sub, PrecisionFlags& flags, CLI::Option* calibrate);
/// The usage rules CLI11 cannot state (--keep-fp32 needs --fp16, --bf16 or --int8): CLI::ValidationError
/// (a usage error, exit 2). The commands call it in their parse callbacks.
void check_precision_flags(const PrecisionFlags& flags);
/// Sets PassOptions::fp16, bf16, fp16_accumulate, io_fp16, winograd, keep_fp32 (node names
/// deduplicated, in order) and int8 (which sets fp16 too). Throws Error for an empty node name; names
/// the model lacks are the precision pass's Error (it knows the graph). The calibration table is
/// calibration_for's.
void apply_precision_flags(const PrecisionFlags& flags, PassOptions& o);
/// \brief --int8's calibration (null without --int8): read from --calibration-cache, or computed
/// from --calibrate (at most --calibrate-max samples) with --calibration's method
/// (pipeline/calibrate.h), printing one line to `log`; while it runs, a progress line on standard
/// error when that is a terminal (nothing otherwise).
/// Error when --int8 has neither, naming the flags.
std::shared_ptr<const CalibrationTable> calibration_for(const PrecisionFlags& flags, const Graph& g,
                                                        const PassOptions& o, std::ostream& log);
/// Writes the table as DIR/NAME_calibration.json (the cache a later build reuses); returns the path.
std::string write_calibration_cache(const CalibrationTable& t, const std::string& dir, const std::string& name);
/// --layout auto|nchw (LowerOptions::layout; a usage error for another word).
void add_layout_flag(CLI::App& sub, std::string& layout);
/// --streams N, 1 to 32 (LowerOptions::streams; left at 0 when absent: automatic).
void add_streams_flag(CLI::App& sub, int& streams);

// ---- the commands' work, callable from tests ------------------------------------

/// `modelc inspect`'s report for a model loaded with collect_unsupported.
std::string inspect_report(const LoadResult& r, bool verbose);

/// `modelc list-ops` (plain table) / `--markdown` (docs/operators.md).
std::string list_ops_text(bool markdown);

/// \brief `modelc resources DIR`: the resources of the folder's nvcc build (its objects in
/// `objects`, "" for the Makefile's default) into its report.json and report.md
/// (codegen/resources.h), what it found printed to `out`. 0, or 1 when `check` fails; throws Error
/// when the report or the ptxas logs are missing.
int run_resources(const std::string& dir, const std::string& objects, bool check, std::ostream& out);

/// \brief onnxruntime's outputs of a model (onnxruntime.cpp).
struct OnnxRuntimeRun {
  TensorMap outputs;    ///< by output name
  std::string version;  ///< onnxruntime-node's version ("1.30.0"); "" when unknown
};
/// \brief Runs the model file `model` with onnxruntime (scripts/ort_run.js under node, the
/// onnxruntime-node package support/data_dir.h finds) on `feeds` and the inputs of `g` that --bind
/// made constants, its files under `work` (replaced). Throws Error when node, the package or the
/// run fails, naming what to install.
OnnxRuntimeRun run_onnxruntime(const std::string& model, const Graph& g, const TensorMap& feeds, const std::string& work);

/// `modelc verify`'s options (see verify.cpp).
struct VerifyOptions {
  std::string model;
  bool emulate = false;        ///< the host emulation (make emu)
  std::string arch;            ///< "" and not emulate: the local GPU's, or the emulation without one
  std::string inputs_dir;      ///< "" : seeded random inputs
  double rtol = 1e-3, atol = 1e-5;  ///< register_verify makes them 1e-2, 1e-3 under --fp16
  /// > 0: an output passes when its relative L2 error is at most this and it has no NaN or Inf
  /// where the reference is finite (the rtol/atol mismatches are then printed, not judged).
  /// register_verify makes it 1e-2 under --fp16; 0: the rtol/atol test decides.
  double max_rel_l2 = 0;
  /// --rtol, --atol, --max-rel-l2 given (register_verify): a BF16 model takes --bf16's defaults for
  /// the others (verify.cpp).
  bool rtol_given = false, atol_given = false, max_rel_l2_given = false;
  /// --int8, --fp16 or --bf16 without --max-rel-l2 (register_verify sets it): an output passes when
  /// its relative L2 error is at most 1.25 x that of modelc's simulation of the precision
  /// (run-reference --int8 / --fp16 / --bf16, the same graph stages) + a floor (1e-3; BF16 8e-3),
  /// for FP16 and BF16 its relative L2 distance from the simulation's output too, and no NaN / Inf:
  /// the kernels are faithful to what the precision computes (issue 11's criterion for INT8, issue
  /// 28's for FP16 and BF16).
  bool against_simulation = false;
  /// An output also passes when every element is within range_tol x the reference's range (its
  /// largest finite value minus its smallest) and no NaN / Inf is new: a near-zero output makes the
  /// relative L2 error meaningless. -1 (the default): by precision, 1e-5 for FP32, 2^-10 for FP16,
  /// 2^-7 for BF16 and INT8 (the storage type's rounding at 1.0); 0: off. Float outputs only.
  double range_tol = -1;
  /// --ort: the model run by onnxruntime too (run_onnxruntime); the reference interpreter must agree
  /// with it (relative L2 at most 1e-4, or every element within 1e-5 x the range).
  bool ort = false;
  PrecisionFlags precision;    ///< --fp16 ...: the program is compiled with the precision pass
  std::string layout = "auto"; ///< --layout: LowerOptions::layout (schedule/layout.h)
  int streams = 0;             ///< --streams: LowerOptions::streams (0: automatic)
  std::string keep;            ///< "" : a temporary folder, removed
  std::string name;            ///< "" : from the model file's name
  uint64_t seed = 0;
  int jobs = 0;                ///< make -j (0: the number of cores)
  LoadFlags load;
  /// For tests: LowerOptions::family_substitutes.
  std::map<std::string, std::string> family_substitutes;
  /// For tests: called with the emitted folder before it is built (a planted bug the comparison
  /// must catch); one batch only.
  std::function<void(const std::string& dir)> patch_emitted;
  /// --layers: the program also writes every tensor each kernel writes (its taps, NAME_run_taps),
  /// and each is compared with the reference's value of the same tensor after the compile's graph
  /// stages (at the program's precision), in the order they are written; the first kernel over
  /// the tolerance is named, and fails the verdict.
  bool layers = false;
  /// --folder DIR: check the emitted folder DIR as it is (edited by hand, say): built with its
  /// Makefile and run, not compiled again; the other flags must be those it was compiled with.
  std::string folder;
};
/// `modelc verify`'s exit status when an output does not match (or, with --ort, the reference
/// interpreter and onnxruntime disagree): distinct from an error's 1 and a usage error's 2.
constexpr int kExitMismatch = 3;
/// \brief Emits, builds and runs the model and compares its outputs with the reference
/// interpreter's, printing a line per output to `out`. 0 when every output passes, kExitMismatch
/// otherwise; throws Error when it cannot get that far.
int verify_model(const VerifyOptions& v, std::ostream& out);

// ---- the compile command's pieces (compile.cpp), for commands that emit and build -------

/// The NAME a model compiles to by default: its file name's stem as a C identifier
/// ("my-model.onnx" -> "my_model"; "m_" before a leading digit; "_model" after a keyword).
std::string default_model_name(const std::string& model_path);
/// Throws Error when `name` cannot prefix C symbols (--name).
void check_model_name(const std::string& name);
/// "--arch sm_75,sm_86" -> {"sm_75", "sm_86"} (ascending, deduplicated): sm_XX with XX >= 75, and
/// one the installed nvcc can target (`nvcc --list-gpu-arch`; Error listing those it can). Without
/// nvcc they are not checked (a note on stderr unless `quiet`).
std::vector<std::string> checked_archs(const std::string& list, bool quiet);
/// \brief checked_archs in a command's parse callback: a bad --arch is a usage error (exit 2), its
/// message naming the architectures modelc (and the installed nvcc) takes.
void check_arch_usage(const std::string& list, bool quiet);
/// `s` as one single-quoted POSIX shell word.
std::string shell_quote(const std::string& s);
/// The nvcc modelc builds with ($NVCC, PATH, /usr/local/cuda/bin); "" when there is none.
std::string find_nvcc_path();
/// Runs make in an emitted folder (`emu`: NAME_emu with g++; else `all`: NAME with nvcc) with
/// `jobs` jobs (0: one per core), writing the progress to `out` (files compiled of total, time
/// taken) and the compilers' messages to stderr. Returns the binary's path; throws Error when the
/// build fails.
std::string build_emitted(const std::string& dir, const std::string& name, bool emulate, int jobs, std::ostream& out);

}  // namespace modelc::cli

// runtime_stub/cli.h — the command line of a generated model (NAME_main.cu calls mc_cli::main with
// the model's table of C API functions). Header-only; host code only.
//
//   ./NAME [--input NAME=FILE.npy|FILE.pb]... [--output-dir DIR] [--seed S] [--device D] [--batch N]
//          [--weights FILE] [--bench N] [--warmup N] [--profile [N]] [--export-times FILE.json]
//          [--taps DIR] [--compare-dir DIR] [--rtol R] [--atol A] [--max-rel-l2 L]
//   ./NAME --self-test [--device D] [--weights FILE]
//
//   --input NAME=FILE   data for the input NAME (.npy, or an ONNX TensorProto .pb); its dtype and
//                       shape must be the model's exactly, except that a bfloat16 input reads a
//                       float32 .npy (numpy has no bfloat16), rounded to nearest even, and that for
//                       a model compiled with batch profiles (--batch 1,8,32) its batched inputs
//                       (NAME_input_batched) may hold any batch from 1 to the largest profile's in
//                       their first dim (every file the same batch). Inputs not given are seeded
//                       random.
//   --batch N           the batch to run (batch profiles; default: the files', else the largest);
//                       the program says which profile runs it (the smallest that holds it: the
//                       inputs are padded to its batch and the outputs trimmed to N).
//   --output-dir DIR    where every output is written, as DIR/<output name>.npy (default: .), the
//                       name with characters other than [A-Za-z0-9_.-] replaced by '_' (and _1, _2
//                       appended when two names collide), as `modelc run-reference` names them; a
//                       bfloat16 output as float32 (exact). Each file is written atomically (a
//                       temporary file, then rename).
//   --seed S            seed of the random inputs (default 0). The generator: one std::mt19937_64
//                       seeded with S, drawn through the inputs in order; floats uniform in [-1, 1)
//                       (std::uniform_real_distribution<double>, rounded to float / half /
//                       bfloat16; float64 as drawn), integers
//                       uniform in [0, 9], bools 0/1 (std::uniform_int_distribution<int64_t>).
//                       That is what `modelc run-reference --seed S` draws, so both see the same
//                       inputs when built against the same C++ library (libstdc++ for g++ and nvcc).
//   --device D          the CUDA device (default 0)
//   --weights FILE      the weights file, for a model compiled with --weights-file (default:
//                       NAME_weights.bin next to the executable); refused when they are embedded
//   --bench N           after the run, time N more runs (CUDA graph replays of NAME_run on device
//                       buffers, CUDA events around each) and print median, p10 and p90 latency
//   --warmup N          untimed runs before --bench's timed ones (default 10)
//   --profile [N]       after the run, time each kernel (NAME_time_kernels: N runs outside the CUDA
//                       graph, default 10, CUDA events around each kernel, medians) and print a table
//                       keyed to report.json's kernel ids: family, measured us, the cost model's
//                       estimate, their ratio, the share of the total, the fraction of the kernel's
//                       roofline bound it achieves, the tactic; kernels above 5 us under 20% of their
//                       bound are flagged (runtime/profile.h)
//   --export-times F    with --profile (or alone: --profile 10), the same as JSON into F
//                       (schema "modelc-times/1", runtime/profile.h; `modelc report DIR --times F`)
//   --taps DIR          after the run, one more kernel by kernel outside the CUDA graph
//                       (NAME_run_taps): every tensor each kernel writes (its taps), brought back to
//                       the graph's dense layout, as DIR/<kernel id>_<value name>.npy (a bfloat16 one as
//                       float32), and DIR/taps.json: {"schema": "modelc-taps/1", "model", "batch",
//                       "profile", "taps": [{"kernel", "family", "value", "dtype", "shape", "file"}]}
//                       in the order they are written (`modelc verify --layers` reads them)
//   --compare-dir DIR   compare each output with DIR/<same file name>.npy (max_abs, max_rel,
//                       relative L2, mismatches, PASS/FAIL; see compare.h; a bfloat16 output as
//                       float32, against a float32 file), with --rtol R
//                       (default 1e-3) and --atol A (default 1e-5); with --max-rel-l2 L an output
//                       passes when its relative L2 error is at most L and it has no NaN or Inf where
//                       the expected value is finite, as `modelc verify` judges (the mismatches at
//                       rtol and atol are printed too)
//   --self-test         only the self-test (NAME_self_test): the weights on the device against the
//                       compiled checksum and, where the build carries the data, the input drawn at
//                       compile time against the reference's outputs; prints the report
//
// Exit codes:
//   0  success (and, with --compare-dir, every output passed)
//   1  usage error, or a bad input / expected-output / weights file (unreadable, not a regular file,
//      malformed, truncated, larger than the tensor it must hold, wrong dtype or shape, weights of
//      another model): nothing is run and no output file is written
//   2  runtime error: the model could not be created or run (CUDA error, no device, unsupported
//      compute capability, out of memory) or an output could not be written
//   3  --compare-dir: at least one output did not match (the outputs are written)
//   4  --self-test: a check failed (the weights or an output differ from what was compiled)
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>

#include "compare.h"
#include "device.h"
#include "model_api.h"
#include "npy.h"
#include "profile.h"

namespace mc_cli {

/// \brief Exit codes of a generated program (see the file comment).
enum ExitCode : int { kExitOk = 0, kExitUsage = 1, kExitRuntime = 2, kExitMismatch = 3, kExitSelfTest = 4 };

/// \brief A failure that ends the program with `code` after printing "error: <message>".
struct Failure {
  int code;
  std::string message;
};

/// \brief The parsed command line.
struct Args {
  std::vector<std::string> inputs;  ///< the --input arguments, "NAME=FILE"
  std::string output_dir = ".";
  std::string compare_dir;          ///< "" when not comparing
  double rtol = 1e-3, atol = 1e-5;
  uint64_t seed = 0;
  int device = 0;
  int64_t batch = 0;                ///< --batch; 0: the input files', else the largest profile's
  std::string weights;              ///< "" : the model's default
  long bench = 0;                   ///< 0: no benchmark
  long warmup = 10;
  long profile = 0;                 ///< --profile N: runs per kernel time; 0: no profile
  std::string export_times;         ///< --export-times FILE ("" : none)
  std::string taps;                 ///< --taps DIR ("" : none)
  double max_rel_l2 = 0;            ///< --max-rel-l2 L (> 0: the relative L2 error decides)
  bool self_test = false;
  bool help = false;
};

/// \brief --profile's runs when no N follows it.
constexpr long kDefaultProfileRuns = 10;

/// \brief The usage text (the program's name in it is `program`).
inline std::string usage(const std::string& program) {
  return "usage: " + program +
         " [--input NAME=FILE.npy|FILE.pb]... [--output-dir DIR] [--seed S] [--device D] [--batch N]\n"
         "       [--weights FILE] [--bench N] [--warmup N] [--profile [N]] [--export-times FILE.json]\n"
         "       [--taps DIR] [--compare-dir DIR] [--rtol R] [--atol A] [--max-rel-l2 L]\n"
         "       " + program + " --self-test [--device D] [--weights FILE]\n"
         "  --input NAME=FILE   data for input NAME (.npy or ONNX TensorProto .pb); others are seeded random\n"
         "  --output-dir DIR    write each output as DIR/<output name>.npy (default: .)\n"
         "  --seed S            seed of the random inputs (default 0)\n"
         "  --device D          CUDA device (default 0)\n"
         "  --batch N           batch to run (models compiled with batch profiles; default: the input\n"
         "                      files', else the largest profile's)\n"
         "  --weights FILE      weights file of a model compiled with --weights-file\n"
         "                      (default: NAME_weights.bin next to the executable)\n"
         "  --bench N           time N runs (CUDA graph replays): median, p10, p90 latency\n"
         "  --warmup N          untimed runs before the timed ones (default 10)\n"
         "  --profile [N]       time each kernel: N runs outside the CUDA graph (default 10), medians,\n"
         "                      beside the cost model's estimates and the kernels' roofline bounds\n"
         "  --export-times F    the --profile table as JSON into F (implies --profile)\n"
         "  --taps DIR          write every tensor each kernel writes, as the graph's, into DIR (taps.json)\n"
         "  --compare-dir DIR   compare each output with DIR/<output name>.npy\n"
         "  --rtol R, --atol A  mismatch when |got - expected| > A + R * |expected| (default 1e-3, 1e-5)\n"
         "  --max-rel-l2 L      pass when the relative L2 error is at most L (no NaN/Inf where expected is\n"
         "                      finite) instead of on rtol/atol, as modelc verify judges\n"
         "  --self-test         check the weights on the device and the compiled-in input's outputs\n"
         "exit codes: 0 ok, 1 usage or bad input file, 2 runtime/CUDA error, 3 comparison failed,\n"
         "4 self-test failed\n";
}

namespace detail {

[[noreturn]] inline void usage_fail(const std::string& message) { throw Failure{kExitUsage, message}; }

inline long parse_long(const std::string& opt, const std::string& v, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || x < lo || x > hi) {
    usage_fail(opt + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v +
               "'");
  }
  return static_cast<long>(x);
}

inline uint64_t parse_u64(const std::string& opt, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || v[0] == '-' || *end != '\0' || errno == ERANGE) {
    usage_fail(opt + " expects a non-negative integer, got '" + v + "'");
  }
  return static_cast<uint64_t>(x);
}

inline double parse_tolerance(const std::string& opt, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !(x >= 0) || !std::isfinite(x)) {
    usage_fail(opt + " expects a non-negative number, got '" + v + "'");
  }
  return x;
}

// mkdir -p; Failure (runtime) when a component cannot be created.
inline void make_dirs(const std::string& dir) {
  std::string at;
  std::size_t pos = 0;
  while (pos <= dir.size()) {
    const std::size_t slash = dir.find('/', pos);
    const std::size_t end = slash == std::string::npos ? dir.size() : slash;
    at = dir.substr(0, end);
    pos = end + 1;
    if (at.empty() || at == "." || at == "..") continue;
    struct stat st;
    if (::stat(at.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) throw Failure{kExitRuntime, "cannot create the output folder '" + dir + "': '" + at + "' is a file"};
      continue;
    }
    if (::mkdir(at.c_str(), 0777) != 0 && errno != EEXIST) {
      throw Failure{kExitRuntime, "cannot create the output folder '" + dir + "': " + std::strerror(errno)};
    }
  }
}

inline std::string join_path(const std::string& dir, const std::string& file) {
  if (dir.empty()) return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

inline std::vector<int64_t> shape_of(const int64_t* dims, int rank) {
  return std::vector<int64_t>(dims, dims + (rank > 0 ? rank : 0));
}

}  // namespace detail

/// \brief Parses argv (argv[0] is the program). Throws Failure{kExitUsage, ...} for a usage error.
inline Args parse_args(int argc, char** argv) {
  Args a;
  bool have_rtol = false, have_atol = false;
  for (int i = 1; i < argc; ++i) {
    std::string opt = argv[i];
    std::string value;
    bool has_value = false;
    if (opt.rfind("--", 0) == 0) {
      const std::size_t eq = opt.find('=');
      if (eq != std::string::npos) {
        value = opt.substr(eq + 1);
        opt = opt.substr(0, eq);
        has_value = true;
      }
    }
    if (opt == "-h" || opt == "--help") {
      if (has_value) detail::usage_fail(opt + " takes no value");
      a.help = true;
      continue;
    }
    if (opt == "--self-test") {
      if (has_value) detail::usage_fail(opt + " takes no value");
      a.self_test = true;
      continue;
    }
    if (opt == "--profile") {  // an optional value: --profile, --profile N, --profile=N
      const bool next_is_count = !has_value && i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9';
      if (next_is_count) value = argv[++i];
      a.profile = has_value || next_is_count ? detail::parse_long(opt, value, 1, 1000000L) : kDefaultProfileRuns;
      continue;
    }
    static const char* const kValued[] = {"--input", "--output-dir", "--seed", "--device", "--weights", "--bench",
                                          "--warmup", "--compare-dir", "--rtol", "--atol", "--batch", "--export-times",
                                          "--taps", "--max-rel-l2"};
    bool known = false;
    for (const char* k : kValued) known = known || opt == k;
    if (!known) {
      if (opt.rfind("-", 0) == 0) detail::usage_fail("unknown option '" + opt + "'");
      detail::usage_fail("unexpected argument '" + opt + "' (inputs are given as --input NAME=FILE)");
    }
    if (!has_value) {
      if (i + 1 >= argc) detail::usage_fail(opt + " needs a value");
      value = argv[++i];
    }
    if (opt == "--input") {
      if (value.find('=') == std::string::npos) detail::usage_fail("--input '" + value + "' is not NAME=FILE");
      a.inputs.push_back(value);
    } else if (opt == "--output-dir") {
      if (value.empty()) detail::usage_fail("--output-dir is empty");
      a.output_dir = value;
    } else if (opt == "--compare-dir") {
      if (value.empty()) detail::usage_fail("--compare-dir is empty");
      a.compare_dir = value;
    } else if (opt == "--weights") {
      if (value.empty()) detail::usage_fail("--weights is empty");
      a.weights = value;
    } else if (opt == "--export-times") {
      if (value.empty()) detail::usage_fail("--export-times is empty");
      a.export_times = value;
    } else if (opt == "--taps") {
      if (value.empty()) detail::usage_fail("--taps is empty");
      a.taps = value;
    } else if (opt == "--max-rel-l2") {
      a.max_rel_l2 = detail::parse_tolerance(opt, value);
      if (a.max_rel_l2 <= 0) detail::usage_fail("--max-rel-l2 expects a positive number, got '" + value + "'");
    } else if (opt == "--seed") {
      a.seed = detail::parse_u64(opt, value);
    } else if (opt == "--device") {
      a.device = static_cast<int>(detail::parse_long(opt, value, 0, 1 << 20));
    } else if (opt == "--batch") {
      a.batch = detail::parse_long(opt, value, 1, 999999999L);
    } else if (opt == "--bench") {
      a.bench = detail::parse_long(opt, value, 1, 100000000L);
    } else if (opt == "--warmup") {
      a.warmup = detail::parse_long(opt, value, 0, 100000000L);
    } else if (opt == "--rtol") {
      a.rtol = detail::parse_tolerance(opt, value);
      have_rtol = true;
    } else if (opt == "--atol") {
      a.atol = detail::parse_tolerance(opt, value);
      have_atol = true;
    }
  }
  if (!a.export_times.empty() && a.profile == 0) a.profile = kDefaultProfileRuns;
  if (a.max_rel_l2 > 0 && a.compare_dir.empty() && !a.help) detail::usage_fail("--max-rel-l2 needs --compare-dir DIR");
  if (a.self_test && !a.help) {
    // The self-test runs the data compiled in: nothing else to read, run or write.
    const bool other = !a.inputs.empty() || !a.compare_dir.empty() || a.bench || a.profile || !a.taps.empty() ||
                       a.batch || have_rtol || have_atol;
    if (other) detail::usage_fail("--self-test takes only --device and --weights (it runs the input compiled in)");
  }
  if ((have_rtol || have_atol) && a.compare_dir.empty() && !a.help) {
    detail::usage_fail(std::string(have_rtol ? "--rtol" : "--atol") + " needs --compare-dir DIR");
  }
  return a;
}

/// \brief The batches of the model's profiles, ascending (NAME_profile_batch); empty when its table
/// has no profile functions.
inline std::vector<int64_t> profile_batches(const Model& m) {
  std::vector<int64_t> r;
  if (!m.num_profiles || !m.profile_batch) return r;
  for (int p = 0; p < m.num_profiles(); ++p) r.push_back(m.profile_batch(p));
  return r;
}

/// "1, 8, 32"
inline std::string batch_list(const std::vector<int64_t>& b) {
  std::string s;
  for (std::size_t i = 0; i < b.size(); ++i) s += (i ? ", " : "") + std::to_string(b[i]);
  return s;
}

/// \brief Input (`output` false) or output i's shape at `batch` items: its first dim scaled from the
/// largest profile's batch where it holds the batch (a model with batch profiles), else as declared.
inline std::vector<int64_t> shape_at(const Model& m, bool output, int i, int64_t batch) {
  std::vector<int64_t> s = output ? detail::shape_of(m.output_shape(i), m.output_rank(i))
                                  : detail::shape_of(m.input_shape(i), m.input_rank(i));
  const std::vector<int64_t> profiles = profile_batches(m);
  int (*batched)(int) = output ? m.output_batched : m.input_batched;
  if (profiles.size() > 1 && batched && batched(i) == 1 && !s.empty() && batch > 0) {
    s[0] = s[0] / profiles.back() * batch;
  }
  return s;
}

/// \brief Seeded random inputs for every input of `m` (the generator is described at the top), at
/// `batch` items (0: the shapes as declared).
inline std::vector<mc_npy::Array> random_inputs(const Model& m, uint64_t seed, int64_t batch = 0) {
  std::mt19937_64 rng(seed);
  std::vector<mc_npy::Array> r;
  for (int i = 0; i < m.num_inputs(); ++i) {
    mc_npy::Array a;
    a.dtype = m.input_dtype(i);
    a.shape = shape_at(m, false, i, batch);
    const std::size_t esize = mc_npy::dtype_size(a.dtype);
    if (esize == 0) {
      throw Failure{kExitUsage, std::string("input '") + m.input_name(i) + "' has dtype " + mc_npy::dtype_name(a.dtype) +
                                    ", which this program cannot generate or read"};
    }
    const std::size_t n = a.numel();
    a.data.resize(n * esize);
    unsigned char* p = a.data.data();
    if (a.dtype == mc_npy::kFloat64) {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      for (std::size_t k = 0; k < n; ++k) {
        const double d = u(rng);
        std::memcpy(p + 8 * k, &d, 8);
      }
    } else if (a.dtype == mc_npy::kFloat32 || a.dtype == mc_npy::kFloat16 || a.dtype == mc_npy::kBfloat16) {
      std::uniform_real_distribution<double> u(-1.0, 1.0);
      mc_npy::Array f32;
      f32.dtype = mc_npy::kFloat32;
      f32.shape = a.shape;
      f32.data.resize(n * 4);
      for (std::size_t k = 0; k < n; ++k) {
        const float f = static_cast<float>(u(rng));
        if (a.dtype == mc_npy::kFloat16) {
          const uint16_t h = mc_half::float_to_half_bits(f);
          std::memcpy(p + 2 * k, &h, 2);
        } else {
          std::memcpy(f32.data.data() + 4 * k, &f, 4);
        }
      }
      if (a.dtype == mc_npy::kFloat32) a.data = std::move(f32.data);
      if (a.dtype == mc_npy::kBfloat16) a.data = mc_npy::narrow_to_bfloat16(f32).data;
    } else {
      std::uniform_int_distribution<int64_t> u(0, a.dtype == mc_npy::kBool ? 1 : 9);
      for (std::size_t k = 0; k < n; ++k) {
        const int64_t v = u(rng);
        for (std::size_t b = 0; b < esize; ++b) p[k * esize + b] = static_cast<unsigned char>(v >> (8 * b));
      }
    }
    r.push_back(std::move(a));
  }
  return r;
}

/// \brief The model's inputs for `args`: the --input files (read and checked against the model's
/// dtype and shape) and seeded random data for the rest. `sources` says where each came from;
/// `batch` (when not null) gets the batch they hold: --batch's, the files', else the largest
/// profile's (0 for a model without profile functions). Throws Failure{kExitUsage, ...} naming the
/// input and the file for any problem.
inline std::vector<mc_npy::Array> load_inputs(const Model& m, const Args& args, std::vector<std::string>* sources,
                                              int64_t* batch = nullptr) {
  const std::vector<int64_t> profiles = profile_batches(m);
  const bool profiled = profiles.size() > 1;
  const int64_t largest = profiles.empty() ? 0 : profiles.back();
  auto input_list = [&] {
    std::string s;
    for (int i = 0; i < m.num_inputs(); ++i) {
      s += std::string(i ? ", '" : "'") + m.input_name(i) + "' " +
           mc_npy::type_str(m.input_dtype(i), detail::shape_of(m.input_shape(i), m.input_rank(i)));
    }
    return s.empty() ? std::string("none") : s;
  };
  const std::string runs =
      profiled ? "the model runs batches 1 to " + std::to_string(largest) + " (batch profiles " + batch_list(profiles) + ")"
               : "the model runs batch " + std::to_string(largest) + " only (compile it with batch profiles, "
                 "--batch 1,8,..., for others)";
  if (args.batch > 0 && !profiles.empty() && (profiled ? args.batch > largest : args.batch != largest)) {
    throw Failure{kExitUsage, "--batch " + std::to_string(args.batch) + ": " + runs};
  }
  if (args.batch > 0 && profiles.empty()) throw Failure{kExitUsage, "--batch: this program runs one batch"};

  // 1. The files, each checked against its input (at whichever batch it holds, where the input is
  // batched), and the batch they hold.
  const int n = m.num_inputs();
  std::vector<mc_npy::Array> given(static_cast<std::size_t>(n));
  std::vector<std::string> files(static_cast<std::size_t>(n));
  std::vector<bool> has(static_cast<std::size_t>(n), false);
  int64_t files_batch = 0;
  std::string batch_file;  // the first file that set files_batch
  for (const std::string& arg : args.inputs) {
    // Split at the '=' whose left part names an input (names and paths may contain '=').
    int idx = -1;
    std::string file;
    for (std::size_t eq = arg.find('='); eq != std::string::npos && idx < 0; eq = arg.find('=', eq + 1)) {
      for (int i = 0; i < n; ++i) {
        if (arg.compare(0, eq, m.input_name(i)) == 0 && std::strlen(m.input_name(i)) == eq) {
          idx = i;
          file = arg.substr(eq + 1);
          break;
        }
      }
    }
    if (idx < 0) {
      throw Failure{kExitUsage, "--input names '" + arg.substr(0, arg.find('=')) +
                                    "', which is not an input of the model (inputs: " + input_list() + ")"};
    }
    const std::size_t k = static_cast<std::size_t>(idx);
    const std::string name = m.input_name(idx);
    if (has[k]) throw Failure{kExitUsage, "--input gives input '" + name + "' twice"};
    has[k] = true;
    const int dtype = m.input_dtype(idx);
    const std::vector<int64_t> full = detail::shape_of(m.input_shape(idx), m.input_rank(idx));
    const bool batched = profiled && m.input_batched && m.input_batched(idx) == 1 && !full.empty();
    mc_npy::Array a;
    try {
      a = mc_npy::read_input(file, dtype, full);  // no larger than a file of this input can be
    } catch (const mc_npy::Error& e) {
      throw Failure{kExitUsage, "input '" + name + "': " + e.what()};
    }
    // The batch the file holds: its first dim over the input's per-item rows.
    int64_t items = 0;
    const int64_t rows = batched ? full[0] / largest : 0;
    bool shape_ok = a.shape == full;
    if (batched && a.shape.size() == full.size() && !a.shape.empty() && rows > 0 && a.shape[0] % rows == 0) {
      items = a.shape[0] / rows;
      shape_ok = items >= 1 && items <= largest && std::equal(a.shape.begin() + 1, a.shape.end(), full.begin() + 1);
    } else if (shape_ok) {
      items = largest;
    }
    if (a.dtype != dtype || !shape_ok) {
      std::string want = mc_npy::type_str(dtype, full);
      if (batched) {
        want += " or the same with a first dim of " + std::to_string(rows) + " x B, B from 1 to " +
                std::to_string(largest) + " (batch profiles " + batch_list(profiles) + ")";
      }
      const bool dims_ok = a.dtype != dtype && (shape_ok || a.shape == full);
      throw Failure{kExitUsage, "input '" + name + "' expects " + want + ", the file '" + file + "' holds " +
                                    mc_npy::type_str(a.dtype, a.shape) +
                                    (dims_ok ? " (convert the data to " + mc_npy::dtype_name(dtype) + ")"
                                     : batched ? std::string()
                                               : " (the model is compiled for this exact shape)")};
    }
    if (batched) {
      if (files_batch > 0 && items != files_batch) {
        throw Failure{kExitUsage, "input '" + name + "': the file '" + file + "' holds batch " + std::to_string(items) +
                                      ", '" + batch_file + "' batch " + std::to_string(files_batch) +
                                      " (every input one batch)"};
      }
      files_batch = items;
      batch_file = file;
    }
    given[k] = std::move(a);
    files[k] = file;
  }
  int64_t b = profiled ? (args.batch > 0 ? args.batch : files_batch > 0 ? files_batch : largest) : largest;
  if (profiled && files_batch > 0 && b != files_batch) {
    throw Failure{kExitUsage, "--batch " + std::to_string(b) + ", but the input file '" + batch_file + "' holds batch " +
                                  std::to_string(files_batch)};
  }

  // 2. Random data at that batch for the others (drawn for every input in order, as run-reference does).
  std::vector<mc_npy::Array> in = random_inputs(m, args.seed, profiled ? b : 0);
  std::vector<std::string> src(in.size(), "random (seed " + std::to_string(args.seed) + ")");
  for (int i = 0; i < n; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    if (!has[k]) continue;
    in[k] = std::move(given[k]);
    src[k] = files[k];
  }
  if (sources) *sources = src;
  if (batch) *batch = b;
  return in;
}

namespace detail {

// The model context, destroyed on every path out.
struct Context {
  const Model& m;
  void* ctx = nullptr;
  explicit Context(const Model& model) : m(model) {}
  ~Context() {
    if (ctx) m.destroy(ctx);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  // Failure for a C API call that returned `rc`: a runtime error, but a weights file the model
  // cannot use is a bad input file.
  [[noreturn]] void fail(const std::string& what, int rc) const {
    const char* why = ctx ? m.error(ctx) : "";
    throw Failure{rc == kCreateWeightsFile ? kExitUsage : kExitRuntime,
                  what + " failed (code " + std::to_string(rc) + "): " + (why && *why ? why : "no message")};
  }
};

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Failure{kExitRuntime, std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e)};
  }
}

// Device buffers freed on every path out.
struct DeviceBuffers {
  std::vector<void*> p;
  ~DeviceBuffers() {
    for (void* q : p) cudaFree(q);
  }
  void* add(std::size_t bytes) {
    void* q = nullptr;
    cuda_check(cudaMalloc(&q, bytes ? bytes : 1), "cudaMalloc");
    p.push_back(q);
    return q;
  }
};

struct Bench {
  double median, p10, p90, min, mean;
};

inline double percentile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

// `warmup` untimed then `runs` timed calls of m.run on device copies of the inputs, each timed
// with a pair of CUDA events on one stream (milliseconds).
inline Bench bench(const Context& c, const std::vector<mc_npy::Array>& in, const std::vector<std::size_t>& out_bytes,
                   long runs, long warmup, int64_t batch) {
  DeviceBuffers buf;
  std::vector<const void*> din;
  std::vector<void*> dout;
  for (const mc_npy::Array& a : in) {
    void* d = buf.add(a.data.size());
    cuda_check(cudaMemcpy(d, a.data.data(), a.data.size(), cudaMemcpyHostToDevice), "cudaMemcpy (input)");
    din.push_back(d);
  }
  for (std::size_t b : out_bytes) dout.push_back(buf.add(b));
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  struct Cleanup {
    cudaStream_t& s;
    cudaEvent_t& a;
    cudaEvent_t& b;
    ~Cleanup() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
      if (s) cudaStreamDestroy(s);
    }
  } cleanup{stream, start, stop};
  cuda_check(cudaEventCreate(&start), "cudaEventCreate");
  cuda_check(cudaEventCreate(&stop), "cudaEventCreate");
  // A model with batch profiles runs `batch` items (NAME_run_batch); others their one batch.
  auto run_once = [&] {
    const int rc = c.m.run_batch && batch > 0 ? c.m.run_batch(c.ctx, batch, din.data(), dout.data(), stream)
                                              : c.m.run(c.ctx, din.data(), dout.data(), stream);
    if (rc) c.fail(std::string(c.m.name) + (c.m.run_batch && batch > 0 ? "_run_batch" : "_run"), rc);
  };
  for (long i = 0; i < warmup; ++i) run_once();
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(runs));
  for (long i = 0; i < runs; ++i) {
    cuda_check(cudaEventRecord(start, stream), "cudaEventRecord");
    run_once();
    cuda_check(cudaEventRecord(stop, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  Bench b;
  b.median = percentile(ms, 0.5);
  b.p10 = percentile(ms, 0.1);
  b.p90 = percentile(ms, 0.9);
  b.min = ms.front();
  double sum = 0;
  for (double t : ms) sum += t;
  b.mean = sum / static_cast<double>(ms.size());
  return b;
}

// --profile: each kernel of the profile that runs `batch` timed (NAME_time_kernels) on the host
// inputs `in`; prints the table and writes --export-times' JSON.
inline void profile_kernels(const Context& c, const Args& args, const std::vector<const void*>& in, int64_t batch,
                            const Estimates* estimates) {
  const Model& m = c.m;
  const int p = m.profile_for_batch ? m.profile_for_batch(batch) : 0;
  const int n = m.num_kernels ? m.num_kernels(p) : -1;
  if (!m.time_kernels || !m.kernel_id || n < 0) {
    throw Failure{kExitRuntime, std::string("--profile: the library of '") + m.name + "' cannot time its kernels"};
  }
  std::vector<std::string> ids;
  for (int k = 0; k < n; ++k) ids.push_back(m.kernel_id(p, k) ? m.kernel_id(p, k) : "?");
  std::vector<float> us(static_cast<std::size_t>(n > 0 ? n : 1), 0.0f);
  if (const int rc = m.time_kernels(c.ctx, batch, in.data(), static_cast<int>(args.profile), us.data())) {
    c.fail(std::string(m.name) + "_time_kernels", rc);
  }
  us.resize(static_cast<std::size_t>(n));
  ProfileReport r = make_profile_report(m.name, ids, us, estimates, p, device_facts(args.device));
  r.batch = batch;
  r.runs = static_cast<int>(args.profile);
  std::printf("%s", profile_text(r).c_str());
  if (!args.export_times.empty()) {
    try {
      mc_npy::write_file_atomic(args.export_times, profile_json(r));
    } catch (const mc_npy::Error& e) {
      throw Failure{kExitRuntime, std::string("--export-times: ") + e.what()};
    }
    std::printf("  -> %s\n", args.export_times.c_str());
  }
}

// --taps DIR: one more run kernel by kernel (NAME_run_taps) on the host inputs `in`, every tap written
// as DIR/<kernel id>_<value>.npy and listed in DIR/taps.json.
inline void write_taps(const Context& c, const Args& args, const std::vector<const void*>& in,
                       const std::vector<std::size_t>& out_bytes, int64_t batch, const Estimates* estimates) {
  const Model& m = c.m;
  const int p = m.profile_for_batch ? m.profile_for_batch(batch) : 0;
  const int n = m.num_taps ? m.num_taps(p) : -1;
  if (!m.run_taps || n < 0) throw Failure{kExitRuntime, std::string("--taps: the library of '") + m.name + "' has no taps"};
  std::vector<mc_npy::Array> taps(static_cast<std::size_t>(n));
  std::vector<void*> tap_ptr;
  for (int t = 0; t < n; ++t) {
    mc_npy::Array& a = taps[static_cast<std::size_t>(t)];
    a.dtype = m.tap_dtype(p, t);
    a.shape = detail::shape_of(m.tap_shape(p, t), m.tap_rank(p, t));
    a.data.assign(a.numel() * mc_npy::dtype_size(a.dtype), 0);
    tap_ptr.push_back(a.data.empty() ? nullptr : a.data.data());
  }
  std::vector<std::vector<unsigned char>> outs;
  std::vector<void*> out_ptr;
  for (std::size_t b : out_bytes) {
    outs.emplace_back(b ? b : 1);
    out_ptr.push_back(outs.back().data());
  }
  if (const int rc = m.run_taps(c.ctx, batch, in.data(), out_ptr.data(), tap_ptr.empty() ? nullptr : tap_ptr.data())) {
    c.fail(std::string(m.name) + "_run_taps", rc);
  }
  make_dirs(args.taps);
  const ProfileFacts* facts = estimates && p >= 0 && p < estimates->num_profiles ? &estimates->profiles[p] : nullptr;
  std::string index = "{\n  \"schema\": \"modelc-taps/1\",\n  \"model\": " + json_string(m.name) +
                      ",\n  \"batch\": " + std::to_string(batch) + ",\n  \"profile\": " + std::to_string(p) +
                      ",\n  \"taps\": [";
  for (int t = 0; t < n; ++t) {
    const int k = m.tap_kernel(p, t);
    const std::string id = m.kernel_id(p, k) ? m.kernel_id(p, k) : "?";
    const std::string family = facts && k >= 0 && k < facts->num_kernels && id == facts->kernels[k].id ? facts->kernels[k].family : "";
    const std::string value = m.tap_name(p, t);
    const std::string file = mc_npy::sanitize_file_name(id + "_" + value) + ".npy";
    const mc_npy::Array& a = taps[static_cast<std::size_t>(t)];
    try {
      mc_npy::write_npy(join_path(args.taps, file), mc_npy::widen_bfloat16(a));
    } catch (const mc_npy::Error& e) {
      throw Failure{kExitRuntime, "--taps: " + std::string(e.what())};
    }
    std::string shape;
    for (int64_t d : a.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    index += std::string(t ? "," : "") + "\n    {\"kernel\": " + json_string(id) + ", \"family\": " + json_string(family) +
             ", \"value\": " + json_string(value) + ", \"dtype\": " + json_string(mc_npy::dtype_name(a.dtype)) +
             ", \"shape\": [" + shape + "], \"file\": " + json_string(file) + "}";
  }
  index += n > 0 ? "\n  ]\n}\n" : "]\n}\n";
  try {
    mc_npy::write_file_atomic(join_path(args.taps, "taps.json"), index);
  } catch (const mc_npy::Error& e) {
    throw Failure{kExitRuntime, "--taps: " + std::string(e.what())};
  }
  std::printf("taps  %d tensors the kernels write (one run kernel by kernel) -> %s/taps.json\n", n, args.taps.c_str());
}

// --self-test: NAME_self_test's report and verdict.
inline int self_test_only(const Model& m, const Args& args) {
  if (!args.weights.empty() && !m.create_with_weights) {
    throw Failure{kExitUsage, std::string("--weights: the weights of '") + m.name +
                                  "' are embedded in this program (it was compiled without --weights-file)"};
  }
  if (!m.self_test) throw Failure{kExitRuntime, std::string("--self-test: the library of '") + m.name + "' has none"};
  Context c(m);
  const int created = args.weights.empty() ? m.create(&c.ctx, args.device)
                                           : m.create_with_weights(&c.ctx, args.device, args.weights.c_str());
  if (created) {
    // A weights file that is not the compiled one is what a self-test is for: its own failure.
    const char* why = c.ctx ? m.error(c.ctx) : "";
    if (created == kCreateWeightsFile) {
      std::printf("self-test of %s\n  weights: %s\nFAIL\n", m.name, why && *why ? why : "the weights file cannot be used");
      return kExitSelfTest;
    }
    c.fail(std::string(m.name) + "_create (device " + std::to_string(args.device) + ")", created);
  }
  std::vector<char> report(1 << 20, '\0');
  const int rc = m.self_test(c.ctx, report.data(), report.size());
  std::printf("%s", report.data());
  std::fflush(stdout);
  if (rc == kSelfTestFailed) return kExitSelfTest;
  if (rc) c.fail(std::string(m.name) + "_self_test", rc);
  return kExitOk;
}

inline int run(const Model& m, const Args& args, const Estimates* estimates = nullptr) {
  if (args.self_test) return self_test_only(m, args);
  // 1. Everything read from files first: a bad file stops the program before any work or output.
  std::vector<std::string> sources;
  int64_t batch = 0;
  const std::vector<mc_npy::Array> in = load_inputs(m, args, &sources, &batch);
  const std::vector<int64_t> profiles = profile_batches(m);
  const bool profiled = profiles.size() > 1;
  const int n_out = m.num_outputs();
  std::vector<std::string> out_names;
  for (int i = 0; i < n_out; ++i) out_names.push_back(m.output_name(i));
  const std::vector<std::string> files = mc_npy::output_file_names(out_names);
  std::vector<mc_npy::Array> expected;
  if (!args.compare_dir.empty()) {
    for (int i = 0; i < n_out; ++i) {
      const std::string path = join_path(args.compare_dir, files[static_cast<std::size_t>(i)]);
      // A bfloat16 output is compared as float32, with a float32 file (as it is written).
      const int dtype = m.output_dtype(i) == mc_npy::kBfloat16 ? mc_npy::kFloat32 : m.output_dtype(i);
      try {
        expected.push_back(mc_npy::read(path, dtype, shape_at(m, true, i, profiled ? batch : 0)));
      } catch (const mc_npy::Error& e) {
        throw Failure{kExitUsage, "expected output '" + out_names[static_cast<std::size_t>(i)] + "': " + e.what()};
      }
    }
  }

  if (!args.weights.empty() && !m.create_with_weights) {
    throw Failure{kExitUsage, std::string("--weights: the weights of '") + m.name +
                                  "' are embedded in this program (it was compiled without --weights-file)"};
  }

  // 2. Create and run.
  Context c(m);
  const int created = args.weights.empty() ? m.create(&c.ctx, args.device)
                                           : m.create_with_weights(&c.ctx, args.device, args.weights.c_str());
  if (created) c.fail(std::string(m.name) + "_create (device " + std::to_string(args.device) + ")", created);
  std::vector<mc_npy::Array> out(static_cast<std::size_t>(n_out));
  std::vector<const void*> in_ptr;
  std::vector<void*> out_ptr;
  std::vector<std::size_t> out_bytes;
  for (const mc_npy::Array& a : in) in_ptr.push_back(a.data.data());
  for (int i = 0; i < n_out; ++i) {
    mc_npy::Array& a = out[static_cast<std::size_t>(i)];
    a.dtype = m.output_dtype(i);
    a.shape = shape_at(m, true, i, profiled ? batch : 0);
    a.data.assign(a.numel() * mc_npy::dtype_size(a.dtype), 0);
    out_ptr.push_back(a.data.data());
    out_bytes.push_back(a.data.size());
  }
  if (m.run_host_batch && batch > 0) {
    if (int rc = m.run_host_batch(c.ctx, batch, in_ptr.data(), out_ptr.data())) {
      c.fail(std::string(m.name) + "_run_host_batch", rc);
    }
  } else if (int rc = m.run_host(c.ctx, in_ptr.data(), out_ptr.data())) {
    c.fail(std::string(m.name) + "_run_host", rc);
  }

  std::printf("inputs\n");
  for (int i = 0; i < m.num_inputs(); ++i) {
    const mc_npy::Array& a = in[static_cast<std::size_t>(i)];
    std::printf("  %s  %s  <- %s\n", m.input_name(i), mc_npy::type_str(a.dtype, a.shape).c_str(),
                sources[static_cast<std::size_t>(i)].c_str());
  }
  if (profiled) {
    // The profile the runtime ran (NAME_profile_for_batch: the smallest that holds the batch).
    const int p = m.profile_for_batch ? m.profile_for_batch(batch) : -1;
    const int64_t pb = p >= 0 ? profiles[static_cast<std::size_t>(p)] : -1;
    std::printf("batch %lld: profile %d (batch %lld of %s)%s\n", static_cast<long long>(batch), p,
                static_cast<long long>(pb), batch_list(profiles).c_str(),
                pb > batch ? ", inputs padded and outputs trimmed" : "");
  }

  // 3. Benchmark.
  if (args.bench > 0) {
    const Bench b = bench(c, in, out_bytes, args.bench, args.warmup, batch);
    std::printf("bench  %ld runs after %ld warmup (CUDA events around each graph replay)\n", args.bench, args.warmup);
    std::printf("  median %.4g ms  p10 %.4g ms  p90 %.4g ms  min %.4g ms  mean %.4g ms\n", b.median, b.p10, b.p90,
                b.min, b.mean);
  }

  // 3b. Per-kernel times, and each kernel's outputs.
  if (args.profile > 0) profile_kernels(c, args, in_ptr, batch, estimates);
  if (!args.taps.empty()) write_taps(c, args, in_ptr, out_bytes, batch, estimates);

  // 4. Outputs, each written atomically.
  make_dirs(args.output_dir);
  std::printf("outputs\n");
  for (int i = 0; i < n_out; ++i) {
    const std::string path = join_path(args.output_dir, files[static_cast<std::size_t>(i)]);
    try {
      mc_npy::write_npy(path, mc_npy::widen_bfloat16(out[static_cast<std::size_t>(i)]));
    } catch (const mc_npy::Error& e) {
      throw Failure{kExitRuntime, std::string("output '") + m.output_name(i) + "': " + e.what()};
    }
    const mc_npy::Array& a = out[static_cast<std::size_t>(i)];
    std::printf("  %s  %s  -> %s%s\n", m.output_name(i), mc_npy::type_str(a.dtype, a.shape).c_str(), path.c_str(),
                a.dtype == mc_npy::kBfloat16 ? " (as float32)" : "");
  }

  // 5. Comparison.
  if (!args.compare_dir.empty()) {
    if (args.max_rel_l2 > 0) {
      std::printf("compare with %s (rel L2 <= %g and no NaN/Inf where the expected value is finite; mismatches at "
                  "rtol %g, atol %g shown)\n", args.compare_dir.c_str(), args.max_rel_l2, args.rtol, args.atol);
    } else {
      std::printf("compare with %s (rtol %g, atol %g)\n", args.compare_dir.c_str(), args.rtol, args.atol);
    }
    int failed = 0;
    for (int i = 0; i < n_out; ++i) {
      const std::size_t k = static_cast<std::size_t>(i);
      const mc_npy::Array got = mc_npy::widen_bfloat16(out[k]);
      mc_npy::Comparison cmp = mc_npy::compare(got, expected[k], args.rtol, args.atol);
      std::string nonfinite_text;
      if (args.max_rel_l2 > 0 && cmp.problem.empty()) {
        // verify's rule: the relative L2 error decides, and no NaN or Inf may appear where the expected
        // value is finite.
        const std::size_t nonfinite = mc_npy::new_nonfinite(got, expected[k]);
        cmp.pass = nonfinite == 0 && cmp.rel_l2 <= args.max_rel_l2;
        nonfinite_text = "  NaN/Inf where expected is finite: " + std::to_string(nonfinite);
      }
      failed += !cmp.pass;
      std::printf("  %s%s\n", mc_npy::comparison_line(out_names[k], expected[k], cmp).c_str(), nonfinite_text.c_str());
    }
    std::printf("%s: %d of %d outputs passed\n", failed ? "FAIL" : "PASS", n_out - failed, n_out);
    if (failed) return kExitMismatch;
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace detail

/// \brief The whole program: parses argv, runs the model, writes/compares outputs; returns the
/// exit code (see the file comment). Errors go to stderr as "error: ...". `estimates`: the cost
/// model's view of the kernels (NAME_main.cu's table) that --profile prints beside the times.
inline int main(int argc, char** argv, const Model& m, const Estimates* estimates = nullptr) {
  const std::string program = argc > 0 && argv[0] ? argv[0] : m.name;
  try {
    Args args;
    try {
      args = parse_args(argc, argv);
    } catch (const Failure& f) {
      std::fprintf(stderr, "error: %s\nhint: %s --help lists the options\n", f.message.c_str(), program.c_str());
      return f.code;
    }
    if (args.help) {
      std::printf("%s: the model '%s' compiled by modelc\n%s", program.c_str(), m.name, usage(program).c_str());
      return kExitOk;
    }
    return detail::run(m, args, estimates);
  } catch (const Failure& f) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", f.message.c_str());
    return f.code;
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: out of host memory\n");
    return kExitRuntime;
  } catch (const std::exception& e) {  // e.g. a kernel fault found by the host emulation
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitRuntime;
  }
}

}  // namespace mc_cli

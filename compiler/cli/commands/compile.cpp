// compiler/cli/commands/compile.cpp — the default command:
//   modelc MODEL.onnx [-o DIR] [--name NAME] [--arch sm_75[,sm_86,...]] [--build] [--emulate]
//          [--weights-file] [-j N] [--shape NAME=DIMS]... [--batch N | --batch N,M,... | --batch A..B]
//          [--fp16 [--fp16-accumulate] [--io-fp16] | --bf16] [--keep-fp32 NODE,...]
//          [--int8 (--calibrate DIR|random:N | --calibration-cache FILE)] [--layout auto|nchw] [--streams N]
//          [--verify-each] [--print-after STAGE]... [--disable-pass STAGE]...
// Loads the model, runs the pipeline (compiler/pipeline/pipeline.h: graph and schedule stages)
// and writes the folder DIR (default out/NAME); with batch profiles (--batch 1,8,32, or a --shape
// range), once per batch into one folder (cli/commands/profiles.h, codegen emit_profiles). --build runs make in DIR (the nvcc binary;
// --emulate: the host-emulation binary) and shows the progress.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "cli/commands/profiles.h"
#include "cli/commands/self_test_data.h"
#include "codegen/emitter.h"
#include "codegen/report.h"
#include "pipeline/pipeline.h"
#include "schedule/target.h"
#include "schedule/tuning_cache.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc::cli {

namespace {

struct Compile {
  std::string model;
  std::string out;
  std::string name;
  std::string arch = "sm_75";
  bool build = false;
  bool emulate = false;
  bool weights_file = false;
  bool self_test_data = false;     ///< --self-test-data
  bool no_self_test_data = false;  ///< --no-self-test-data
  int jobs = 0;
  LoadFlags load;
  PrecisionFlags precision;
  std::string layout = "auto";
  int streams = 0;
  bool verify_each = false;
  std::vector<std::string> print_after;
  std::vector<std::string> disable_pass;
  std::string tuning_cache;  ///< --tuning-cache FILE
  bool strict_cache = false; ///< --strict-cache
};

// --tuning-cache: the cache, read and checked against the --arch targets. A cache measured on an
// SM no --arch has, or on a part other than the one the cost model assumes for that SM (another SM
// count), is used with a warning, or refused with --strict-cache.
std::shared_ptr<const TuningCache> tuning_for(const Compile& c, const std::vector<std::string>& archs) {
  if (c.tuning_cache.empty()) return nullptr;
  auto cache = std::make_shared<TuningCache>(TuningCache::read(c.tuning_cache));
  const TuningDevice& d = cache->device;
  std::string problem;
  bool arch_found = false;
  for (const Target& t : targets_for(archs, false)) {
    if (t.sm != d.sm) continue;
    arch_found = true;
    if (t.sm_count != d.sm_count) {
      problem = "it was measured on " + d.name + " (" + std::to_string(d.sm_count) + " SMs); the cost model's sm_" +
                std::to_string(t.sm) + " is " + t.part + " (" + std::to_string(t.sm_count) + " SMs)";
    }
  }
  if (!arch_found) {
    problem = "it was measured on " + d.name + " (sm_" + std::to_string(d.sm) + "), which no --arch targets: it is not used";
  }
  if (!problem.empty()) {
    Error::Where w;
    w.file = c.tuning_cache;
    if (c.strict_cache) throw Error(w, "--strict-cache: the tuning cache is for another GPU: " + problem,
                                    "tune on the GPU you deploy to, or drop --strict-cache to use it anyway");
    std::cerr << "warning: " << c.tuning_cache << ": the tuning cache is for another GPU: " << problem << "\n";
  }
  std::cout << "tuning cache: " << cache->kernels.size() << " kernel signatures measured on " << d.name << " (sm_"
            << d.sm << ", " << d.sm_count << " SMs, driver " << d.driver << ") from " << c.tuning_cache << "\n";
  return cache;
}

// Runs `command` through the shell; calls on_line for every line of its output (stdout and
// stderr together). Returns the exit status (-1 when it could not run or was killed).
template <class F>
int run_lines(const std::string& command, F&& on_line) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::string line;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      on_line(line);
      line.clear();
    }
  }
  if (!line.empty()) on_line(line);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Nvcc {
  std::string path;       ///< "" when not found
  std::set<int> archs;    ///< what --list-gpu-arch says (compute_XX)
  std::string version;    ///< "release 13.0" or ""
};

Nvcc find_nvcc_uncached() {
  Nvcc n;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NVCC"); env && *env) candidates.push_back(env);
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (std::size_t a = 0; a <= dirs.size();) {
      const std::size_t b = std::min(dirs.find(':', a), dirs.size());
      if (b > a) candidates.push_back(dirs.substr(a, b - a) + "/nvcc");
      a = b + 1;
    }
  }
  candidates.push_back("/usr/local/cuda/bin/nvcc");
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && ::access(c.c_str(), X_OK) == 0) {
      n.path = c;
      break;
    }
  }
  if (n.path.empty()) return n;
  run_lines(shell_quote(n.path) + " --list-gpu-arch", [&](const std::string& line) {
    if (line.compare(0, 8, "compute_") == 0 && line.size() > 8 &&
        line.find_first_not_of("0123456789", 8) == std::string::npos) {
      n.archs.insert(std::stoi(line.substr(8)));
    }
  });
  run_lines(shell_quote(n.path) + " --version", [&](const std::string& line) {
    const std::size_t r = line.find("release ");
    if (r != std::string::npos) n.version = line.substr(r, line.find(',', r) - r);
  });
  return n;
}

// Once per NVCC and PATH: the command's parse callback checks --arch (a usage error), the run again.
Nvcc find_nvcc() {
  static std::map<std::string, Nvcc> found;
  const char* env = std::getenv("NVCC");
  const char* path = std::getenv("PATH");
  const std::string key = std::string(env ? env : "") + '\n' + (path ? path : "");
  auto it = found.find(key);
  if (it == found.end()) it = found.emplace(key, find_nvcc_uncached()).first;
  return it->second;
}

// "--arch sm_75,sm_86" -> {"sm_75", "sm_86"}: checked, deduplicated, ascending (sm_90 before sm_90a).
std::vector<std::string> parse_archs(const std::string& list, const Nvcc& nvcc) {
  std::set<std::pair<int, bool>> archs;  // (number, arch-specific)
  std::set<int> numbers;
  for (std::size_t a = 0; a <= list.size();) {
    const std::size_t b = std::min(list.find(',', a), list.size());
    std::string item = list.substr(a, b - a);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (!item.empty()) {
      archs.insert({arch_number(item), arch_specific(item)});
      numbers.insert(arch_number(item));
    }
    a = b + 1;
  }
  if (numbers.empty()) throw Error("--arch is empty", "give one or more GPU architectures: --arch sm_75,sm_86");
  if (!nvcc.path.empty() && !nvcc.archs.empty()) {
    for (int n : numbers) {
      if (nvcc.archs.count(n)) continue;
      std::string can;
      for (int x : nvcc.archs) {
        if (x >= 75) can += (can.empty() ? "sm_" : ", sm_") + std::to_string(x);
      }
      throw Error("--arch sm_" + std::to_string(n) + ": the installed nvcc (" + nvcc.path +
                      (nvcc.version.empty() ? "" : ", " + nvcc.version) + ") cannot target it",
                  "it can target: " + can);
    }
  }
  std::vector<std::string> r;
  for (const auto& a : archs) r.push_back("sm_" + std::to_string(a.first) + (a.second ? "a" : ""));
  return r;
}

const std::set<std::string>& cpp_keywords() {
  static const std::set<std::string> k = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "main", "mutable", "namespace", "new",
      "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef",
      "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor", "mc", "mc_cli"};
  return k;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

std::string default_model_name(const std::string& model_path) {
  std::string name;
  for (char ch : fs::path(model_path).stem().string()) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) name = "m_" + name;
  if (cpp_keywords().count(name)) name += "_model";
  return name;
}

void check_model_name(const std::string& name) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char ch : name) ok = ok && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
  if (!ok || cpp_keywords().count(name)) {
    throw Error("--name '" + name + "' is not usable as the prefix of C symbols",
                "use letters, digits and '_', not starting with a digit, and not a C++ keyword");
  }
}

std::vector<std::string> checked_archs(const std::string& list, bool quiet) {
  const Nvcc nvcc = find_nvcc();
  std::vector<std::string> archs = parse_archs(list, nvcc);
  if (nvcc.path.empty() && !quiet) {
    std::cerr << "note: nvcc was not found (PATH, /usr/local/cuda/bin): --arch was not checked against a compiler\n";
  }
  return archs;
}

void check_arch_usage(const std::string& list, bool quiet) {
  try {
    checked_archs(list, quiet);
  } catch (const Error& e) {
    throw CLI::ValidationError(e.message() + (e.hint().empty() ? "" : "; " + e.hint()));
  }
}

std::string find_nvcc_path() { return find_nvcc().path; }

std::string build_emitted(const std::string& dir, const std::string& name, bool emulate, int jobs, std::ostream& out) {
  const std::string target = emulate ? "emu" : "all";
  jobs = jobs > 0 ? jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  // Files make may compile for the target (the progress total): the .cu files, the weights, and
  // for the emulation the runtime's host sources.
  int total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".cu" || ext == ".S") ++total;
  }
  if (emulate) {
    for (const auto& e : fs::directory_iterator(fs::path(dir) / "runtime" / "host", ec)) {
      if (e.path().extension() == ".cpp") ++total;
    }
  }
  if (!emulate && find_nvcc().path.empty()) {
    throw Error("building with nvcc, which was not found (PATH, /usr/local/cuda/bin)",
                "install the CUDA toolkit, or build the CPU emulation (--emulate)");
  }
  out << "building " << (emulate ? name + "_emu (host emulation, g++)" : name + " (nvcc)") << " with make -j" << jobs
      << "\n"
      << std::flush;
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [](std::chrono::steady_clock::duration d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
    return std::string(buf);
  };
  std::map<std::string, std::chrono::steady_clock::time_point> started;
  int done = 0;
  const std::string cmd = "make -C " + shell_quote(dir) + " -j" + std::to_string(jobs) +
                          " --no-print-directory MODELC_PROGRESS=1 " + target;
  std::string errors;  // what make and the compilers said, shown as it comes
  const int status = run_lines(cmd, [&](const std::string& line) {
    const auto now = std::chrono::steady_clock::now();
    static const char* kTools[] = {"  NVCC    ", "  CXX     ", "  AS      "};
    for (const char* t : kTools) {
      if (line.compare(0, std::strlen(t), t) == 0) {
        std::string file = line.substr(std::strlen(t));
        started[file.substr(0, file.find(' '))] = now;
        return;
      }
    }
    if (line.compare(0, 17, "modelc-progress: ") == 0) {
      const std::string file = line.substr(17);
      ++done;
      auto it = started.find(file);
      out << "  [" << done << "/" << std::max(done, total) << "] " << file;
      if (it != started.end()) out << " (" << seconds(now - it->second) << ")";
      out << "\n" << std::flush;
      return;
    }
    if (line.compare(0, 10, "  LINK    ") == 0 || line.compare(0, 10, "  AR      ") == 0) {
      out << "  linking " << line.substr(10) << "\n" << std::flush;
      return;
    }
    std::cerr << line << "\n";
  });
  const auto took = std::chrono::steady_clock::now() - start;
  if (status != 0) {
    throw Error("the build failed (make exited with " + std::to_string(status) + "); the messages are above",
                "the folder is kept: make -C " + dir + " V=1 " + target + " shows the commands");
  }
  const std::string binary = (fs::path(dir) / (emulate ? name + "_emu" : name)).string();
  out << "built " << binary << " in " << seconds(took);
  if (done < total) out << " (" << done << " of " << total << " files compiled, the others were up to date)";
  out << "\n";
  return binary;
}

namespace {

// `modelc resources` after an nvcc build: registers, shared memory, stack and spills per kernel and
// arch (ptxas -v) into report.json and report.md. A failure is a warning: the binary is built.
void report_resources(const std::string& dir, std::ostream& out) {
  try {
    run_resources(dir, "", false, out);
  } catch (const Error& e) {
    std::cerr << "warning: " << e.what() << ": report.json lists no registers or shared memory per kernel\n";
  }
}

int run_compile(const Compile& c) {
  std::string name = c.name;
  if (name.empty()) {
    name = default_model_name(c.model);
  } else {
    check_model_name(name);
  }
  const std::string out = c.out.empty() ? (fs::path("out") / name).string() : c.out;
  const std::vector<std::string> archs = checked_archs(c.arch, false);

  LowerOptions opt;
  opt.name = name;
  opt.archs = archs;
  apply_precision_flags(c.precision, opt.passes);
  opt.layout = parse_layout_mode(c.layout);
  opt.streams = c.streams;
  opt.passes.verify_each = c.verify_each;
  opt.passes.disabled = {c.disable_pass.begin(), c.disable_pass.end()};
  opt.passes.print_after = {c.print_after.begin(), c.print_after.end()};
  opt.count_stage_kernels = true;
  // --int8: the calibration (of the model at its one batch: the samples are that batch's inputs).
  std::shared_ptr<const CalibrationTable> calibration;
  if (c.precision.int8) {
    if (batch_profiles(c.load).size() > 1) {
      throw Error("--int8 with batch profiles (--batch " + c.load.batch +
                      "): the calibration samples are one batch's inputs",
                  "compile each batch on its own with --int8 (--batch N), or the profiles in FP16 / BF16");
    }
    const std::unique_ptr<Graph> g = load_onnx(c.model, load_options(c.load));
    calibration = calibration_for(c.precision, *g, opt.passes, std::cout);
    opt.passes.calibration = calibration.get();
  }
  const std::shared_ptr<const TuningCache> tuning = tuning_for(c, archs);
  opt.passes.tuning = tuning.get();
  const LoweredModel lowered = lower_model(c.model, c.load, opt);

  EmitOptions eo;
  eo.source = c.model;
  eo.weights_file = c.weights_file;
  const std::string self_test = add_self_test_data(
      eo, c.model, c.load, opt, lowered.schedules.back(),
      c.self_test_data ? SelfTestMode::on : c.no_self_test_data ? SelfTestMode::off : SelfTestMode::automatic);
  const EmitResult r = emit_profiles(lowered.profiles(), out, eo);
  // --int8: the calibration beside the output, reusable with --calibration-cache (no data needed).
  if (calibration) std::cout << "calibration cache: " << write_calibration_cache(*calibration, r.dir, name) << "\n";

  std::string arch_text;
  for (const std::string& a : archs) arch_text += (arch_text.empty() ? "" : ",") + a;
  const Schedule& s = lowered.schedules.back();
  auto kernels_text = [](const Schedule& p) {
    std::map<std::string, int> families;
    for (const Kernel& k : p.kernels) ++families[k.family_name()];
    std::string fam;
    for (const auto& [f, n] : families) fam += (fam.empty() ? "" : ", ") + f + " " + std::to_string(n);
    return std::to_string(p.kernels.size()) + " kernels" + (fam.empty() ? "" : " (" + fam + ")");
  };
  if (lowered.schedules.size() == 1) {
    std::cout << "wrote " << out << " (" << arch_text << "): " << kernels_text(s)
              << (r.parts ? " in " + std::to_string(r.parts) + " parts" : "") << "; activation arena "
              << grouped(s.arena_bytes) << " bytes (all activations " << grouped(s.activation_bytes_total)
              << "); weights " << grouped(s.weights_bytes) << " bytes" << (c.weights_file ? " in " + name + "_weights.bin" : "")
              << "\n";
  } else {
    int64_t arena = 0;
    for (const Schedule& p : lowered.schedules) arena = std::max(arena, p.arena_bytes);
    std::cout << "wrote " << out << " (" << arch_text << "): batch profiles";
    for (const Schedule& p : lowered.schedules) std::cout << (&p == &lowered.schedules.front() ? " " : ", ") << p.batch;
    std::cout << "; activation arena " << grouped(arena) << " bytes (the largest profile's); weights "
              << grouped(s.weights_bytes) << " bytes" << (c.weights_file ? " in " + name + "_weights.bin" : "")
              << ", shared by the profiles\n";
    for (const Schedule& p : lowered.schedules) {
      std::cout << "  batch " << p.batch << ": " << kernels_text(p) << "; activation arena " << grouped(p.arena_bytes)
                << " bytes\n";
    }
  }
  // BF16 products where no --arch has BF16 tensor cores (sm_75 alone: the default) run SIMT.
  const int64_t bf16_simt = std::count_if(s.kernels.begin(), s.kernels.end(), [](const Kernel& k) {
    return k.fallback_reason.rfind("BF16 storage on sm_", 0) == 0;
  });
  if (bf16_simt > 0) {
    std::cout << "note: " << bf16_simt << " BF16 convolutions and matrix products run SIMT: sm_75 has no BF16 MMA "
              << "(add --arch sm_80 or newer for tensor cores)\n";
  }
  std::cout << self_test << "\n";
  std::cout << "link it from C, C++ (pkg-config, CMake) or Python: see " << out << "/README.md\n";
  if (!c.build && !c.emulate) {
    std::cout << "build it with: make -C " << out << " -j   (or make -C " << out << " emu: the CPU emulation)\n";
    return 0;
  }
  build_emitted(r.dir, name, c.emulate, c.jobs, std::cout);
  if (!c.emulate) report_resources(r.dir, std::cout);
  return 0;
}

}  // namespace

void register_compile(CLI::App& app, RunFn& run) {
  auto c = std::make_shared<Compile>();
  app.add_option("model", c->model, "compile MODEL.onnx to a folder of CUDA C++ (the default command)")
      ->type_name("MODEL.onnx");
  app.add_option("-o,--out", c->out, "output folder (default out/NAME)")->type_name("DIR");
  app.add_option("--name", c->name, "prefix of every symbol and file (default: the model file's name)")
      ->type_name("NAME");
  app.add_option("--arch", c->arch, "GPU architectures, comma separated (default sm_75); PTX of the newest is "
                                    "embedded too")
      ->type_name("sm_75[,sm_86,...]");
  app.add_flag("--build", c->build, "run make in the folder (nvcc), showing the progress");
  app.add_flag("--emulate", c->emulate, "build NAME_emu, the CPU emulation, instead (g++; no nvcc needed)");
  app.add_flag("--weights-file", c->weights_file,
               "read the weights from NAME_weights.bin at create instead of embedding them");
  CLI::Option* with_data = app.add_flag(
      "--self-test-data", c->self_test_data,
      "compile an input and the reference's outputs for it into the program's self-test (./NAME --self-test) "
      "whatever the model's size (default: below 0.1 GFLOPs)");
  app.add_flag("--no-self-test-data", c->no_self_test_data,
               "leave them out: the self-test checks the weights' checksum only")
      ->excludes(with_data);
  app.add_option("-j,--jobs", c->jobs, "parallel jobs for --build (default: the number of cores)")->type_name("N");
  add_load_flags(app, c->load);
  add_precision_flags(app, c->precision);
  add_layout_flag(app, c->layout);
  add_streams_flag(app, c->streams);
  CLI::Option* tuning = app.add_option("--tuning-cache", c->tuning_cache,
                                       "measured tactic choices (a tuning cache): a tensor-core kernel whose "
                                       "signature and arch it lists gets its measured winner")
                            ->type_name("FILE");
  app.add_flag("--strict-cache", c->strict_cache,
               "refuse a tuning cache measured on another GPU (another SM, or another SM count) instead of "
               "warning")
      ->needs(tuning);
  app.add_flag("--verify-each", c->verify_each, "check the graph and the schedule after every stage");
  app.add_option("--print-after", c->print_after,
                 "print the graph (and the schedule so far) after stage STAGE (or 'all'), repeatable; "
                 "`modelc passes` lists the stages")
      ->type_name("STAGE")
      ->allow_extra_args(false)
      ->delimiter(',');
  app.add_option("--disable-pass", c->disable_pass, "skip the optional stage STAGE, repeatable")
      ->type_name("STAGE")
      ->allow_extra_args(false)
      ->delimiter(',');
  app.callback([c, &run] {
    if (c->model.empty() || run) return;
    check_precision_flags(c->precision);
    batch_profiles(c->load);  // usage errors now, before any work
    check_arch_usage(c->arch, true);
    // A stage name --disable-pass or --print-after does not know is a usage error naming the stages.
    PassOptions stages;
    stages.disabled = {c->disable_pass.begin(), c->disable_pass.end()};
    stages.print_after = {c->print_after.begin(), c->print_after.end()};
    try {
      check_stage_flags(stages);
    } catch (const Error& e) {
      throw CLI::ValidationError(e.message() + "; " + e.hint());
    }
    run = [c] { return run_compile(*c); };
  });
}

}  // namespace modelc::cli

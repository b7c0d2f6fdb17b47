// compiler/plugin/runner.cpp — building and running a plugin kernel's helper program on the host
// emulation (runner.h).
#include "plugin/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/data_dir.h"

extern char** environ;

namespace fs = std::filesystem;

namespace modelc::plugin {

namespace {

// ---- child processes ---------------------------------------------------------------------------

struct Outcome {
  int status = 0;          ///< exit status; 128 + signal when killed
  bool timed_out = false;
  std::string output;      ///< stdout and stderr together (the last 256 KiB)
};

// Runs argv (argv[0] searched on PATH) in its own process group, killed with the group after
// `timeout_s` seconds.
Outcome run_process(const std::vector<std::string>& argv, double timeout_s) {
  int fds[2];
  if (::pipe(fds) != 0) throw Error(std::string("pipe failed: ") + std::strerror(errno));
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw Error("cannot run '" + argv[0] + "': " + std::strerror(rc));
  }
  Outcome r;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  char buf[4096];
  for (;;) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left * 1000, 1000.0)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    r.output.append(buf, static_cast<std::size_t>(n));
    constexpr std::size_t kKeep = 256 * 1024;
    if (r.output.size() > 2 * kKeep) r.output.erase(0, r.output.size() - kKeep);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.timed_out) ::kill(-pid, SIGKILL);  // anything of the group still there
  r.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  return r;
}

std::string status_text(const Outcome& o, double timeout_s) {
  if (o.timed_out) return "did not finish in " + std::to_string(static_cast<int>(timeout_s)) + " s (MODELC_PLUGIN_TIMEOUT)";
  if (o.status > 128) return "was killed by signal " + std::to_string(o.status - 128) + " (" + strsignal(o.status - 128) + ")";
  return "exited with status " + std::to_string(o.status);
}

// The first `max_lines` lines of a compiler's or program's output, indented.
std::string excerpt(const std::string& text, std::size_t max_lines) {
  std::istringstream in(text);
  std::string r, line;
  std::size_t n = 0, total = 0;
  while (std::getline(in, line)) {
    ++total;
    if (n < max_lines) {
      r += "    " + line + "\n";
      ++n;
    }
  }
  if (total > n) r += "    ... (" + std::to_string(total - n) + " more lines)\n";
  return r;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

double timeout_seconds() {
  const char* env = std::getenv("MODELC_PLUGIN_TIMEOUT");
  if (env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0) return v;
  }
  return 600;
}

// $CXX (its words: "ccache g++" works as in make), else g++.
std::vector<std::string> compiler_words() {
  const char* env = std::getenv("CXX");
  std::vector<std::string> words;
  std::istringstream in(env && *env ? env : "");
  for (std::string w; in >> w;) words.push_back(w);
  if (words.empty()) words.push_back("g++");
  return words;
}

std::string compiler() {
  std::string s;
  for (const std::string& w : compiler_words()) s += (s.empty() ? "" : " ") + w;
  return s;
}

// modelc's templates/ and runtime_stub/ (the emitter's data folder, support/data_dir.h).
std::string data_dir() {
  const std::string dir = modelc_data_dir();
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / "templates" / "plugin.cuh", ec) ||
      !fs::is_regular_file(fs::path(dir) / "runtime_stub" / "host" / "engine.cpp", ec)) {
    throw Error("modelc's data folder " + dir + " lacks templates/plugin.cuh or runtime_stub/host/",
                "set MODELC_DATA_DIR to the folder that holds templates/ and runtime_stub/");
  }
  return dir;
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) throw Error("cannot write " + p.string());
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string hex(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// The process's build folder: the emulation's objects, then one folder per helper program.
class Work {
 public:
  ~Work() {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  const std::string& dir() {
    if (dir_.empty()) {
      std::string t = (fs::temp_directory_path() / "modelc_plugin_XXXXXX").string();
      if (!::mkdtemp(t.data())) throw Error(std::string("cannot create a temporary folder: ") + std::strerror(errno));
      dir_ = t;
    }
    return dir_;
  }

  // The compile flags every piece shares (the emitted Makefile's EMU_COMPILE, -O1: small runs).
  std::vector<std::string> flags(const std::string& data) const {
    std::vector<std::string> r = compiler_words();
    r.insert(r.end(), {"-O1", "-std=c++17", "-DMODELC_HOST_EMULATION", "-I" + data + "/runtime_stub"});
    return r;
  }

  // engine.o and runtime_api.o, built on first use.
  const std::vector<std::string>& emulation(const std::string& data) {
    if (!objects_.empty()) return objects_;
    std::vector<std::string> objs;
    for (const char* src : {"engine", "runtime_api"}) {
      const std::string obj = (fs::path(dir()) / (std::string("emu_") + src + ".o")).string();
      std::vector<std::string> cmd = flags(data);
      cmd.insert(cmd.end(), {"-c", data + "/runtime_stub/host/" + src + ".cpp", "-o", obj});
      const double timeout = timeout_seconds();
      const char* hint = "plugins' reference runs need g++ (or $CXX) and Boost.Context (scripts/setup.sh installs them)";
      Outcome o;
      try {
        o = run_process(cmd, timeout);
      } catch (const Error& e) {
        throw Error("cannot build the host emulation for the plugins' reference runs: " + e.message(), hint);
      }
      if (o.status != 0 || o.timed_out) {
        throw Error("cannot build the host emulation for the plugins' reference runs: " + compiler() + " " +
                        status_text(o, timeout) + ":\n" + excerpt(o.output, 20),
                    hint);
      }
      objs.push_back(obj);
    }
    objects_ = objs;
    return objects_;
  }

  std::map<std::string, std::string> binaries;  ///< helper key -> its binary

 private:
  std::string dir_;
  std::vector<std::string> objects_;
};

Work& work() {
  static Work w;
  return w;
}

// Byte count of a value's tensor.
int64_t bytes_of(const Value& v) { return v.numel() * static_cast<int64_t>(dtype_size(v.dtype())); }

}  // namespace

std::string helper_source(const PluginOp& op, const Node& n) {
  const Instance inst = instantiate(op, n);
  const int ni = static_cast<int>(op.inputs.size()), no = static_cast<int>(op.outputs.size());
  std::string s;
  s += "// modelc: the reference run of " + op.where() + ", node '" + n.name() + "', on the host emulation.\n";
  s += "// Arguments: one raw file per input, then one per output to write.\n";
  // Standard headers first, as in the emitted code (runtime.h): then device.h, through plugin.cuh.
  s += "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n";
  s += "#include <exception>\n#include <type_traits>\n#include <vector>\n\n";
  s += "#include \"plugin.cuh\"\n#include \"" + emitted_header(*op.plugin, op.header) + "\"\n\n";
  s += "using K = " + inst.type + ";\n" + inst.declarations;
  s += "extern \"C\" __global__ void __launch_bounds__(K::kThreads) mc_plugin_kernel(const K::Params p) { K::run(p); }\n\n";
  s += R"(static int fail(const char* what, const char* detail) {
  fprintf(stderr, "%s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

static bool read_bytes(const char* path, void* dst, size_t n) {
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  const bool ok = fread(dst, 1, n, f) == n && fgetc(f) == EOF;
  fclose(f);
  return ok;
}

static bool write_bytes(const char* path, const void* src, size_t n) {
  FILE* f = fopen(path, "wb");
  if (!f) return false;
  const bool ok = fwrite(src, 1, n, f) == n;
  return fclose(f) == 0 && ok;
}

// Device memory of n bytes (at least one), every byte 0xff.
static void* device_bytes(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) return nullptr;
  cudaMemset(p, 0xff, n ? n : 1);
  return p;
}

static int run(char** argv) {
)";
  for (int i = 0; i < ni; ++i) {
    const std::string b = std::to_string(bytes_of(n.input(i)));
    const std::string v = "in" + std::to_string(i);
    s += "  void* " + v + " = device_bytes(" + b + ");\n";
    s += "  if (!" + v + ") return fail(\"cudaMalloc failed\", nullptr);\n";
    s += "  {\n    std::vector<unsigned char> h(" + b + " + 1);\n";
    s += "    if (!read_bytes(argv[" + std::to_string(1 + i) + "], h.data(), " + b + ")) return fail(\"cannot read input " +
         std::to_string(i) + "\", argv[" + std::to_string(1 + i) + "]);\n";
    s += "    cudaMemcpy(" + v + ", h.data(), " + b + ", cudaMemcpyHostToDevice);\n  }\n";
  }
  for (int i = 0; i < no; ++i) {
    const std::string v = "out" + std::to_string(i);
    s += "  void* " + v + " = device_bytes(" + std::to_string(bytes_of(n.output(i))) + ");\n";
    s += "  if (!" + v + ") return fail(\"cudaMalloc failed\", nullptr);\n";
  }
  if (op.workspace) {
    s += "  void* ws = device_bytes(" + std::to_string(inst.workspace_bytes) + ");\n";
    s += "  if (!ws) return fail(\"cudaMalloc failed\", nullptr);\n";
  }
  s += "  K::Params p{};\n";
  for (int i = 0; i < ni; ++i) {
    s += "  p." + op.inputs[static_cast<std::size_t>(i)].name + " = static_cast<const " + plugin_ctype(n.input(i).dtype()) +
         "*>(in" + std::to_string(i) + ");\n";
  }
  for (int i = 0; i < no; ++i) {
    s += "  p." + op.outputs[static_cast<std::size_t>(i)].name + " = static_cast<" + plugin_ctype(n.output(i).dtype()) +
         "*>(out" + std::to_string(i) + ");\n";
  }
  for (const auto& [field, value] : inst.attributes) s += "  p." + field + " = " + value + ";\n";
  if (op.workspace) s += "  p.workspace = " + std::string(inst.workspace_bytes > 0 ? "ws" : "nullptr") + ";\n";
  s += R"(  cudaError_t e = mc::launch(mc_plugin_kernel, K::grid(), K::block(), 0, nullptr, p);
  if (e != cudaSuccess) return fail("the launch failed", cudaGetErrorString(e));
  e = cudaDeviceSynchronize();
  if (e != cudaSuccess) return fail("the kernel failed", cudaGetErrorString(e));
)";
  for (int i = 0; i < no; ++i) {
    const std::string b = std::to_string(bytes_of(n.output(i)));
    const std::string arg = "argv[" + std::to_string(1 + ni + i) + "]";
    s += "  {\n    std::vector<unsigned char> h(" + b + " + 1);\n";
    s += "    cudaMemcpy(h.data(), out" + std::to_string(i) + ", " + b + ", cudaMemcpyDeviceToHost);\n";
    s += "    if (!write_bytes(" + arg + ", h.data(), " + b + ")) return fail(\"cannot write output " + std::to_string(i) +
         "\", " + arg + ");\n  }\n";
  }
  s += "  return 0;\n}\n\n";
  s += "int main(int argc, char** argv) {\n";
  s += "  if (argc != " + std::to_string(1 + ni + no) + ") return fail(\"expected " + std::to_string(ni) +
       " input files and " + std::to_string(no) + " output files\", nullptr);\n";
  s += R"(  try {
    return run(argv);
  } catch (const std::exception& e) {
    return fail("the kernel failed on the emulation", e.what());
  }
}
)";
  return s;
}

std::vector<Tensor> run_on_emulation(const PluginOp& op, const Node& n, const ops::TensorRefs& inputs) {
  const std::string header_path = (fs::path(op.plugin->dir) / op.header).string();
  // The node's error (the caller adds the model's file), naming the header at fault.
  auto error = [&](const std::string& what, const std::string& hint = {}) {
    return n.error(op.where() + ", header " + header_path + ": " + what, hint);
  };
  for (int i = 0; i < static_cast<int>(op.inputs.size()); ++i) {
    const Tensor* t = i < static_cast<int>(inputs.size()) ? inputs[static_cast<std::size_t>(i)] : nullptr;
    if (!t || t->dtype() != n.input(i).dtype() || t->shape() != n.input(i).shape()) {
      throw Error("internal: plugin reference run of node '" + n.name() + "': input " + std::to_string(i) +
                  " does not match its type " + n.input(i).type_str());
    }
  }
  // Nothing to run when every output is empty (the emitted code launches nothing either).
  bool empty = true;
  for (int i = 0; i < static_cast<int>(op.outputs.size()); ++i) empty = empty && n.output(i).numel() == 0;
  if (empty) {
    std::vector<Tensor> out;
    for (int i = 0; i < static_cast<int>(op.outputs.size()); ++i) out.emplace_back(n.output(i).dtype(), n.output(i).shape());
    return out;
  }
  const std::string source = helper_source(op, n);
  const std::string data = data_dir();
  Work& w = work();
  std::string key_text = source + "\n" + compiler() + "\n" + data;
  for (const auto& [name, text] : op.plugin->headers) key_text += "\n// " + name + "\n" + text;
  const std::string key = hex(fnv1a(key_text));
  const fs::path folder = fs::path(w.dir()) / key;
  const double timeout = timeout_seconds();

  auto built = w.binaries.find(key);
  if (built == w.binaries.end()) {
    const std::vector<std::string>& objects = w.emulation(data);
    const fs::path kernels = folder / "kernels";
    const std::string copied = (kernels / "plugins" / op.plugin->name).string() + "/";
    for (const auto& [name, text] : op.plugin->headers) write_file(copied + name, text);
    write_file(folder / "helper.cpp", source);
    const std::string binary = (folder / "helper").string();
    std::vector<std::string> cmd = w.flags(data);
    cmd.insert(cmd.end(), {"-I" + data + "/templates", "-I" + kernels.string(), (folder / "helper.cpp").string()});
    cmd.insert(cmd.end(), objects.begin(), objects.end());
    cmd.insert(cmd.end(), {"-lboost_context", "-lpthread", "-o", binary});
    const Outcome o = run_process(cmd, timeout);
    if (o.status != 0 || o.timed_out) {
      // The messages name the plugin's own files, not the copies.
      std::string dir = op.plugin->dir;
      if (!dir.empty() && dir.back() != '/') dir += '/';
      std::string text = replace_all(o.output, copied, dir);
      text = replace_all(text, (folder / "helper.cpp").string(), "<reference helper of node '" + n.name() + "'>");
      throw error("the kernel does not compile on the host emulation (" + compiler() + " " + status_text(o, timeout) +
                      "):\n" + excerpt(text, 30),
                  "fix " + header_path + "; modelc instantiates " + instantiate(op, n).type +
                      " (docs/PLUGINS.md, \"The kernel contract\")");
    }
    built = w.binaries.emplace(key, binary).first;
  }

  // One run: inputs and outputs as raw files in a folder of its own.
  static int runs = 0;
  const fs::path run_dir = folder / ("run" + std::to_string(runs++));
  fs::create_directories(run_dir);
  std::vector<std::string> cmd = {built->second};
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const std::string path = (run_dir / ("in" + std::to_string(i))).string();
    const Tensor& t = *inputs[i];
    write_file(path, std::string(reinterpret_cast<const char*>(t.raw()), t.nbytes()));
    cmd.push_back(path);
  }
  for (std::size_t i = 0; i < op.outputs.size(); ++i) cmd.push_back((run_dir / ("out" + std::to_string(i))).string());
  const Outcome o = run_process(cmd, timeout);
  if (o.status != 0 || o.timed_out) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
    throw error("the kernel failed on the host emulation (the reference run " + status_text(o, timeout) + ")" +
                    (o.output.empty() ? std::string() : ":\n" + excerpt(o.output, 30)),
                o.timed_out ? "a kernel that never finishes: a loop, or a barrier some threads of a block never reach; "
                              "fix " + header_path + " (MODELC_PLUGIN_TIMEOUT sets the limit)"
                            : "the emulation checks shared-memory races and out-of-range launches; fix " + header_path);
  }
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < op.outputs.size(); ++i) {
    const Value& v = n.output(static_cast<int>(i));
    const std::string path = (run_dir / ("out" + std::to_string(i))).string();
    std::ifstream f(path, std::ios::binary);
    std::vector<uint8_t> bytes(static_cast<std::size_t>(bytes_of(v)));
    if (!f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
      throw error("the reference run wrote no output " + std::to_string(i));
    }
    out.emplace_back(v.dtype(), v.shape(), std::move(bytes));
  }
  std::error_code ec;
  fs::remove_all(run_dir, ec);
  return out;
}

}  // namespace modelc::plugin

// tests/conformance/conformance.cpp — runs the ONNX backend test cases
// (libonnx-testdata: node, pytorch-converted, pytorch-operator, simple) through
// modelc's frontend and reference interpreter and compares every output.
//
// A case is SKIPPED only when
//   - it uses an op modelc does not register at all (or one outside the default
//     ONNX domain): "op X out of scope";
//   - its model uses an element type outside modelc's DType set, or a
//     sequence/optional/map type (decided from the ModelProto, before loading);
//   - its model's opset is below 7 (modelc's supported range is opset 7 and
//     later) and modelc has no form of one of its ops for that opset;
//   - it is listed in skips.txt with a reason.
// Everything else must PASS, or it is FAILED with the error or the mismatch.
//
// Each case runs in a child process, so a crash or a hang in an op is one
// FAILED case, not the end of the run (--no-fork runs in-process, for gdb).
#include <fnmatch.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bounded_outputs.h"
#include "frontend/onnx_import.h"
#include "io/tensor_io.h"
#include "ops/registry.h"
#include "reference/interpreter.h"
#include "support/error.h"

namespace fs = std::filesystem;
using namespace modelc;

#ifndef MODELC_CONFORMANCE_SKIPS
#define MODELC_CONFORMANCE_SKIPS "tests/conformance/skips.txt"
#endif
#ifndef MODELC_CONFORMANCE_CASES
#define MODELC_CONFORMANCE_CASES "tests/conformance/cases"
#endif
#ifndef MODELC_CONFORMANCE_SKIPS_OUT
#define MODELC_CONFORMANCE_SKIPS_OUT "conformance_skips.txt"
#endif

namespace {

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
constexpr int kMinOpset = 7;
// "modelc": modelc's own cases (tests/conformance/cases, make_cases.py) for ops and forms ONNX 1.12's
// test data lacks, laid out as ONNX's.
const char* const kSuites[] = {"node", "pytorch-converted", "pytorch-operator", "simple", "modelc"};

struct Options {
  std::string data = "/usr/share/libonnx-testdata/data";
  std::string cases = MODELC_CONFORMANCE_CASES;
  std::vector<std::string> suites{std::begin(kSuites), std::end(kSuites)};
  std::string skips = MODELC_CONFORMANCE_SKIPS;
  std::string skips_out = MODELC_CONFORMANCE_SKIPS_OUT;
  std::string filter;
  bool verbose = false;
  bool list_failures = false;
  bool fork = true;
  bool run_skipped = false;
  int timeout_s = 120;
};

const char* const kUsage =
    "usage: conformance [options]\n"
    "  --filter SUBSTRING   only cases whose name (or suite/name) contains SUBSTRING\n"
    "  --suites A,B         suites to run (default: node,pytorch-converted,pytorch-operator,simple,modelc)\n"
    "  --data DIR           test data root (default /usr/share/libonnx-testdata/data)\n"
    "  --cases DIR          the suite 'modelc': modelc's own cases (default tests/conformance/cases)\n"
    "  --skips FILE         skip list, one 'case_name  reason' a line (default: tests/conformance/skips.txt)\n"
    "  --skips-out FILE     where every skip and its reason is written (default: build/conformance_skips.txt)\n"
    "  --verbose            print every case's result and every skip with its reason\n"
    "  --list-failures      print the failing cases' names, one a line, before the summary\n"
    "  --run-skipped        also run the cases skips.txt lists, and say which of them pass\n"
    "  --timeout SECONDS    per-case limit (default 120)\n"
    "  --no-fork            run cases in this process (for a debugger; a crash ends the run)\n"
    "The last line is always 'N passed, M failed, K skipped'; the exit status is 1 when M > 0.\n";

// ---- skip list ---------------------------------------------------------------

struct SkipEntry {
  std::string pattern;  // case name, suite/name, or a shell glob of either
  std::string reason;
  int line = 0;
  bool used = false;
};

std::vector<SkipEntry> read_skips(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot open the skip list '" + path + "'");
  std::vector<SkipEntry> r;
  std::string line;
  for (int no = 1; std::getline(f, line); ++no) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto name_end = line.find_first_of(" \t", first);
    const auto reason = name_end == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", name_end);
    if (reason == std::string::npos) {
      throw Error(path + ":" + std::to_string(no) + ": '" + line.substr(first) + "' has no reason",
                  "every skipped case needs a 'case_name  reason' line");
    }
    auto end = line.find_last_not_of(" \t\r");
    r.push_back({line.substr(first, name_end - first), line.substr(reason, end + 1 - reason), no});
  }
  return r;
}

SkipEntry* find_skip(std::vector<SkipEntry>& skips, const std::string& suite, const std::string& name) {
  const std::string qualified = suite + "/" + name;
  for (SkipEntry& s : skips) {
    if (fnmatch(s.pattern.c_str(), name.c_str(), 0) == 0 || fnmatch(s.pattern.c_str(), qualified.c_str(), 0) == 0) {
      return &s;
    }
  }
  return nullptr;
}

// ---- classification from the ModelProto -----------------------------------------

onnx::ModelProto read_model_proto(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) throw Error("cannot parse " + path.string() + " as an ONNX ModelProto");
  return m;
}

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

/// What keeps a model out of modelc's scope, gathered over the graph and its subgraphs.
struct Scope {
  int opset = 0;
  std::set<std::string> unknown_ops;    // not registered at all (or another domain)
  std::set<std::string> no_form_ops;    // registered, but no form at this opset
  std::set<std::string> bad_dtypes;     // ONNX element types outside DType
  std::set<std::string> non_tensor;     // sequence / optional / map / sparse types

  void dtype(int code) {
    if (code != 0 && dtype_from_onnx(code) == DType::undefined) bad_dtypes.insert(onnx_dtype_name(code));
  }

  void type(const onnx::TypeProto& t) {
    switch (t.value_case()) {
      case onnx::TypeProto::kTensorType: dtype(t.tensor_type().elem_type()); break;
      case onnx::TypeProto::kSequenceType: non_tensor.insert("sequence"); break;
      case onnx::TypeProto::kMapType: non_tensor.insert("map"); break;
      case onnx::TypeProto::kOptionalType: non_tensor.insert("optional"); break;
      case onnx::TypeProto::kSparseTensorType: non_tensor.insert("sparse tensor"); break;
      default: break;
    }
  }

  void graph(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) type(v.type());
    for (const auto& v : g.output()) type(v.type());
    for (const auto& v : g.value_info()) type(v.type());
    for (const auto& t : g.initializer()) dtype(t.data_type());
    if (g.sparse_initializer_size() > 0) non_tensor.insert("sparse tensor");
    const auto& reg = ops::OpRegistry::instance();
    for (const auto& n : g.node()) {
      if (!default_domain(n.domain())) {
        unknown_ops.insert(n.domain() + "::" + n.op_type());
      } else if (!reg.knows(n.op_type())) {
        unknown_ops.insert(n.op_type());
      } else if (!reg.find(n.op_type(), opset)) {
        no_form_ops.insert(n.op_type());
      }
      for (const auto& a : n.attribute()) {
        // Element types named by attributes: Cast/CastLike 'to', EyeLike/Random* 'dtype', ...
        if ((a.name() == "to" || a.name() == "dtype" || a.name() == "output_dtype") &&
            a.type() == onnx::AttributeProto::INT) {
          dtype(static_cast<int>(a.i()));
        }
        if (a.has_t()) dtype(a.t().data_type());
        for (const auto& t : a.tensors()) dtype(t.data_type());
        if (a.has_g()) graph(a.g());
        for (const auto& sg : a.graphs()) graph(sg);
        if (a.has_tp()) type(a.tp());
      }
    }
  }
};

std::string join(const std::set<std::string>& s, const char* sep = ", ") {
  std::string r;
  for (const auto& x : s) r += (r.empty() ? "" : sep) + x;
  return r;
}

/// The reason a model is out of scope, or nothing when it must run.
std::optional<std::string> out_of_scope(const onnx::ModelProto& m) {
  Scope s;
  for (const auto& o : m.opset_import()) {
    if (default_domain(o.domain())) s.opset = static_cast<int>(o.version());
  }
  s.graph(m.graph());
  if (!s.unknown_ops.empty()) {
    return (s.unknown_ops.size() == 1 ? "op " : "ops ") + join(s.unknown_ops) + " out of scope";
  }
  if (!s.non_tensor.empty()) return join(s.non_tensor) + " types out of scope (modelc compiles tensor graphs)";
  if (!s.bad_dtypes.empty()) return "dtype " + join(s.bad_dtypes) + " out of modelc's types";
  if (!s.no_form_ops.empty() && s.opset < kMinOpset) {
    return "opset " + std::to_string(s.opset) + " model: modelc supports opset " + std::to_string(kMinOpset) +
           " and later, and has no opset-" + std::to_string(s.opset) + " form of " + join(s.no_form_ops);
  }
  return std::nullopt;
}

// ---- running and comparing -------------------------------------------------------

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    r.push_back(p);
  }
  return r;
}

std::string multi_index(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string r = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) r += (d ? "," : "") + std::to_string(idx[d]);
  return r + "]";
}

std::string num(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

/// "" when `got` matches `expected`, else what differs.
std::string compare(const std::string& name, const Tensor& got, const Tensor& expected) {
  const std::string what = "output '" + name + "': ";
  if (got.dtype() != expected.dtype()) {
    return what + "dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(expected.dtype());
  }
  if (got.shape() != expected.shape()) {
    return what + "shape [" + shape_str(got.shape()) + "], expected [" + shape_str(expected.shape()) + "]";
  }
  int64_t bad = 0, worst = -1;
  double worst_err = -1;
  if (is_float(expected.dtype())) {
    const auto a = got.to_f64(), b = expected.to_f64();
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      if (a[i] == b[i]) continue;  // also equal infinities
      const double err = std::fabs(a[i] - b[i]);
      if (err <= kAtol + kRtol * std::fabs(b[i])) continue;  // false for NaN against a number
      ++bad;
      const double key = std::isnan(err) ? INFINITY : err;
      if (key > worst_err) worst_err = key, worst = static_cast<int64_t>(i);
    }
    if (!bad) return "";
    return what + std::to_string(bad) + " of " + std::to_string(a.size()) + " elements differ (rtol " + num(kRtol) +
           ", atol " + num(kAtol) + "); max abs err " + num(std::fabs(a[worst] - b[worst])) + " at index " +
           std::to_string(worst) + " " + multi_index(expected.shape(), worst) + ": got " + num(a[worst]) +
           ", expected " + num(b[worst]);
  }
  const auto a = got.to_i64(), b = expected.to_i64();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    ++bad;
    const double err = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (err > worst_err) worst_err = err, worst = static_cast<int64_t>(i);
  }
  if (!bad) return "";
  return what + std::to_string(bad) + " of " + std::to_string(a.size()) + " elements differ (exact " +
         dtype_name(expected.dtype()) + "); max abs err " + num(worst_err) + " at index " + std::to_string(worst) +
         " " + multi_index(expected.shape(), worst) + ": got " + std::to_string(a[worst]) + ", expected " +
         std::to_string(b[worst]);
}

/// Reads a test-data tensor. ONNX 1.12's test data stores BFLOAT16 tensors with
/// data_type UINT16 (the same bits); where the model declares BFLOAT16 for that
/// input or output, the bits are taken as bfloat16, as later ONNX releases write them.
Tensor read_case_tensor(const fs::path& path, const onnx::ValueInfoProto& declared) {
  const int want = declared.type().tensor_type().elem_type();
  if (want == onnx::TensorProto::BFLOAT16) {
    std::ifstream f(path, std::ios::binary);
    onnx::TensorProto t;
    if (f && t.ParseFromIstream(&f) && t.data_type() == onnx::TensorProto::UINT16) {
      t.set_data_type(onnx::TensorProto::BFLOAT16);
      return tensor_from_proto(t, path.string());
    }
  }
  return read_tensor_pb(path.string());
}

/// The declared shape when it is fully static.
std::optional<Shape> static_shape(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return std::nullopt;
  Shape s;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    s.push_back(d.dim_value());
  }
  return s;
}

/// Graph inputs whose values decide a shape: those that feed an op input of
/// OpDef::const_inputs (Reshape's shape, Slice's starts, ...), directly or through
/// the nodes that compute it (a window's size cast and scaled before a Range).
/// The node tests feed those as inputs; a static compiler needs them at compile
/// time, so the case's data is bound to them as constants (LoadOptions::input_values).
std::set<std::string> inputs_needed_at_compile_time(const onnx::ModelProto& proto) {
  int opset = 0;
  for (const auto& o : proto.opset_import()) {
    if (default_domain(o.domain())) opset = static_cast<int>(o.version());
  }
  std::set<std::string> graph_inputs;
  for (const auto& v : proto.graph().input()) graph_inputs.insert(v.name());
  std::map<std::string, const onnx::NodeProto*> producer;
  std::vector<std::string> todo;
  for (const auto& n : proto.graph().node()) {
    for (const auto& o : n.output()) producer[o] = &n;
    const ops::OpDef* def = ops::OpRegistry::instance().find(n.op_type(), opset);
    if (!def || !default_domain(n.domain())) continue;
    for (int i : def->const_inputs) {
      if (i < n.input_size() && !n.input(i).empty()) todo.push_back(n.input(i));
    }
  }
  // Back from each such input through the nodes that compute it; an op computed from its inputs'
  // shapes alone (Shape, Size: no kernel, no const inputs) needs no value.
  std::set<std::string> seen, r;
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    if (graph_inputs.count(name)) {
      r.insert(name);
      continue;
    }
    const auto p = producer.find(name);
    if (p == producer.end() || !default_domain(p->second->domain())) continue;
    const ops::OpDef* def = ops::OpRegistry::instance().find(p->second->op_type(), opset);
    if (!def || (def->kernels == std::vector<std::string>{"none"} && def->const_inputs.empty())) continue;
    for (const auto& in : p->second->input()) {
      if (!in.empty()) todo.push_back(in);
    }
  }
  return r;
}

/// Runs every test_data_set_* of a case. "" on success, else the failure.
std::string run_case(const fs::path& dir, const onnx::ModelProto& proto) {
  std::set<std::string> initializers;
  for (const auto& t : proto.graph().initializer()) initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;  // the inputs the data sets feed, in order
  for (const auto& v : proto.graph().input()) {
    if (!initializers.count(v.name())) inputs.push_back(&v);
  }

  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test_data_set_* folder";

  for (const fs::path& set : sets) {
    const std::string where = set.filename().string() + ": ";
    const auto input_files = numbered_files(set, "input_");
    const auto output_files = numbered_files(set, "output_");
    if (input_files.size() > inputs.size()) {
      return where + std::to_string(input_files.size()) + " input files for " + std::to_string(inputs.size()) +
             " graph inputs";
    }
    if (static_cast<int>(output_files.size()) > proto.graph().output_size()) {
      return where + std::to_string(output_files.size()) + " output files for " +
             std::to_string(proto.graph().output_size()) + " graph outputs";
    }
    TensorMap feeds;
    LoadOptions opt;
    const std::set<std::string> shape_inputs = inputs_needed_at_compile_time(proto);
    for (std::size_t i = 0; i < input_files.size(); ++i) {
      Tensor t = read_case_tensor(input_files[i], *inputs[i]);
      // Symbolic dims are resolved from the data the case feeds.
      if (static_shape(*inputs[i]) != t.shape()) opt.input_shapes[inputs[i]->name()] = t.shape();
      if (shape_inputs.count(inputs[i]->name())) {
        opt.input_values[inputs[i]->name()] = std::move(t);
      } else {
        feeds[inputs[i]->name()] = std::move(t);
      }
    }
    auto graph = load_onnx((dir / "model.onnx").string(), opt);
    TensorMap results = run_reference(*graph, feeds);
    std::string failures;
    for (std::size_t i = 0; i < output_files.size(); ++i) {
      const onnx::ValueInfoProto& out = proto.graph().output(static_cast<int>(i));
      const std::string& name = out.name();
      // An output with a static bound (NonMaxSuppression): the expected entries, padded to it.
      const Tensor expected = conformance::padded_to_bound(*graph, name, read_case_tensor(output_files[i], out));
      auto it = results.find(name);
      std::string diff = it == results.end() ? "output '" + name + "' is missing from run_reference's result"
                                             : compare(name, it->second, expected);
      if (!diff.empty()) failures += (failures.empty() ? "" : "\n    ") + where + diff;
    }
    if (!failures.empty()) return failures;
  }
  return "";
}

/// run_case with every exception turned into a failure message.
std::string run_case_caught(const fs::path& dir, const onnx::ModelProto& proto) {
  try {
    return run_case(dir, proto);
  } catch (const Error& e) {
    return std::string("Error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("unexpected exception (not modelc::Error): ") + e.what();
  } catch (...) {
    return "unexpected exception of unknown type";
  }
}

/// Runs the case in a child process with a time limit; "" on success.
std::string run_case_isolated(const fs::path& dir, const onnx::ModelProto& proto, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return std::string("pipe failed: ") + std::strerror(errno);
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::string("fork failed: ") + std::strerror(errno);
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_s));
    const std::string r = run_case_caught(dir, proto);
    const char* p = r.data();
    std::size_t left = r.size();
    while (left > 0) {
      const ssize_t w = write(fds[1], p, left);
      if (w <= 0) break;
      p += w, left -= static_cast<std::size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string r;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) r.append(buf, static_cast<std::size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (sig == SIGALRM) return "timed out after " + std::to_string(timeout_s) + " s";
    return std::string("crashed: signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")" +
           (r.empty() ? "" : "; " + r);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return r;
}

struct Counts {
  int passed = 0, failed = 0, skipped = 0;
};

std::string summary(const Counts& c) {
  return std::to_string(c.passed) + " passed, " + std::to_string(c.failed) + " failed, " + std::to_string(c.skipped) +
         " skipped";
}

bool parse_args(int argc, char** argv, Options& o) {
  auto split = [](const std::string& s) {
    std::vector<std::string> r;
    std::stringstream ss(s);
    for (std::string x; std::getline(ss, x, ',');) if (!x.empty()) r.push_back(x);
    return r;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--filter") { if (!value(o.filter)) return false; }
    else if (a == "--suites") { if (!value(v)) return false; o.suites = split(v); }
    else if (a == "--data") { if (!value(o.data)) return false; }
    else if (a == "--cases") { if (!value(o.cases)) return false; }
    else if (a == "--skips") { if (!value(o.skips)) return false; }
    else if (a == "--skips-out") { if (!value(o.skips_out)) return false; }
    else if (a == "--timeout") {
      if (!value(v)) return false;
      try { o.timeout_s = std::stoi(v); } catch (...) { return false; }
      if (o.timeout_s <= 0) return false;
    }
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else if (a == "--list-failures") o.list_failures = true;
    else if (a == "--run-skipped") o.run_skipped = true;
    else if (a == "--no-fork") o.fork = false;
    else return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  if (!parse_args(argc, argv, opt)) {
    std::cerr << kUsage;
    return 2;
  }
  for (const auto& s : opt.suites) {
    if (std::find(std::begin(kSuites), std::end(kSuites), s) == std::end(kSuites)) {
      std::cerr << "conformance: unknown suite '" << s << "'\n" << kUsage;
      return 2;
    }
  }
  if (!fs::is_directory(opt.data)) {
    std::cerr << "conformance: no test data at " << opt.data
              << " (install the Debian package libonnx-testdata: scripts/setup.sh)\n";
    return 1;
  }
  std::vector<SkipEntry> skips;
  try {
    skips = read_skips(opt.skips);
  } catch (const Error& e) {
    std::cerr << "conformance: " << e.what() << "\n";
    return 1;
  }

  std::ofstream skips_out(opt.skips_out);
  if (!skips_out) std::cerr << "conformance: warning: cannot write " << opt.skips_out << "\n";
  Counts total;
  std::vector<std::string> failures, unexpected_passes;
  for (const std::string& suite : opt.suites) {
    const fs::path root = suite == "modelc" ? fs::path(opt.cases) : fs::path(opt.data) / suite;
    if (!fs::is_directory(root)) {
      std::cerr << "conformance: missing suite folder " << root << "\n";
      ++total.failed;
      failures.push_back(suite);
      continue;
    }
    std::vector<std::string> cases;
    for (const auto& e : fs::directory_iterator(root)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path().filename().string());
    }
    std::sort(cases.begin(), cases.end());
    Counts c;
    for (const std::string& name : cases) {
      const std::string id = suite + "/" + name;
      if (!opt.filter.empty() && id.find(opt.filter) == std::string::npos) continue;
      const fs::path dir = root / name;

      auto skip = [&](const std::string& reason) {
        ++c.skipped;
        if (skips_out) skips_out << id << "  " << reason << "\n";
        if (opt.verbose) std::cout << "SKIP " << id << ": " << reason << "\n";
      };
      auto fail = [&](const std::string& why) {
        ++c.failed;
        failures.push_back(id);
        std::cout << "FAIL " << id << ": " << why << "\n";
      };

      SkipEntry* listed = find_skip(skips, suite, name);
      if (listed) listed->used = true;
      onnx::ModelProto proto;
      try {
        proto = read_model_proto(dir / "model.onnx");
      } catch (const Error& e) {
        fail(e.what());
        continue;
      }
      if (auto reason = out_of_scope(proto)) {
        skip(*reason);
        continue;
      }
      if (listed && !opt.run_skipped) {
        skip(listed->reason + " (skips.txt:" + std::to_string(listed->line) + ")");
        continue;
      }
      const std::string r = opt.fork ? run_case_isolated(dir, proto, opt.timeout_s) : run_case_caught(dir, proto);
      if (listed) {  // --run-skipped
        if (r.empty()) {
          unexpected_passes.push_back(id);
          std::cout << "UNEXPECTED PASS " << id << " (skips.txt:" << listed->line << ": " << listed->reason << ")\n";
        } else if (opt.verbose) {
          std::cout << "SKIPPED CASE FAILS " << id << ": " << r << "\n";
        }
        skip(listed->reason + " (skips.txt:" + std::to_string(listed->line) + ")");
      } else if (r.empty()) {
        ++c.passed;
        if (opt.verbose) std::cout << "PASS " << id << "\n";
      } else {
        fail(r);
      }
    }
    std::cout << suite << ": " << summary(c) << std::endl;
    total.passed += c.passed;
    total.failed += c.failed;
    total.skipped += c.skipped;
  }

  if (opt.filter.empty() && opt.suites.size() == std::size(kSuites)) {
    for (const SkipEntry& s : skips) {
      if (!s.used) {
        std::cout << "warning: skips.txt:" << s.line << ": '" << s.pattern << "' matches no case\n";
      }
    }
  }
  if (opt.run_skipped) {
    std::cout << unexpected_passes.size() << " case(s) listed in skips.txt pass: remove them from the list\n";
  }
  if (skips_out) std::cout << "skipped cases and reasons: " << opt.skips_out << "\n";
  if (opt.list_failures && !failures.empty()) {
    std::cout << "failures:\n";
    for (const auto& f : failures) std::cout << f << "\n";
  }
  std::cout << summary(total) << std::endl;
  return total.failed > 0 ? 1 : 0;
}

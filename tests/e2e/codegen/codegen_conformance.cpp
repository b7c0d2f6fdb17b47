// tests/e2e/codegen/codegen_conformance.cpp — the ONNX backend test cases (libonnx-testdata)
// through code generation and the host emulation, against the outputs the cases ship.
//
// For every case:
//   1. (in a child process) load it as tests/conformance does (shape inputs bound as constants,
//      symbolic dims from the data), run the reference interpreter and compare with the shipped
//      outputs. A case the interpreter does not pass is SKIPPED, with the reason: this runner
//      tests code generation, and `conformance` reports the interpreter. A case listed in
//      tests/e2e/codegen/skips.txt is SKIPPED with the reason given there.
//   2. lower and emit it (--name <suite prefix>_<case>, weights in a .bin file read at create)
//      into WORK/cases/<suite>/<case>/, with the case's inputs and expected outputs as raw files
//      and a manifest (case.txt). A lowering or emit error FAILS the case.
//   3. Build: the cases are compiled in groups, each group one translation unit that includes
//      every case's .cu inside a namespace of its own (the runtime and template headers are
//      included once at the top, so each group parses them once and shares the instantiations
//      its cases have in common); the host-emulation runtime objects are compiled (or given) once;
//      everything links into one driver program. When a group does not compile, the cases the
//      compiler's messages name are compiled alone (all of the group's cases when that does not
//      settle it); those that fail are FAILED with the compiler's message, and the group is
//      rebuilt without them.
//   4. The driver runs every case (each in a child process, with a time limit) on the emulation:
//      create, run_host on the shipped inputs, compare every output with runtime_stub/compare.h
//      at rtol 1e-3, atol 1e-5.
// The last line is "N passed, M failed, K skipped"; the exit status is 1 when M > 0.
//
// --fp16 (the codegen_node_tests_fp16 ctest): the same cases compiled with the precision pass on
// (PassOptions::fp16; graph inputs and outputs stay FP32), compared with the shipped FP32 outputs
// at rtol 1e-2, atol 1e-3. Only cases whose every node's op belongs to --fp16-families (by
// OpDef::family; default conv, gemm, pool, elementwise, activation: the issue's conv, gemm, matmul,
// pooling and elementwise node tests) are run; the others are SKIPPED as out of the set. A case
// whose float data FP16 cannot represent (a finite input, weight or expected output beyond
// +-65504, or a result the FP16 graph misses on the reference interpreter too: cancellation in
// values FP16 rounds), that has no float tensor (integer-only) or in which no node runs in FP16
// is SKIPPED with that reason. --io-fp16: the models take and return FP16 as well (inputs rounded,
// outputs widened for the comparison), so every kernel reads and writes FP16.
//
// --bf16 (the codegen_node_tests_bf16 ctest): the same with bfloat16 storage (PassOptions::bf16),
// compared at verify --bf16's tolerance (rtol 5e-2, atol 1e-2: bfloat16 keeps 8 mantissa bits);
// bfloat16 has FP32's range, so no case is skipped for its magnitudes. --fp16-families applies.
#include <fnmatch.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/emitter.h"
#include "frontend/onnx_import.h"
#include "io/tensor_io.h"
#include "ops/registry.h"
#include "reference/interpreter.h"
#include "runtime_stub/compare.h"
#include "runtime_stub/npy.h"
#include "pipeline/pipeline.h"
#include "support/build_paths.h"
#include "support/error.h"
#include "tests/codegen/test_families.h"
#include "tests/conformance/bounded_outputs.h"

namespace fs = std::filesystem;
using namespace modelc;

#ifndef MODELC_CODEGEN_SKIPS
#define MODELC_CODEGEN_SKIPS "tests/e2e/codegen/skips.txt"
#endif

namespace {

// FNV-1a, 64 bits: --sample's hash of a case id (the same on every machine and run).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;
constexpr double kRtolFp16 = 1e-2;
constexpr double kAtolFp16 = 1e-3;
constexpr double kHalfMax = 65504.0;
constexpr double kRtolBf16 = 5e-2;  // verify --bf16's (compiler/cli/commands/commands.h kBf16Rtol)
constexpr double kAtolBf16 = 1e-2;

struct Options {
  std::string data = "/usr/share/libonnx-testdata/data";
  std::vector<std::string> suites = {"node", "pytorch-converted", "pytorch-operator", "simple", "modelc"};
  std::string cases = MODELC_CONFORMANCE_CASES;  // the suite "modelc": modelc's own cases (tests/conformance/cases)
  std::string work = "codegen_conformance";
  std::string skips = MODELC_CODEGEN_SKIPS;
  std::string source_dir = modelc::build_source_dir();
  std::string host_lib;  // libmodelc_host_emulation.a ("" : compile runtime_stub/host/*.cpp)
  std::string cxx = "g++";
  // -O0: the cases' tensors are small, so building a group costs more than running it (the 1-in-8
  // sample: 22.1 CPU s at -O1, 16.9 at -O0; every FP32 case passes at -O0).
  std::string cxxflags = "-O0";
  std::string filter;
  int sample_k = 0, sample_n = 1;  // --sample K/N: only cases whose id hashes to K mod N
  int jobs = 0;
  int group_size = 60;
  int timeout_s = 120;
  bool verbose = false;
  std::map<std::string, std::string> substitutes;  // --substitute FAMILY=OTHER (tests/codegen's test family)
  bool fp16 = false;                                // --fp16 or --bf16: the precision pass on
  DType half = DType::float16;                      // its storage: float16, bfloat16 with --bf16
  bool io_fp16 = false;                             // --io-fp16 (with --fp16)
  std::string arch;  // --arch A: the plan's one architecture (LowerOptions' default, sm_75, when empty),
                     // and the emulated device's (MODELC_EMU_SM) when the cases run
  const char* flag() const { return half == DType::bfloat16 ? "--bf16" : "--fp16"; }
  const char* half_name() const { return half == DType::bfloat16 ? "BF16" : "FP16"; }
  double rtol16() const { return half == DType::bfloat16 ? kRtolBf16 : kRtolFp16; }
  double atol16() const { return half == DType::bfloat16 ? kAtolBf16 : kAtolFp16; }
  std::set<std::string> fp16_families = {"conv", "gemm", "pool", "elementwise", "activation"};  // "all": every op
};

const char* const kUsage =
    "usage: codegen_conformance [options]\n"
    "  --suites A,B       suites (default node,pytorch-converted,pytorch-operator,simple,modelc)\n"
    "  --cases DIR        the suite \"modelc\": modelc's own cases (default tests/conformance/cases)\n"
    "  --filter SUBSTR    only cases whose suite/name contains SUBSTR\n"
    "  --sample K/N       only the cases whose suite/name hashes (FNV-1a) to K modulo N: a fixed\n"
    "                     1-in-N part that does not move when cases are added\n"
    "  --data DIR         test data root (default /usr/share/libonnx-testdata/data)\n"
    "  --work DIR         work folder: emitted cases, build, logs (default ./codegen_conformance)\n"
    "  --skips FILE       skip list, one 'case_name  reason' a line (default tests/e2e/codegen/skips.txt)\n"
    "  --host-lib FILE    the host emulation library to link (default: compile runtime_stub/host/*.cpp)\n"
    "  --cxx CXX          compiler (default g++); --cxxflags FLAGS (default -O0)\n"
    "  --jobs N           parallel jobs (default: the number of cores)\n"
    "  --group-size N     cases per compiled group (default 60)\n"
    "  --timeout SECONDS  per-case limit for preparing and for running (default 120)\n"
    "  --verbose          print every case's result\n"
    "  --fp16             compile with the precision pass (--fp16) and compare at rtol 1e-2, atol 1e-3\n"
    "  --bf16             the same with bfloat16 storage (--bf16), compared at rtol 5e-2, atol 1e-2\n"
    "  --io-fp16          --fp16, and the models take and return FP16 (inputs rounded to FP16, outputs\n"
    "                     widened for the comparison): every kernel reads and writes FP16\n"
    "  --arch A           plan for the one architecture A (default sm_75) and run the cases on an\n"
    "                     emulated device of that SM; with sm_90a the last line also counts the\n"
    "                     passed cases that ran a kernel on the Hopper engine\n"
    "  --fp16-families L  with --fp16 or --bf16: the op families (OpDef::family) a case may use, comma separated, or\n"
    "                     'all' (default conv,gemm,pool,elementwise,activation)\n"
    "  --substitute F=G   lower family F's kernels with family G (e.g. elementwise=test_elementwise, the\n"
    "                     test family of tests/codegen/test_families.h: for testing this runner)\n"
    "The last line is 'N passed, M failed, K skipped'; the exit status is 1 when M > 0.\n";

// ---- small helpers --------------------------------------------------------------------------------

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Writes only when the content differs: unchanged files keep their time stamps for make.
void write_text(const fs::path& p, const std::string& text) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec) && fs::file_size(p, ec) == text.size() && read_text(p) == text) return;
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw Error("cannot write " + p.string());
}

std::string one_line(std::string s, std::size_t max = 400) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string secs(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f s", s);
  return b;
}

// ---- skip list (same format as tests/conformance/skips.txt) -------------------------------------

struct SkipEntry {
  std::string pattern, reason;
  int line = 0;
};

std::vector<SkipEntry> read_skips(const std::string& path) {
  std::vector<SkipEntry> r;
  std::ifstream f(path);
  if (!f) return r;  // no list: nothing skipped by name
  std::string line;
  for (int no = 1; std::getline(f, line); ++no) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto name_end = line.find_first_of(" \t", first);
    const auto reason = name_end == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", name_end);
    if (reason == std::string::npos) throw Error(path + ":" + std::to_string(no) + ": no reason given");
    const auto end = line.find_last_not_of(" \t\r");
    r.push_back({line.substr(first, name_end - first), line.substr(reason, end + 1 - reason), no});
  }
  return r;
}

const SkipEntry* find_skip(const std::vector<SkipEntry>& skips, const std::string& suite, const std::string& name) {
  const std::string q = suite + "/" + name;
  for (const SkipEntry& s : skips) {
    if (fnmatch(s.pattern.c_str(), name.c_str(), 0) == 0 || fnmatch(s.pattern.c_str(), q.c_str(), 0) == 0) return &s;
  }
  return nullptr;
}

// ---- loading a case as tests/conformance/conformance.cpp does --------------------------------------

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    r.push_back(p);
  }
  return r;
}

// ONNX 1.12 stores BFLOAT16 test tensors as UINT16 (the same bits).
Tensor read_case_tensor(const fs::path& path, const onnx::ValueInfoProto& declared) {
  if (declared.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16) {
    std::ifstream f(path, std::ios::binary);
    onnx::TensorProto t;
    if (f && t.ParseFromIstream(&f) && t.data_type() == onnx::TensorProto::UINT16) {
      t.set_data_type(onnx::TensorProto::BFLOAT16);
      return tensor_from_proto(t, path.string());
    }
  }
  return read_tensor_pb(path.string());
}

std::optional<Shape> static_shape(const onnx::ValueInfoProto& v) {
  if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return std::nullopt;
  Shape s;
  for (const auto& d : v.type().tensor_type().shape().dim()) {
    if (!d.has_dim_value()) return std::nullopt;
    s.push_back(d.dim_value());
  }
  return s;
}

// Graph inputs whose values decide a shape: feeding an input of OpDef::const_inputs, directly or
// through the nodes that compute it (as tests/conformance binds them).
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

// bfloat16 is compared as float32 (the emulated outputs are widened to it too).
mc_npy::Array comparable(const Tensor& t) {
  return to_array(t.dtype() == DType::bfloat16 ? t.cast(DType::float32) : t);
}

// NAME.h declares cudaStream_t itself on the emulation (struct CUstream_st; typedef ...), to stay
// light. Inside a case's namespace that would declare a second, different CUstream_st; the group
// includes the runtime first, so the global declaration serves and these two lines are dropped.
std::string for_namespace(const std::string& header) {
  std::istringstream in(header);
  std::string r;
  for (std::string line; std::getline(in, line);) {
    if (line == "struct CUstream_st;" || line.rfind("typedef struct CUstream_st* cudaStream_t;", 0) == 0) {
      r += "// (dropped for the grouped build: " + line + ")\n";
      continue;
    }
    r += line + "\n";
  }
  return r;
}

struct Case {
  std::string suite, name, id;  // id = suite/name
  fs::path dir;                 // the test data
  fs::path out;                 // WORK/cases/suite/name
  std::string model;            // the generated model's name
  int index = 0;
};

std::string model_name(const std::string& suite, const std::string& name) {
  std::string prefix = suite == "node"                ? "n"
                       : suite == "pytorch-converted" ? "pc"
                       : suite == "pytorch-operator"  ? "po"
                       : suite == "modelc"            ? "m"
                                                      : "s";
  std::string r = prefix + "_";
  for (char c : name) r += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return r;
}

// --fp16 / --bf16: why the case is not run in FP16 / BF16 ("" when it is): an op outside the
// families, or float data FP16 cannot represent (BF16: FP32's range), or no float tensor at all.
std::string fp16_skip_reason(const Graph& g, const TensorMap& feeds, const std::map<std::string, Tensor>& expected,
                             const Options& o) {
  std::set<std::string> outside;
  for (const auto& up : g.nodes()) {
    const ops::OpDef* def = ops::OpRegistry::instance().find(up->op(), up->opset());
    const std::string family = def ? def->family : "";
    if (!o.fp16_families.count("all") && !o.fp16_families.count(family)) {
      outside.insert(up->op() + " (" + (family.empty() ? "no family" : family) + ")");
    }
  }
  if (!outside.empty()) {
    std::string r = std::string(o.flag()) + ": not in the " + o.half_name() + " node-test set: ";
    for (const std::string& x : outside) r += (x == *outside.begin() ? "" : ", ") + x;
    return r;
  }
  auto beyond = [&](const Tensor& t) {
    if (!is_float(t.dtype()) || o.half != DType::float16) return 0.0;
    double m = 0;
    for (double x : t.to_f64()) {
      if (std::isfinite(x) && std::fabs(x) > m) m = std::fabs(x);
    }
    return m > kHalfMax ? m : 0.0;
  };
  auto fmt = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return std::string(b);
  };
  for (const auto& [name, t] : feeds) {
    if (const double m = beyond(t)) return "--fp16: FP16 cannot represent input '" + name + "' (|x| up to " + fmt(m) + ")";
  }
  for (const Value* v : g.values()) {
    if (v->is_constant() && !v->producer()) {
      if (const double m = beyond(v->constant())) {
        return "--fp16: FP16 cannot represent constant '" + v->name() + "' (|x| up to " + fmt(m) + ")";
      }
    }
  }
  for (const auto& [name, t] : expected) {
    if (const double m = beyond(t)) return "--fp16: FP16 cannot represent output '" + name + "' (|x| up to " + fmt(m) + ")";
  }
  bool floats = false;
  for (const Value* v : g.values()) floats = floats || v->dtype() == DType::float32;
  if (!floats) return std::string(o.flag()) + ": integer-only (no float32 tensor for the precision pass to change)";
  return "";
}

// Step 1 and 2 for one case: "OK", "SKIP reason" or "FAIL reason". Runs in a child process.
std::string prepare_case(const Case& c, const Options& o) {
  std::error_code ignored;
  fs::remove(c.out / "hopper", ignored);  // an earlier run's marker (another --arch)
  const onnx::ModelProto proto = [&] {
    std::ifstream f(c.dir / "model.onnx", std::ios::binary);
    onnx::ModelProto m;
    if (!f || !m.ParseFromIstream(&f)) throw Error("cannot parse model.onnx");
    return m;
  }();
  // Sequence, optional and map types: out of modelc's scope (tensor graphs).
  for (const auto* list : {&proto.graph().input(), &proto.graph().output()}) {
    for (const auto& v : *list) {
      if (!v.type().has_tensor_type()) return "SKIP reference does not pass: '" + v.name() + "' is not a tensor";
    }
  }
  const fs::path set = c.dir / "test_data_set_0";
  if (!fs::is_directory(set)) return "SKIP no test_data_set_0";
  std::set<std::string> initializers;
  for (const auto& t : proto.graph().initializer()) initializers.insert(t.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& v : proto.graph().input()) {
    if (!initializers.count(v.name())) inputs.push_back(&v);
  }
  const auto input_files = numbered_files(set, "input_");
  const auto output_files = numbered_files(set, "output_");
  if (input_files.size() > inputs.size()) return "SKIP reference: more input files than graph inputs";

  // 1. The reference interpreter must pass the case.
  TensorMap feeds;
  LoadOptions lo;
  const std::set<std::string> shape_inputs = inputs_needed_at_compile_time(proto);
  std::string why_not;
  std::unique_ptr<Graph> g;
  std::map<std::string, Tensor> expected;  // graph output name -> shipped tensor
  try {
    for (std::size_t i = 0; i < input_files.size(); ++i) {
      Tensor t = read_case_tensor(input_files[i], *inputs[i]);
      if (static_shape(*inputs[i]) != t.shape()) lo.input_shapes[inputs[i]->name()] = t.shape();
      if (shape_inputs.count(inputs[i]->name())) {
        lo.input_values[inputs[i]->name()] = std::move(t);
      } else {
        feeds[inputs[i]->name()] = std::move(t);
      }
    }
    g = load_onnx((c.dir / "model.onnx").string(), lo);
    const TensorMap results = run_reference(*g, feeds);
    for (std::size_t i = 0; i < output_files.size() && static_cast<int>(i) < proto.graph().output_size(); ++i) {
      const onnx::ValueInfoProto& out = proto.graph().output(static_cast<int>(i));
      // An output with a static bound (NonMaxSuppression): the expected entries, padded to it.
      Tensor want = conformance::padded_to_bound(*g, out.name(), read_case_tensor(output_files[i], out));
      auto it = results.find(out.name());
      if (it == results.end()) return "SKIP reference: output '" + out.name() + "' missing";
      const mc_npy::Comparison cmp = mc_npy::compare(comparable(it->second), comparable(want), kRtol, kAtol);
      if (!cmp.pass) return "SKIP reference does not pass: " + one_line(mc_npy::comparison_line(out.name(), comparable(want), cmp));
      expected[out.name()] = std::move(want);
    }
  } catch (const std::exception& e) {
    // Errors name the file first: the case's name says it already.
    std::string why = e.what();
    const std::string file = "file '" + (c.dir / "model.onnx").string() + "': ";
    if (why.rfind(file, 0) == 0) why = why.substr(file.size());
    return "SKIP reference does not pass: " + one_line(why, 200);
  }

  // 2. Lower and emit. From here on, a problem is a failure of code generation.
  if (const SkipEntry* s = find_skip(read_skips(o.skips), c.suite, c.name)) {
    return "SKIP " + s->reason + " (skips.txt:" + std::to_string(s->line) + ")";
  }
  if (o.fp16) {
    const std::string why = fp16_skip_reason(*g, feeds, expected, o);
    if (!why.empty()) return "SKIP " + why;
  }
  try {
    LowerOptions opt;
    opt.name = c.model;
    opt.family_substitutes = o.substitutes;
    PrecisionReport precision;
    if (!o.arch.empty()) opt.archs = {o.arch};
    if (o.fp16) {
      opt.passes.fp16 = o.half == DType::float16;
      opt.passes.bf16 = o.half == DType::bfloat16;
      opt.passes.io_fp16 = o.io_fp16;
      opt.passes.precision_report = &precision;
    }
    const Schedule s = lower(*g, opt);
    if (o.fp16 && precision.fp16_nodes == 0) {
      std::string why;
      for (const auto& n : precision.fp32_nodes) why += (why.empty() ? "" : "; ") + n.op + ": " + n.reason;
      return std::string("SKIP ") + o.flag() + ": no node runs in " + o.half_name() + " (" +
             one_line(why.empty() ? "no float node" : why, 200) + ")";
    }
    if (o.fp16) {
      // The FP16 graph on the reference interpreter (each op rounds to FP16 at its output): when it
      // misses the tolerance too, FP16 storage cannot represent the case (cancellation in values
      // FP16 rounds, ...), whatever the kernels do.
      TensorMap half_feeds;
      for (const Value* in : g->inputs()) {
        auto it = feeds.find(in->name());
        if (it != feeds.end()) half_feeds[in->name()] = it->second.dtype() != in->dtype() ? it->second.cast(in->dtype()) : it->second;
      }
      const TensorMap results = run_reference(*g, half_feeds);
      for (std::size_t j = 0; j < s.outputs.size() && j < static_cast<std::size_t>(proto.graph().output_size()); ++j) {
        auto want = expected.find(proto.graph().output(static_cast<int>(j)).name());
        auto got = results.find(g->outputs()[j]->name());
        if (want == expected.end() || got == results.end()) continue;
        const Tensor g32 = got->second.dtype() == o.half && want->second.dtype() == DType::float32
                               ? got->second.cast(DType::float32) : got->second;
        const mc_npy::Comparison cmp =
            mc_npy::compare(comparable(g32), comparable(want->second), o.rtol16(), o.atol16());
        if (!cmp.pass) {
          return std::string("SKIP ") + o.flag() + ": " + o.half_name() + " cannot represent the case: the " +
                 o.half_name() + " graph on the reference interpreter misses the tolerance too: " +
                 one_line(mc_npy::comparison_line(want->first, comparable(want->second), cmp), 300);
        }
      }
    }
    // A case that runs a kernel on the Hopper engine says so (a marker file): the summary counts them.
    if (std::any_of(s.kernels.begin(), s.kernels.end(), [](const Kernel& k) { return k.engine == Engine::hopper; })) {
      write_text(c.out / "hopper", "");
    }
    EmitOptions eo;
    eo.source = (c.dir / "model.onnx").string();
    eo.weights_file = true;
    eo.format = false;
    const std::map<std::string, std::string> files = render_model(s, eo);
    std::vector<std::string> sources;
    for (const auto& [file, text] : files) {
      if (file.find('/') != std::string::npos) continue;  // runtime/ and kernels/: the shared copies serve
      if (file == c.model + ".h") {
        write_text(c.out / file, for_namespace(text));
        continue;
      }
      // The weights' offsets and the self-test's data (an anonymous namespace: one per case, so
      // the cases of a group link together): headers NAME.cu includes.
      if (file == c.model + "_weights.h" || file == c.model + "_self_test.h") {
        write_text(c.out / file, text);
        continue;
      }
      if ((file.size() > 3 && file.compare(file.size() - 3, 3, ".cu") == 0 &&
                                     file != c.model + "_main.cu")) {
        write_text(c.out / file, text);
        sources.push_back(file);
      }
    }
    // NAME.cu first, then its parts in order.
    std::sort(sources.begin(), sources.end(), [&](const std::string& a, const std::string& b) {
      const bool am = a == c.model + ".cu", bm = b == c.model + ".cu";
      if (am != bm) return am;
      return a < b;
    });
    write_text(c.out / (c.model + "_weights.bin"), weights_blob(s));

    // The manifest the driver reads: sources, weights, inputs and expected outputs as raw files.
    std::string m = "model " + c.model + "\n";
    if (o.fp16) m += "tolerance " + std::to_string(o.rtol16()) + " " + std::to_string(o.atol16()) + "\n";
    for (const std::string& src : sources) m += "source " + (c.out / src).string() + "\n";
    m += "weights " + (c.out / (c.model + "_weights.bin")).string() + "\n";
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
      auto it = feeds.find(s.inputs[i].name);
      if (it == feeds.end()) return "FAIL the generated model's input '" + s.inputs[i].name + "' has no data";
      const fs::path raw = c.out / ("input_" + std::to_string(i) + ".raw");
      const Tensor in = it->second.dtype() != s.inputs[i].dtype ? it->second.cast(s.inputs[i].dtype) : it->second;
      write_text(raw, std::string(reinterpret_cast<const char*>(in.raw()), in.nbytes()));
      m += "input " + raw.string() + "\n";
    }
    for (std::size_t i = 0; i < s.outputs.size(); ++i) {
      auto it = expected.find(s.outputs[i].name);
      if (it == expected.end()) {
        m += "output -\n";  // no shipped data for it
        continue;
      }
      const mc_npy::Array a = comparable(it->second);
      const fs::path raw = c.out / ("output_" + std::to_string(i) + ".raw");
      write_text(raw, std::string(reinterpret_cast<const char*>(a.data.data()), a.data.size()));
      m += "output " + raw.string() + " " + std::to_string(a.dtype) + " " + std::to_string(a.shape.size());
      for (int64_t d : a.shape) m += " " + std::to_string(d);
      m += "\n";
    }
    write_text(c.out / "case.txt", m);
  } catch (const std::exception& e) {
    return "FAIL codegen: " + one_line(e.what(), 600);
  }
  return "OK";
}

// ---- child processes ------------------------------------------------------------------------------

// Runs fn(i) for i in [0, n) in up to `jobs` child processes at once; each child writes its result
// (one line) to result_file(i). Returns the results ("FAIL ..." for a crash or a time-out).
template <class Fn, class PathFn>
std::vector<std::string> run_children(int n, int jobs, int timeout_s, Fn fn, PathFn result_file) {
  std::vector<std::string> results(static_cast<std::size_t>(n));
  std::map<pid_t, int> running;
  int next = 0;
  auto collect = [&](pid_t pid, int status) {
    const int i = running.at(pid);
    running.erase(pid);
    std::string r = read_text(result_file(i));
    while (!r.empty() && (r.back() == '\n')) r.pop_back();
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      r = sig == SIGALRM ? "FAIL timed out after " + std::to_string(timeout_s) + " s"
                         : std::string("FAIL crashed: signal ") + std::to_string(sig) + " (" + strsignal(sig) + ")";
    } else if (r.empty()) {
      r = "FAIL the child exited with status " + std::to_string(WEXITSTATUS(status)) + " and no result";
    }
    results[static_cast<std::size_t>(i)] = r;
  };
  while (next < n || !running.empty()) {
    while (next < n && static_cast<int>(running.size()) < jobs) {
      const int i = next++;
      std::error_code ec;
      fs::remove(result_file(i), ec);
      std::cout.flush();
      const pid_t pid = fork();
      if (pid < 0) {
        results[static_cast<std::size_t>(i)] = std::string("FAIL fork failed: ") + std::strerror(errno);
        continue;
      }
      if (pid == 0) {
        alarm(static_cast<unsigned>(timeout_s));
        std::string r;
        try {
          r = fn(i);
        } catch (const std::exception& e) {
          r = std::string("FAIL ") + one_line(e.what());
        }
        std::ofstream(result_file(i)) << r << "\n";
        std::cout.flush();
        _exit(0);
      }
      running[pid] = i;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (running.count(pid)) collect(pid, status);
  }
  return results;
}

// Runs a shell command; its output goes to `log`. Returns the exit status.
int sh(const std::string& command, const fs::path& log) {
  const std::string full = "(" + command + ") >" + shell_quote(log.string()) + " 2>&1";
  const int status = std::system(full.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// ---- the build ---------------------------------------------------------------------------------------

// A translation unit holding `cases` (each in namespace mc_case_<model>) and their model tables.
std::string group_source(const std::vector<const Case*>& cases, const std::vector<std::string>& headers,
                         const std::string& register_fn) {
  std::string s = "// generated by codegen_conformance: cases compiled together, each in a namespace of its own\n";
  s += "#include <stddef.h>\n#include <stdint.h>\n#include <new>\n";
  // The runtime headers NAME.cu includes, at global scope first: their include guards keep the
  // cases' namespaces from opening copies of their own.
  s += "#include \"runtime/runtime.h\"\n#include \"runtime/model_api.h\"\n#include \"runtime/self_test.h\"\n";
  for (const std::string& h : headers) s += "#include \"kernels/" + h + "\"\n";
  s += "#include \"driver.h\"\n\n";
  for (const Case* c : cases) {
    const std::string& n = c->model;
    const std::string manifest = read_text(c->out / "case.txt");
    // A digest of what the case includes: the group's text changes (and it is rebuilt) when they do.
    std::string all = manifest;
    std::istringstream src_lines(manifest);
    for (std::string line; std::getline(src_lines, line);) {
      if (line.rfind("source ", 0) == 0) all += read_text(line.substr(7));
    }
    all += read_text(c->out / (n + "_weights.h"));  // the offsets the sources name
    s += "// " + c->id + " (digest " + std::to_string(std::hash<std::string>{}(all)) + ")\n";
    s += "namespace mc_case_" + n + " {\n";
    std::istringstream lines(manifest);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("source ", 0) == 0) s += "#include \"" + line.substr(7) + "\"\n";
    }
    s += "int create(void** ctx, int device) {\n  " + n + "_ctx* c = nullptr;\n  const int r = " + n +
         "_create(&c, device);\n  *ctx = c;\n  return r;\n}\n";
    s += "int create_with_weights(void** ctx, int device, const char* path) {\n  " + n + "_ctx* c = nullptr;\n" +
         "  const int r = " + n + "_create_with_weights(&c, device, path);\n  *ctx = c;\n  return r;\n}\n";
    s += "int run(void* ctx, const void* const* in, void* const* out, cudaStream_t stream) {\n  return " + n +
         "_run(static_cast<" + n + "_ctx*>(ctx), in, out, stream);\n}\n";
    s += "int run_host(void* ctx, const void* const* in, void* const* out) {\n  return " + n + "_run_host(static_cast<" +
         n + "_ctx*>(ctx), in, out);\n}\n";
    s += "const char* error(const void* ctx) { return " + n + "_error(static_cast<const " + n + "_ctx*>(ctx)); }\n";
    s += "void destroy(void* ctx) { " + n + "_destroy(static_cast<" + n + "_ctx*>(ctx)); }\n";
    // The fields by name: mc_cli::Model's order is runtime_stub/c_api.def's.
    s += "mc_cli::Model make_model() {\n  mc_cli::Model m;\n  m.name = \"" + n + "\";\n";
    for (const char* f : {"create", "create_with_weights", "run", "run_host", "error", "destroy"}) {
      s += std::string("  m.") + f + " = " + f + ";\n";
    }
    for (const char* f : {"num_inputs", "num_outputs", "input_name", "input_dtype", "input_rank", "input_shape",
                          "output_name", "output_dtype", "output_rank", "output_shape", "workspace_bytes"}) {
      s += std::string("  m.") + f + " = " + n + "_" + f + ";\n";
    }
    s += "  return m;\n}\nconst mc_cli::Model model = make_model();\n}  // namespace mc_case_" + n + "\n\n";
  }
  s += "void " + register_fn + "(std::vector<CaseEntry>& v) {\n";
  for (const Case* c : cases) {
    s += "  v.push_back({\"" + c->id + "\", &mc_case_" + c->model + "::model, \"" + (c->out / "case.txt").string() +
         "\"});\n";
  }
  s += "}\n";
  return s;
}

const char* const kDriverHeader = R"(// generated by codegen_conformance
#pragma once
#include <vector>
#include "runtime/model_api.h"
struct CaseEntry {
  const char* id;
  const mc_cli::Model* model;
  const char* manifest;
};
)";

// The driver: runs the registered cases (argv: a result folder, jobs, timeout), each in a child.
const char* const kDriverMain = R"DRIVER(// generated by codegen_conformance
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/compare.h"
#include "runtime/npy.h"
#include "driver.h"
#include "groups.h"

namespace {

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::vector<unsigned char> read_bytes(const std::string& p) {
  const std::string s = read_file(p);
  return std::vector<unsigned char>(s.begin(), s.end());
}

std::string shape_text(const mc_cli::Model& m, bool out, int i) {
  const int rank = out ? m.output_rank(i) : m.input_rank(i);
  const int64_t* d = out ? m.output_shape(i) : m.input_shape(i);
  return mc_npy::type_str(out ? m.output_dtype(i) : m.input_dtype(i), std::vector<int64_t>(d, d + rank));
}

// bfloat16 (16) to float32, for the comparison; float16 (10) too when float32 is expected (--io-fp16).
mc_npy::Array widen(mc_npy::Array a, int want) {
  if (a.dtype == 10 && want == 1) {
    std::vector<unsigned char> f(a.data.size() * 2);
    for (size_t i = 0; i < a.data.size() / 2; ++i) {
      const float v = mc_half::half_bits_to_float(static_cast<uint16_t>(a.data[2 * i] | a.data[2 * i + 1] << 8));
      std::memcpy(&f[4 * i], &v, 4);
    }
    a.dtype = 1;
    a.data = f;
    return a;
  }
  if (a.dtype != 16) return a;
  std::vector<unsigned char> f(a.data.size() * 2);
  for (size_t i = 0; i < a.data.size() / 2; ++i) {
    const unsigned bits = (static_cast<unsigned>(a.data[2 * i]) | static_cast<unsigned>(a.data[2 * i + 1]) << 8) << 16;
    std::memcpy(&f[4 * i], &bits, 4);
  }
  a.dtype = 1;
  a.data = f;
  return a;
}

std::string run_case(const CaseEntry& e) {
  const mc_cli::Model& m = *e.model;
  std::istringstream lines(read_file(e.manifest));
  std::string weights;
  double rtol = 1e-3, atol = 1e-5;  // "tolerance R A" in the manifest (--fp16)
  std::vector<std::vector<unsigned char>> in;
  std::vector<std::string> expected;  // "" : not compared
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("weights ", 0) == 0) weights = line.substr(8);
    if (line.rfind("tolerance ", 0) == 0) std::sscanf(line.c_str() + 10, "%lf %lf", &rtol, &atol);
    if (line.rfind("input ", 0) == 0) in.push_back(read_bytes(line.substr(6)));
    if (line.rfind("output ", 0) == 0) expected.push_back(line.substr(7) == "-" ? "" : line.substr(7));
  }
  if (static_cast<int>(in.size()) != m.num_inputs() || static_cast<int>(expected.size()) != m.num_outputs()) {
    return "FAIL manifest and model disagree on the number of inputs/outputs";
  }
  void* ctx = nullptr;
  struct Guard {
    const mc_cli::Model& m;
    void*& ctx;
    ~Guard() { if (ctx) m.destroy(ctx); }
  } guard{m, ctx};
  if (int rc = m.create_with_weights(&ctx, 0, weights.c_str())) {
    return "FAIL create (code " + std::to_string(rc) + "): " + (ctx ? m.error(ctx) : "");
  }
  std::vector<const void*> in_ptr;
  for (int i = 0; i < m.num_inputs(); ++i) {
    mc_npy::Array a;
    a.dtype = m.input_dtype(i);
    const int64_t* d = m.input_shape(i);
    a.shape.assign(d, d + m.input_rank(i));
    const size_t want = a.numel() * mc_npy::dtype_size(a.dtype);
    if (in[static_cast<size_t>(i)].size() != want) {
      return "FAIL input " + std::to_string(i) + " " + shape_text(m, false, i) + ": the data has " +
             std::to_string(in[static_cast<size_t>(i)].size()) + " bytes";
    }
    in_ptr.push_back(in[static_cast<size_t>(i)].data());
  }
  std::vector<mc_npy::Array> out(static_cast<size_t>(m.num_outputs()));
  std::vector<void*> out_ptr;
  for (int i = 0; i < m.num_outputs(); ++i) {
    mc_npy::Array& a = out[static_cast<size_t>(i)];
    a.dtype = m.output_dtype(i);
    const int64_t* d = m.output_shape(i);
    a.shape.assign(d, d + m.output_rank(i));
    a.data.assign(a.numel() * mc_npy::dtype_size(a.dtype) + 1, 0);
    a.data.pop_back();  // a valid pointer for empty outputs too (capacity kept)
    out_ptr.push_back(a.data.data());
  }
  if (int rc = m.run_host(ctx, in_ptr.data(), out_ptr.data())) {
    return "FAIL run_host (code " + std::to_string(rc) + "): " + m.error(ctx);
  }
  std::string failures;
  int compared = 0;
  for (int i = 0; i < m.num_outputs(); ++i) {
    const std::string& spec = expected[static_cast<size_t>(i)];
    if (spec.empty()) continue;
    std::istringstream f(spec);
    std::string path;
    mc_npy::Array want;
    size_t rank = 0;
    f >> path >> want.dtype >> rank;
    want.shape.resize(rank);
    for (auto& d : want.shape) f >> d;
    want.data = read_bytes(path);
    const mc_npy::Array got = widen(out[static_cast<size_t>(i)], want.dtype);
    const mc_npy::Comparison c = mc_npy::compare(got, want, rtol, atol);
    ++compared;
    if (!c.pass) failures += (failures.empty() ? "" : "; ") + mc_npy::comparison_line(m.output_name(i), want, c);
  }
  if (!failures.empty()) return "FAIL " + failures;
  return "PASS " + std::to_string(compared) + " outputs";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s RESULT_DIR JOBS TIMEOUT_S [CASE_ID...]\n", argv[0]);
    return 2;
  }
  const std::string result_dir = argv[1];
  const int jobs = std::max(1, std::atoi(argv[2]));
  const int timeout_s = std::max(1, std::atoi(argv[3]));
  std::vector<CaseEntry> all;
  register_all_groups(all);
  std::vector<CaseEntry> cases;
  for (const CaseEntry& e : all) {
    bool wanted = argc == 4;
    for (int i = 4; i < argc; ++i) wanted = wanted || e.id == std::string(argv[i]);
    if (wanted) cases.push_back(e);
  }
  auto result_file = [&](size_t i) { return result_dir + "/" + std::to_string(i) + ".txt"; };
  std::map<pid_t, size_t> running;
  size_t next = 0;
  std::vector<std::string> results(cases.size());
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && static_cast<int>(running.size()) < jobs) {
      const size_t i = next++;
      std::remove(result_file(i).c_str());
      std::fflush(stdout);
      const pid_t pid = fork();
      if (pid == 0) {
        alarm(static_cast<unsigned>(timeout_s));
        std::string r;
        try {
          r = run_case(cases[i]);
        } catch (const std::exception& ex) {
          r = std::string("FAIL exception: ") + ex.what();
        }
        for (char& ch : r) if (ch == '\n') ch = ' ';
        std::ofstream(result_file(i)) << r << "\n";
        _exit(0);
      }
      running[pid] = i;
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    const size_t i = it->second;
    running.erase(it);
    std::string r = read_file(result_file(i));
    while (!r.empty() && r.back() == '\n') r.pop_back();
    if (WIFSIGNALED(status)) {
      r = WTERMSIG(status) == SIGALRM ? "FAIL timed out after " + std::to_string(timeout_s) + " s"
                                      : "FAIL crashed: signal " + std::to_string(WTERMSIG(status)) + " (" +
                                            strsignal(WTERMSIG(status)) + ")";
    } else if (r.empty()) {
      r = "FAIL no result";
    }
    std::printf("%s %s\n", cases[i].id, r.c_str());
    std::fflush(stdout);
  }
  return 0;
}
)DRIVER";

struct Build {
  fs::path dir;        // WORK/build
  std::string flags;   // compile flags (includes)
  std::string cxx;
};

// Compiles a group source to an object; returns "" or the compiler's first error lines.
std::string compile(const Build& b, const fs::path& src, const fs::path& obj, const fs::path& log) {
  if (fs::exists(obj) && fs::exists(src) && fs::last_write_time(obj) > fs::last_write_time(src)) return "";
  const int rc = sh(b.cxx + " " + b.flags + " -c " + shell_quote(src.string()) + " -o " + shell_quote(obj.string()), log);
  if (rc == 0) return "";
  std::error_code ec;
  fs::remove(obj, ec);
  std::istringstream lines(read_text(log));
  std::string first;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("error") != std::string::npos) {
      first += (first.empty() ? "" : " | ") + line;
      if (first.size() > 500) break;
    }
  }
  return first.empty() ? "the compiler failed (see " + log.string() + ")" : first;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "codegen_conformance: " << a << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--suites") {
      o.suites.clear();
      std::stringstream ss(value());
      for (std::string s; std::getline(ss, s, ',');) if (!s.empty()) o.suites.push_back(s);
    } else if (a == "--filter") {
      o.filter = value();
    } else if (a == "--sample") {
      const std::string v = value();
      const std::size_t slash = v.find('/');
      o.sample_k = slash == std::string::npos ? -1 : std::atoi(v.substr(0, slash).c_str());
      o.sample_n = slash == std::string::npos ? 0 : std::atoi(v.substr(slash + 1).c_str());
      if (o.sample_n < 1 || o.sample_k < 0 || o.sample_k >= o.sample_n) {
        std::cerr << "codegen_conformance: --sample expects K/N with 0 <= K < N, got '" << v << "'\n";
        return 2;
      }
    } else if (a == "--data") {
      o.data = value();
    } else if (a == "--cases") {
      o.cases = value();
    } else if (a == "--work") {
      o.work = value();
    } else if (a == "--skips") {
      o.skips = value();
    } else if (a == "--host-lib") {
      o.host_lib = value();
    } else if (a == "--cxx") {
      o.cxx = value();
    } else if (a == "--cxxflags") {
      o.cxxflags = value();
    } else if (a == "--jobs") {
      o.jobs = std::atoi(value().c_str());
    } else if (a == "--group-size") {
      o.group_size = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--timeout") {
      o.timeout_s = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--substitute") {
      const std::string v = value();
      const std::size_t eq = v.find('=');
      if (eq == std::string::npos) {
        std::cerr << "codegen_conformance: --substitute expects FAMILY=OTHER\n";
        return 2;
      }
      o.substitutes[v.substr(0, eq)] = v.substr(eq + 1);
    } else if (a == "--fp16") {
      o.fp16 = true;
    } else if (a == "--bf16") {
      o.fp16 = true;
      o.half = DType::bfloat16;
    } else if (a == "--arch") {
      o.arch = value();
    } else if (a == "--io-fp16") {
      o.io_fp16 = o.fp16 = true;
    } else if (a == "--fp16-families") {
      o.fp16_families.clear();
      std::stringstream ss(value());
      for (std::string f; std::getline(ss, f, ',');) if (!f.empty()) o.fp16_families.insert(f);
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else {
      std::cerr << "codegen_conformance: unknown argument '" << a << "'\n" << kUsage;
      return 2;
    }
  }
  test::register_test_families();
  if (o.jobs <= 0) o.jobs = std::max(1u, std::thread::hardware_concurrency());
  if (!fs::is_directory(o.data)) {
    std::cerr << "codegen_conformance: no test data at " << o.data << " (Debian package libonnx-testdata)\n";
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const fs::path work = fs::absolute(o.work);
  fs::create_directories(work / "results");

  // Cases.
  std::vector<Case> cases;
  int sampled_out = 0;  // cases --sample leaves out
  for (const std::string& suite : o.suites) {
    const fs::path root = suite == "modelc" ? fs::path(o.cases) : fs::path(o.data) / suite;
    if (!fs::is_directory(root)) {
      std::cerr << "codegen_conformance: no suite folder " << root << "\n";
      return 1;
    }
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(root)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      Case c;
      c.suite = suite;
      c.name = n;
      c.id = suite + "/" + n;
      if (!o.filter.empty() && c.id.find(o.filter) == std::string::npos) continue;
      if (o.sample_n > 1 && fnv1a(c.id) % static_cast<uint64_t>(o.sample_n) != static_cast<uint64_t>(o.sample_k)) {
        ++sampled_out;
        continue;
      }
      c.dir = root / n;
      c.out = work / "cases" / suite / n;
      c.model = model_name(suite, n);
      c.index = static_cast<int>(cases.size());
      cases.push_back(c);
    }
  }

  // Steps 1-2.
  std::vector<std::string> prep = run_children(
      static_cast<int>(cases.size()), o.jobs, o.timeout_s,
      [&](int i) { return prepare_case(cases[static_cast<std::size_t>(i)], o); },
      [&](int i) { return work / "results" / ("prepare_" + std::to_string(i) + ".txt"); });
  std::map<std::string, std::string> final;  // id -> PASS/FAIL/SKIP line
  std::vector<const Case*> ready;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (prep[i] == "OK") {
      ready.push_back(&cases[i]);
    } else {
      final[cases[i].id] = prep[i];
    }
  }
  const double prepare_s = since(start);
  std::cout << "prepared " << cases.size() << " cases in " << secs(prepare_s) << ": " << ready.size()
            << " emitted\n" << std::flush;

  // Step 3: build. The shared runtime/ and kernels/ every case includes.
  const fs::path build = work / "build";
  fs::create_directories(build / "shared");
  for (const auto& [link, target] : {std::pair<std::string, std::string>{"runtime", "runtime_stub"}, {"kernels", "templates"}}) {
    const fs::path l = build / "shared" / link;
    std::error_code ec;
    fs::remove(l, ec);
    fs::create_directory_symlink(fs::path(o.source_dir) / target, l);
  }
  std::vector<std::string> headers;
  if (fs::is_directory(fs::path(o.source_dir) / "templates")) {
    for (const auto& e : fs::directory_iterator(fs::path(o.source_dir) / "templates")) {
      if (e.path().extension() == ".cuh") headers.push_back(e.path().filename().string());
    }
  }
  std::sort(headers.begin(), headers.end());
  const fs::path shared = build / "shared";
  Build b;
  b.dir = build;
  b.cxx = o.cxx;
  b.flags = "-std=c++17 " + o.cxxflags + " -DMODELC_HOST_EMULATION -w -I" + shell_quote(shared.string()) + " -I" +
            shell_quote((shared / "runtime").string()) + " -I" + shell_quote((shared / "kernels").string()) + " -I" +
            shell_quote(build.string());
  write_text(build / "driver.h", kDriverHeader);
  // Objects are reused across runs while the compiler, its flags and the headers are unchanged.
  std::string stamp = b.cxx + " " + b.flags + "\n";
  for (const char* d : {"runtime_stub", "templates"}) {
    const fs::path root = fs::path(o.source_dir) / d;
    if (!fs::is_directory(root)) continue;
    std::vector<std::string> entries;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      entries.push_back(e.path().string() + " " + std::to_string(e.file_size()) + " " +
                        std::to_string(e.last_write_time().time_since_epoch().count()));
    }
    std::sort(entries.begin(), entries.end());
    for (const std::string& x : entries) stamp += x + "\n";
  }
  if (read_text(build / "deps.stamp") != stamp) {
    for (const fs::path& d : {build, build / "single"}) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(d, ec)) {
        if (e.path().extension() == ".o") fs::remove(e.path(), ec);
      }
    }
    write_text(build / "deps.stamp", stamp);
  }

  // Groups of cases, compiled in parallel; a failing group is split into single cases.
  const auto build_start = std::chrono::steady_clock::now();
  std::vector<std::vector<const Case*>> groups;
  for (std::size_t i = 0; i < ready.size(); i += static_cast<std::size_t>(o.group_size)) {
    groups.emplace_back(ready.begin() + static_cast<std::ptrdiff_t>(i),
                        ready.begin() + static_cast<std::ptrdiff_t>(std::min(ready.size(), i + o.group_size)));
  }
  auto group_name = [](std::size_t g) { return "group" + std::to_string(g); };
  for (std::size_t g = 0; g < groups.size(); ++g) {
    write_text(build / (group_name(g) + ".cpp"), group_source(groups[g], headers, "register_" + group_name(g)));
  }
  std::vector<std::string> compiled = run_children(
      static_cast<int>(groups.size()), o.jobs, 3600,
      [&](int g) {
        const std::string n = group_name(static_cast<std::size_t>(g));
        const std::string e = compile(b, build / (n + ".cpp"), build / (n + ".o"), build / (n + ".log"));
        return e.empty() ? std::string("OK") : "FAIL " + e;
      },
      [&](int g) { return build / (group_name(static_cast<std::size_t>(g)) + ".result"); });
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (compiled[g] == "OK") continue;
    // The cases the compiler's messages name (their files, or instantiations they required) are
    // compiled alone, for their own messages; the group is rebuilt without those that fail. When
    // that is not enough, every case of the group is compiled alone.
    std::set<const Case*> suspects;
    {
      const std::string log = read_text(build / (group_name(g) + ".log"));
      for (const Case* c : groups[g]) {
        if (log.find(c->out.string() + "/") != std::string::npos) suspects.insert(c);
      }
    }
    auto compile_alone = [&](const std::vector<const Case*>& which) {
      std::vector<std::string> r = run_children(
          static_cast<int>(which.size()), o.jobs, 3600,
          [&](int i) {
            const Case* c = which[static_cast<std::size_t>(i)];
            const fs::path src = build / "single" / (c->model + ".cpp");
            write_text(src, group_source({c}, headers, "register_single"));
            const std::string e =
                compile(b, src, build / "single" / (c->model + ".o"), build / "single" / (c->model + ".log"));
            return e.empty() ? std::string("OK") : "FAIL does not compile: " + e;
          },
          [&](int i) { return build / "single" / (which[static_cast<std::size_t>(i)]->model + ".result"); });
      std::set<const Case*> failing;
      for (std::size_t i = 0; i < which.size(); ++i) {
        if (r[i] != "OK") {
          final[which[i]->id] = r[i];
          failing.insert(which[i]);
        }
      }
      return failing;
    };
    auto rebuild_without = [&](const std::set<const Case*>& failing) {
      std::vector<const Case*> keep;
      for (const Case* c : groups[g]) {
        if (!failing.count(c)) keep.push_back(c);
      }
      groups[g] = keep;
      write_text(build / (group_name(g) + ".cpp"), group_source(groups[g], headers, "register_" + group_name(g)));
      return compile(b, build / (group_name(g) + ".cpp"), build / (group_name(g) + ".o"),
                     build / (group_name(g) + ".log"));
    };
    std::string e = "not compiled";
    if (!suspects.empty()) {
      std::cout << group_name(g) << " does not compile; compiling the " << suspects.size()
                << " case(s) its messages name alone\n" << std::flush;
      const std::set<const Case*> failing = compile_alone({suspects.begin(), suspects.end()});
      if (!failing.empty()) e = rebuild_without(failing);
    }
    if (!e.empty()) {
      std::cout << group_name(g) << " does not compile; compiling its " << groups[g].size() << " cases one by one\n"
                << std::flush;
      e = rebuild_without(compile_alone(groups[g]));
    }
    if (!e.empty()) {  // they compile alone, not together: report the whole group
      for (const Case* c : groups[g]) final[c->id] = "FAIL compiles alone but not in " + group_name(g) + ": " + e;
      rebuild_without({groups[g].begin(), groups[g].end()});
    }
  }

  // The driver and the link.
  std::string groups_h = "#pragma once\n#include <vector>\n#include \"driver.h\"\n";
  for (std::size_t g = 0; g < groups.size(); ++g) groups_h += "void register_" + group_name(g) + "(std::vector<CaseEntry>&);\n";
  groups_h += "inline void register_all_groups(std::vector<CaseEntry>& v) {\n";
  for (std::size_t g = 0; g < groups.size(); ++g) groups_h += "  register_" + group_name(g) + "(v);\n";
  groups_h += "}\n";
  write_text(build / "groups.h", groups_h);
  write_text(build / "driver.cpp", kDriverMain);
  std::string objects;
  for (std::size_t g = 0; g < groups.size(); ++g) objects += " " + shell_quote((build / (group_name(g) + ".o")).string());
  std::string e = compile(b, build / "driver.cpp", build / "driver.o", build / "driver.log");
  std::string host = o.host_lib.empty() ? "" : shell_quote(o.host_lib);
  if (e.empty() && o.host_lib.empty()) {
    for (const char* f : {"engine", "runtime_api"}) {
      const fs::path src = fs::path(o.source_dir) / "runtime_stub" / "host" / (std::string(f) + ".cpp");
      const fs::path obj = build / ("host_" + std::string(f) + ".o");
      if (e.empty()) e = compile(b, src, obj, build / ("host_" + std::string(f) + ".log"));
      host += " " + shell_quote(obj.string());
    }
  }
  const fs::path driver = build / "driver";
  if (e.empty() && sh(o.cxx + " -o " + shell_quote(driver.string()) + " " + shell_quote((build / "driver.o").string()) +
                          objects + " " + host + " -lboost_context -lpthread",
                      build / "link.log") != 0) {
    e = "the link failed: " + one_line(read_text(build / "link.log"));
  }
  const double build_s = since(build_start);
  std::cout << "built " << groups.size() << " groups and the driver in " << secs(build_s) << "\n" << std::flush;

  // Step 4: run.
  const auto run_start = std::chrono::steady_clock::now();
  std::set<std::string> in_driver;
  for (const auto& grp : groups) {
    for (const Case* c : grp) in_driver.insert(c->id);
  }
  if (!e.empty()) {
    for (const std::string& id : in_driver) final[id] = "FAIL driver build: " + e;
  } else if (!in_driver.empty()) {
    fs::create_directories(work / "results" / "run");
    const fs::path out = work / "results" / "driver.txt";
    const std::string emulated_sm = o.arch.empty() ? "" : "MODELC_EMU_SM=" + o.arch.substr(3) + " ";
    sh(emulated_sm + shell_quote(driver.string()) + " " + shell_quote((work / "results" / "run").string()) + " " +
           std::to_string(o.jobs) + " " + std::to_string(o.timeout_s),
       out);
    std::istringstream lines(read_text(out));
    for (std::string line; std::getline(lines, line);) {
      const std::size_t sp = line.find(' ');
      if (sp == std::string::npos) continue;
      const std::string id = line.substr(0, sp);
      if (in_driver.count(id)) final[id] = line.substr(sp + 1);
    }
    for (const std::string& id : in_driver) {
      if (!final.count(id)) final[id] = "FAIL no result from the driver (see " + out.string() + ")";
    }
  }
  const double run_s = since(run_start);

  // Report.
  int passed = 0, failed = 0, skipped = 0, passed_hopper = 0;
  std::string skips_text, fails_text;
  for (const Case& c : cases) {
    const std::string& r = final[c.id];
    if (r.rfind("PASS", 0) == 0) {
      ++passed;
      if (fs::exists(c.out / "hopper")) ++passed_hopper;
      if (o.verbose) std::cout << "PASS " << c.id << "\n";
    } else if (r.rfind("SKIP", 0) == 0) {
      ++skipped;
      skips_text += "SKIP " + c.id + ": " + r.substr(5) + "\n";
    } else {
      ++failed;
      fails_text += "FAIL " + c.id + ": " + (r.rfind("FAIL ", 0) == 0 ? r.substr(5) : r) + "\n";
    }
  }
  write_text(work / "results" / "skips.txt", skips_text);
  std::cout << skips_text << fails_text;
  std::cout << "times: prepare " << secs(prepare_s) << ", build " << secs(build_s) << ", run " << secs(run_s)
            << ", total " << secs(since(start)) << "\n";
  if (o.fp16) {
    std::string set;
    for (const std::string& f : o.fp16_families) set += (set.empty() ? "" : ",") + f;
    std::cout << (o.io_fp16 ? "--fp16 --io-fp16" : o.flag()) << " (rtol " << o.rtol16() << ", atol " << o.atol16()
              << "), op families " << set << "\n";
  }
  if (o.sample_n > 1) {
    std::cout << "--sample " << o.sample_k << "/" << o.sample_n << ": " << cases.size() << " of "
              << cases.size() + static_cast<std::size_t>(sampled_out) << " cases\n";
  }
  if (!o.arch.empty()) {
    std::cout << "--arch " << o.arch << ": " << passed_hopper << " of the passed cases ran a kernel on the Hopper engine\n";
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped" << std::endl;
  if (passed == 0) {
    std::cerr << "codegen_conformance: no case passed (none selected, or all skipped): nothing was checked\n";
    return 1;
  }
  return failed > 0 ? 1 : 0;
}

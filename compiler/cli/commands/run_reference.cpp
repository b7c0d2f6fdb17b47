// compiler/cli/commands/run_reference.cpp — `modelc run-reference MODEL.onnx
// [--input NAME=FILE.npy|.pb]... [-o DIR] [--seed S]`: runs the reference
// interpreter and writes every output as DIR/<sanitized name>.npy. Inputs not
// given are seeded random. Nothing is written unless the whole run succeeds.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "io/tensor_io.h"
#include "reference/interpreter.h"
#include "support/error.h"

namespace modelc::cli {

namespace {

struct RunReference {
  std::string model;
  std::vector<std::string> inputs;
  std::string out_dir = ".";
  uint64_t seed = 0;
  LoadFlags load;
};

std::string input_list(const Graph& g) {
  std::string s;
  for (const Value* v : g.inputs()) s += (s.empty() ? "'" : ", '") + v->name() + "' " + v->type_str();
  return s.empty() ? "none" : s;
}

// "NAME=FILE": split at the '=' whose left part names an input of the
// graph (names and paths may both contain '=').
std::pair<Value*, std::string> split_input_arg(const Graph& g, const std::string& arg) {
  for (std::size_t eq = arg.find('='); eq != std::string::npos; eq = arg.find('=', eq + 1)) {
    Value* v = g.find_value(arg.substr(0, eq));
    if (v && v->is_graph_input()) return {v, arg.substr(eq + 1)};
  }
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos) throw Error("--input '" + arg + "' is not NAME=FILE");
  const std::string name = arg.substr(0, eq);
  const Value* v = g.find_value(name);
  throw Error("--input names '" + name + "', which is " +
                  (v && v->is_constant() ? "a constant (initializer), not an input" : "not an input of the model") +
                  " (inputs: " + input_list(g) + ")");
}

int run_run_reference(const RunReference& a) {
  const std::unique_ptr<Graph> g = load_onnx(a.model, load_options(a.load));

  TensorMap feeds = random_inputs(*g, a.seed);
  std::map<std::string, std::string> source;  // input -> where its data came from
  for (const auto& [name, t] : feeds) source[name] = "random (seed " + std::to_string(a.seed) + ")";
  std::set<std::string> given;
  for (const std::string& arg : a.inputs) {
    auto [v, file] = split_input_arg(*g, arg);
    if (!given.insert(v->name()).second) throw Error("--input gives input '" + v->name() + "' twice");
    Tensor t = read_tensor_file(file);
    if (t.dtype() != v->dtype() || t.shape() != v->shape()) {
      Error::Where w;
      w.file = file;
      throw Error(w,
                  "input '" + v->name() + "' expects " + v->type_str() + ", the file holds " + dtype_name(t.dtype()) +
                      "[" + (t.shape().empty() ? "" : shape_str(t.shape())) + "]",
                  t.shape() == v->shape() ? "convert the data to " + std::string(dtype_name(v->dtype()))
                                          : "pass a file of the right shape, or set the input's shape with --shape");
    }
    feeds[v->name()] = std::move(t);
    source[v->name()] = file;
  }

  const TensorMap out = run_reference(*g, feeds);

  // Encode everything before writing anything: no partial output on error.
  std::vector<std::pair<std::string, std::string>> files;  // (path, bytes)
  std::set<std::string> used;
  std::vector<std::string> lines;
  std::set<const Value*> done;
  for (const Value* v : g->outputs()) {
    if (!done.insert(v).second) continue;  // an output listed twice is written once
    const Tensor& t = out.at(v->name());
    std::string base = sanitize_file_name(v->name());
    std::string name = base + ".npy";
    for (int k = 1; !used.insert(name).second; ++k) name = base + "_" + std::to_string(k) + ".npy";
    std::string bytes;
    try {
      bytes = encode_npy(t);
    } catch (const Error& e) {
      throw Error("output '" + v->name() + "': " + e.message(), e.hint());
    }
    const std::string path = (std::filesystem::path(a.out_dir) / name).string();
    lines.push_back("  " + v->name() + "  " + v->type_str() + "  -> " + path);
    files.emplace_back(path, std::move(bytes));
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec) {
    Error::Where w;
    w.file = a.out_dir;
    throw Error(w, "cannot create the output folder: " + ec.message());
  }
  for (const auto& [path, bytes] : files) write_file_atomic(path, bytes);

  std::cout << "inputs\n";
  for (const Value* v : g->inputs()) {
    std::cout << "  " << v->name() << "  " << v->type_str() << "  <- " << source[v->name()] << "\n";
  }
  std::cout << "outputs\n";
  for (const std::string& l : lines) std::cout << l << "\n";
  return 0;
}

}  // namespace

void register_run_reference(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<RunReference>();
  CLI::App* sub = app.add_subcommand(
      "run-reference", "run the reference interpreter and write every output as DIR/<output name>.npy");
  sub->add_option("model", a->model, "the .onnx file")->required()->type_name("MODEL.onnx");
  sub->add_option("--input", a->inputs, "data for an input, repeatable: NAME=FILE.npy or NAME=FILE.pb (others: random)")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  sub->add_option("-o,--output-dir", a->out_dir, "folder for the outputs (created if missing)")
      ->type_name("DIR")
      ->capture_default_str();
  sub->add_option("--seed", a->seed, "seed of the random inputs")->type_name("S")->capture_default_str();
  add_load_flags(*sub, a->load);
  sub->callback([a, &run] {
    load_options(a->load);  // usage errors now, before any work
    run = [a] { return run_run_reference(*a); };
  });
}

}  // namespace modelc::cli

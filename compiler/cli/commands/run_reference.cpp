// compiler/cli/commands/run_reference.cpp — `modelc run-reference MODEL.onnx
// [--input NAME=FILE.npy|.pb]... [-o DIR] [--seed S] [--fp16 | --bf16 | --int8 ...] [--keep-fp32 NODE,...]
// [--layers [--plot FILE.svg]]`:
// runs the reference interpreter and writes every output as DIR/<sanitized name>.npy (a bfloat16
// output as float32: exact). Inputs not given are seeded random; a bfloat16 input reads a .pb, or a
// float32 .npy rounded to nearest even. Nothing is written unless the whole run succeeds.
//
// --fp16 simulates the FP16 program: the pass pipeline runs with the precision pass on (as
// `modelc MODEL.onnx --fp16` runs it) and the interpreter evaluates the result, rounding to
// float16 at the output of every FP16 node (weights were rounded by the pass), its products on the
// reference's float32 path (float accumulators, as the kernels; reference/kernels.h). The outputs
// written are the FP16 run's. It also runs the same pipeline without the precision pass (FP32)
// on the same inputs and prints, per output, the relative L2 error ||fp16 - fp32|| / ||fp32||,
// the largest absolute difference and the count of NaN/Inf where the FP32 value is finite.
// --layers adds that line for every node output both runs have (same value name and shape),
// in graph order: the error accumulated up to that layer (where it grows, and by how much);
// --plot FILE.svg draws the same as a plot (codegen/error_plot.h).
// --bf16 does the same for the BF16 program (bfloat16 storage, `modelc MODEL.onnx --bf16`).
//
// --int8 [--calibrate DIR|random:N [--calibrate-max N] | --calibration-cache FILE] [--calibration METHOD]
// simulates the
// INT8 program the same way: the pipeline's graph stages with --int8 (the calibrated products as
// QConv / QMatMul, computed exactly as the kernels do: integer products, the float32 epilogue in the
// kernels' order; the rest FP16), with the same calibration options as the compile; --layers then
// compares INT8 values dequantized with their scale, so the per-layer error shows where INT8 loses.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "codegen/error_plot.h"
#include "io/tensor_io.h"
#include "ops/quantize.h"
#include "passes/calibration.h"
#include "passes/pass.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "runtime_stub/npy.h"
#include "support/error.h"

namespace modelc::cli {

namespace {

struct RunReference {
  std::string model;
  std::vector<std::string> inputs;
  std::string out_dir = ".";
  uint64_t seed = 0;
  LoadFlags load;
  bool fp16 = false;                   ///< simulate the FP16 program, compare with FP32
  bool bf16 = false;                   ///< simulate the BF16 program, compare with FP32
  std::vector<std::string> keep_fp32;  ///< --keep-fp32 (with --fp16, --bf16 or --int8)
  bool layers = false;                 ///< --layers: the error of every node output (with --fp16, --bf16 or --int8)
  std::string plot;                    ///< --plot FILE.svg: --layers as a plot
  PrecisionFlags int8;                 ///< --int8 and its calibration flags: simulate the INT8 program
};

/// The quantization of an 8-bit value a node writes: a QuantizeLinear's, an INT8 product's output
/// scale, or (MaxPool on INT8 data) its input's; nullopt for anything else.
std::optional<ops::QuantScale> output_quantization(const Node& n) {
  if (!n.has_output(0) || !ops::is_int8_type(n.output(0).dtype())) return std::nullopt;
  if (n.op() == "QuantizeLinear") return ops::constant_quant_scale(n);
  if (n.domain() == ops::kModelcDomain && (n.op() == "QConv" || n.op() == "QMatMul")) {
    const ops::Int8Epilogue e = ops::int8_epilogue(n);
    if (!e.quantized()) return std::nullopt;
    ops::QuantScale q;
    q.scale = e.y_scale;
    q.zero_point = e.y_zero_point;
    q.type = e.out;
    return q;
  }
  if (n.has_input(0) && n.input(0).dtype() == n.output(0).dtype() && n.input(0).producer()) {
    return output_quantization(*n.input(0).producer());  // MaxPool and the like: the input's scale
  }
  return std::nullopt;
}

/// An 8-bit tensor as the real values it stands for.
Tensor dequantized(const Tensor& t, const ops::QuantScale& q) {
  std::vector<double> v = t.to_f64();
  for (double& x : v) x = (x - static_cast<double>(q.zero_point)) * q.scale;
  return Tensor::from_f64(DType::float32, t.shape(), v);
}

/// How far `got` (the FP16 simulation) is from `want` (FP32).
struct Deviation {
  double rel_l2 = 0, max_abs = 0;
  int64_t nonfinite = 0;  ///< NaN/Inf in got where want is finite
  int64_t count = 0;
};

Deviation deviation(const Tensor& got, const Tensor& want) {
  Deviation d;
  if (!is_float(got.dtype()) || !is_float(want.dtype())) return d;
  const std::vector<double> g = got.to_f64(), w = want.to_f64();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < g.size() && i < w.size(); ++i) {
    if (!std::isfinite(w[i])) continue;
    if (!std::isfinite(g[i])) {
      ++d.nonfinite;
      continue;
    }
    const double e = g[i] - w[i];
    num += e * e;
    den += w[i] * w[i];
    d.max_abs = std::max(d.max_abs, std::fabs(e));
  }
  d.count = static_cast<int64_t>(w.size());
  d.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return d;
}

std::string deviation_text(const Deviation& d) {
  char b[160];
  std::snprintf(b, sizeof b, "rel_l2 %.3e  max_abs %.3e  nan/inf %lld", d.rel_l2, d.max_abs,
                static_cast<long long>(d.nonfinite));
  return b;
}

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
                  (v && v->is_constant() ? "a constant (an initializer, or bound with --bind), not an input"
                                         : "not an input of the model") +
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
    Tensor t = read_tensor_file(file, v->dtype(), v->shape());  // no larger than a file of this input can be
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

  TensorMap fp16_out;
  // --fp16 / --bf16 / --int8: the FP32 run first (same passes, no precision), then the simulated
  // program's.
  std::vector<std::string> fp16_lines;
  std::vector<LayerError> layer_errors;  // --layers, for --plot
  const bool int8 = a.int8.int8;
  const bool simulate = a.fp16 || a.bf16 || int8;
  const std::string T = a.bf16 ? "BF16" : "FP16";
  if (simulate) {
    PassOptions po;
    po.keep_fp32 = a.keep_fp32;
    PrecisionReport report;
    po.precision_report = &report;
    const std::shared_ptr<const CalibrationTable> calibration = calibration_for(a.int8, *g, po, std::cout);
    const std::unique_ptr<Graph> g32 = load_onnx(a.model, load_options(a.load));
    run_graph_stages(*g32, po);
    std::map<std::string, Tensor> layer32;  // value name -> FP32 data (--layers)
    NodeObserver keep32;
    if (a.layers) {
      keep32 = [&](const Node& n, const std::vector<Tensor>& outs) {
        for (int i = 0; i < n.num_outputs() && i < static_cast<int>(outs.size()); ++i) {
          if (n.has_output(i) && is_float(outs[i].dtype())) layer32[n.output(i).name()] = outs[i];
        }
      };
    }
    const TensorMap out32 = run_reference(*g32, feeds, keep32);
    po.fp16 = a.fp16 || int8;  // --int8: what is not INT8 runs as with --fp16
    po.bf16 = a.bf16;
    po.int8 = int8;
    po.calibration = calibration.get();
    run_graph_stages(*g, po);
    const std::string what = int8 ? "INT8" : T;
    NodeObserver compare16;
    if (a.layers) {
      compare16 = [&](const Node& n, const std::vector<Tensor>& outs) {
        for (int i = 0; i < n.num_outputs() && i < static_cast<int>(outs.size()); ++i) {
          if (!n.has_output(i)) continue;
          std::string name = n.output(i).name();
          auto it = layer32.find(name);
          // A graph output's producer writes NAME_fp16 / NAME_bf16 (the Cast writes NAME); an INT8 value
          // is NAME_int8.
          for (const char* suffix : {"_fp16", "_bf16", "_int8"}) {
            const std::size_t len = std::strlen(suffix);
            if (it == layer32.end() && name.size() > len && name.compare(name.size() - len, len, suffix) == 0) {
              it = layer32.find(name.substr(0, name.size() - len));
            }
          }
          if (it == layer32.end() || it->second.shape() != outs[i].shape()) continue;
          Tensor got = outs[static_cast<std::size_t>(i)];
          std::string scale;
          if (ops::is_int8_type(got.dtype())) {
            const std::optional<ops::QuantScale> q = i == 0 ? output_quantization(n) : std::nullopt;
            if (!q) continue;
            got = dequantized(got, *q);
            char b[64];
            std::snprintf(b, sizeof b, " (scale %.4g)", q->scale);
            scale = b;
          } else if (!is_float(got.dtype())) {
            continue;
          }
          const Deviation dev = deviation(got, it->second);
          fp16_lines.push_back("  " + n.op() + " " + n.name() + " -> " + name + " " + dtype_name(outs[i].dtype()) +
                               scale + "  " + deviation_text(dev));
          layer_errors.push_back({n.op() + " " + n.name() + " -> " + name, dev.rel_l2, dev.max_abs, dev.nonfinite > 0});
        }
      };
    }
    // The simulation on the reference's float32 path (reference/kernels.h): its values are rounded to
    // 16 or 8 bits at every op anyway; the FP32 run it is compared with stays on the float64 path.
    const TensorMap out16 = run_reference(*g, feeds, compare16, reference::Accumulation::f32);
    if (a.layers) fp16_lines.insert(fp16_lines.begin(), "layers (" + what + " simulation against FP32, accumulated error)");
    if (int8) {
      int64_t n8 = 0;
      std::string not_int8;
      for (const PrecisionReport::Int8Layer& l : report.int8_layers) {
        if (l.precision == "INT8") {
          ++n8;
        } else {
          not_int8 += "\n  not INT8: " + l.op + " " + l.name + " (" + l.precision + "): " + l.reason;
        }
      }
      fp16_lines.push_back("int8 simulation: " + std::to_string(n8) + " of " + std::to_string(report.int8_layers.size()) +
                           " convolutions / matrix products in INT8; calibration " + report.calibration_method + ", " +
                           std::to_string(report.calibration_samples) + " samples (" + report.calibration_source + ")" +
                           not_int8);
    }
    fp16_lines.push_back(std::string(a.bf16 ? "bf16" : "fp16") + " simulation: " + std::to_string(report.fp16_nodes) +
                         " nodes in " + T + ", " +
                         std::to_string(report.fp32_nodes.size()) + " float nodes in FP32, " +
                         std::to_string(report.weights.size()) + " weights converted (" +
                         std::to_string(report.total_clamped()) + " values clamped, " +
                         std::to_string(report.total_subnormal()) + " subnormal)");
    for (const Value* v : g->outputs()) {
      fp16_lines.push_back("  " + v->name() + "  " + deviation_text(deviation(out16.at(v->name()), out32.at(v->name()))));
    }
    fp16_out = out16;
  }
  const TensorMap out = simulate ? std::move(fp16_out) : run_reference(*g, feeds);

  // Encode everything before writing anything: no partial output on error. The files are named as
  // the generated program names them (mc_npy::output_file_names).
  std::vector<const Value*> outputs;
  std::vector<std::string> output_names;
  std::set<const Value*> done;
  for (const Value* v : g->outputs()) {
    if (!done.insert(v).second) continue;  // an output listed twice is written once
    outputs.push_back(v);
    output_names.push_back(v->name());
  }
  const std::vector<std::string> file_names = mc_npy::output_file_names(output_names);
  std::vector<std::pair<std::string, std::string>> files;  // (path, bytes)
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Value* v = outputs[i];
    std::string bytes;
    try {
      const Tensor& t = out.at(v->name());
      bytes = encode_npy(t.dtype() == DType::bfloat16 ? t.cast(DType::float32) : t);  // numpy has no bfloat16
    } catch (const Error& e) {
      throw Error("output '" + v->name() + "': " + e.message(), e.hint());
    }
    const std::string path = (std::filesystem::path(a.out_dir) / file_names[i]).string();
    lines.push_back("  " + v->name() + "  " + v->type_str() + "  -> " + path +
                    (out.at(v->name()).dtype() == DType::bfloat16 ? " (as float32)" : ""));
    files.emplace_back(path, std::move(bytes));
  }
  if (!a.plot.empty()) {
    // FP16's and BF16's limits are verify's relative L2 defaults of issue 1; INT8 has none of its own.
    const double limit = int8 ? 0 : a.bf16 ? kBf16MaxRelL2 : 1e-2;
    const std::string what = int8 ? "INT8" : T;
    files.emplace_back(a.plot, layer_error_svg(std::filesystem::path(a.model).filename().string() + ": " + what + " simulation against FP32, per layer",
                                               layer_errors, limit));
    lines.push_back("  the error per layer (" + std::to_string(layer_errors.size()) + " layers)  -> " + a.plot);
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
  for (const std::string& l : fp16_lines) std::cout << l << "\n";
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
  auto* fp16 = sub->add_flag("--fp16", a->fp16,
                             "simulate the FP16 program (precision pass, FP16 rounding at every FP16 op's output), "
                             "write its outputs and print their error against the FP32 run");
  auto* bf16 = sub->add_flag("--bf16", a->bf16,
                             "simulate the BF16 program (as --fp16, bfloat16 storage), write its outputs and print "
                             "their error against the FP32 run")
                   ->excludes(fp16);
  sub->add_option("--keep-fp32", a->keep_fp32,
                  "with --fp16, --bf16 or --int8: nodes pinned to FP32 (ONNX node names), repeatable")
      ->type_name("NODE,...")
      ->allow_extra_args(false)
      ->delimiter(',');
  CLI::Option* layers = sub->add_flag(
      "--layers", a->layers,
      "with --fp16, --bf16 or --int8: print the error of every node output, in graph order (INT8 values "
      "dequantized)");
  sub->add_option("--plot", a->plot, "with --layers: also draw the error per layer as an SVG plot")
      ->type_name("FILE.svg")
      ->needs(layers);
  CLI::Option* int8 = sub->add_flag(
      "--int8", a->int8.int8,
      "simulate the INT8 program (the precision pass with --int8's calibration, INT8 products computed exactly), "
      "write its outputs and print their error against the FP32 run");
  int8->excludes(bf16);
  CLI::Option* cal = sub->add_option("--calibrate", a->int8.calibrate,
                                     "with --int8: calibration data, a folder of .npy / .pb inputs or random:N")
                         ->type_name("DIR|random:N")
                         ->needs(int8);
  add_calibrate_max_flag(*sub, a->int8, cal);
  sub->add_option("--calibration", a->int8.calibration, "with --int8: entropy (default), percentile or max")
      ->type_name("entropy|percentile|max")
      ->capture_default_str()
      ->check(CLI::IsMember({"entropy", "percentile", "max"}))
      ->needs(int8);
  sub->add_option("--calibration-cache", a->int8.calibration_cache, "with --int8: a calibration cache (NAME_calibration.json)")
      ->type_name("FILE")
      ->needs(int8)
      ->excludes(cal);
  add_load_flags(*sub, a->load);
  sub->callback([a, &run] {
    load_options(a->load);  // usage errors now, before any work
    if ((!a->keep_fp32.empty() || a->layers) && !a->fp16 && !a->bf16 && !a->int8.int8) {
      throw CLI::ValidationError(a->layers ? "--layers" : "--keep-fp32", "needs --fp16, --bf16 or --int8");
    }
    run = [a] { return run_run_reference(*a); };
  });
}

}  // namespace modelc::cli

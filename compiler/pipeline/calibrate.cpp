// compiler/pipeline/calibrate.cpp — see calibrate.h.
#include "pipeline/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "io/tensor_io.h"
#include "pipeline/pipeline.h"
#include "runtime_stub/npy.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace modelc {

namespace {

Error data_error(const std::string& where, const std::string& what, const std::string& hint = {}) {
  Error::Where w;
  w.file = where;
  return Error(w, what,
               hint.empty() ? "--calibrate takes random:N or a folder of .npy / .pb files (one per sample; several "
                              "inputs: one sub-folder per sample, one file per input named after it)"
                            : hint);
}

std::vector<const Value*> model_inputs(const Graph& g) {
  std::vector<const Value*> r;
  for (const Value* v : g.inputs()) {
    if (!v->is_constant()) r.push_back(v);
  }
  return r;
}

bool tensor_file(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".npy" || e == ".pb";
}

Tensor read_sample(const Value& v, const fs::path& file) {
  Tensor t = read_tensor_file(file.string(), v.dtype(), v.shape());
  if (t.dtype() != v.dtype() || t.shape() != v.shape()) {
    throw data_error(file.string(),
                     "input '" + v.name() + "' expects " + v.type_str() + ", the file holds " + dtype_name(t.dtype()) + "[" +
                         (t.shape().empty() ? "" : shape_str(t.shape())) + "]",
                     "calibration samples have the model input's type and shape (set it with --shape)");
  }
  return t;
}

}  // namespace

CalibrationData load_calibration_data(const Graph& g, const std::string& spec) {
  CalibrationData d;
  const std::vector<const Value*> inputs = model_inputs(g);
  if (spec.compare(0, 7, "random:") == 0) {
    const std::string n = spec.substr(7);
    int64_t count = 0;
    try {
      std::size_t used = 0;
      count = std::stoll(n, &used);
      if (used != n.size()) count = 0;
    } catch (const std::exception&) {
      count = 0;
    }
    if (count < 1 || count > 100000) {
      throw Error("--calibrate " + spec + ": N must be a whole number from 1 to 100000", "--calibrate random:16");
    }
    for (int64_t i = 1; i <= count; ++i) d.samples.push_back(random_inputs(g, static_cast<uint64_t>(i)));
    d.source = "random:" + std::to_string(count) + " (seeded random inputs, seeds 1.." + std::to_string(count) + ")";
    return d;
  }
  std::error_code ec;
  if (!fs::is_directory(spec, ec)) throw data_error(spec, "--calibrate: not a folder (nor random:N)");
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(spec, ec)) entries.push_back(e.path());
  if (ec) throw data_error(spec, "--calibrate: cannot list the folder: " + ec.message());
  std::sort(entries.begin(), entries.end());
  std::vector<fs::path> files, dirs;
  for (const fs::path& p : entries) {
    if (fs::is_directory(p, ec)) {
      dirs.push_back(p);
    } else if (tensor_file(p)) {
      files.push_back(p);
    }
  }
  if (!files.empty() && !dirs.empty()) {
    throw data_error(spec, "--calibrate: the folder holds both tensor files and sub-folders; use one form");
  }
  if (!files.empty()) {
    if (inputs.size() != 1) {
      throw data_error(spec, "--calibrate: the model has " + std::to_string(inputs.size()) +
                                 " inputs; give one sub-folder per sample with a file per input");
    }
    for (const fs::path& f : files) d.samples.push_back({{inputs[0]->name(), read_sample(*inputs[0], f)}});
  } else {
    for (const fs::path& dir : dirs) {
      TensorMap m;
      std::map<std::string, fs::path> by_stem;
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (tensor_file(e.path())) by_stem[e.path().stem().string()] = e.path();
      }
      for (const Value* v : inputs) {
        const std::string sanitized = mc_npy::output_file_names({v->name()}).at(0);
        const std::string stem = fs::path(sanitized).stem().string();
        auto it = by_stem.find(v->name());
        if (it == by_stem.end()) it = by_stem.find(stem);
        if (it == by_stem.end()) {
          throw data_error(dir.string(), "--calibrate: no file for input '" + v->name() + "' (" + stem + ".npy or .pb)");
        }
        m[v->name()] = read_sample(*v, it->second);
      }
      d.samples.push_back(std::move(m));
    }
  }
  if (d.samples.empty()) throw data_error(spec, "--calibrate: the folder holds no .npy or .pb files");
  d.source = spec + " (" + std::to_string(d.samples.size()) + " samples)";
  return d;
}

void run_stages_before_precision(Graph& g, const PassOptions& o) {
  PassOptions p = o;
  p.fp16 = false;
  p.int8 = false;
  p.calibration = nullptr;
  p.precision_report = nullptr;
  p.print_after.clear();
  for (const Stage& s : pipeline()) {
    if (std::string(s.name) == "precision") break;
    if (s.kind == StageKind::graph && !p.disabled.count(s.name)) run_graph_stage(g, p, s.name);
  }
}

CalibrationTable calibrate(const Graph& g, const PassOptions& o, const CalibrationData& data, CalibrationMethod method) {
  const std::unique_ptr<Graph> c = g.clone();
  run_stages_before_precision(*c, o);
  CalibrationTable t;
  t.method = method;
  t.samples = static_cast<int64_t>(data.samples.size());
  t.source = data.source;
  // The float tensors, in graph order: inputs, then node outputs.
  std::map<std::string, double> maxabs;
  for (const Value* v : c->inputs()) {
    if (!v->is_constant() && is_float(v->dtype()) && maxabs.emplace(v->name(), 0.0).second) t.order.push_back(v->name());
  }
  for (const auto& n : c->nodes()) {
    for (const Value* v : n->outputs()) {
      if (v && !v->is_constant() && is_float(v->dtype()) && maxabs.emplace(v->name(), 0.0).second) t.order.push_back(v->name());
    }
  }
  auto observe = [&](const std::function<void(const std::string&, const Tensor&)>& f) {
    for (const TensorMap& s : data.samples) {
      for (const Value* v : c->inputs()) {
        auto it = s.find(v->name());
        if (it != s.end() && is_float(it->second.dtype())) f(v->name(), it->second);
      }
      run_reference(*c, s, [&](const Node& n, const std::vector<Tensor>& outs) {
        for (int i = 0; i < n.num_outputs() && i < static_cast<int>(outs.size()); ++i) {
          if (n.has_output(i) && is_float(outs[static_cast<std::size_t>(i)].dtype())) f(n.output(i).name(), outs[static_cast<std::size_t>(i)]);
        }
      });
    }
  };
  observe([&](const std::string& name, const Tensor& x) {
    auto it = maxabs.find(name);
    if (it == maxabs.end()) return;
    for (double v : x.to_f64()) {
      if (std::isfinite(v)) it->second = std::max(it->second, std::fabs(v));
    }
  });
  std::map<std::string, AbsHistogram> hist;
  if (method != CalibrationMethod::max) {
    for (const auto& [name, m] : maxabs) hist[name].range = m;
    observe([&](const std::string& name, const Tensor& x) {
      auto it = hist.find(name);
      if (it == hist.end()) return;
      for (double v : x.to_f64()) {
        if (std::isfinite(v)) it->second.add(std::fabs(v));
      }
    });
  }
  for (const std::string& name : t.order) {
    TensorCalibration tc;
    tc.max = maxabs.at(name);
    tc.threshold = method == CalibrationMethod::max ? tc.max : calibration_threshold(hist.at(name), method);
    t.tensors[name] = tc;
  }
  return t;
}

}  // namespace modelc

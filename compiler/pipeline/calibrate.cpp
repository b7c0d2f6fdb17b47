// compiler/pipeline/calibrate.cpp — see calibrate.h.
#include "pipeline/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "io/tensor_io.h"
#include "pipeline/pipeline.h"
#include "reference/parallel.h"
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

/// The largest finite |x| of a float tensor (0 when none), threads over pieces of its elements;
/// a maximum is the same in any order.
double max_abs_finite(const Tensor& x) {
  const std::vector<double> v = x.to_f64();
  const reference::Split pieces(static_cast<int64_t>(v.size()), int64_t{1} << 16);
  std::vector<double> part(static_cast<std::size_t>(pieces.pieces), 0.0);
  reference::parallel_for(
      pieces.pieces,
      [&](int64_t p) {
        double m = 0.0;
        for (int64_t i = pieces.begin(p); i < pieces.end(p); ++i) {
          const double a = std::fabs(v[static_cast<std::size_t>(i)]);
          if (std::isfinite(a) && a > m) m = a;
        }
        part[static_cast<std::size_t>(p)] = m;
      },
      static_cast<int64_t>(v.size()));
  double m = 0.0;
  for (double a : part) m = std::max(m, a);
  return m;
}

/// Every finite |x| of a float tensor into the histogram: per piece of the elements its own
/// counts, added in piece order (whole numbers far below 2^53: exact, the same as one pass).
void add_abs(AbsHistogram& h, const Tensor& x) {
  const std::vector<double> v = x.to_f64();
  const reference::Split pieces(static_cast<int64_t>(v.size()), int64_t{1} << 16);
  std::vector<AbsHistogram> part(static_cast<std::size_t>(pieces.pieces));
  reference::parallel_for(
      pieces.pieces,
      [&](int64_t p) {
        AbsHistogram& ph = part[static_cast<std::size_t>(p)];
        ph.range = h.range;
        for (int64_t i = pieces.begin(p); i < pieces.end(p); ++i) {
          const double a = v[static_cast<std::size_t>(i)];
          if (std::isfinite(a)) ph.add(std::fabs(a));
        }
      },
      static_cast<int64_t>(v.size()) * 4);
  for (const AbsHistogram& ph : part) {
    for (std::size_t b = 0; b < h.counts.size(); ++b) h.counts[b] += ph.counts[b];
  }
}

}  // namespace

CalibrationData load_calibration_data(const Graph& g, const std::string& spec, int64_t max_samples) {
  CalibrationData d;
  const std::vector<const Value*> inputs = model_inputs(g);
  auto limit = [&](int64_t available) { return max_samples > 0 ? std::min(available, max_samples) : available; };
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
    count = limit(count);
    // Drawn when their turn comes (seeds 1..N), not held.
    const Graph* graph = &g;
    d.count = count;
    d.load = [graph](int64_t i) { return random_inputs(*graph, static_cast<uint64_t>(i + 1)); };
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
  // The samples' files, listed now and read one sample at a time by calibrate().
  std::vector<std::vector<std::pair<const Value*, fs::path>>> plan;
  if (!files.empty()) {
    if (inputs.size() != 1) {
      throw data_error(spec, "--calibrate: the model has " + std::to_string(inputs.size()) +
                                 " inputs; give one sub-folder per sample with a file per input");
    }
    for (const fs::path& f : files) plan.push_back({{inputs[0], f}});
  } else {
    for (const fs::path& dir : dirs) {
      std::map<std::string, fs::path> by_stem;
      for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (tensor_file(e.path())) by_stem[e.path().stem().string()] = e.path();
      }
      std::vector<std::pair<const Value*, fs::path>> sample;
      for (const Value* v : inputs) {
        const std::string sanitized = mc_npy::output_file_names({v->name()}).at(0);
        const std::string stem = fs::path(sanitized).stem().string();
        auto it = by_stem.find(v->name());
        if (it == by_stem.end()) it = by_stem.find(stem);
        if (it == by_stem.end()) {
          throw data_error(dir.string(), "--calibrate: no file for input '" + v->name() + "' (" + stem + ".npy or .pb)");
        }
        sample.emplace_back(v, it->second);
      }
      plan.push_back(std::move(sample));
    }
  }
  if (plan.empty()) throw data_error(spec, "--calibrate: the folder holds no .npy or .pb files");
  const int64_t available = static_cast<int64_t>(plan.size());
  plan.resize(static_cast<std::size_t>(limit(available)));
  auto shared = std::make_shared<const decltype(plan)>(std::move(plan));
  d.count = static_cast<int64_t>(shared->size());
  d.load = [shared](int64_t i) {
    TensorMap m;
    for (const auto& [v, file] : shared->at(static_cast<std::size_t>(i))) m[v->name()] = read_sample(*v, file);
    return m;
  };
  d.source = spec + " (" + std::to_string(d.count) + " samples" +
             (d.count < available ? " of " + std::to_string(available) + ", --calibrate-max" : "") + ")";
  return d;
}

void run_stages_before_precision(Graph& g, const PassOptions& o) {
  PassOptions p = o;
  p.fp16 = false;
  p.int8 = false;
  p.calibration = nullptr;
  p.precision_report = nullptr;
  p.attention_report = nullptr;
  p.se_gate_report = nullptr;
  p.print_after.clear();
  for (const Stage& s : pipeline()) {
    if (std::string(s.name) == "precision") break;
    if (s.kind == StageKind::graph && !p.disabled.count(s.name)) run_graph_stage(g, p, s.name);
  }
}

CalibrationTable calibrate(const Graph& g, const PassOptions& o, const CalibrationData& data, CalibrationMethod method,
                           reference::Accumulation accumulation, const CalibrationProgress& progress) {
  const std::unique_ptr<Graph> c = g.clone();
  run_stages_before_precision(*c, o);
  CalibrationTable t;
  t.method = method;
  t.samples = data.size();
  t.source = data.source;
  // The float tensors, in graph order: inputs, then node outputs. Each gets a slot: the observer
  // finds its statistics by value, with no lookup by name per tensor.
  std::map<std::string, std::size_t> slot_of;
  std::unordered_map<const Value*, std::size_t> slot;
  for (const Value* v : c->inputs()) {
    if (!v->is_constant() && is_float(v->dtype()) && slot_of.emplace(v->name(), t.order.size()).second) {
      slot[v] = t.order.size();
      t.order.push_back(v->name());
    }
  }
  for (const auto& n : c->nodes()) {
    for (const Value* v : n->outputs()) {
      if (v && !v->is_constant() && is_float(v->dtype()) && slot_of.emplace(v->name(), t.order.size()).second) {
        slot[v] = t.order.size();
        t.order.push_back(v->name());
      }
    }
  }
  const int passes = method == CalibrationMethod::max ? 1 : 2;
  const int64_t count = data.size();
  // One sample at a time: read (or drawn), run, folded into the statistics, dropped.
  auto observe = [&](int pass, const std::function<void(std::size_t, const Tensor&)>& f) {
    for (int64_t i = 0; i < count; ++i) {
      const TensorMap s = data.sample(i);
      for (const Value* v : c->inputs()) {
        auto it = s.find(v->name());
        auto at = slot.find(v);
        if (it != s.end() && at != slot.end() && is_float(it->second.dtype())) f(at->second, it->second);
      }
      run_reference(
          *c, s,
          [&](const Node& n, const std::vector<Tensor>& outs) {
            for (int k = 0; k < n.num_outputs() && k < static_cast<int>(outs.size()); ++k) {
              if (!n.has_output(k)) continue;
              auto at = slot.find(&n.output(k));
              const Tensor& x = outs[static_cast<std::size_t>(k)];
              if (at != slot.end() && is_float(x.dtype())) f(at->second, x);
            }
          },
          accumulation);
      if (progress) progress(pass, passes, i + 1, count);
    }
  };
  std::vector<double> maxabs(t.order.size(), 0.0);
  observe(1, [&](std::size_t k, const Tensor& x) { maxabs[k] = std::max(maxabs[k], max_abs_finite(x)); });
  std::vector<AbsHistogram> hist;
  if (method != CalibrationMethod::max) {
    hist.resize(t.order.size());
    for (std::size_t k = 0; k < hist.size(); ++k) hist[k].range = maxabs[k];
    observe(2, [&](std::size_t k, const Tensor& x) { add_abs(hist[k], x); });
  }
  for (std::size_t k = 0; k < t.order.size(); ++k) {
    TensorCalibration tc;
    tc.max = maxabs[k];
    tc.threshold = method == CalibrationMethod::max ? tc.max : calibration_threshold(hist[k], method);
    t.tensors[t.order[k]] = tc;
  }
  return t;
}

}  // namespace modelc

// compiler/cli/commands/inspect.cpp — `modelc inspect MODEL.onnx [--verbose]`:
// inputs, outputs, opsets, op histogram, parameters, FLOPs per op family and
// every unsupported node with its reason. Exit 1 when a node is unsupported.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "ops/registry.h"

namespace modelc::cli {

namespace {

std::string thousands(int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return v < 0 ? "-" + s : s;
}

std::string scaled(double v, const char* unit) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int p = 0;
  while (v >= 1000.0 && p < 5) {
    v /= 1000.0;
    ++p;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, p == 0 ? "%.0f %s%s" : "%.2f %s%s", v, prefixes[p], unit);
  return buf;
}

std::string type_of(const Value& v) { return v.has_type() ? v.type_str() : "? (unknown: depends on an unsupported node)"; }

std::string pad(const std::string& s, std::size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

struct Inspect {
  std::string model;
  bool verbose = false;
  LoadFlags load;
};

int run_inspect(const Inspect& a) {
  LoadOptions o = load_options(a.load);
  o.collect_unsupported = true;
  const LoadResult r = load_onnx_model(a.model, o);
  std::cout << inspect_report(r, a.verbose);
  return r.unsupported.empty() ? 0 : 1;
}

}  // namespace

std::string inspect_report(const LoadResult& r, bool verbose) {
  const Graph& g = *r.graph;
  std::ostringstream os;

  os << "model    " << r.info.file << "\n";
  os << "         ";
  if (!r.info.producer_name.empty()) {
    os << "producer " << r.info.producer_name
       << (r.info.producer_version.empty() ? "" : " " + r.info.producer_version) << ", ";
  }
  os << "IR version " << r.info.ir_version << ", opset " << g.opset();
  for (const auto& [domain, version] : r.info.opset_imports) {
    if (!domain.empty()) os << ", " << domain << " " << version;
  }
  os << "\n         ONNX checker and shape inference: " << r.info.onnx_checks << "\n\n";

  std::size_t w = 8;
  for (const Value* v : g.inputs()) w = std::max(w, v->name().size() + 2);
  for (const Value* v : g.outputs()) w = std::max(w, v->name().size() + 2);
  os << "inputs\n";
  if (g.inputs().empty()) os << "  (none)\n";
  for (const Value* v : g.inputs()) os << "  " << pad(v->name(), w) << type_of(*v) << "\n";
  os << "outputs\n";
  for (const Value* v : g.outputs()) os << "  " << pad(v->name(), w) << type_of(*v) << "\n";

  // Op histogram, most frequent first.
  std::map<std::string, int> hist;
  for (const auto& n : g.nodes()) {
    hist[n->domain().empty() ? n->op() : n->domain() + "." + n->op()]++;
  }
  std::vector<std::pair<std::string, int>> ops(hist.begin(), hist.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  os << "\nops: " << g.nodes().size() << " nodes, " << ops.size() << " op types\n";
  std::size_t ow = 8;
  for (const auto& [op, count] : ops) ow = std::max(ow, op.size() + 2);
  for (const auto& [op, count] : ops) os << "  " << pad(op, ow) << count << "\n";

  // Parameters: the initializers (weights stored in the model).
  int64_t params = 0, bytes = 0, count = 0;
  for (const Value* v : g.values()) {
    if (!v->is_initializer() || v->producer()) continue;
    params += v->numel();
    bytes += static_cast<int64_t>(v->constant().nbytes());
    ++count;
  }
  os << "\nparameters: " << thousands(params) << " in " << count << " initializers, " << scaled(static_cast<double>(bytes), "B")
     << " (" << thousands(bytes) << " bytes)\n";

  // FLOPs per op family. Nodes folded to constants at compile time and nodes
  // with unknown shapes are not counted.
  std::map<std::string, int64_t> flops;
  int unknown = 0;
  for (const auto& up : g.nodes()) {
    const Node& n = *up;
    bool typed = true, folded = true;
    for (const Value* v : n.inputs()) typed = typed && (!v || v->has_type());
    for (const Value* v : n.outputs()) {
      typed = typed && (!v || v->has_type());
      folded = folded && (!v || v->is_constant());
    }
    if (!typed) {
      ++unknown;
      continue;
    }
    if (folded) continue;
    // The node's own domain: a plugin's op (--plugin) counts by its manifest's "flops".
    const ops::OpDef* def = ops::OpRegistry::instance().find(n.op(), n.opset(), n.domain());
    if (!def || n.domain() == ops::kModelcDomain) continue;
    int64_t f = 0;
    try {
      f = def->flops ? def->flops(n) : 0;
    } catch (const Error&) {
      ++unknown;
      continue;
    }
    flops[def->family.empty() ? "other" : def->family] += f;
  }
  int64_t total = 0;
  for (const auto& [family, f] : flops) total += f;
  std::vector<std::pair<std::string, int64_t>> fam(flops.begin(), flops.end());
  std::stable_sort(fam.begin(), fam.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  os << "\nFLOPs (one run; a multiply-add counts 2)\n";
  for (const auto& [family, f] : fam) {
    if (f == 0) continue;
    char pct[32];
    std::snprintf(pct, sizeof pct, "%5.1f%%", total ? 100.0 * static_cast<double>(f) / static_cast<double>(total) : 0.0);
    os << "  " << pad(family, 14) << pad(scaled(static_cast<double>(f), "FLOP"), 14) << pct << "   " << thousands(f) << "\n";
  }
  os << "  " << pad("total", 14) << pad(scaled(static_cast<double>(total), "FLOP"), 14) << "        " << thousands(total)
     << "\n";
  if (unknown) os << "  (" << unknown << " nodes with unknown shapes are not counted)\n";

  if (r.unsupported.empty()) {
    os << "\nunsupported nodes: none\n";
  } else {
    os << "\nunsupported nodes: " << r.unsupported.size() << "\n";
    std::map<std::string, const Node*> by_name;
    for (const auto& n : g.nodes()) by_name[n->name()] = n.get();
    for (const auto& u : r.unsupported) {
      auto it = by_name.find(u.node);
      os << "  node '" << u.node << "' (" << u.op;
      if (it != by_name.end() && it->second->opset() > 0) os << ", opset " << it->second->opset();
      os << "): " << u.reason << "\n";
      if (!u.hint.empty()) os << "    hint: " << u.hint << "\n";
    }
  }

  if (verbose) {
    std::string text = g.to_string();
    const std::string unknown_type = std::string(dtype_name(DType::undefined)) + "[]";
    for (std::size_t p; (p = text.find(unknown_type)) != std::string::npos;) text.replace(p, unknown_type.size(), "?");
    os << "\n" << text;
  }
  return os.str();
}

void register_inspect(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<Inspect>();
  CLI::App* sub = app.add_subcommand(
      "inspect", "show a model's inputs, outputs, ops, parameters, FLOPs and unsupported nodes (exit 1 if any)");
  sub->add_option("model", a->model, "the .onnx file")->required()->type_name("MODEL.onnx");
  sub->add_flag("-v,--verbose", a->verbose, "also print every node with its input and output shapes");
  add_load_flags(*sub, a->load);
  sub->callback([a, &run] {
    load_options(a->load);  // usage errors now, before any work
    run = [a] { return run_inspect(*a); };
  });
}

}  // namespace modelc::cli

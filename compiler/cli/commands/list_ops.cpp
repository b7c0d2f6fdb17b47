// compiler/cli/commands/list_ops.cpp — `modelc list-ops [--markdown]`: the op
// table from the registry. `modelc list-ops --markdown > docs/operators.md`
// generates the committed docs/operators.md (a test checks it is current).
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands/commands.h"
#include "ops/registry.h"
#include "plugin/plugin.h"

namespace modelc::cli {

namespace {

const char* precision_name(ops::Precision p) {
  switch (p) {
    case ops::Precision::unset: return "fp32";
    case ops::Precision::fp16: return "fp16";
    case ops::Precision::fp32_compute: return "fp32 compute";
    case ops::Precision::never: return "never";
  }
  return "?";
}

const char* fusion_name(ops::Fusion f) {
  switch (f) {
    case ops::Fusion::none: return "-";
    case ops::Fusion::producer: return "producer";
    case ops::Fusion::epilogue_activation: return "epilogue activation";
    case ops::Fusion::epilogue_binary: return "epilogue binary";
    case ops::Fusion::normalization: return "normalization";
  }
  return "?";
}

const char* layout_name(ops::Layout l) {
  switch (l) {
    case ops::Layout::unset: return "nchw";
    case ops::Layout::agnostic: return "agnostic";
    case ops::Layout::channels: return "channels";
  }
  return "?";
}

struct Row {
  std::string op, opsets, family, precision, fusion, layout, kernel, doc;
};

// One row per op; the facts are those of its newest form. Opsets list the
// range each form covers: "7-12, 13+".
std::vector<Row> rows() {
  std::map<std::string, std::vector<const ops::OpDef*>> by_op;  // all() is sorted by name, then since
  std::set<std::string> plugged;  // a plugin's ops of the default domain: listed apart (plugin_ops_text)
  for (const plugin::Plugin* p : plugin::loaded_plugins()) {
    for (const plugin::PluginOp& op : p->ops) {
      if (op.domain.empty()) plugged.insert(op.op);
    }
  }
  for (const ops::OpDef* d : ops::OpRegistry::instance().all()) {
    if (!plugged.count(d->name)) by_op[d->name].push_back(d);
  }
  std::vector<Row> r;
  for (const auto& [name, forms] : by_op) {
    Row row;
    row.op = name;
    for (std::size_t i = 0; i < forms.size(); ++i) {
      if (i) row.opsets += ", ";
      const int from = forms[i]->since;
      if (i + 1 == forms.size()) {
        row.opsets += std::to_string(from) + "+";
      } else {
        const int to = forms[i + 1]->since - 1;
        row.opsets += to == from ? std::to_string(from) : std::to_string(from) + "-" + std::to_string(to);
      }
    }
    const ops::OpDef& d = *forms.back();
    row.family = d.family.empty() ? "-" : d.family;
    row.precision = precision_name(d.precision);
    row.fusion = fusion_name(d.fusion);
    row.layout = layout_name(d.layout);
    for (const std::string& k : d.kernels) row.kernel += (row.kernel.empty() ? "" : ", ") + k;
    if (row.kernel.empty()) row.kernel = "-";
    row.doc = d.doc;
    r.push_back(row);
  }
  return r;
}

std::string md_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '|') r += '\\';
    r += c;
  }
  return r;
}

struct ListOps {
  bool markdown = false;
  std::vector<std::string> plugins;
};

// The loaded plugins' ops (`list-ops --plugin DIR`): op, plugin, precision, description.
std::string plugin_ops_text(bool markdown) {
  std::ostringstream os;
  const std::vector<const plugin::Plugin*> plugins = plugin::loaded_plugins();
  if (plugins.empty()) return "";
  os << (markdown ? "\n## Plugin operators\n\n| Operator | Plugin | Precision | Description |\n|---|---|---|---|\n"
                  : "\nplugin operators (--plugin)\n");
  for (const plugin::Plugin* p : plugins) {
    for (const plugin::PluginOp& op : p->ops) {
      const std::string precision = op.fp16 ? "fp16" : "fp32";
      if (markdown) {
        os << "| " << md_escape(op.qualified()) << " | " << md_escape(p->name) << " | " << precision << " | "
           << md_escape(op.doc) << " |\n";
      } else {
        os << "  " << op.qualified() << "  (plugin '" << p->name << "', " << op.header << ", " << precision << ")"
           << (op.doc.empty() ? "" : ": " + op.doc) << "\n";
      }
    }
  }
  return os.str();
}

}  // namespace

std::string list_ops_text(bool markdown) {
  const std::vector<Row> table = rows();
  std::size_t forms = ops::OpRegistry::instance().all().size();
  for (const plugin::Plugin* p : plugin::loaded_plugins()) {
    for (const plugin::PluginOp& op : p->ops) forms -= op.domain.empty() ? 1 : 0;  // listed apart, one form each
  }
  std::ostringstream os;
  const std::vector<std::string> head = {"Operator", "Opsets", "Family", "Precision", "Fusion", "Layout", "Kernel",
                                         "Description"};
  auto cells = [](const Row& r) {
    return std::vector<std::string>{r.op, r.opsets, r.family, r.precision, r.fusion, r.layout, r.kernel, r.doc};
  };
  if (markdown) {
    os << "# Supported operators\n\n"
       << "Generated from modelc's op registry by `modelc list-ops --markdown > docs/operators.md`;\n"
       << "do not edit by hand (a test checks that this file is current).\n\n"
       << table.size() << " operators in " << forms << " opset forms, default ONNX domain only. An operator\n"
       << "not listed here is unsupported: `modelc inspect MODEL.onnx` names every node that uses one.\n\n";
    os << "|";
    for (const auto& h : head) os << " " << h << " |";
    os << "\n|";
    for (std::size_t i = 0; i < head.size(); ++i) os << "---|";
    os << "\n";
    for (const Row& r : table) {
      os << "|";
      for (const auto& c : cells(r)) os << " " << md_escape(c) << " |";
      os << "\n";
    }
    os << "\n"
       << "- **Opsets**: the opset range each registered form of the operator covers; a model's\n"
       << "  default-domain opset picks the form.\n"
       << "- **Precision** (with `--fp16`): `fp16` computes and stores in FP16; `fp32 compute` stores\n"
       << "  FP16 and computes in FP32; `never` stays in its type (shape math, indices); `fp32` has no\n"
       << "  policy and stays FP32.\n"
       << "- **Fusion**: `producer` takes an epilogue (conv, gemm); `epilogue activation` and\n"
       << "  `epilogue binary` can run in a producer's epilogue; `normalization` folds into a\n"
       << "  producer's weights; `-` is never fused.\n"
       << "- **Layout**: `agnostic` follows its inputs; `channels` has an NHWC form; `nchw` forces\n"
       << "  NCHW around it.\n"
       << "- **Kernel**: the template family that runs it; `view` is a reinterpretation of the\n"
       << "  buffer, `none` is always folded at compile time.\n"
       << "\n"
       << "An operator modelc lacks (of any domain) can be added for one compile as a plugin: a manifest\n"
       << "that describes it and a CUDA header with its kernel (`--plugin DIR`, docs/PLUGINS.md). Plugin\n"
       << "ops are not listed here; they run on the `plugin` family.\n";
    os << plugin_ops_text(true);
    return os.str();
  }
  std::vector<std::size_t> w(head.size());
  for (std::size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
  for (const Row& r : table) {
    const auto c = cells(r);
    for (std::size_t i = 0; i + 1 < c.size(); ++i) w[i] = std::max(w[i], c[i].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    std::string s;
    for (std::size_t i = 0; i < c.size(); ++i) {
      s += c[i];
      if (i + 1 < c.size()) s += std::string(w[i] - c[i].size() + 2, ' ');
    }
    os << s << "\n";
  };
  line(head);
  for (const Row& r : table) line(cells(r));
  os << "\n" << table.size() << " operators, " << forms << " opset forms\n";
  os << plugin_ops_text(false);
  return os.str();
}

void register_list_ops(CLI::App& app, RunFn& run) {
  auto a = std::make_shared<ListOps>();
  CLI::App* sub = app.add_subcommand("list-ops", "list the supported operators (the op registry)");
  sub->add_flag("--markdown", a->markdown, "print docs/operators.md");
  sub->add_option("--plugin", a->plugins, "list a plugin's operators too, repeatable (docs/PLUGINS.md)")
      ->type_name("DIR")
      ->allow_extra_args(false);
  sub->callback([a, &run] {
    run = [a] {
      plugin::load_plugins(a->plugins);
      std::cout << list_ops_text(a->markdown);
      return 0;
    };
  });
}

}  // namespace modelc::cli

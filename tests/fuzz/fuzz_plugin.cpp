// tests/fuzz/fuzz_plugin.cpp — fuzz target: bytes -> a plugin folder's plugin.json (beside the
// headers of examples/plugins/example_ops) -> load_plugin (the manifest and its expressions, what
// `modelc list-ops --plugin DIR` reads) -> list_ops_text -> for each op a node of it in a graph:
// shape inference (attributes, checks, shape rule), the instantiation (template arguments,
// workspace) and the FLOPs rule. A modelc::Error that names the plugin's folder is a clear refusal;
// one that does not, one starting with "internal", any other exception, a crash or a sanitizer
// report is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "cli/commands/commands.h"
#include "ir/graph.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "plugin/plugin.h"
#include "support/error.h"

namespace fs = std::filesystem;

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_plugin: finding: %s\n", what.c_str());
  std::abort();
}

// The plugin folder: made once, the example's headers copied in; each input rewrites plugin.json.
// The folder is removed by the destructor of the same static that holds its path (a separate
// static object would be destroyed after the path's string when the path was made later).
struct PluginDir {
  std::string path;
  ~PluginDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::string& plugin_dir() {
  static const PluginDir dir{[] {
    std::string t = (fs::temp_directory_path() / "modelc_fuzz_plugin_XXXXXX").string();
    if (!::mkdtemp(t.data())) finding("cannot create a temporary folder");
    for (const auto& e : fs::directory_iterator(MODELC_FUZZ_PLUGIN_DIR)) {
      if (e.path().extension() == ".cuh") fs::copy_file(e.path(), fs::path(t) / e.path().filename());
    }
    return t;
  }()};
  return dir.path;
}

// The manifest being run: an error may quote it (the JSON parser shows what it last read), so
// "internal:" in an error's text is a finding only when the manifest does not hold it.
std::string current_manifest;

// An Error is a refusal when it names the plugin (its folder is in every path the loader names)
// and is not an internal one.
void check_refusal(const modelc::Error& e, const char* step) {
  const std::string what = e.what();
  const bool quoted = current_manifest.find("internal") != std::string::npos;
  if (e.message().rfind("internal", 0) == 0 || (!quoted && what.find("internal:") != std::string::npos)) {
    finding(std::string(step) + ": an internal error: " + what);
  }
  if (what.find(plugin_dir()) == std::string::npos) {
    finding(std::string(step) + ": an error that does not name the plugin's manifest: " + what);
  }
}

template <class F>
bool guarded(const char* step, F f) {
  try {
    f();
    return true;
  } catch (const modelc::Error& e) {
    check_refusal(e, step);
  } catch (const std::bad_alloc&) {
    finding(std::string(step) + ": std::bad_alloc: a size taken from the manifest was allocated before it was checked");
  } catch (const std::exception& e) {
    finding(std::string(step) + ": an exception that is not a modelc::Error: " + e.what());
  } catch (...) {
    finding(std::string(step) + ": an exception of an unknown type");
  }
  return false;
}

// A node of `op`: each input of the first element type its rule names (float32 where it names only
// other inputs) and shape [2, 3, 4]; each required attribute set to a plain value of its type.
void run_op(const modelc::plugin::PluginOp& op) {
  using namespace modelc;
  Graph g;
  g.set_opset(17);
  std::vector<Value*> ins, outs;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    DType t = DType::float32;
    for (const std::string& name : op.inputs[i].dtypes) {
      bool found = false;
      for (DType d : all_dtypes()) {
        if (name == dtype_name(d)) {
          t = d;
          found = true;
        }
      }
      if (found) break;
    }
    Value* v = g.add_value("in" + std::to_string(i));
    v->set_type(t, {2, 3, 4});
    g.add_input(v);
    ins.push_back(v);
  }
  for (std::size_t i = 0; i < op.outputs.size(); ++i) outs.push_back(g.add_value("out" + std::to_string(i)));
  Node* n = g.add_node(op.op, "fuzz_node", ins, outs);
  n->set_domain(op.domain);
  n->set_opset(1);
  using T = plugin::AttributeRule::Type;
  for (const plugin::AttributeRule& a : op.attributes) {
    if (a.default_value) continue;
    switch (a.type) {
      case T::int_: n->set_attr_int(a.name, 1); break;
      case T::float_: n->set_attr_float(a.name, 1.0); break;
      case T::string: n->set_attr_string(a.name, a.values.empty() ? "a" : a.values.front()); break;
      case T::ints: n->set_attr_ints(a.name, {1, 1}); break;
      case T::floats: n->set_attr_floats(a.name, {1.0, 1.0}); break;
    }
  }
  for (Value* v : outs) g.add_output(v);
  if (!guarded("shape inference", [&] { ops::infer_graph(g); })) return;
  guarded("instantiate", [&] { plugin::instantiate(op, *n); });
  // An op without a "flops" rule has no FlopsFn (OpDef::flops null: 0 FLOPs, as its callers read it).
  guarded("flops", [&] {
    const ops::OpDef& def = ops::lookup(*n);
    if (def.flops) def.flops(*n);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  current_manifest.assign(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream f(fs::path(plugin_dir()) / modelc::plugin::kManifestName, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!f) finding("cannot write the manifest");
  }
  const modelc::plugin::Plugin* p = nullptr;
  if (guarded("load_plugin", [&] { p = &modelc::plugin::load_plugin(plugin_dir()); })) {
    guarded("list-ops", [&] { modelc::cli::list_ops_text(false); });
    for (const modelc::plugin::PluginOp& op : p->ops) run_op(op);
  }
  modelc::plugin::unload_plugins();
  return 0;
}

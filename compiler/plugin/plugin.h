// compiler/plugin/plugin.h — custom operators: a folder with a manifest (plugin.json) and CUDA
// headers that implement ops modelc lacks, for one compile (`--plugin DIR`; docs/PLUGINS.md).
//
// The manifest is data the compiler reads without running any C++: per op its inputs (allowed
// element types), attributes (types, defaults, allowed values), checks, the output shape and dtype
// rule (expressions over the inputs' dims and the attributes, plugin/expr.h), the kernel template
// and header, and the workspace size. load_plugin() checks it all and adds each op to the op table
// (ops/registry.h) with:
//   validate   the attributes' kinds, required ones, allowed values
//   infer      the inputs' element types and the checks, then each output's dtype and shape
//   eval       the plugin's own kernel run on the host emulation (plugin/runner.h): the reference
//   kernels    {"plugin"}: the plugin family (schedule/plugin_family.cpp, codegen/families/plugin.cpp)
// Every error names the plugin and its manifest; errors about a node also name the node.
//
// The kernel contract is codegen/launch.h's, with the instantiation fixed by the manifest:
//   KERNEL<mc::plugin::Tensor<T, dims...> per input, then per output, template_args...>
// and the Params fields set per launch: one pointer per input (const T*) and output (T*), named as
// the manifest names them, one field per attribute (float, int64_t, a string's index as int64_t,
// lists element by element), and `workspace` (void*) when the op has one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "plugin/expr.h"

namespace modelc::plugin {

/// The manifest's file name in a plugin folder.
inline constexpr const char* kManifestName = "plugin.json";

struct Plugin;

/// \brief An input: its Params field name and the element types it takes.
struct InputRule {
  std::string name;
  /// Allowed element types; an entry naming an earlier input means "that input's type".
  std::vector<std::string> dtypes;
};

/// \brief An output: its Params field name, its element type (a type or an input's name) and its
/// shape (an input's name: that input's shape; else one item per dim, a slice giving several).
struct OutputRule {
  std::string name;
  std::string dtype;
  std::string shape_like;     ///< an input's name, or "" when `shape` holds the dims
  std::vector<Expr> shape;
};

/// \brief An attribute the op declares (any other is refused).
struct AttributeRule {
  enum class Type { int_, float_, string, ints, floats };
  std::string name;
  Type type = Type::int_;
  std::optional<Attribute> default_value;   ///< none: required
  std::vector<std::string> values;          ///< a string's allowed values (passed as their index)
  std::optional<Expr> length;               ///< a list's required length
  static const char* type_name(Type t);
};

/// \brief A condition every node must meet, and what to say when it does not.
struct Check {
  Expr expr;
  std::string message;
};

/// \brief One op of a plugin.
struct PluginOp {
  const Plugin* plugin = nullptr;
  std::string op, domain, doc;
  std::string header;  ///< the header that defines the kernel, relative to the plugin folder
  std::string kernel;  ///< the kernel template's qualified name
  std::vector<InputRule> inputs;
  std::vector<OutputRule> outputs;
  std::vector<AttributeRule> attributes;
  std::vector<Check> checks;
  std::vector<Expr> template_args;
  std::optional<Expr> workspace;  ///< bytes of scratch in the arena while the kernel runs
  std::optional<Expr> flops;      ///< for inspect and the cost model's estimate
  /// Under --fp16 the op may store in float16 (ops::Precision::fp16): its float32 inputs become
  /// float16 where its dtypes allow it (the precision pass tries its rules on float16 first).
  bool fp16 = false;

  /// "com.example.ScaledSoftplus" ("ScaledSoftplus" in the default domain).
  std::string qualified() const;
  /// "plugin 'example_ops' (DIR/plugin.json), op com.example.ScaledSoftplus" for messages.
  std::string where() const;
};

/// \brief A loaded plugin.
struct Plugin {
  std::string name;      ///< a C identifier: the emitted folder keeps its headers in kernels/plugins/NAME/
  std::string dir;       ///< the folder, as given
  std::string manifest;  ///< the manifest's path, as given
  /// Every header of the plugin (the ops' and "headers"): path relative to the folder -> contents.
  std::map<std::string, std::string> headers;
  std::vector<PluginOp> ops;
  /// "plugin 'example_ops' (DIR/plugin.json)".
  std::string where() const;
};

/// \brief Reads a plugin (a folder holding plugin.json, or the manifest file itself), checks it and
/// adds its ops to the op table for the rest of the process. Loading the same manifest again does
/// nothing. Throws Error naming the manifest (and the op and field at fault); nothing is
/// registered when it throws.
const Plugin& load_plugin(const std::string& path);
/// load_plugin for each path, in order.
void load_plugins(const std::vector<std::string>& paths);
/// Every loaded plugin, in load order.
std::vector<const Plugin*> loaded_plugins();
/// \brief Removes every loaded plugin's ops from the op table and forgets the plugins (tests; a
/// compile keeps its plugins until it exits).
void unload_plugins();

/// The plugin op that node `n` runs; null when its op is not a plugin's.
const PluginOp* plugin_op(const Node& n);
/// plugin_op(), throwing an internal Error naming the node when there is none.
const PluginOp& plugin_op_of(const Node& n);

/// \brief The kernel of one node, as both the emitted code and the reference run instantiate it.
struct Instance {
  std::string type;  ///< KERNEL<mc::plugin::Tensor<...>, ..., template args>
  /// The Params fields set from the attributes: (field, C++ literal), in the manifest's order.
  std::vector<std::pair<std::string, std::string>> attributes;
  /// File-scope checks the instantiation must pass (static_asserts: each list attribute fits its
  /// Params array).
  std::string declarations;
  int64_t workspace_bytes = 0;  ///< rounded up to 16 bytes
};
/// The Instance of `n` (shapes and types from the node's values). Throws Error naming the plugin.
Instance instantiate(const PluginOp& op, const Node& n);

/// C++ element type of a dtype in plugin kernels ("float", "__half", "int64_t", ...); Error for a
/// type plugins do not take.
std::string plugin_ctype(DType t);
/// The emitted folder's path of a plugin header: "plugins/NAME/FILE" (under kernels/).
std::string emitted_header(const Plugin& p, const std::string& header);

}  // namespace modelc::plugin

// compiler/plugin: the manifests' expression language, reading a plugin (and every way a manifest
// can be wrong), its ops in the op table (validate, shape rule, checks), the instantiation both the
// emitted code and the reference run use, and the emitted folder (headers copied, launch, report).
// The reference run on the emulation and the whole CLI are tests/plugins/plugin_e2e.py's.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "codegen/emitter.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "plugin/expr.h"
#include "plugin/plugin.h"
#include "plugin/runner.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::plugin;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// CHECK that `text` holds `part`, showing the text when it does not.
#define CHECK_HAS(text, part)        \
  do {                               \
    const std::string text_ = (text); \
    INFO(text_);                     \
    CHECK(has(text_, part));         \
  } while (0)

// Dims and attributes for the expression tests.
struct TestScope : Scope {
  std::map<std::string, Shape> tensors;
  std::map<std::string, Number> scalars;
  std::map<std::string, std::vector<Number>> lists;
  const Shape* tensor(const std::string& n) const override {
    auto it = tensors.find(n);
    return it == tensors.end() ? nullptr : &it->second;
  }
  int64_t itemsize(const std::string& n) const override { return tensors.count(n) ? 4 : 0; }
  bool scalar(const std::string& n, Number& out) const override {
    auto it = scalars.find(n);
    if (it == scalars.end()) return false;
    out = it->second;
    return true;
  }
  bool list(const std::string& n, std::vector<Number>& out) const override {
    auto it = lists.find(n);
    if (it == lists.end()) return false;
    out = it->second;
    return true;
  }
};

TestScope scope() {
  TestScope s;
  s.tensors["X"] = {2, 3, 5, 7};
  s.tensors["W"] = {4};
  s.scalars["alpha"] = Number::real(0.5);
  s.scalars["k"] = Number::integer(3);
  s.lists["pads"] = {Number::integer(1), Number::integer(2)};
  return s;
}

Names names() {
  Names n;
  n.tensors = {"X", "W"};
  n.scalars = {"alpha", "k"};
  n.lists = {"pads"};
  return n;
}

Number eval(const std::string& text) { return Expr::parse(text, names()).eval(scope()); }
int64_t ival(const std::string& text) {
  const Number v = eval(text);
  REQUIRE_MESSAGE(!v.is_float, text);
  return v.i;
}
std::string parse_error(const std::string& text, bool slice = false) {
  try {
    Expr::parse(text, names(), slice);
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}
std::string eval_error(const std::string& text) {
  try {
    eval(text);
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

// Unloads every plugin at the end of a test (the op table is the process's).
struct Unload {
  ~Unload() { unload_plugins(); }
};

// A plugin folder in a temporary folder: plugin.json and headers.
struct PluginDir {
  test::TempDir dir;
  std::string path() const { return dir.str(); }
  void manifest(const std::string& text) const { test::write_bytes(dir / "plugin.json", text); }
  void header(const std::string& name, const std::string& text) const { test::write_bytes(dir / name, text); }
};

// A manifest with one op: `op_fields` are its fields after "op" (JSON text).
std::string one_op(const std::string& op, const std::string& op_fields, const std::string& name = "test_ops") {
  return R"({"modelc_plugin": 1, "name": ")" + name + R"(", "ops": [{"op": ")" + op + "\", " + op_fields + "}]}";
}

const char* kScaleOp =
    R"j("domain": "com.test", "header": "scale.cuh", "kernel": "test::Scale",
       "inputs": [{"name": "x", "dtypes": ["float32", "float16"]}, {"name": "w", "dtypes": ["x"]}],
       "attributes": [{"name": "alpha", "type": "float", "default": 1.0},
                      {"name": "mode", "type": "string", "values": ["plain", "square"], "default": "plain"},
                      {"name": "k", "type": "int"},
                      {"name": "pads", "type": "ints", "default": [0, 0], "length": "rank(x) - 2"}],
       "checks": [{"expr": "w[0] == x[1]", "message": "w has one value per channel"}, "k >= 1"],
       "outputs": [{"name": "y", "dtype": "x", "shape": ["x[0]", "x[1] * k", "x[2:]"]},
                   {"name": "count", "dtype": "int64", "shape": []}],
       "template_args": ["k", "rank(x)"],
       "workspace": "numel(x) * itemsize(x) + 1",
       "flops": "2 * numel(y)")j";

// x [N, C, H, W] and w [C] (dtype t) -> com.test.Scale -> y, count; infer_graph run.
struct ScaleGraph {
  Graph g;
  Node* n = nullptr;
  explicit ScaleGraph(Shape xs = {1, 4, 3, 5}, int64_t k = 2, DType t = DType::float32) {
    g.set_opset(17);
    Value* x = g.add_value("x");
    x->set_type(t, xs);
    g.add_input(x);
    Value* w = g.add_value("w");
    w->set_type(t, {xs.size() > 1 ? xs[1] : 1});
    g.add_input(w);
    Value* y = g.add_value("y");
    Value* c = g.add_value("count");
    n = g.add_node("Scale", "scale_node", {x, w}, {y, c});
    n->set_domain("com.test");
    n->set_opset(1);
    n->set_attr_int("k", k);
    g.add_output(y);
    g.add_output(c);
  }
};

std::string infer_error(ScaleGraph& s) {
  try {
    ops::infer_graph(s.g);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string load_error(const PluginDir& p) {
  try {
    load_plugin(p.path());
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("plugin expressions: numbers, dims, attributes, functions, C precedence") {
  CHECK(ival("1 + 2 * 3") == 7);
  CHECK(ival("(1 + 2) * 3") == 9);
  CHECK(ival("X[0] * X[-1]") == 14);
  CHECK(ival("rank(X) + numel(W) + itemsize(X)") == 12);
  CHECK(ival("numel(X)") == 210);
  CHECK(ival("k * pads[1] + len(pads)") == 8);
  CHECK(ival("pads[-1]") == 2);
  CHECK(ival("7 / 2") == 3);
  CHECK(ival("-7 / 2") == -3);  // toward zero, as C
  CHECK(ival("-7 % 3") == -1);
  CHECK(ival("ceil_div(X[3], 2)") == 4);
  CHECK(ival("min(X[1], X[2], 4)") == 3);
  CHECK(ival("max(k, 10)") == 10);
  CHECK(ival("X[1] == 3 && k != 2 || 0") == 1);
  CHECK(ival("!(k > 3) && k >= 3 && k <= 3 && k < 4") == 1);
  CHECK(ival("2 < 1 || 1 > 2") == 0);
  CHECK(ival("--3") == 3);
  const Number a = eval("alpha * 4");
  CHECK(a.is_float);
  CHECK(a.f == 2.0);
  CHECK(ival("alpha > 0.25") == 1);
  CHECK(eval("1e3").as_double() == 1000.0);
  const Expr slice = Expr::parse("X[1:]", names(), true);
  CHECK(slice.is_slice());
  CHECK(slice.eval_dims(scope(), "a dim") == std::vector<int64_t>{3, 5, 7});
  CHECK(Expr::parse("X[:-1]", names(), true).eval_dims(scope(), "") == std::vector<int64_t>{2, 3, 5});
  CHECK(Expr::parse("X[:]", names(), true).eval_dims(scope(), "") == std::vector<int64_t>{2, 3, 5, 7});
  CHECK(Expr::parse("X[1:k]", names(), true).eval_dims(scope(), "") == std::vector<int64_t>{3, 5});
  CHECK(Expr::parse("X[9:]", names(), true).eval_dims(scope(), "").empty());  // bounds clamp, as Python's
  CHECK(Expr::parse("X[2]", names(), true).eval_dims(scope(), "") == std::vector<int64_t>{5});
}

TEST_CASE("plugin expressions: syntax and name errors say where, evaluation errors say what") {
  CHECK_HAS(parse_error("1 +"), "the expression ends early at column 4 of '1 +'");
  CHECK_HAS(parse_error("X[0"), "expected ']'");
  CHECK_HAS(parse_error("k $ 2"), "unexpected character '$' at column 3");
  CHECK_HAS(parse_error("(k"), "expected ')'");
  CHECK_HAS(parse_error("k k"), "unexpected 'k' at column 3");
  CHECK_HAS(parse_error(""), "empty");
  CHECK_HAS(parse_error("2x"), "a malformed number");
  CHECK_HAS(parse_error("99999999999999999999"), "too large");
  CHECK_HAS(parse_error("X + 1"), "'X' is a tensor: use X[i], rank(X)");
  CHECK_HAS(parse_error("pads + 1"), "'pads' is a list attribute");
  CHECK_HAS(parse_error("beta"), "'beta' is neither an input nor an attribute");
  CHECK_HAS(parse_error("k[0]"), "indexes neither");
  CHECK_HAS(parse_error("rank(alpha)"), "rank() takes one input's name");
  CHECK_HAS(parse_error("len(X)"), "len() takes one list attribute's name");
  CHECK_HAS(parse_error("sqrt(4)"), "unknown function 'sqrt'");
  CHECK_HAS(parse_error("X[1:]"), "a slice X[a:b] stands only as a whole item");
  CHECK_HAS(parse_error("X[1:] + 1", true), "a slice X[a:b] stands only as a whole item");
  CHECK_HAS(parse_error("k[1:]", true), "slices the dims of an input");
  CHECK_HAS(eval_error("X[4]"), "input 'X' has rank 4, no dim 4");
  CHECK_HAS(eval_error("X[-5]"), "no dim -5");
  CHECK_HAS(eval_error("pads[2]"), "attribute 'pads' has 2 entries, no index 2");
  CHECK_HAS(eval_error("k / (k - 3)"), "division by zero (in 'k / (k - 3)')");
  CHECK_HAS(eval_error("k % 0"), "% by zero");
  CHECK_HAS(eval_error("9223372036854775807 + k"), "overflows int64");
  CHECK_HAS(eval_error("X[alpha]"), "an index must be an integer, got 0.5");
  CHECK_HAS(eval_error("alpha % 2"), "% takes integers");
  CHECK_HAS(eval_error("ceil_div(k, 0)"), "ceil_div by 0");
  CHECK_THROWS_WITH_AS(Expr::parse("alpha", names()).eval_int(scope(), "the workspace size"),
                       doctest::Contains("the workspace size must be an integer"), Error);
}

TEST_CASE("plugin: a manifest's op joins the op table: validate, checks, shape rule, flops; unloaded after") {
  Unload unload;
  PluginDir p;
  p.manifest(one_op("Scale", kScaleOp));
  p.header("scale.cuh", "#pragma once\n");
  const Plugin& plugin = load_plugin(p.path());
  CHECK(plugin.name == "test_ops");
  CHECK(plugin.headers.count("scale.cuh"));
  CHECK(&load_plugin(p.path() + "/plugin.json") == &plugin);  // the same manifest again: nothing new
  REQUIRE(ops::OpRegistry::instance().knows("Scale", "com.test"));
  CHECK_FALSE(ops::OpRegistry::instance().knows("Scale", ""));

  ScaleGraph s;
  ops::infer_graph(s.g);
  CHECK(s.n->output(0).dtype() == DType::float32);
  CHECK(s.n->output(0).shape() == Shape{1, 8, 3, 5});
  CHECK(s.n->output(1).dtype() == DType::int64);
  CHECK(s.n->output(1).shape().empty());
  REQUIRE(plugin_op(*s.n) != nullptr);
  CHECK(plugin_op(*s.n)->op == "Scale");
  const ops::OpDef& def = ops::lookup(*s.n);
  CHECK(def.kernels == std::vector<std::string>{"plugin"});
  CHECK(def.flops(*s.n) == 2 * 8 * 15);
  CHECK_HAS(def.doc, "plugin 'test_ops'");

  const Instance inst = instantiate(*plugin_op(*s.n), *s.n);
  CHECK(inst.type ==
        "test::Scale<mc::plugin::Tensor<float, 1, 4, 3, 5>, mc::plugin::Tensor<float, 4>, "
        "mc::plugin::Tensor<float, 1, 8, 3, 5>, mc::plugin::Tensor<int64_t>, 2, 4>");
  const std::vector<std::pair<std::string, std::string>> attrs = {
      {"alpha", "1.0f"}, {"mode", "0"}, {"k", "2"}, {"pads[0]", "0"}, {"pads[1]", "0"}};
  CHECK(inst.attributes == attrs);
  CHECK_HAS(inst.declarations, "static_assert(mc::plugin::capacity<decltype(test::Scale<");
  CHECK_HAS(inst.declarations, "::Params::pads)>() >= 2");
  CHECK(inst.workspace_bytes == 240 + 16);  // 60 floats + 1 byte, rounded up to 16

  // Attribute values reach the instance; float16 takes the w input of x's type.
  ScaleGraph h({2, 3, 4, 4}, 1, DType::float16);
  h.n->set_attr_float("alpha", -0.1);
  h.n->set_attr_string("mode", "square");
  h.n->set_attr_ints("pads", {1, -2});
  ops::infer_graph(h.g);
  const Instance hi = instantiate(*plugin_op(*h.n), *h.n);
  CHECK_HAS(hi.type, "mc::plugin::Tensor<__half, 2, 3, 4, 4>");
  const std::vector<std::pair<std::string, std::string>> hattrs = {
      {"alpha", "-0.100000001f"}, {"mode", "1"}, {"k", "1"}, {"pads[0]", "1"}, {"pads[1]", "-2"}};
  CHECK(hi.attributes == hattrs);

  unload_plugins();
  CHECK_FALSE(ops::OpRegistry::instance().knows("Scale", "com.test"));
  ScaleGraph after;
  CHECK_HAS(infer_error(after), "operator domain 'com.test' is not supported");
  CHECK_HAS(infer_error(after), "--plugin DIR");
}

TEST_CASE("plugin: a node that breaks the op's rules is an error naming the node and the plugin") {
  Unload unload;
  PluginDir p;
  p.manifest(one_op("Scale", kScaleOp));
  p.header("scale.cuh", "#pragma once\n");
  load_plugin(p.path());
  const std::string where = "plugin 'test_ops' (" + p.path() + "/plugin.json), op com.test.Scale";
  {
    ScaleGraph s;
    s.n->remove_attr("k");
    const std::string e = infer_error(s);
    CHECK_HAS(e, "node 'scale_node' (Scale, opset 1)");
    CHECK_HAS(e, where + ": the required attribute 'k' (int) is missing");
  }
  {
    ScaleGraph s;
    s.n->set_attr_float("k", 2.0);
    CHECK_HAS(infer_error(s), "attribute 'k' is float, the plugin declares int");
  }
  {
    ScaleGraph s;
    s.n->set_attr_string("mode", "cube");
    CHECK_HAS(infer_error(s), "attribute 'mode' is 'cube', not one of 'plain', 'square'");
  }
  {
    ScaleGraph s;
    s.n->set_attr_int("other", 1);
    CHECK_HAS(infer_error(s), "attribute 'other' is not supported by Scale");
  }
  {
    ScaleGraph s({1, 4, 3, 5}, 0);
    CHECK_HAS(infer_error(s), where + ": check 'k >= 1' fails");
  }
  {
    ScaleGraph s;
    s.g.inputs()[1]->set_type(DType::float32, {5});
    CHECK_HAS(infer_error(s), "check 'w[0] == x[1]' fails: w has one value per channel");
  }
  {
    ScaleGraph s;
    s.g.inputs()[1]->set_type(DType::float16, {4});
    CHECK_HAS(infer_error(s), "input 1 ('w') is float16, the plugin takes float32 (as x)");
  }
  {
    ScaleGraph s({1, 4, 3, 5}, 2, DType::int64);
    CHECK_HAS(infer_error(s), "input 0 ('x') is int64, the plugin takes float32, float16");
  }
  {
    ScaleGraph s({1, 4, 3}, 2);
    s.n->set_attr_ints("pads", {1, 1});
    CHECK_HAS(infer_error(s), "attribute 'pads' has 2 values, the plugin requires 1 ('rank(x) - 2')");
  }
  {
    ScaleGraph s({4}, 2);  // x[1] does not exist: the check says so
    const std::string e = infer_error(s);
    CHECK_HAS(e, "check 'w[0] == x[1]': input 'x' has rank 1, no dim 1");
  }
}

TEST_CASE("plugin: a shape rule that fails names the output and the item") {
  Unload unload;
  PluginDir p;
  p.manifest(one_op("Pick", R"("domain": "com.test", "header": "h.cuh", "kernel": "t::Pick",
      "inputs": [{"name": "x", "dtypes": ["float32"]}],
      "outputs": [{"name": "y", "dtype": "float32", "shape": ["x[0] - 3", "x[2]"]}])"));
  p.header("h.cuh", "");
  load_plugin(p.path());
  auto graph = [](Shape xs) {
    auto g = std::make_unique<Graph>();
    g->set_opset(17);
    Value* x = g->add_value("x");
    x->set_type(DType::float32, xs);
    g->add_input(x);
    Value* y = g->add_value("y");
    Node* n = g->add_node("Pick", "pick", {x}, {y});
    n->set_domain("com.test");
    g->add_output(y);
    return g;
  };
  auto error = [&](Shape xs) {
    auto g = graph(xs);
    try {
      ops::infer_graph(*g);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_HAS(error({2, 4}), "node 'pick' (Pick, opset 17): plugin 'test_ops'");
  CHECK_HAS(error({5, 4}), "the shape rule of output 'y', item 1 ('x[2]'): input 'x' has rank 2, no dim 2");
  CHECK_HAS(error({2, 4, 6}), "the shape rule of output 'y' gives the dim -1 (item 0, 'x[0] - 3')");
  auto ok = graph({5, 4, 6});
  ops::infer_graph(*ok);
  CHECK(ok->outputs()[0]->shape() == Shape{2, 6});
}

TEST_CASE("plugin: every way a manifest can be wrong is an error naming the manifest and the field") {
  Unload unload;
  auto error_of = [](const std::string& manifest, const std::map<std::string, std::string>& headers = {{"h.cuh", ""}}) {
    PluginDir p;
    p.manifest(manifest);
    for (const auto& [name, text] : headers) p.header(name, text);
    const std::string e = load_error(p);
    const bool names_a_file = has(e, "file '" + p.path());
    CHECK_MESSAGE(names_a_file, e);
    return e;
  };
  const std::string op = R"("domain": "com.test", "header": "h.cuh", "kernel": "t::K",
      "inputs": [{"name": "x", "dtypes": ["float32"]}], "outputs": [{"name": "y", "dtype": "x", "shape": "x"}])";
  CHECK_HAS(error_of("{\"modelc_plugin\": 1,\n \"name\": \"a\",\n \"ops\": [}"), "not valid JSON (line 3, column 10)");
  CHECK_HAS(error_of("[1, 2]"), "expected an object");
  CHECK_HAS(error_of(R"({"name": "a", "ops": []})"), "\"modelc_plugin\": is required");
  CHECK_HAS(error_of(R"({"modelc_plugin": 2, "name": "a", "ops": []})"), "must be 1");
  CHECK_HAS(error_of(R"({"modelc_plugin": 1, "name": "a-b", "ops": []})"), "'a-b' is not a C identifier");
  CHECK_HAS(error_of(R"({"modelc_plugin": 1, "name": "a", "ops": []})"), "\"ops\": is empty");
  CHECK_HAS(error_of(R"({"modelc_plugin": 1, "name": "a", "extra": 1, "ops": [{"op": "K", )" + op + "}]}"),
            "\"extra\": is not a field");
  CHECK_HAS(error_of(one_op("K", op + R"(, "workspce": 4)")), "ops[0] (K): \"workspce\": is not a field of this object");
  CHECK_HAS(error_of(one_op("K", op + R"(, "domain2": "x")")), "is not a field");
  CHECK_HAS(error_of(one_op("K-1", op)), "'K-1' is not an operator name");
  CHECK_HAS(error_of(one_op("K", R"("domain": "modelc", "header": "h.cuh", "kernel": "t::K", "inputs": [], "outputs": [])")),
            "the 'modelc' domain is modelc's own");
  CHECK_HAS(error_of(one_op("K", R"("header": "../h.cuh", "kernel": "t::K", "inputs": [], "outputs": [])")),
            "'../h.cuh' is not a path inside the plugin's folder");
  CHECK_HAS(error_of(one_op("K", R"("header": "/etc/passwd", "kernel": "t::K", "inputs": [], "outputs": [])")),
            "is not a path inside the plugin's folder");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K<int>", "inputs": [], "outputs": [])")),
            "'t::K<int>' is not a class template's name");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [], "outputs": [])")),
            "an op has at least one output");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["complex64"]}],
                                    "outputs": [{"name": "y", "dtype": "x", "shape": "x"}])")),
            "'complex64' is neither an element type nor an earlier input");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["bfloat16"]}],
                                    "outputs": [{"name": "y", "dtype": "x", "shape": "x"}])")),
            "plugin kernels do not take bfloat16 tensors");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": []}],
                                    "outputs": [{"name": "y", "dtype": "x", "shape": "x"}])")),
            "\"dtypes\": is empty");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["float32"]}],
                                    "outputs": [{"name": "x", "dtype": "x", "shape": "x"}])")),
            "'x' names two inputs, outputs or attributes");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "workspace", "dtypes": ["float32"]}],
                                    "outputs": [{"name": "y", "dtype": "float32", "shape": []}])")),
            "'workspace' cannot name a Params field");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["float32"]}],
                                    "outputs": [{"name": "y", "dtype": "z", "shape": "x"}])")),
            "\"dtype\": 'z' is neither an element type nor an input");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["float32"]}],
                                    "outputs": [{"name": "y", "dtype": "x", "shape": "z"}])")),
            "'z' is not an input");
  CHECK_HAS(error_of(one_op("K", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["float32"]}],
                                    "outputs": [{"name": "y", "dtype": "x", "shape": ["x[0] +"]}])")),
            "outputs[0]: \"shape\"[0]: the expression ends early at column 7 of 'x[0] +'");
  CHECK_HAS(error_of(one_op("K", op + R"(, "checks": ["y[0] > 1"])")), "'y[...]' indexes neither");
  CHECK_HAS(error_of(one_op("K", op + R"j(, "workspace": "numel(y) * 4 + alpha")j")), "'alpha' is neither an input");
  CHECK_HAS(error_of(one_op("K", op + R"(, "attributes": [{"name": "m", "type": "string"}])")),
            "\"values\": is required for a string attribute");
  CHECK_HAS(error_of(one_op("K", op + R"(, "attributes": [{"name": "m", "type": "str"}])")), "'str' is not an attribute type");
  CHECK_HAS(error_of(one_op("K", op + R"(, "attributes": [{"name": "m", "type": "int", "default": 1.5}])")),
            "\"default\": expected an integer");
  CHECK_HAS(error_of(one_op("K", op + R"(, "attributes": [{"name": "m", "type": "string", "values": ["a"], "default": "b"}])")),
            "'b' is not one of its values");
  CHECK_HAS(error_of(one_op("K", op + R"(, "attributes": [{"name": "m", "type": "int", "length": 2}])")),
            "only a list attribute (ints, floats) has a length");
  CHECK_HAS(error_of(one_op("K", R"("header": "missing.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["float32"]}],
                                    "outputs": [{"name": "y", "dtype": "x", "shape": "x"}])")),
            "missing.cuh': the plugin header does not exist");
  CHECK_HAS(error_of(one_op("Relu", R"("header": "h.cuh", "kernel": "t::K", "inputs": [{"name": "x", "dtypes": ["float32"]}],
                                       "outputs": [{"name": "y", "dtype": "x", "shape": "x"}])")),
            "the op Relu is built into modelc (default ONNX domain): a plugin cannot replace it");
  CHECK_HAS(error_of(R"({"modelc_plugin": 1, "name": "a", "ops": [{"op": "K", )" + op + R"(}, {"op": "K", )" + op + "}]}"),
            "the op com.test.K is defined twice");
  // Nothing of a plugin that failed is registered.
  CHECK_FALSE(ops::OpRegistry::instance().knows("K", "com.test"));
  CHECK(loaded_plugins().empty());

  // Missing, a file that is not a manifest, and two plugins of one name or one op.
  CHECK_THROWS_WITH_AS(load_plugin("/nonexistent/plugin"), doctest::Contains("the plugin does not exist"), Error);
  PluginDir empty;
  CHECK_HAS(load_error(empty), "plugin.json': the plugin's manifest does not exist");
  PluginDir first, second, third;
  first.manifest(R"({"modelc_plugin": 1, "name": "same", "ops": [{"op": "K", )" + op + "}]}");
  first.header("h.cuh", "");
  second.manifest(R"({"modelc_plugin": 1, "name": "same", "ops": [{"op": "L", )" + op + "}]}");
  second.header("h.cuh", "");
  third.manifest(R"({"modelc_plugin": 1, "name": "other", "ops": [{"op": "K", )" + op + "}]}");
  third.header("h.cuh", "");
  load_plugin(first.path());
  CHECK_HAS(load_error(second), "'same' is the name of another plugin already loaded");
  CHECK_HAS(load_error(third), "the op com.test.K is defined by plugin 'same'");
}

TEST_CASE("plugin: the emitted folder copies the headers, launches the kernel and reports it") {
  Unload unload;
  PluginDir p;
  p.manifest(one_op("Scale", kScaleOp));
  p.header("scale.cuh",
           "#pragma once\n#include \"plugin.cuh\"\n#include \"tensor_index.cuh\"\n#include \"detail/helper.cuh\"\n");
  fs::create_directories(fs::path(p.path()) / "detail");
  p.header("detail/helper.cuh", "#pragma once\n");
  // "headers": the files the op's header includes, copied beside it.
  std::string manifest = one_op("Scale", kScaleOp);
  manifest.insert(manifest.find("\"ops\""), "\"headers\": [\"detail/helper.cuh\"], ");
  p.manifest(manifest);
  load_plugin(p.path());

  ScaleGraph s;
  s.n->set_attr_ints("pads", {3, 4});
  ops::infer_graph(s.g);
  LowerOptions o;
  o.name = "plugged";
  o.archs = {"sm_75"};
  const Schedule sch = lower(s.g, o);
  REQUIRE(sch.kernels.size() == 1);
  const Kernel& k = sch.kernels[0];
  CHECK(k.family_name() == "plugin");
  CHECK(k.workspace_bytes == 256);
  CHECK(k.workspace.dtype != DType::undefined);
  CHECK_HAS(k.note, "plugin 'test_ops' (scale.cuh): test::Scale; workspace 256 bytes");

  EmitOptions eo;
  eo.source = "plugged.onnx";
  eo.format = false;
  const auto files = render_model(sch, eo);
  REQUIRE(files.count("kernels/plugins/test_ops/scale.cuh"));
  CHECK(files.at("kernels/plugins/test_ops/scale.cuh") == test::read_bytes(p.dir / "scale.cuh"));
  CHECK(files.count("kernels/plugins/test_ops/detail/helper.cuh"));
  CHECK(files.count("kernels/plugin.cuh"));
  CHECK(files.count("kernels/tensor_index.cuh"));  // a template the plugin's header includes
  const std::string& cu = files.at("plugged.cu");
  CHECK_HAS(cu, "#include \"kernels/plugins/test_ops/scale.cuh\"");
  CHECK_HAS(cu, "using plugged_k0_t = test::Scale<mc::plugin::Tensor<float, 1, 4, 3, 5>");
  CHECK_HAS(cu, "p.x = static_cast<const float*>(inputs[0]);");
  CHECK_HAS(cu, "p.w = static_cast<const float*>(inputs[1]);");
  CHECK_HAS(cu, "p.y = static_cast<float*>(outputs[0]);");
  CHECK_HAS(cu, "p.count = static_cast<int64_t*>(outputs[1]);");
  CHECK_HAS(cu, "p.pads[1] = 4;");
  CHECK_HAS(cu, "p.workspace = static_cast<void*>(reinterpret_cast<float*>(arena + ");
  CHECK_HAS(cu, "::Params::pads)>() >= 2");
  CHECK_HAS(files.at("Makefile"), "find kernels/plugins -type f");

  const nlohmann::json report = nlohmann::json::parse(files.at("report.json"));
  const nlohmann::json& kj = report.at("kernels").at(0);
  CHECK(kj.at("family") == "plugin");
  CHECK(kj.at("engine") == "plugin");
  CHECK(kj.at("plugin").at("name") == "test_ops");
  CHECK(kj.at("plugin").at("op") == "Scale");
  CHECK(kj.at("plugin").at("domain") == "com.test");
  CHECK(kj.at("plugin").at("header") == "scale.cuh");
  CHECK(kj.at("plugin").at("workspace_bytes") == 256);
  CHECK(kj.at("flops") == 2 * 8 * 15);
  const std::string& md = files.at("report.md");
  CHECK_HAS(md, "## Plugins");
  CHECK_HAS(md, "| k0 | com.test.Scale | scale_node | test_ops | scale.cuh | `test::Scale<");
  CHECK_FALSE(has(md, p.path()));  // the report names no folder of this machine

  // The reference run's helper: the same instantiation and fields.
  const std::string helper = helper_source(*plugin_op(*s.n), *s.n);
  CHECK_HAS(helper, "#include \"plugins/test_ops/scale.cuh\"");
  CHECK_HAS(helper, "using K = test::Scale<mc::plugin::Tensor<float, 1, 4, 3, 5>");
  CHECK_HAS(helper, "p.pads[1] = 4;");
  CHECK_HAS(helper, "p.workspace = ws;");
}

TEST_CASE("plugin: list-ops --plugin lists the plugin's ops after the table, not in it") {
  Unload unload;
  const std::string before = cli::list_ops_text(false);
  PluginDir p;
  // Two ops: one of its own domain, one of the default ONNX domain that modelc lacks.
  p.manifest(R"j({"modelc_plugin": 1, "name": "test_ops", "ops": [
      {"op": "Scale", "domain": "com.test", "doc": "scales x", "header": "h.cuh", "kernel": "t::Scale", "fp16": true,
       "inputs": [{"name": "x", "dtypes": ["float32"]}], "outputs": [{"name": "y", "dtype": "x", "shape": "x"}]},
      {"op": "MyDefaultOp", "header": "h.cuh", "kernel": "t::Other",
       "inputs": [{"name": "x", "dtypes": ["float32"]}], "outputs": [{"name": "y", "dtype": "x", "shape": "x"}]}]})j");
  p.header("h.cuh", "");
  load_plugin(p.path());
  const std::string text = cli::list_ops_text(false);
  CHECK_HAS(text, "plugin operators (--plugin)\n  com.test.Scale  (plugin 'test_ops', h.cuh, fp16): scales x\n");
  CHECK_HAS(text, "  MyDefaultOp  (plugin 'test_ops', h.cuh, fp32)\n");
  CHECK(text.rfind("MyDefaultOp") == text.find("MyDefaultOp"));  // once: not in the table
  CHECK(text.substr(0, before.size()) == before);  // the table and its counts unchanged
  CHECK_HAS(cli::list_ops_text(true), "## Plugin operators\n\n| Operator | Plugin | Precision | Description |");
  unload_plugins();
  CHECK(cli::list_ops_text(false) == before);
}

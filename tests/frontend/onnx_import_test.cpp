// Frontend: models built with the onnx::ModelProto API, loaded through
// load_onnx_bytes / load_onnx; every TensorProto checked before libonnx reads one.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>

#include "frontend/import_detail.h"
#include "frontend/onnx_import.h"
#include "reference/interpreter.h"
#include "support/error.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;

namespace {

// The text of the modelc::Error `f` throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::unique_ptr<Graph> load(const onnx::ModelProto& m, const LoadOptions& opt = {}) {
  return load_onnx_bytes(serialize(m), ".", "test.onnx", opt);
}

LoadResult load_collect(const onnx::ModelProto& m, LoadOptions opt = {}) {
  opt.collect_unsupported = true;
  return load_onnx_model_bytes(serialize(m), ".", "test.onnx", opt);
}

}  // namespace

TEST_CASE("a Relu model loads, infers and runs") {
  auto g = load(relu_model());
  REQUIRE(g->inputs().size() == 1);
  REQUIRE(g->outputs().size() == 1);
  CHECK(g->opset() == 13);
  CHECK(g->inputs()[0]->type_str() == "float32[2x3]");
  CHECK(g->outputs()[0]->type_str() == "float32[2x3]");
  REQUIRE(g->nodes().size() == 1);
  CHECK(g->nodes()[0]->name() == "Relu_0");  // unnamed: OpType_index
  CHECK(g->nodes()[0]->opset() == 13);
  TensorMap out = run_reference(*g, {{"x", Tensor::from_f32({2, 3}, {1, -2, 3, -4, 5, -6})}});
  CHECK(out.at("y").to_f64() == std::vector<double>{1, 0, 3, 0, 5, 0});
}

TEST_CASE("initializers are constants, also when listed as graph inputs") {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"2"});
  add_input(m, "w", {"2"});  // old exporters list initializers as inputs
  *m.mutable_graph()->add_initializer() = float_tensor("w", {2}, {-1.5f, 2.5f});
  add_node(m, "Relu", {"w"}, {"rw"}, "relu_w");
  add_node(m, "Relu", {"x"}, {"y"}, "relu_x");
  add_output(m, "y", {"2"});
  add_output(m, "rw", {"2"});
  auto g = load(m);
  REQUIRE(g->inputs().size() == 1);
  CHECK(g->inputs()[0]->name() == "x");
  const Value* w = g->find_value("w");
  REQUIRE(w);
  CHECK(w->is_initializer());
  CHECK_FALSE(w->is_graph_input());
  CHECK(w->constant().to_f64() == std::vector<double>{-1.5, 2.5});
  // Relu of a constant was evaluated during inference.
  const Value* rw = g->find_value("rw");
  REQUIRE(rw->is_constant());
  CHECK(rw->constant().to_f64() == std::vector<double>{0, 2.5});
}

TEST_CASE("node names are made unique; the 'ai.onnx' domain is the default one") {
  onnx::ModelProto m = relu_model();
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  m.mutable_graph()->mutable_node(0)->set_name("r");
  m.mutable_graph()->mutable_node(0)->set_output(0, "h");
  add_node(m, "Relu", {"h"}, {"y"}, "r")->set_domain("ai.onnx");
  auto g = load(m);
  REQUIRE(g->nodes().size() == 2);
  CHECK(g->nodes()[0]->name() == "r");
  CHECK(g->nodes()[1]->name() == "r_1");
  CHECK(g->nodes()[1]->domain() == "");
  CHECK(g->nodes()[1]->opset() == 13);
}

TEST_CASE("nodes out of topological order are sorted; a cycle is an Error") {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"4"});
  add_output(m, "y", {"4"});
  add_node(m, "Relu", {"b"}, {"y"}, "third");
  add_node(m, "Relu", {"a"}, {"b"}, "second");
  add_node(m, "Relu", {"x"}, {"a"}, "first");
  auto g = load(m);
  REQUIRE(g->nodes().size() == 3);
  CHECK(g->nodes()[0]->name() == "first");
  CHECK(g->nodes()[1]->name() == "second");
  CHECK(g->nodes()[2]->name() == "third");

  onnx::ModelProto c = empty_model();
  add_input(c, "x", {"4"});
  add_output(c, "y", {"4"});
  add_node(c, "Relu", {"b"}, {"a"}, "n1");
  add_node(c, "Relu", {"a"}, {"b"}, "n2");
  add_node(c, "Relu", {"x"}, {"y"}, "n3");
  const std::string e = error_of([&] { load(c); });
  CHECK(has(e, "cycle"));
  CHECK(has(e, "'n1'"));
  CHECK(has(e, "test.onnx"));
}

TEST_CASE("undefined inputs and values assigned twice are Errors") {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  CHECK(has(error_of([&] { load(m); }), "'nowhere'"));

  onnx::ModelProto d = relu_model();
  add_node(d, "Relu", {"x"}, {"y"}, "again");
  CHECK(has(error_of([&] { load(d); }), "produced by both"));

  onnx::ModelProto o = relu_model();
  o.mutable_graph()->mutable_output(0)->set_name("missing");
  CHECK(has(error_of([&] { load(o); }), "graph output 'missing'"));
}

TEST_CASE("unsupported dtypes are Errors naming the value and the ONNX type") {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"2"}, onnx::TensorProto::COMPLEX64);
  add_output(m, "y", {"2"}, onnx::TensorProto::COMPLEX64);
  add_node(m, "Relu", {"x"}, {"y"});
  std::string e = error_of([&] { load(m); });
  CHECK(has(e, "'x'"));
  CHECK(has(e, "COMPLEX64"));

  onnx::ModelProto s = relu_model();
  onnx::TensorProto* t = s.mutable_graph()->add_initializer();
  t->set_name("names");
  t->set_data_type(onnx::TensorProto::STRING);
  t->add_dims(1);
  t->add_string_data("a");
  e = error_of([&] { load(s); });
  CHECK(has(e, "initializer 'names'"));
  CHECK(has(e, "STRING"));
}

TEST_CASE("attributes of every kind are imported") {
  onnx::ModelProto m = relu_model();
  onnx::NodeProto* n = m.mutable_graph()->mutable_node(0);
  auto attr = [&](const std::string& name, onnx::AttributeProto::AttributeType type) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  attr("f", onnx::AttributeProto::FLOAT)->set_f(0.5f);
  attr("i", onnx::AttributeProto::INT)->set_i(-7);
  attr("s", onnx::AttributeProto::STRING)->set_s("text");
  *attr("t", onnx::AttributeProto::TENSOR)->mutable_t() = float_tensor("", {2}, {1.f, 2.f});
  auto* fs = attr("fs", onnx::AttributeProto::FLOATS);
  fs->add_floats(1.f);
  fs->add_floats(2.5f);
  auto* is = attr("is", onnx::AttributeProto::INTS);
  is->add_ints(3);
  is->add_ints(-4);
  auto* ss = attr("ss", onnx::AttributeProto::STRINGS);
  ss->add_strings("a");
  ss->add_strings("b");
  attr("g", onnx::AttributeProto::GRAPH)->mutable_g()->set_name("body");
  onnx::AttributeProto* old = n->add_attribute();  // no type: very old models
  old->set_name("old");
  old->set_i(9);

  LoadOptions o;
  o.onnx_checks = false;  // ONNX's checker refuses attributes Relu does not have
  const LoadResult r = load_collect(m, o);
  const Node& node = *r.graph->nodes()[0];
  CHECK(node.attr_float("f", 0) == doctest::Approx(0.5));
  CHECK(node.attr_int("i", 0) == -7);
  CHECK(node.attr_string("s", "") == "text");
  REQUIRE(node.attr_tensor("t"));
  CHECK(node.attr_tensor("t")->to_f64() == std::vector<double>{1, 2});
  CHECK(node.attr_floats("fs") == std::vector<double>{1, 2.5});
  CHECK(node.attr_ints("is") == std::vector<int64_t>{3, -4});
  REQUIRE(node.attr("ss"));
  CHECK(node.attr("ss")->strings == std::vector<std::string>{"a", "b"});
  REQUIRE(node.attr("g"));
  CHECK(node.attr("g")->kind == Attribute::Kind::graph);
  CHECK(node.attr_int("old", 0) == 9);
  // Relu has none of these: the node is listed as unsupported with the reason.
  REQUIRE(r.unsupported.size() == 1);
  CHECK(r.unsupported[0].node == "Relu_0");
  CHECK(has(r.unsupported[0].reason, "attribute"));
  // Strict loading stops at the node.
  CHECK(has(error_of([&] { load(m, o); }), "node 'Relu_0' (Relu, opset 13)"));
}

TEST_CASE("an attribute kind modelc cannot hold makes the node unsupported") {
  onnx::ModelProto m = relu_model();
  onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("sparse");
  a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
  LoadOptions o;
  o.onnx_checks = false;
  const LoadResult r = load_collect(m, o);
  REQUIRE(r.unsupported.size() == 1);
  CHECK(has(r.unsupported[0].reason, "SPARSE_TENSOR"));
  CHECK(has(error_of([&] { load(m, o); }), "SPARSE_TENSOR"));
}

TEST_CASE("unsupported nodes: collected for inspect, an Error otherwise") {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"2"});
  add_output(m, "y", {"2"});
  add_output(m, "z", {"2"});
  add_node(m, "Relu", {"x"}, {"a"}, "first");
  add_node(m, "NoSuchOp", {"a"}, {"b"}, "strange");
  add_node(m, "Relu", {"b"}, {"y"}, "after");
  add_node(m, "Relu", {"a"}, {"z"}, "beside");
  LoadOptions o;
  o.onnx_checks = false;  // ONNX's checker would refuse the unknown op first
  const LoadResult r = load_collect(m, o);
  REQUIRE(r.unsupported.size() == 1);
  CHECK(r.unsupported[0].node == "strange");
  CHECK(r.unsupported[0].op == "NoSuchOp");
  CHECK(has(r.unsupported[0].reason, "not supported"));
  CHECK_FALSE(r.graph->find_value("y")->has_type());  // depends on the unsupported node
  CHECK(r.graph->find_value("z")->type_str() == "float32[2]");
  CHECK(has(error_of([&] { load(m, o); }), "node 'strange' (NoSuchOp"));
}

TEST_CASE("opsets: libonnx knows 17; 18 to 21 load without ONNX's checks; newer is refused") {
  CHECK(onnx_max_known_opset() == 17);
  LoadResult r17 = load_onnx_model_bytes(serialize(relu_model({"2"}, 17)), ".", "m17.onnx");
  CHECK(r17.info.onnx_checks == "passed");
  for (int opset : {18, 21}) {
    onnx::ModelProto m = relu_model({"2"}, opset);
    if (opset == 21) m.set_ir_version(10);  // newer than libonnx's checker knows
    LoadResult r = load_onnx_model_bytes(serialize(m), ".", "new.onnx");
    CHECK(has(r.info.onnx_checks, opset == 18 ? "skipped: opset 18 is newer than libonnx's 17"
                                              : "skipped: IR version 10 is newer than libonnx's 8"));
    CHECK(r.graph->opset() == opset);
    CHECK(r.graph->outputs()[0]->type_str() == "float32[2]");
  }
  const std::string e = error_of([&] { load(relu_model({"2"}, 22)); });
  CHECK(has(e, "opset 22"));

  onnx::ModelProto none = relu_model();
  none.clear_opset_import();
  CHECK(has(error_of([&] { load(none); }), "opset"));
}

TEST_CASE("ONNX checker failures are Errors naming the file") {
  onnx::ModelProto m = relu_model();
  m.mutable_graph()->mutable_node(0)->add_input("x");  // Relu takes one input
  std::string e = error_of([&] { load(m); });
  CHECK(has(e, "file 'test.onnx'"));
  CHECK(has(e, "ONNX checker"));

  onnx::ModelProto v = relu_model();
  v.set_ir_version(0);
  CHECK(has(error_of([&] { load(v); }), "ir_version"));
  // The same model passes with the checks off (modelc's own rules still run).
  LoadOptions o;
  o.onnx_checks = false;
  CHECK(has(error_of([&] { load(m, o); }), "inputs"));
}

TEST_CASE("symbolic dims come from --shape / --batch; the rest is an Error listing them") {
  const onnx::ModelProto m = relu_model({"N", "3", "H"});
  std::string e = error_of([&] { load(m); });
  CHECK(has(e, "input 'x'"));
  CHECK(has(e, "'N' (dim 0)"));
  CHECK(has(e, "'H' (dim 2)"));
  CHECK(has(e, "--shape"));
  CHECK(has(e, "--batch"));

  LoadOptions o;
  o.input_shapes["x"] = {2, 3, 5};
  auto g = load(m, o);
  CHECK(g->inputs()[0]->shape() == Shape{2, 3, 5});
  CHECK(g->outputs()[0]->shape() == Shape{2, 3, 5});

  // --batch only fills the first dim.
  LoadOptions b;
  b.batch = 4;
  e = error_of([&] { load(m, b); });
  CHECK(has(e, "'H' (dim 2)"));
  CHECK_FALSE(has(e, "'N'"));
  g = load(relu_model({"batch", "3"}), b);
  CHECK(g->inputs()[0]->shape() == Shape{4, 3});
  // A first dim with neither value nor name is symbolic too.
  g = load(relu_model({"", "3"}), b);
  CHECK(g->inputs()[0]->shape() == Shape{4, 3});

  LoadOptions rank;
  rank.input_shapes["x"] = {2, 3};
  CHECK(has(error_of([&] { load(m, rank); }), "rank 2"));
  LoadOptions fixed;
  fixed.input_shapes["x"] = {2, 4, 5};
  CHECK(has(error_of([&] { load(m, fixed); }), "fixes it to 3"));
  LoadOptions unknown;
  unknown.input_shapes["nope"] = {1};
  CHECK(has(error_of([&] { load(m, unknown); }), "'nope'"));

  // Every input is listed, including one without any shape.
  onnx::ModelProto two = relu_model({"N", "3"});
  onnx::ValueInfoProto* mask = add_input(two, "mask", {});
  mask->mutable_type()->mutable_tensor_type()->clear_shape();
  add_node(two, "Relu", {"mask"}, {"m2"});
  add_output(two, "m2", {"2"});
  e = error_of([&] { load(two); });
  CHECK(has(e, "input 'x'"));
  CHECK(has(e, "input 'mask' has no declared shape"));
  LoadOptions both;
  both.batch = 2;
  both.input_shapes["mask"] = {2};
  g = load(two, both);
  CHECK(g->find_value("m2")->shape() == Shape{2});
}

TEST_CASE("malformed and truncated models are Errors naming the file, never crashes") {
  const std::string good = serialize(relu_model());
  for (std::size_t n = 0; n < good.size(); ++n) {
    const std::string e = error_of([&] { load_onnx_bytes(good.substr(0, n), ".", "cut.onnx"); });
    INFO("prefix of " << n << " bytes");
    CHECK(has(e, "file 'cut.onnx'"));
  }
  CHECK(has(error_of([&] { load_onnx_bytes("this is not a model", ".", "text.onnx"); }), "file 'text.onnx'"));
  // Random corruption: any outcome but a crash or a non-modelc exception.
  std::mt19937 rng(1);
  for (int k = 0; k < 300; ++k) {
    std::string bad = good;
    for (int j = 0; j < 3; ++j) bad[rng() % bad.size()] = static_cast<char>(rng());
    try {
      load_onnx_bytes(bad, ".", "bad.onnx");
    } catch (const Error&) {
    }
  }
}

TEST_CASE("model files: missing, a folder, and a good one") {
  TempDir dir;
  std::string e = error_of([&] { load_onnx(dir / "missing.onnx"); });
  CHECK(has(e, "missing.onnx"));
  CHECK(has(e, "No such file"));
  CHECK(has(error_of([&] { load_onnx(dir.str()); }), "is a directory, not a regular file"));
  write_bytes(dir / "relu.onnx", serialize(relu_model()));
  CHECK(load_onnx(dir / "relu.onnx")->nodes().size() == 1);
  write_bytes(dir / "cut.onnx", serialize(relu_model()).substr(0, 20));
  CHECK(has(error_of([&] { load_onnx(dir / "cut.onnx"); }), "malformed or truncated"));
}

// ---- external data ------------------------------------------------------------

namespace {

// y = Relu(w) + nothing else: w is an initializer whose 4 floats live in a file.
onnx::ModelProto external_model(const std::string& location, const std::string& offset = "",
                                const std::string& length = "") {
  onnx::ModelProto m = empty_model();
  add_output(m, "y", {"4"});
  add_node(m, "Relu", {"w"}, {"y"});
  onnx::TensorProto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  if (!offset.empty()) kv("offset", offset);
  if (!length.empty()) kv("length", length);
  return m;
}

std::string floats_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace

TEST_CASE("external data inside the model's folder is loaded (and ONNX's checker finds it)") {
  TempDir dir;
  std::filesystem::create_directory(dir.path / "sub");
  write_bytes(dir / "sub/w.bin", std::string(8, 'x') + floats_bytes({-1, 2, -3, 4}) + "tail");
  write_bytes(dir / "m.onnx", serialize(external_model("sub/w.bin", "8", "16")));
  LoadResult r = load_onnx_model(dir / "m.onnx");
  CHECK(r.info.onnx_checks == "passed");
  CHECK(r.graph->find_value("w")->constant().to_f64() == std::vector<double>{-1, 2, -3, 4});
  CHECK(r.graph->find_value("y")->constant().to_f64() == std::vector<double>{0, 2, 0, 4});
  // Without length: the rest of the file from the offset.
  write_bytes(dir / "w2.bin", floats_bytes({5, 6, 7, 8}));
  auto g = load_onnx_bytes(serialize(external_model("./w2.bin")), dir.str(), "mem.onnx");
  CHECK(g->find_value("w")->constant().to_f64() == std::vector<double>{5, 6, 7, 8});
}

TEST_CASE("big external initializers are read straight into the graph") {
  TempDir dir;
  const int n = 300000;  // 1.2 MB: past the size read before ONNX's shape inference
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i % 7) - 3.f;
  write_bytes(dir / "w.bin", "pad!" + floats_bytes(v));
  onnx::ModelProto m = external_model("w.bin", "4");
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, n);
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(n);
  write_bytes(dir / "m.onnx", serialize(m));
  auto g = load_onnx(dir / "m.onnx");
  const Tensor& w = g->find_value("w")->constant();
  REQUIRE(w.numel() == n);
  CHECK(w.f64_at(0) == -3);
  CHECK(w.f64_at(n - 1) == static_cast<double>((n - 1) % 7) - 3);
  CHECK(g->find_value("y")->constant().f64_at(6) == 3);
}

TEST_CASE("external data outside the folder, through symlinks or out of range is refused") {
  TempDir dir;
  std::filesystem::create_directory(dir.path / "model");
  std::filesystem::create_directory(dir.path / "model/real");
  const std::string data = floats_bytes({1, 2, 3, 4});
  write_bytes(dir / "outside.bin", data);
  write_bytes(dir / "model/w.bin", data);
  write_bytes(dir / "model/real/w.bin", data);
  write_bytes(dir / "model/short.bin", data.substr(0, 12));
  std::filesystem::create_symlink(dir / "outside.bin", dir.path / "model/link.bin");
  std::filesystem::create_directory_symlink(dir / "model/real", dir.path / "model/linkdir");

  auto error_for = [&](const onnx::ModelProto& m) {
    write_bytes(dir / "model/m.onnx", serialize(m));
    return error_of([&] { load_onnx(dir / "model/m.onnx"); });
  };
  std::string e = error_for(external_model(dir / "outside.bin"));
  CHECK(has(e, "absolute path"));
  CHECK(has(e, "initializer 'w'"));
  CHECK(has(e, "m.onnx"));
  CHECK(has(error_for(external_model("../outside.bin")), "'..'"));
  CHECK(has(error_for(external_model("real/../../outside.bin")), "'..'"));
  CHECK(has(error_for(external_model("link.bin")), "symbolic link"));
  CHECK(has(error_for(external_model("linkdir/w.bin")), "symbolic link"));
  CHECK(has(error_for(external_model("nothere.bin")), "No such file"));
  CHECK(has(error_for(external_model("real")), "not a regular file"));
  CHECK(has(error_for(external_model("w.bin", "17")), "past the end"));
  CHECK(has(error_for(external_model("w.bin", "4", "16")), "past the end"));
  CHECK(has(error_for(external_model("w.bin", "0", "12")), "needs 16"));
  CHECK(has(error_for(external_model("short.bin")), "needs 16"));
  CHECK(has(error_for(external_model("w.bin", "-1")), "not a byte count"));
  CHECK(has(error_for(external_model("")), "empty 'location'"));
  // The good case in the same folder loads.
  CHECK(error_for(external_model("real/w.bin")).empty());
}

// ---- TensorProto ----------------------------------------------------------------

TEST_CASE("tensor_from_proto: raw_data and typed fields for every dtype") {
  onnx::TensorProto t;
  t.add_dims(2);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(1.5f);
  t.add_float_data(-2.f);
  CHECK(tensor_from_proto(t, "t").to_f64() == std::vector<double>{1.5, -2});

  t.Clear();
  t.add_dims(3);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t v : {int64_t{1} << 40, int64_t{-3}, int64_t{0}}) t.add_int64_data(v);
  CHECK(tensor_from_proto(t, "t").to_i64() == std::vector<int64_t>{int64_t{1} << 40, -3, 0});

  struct Case {
    int type;
    std::vector<int32_t> in;
    DType dtype;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {onnx::TensorProto::INT32, {7, -8}, DType::int32, {7, -8}},
      {onnx::TensorProto::INT8, {-128, 127}, DType::int8, {-128, 127}},
      {onnx::TensorProto::UINT8, {0, 255}, DType::uint8, {0, 255}},
      {onnx::TensorProto::BOOL, {0, 1}, DType::boolean, {0, 1}},
      {onnx::TensorProto::FLOAT16, {0x3c00, 0xc000}, DType::float16, {1, -2}},  // bit patterns
      {onnx::TensorProto::BFLOAT16, {0x3f80, 0xc040}, DType::bfloat16, {1, -3}},
  };
  for (const Case& c : cases) {
    onnx::TensorProto p;
    p.add_dims(2);
    p.set_data_type(c.type);
    for (int32_t v : c.in) p.add_int32_data(v);
    const Tensor x = tensor_from_proto(p, "t");
    CHECK(x.dtype() == c.dtype);
    CHECK(x.to_f64() == c.want);
    // The same values as raw_data.
    onnx::TensorProto r;
    r.add_dims(2);
    r.set_data_type(c.type);
    r.set_raw_data(std::string(reinterpret_cast<const char*>(x.raw()), x.nbytes()));
    CHECK(tensor_from_proto(r, "t").to_f64() == c.want);
  }

  onnx::TensorProto empty;
  empty.add_dims(0);
  empty.set_data_type(onnx::TensorProto::FLOAT);
  CHECK(tensor_from_proto(empty, "t").numel() == 0);
  onnx::TensorProto scalar;
  scalar.set_data_type(onnx::TensorProto::INT64);
  scalar.add_int64_data(5);
  CHECK(tensor_from_proto(scalar, "t").shape().empty());
}

TEST_CASE("tensor_from_proto: size and field errors") {
  onnx::TensorProto t;
  t.add_dims(3);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.set_raw_data(std::string(8, '\0'));
  CHECK(has(error_of([&] { tensor_from_proto(t, "initializer 'w'"); }), "initializer 'w'"));
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "needs 12 bytes"));
  t.clear_raw_data();
  t.add_float_data(1);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "needs 3 values"));
  t.set_raw_data(std::string(12, '\0'));
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "both"));
  t.Clear();
  t.add_dims(2);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_int64_data(1);
  t.add_int64_data(2);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "expected float_data"));
  t.Clear();
  t.add_dims(1);
  t.set_data_type(onnx::TensorProto::UINT8);
  t.add_int32_data(256);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "out of range"));
  t.Clear();
  t.add_dims(2);
  t.set_data_type(onnx::TensorProto::FLOAT);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "no data"));
  t.set_data_type(onnx::TensorProto::COMPLEX64);
  for (int i = 0; i < 4; ++i) t.add_float_data(1);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "COMPLEX64"));
  t.Clear();
  t.add_dims(-1);
  t.set_data_type(onnx::TensorProto::FLOAT);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "negative"));
  t.Clear();
  for (int i = 0; i < 8; ++i) t.add_dims(int64_t{1} << 40);
  t.set_data_type(onnx::TensorProto::FLOAT);
  CHECK(has(error_of([&] { tensor_from_proto(t, "w"); }), "has more than 2147483647 elements"));
}

TEST_CASE("parse_shape") {
  CHECK(parse_shape("1x3x224x224") == Shape{1, 3, 224, 224});
  CHECK(parse_shape("1,3") == Shape{1, 3});
  CHECK(parse_shape("7") == Shape{7});
  for (const char* bad : {"", "x", "1x", "x1", "0", "1x0", "-1", "1xa", "1 x 2", "99999999999"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_shape(bad), Error);
  }
}

TEST_CASE("Constant and control-flow nodes stay nodes; omitted optional inputs are null") {
  onnx::ModelProto m = relu_model();
  onnx::NodeProto* c = add_node(m, "Constant", {}, {"k"}, "const");
  onnx::AttributeProto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  *v->mutable_t() = float_tensor("", {2}, {3.f, 4.f});
  onnx::NodeProto* branch = add_node(m, "If", {"cond"}, {"r"}, "branch");
  onnx::AttributeProto* g = branch->add_attribute();
  g->set_name("then_branch");
  g->set_type(onnx::AttributeProto::GRAPH);
  g->mutable_g()->set_name("then");
  add_input(m, "cond", {}, onnx::TensorProto::BOOL);
  add_node(m, "Pad", {"x", "", "k", "", ""}, {"p"}, "pad");  // trailing "" dropped, the middle one kept
  add_node(m, "Relu", {"x", ""}, {"y2", ""}, "relu2");
  add_output(m, "y2", {"2", "3"});

  LoadOptions o;
  o.onnx_checks = false;
  const LoadResult r = load_collect(m, o);
  const Graph& graph = *r.graph;
  REQUIRE(graph.nodes_of("Constant").size() == 1);
  const Node& k = *graph.nodes_of("Constant")[0];
  REQUIRE(k.attr_tensor("value"));
  CHECK(k.attr_tensor("value")->to_f64() == std::vector<double>{3, 4});
  const Node& iff = *graph.nodes_of("If")[0];
  CHECK(iff.attr("then_branch")->kind == Attribute::Kind::graph);
  const Node& pad = *graph.nodes_of("Pad")[0];
  CHECK(pad.num_inputs() == 3);
  CHECK_FALSE(pad.has_input(1));
  CHECK(pad.input(2).name() == "k");
  const Node& relu2 = *graph.nodes_of("Relu")[1];
  CHECK(relu2.num_inputs() == 1);
  CHECK(relu2.num_outputs() == 1);
  CHECK(graph.find_value("y2")->type_str() == "float32[2x3]");
  bool if_listed = false;
  for (const auto& u : r.unsupported) if_listed = if_listed || (u.node == "branch" && has(u.reason, "If"));
  CHECK(if_listed);
}

// ---- every TensorProto checked before libonnx reads one (frontend/model_tensors.cpp) ----

namespace {

onnx::TensorProto raw_tensor(const std::string& name, int type, const Shape& dims, std::size_t bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(bytes, '\0'));
  return t;
}

std::string check(const onnx::TensorProto& t) {
  return error_of([&] { detail::check_tensor_proto(t, "initializer 't'"); });
}

std::string load_error(const onnx::ModelProto& m) {
  return error_of([&] { load(m); });
}

// x[2x3] -> Reshape(x, shape) -> y[3x2], `shape` an int64 initializer with `bytes` of raw_data.
onnx::ModelProto reshape_model(std::size_t bytes) {
  onnx::ModelProto m = empty_model();
  add_input(m, "x", {"2", "3"});
  add_output(m, "y", {"3", "2"});
  add_node(m, "Reshape", {"x", "shape"}, {"y"}, "reshape");
  onnx::TensorProto shape = raw_tensor("shape", onnx::TensorProto::INT64, {2}, 0);
  const int64_t v[2] = {3, 2};
  shape.set_raw_data(std::string(reinterpret_cast<const char*>(v), 16).substr(0, bytes) +
                     std::string(bytes > 16 ? bytes - 16 : 0, '\0'));
  *m.mutable_graph()->add_initializer() = shape;
  return m;
}

onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name, onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}

}  // namespace

TEST_CASE("check_tensor_proto: raw_data is elements x the dtype's size, for every ONNX dtype") {
  struct Case {
    int type;
    std::size_t size;
    const char* name;
  };
  const Case cases[] = {{1, 4, "float32"}, {2, 1, "uint8"},    {3, 1, "int8"},      {4, 2, "uint16"},
                        {5, 2, "int16"},   {6, 4, "int32"},    {7, 8, "int64"},     {9, 1, "bool"},
                        {10, 2, "float16"}, {11, 8, "float64"}, {12, 4, "uint32"},  {13, 8, "uint64"},
                        {14, 8, "complex64"}, {15, 16, "complex128"}, {16, 2, "bfloat16"}};
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(check(raw_tensor("t", c.type, {2, 3}, 6 * c.size)).empty());
    for (std::size_t wrong : {6 * c.size - 1, 6 * c.size + 1, std::size_t{0}}) {
      const std::string e = check(raw_tensor("t", c.type, {2, 3}, wrong));
      CHECK(has(e, "initializer 't' (" + std::string(c.name) + "[2x3]) needs " + std::to_string(6 * c.size) +
                       " bytes of raw_data, it has " + std::to_string(wrong)));
    }
  }
  CHECK(has(check(raw_tensor("t", onnx::TensorProto::STRING, {1}, 1)), "cannot store its data in raw_data"));
  CHECK(check(raw_tensor("t", onnx::TensorProto::FLOAT, {0, 5}, 0)).empty());  // no elements, no bytes
}

TEST_CASE("check_tensor_proto: the typed field ONNX defines for the dtype, one value per element") {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::DOUBLE);
  t.add_dims(2);
  t.add_double_data(1);
  t.add_double_data(2);
  CHECK(check(t).empty());
  t.add_double_data(3);
  CHECK(has(check(t), "(float64[2]) needs 2 values in double_data, it has 3"));

  t.Clear();
  t.set_data_type(onnx::TensorProto::COMPLEX64);  // two floats per element
  t.add_dims(2);
  for (int i = 0; i < 4; ++i) t.add_float_data(1);
  CHECK(check(t).empty());
  t.add_float_data(1);
  CHECK(has(check(t), "needs 4 values in float_data, it has 5"));

  t.Clear();
  t.set_data_type(onnx::TensorProto::UINT32);
  t.add_dims(1);
  t.add_int32_data(1);
  CHECK(has(check(t), "is uint32 but stores its data in int32_data (expected uint64_data or raw_data)"));
  t.clear_int32_data();
  t.add_uint64_data(1);
  CHECK(check(t).empty());

  t.Clear();
  t.set_data_type(onnx::TensorProto::STRING);
  t.add_dims(2);
  t.add_string_data("a");
  CHECK(has(check(t), "(string[2]) needs 2 values in string_data, it has 1"));
  t.add_string_data("b");
  CHECK(check(t).empty());

  t.Clear();
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(1);
  t.add_int64_data(1);
  t.set_raw_data(std::string(8, '\0'));
  CHECK(has(check(t), "stores its data in both raw_data and int64_data"));
  t.clear_raw_data();
  t.clear_int64_data();
  CHECK(has(check(t), "(int64[1]) has no data"));
}

TEST_CASE("check_tensor_proto: data_type, dims and the size limit") {
  CHECK(has(check(raw_tensor("t", 0, {1}, 4)), "has data_type 0, which is not an ONNX tensor type"));
  CHECK(has(check(raw_tensor("t", 99, {1}, 4)), "has data_type 99"));
  CHECK(has(check(raw_tensor("t", 1, {2, -3}, 24)), "has a negative dimension in its shape 2x-3"));
  // At the limit: only the data length is wrong. Past it: the limit, whatever the data.
  CHECK(has(check(raw_tensor("t", 1, {kMaxTensorElements}, 4)), "needs 8589934588 bytes of raw_data, it has 4"));
  CHECK(has(check(raw_tensor("t", 1, {kMaxTensorElements + 1}, 4)),
            "initializer 't' (float32[2147483648]) has more than 2147483647 elements"));
  // A product that overflows int64 is caught before it does.
  const std::string e = check(raw_tensor("t", 1, {int64_t{1} << 40, int64_t{1} << 40, int64_t{1} << 40}, 4));
  CHECK(has(e, "has more than 2147483647 elements (2^31 - 1), modelc's limit for one tensor"));
  CHECK(check(raw_tensor("t", 1, {int64_t{1} << 62, int64_t{1} << 62, 0}, 0)).empty());  // no elements
  // External data: find_external_data checks the file; dims and type are checked here.
  onnx::TensorProto x = raw_tensor("t", 1, {4}, 0);
  x.clear_raw_data();
  x.set_data_location(onnx::TensorProto::EXTERNAL);
  CHECK(check(x).empty());
  x.set_dims(0, -4);
  CHECK(has(check(x), "negative"));
}

TEST_CASE("tensor_from_proto allocates only what it checked") {
  // float32[2^29] holding 4 bytes: refused by its length, not after 2 GB of zeros.
  const auto start = std::chrono::steady_clock::now();
  const std::string e =
      error_of([&] { tensor_from_proto(raw_tensor("big", 1, {int64_t{1} << 29}, 4), "initializer 'big'"); });
  CHECK(has(e, "initializer 'big' (float32[536870912]) needs 2147483648 bytes of raw_data, it has 4"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100));
}

TEST_CASE("check_model_tensors: wrong int64 lengths are refused wherever libonnx would read them") {
  // The reproducer: libonnx's ParseData<int64_t> wrote past its buffer for 7 bytes.
  for (std::size_t bytes : {std::size_t{7}, std::size_t{12}, std::size_t{24}}) {
    INFO(bytes << " bytes");
    CHECK(has(load_error(reshape_model(bytes)), "file 'test.onnx': initializer 'shape' (int64[2]) needs 16 bytes"));
  }
  CHECK(load_error(reshape_model(16)).empty());

  // A Constant's value, a tensor list, a sparse tensor's values and indices.
  onnx::ModelProto m = relu_model();
  onnx::NodeProto* c = add_node(m, "Constant", {}, {"k"});
  *add_attr(c, "value", onnx::AttributeProto::TENSOR)->mutable_t() = raw_tensor("", 7, {2}, 9);
  CHECK(has(load_error(m), "node 'Constant_1' (Constant) attribute 'value' (int64[2]) needs 16 bytes of raw_data, it has 9"));
  c->mutable_attribute(0)->mutable_t()->set_raw_data(std::string(16, '\0'));
  onnx::AttributeProto* list = add_attr(c, "list", onnx::AttributeProto::TENSORS);
  *list->add_tensors() = raw_tensor("", 1, {1}, 4);
  *list->add_tensors() = raw_tensor("", 1, {1}, 3);
  CHECK(has(load_error(m), "node 'Constant_1' (Constant) attribute 'list' tensor 1 (float32[1]) needs 4 bytes"));
  c->mutable_attribute()->RemoveLast();
  onnx::SparseTensorProto* sparse = add_attr(c, "sparse_value", onnx::AttributeProto::SPARSE_TENSOR)->mutable_sparse_tensor();
  sparse->add_dims(4);
  *sparse->mutable_values() = raw_tensor("", 7, {2}, 16);
  *sparse->mutable_indices() = raw_tensor("", 7, {2}, 15);
  CHECK(has(load_error(m), "attribute 'sparse_value' indices (int64[2]) needs 16 bytes"));
  sparse->mutable_indices()->set_raw_data(std::string(16, '\0'));
  sparse->set_dims(0, -4);
  CHECK(has(load_error(m), "attribute 'sparse_value' has a negative dimension in its shape -4"));
}

TEST_CASE("check_model_tensors: subgraphs, functions and training graphs, named by their path") {
  onnx::ModelProto m = relu_model();
  add_input(m, "cond", {}, onnx::TensorProto::BOOL);
  onnx::NodeProto* branch = add_node(m, "If", {"cond"}, {"r"}, "branch");
  onnx::GraphProto* then = add_attr(branch, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g();
  // Two levels down: a Loop body inside the then-branch holds the bad Constant.
  onnx::NodeProto* loop = then->add_node();
  loop->set_op_type("Loop");
  loop->set_name("loop");
  onnx::GraphProto* body = add_attr(loop, "body", onnx::AttributeProto::GRAPH)->mutable_g();
  onnx::NodeProto* k = body->add_node();
  k->set_op_type("Constant");
  *add_attr(k, "value", onnx::AttributeProto::TENSOR)->mutable_t() = raw_tensor("", 7, {3}, 13);
  CHECK(has(load_error(m), "node 'branch' (If) attribute 'then_branch': node 'loop' (Loop) attribute 'body': "
                           "node 'Constant_0' (Constant) attribute 'value' (int64[3]) needs 24 bytes"));
  k->mutable_attribute(0)->mutable_t()->set_raw_data(std::string(24, '\0'));
  *body->add_initializer() = raw_tensor("w", 1, {2}, 5);
  CHECK(has(load_error(m), "attribute 'body': initializer 'w' (float32[2]) needs 8 bytes"));
  body->mutable_initializer(0)->set_raw_data(std::string(8, '\0'));
  // External data is read for the main graph only.
  body->mutable_initializer(0)->clear_raw_data();
  body->mutable_initializer(0)->set_data_location(onnx::TensorProto::EXTERNAL);
  CHECK(has(load_error(m), "attribute 'body': initializer 'w' has external data, which modelc reads only for the main graph"));
  body->clear_initializer();
  // 'graphs' lists, model-local functions and training graphs.
  onnx::AttributeProto* graphs = add_attr(branch, "bodies", onnx::AttributeProto::GRAPHS);
  graphs->add_graphs();
  *graphs->add_graphs()->add_initializer() = raw_tensor("v", 6, {1}, 2);
  CHECK(has(load_error(m), "node 'branch' (If) attribute 'bodies' graph 1: initializer 'v' (int32[1]) needs 4 bytes"));
  branch->mutable_attribute()->RemoveLast();
  onnx::NodeProto* fk = m.add_functions()->add_node();
  m.mutable_functions(0)->set_name("f");
  fk->set_op_type("Constant");
  *add_attr(fk, "value", onnx::AttributeProto::TENSOR)->mutable_t() = raw_tensor("", 1, {1}, 1);
  CHECK(has(load_error(m), "function 'f': node 'Constant_0' (Constant) attribute 'value' (float32[1]) needs 4 bytes"));
  m.clear_functions();
  *m.add_training_info()->mutable_algorithm()->add_initializer() = raw_tensor("lr", 1, {}, 2);
  CHECK(has(load_error(m), "training_info 0 algorithm: initializer 'lr' (float32[scalar]) needs 4 bytes"));
  // A sparse initializer's tensors are checked before sparse initializers are refused.
  m.clear_training_info();
  onnx::SparseTensorProto* s = m.mutable_graph()->add_sparse_initializer();
  *s->mutable_values() = raw_tensor("sp", 1, {1}, 3);
  *s->mutable_indices() = raw_tensor("", 7, {1}, 8);
  CHECK(has(load_error(m), "sparse initializer 'sp' values (float32[1]) needs 4 bytes"));
}

TEST_CASE("the size limit: graph inputs and inferred values of more than 2^31 - 1 elements") {
  onnx::ModelProto m = relu_model({"1099511627776"});
  CHECK(has(load_error(m), "graph input 'x' (float32[1099511627776]) has more than 2147483647 elements"));
  // From --shape too (each dim fits an int; the product does not).
  LoadOptions o;
  o.input_shapes["x"] = {65536, 65536};
  CHECK(has(error_of([&] { load(relu_model({"N", "M"}), o); }),
            "graph input 'x' (float32[65536x65536]) has more than"));
  o.input_shapes["x"] = {32768, 65535};  // 2^31 - 32768: within
  CHECK(error_of([&] { load(relu_model({"N", "M"}), o); }).empty());

  // A node making 2^40 elements from a scalar.
  onnx::ModelProto e = empty_model();
  add_input(e, "x", {"1"});
  add_output(e, "y", {"1048576", "1048576"});
  add_node(e, "Expand", {"x", "shape"}, {"y"}, "expand");
  onnx::TensorProto shape = raw_tensor("shape", onnx::TensorProto::INT64, {2}, 0);
  const int64_t v[2] = {int64_t{1} << 20, int64_t{1} << 20};
  shape.set_raw_data(std::string(reinterpret_cast<const char*>(v), 16));
  *e.mutable_graph()->add_initializer() = shape;
  CHECK(has(load_error(e), "output 'y' (float32[1048576x1048576]) has more than 2147483647 elements"));
  CHECK(has(load_error(e), "node 'expand'"));
}

TEST_CASE("graph outputs: each listed once") {
  onnx::ModelProto m = relu_model();
  add_output(m, "y", {"2", "3"});
  CHECK(has(load_error(m), "file 'test.onnx': graph output 'y' is listed twice"));
}

TEST_CASE("model and external data files that are not regular files are refused at once") {
  TempDir dir;
  REQUIRE(::mkfifo((dir / "fifo.onnx").c_str(), 0600) == 0);
  // open() of a FIFO without a writer would block forever.
  CHECK(has(error_of([&] { load_onnx(dir / "fifo.onnx"); }), "the model is a FIFO (named pipe), not a regular file"));
  std::filesystem::create_symlink("/dev/zero", dir.path / "zero.onnx");
  const std::string e = error_of([&] { load_onnx(dir / "zero.onnx"); });
  CHECK(has(e, "zero.onnx"));
  CHECK(has(e, "the model is a character device, not a regular file"));

  // The external-data read opens the same way (find_external_data refused the FIFO by path;
  // this is the file swapped for one after that check).
  detail::ExternalRef ref;
  ref.what = "initializer 'w'";
  ref.location = "w.bin";
  ref.path = dir / "fifo.onnx";
  ref.length = 4;
  char buf[4];
  CHECK(has(error_of([&] { detail::read_external_data(ref, "m.onnx", buf); }),
            "initializer 'w': external data file 'w.bin' is a FIFO (named pipe), not a regular file"));
}

TEST_CASE("float64 and the 16-, 32- and 64-bit integer types: inputs, initializers, Cast, arithmetic") {
  // y = Cast<float>(x_f64 * c_f64); u = Max(a_u64, b_u64) over uint64 values beyond INT64_MAX;
  // s = a_i16 + k_i16 (wrapping), m = a_u16 < k_u16. (Add takes int16 from opset 14.)
  onnx::ModelProto m = empty_model(14);
  add_input(m, "x", {"3"}, onnx::TensorProto::DOUBLE);
  add_input(m, "a", {"2"}, onnx::TensorProto::UINT64);
  add_input(m, "h", {"2"}, onnx::TensorProto::INT16);
  add_input(m, "w", {"2"}, onnx::TensorProto::UINT16);
  onnx::TensorProto* c = m.mutable_graph()->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::DOUBLE);
  c->add_dims(1);
  c->add_double_data(1.0 / 3);
  onnx::TensorProto* b = m.mutable_graph()->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::UINT64);
  b->add_dims(2);
  b->add_uint64_data(uint64_t{1} << 63);
  b->add_uint64_data(5);
  onnx::TensorProto* k = m.mutable_graph()->add_initializer();
  k->set_name("k");
  k->set_data_type(onnx::TensorProto::INT16);
  k->add_dims(1);
  k->add_int32_data(32767);
  onnx::TensorProto* k16 = m.mutable_graph()->add_initializer();
  k16->set_name("k16");
  k16->set_data_type(onnx::TensorProto::UINT16);
  k16->add_dims(1);
  k16->add_int32_data(40000);
  add_node(m, "Mul", {"x", "c"}, {"xc"});
  add_node(m, "Cast", {"xc"}, {"y"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(onnx::TensorProto::FLOAT);
    return a;
  }());
  add_node(m, "Max", {"a", "b"}, {"u"});
  add_node(m, "Add", {"h", "k"}, {"s"});
  add_node(m, "Less", {"w", "k16"}, {"lt"});
  add_output(m, "xc", {"3"}, onnx::TensorProto::DOUBLE);
  add_output(m, "y", {"3"});
  add_output(m, "u", {"2"}, onnx::TensorProto::UINT64);
  add_output(m, "s", {"2"}, onnx::TensorProto::INT16);
  add_output(m, "lt", {"2"}, onnx::TensorProto::BOOL);
  auto g = load(m);
  CHECK(g->inputs()[0]->type_str() == "float64[3]");
  CHECK(g->inputs()[1]->type_str() == "uint64[2]");
  Tensor a(DType::uint64, {2});
  const uint64_t av[] = {uint64_t{1} << 62, 7};  // as int64, b's 2^63 would be the smaller
  std::memcpy(a.mutable_raw(), av, 16);
  const TensorMap out =
      run_reference(*g, {{"x", Tensor::from_f64(DType::float64, {3}, {3, 1e-300, 0.1})},
                         {"a", a},
                         {"h", Tensor::from_i64(DType::int16, {2}, {1, -2})},
                         {"w", Tensor::from_i64(DType::uint16, {2}, {39999, 65535})}});
  CHECK(out.at("xc").dtype() == DType::float64);
  CHECK(out.at("xc").to_f64() == std::vector<double>{3 * (1.0 / 3), 1e-300 * (1.0 / 3), 0.1 * (1.0 / 3)});
  CHECK(out.at("y").to_f64() == std::vector<double>{1, 0, static_cast<float>(0.1 * (1.0 / 3))});
  CHECK(out.at("u").to_f64() == std::vector<double>{9223372036854775808.0, 7});  // 2^63: the unsigned order
  CHECK(out.at("s").to_i64() == std::vector<int64_t>{-32768, 32765});                 // 1 + 32767 wraps
  CHECK(out.at("lt").to_i64() == std::vector<int64_t>{1, 0});
}

TEST_CASE("LoadOptions::bind: graph inputs from files become constants; errors name the input and the file") {
  TempDir dir;
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {"2", "3"});
  add_input(m, "shape", {"2"}, onnx::TensorProto::INT64);
  add_output(m, "y", {"3", "2"});
  add_node(m, "Reshape", {"x", "shape"}, {"y"});
  onnx::TensorProto s;
  s.set_data_type(onnx::TensorProto::INT64);
  s.add_dims(2);
  s.add_int64_data(3);
  s.add_int64_data(2);
  write_bytes(dir / "s.pb", s.SerializeAsString());
  LoadOptions o;
  o.bind = {"shape=" + (dir / "s.pb")};
  auto g = load(m, o);
  REQUIRE(g->inputs().size() == 1);
  CHECK(g->find_value("shape")->is_constant());
  CHECK(g->outputs()[0]->type_str() == "float32[3x2]");
  o.bind = {"shape=" + (dir / "s.pb"), "shape=" + (dir / "s.pb")};
  CHECK(has(error_of([&] { load(m, o); }), "--bind gives input 'shape' twice"));
  o.bind = {"shape=" + (dir / "s.pb")};
  o.input_values["shape"] = Tensor::from_i64(DType::int64, {2}, {3, 2});
  CHECK(has(error_of([&] { load(m, o); }), "already has a value"));
  o.input_values.clear();
  o.bind = {"x=" + (dir / "s.pb")};
  CHECK(has(error_of([&] { load(m, o); }), "the file holds int64[2], the model declares float32[2x3]"));
  // Names and paths with '=': split where the left part names an input.
  m.mutable_graph()->mutable_input(1)->set_name("a=b");
  m.mutable_graph()->mutable_node(0)->set_input(1, "a=b");
  write_bytes(dir / "p=q.pb", s.SerializeAsString());
  o.bind = {"a=b=" + (dir / "p=q.pb")};
  CHECK(load(m, o)->outputs()[0]->type_str() == "float32[3x2]");
}

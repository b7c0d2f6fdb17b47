// Batch profiles (--batch 1,8,32; --shape NAME=A..Bx... or NAME=A/B/Cx...): the flags, the model
// lowered once per batch (cli/commands/profiles.h), one weights blob (schedule/profiles.h), the
// emitted folder (codegen emit_profiles) and its report; usage errors and models that cannot be
// batched. The programs themselves run in tests/e2e/codegen/batch_profiles.py.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "cli/commands/profiles.h"
#include "codegen/emitter.h"
#include "schedule/profiles.h"
#include "tests/cli/run_modelc.h"
#include "tests/frontend/onnx_builder.h"

using namespace modelc;
using namespace modelc::test;
using namespace modelc::cli;

namespace {

// The taps package.cpp tabulates for `s`: every output view of every kernel that exists.
int taps_of(const Schedule& s) {
  int n = 0;
  for (const Kernel& k : s.kernels) {
    for (const TensorView& v : k.outputs) n += v.dtype != DType::undefined;
  }
  return n;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {  // CLI::ValidationError
    return e.what();
  }
  return "";
}

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(v.size()));
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t)));
  return t;
}

// x[N, 8] -> MatMul W1[8, 16] -> Relu -> MatMul W2[16, 4] -> Add(ones of x's shape... no: of y's
// batch, from Shape(x) when `batch_constant`) -> y[N, 4].
onnx::ModelProto mlp(bool batch_constant, const std::string& batch_dim = "N") {
  onnx::ModelProto m = empty_model(13);
  add_input(m, "x", {batch_dim, "8"});
  std::vector<float> w1(8 * 16), w2(16 * 4);
  for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = 0.02f * static_cast<float>(i % 13) - 0.1f;
  *m.mutable_graph()->add_initializer() = float_tensor("W1", {8, 16}, w1);
  *m.mutable_graph()->add_initializer() = float_tensor("W2", {16, 4}, w2);
  add_node(m, "MatMul", {"x", "W1"}, {"h"}, "mm1");
  add_node(m, "Relu", {"h"}, {"r"}, "relu");
  if (!batch_constant) {
    add_node(m, "MatMul", {"r", "W2"}, {"y"}, "mm2");
  } else {
    add_node(m, "MatMul", {"r", "W2"}, {"p"}, "mm2");
    // ones[N, 4] from Shape: a constant whose shape depends on the batch.
    *m.mutable_graph()->add_initializer() = int64_tensor("four", {4});
    *m.mutable_graph()->add_initializer() = int64_tensor("zero", {0});
    *m.mutable_graph()->add_initializer() = int64_tensor("one", {1});
    add_node(m, "Shape", {"x"}, {"xs"}, "shape");
    add_node(m, "Slice", {"xs", "zero", "one"}, {"n"}, "slice");
    add_node(m, "Concat", {"n", "four"}, {"ps"}, "concat")->add_attribute()->CopyFrom([] {
      onnx::AttributeProto a;
      a.set_name("axis");
      a.set_type(onnx::AttributeProto::INT);
      a.set_i(0);
      return a;
    }());
    onnx::NodeProto* c = add_node(m, "ConstantOfShape", {"ps"}, {"ones"}, "ones");
    auto* v = c->add_attribute();
    v->set_name("value");
    v->set_type(onnx::AttributeProto::TENSOR);
    *v->mutable_t() = float_tensor("", {1}, {1.0f});
    add_node(m, "Add", {"p", "ones"}, {"y"}, "add");
  }
  add_output(m, "y", {batch_dim, "4"});
  return m;
}

LowerOptions options() {
  LowerOptions o;
  o.name = "m";
  o.archs = {"sm_75"};
  return o;
}

LoadFlags flags(const std::string& batch, std::vector<std::string> shapes = {}) {
  LoadFlags f;
  f.batch = batch;
  f.shapes = std::move(shapes);
  return f;
}

}  // namespace

TEST_CASE("profiles: --batch lists and ranges, --shape ranges and lists, and their usage errors") {
  CHECK(parse_batch_list("8", "--batch") == std::vector<int64_t>{8});
  CHECK(parse_batch_list("32,1,8", "--batch") == std::vector<int64_t>{1, 8, 32});
  CHECK(parse_batch_list("1..32", "--batch") == std::vector<int64_t>{1, 2, 4, 8, 16, 32});
  CHECK(parse_batch_list("3..20", "--batch") == std::vector<int64_t>{3, 4, 8, 16, 20});
  CHECK(parse_batch_list("1/8/32", "--shape x") == std::vector<int64_t>{1, 8, 32});
  CHECK(has(error_of([] { parse_batch_list("1,8,8", "--batch"); }), "batch 8 is given twice"));
  CHECK(has(error_of([] { parse_batch_list("0,4", "--batch"); }), "'0' is not a positive integer"));
  CHECK(has(error_of([] { parse_batch_list("4..4", "--batch"); }), "empty or one batch"));
  CHECK(has(error_of([] { parse_batch_list("1..100000", "--batch"); }), "at most 16"));
  CHECK(has(error_of([] { parse_batch_list("1,,2", "--batch"); }), "'' is not a positive integer"));

  ShapeArg a = parse_shape_arg("x=1..4x3x8x8");
  CHECK(a.name == "x");
  CHECK(a.batches == std::vector<int64_t>{1, 2, 4});
  CHECK(a.shape == Shape{4, 3, 8, 8});
  a = parse_shape_arg("in:0=2/6x5");
  CHECK(a.name == "in:0");
  CHECK(a.batches == std::vector<int64_t>{2, 6});
  a = parse_shape_arg("x=1,3,8,8");  // commas separate dims
  CHECK(a.batches.empty());
  CHECK(a.shape == Shape{1, 3, 8, 8});
  CHECK(has(error_of([] { parse_shape_arg("x=1x2..4"); }), "only the first dim (the batch)"));

  CHECK(batch_profiles(flags("")).empty());
  CHECK(batch_profiles(flags("4")) == std::vector<int64_t>{4});
  CHECK(batch_profiles(flags("", {"x=1..4x8"})) == std::vector<int64_t>{1, 2, 4});
  CHECK(batch_profiles(flags("1,2,4", {"x=1..4x8"})) == std::vector<int64_t>{1, 2, 4});
  CHECK(has(error_of([] { batch_profiles(flags("1,4", {"x=1..4x8"})); }), "give one set of batch profiles"));
  // One batch of several: the --shape's first dim and --batch follow it.
  LoadOptions o = load_options(flags("", {"x=1/8x3", "y=5x2"}), 8);
  CHECK(o.batch == 8);
  CHECK(o.input_shapes.at("x") == Shape{8, 3});
  CHECK(o.input_shapes.at("y") == Shape{5, 2});
  CHECK(has(error_of([] { load_options(flags("1,8")); }), "takes one batch"));
  CHECK(load_options(flags("8")).batch == 8);
  CHECK(load_options(flags("")).batch == 0);
}

TEST_CASE("profiles: one schedule per batch, one weights blob, the batched tensors marked, the folder") {
  const TempDir dir;
  write_bytes(dir / "m.onnx", serialize(mlp(false)));
  const LoweredModel one = lower_model(dir / "m.onnx", flags("4"), options());
  REQUIRE(one.schedules.size() == 1);
  CHECK(one.schedules[0].batch == 4);
  CHECK_FALSE(one.schedules[0].inputs[0].batched);

  const LoweredModel two = lower_model(dir / "m.onnx", flags("1,4"), options());
  REQUIRE(two.schedules.size() == 2);
  const Schedule& s1 = two.schedules[0];
  const Schedule& s4 = two.schedules[1];
  CHECK(s1.batch == 1);
  CHECK(s4.batch == 4);
  CHECK(s1.inputs[0].shape == Shape{1, 8});
  CHECK(s4.inputs[0].shape == Shape{4, 8});
  CHECK(s4.inputs[0].batched);
  CHECK(s4.outputs[0].batched);
  // The weights are the same at both batches: stored once, the blob a single profile's.
  CHECK(s1.weights_bytes == one.schedules[0].weights_bytes);
  CHECK(s4.weights_bytes == s1.weights_bytes);
  CHECK(weights_blob(s1) == weights_blob(s4));
  CHECK(weights_blob(s1) == weights_blob(one.schedules[0]));

  EmitOptions eo;
  eo.source = "m.onnx";
  const auto files = render_profiles(two.profiles(), eo);
  REQUIRE(files.count("m_b1.cu"));
  REQUIRE(files.count("m_b4.cu"));
  CHECK_FALSE(files.count("m_part0.cu"));
  const std::string& cu = files.at("m.cu");
  CHECK(has(cu, "const mc::Profile kProfiles[] = {"));
  // Each profile's kernels and their ids (NAME_kernel_id, --profile).
  CHECK(has(cu, "{1, " + std::to_string(s1.arena_bytes) + "u, m_b1_enqueue, 1, 0, nullptr, " +
                    std::to_string(s1.kernels.size()) + ", kKernelIds0, " +
                    std::to_string(taps_of(s1)) + ", kTaps0},"));
  CHECK(has(cu, "{4, " + std::to_string(s4.arena_bytes) + "u, m_b4_enqueue, 1, 0, nullptr, " +
                    std::to_string(s4.kernels.size()) + ", kKernelIds1, " +
                    std::to_string(taps_of(s4)) + ", kTaps1},"));
  CHECK(has(cu, "const char* const kKernelIds1[] = {\"" + s4.kernels.front().id + "\""));
  CHECK(has(cu, "int m_run_batch(m_ctx* ctx, int64_t batch,"));
  CHECK(has(files.at("m_b4.cu"), "extern \"C\" __global__ void"));
  CHECK(has(files.at("m_b4.cu"), "m_b4_k0("));
  CHECK(has(files.at("m_b1.cu"), "m_b1_k0("));
  CHECK(has(files.at("m.h"), "Batch profiles 1, 4"));
  CHECK(has(files.at("m.h"), "int m_run_batch(m_ctx* ctx, int64_t batch"));
  CHECK(has(files.at("Makefile"), "SOURCES := $(NAME).cu m_b1.cu m_b4.cu"));

  const nlohmann::json r = nlohmann::json::parse(files.at("report.json"));
  CHECK(r["batch_profiles"] == nlohmann::json::array({1, 4}));
  CHECK(r["sources"] == nlohmann::json::array({"m", "m_b1", "m_b4"}));
  CHECK(r["inputs"][0]["batched"] == true);
  REQUIRE(r["profiles"].size() == 2);
  CHECK(r["profiles"][0]["batch"] == 1);
  CHECK(r["profiles"][1]["batch"] == 4);
  CHECK(r["profiles"][1]["kernels"].size() == s4.kernels.size());
  CHECK(r["profiles"][1]["kernels"][0]["launches"][0].get<std::string>().rfind("m_b4_k", 0) == 0);
  CHECK(r["profiles"][0]["inputs"][0]["shape"] == nlohmann::json::array({1, 8}));
  CHECK(r["memory"]["arena_bytes"] == std::max(s1.arena_bytes, s4.arena_bytes));
  CHECK_FALSE(r.contains("kernels"));
  const std::string& md = files.at("report.md");
  CHECK(has(md, "with batch profiles 1, 4"));
  CHECK(has(md, "\n# Batch profile 1\n"));
  CHECK(has(md, "\n# Batch profile 4\n"));

  // One profile: exactly what render_model writes.
  CHECK(render_profiles(one.profiles(), eo) == render_model(one.schedules[0], eo));

  // Kernels in parts: each profile's own.
  eo.max_kernels_per_file = 1;
  const auto parts = render_profiles(two.profiles(), eo);
  CHECK(parts.count("m_b1_part0.cu"));
  CHECK(parts.count("m_b4_part1.cu"));
  CHECK(has(parts.at("m.cu"), "static int m_b4_enqueue("));
}

TEST_CASE("profiles: a constant that depends on the batch is stored per profile, the rest once") {
  const TempDir dir;
  write_bytes(dir / "m.onnx", serialize(mlp(true)));
  const LoweredModel two = lower_model(dir / "m.onnx", flags("2,4"), options());
  const LoweredModel b2 = lower_model(dir / "m.onnx", flags("2"), options());
  const LoweredModel b4 = lower_model(dir / "m.onnx", flags("4"), options());
  const Schedule& s = two.schedules[1];
  // The blob holds W1 and W2 once and the ones of both batches.
  CHECK(s.weights_bytes > b4.schedules[0].weights_bytes);
  CHECK(s.weights_bytes < b2.schedules[0].weights_bytes + b4.schedules[0].weights_bytes);
  int ones = 0;
  for (const WeightEntry& w : s.weights) ones += w.data.shape() == Shape{2, 4} || w.data.shape() == Shape{4, 4};
  CHECK(ones == 2);
  // Every weight view of every profile reads the bytes it read before sharing.
  for (std::size_t p = 0; p < 2; ++p) {
    const Schedule& shared = two.schedules[p];
    const Schedule& alone = (p == 0 ? b2 : b4).schedules[0];
    const std::string blob = weights_blob(shared), own = weights_blob(alone);
    REQUIRE(shared.kernels.size() == alone.kernels.size());
    for (std::size_t k = 0; k < shared.kernels.size(); ++k) {
      for (std::size_t i = 0; i < shared.kernels[k].inputs.size(); ++i) {
        const TensorView& v = shared.kernels[k].inputs[i];
        const TensorView& w = alone.kernels[k].inputs[i];
        if (v.space != Space::weights || v.dtype == DType::undefined) continue;
        CHECK(blob.compare(static_cast<std::size_t>(v.offset), static_cast<std::size_t>(v.nbytes()), own,
                           static_cast<std::size_t>(w.offset), static_cast<std::size_t>(w.nbytes())) == 0);
      }
    }
  }
}

TEST_CASE("profiles: the modelc command, its usage errors and models that hard-code the batch") {
  const TempDir dir;
  write_bytes(dir / "m.onnx", serialize(mlp(false)));
  Result r = run_modelc(dir, "m.onnx --batch 1,4 -o out");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(has(r.out, "batch profiles 1, 4"));
  CHECK(has(r.out, "  batch 4: "));
  CHECK(std::filesystem::exists(dir / "out/m_b4.cu"));
  r = run_modelc(dir, "m.onnx --shape x=1/4x8 -o out2");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  CHECK(read_bytes(dir / "out2/m.cu") == read_bytes(dir / "out/m.cu"));
  CHECK(run_modelc(dir, "m.onnx --batch 4,1,4").code == 2);
  CHECK(run_modelc(dir, "m.onnx --batch 1,4 --shape x=1..8x8").code == 2);
  r = run_modelc(dir, "inspect m.onnx --batch 1,4");
  CHECK(r.code == 2);
  CHECK(has(r.err, "takes one batch"));
  CHECK(run_modelc(dir, "run-reference m.onnx --batch 1,4").code == 2);

  // A fixed batch: re-batched (1 and 4 of a model that fixes 1).
  write_bytes(dir / "fixed.onnx", serialize(mlp(false, "1")));
  r = run_modelc(dir, "fixed.onnx --batch 1,4 -o fixed");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_modelc(dir, "inspect fixed.onnx --batch 3");
  CHECK(r.code == 0);
  CHECK(has(r.out, "float32[3x8]"));

  // A Reshape to [1, -1] before a Softmax: the batch would mix; nothing is written.
  onnx::ModelProto h = empty_model(13);
  add_input(h, "x", {"1", "3", "4"});
  *h.mutable_graph()->add_initializer() = int64_tensor("shape", {1, -1});
  add_node(h, "Reshape", {"x", "shape"}, {"f"}, "flat");
  add_node(h, "Softmax", {"f"}, {"y"}, "softmax");
  add_output(h, "y", {"1", "12"});
  write_bytes(dir / "hard.onnx", serialize(h));
  r = run_modelc(dir, "hard.onnx --batch 2 -o hard");
  CHECK(r.code == 1);
  CHECK(has(r.err, "--batch 2 (the model fixes batch 1)"));
  CHECK(has(r.err, "node 'softmax' (Softmax"));
  CHECK(has(r.err, "works along axis -1"));
  CHECK_FALSE(std::filesystem::exists(dir / "hard"));
  r = run_modelc(dir, "hard.onnx --batch 1,2 -o hard");
  CHECK(r.code == 1);
  CHECK(has(r.err, "softmax"));
  CHECK_FALSE(std::filesystem::exists(dir / "hard"));
}

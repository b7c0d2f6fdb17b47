// pipeline/pipeline: the one list of stages (graph passes, then schedule stages), the flags that
// read it (--disable-pass, --print-after, --verify-each), and docs/ARCHITECTURE.md's copy of it.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "frontend/onnx_import.h"
#include "ops/shape_inference.h"
#include "pipeline/pipeline.h"
#include "schedule/families.h"
#include "support/build_paths.h"
#include "support/error.h"
#include "tests/ir/graph_input.h"

using namespace modelc;
using modelc::test::input;

namespace {

// X -> Identity -> Relu -> Softmax -> Y, and a dead chain X -> Neg -> Abs nothing reads.
void small_graph(Graph& g) {
  g.set_opset(17);
  Value* x = input(g, "X", {4, 8});
  Value* a = g.add_value("a");
  Value* r = g.add_value("r");
  Value* y = g.add_value("Y");
  Value* dead = g.add_value("dead");
  g.add_node("Identity", "id", {x}, {a});
  g.add_node("Relu", "relu", {a}, {r});
  g.add_node("Softmax", "softmax", {r}, {y});
  Value* dead2 = g.add_value("dead2");
  g.add_node("Neg", "unused", {x}, {dead});
  g.add_node("Abs", "unused_too", {dead}, {dead2});
  g.add_output(y);
  ops::infer_graph(g);
}

std::vector<std::string> names() {
  std::vector<std::string> r;
  for (const Stage& s : pipeline()) r.push_back(s.name);
  return r;
}

}  // namespace

TEST_CASE("pipeline: unique names, a needs line each, graph stages before schedule stages") {
  std::set<std::string> seen;
  bool schedule_seen = false;
  for (const Stage& s : pipeline()) {
    INFO(s.name);
    CHECK(seen.insert(s.name).second);
    CHECK(std::string(s.needs).size() > 10);
    CHECK(std::string(s.does).size() > 10);
    CHECK(static_cast<bool>(s.run));
    if (s.kind == StageKind::schedule) schedule_seen = true;
    CHECK_FALSE((schedule_seen && s.kind == StageKind::graph));
  }
  // Every graph pass of passes/pass.h is a stage; the schedule needs a memory plan and tactics.
  for (const char* pass : {"simplify", "fold_constants", "fold_batchnorm", "precision", "fuse_epilogue"}) {
    CHECK(seen.count(pass));
  }
  for (const char* needed : {"list_kernels", "layout", "tactics", "memory_plan", "place_weights"}) CHECK(seen.count(needed));
  const std::string table = describe_pipeline();
  for (const Stage& s : pipeline()) {
    CHECK(table.find(s.name) != std::string::npos);
    CHECK(table.find(s.needs) != std::string::npos);
  }
}

TEST_CASE("pipeline: docs/ARCHITECTURE.md lists the stages of pipeline(), in order, with their needs") {
  const std::string path = std::string(build_source_dir()) + "/docs/ARCHITECTURE.md";
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), path);
  std::string line;
  bool in = false;
  std::vector<std::string> doc_names;
  std::size_t row = 0;
  while (std::getline(f, line)) {
    if (line.rfind("<!-- stages", 0) == 0) in = true;
    if (line.rfind("<!-- /stages", 0) == 0) in = false;
    if (!in || line.rfind("| ", 0) != 0 || line.rfind("| #", 0) == 0) continue;
    // | N | name | kind | optional | needs |
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    REQUIRE(cells.size() >= 5);
    REQUIRE(row < pipeline().size());
    const Stage& s = pipeline()[row++];
    CHECK(cells[0] == std::to_string(row));
    CHECK(cells[1] == s.name);
    CHECK(cells[2] == (s.kind == StageKind::graph ? "graph" : "schedule"));
    CHECK(cells[3].rfind(s.optional ? "yes" : "no", 0) == 0);
    CHECK(cells[4] == s.needs);
    doc_names.push_back(cells[1]);
  }
  CHECK(doc_names == names());
}

TEST_CASE("pipeline: --disable-pass and --print-after take stage names; needed stages cannot be disabled") {
  Graph g;
  small_graph(g);
  LowerOptions o;
  o.passes.disabled = {"no_such_stage"};
  CHECK_THROWS_WITH_AS(lower(g, o), doctest::Contains("--disable-pass: no stage named 'no_such_stage'"), Error);
  o.passes.disabled = {"memory_plan"};
  CHECK_THROWS_WITH_AS(lower(g, o), doctest::Contains("stage 'memory_plan' is needed"), Error);
  o.passes.disabled = {};
  o.passes.print_after = {"nope"};
  CHECK_THROWS_WITH_AS(lower(g, o), doctest::Contains("--print-after: no stage named 'nope'"), Error);
  PassOptions p;
  p.disabled = {"tactics"};
  CHECK_THROWS_AS(run_graph_stages(g, p), Error);
}

TEST_CASE("pipeline: a disabled stage does not run (graph and schedule stages alike)") {
  Graph g;
  small_graph(g);
  PassOptions p;
  p.disabled = {"simplify"};
  run_graph_stages(g, p);
  CHECK(g.nodes_of("Identity").size() == 1);

  Graph h;
  small_graph(h);
  LowerOptions o;
  o.passes.disabled = {"simplify", "remove_dead"};
  const Schedule with_dead = lower(h, o);
  // The Identity is a view (no kernel). Without remove_dead, the Neg whose only reader is the
  // unused Abs still runs (a node with no reader at all never gets a kernel).
  REQUIRE(with_dead.kernels.size() == 3);
  CHECK(with_dead.kernels[2].op.type == "Neg");

  Graph k;
  small_graph(k);
  const Schedule s = lower(k, LowerOptions{});
  REQUIRE(s.kernels.size() == 2);
  CHECK(s.kernels[0].op.type == "Relu");
  CHECK(s.kernels[1].op.type == "Softmax");
}

TEST_CASE("pipeline: count_stage_kernels counts the kernels without each optional stage that runs") {
  Graph g;  // X -> Gemm -> Relu -> Y: fuse_epilogue saves the Relu's kernel
  g.set_opset(17);
  Value* x = input(g, "X", {4, 8});
  Value *m = g.add_value("m"), *y = g.add_value("Y");
  Value* w = g.add_constant("W", Tensor::from_f64(DType::float32, {8, 8}, std::vector<double>(64, 0.5)), true);
  g.add_node("Gemm", "gemm", {x, w}, {m});
  g.add_node("Relu", "relu", {m}, {y});
  g.add_output(y);
  ops::infer_graph(g);
  LowerOptions o;
  o.count_stage_kernels = true;
  o.passes.disabled = {"fold_scale"};
  const Schedule s = lower(g, o);
  // The Schedule is the whole compile's, over g (the counts ran on copies).
  REQUIRE(s.kernels.size() == 1);
  CHECK(s.kernels[0].op.type == "FusedGemm");
  CHECK(g.nodes_of("FusedGemm").size() == 1);
  std::map<std::string, StageKernels> by_stage;
  for (const StageKernels& k : s.stage_kernels) by_stage[k.stage] = k;
  REQUIRE(by_stage.count("fuse_epilogue"));
  CHECK(by_stage["fuse_epilogue"].kernels_without == 2);
  CHECK(by_stage["fuse_epilogue"].kernels == 1);
  CHECK(by_stage["fuse_epilogue"].error.empty());
  REQUIRE(by_stage.count("elide_concat"));
  CHECK(by_stage["elide_concat"].kernels_without == 1);
  CHECK_FALSE(by_stage.count("precision"));     // runs with --fp16 only
  CHECK_FALSE(by_stage.count("fold_scale"));    // disabled
  CHECK_FALSE(by_stage.count("memory_plan"));   // not optional
  for (const Stage& st : pipeline()) {
    if (st.optional && !st.runs_for && st.name != std::string("fold_scale")) CHECK_MESSAGE(by_stage.count(st.name), st.name);
  }
  // Without the flag, no counts.
  Graph h;
  small_graph(h);
  CHECK(lower(h, LowerOptions{}).stage_kernels.empty());
}

TEST_CASE("pipeline: count_stage_kernels gives what a compile with --disable-pass gives, on the shipped models") {
  // The counts start from the graph the stages before the stage left, stop once the kernel count
  // is final, and take the compile itself when the stage changed nothing: the definition is a
  // whole compile without the stage. Between them the models change the graph in every stage.
  std::map<std::string, int> saving;  // stage -> the models on which it saves kernels
  for (const std::string model : {"tiny_cnn", "tiny_mlp", "tiny_inception", "tiny_encoder", "tiny_transformer"}) {
    for (const bool fp16 : {false, true}) {
      CAPTURE(model);
      CAPTURE(fp16);
      const std::string path = build_source_dir() + ("/models/" + model + ".onnx");
      LowerOptions o;
      o.archs = {"sm_90"};
      o.passes.fp16 = fp16;
      o.count_stage_kernels = true;
      const Schedule s = lower(*load_onnx(path), o);
      REQUIRE_FALSE(s.stage_kernels.empty());
      for (const StageKernels& k : s.stage_kernels) {
        CAPTURE(k.stage);
        LowerOptions without = o;
        without.count_stage_kernels = false;
        without.passes.disabled.insert(k.stage);
        CHECK(k.error.empty());
        CHECK(k.kernels == static_cast<int64_t>(s.kernels.size()));
        CHECK(k.kernels_without == static_cast<int64_t>(lower(*load_onnx(path), without).kernels.size()));
        if (k.kernels_without != k.kernels) ++saving[k.stage];
      }
    }
  }
  for (const char* stage : {"fold_constants", "precision", "sink_reshapes", "fuse_epilogue", "fold_scale",
                            "elide_concat", "fold_operand_views", "fuse_horizontal"}) {
    CHECK_MESSAGE(saving[stage] > 0, std::string(stage));
  }
}

TEST_CASE("pipeline: the stages that keep the kernel count come after every stage that may change it") {
  // lower() checks each one's count; a stage that keeps it among the ones that list the kernels
  // would let the counts of kernels without a stage stop too early, so none is before them.
  bool keeping = false;
  for (const Stage& s : pipeline()) {
    CAPTURE(s.name);
    if (s.keeps_kernel_count) CHECK(s.kind == StageKind::schedule);
    CHECK((keeping && !s.keeps_kernel_count) == false);
    keeping = keeping || s.keeps_kernel_count;
  }
  CHECK(keeping);
}

TEST_CASE("pipeline: --print-after prints the graph, then the schedule built so far") {
  Graph g;
  small_graph(g);
  std::ostringstream log;
  LowerOptions o;
  o.passes.print_after = {"simplify", "list_kernels", "memory_plan", "tactics"};
  o.passes.log = &log;
  const Schedule s = lower(g, o);
  const std::string text = log.str();
  INFO(text);
  const auto at = [&](const std::string& part) { return text.find(part); };
  REQUIRE(at("// after simplify\n") != std::string::npos);
  REQUIRE(at("// after list_kernels\n") != std::string::npos);
  REQUIRE(at("// after memory_plan\n") != std::string::npos);
  REQUIRE(at("// after tactics\n") != std::string::npos);
  CHECK(at("// after simplify\n") < at("// after list_kernels\n"));
  CHECK(at("// after list_kernels\n") < at("// after tactics\n"));
  // The graph passes print the graph only; list_kernels the kernels, their families and views.
  const std::string after_simplify = text.substr(0, at("// after list_kernels\n"));
  CHECK(after_simplify.find("kernels (") == std::string::npos);
  CHECK(at("kernels (2):\n  k0 elementwise Relu 'relu'\n    in:  X float32[4x8] strides [8,1] input#0\n"
           "    out: r float32[4x8] strides [8,1] arena b") != std::string::npos);
  CHECK(at("  k1 softmax Softmax 'softmax'\n") != std::string::npos);
  // memory_plan: the arena and its one buffer (r, 4x8 floats; Y is the caller's).
  CHECK(at("arena: 256 bytes (256 without reuse, 256 live at most; placed largest first)\n  r: [0, 128) live #0..#1\n") != std::string::npos);
  // tactics: each kernel's views, tactic and note.
  REQUIRE(at("// after tactics\n") < at("// after memory_plan\n"));  // decide first, place last
  const std::string after_tactics = text.substr(at("// after tactics\n"), at("// after memory_plan\n") - at("// after tactics\n"));
  CHECK(after_tactics.find("k0 elementwise Relu 'relu'") != std::string::npos);
  CHECK(after_tactics.find("k1 softmax Softmax 'softmax'") != std::string::npos);
  CHECK(after_tactics.find("    tactic: ") != std::string::npos);
  CHECK(after_tactics.find("    note: " + s.kernels[1].note + "\n") != std::string::npos);
  CHECK(after_tactics.find("Y float32[4x8] strides [8,1] output#0") != std::string::npos);
  CHECK(after_tactics.find("arena: ") == std::string::npos);  // not planned yet
}

TEST_CASE("pipeline: --verify-each checks every stage, and the result is the same as without it") {
  Graph a, b;
  small_graph(a);
  small_graph(b);
  LowerOptions o;
  o.passes.fp16 = true;
  const Schedule plain = lower(a, o);
  o.passes.verify_each = true;
  const Schedule checked = lower(b, o);
  REQUIRE(plain.kernels.size() == checked.kernels.size());
  for (std::size_t i = 0; i < plain.kernels.size(); ++i) {
    CHECK(plain.kernels[i].note == checked.kernels[i].note);
    CHECK(tactic_fields(plain.kernels[i].tactic) == tactic_fields(checked.kernels[i].tactic));
  }
  CHECK(plain.arena_bytes == checked.arena_bytes);
}

TEST_CASE("pipeline: --fp16 runs precision and fold_boundary_casts; disabling the fold keeps the Cast kernels") {
  Graph a, b;
  small_graph(a);
  small_graph(b);
  LowerOptions o;
  o.passes.fp16 = true;
  const Schedule folded = lower(a, o);
  CHECK(folded.kernels.size() == 2);  // both boundary Casts folded into Relu and Softmax
  REQUIRE(folded.precision.has_value());
  o.passes.disabled = {"fold_boundary_casts"};
  const Schedule kept = lower(b, o);
  CHECK(kept.kernels.size() == 4);  // Cast, Relu, Softmax, Cast
  CHECK(kept.kernels.front().op.type == "Cast");
  CHECK(kept.kernels.back().op.type == "Cast");
}

TEST_CASE("pipeline: --verify-each names the stage after which the schedule is broken") {
  // A family whose tactic rule decides nothing: list_kernels lists the kernel, the tactics stage
  // leaves it without a tactic, and the schedule verifier says so.
  if (!find_family("test_no_tactic")) {
    FamilyFacts f;
    f.name = "test_no_tactic";
    f.choose_tactic = [](Kernel&, const std::vector<Target>&) {};
    register_family(std::move(f));
  }
  Graph a, b;
  small_graph(a);
  small_graph(b);
  LowerOptions o;
  o.family_substitutes = {{"elementwise", "test_no_tactic"}};
  CHECK_NOTHROW(lower(a, o));  // unchecked, the hole goes unnoticed until codegen
  o.passes.verify_each = true;
  CHECK_THROWS_WITH_AS(lower(b, o), "after stage tactics: internal: schedule: kernel k0 has no tactic", Error);
}

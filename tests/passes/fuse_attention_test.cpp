// passes/fuse_attention (fuse_attention, fuse_residual_norm) and the ops they make
// (modelc.Attention: ops/attention.cpp; modelc.ResidualNorm: ops/residual_norm.cpp).
//
// Small graphs in the forms exporters write — GPT-2's packed projection split into Q, K, V with a
// Where(mask, -inf) causal mask; torch's scaled_dot_product_attention export (q and k^T each scaled
// by sqrt(scale), an additive mask input); a windowed transformer's qkv Gather over a transposed
// packed product, with a relative position bias and a window mask added in the [B / nW, nW, H, S, S]
// frame — and the refusals (head dim 12, an FP32 compile, the softmax read twice, a V that is no
// strided view, three bias terms, a scale after the bias):
// the structure of the fused node (its views, bias views, scale, causal flag) and the reference
// interpreter's output before and after (to 1e-6 of the output's largest magnitude). Then the models:
// tiny_transformer and tiny_encoder (models/), and from the e2e export (build/models) the BERT-like
// encoder, the GPT-2 block and swin_t at 64x64: every attention fused, counted, the output unchanged.
// The exported models' cases are skipped in the unit run while build/models lacks them; ctest's
// e2e_fuse_attention_models runs GPT-2 and swin_t after the export (--no-skip: a missing model fails
// it), e2e_fuse_attention_bert (label long) the BERT-like encoder.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "frontend/onnx_import.h"
#include "ops/attention.h"
#include "ops/registry.h"
#include "ops/shape_inference.h"
#include "passes/fuse_attention.h"
#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "support/build_paths.h"
#include "tests/passes/graph_data.h"

using namespace modelc;

namespace {

using test::max_rel_diff;

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> r;
  for (const auto& n : g.nodes()) r[n->op()]++;
  return r;
}
int count(const Graph& g, const std::string& op) {
  const auto c = op_counts(g);
  return c.count(op) ? c.at(op) : 0;
}

/// Builds a graph one node at a time.
struct Builder {
  Graph g;
  uint64_t seed = 1;
  explicit Builder(int opset = 17) { g.set_opset(opset); }
  Value* in(const char* name, Shape s) {
    Value* v = g.add_value(name);
    v->set_type(DType::float32, std::move(s));
    g.add_input(v);
    return v;
  }
  /// A weight: sin((0.37 + 0.11 k) (i + 1)) x scale for the k-th weight made (test::ramp).
  Value* w(const std::string& name, Shape s, double scale = 0.5) {
    std::vector<double> v = test::ramp(s, 0.37 + 0.11 * static_cast<double>(seed++)).to_f64();
    for (double& x : v) x *= scale;
    return g.add_constant(name, Tensor::from_f64(DType::float32, s, v), true);
  }
  Value* ints(const std::string& name, std::vector<int64_t> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return g.add_constant(name, Tensor::from_i64(DType::int64, {n}, v));
  }
  Value* scalar(const std::string& name, double v) { return g.add_constant(name, Tensor::from_f64(DType::float32, {}, {v})); }
  Value* node(const char* op, const std::string& name, const std::vector<Value*>& inputs) {
    Value* out = g.add_value(name + "_out");
    g.add_node(op, name, inputs, {out});
    return out;
  }
  std::vector<Value*> nodes(const char* op, const std::string& name, const std::vector<Value*>& inputs, int outputs) {
    std::vector<Value*> outs;
    for (int i = 0; i < outputs; ++i) outs.push_back(g.add_value(name + "_out" + std::to_string(i)));
    g.add_node(op, name, inputs, outs);
    return outs;
  }
  Value* reshape(Value* x, std::vector<int64_t> to, const std::string& name) {
    return node("Reshape", name, {x, ints(name + ".shape", std::move(to))});
  }
  Value* transpose(Value* x, std::vector<int64_t> perm, const std::string& name) {
    Value* y = node("Transpose", name, {x});
    g.nodes().back()->set_attr_ints("perm", std::move(perm));
    return y;
  }
  Value* softmax(Value* x, const std::string& name) {
    Value* y = node("Softmax", name, {x});
    g.nodes().back()->set_attr_int("axis", -1);
    return y;
  }
  void finish(Value* out) {
    g.add_output(out);
    ops::infer_graph(g);
  }
};

PassOptions fp16_compile() {
  PassOptions o;
  o.fp16 = true;  // the pass fuses where the program stores FP16 (it runs before precision)
  return o;
}

/// Runs fuse_attention (and fuse_residual_norm when `norms`) and checks the reference output does
/// not change; returns the outcomes.
std::vector<AttentionOutcome> fuse_checked(Graph& g, const PassOptions& o = fp16_compile(), bool norms = false,
                                           std::vector<ResidualNormOutcome>* norm_outcomes = nullptr) {
  const TensorMap in = random_inputs(g, 7);
  const TensorMap before = run_reference(g, in);
  std::vector<AttentionOutcome> out;
  fuse_attention(g, o, &out);
  if (norms) fuse_residual_norm(g, o, norm_outcomes);
  g.verify();
  std::map<const Value*, std::string> types;
  for (const Value* v : g.values()) types[v] = v->type_str();
  ops::infer_graph(g);
  for (const Value* v : g.values()) CHECK_MESSAGE(v->type_str() == types[v], v->name());
  const TensorMap after = run_reference(g, in);
  for (const auto& entry : before) CHECK_MESSAGE(max_rel_diff(entry.second, after.at(entry.first)) <= 1e-6, entry.first);
  return out;
}

Node* only(Graph& g, const std::string& op) {
  Node* r = nullptr;
  for (const auto& n : g.nodes()) {
    if (n->op() == op) {
      REQUIRE(r == nullptr);
      r = n.get();
    }
  }
  REQUIRE(r != nullptr);
  return r;
}

std::string reasons(const std::vector<AttentionOutcome>& out) {
  std::string r;
  for (const AttentionOutcome& o : out) r += o.softmax + ": " + (o.fused ? "fused" : o.reason) + "\n";
  return r;
}

/// GPT-2's attention: c_attn [B, S, 3E] split into q, k, v; heads by Reshape + Transpose; scores
/// scaled by Mul, causal mask by Where(mask, -inf, s); c_proj after the heads are merged back.
Value* gpt2_attention(Builder& b, Value* x, int64_t B, int64_t S, int64_t H, int64_t D, bool mask = true) {
  const int64_t E = H * D;
  Value* qkv = b.node("MatMul", "c_attn", {x, b.w("c_attn.W", {E, 3 * E})});
  std::vector<Value*> parts = b.nodes("Split", "split", {qkv, b.ints("split.sizes", {E, E, E})}, 3);
  b.g.nodes().back()->set_attr_int("axis", 2);
  Value* q = b.transpose(b.reshape(parts[0], {B, S, H, D}, "q.view"), {0, 2, 1, 3}, "q.t");
  Value* kt = b.transpose(b.reshape(parts[1], {B, S, H, D}, "k.view"), {0, 2, 3, 1}, "k.t");
  Value* v = b.transpose(b.reshape(parts[2], {B, S, H, D}, "v.view"), {0, 2, 1, 3}, "v.t");
  Value* s = b.node("Mul", "scale", {b.node("MatMul", "qk", {q, kt}), b.scalar("scale.c", 1.0 / std::sqrt(double(D)))});
  if (mask) {
    std::vector<int64_t> m;
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j) m.push_back(j > i ? 1 : 0);
    Value* cond = b.g.add_constant("mask", Tensor::from_i64(DType::boolean, {S, S}, m));
    s = b.node("Where", "masked_fill", {cond, b.scalar("neg_inf", -INFINITY), s});
  }
  Value* p = b.softmax(s, "softmax");
  Value* o = b.node("MatMul", "pv", {p, v});
  Value* merged = b.reshape(b.transpose(o, {0, 2, 1, 3}, "o.t"), {B, S, E}, "o.view");
  return b.node("MatMul", "c_proj", {merged, b.w("c_proj.W", {E, E})});
}

}  // namespace

TEST_CASE("fuse_attention: GPT-2's packed projection and causal Where mask (B 2, S 5, H 2, D 8)") {
  Builder b;
  Value* x = b.in("x", {2, 5, 16});
  b.finish(gpt2_attention(b, x, 2, 5, 2, 8));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  Node* a = only(b.g, "Attention");
  CHECK(a->domain() == ops::kModelcDomain);
  const ops::AttentionSpec s = ops::attention_spec(*a);
  CHECK(s.batch == 2);
  CHECK(s.heads == 2);
  CHECK(s.q_length == 5);
  CHECK(s.kv_length == 5);
  CHECK(s.head_dim == 8);
  // Q, K, V: columns 0, 16, 32 of the packed [2, 5, 48] product; O: heads interleaved [2, 5, 16].
  CHECK(s.q == ops::HeadView{0, 5 * 48, 8, 48});
  CHECK(s.k == ops::HeadView{16, 5 * 48, 8, 48});
  CHECK(s.v == ops::HeadView{32, 5 * 48, 8, 48});
  CHECK(s.o == ops::HeadView{0, 5 * 16, 8, 16});
  CHECK(s.causal);
  CHECK(s.causal_offset == 0);
  CHECK(s.bias.empty());
  CHECK(s.scale == doctest::Approx(1.0 / std::sqrt(8.0)));
  // One packed value read three times; no view op, Softmax or Where left; the node covers the ONNX
  // nodes from the scores to the merged heads.
  CHECK(&a->input(0) == &a->input(1));
  CHECK(&a->input(1) == &a->input(2));
  CHECK(a->input(0).producer()->name() == "c_attn");
  CHECK(count(b.g, "Transpose") == 0);
  CHECK(count(b.g, "Reshape") == 0);
  CHECK(count(b.g, "Split") == 0);
  CHECK(count(b.g, "Softmax") == 0);
  CHECK(count(b.g, "Where") == 0);
  CHECK(count(b.g, "MatMul") == 2);  // c_attn, c_proj
  const std::vector<std::string> covers = a->covers();
  for (const char* n : {"qk", "scale", "masked_fill", "softmax", "pv", "o.t", "o.view"}) {
    CHECK_MESSAGE(std::find(covers.begin(), covers.end(), n) != covers.end(), n);
  }
}

TEST_CASE("fuse_attention: torch's scaled_dot_product_attention export (sqrt(scale) on q and k^T, an additive mask input)") {
  // [B, S, E] -> three projections -> [B, H, S, D]; SDPA: Mul(q, sqrt(s)), Mul(Transpose(k), sqrt(s)),
  // MatMul, Add(mask), Softmax, MatMul; the padding mask a graph input [B, 1, 1, S].
  const int64_t B = 2, S = 6, H = 2, D = 8, E = H * D;
  Builder b;
  Value* x = b.in("x", {B, S, E});
  Value* mask = b.in("mask", {B, 1, 1, S});
  auto heads = [&](const char* n) {
    Value* p = b.node("MatMul", std::string(n) + ".proj", {x, b.w(std::string(n) + ".W", {E, E})});
    return b.transpose(b.reshape(p, {B, S, H, D}, std::string(n) + ".view"), {0, 2, 1, 3}, std::string(n) + ".t");
  };
  Value* q = heads("q");
  Value* k = heads("k");
  Value* v = heads("v");
  const double sq = std::sqrt(1.0 / std::sqrt(double(D)));
  Value* qs = b.node("Mul", "q.scaled", {q, b.scalar("sqrt_scale_q", sq)});
  Value* ks = b.node("Mul", "k.scaled", {b.transpose(k, {0, 1, 3, 2}, "k.T"), b.scalar("sqrt_scale_k", sq)});
  Value* s = b.node("Add", "add_mask", {b.node("MatMul", "qk", {qs, ks}), mask});
  Value* o = b.node("MatMul", "pv", {b.softmax(s, "softmax"), v});
  b.finish(b.reshape(b.transpose(o, {0, 2, 1, 3}, "o.t"), {B, S, E}, "o.view"));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  Node* a = only(b.g, "Attention");
  const ops::AttentionSpec s2 = ops::attention_spec(*a);
  CHECK(s2.scale == doctest::Approx(1.0 / std::sqrt(8.0)));
  CHECK_FALSE(s2.causal);
  REQUIRE(s2.bias.size() == 1);
  CHECK(&a->input(ops::kAttentionBias0) == mask);
  CHECK(s2.bias[0] == ops::BiasView{0, B, S, 0, 0, 1});  // [B, 1, 1, S]: per batch and key
  CHECK(a->input(0).producer()->name() == "q.proj");
  CHECK(a->input(1).producer()->name() == "k.proj");
  CHECK(s2.q == ops::HeadView{0, S * E, D, E});
  CHECK(count(b.g, "Mul") == 0);
  CHECK(count(b.g, "Transpose") == 0);
  // The graph's output is the op's: a graph output written in place.
  CHECK(a->output(0).is_graph_output());
}

TEST_CASE("fuse_attention: shifted windows (Gather of q, k, v; relative bias; a window mask added in the [B / nW, nW, H, S, S] frame)") {
  const int64_t Images = 2, nW = 2, B = Images * nW, N = 9, H = 2, D = 8, E = H * D;
  Builder b;
  Value* x = b.in("x", {B, N, E});
  Value* qkv = b.node("MatMul", "qkv", {x, b.w("qkv.W", {E, 3 * E})});
  Value* t = b.transpose(b.reshape(qkv, {B, N, 3, H, D}, "qkv.view"), {2, 0, 3, 1, 4}, "qkv.t");
  auto pick = [&](int64_t i, const char* n) {
    Value* idx = b.g.add_constant(std::string(n) + ".idx", Tensor::from_i64(DType::int64, {}, {i}));
    return b.node("Gather", n, {t, idx});
  };
  Value* q = b.node("Mul", "q.scaled", {pick(0, "q"), b.scalar("scale", 1.0 / std::sqrt(double(D)))});
  Value* k = pick(1, "k");
  Value* v = pick(2, "v");
  Value* s = b.node("MatMul", "qk", {q, b.transpose(k, {0, 1, 3, 2}, "k.T")});
  s = b.node("Add", "add_rel", {s, b.w("rel_bias", {1, H, N, N}, 2.0)});
  s = b.reshape(s, {Images, nW, H, N, N}, "windows");
  // Window w masks the pairs in different regions (region of token i: i < 3 * w ? 0 : 1).
  std::vector<double> m;
  for (int64_t w = 0; w < nW; ++w)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j) m.push_back((i < 3 * (w + 1)) != (j < 3 * (w + 1)) ? -100.0 : 0.0);
  s = b.node("Add", "add_mask", {s, b.g.add_constant("window_mask", Tensor::from_f64(DType::float32, {1, nW, 1, N, N}, m))});
  s = b.reshape(s, {B, H, N, N}, "unwindows");
  Value* o = b.node("MatMul", "pv", {b.softmax(s, "softmax"), v});
  b.finish(b.reshape(b.transpose(o, {0, 2, 1, 3}, "o.t"), {B, N, E}, "o.view"));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  Node* a = only(b.g, "Attention");
  const ops::AttentionSpec sp = ops::attention_spec(*a);
  CHECK(sp.batch == B);
  CHECK(sp.heads == H);
  // q, k, v: element (b, h, n, d) of [B, N, 3, H, D] at b 3NE + n 3E + i E + h D + d.
  CHECK(sp.q == ops::HeadView{0, N * 3 * E, D, 3 * E});
  CHECK(sp.k == ops::HeadView{E, N * 3 * E, D, 3 * E});
  CHECK(sp.v == ops::HeadView{2 * E, N * 3 * E, D, 3 * E});
  REQUIRE(sp.bias.size() == 2);
  CHECK(sp.bias[0] == ops::BiasView{0, 1, 0, N * N, N, 1});   // [1, H, N, N]
  CHECK(sp.bias[1] == ops::BiasView{0, nW, N * N, 0, N, 1});  // [nW, 1, N, N] at b % nW
  CHECK(count(b.g, "Gather") == 0);
  CHECK(count(b.g, "Reshape") == 0);
}

TEST_CASE("fuse_attention: what the kernel cannot take stays unfused, with the reason") {
  SUBCASE("head dim 12") {
    Builder b;
    b.finish(gpt2_attention(b, b.in("x", {1, 4, 24}), 1, 4, 2, 12));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK_FALSE(out[0].fused);
    CHECK(out[0].reason.find("head dim 12") != std::string::npos);
    CHECK(count(b.g, "Attention") == 0);
    CHECK(count(b.g, "Softmax") == 1);
  }
  SUBCASE("an FP32 compile") {
    Builder b;
    b.finish(gpt2_attention(b, b.in("x", {1, 4, 16}), 1, 4, 2, 8));
    const auto out = fuse_checked(b.g, PassOptions{});
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.find("FP32") != std::string::npos);
    CHECK(count(b.g, "Attention") == 0);
  }
  SUBCASE("BF16 below sm_80 (no BF16 MMA); sm_80 takes it") {
    for (int sm : {75, 80}) {
      Builder b;
      b.finish(gpt2_attention(b, b.in("x", {1, 4, 16}), 1, 4, 2, 8));
      PassOptions o;
      o.bf16 = true;
      o.min_sm = sm;
      const auto out = fuse_checked(b.g, o);
      REQUIRE(out.size() == 1);
      CHECK(out[0].fused == (sm == 80));
      if (sm == 75) CHECK(out[0].reason.find("BF16 operands on sm_75") != std::string::npos);
    }
  }
  SUBCASE("precision disabled, or a covered node pinned to FP32") {
    for (int pin = 0; pin < 2; ++pin) {
      Builder b;
      b.finish(gpt2_attention(b, b.in("x", {1, 4, 16}), 1, 4, 2, 8));
      PassOptions o = fp16_compile();
      if (pin) {
        o.keep_fp32.push_back(b.g.nodes_of("Softmax")[0]->name());
      } else {
        o.disabled.insert("precision");
      }
      const auto out = fuse_checked(b.g, o);
      REQUIRE(out.size() == 1);
      CHECK_FALSE(out[0].fused);
      CHECK(out[0].reason.find(pin ? "--keep-fp32" : "precision stage is disabled") != std::string::npos);
    }
  }
  SUBCASE("a classifier's Softmax (no product reads it) is no candidate") {
    Builder b;
    Value* logits = b.node("MatMul", "fc", {b.in("x", {1, 16}), b.w("w", {16, 10})});
    b.finish(b.softmax(logits, "probs"));
    CHECK(fuse_checked(b.g).empty());
  }
  SUBCASE("the attention weights are an output too") {
    Builder b;
    b.finish(gpt2_attention(b, b.in("x", {1, 4, 16}), 1, 4, 2, 8, false));
    b.g.add_output(&b.g.nodes_of("Softmax")[0]->output(0));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.find("not read by one MatMul only") != std::string::npos);
  }
  SUBCASE("V through a reshape that would copy") {
    const int64_t S = 4, H = 2, D = 8;
    Builder b;
    Value* s = b.node("MatMul", "qk", {b.in("q", {1, H, S, D}), b.transpose(b.in("k", {1, H, S, D}), {0, 1, 3, 2}, "k.T")});
    // [1, H, S, D] -> [1, H, D, S] -> read back as [1, H, S, D]: no strided view of the input.
    Value* v = b.reshape(b.transpose(b.in("v", {1, H, S, D}), {0, 1, 3, 2}, "v.T"), {1, H, S, D}, "v.scrambled");
    b.finish(b.node("MatMul", "pv", {b.softmax(s, "softmax"), v}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.find("not a strided view") != std::string::npos);
  }
  SUBCASE("a 1-D query") {
    Builder b;
    Value* s = b.node("MatMul", "qk", {b.in("q", {8}), b.transpose(b.in("k", {2, 4, 8}), {0, 2, 1}, "k.T")});
    b.finish(b.node("MatMul", "pv", {b.softmax(s, "softmax"), b.in("v", {2, 4, 8})}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.find("1-D") != std::string::npos);
  }
  SUBCASE("three bias terms") {
    const int64_t S = 4, H = 2, D = 8;
    Builder b;
    Value* q = b.in("q", {1, H, S, D});
    Value* k = b.in("k", {1, H, S, D});
    Value* v = b.in("v", {1, H, S, D});
    Value* s = b.node("MatMul", "qk", {q, b.transpose(k, {0, 1, 3, 2}, "k.T")});
    for (int t = 0; t < 3; ++t) s = b.node("Add", "bias" + std::to_string(t), {s, b.w("b" + std::to_string(t), {1, H, S, S})});
    b.finish(b.node("MatMul", "pv", {b.softmax(s, "softmax"), v}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    INFO(out[0].reason);
    CHECK(out[0].reason.find("3 bias terms") != std::string::npos);
  }
  SUBCASE("a scale after the bias") {
    const int64_t S = 4, H = 2, D = 8;
    Builder b;
    Value* s = b.node("MatMul", "qk", {b.in("q", {1, H, S, D}), b.transpose(b.in("k", {1, H, S, D}), {0, 1, 3, 2}, "k.T")});
    s = b.node("Mul", "late_scale", {b.node("Add", "bias", {s, b.w("b", {1, H, S, S})}), b.scalar("c", 0.5)});
    b.finish(b.node("MatMul", "pv", {b.softmax(s, "softmax"), b.in("v", {1, H, S, D})}));
    const auto out = fuse_checked(b.g);
    REQUIRE(out.size() == 1);
    CHECK(out[0].reason.find("after a bias term") != std::string::npos);
  }
}

TEST_CASE("fuse_attention: separate Q, K, V inputs in [B, H, S, D] (no projection), Sq != Skv, an all-zero bias dropped") {
  const int64_t B = 1, H = 3, Sq = 3, Skv = 7, D = 16;
  Builder b;
  Value* q = b.in("q", {B, H, Sq, D});
  Value* k = b.in("k", {B, H, Skv, D});
  Value* v = b.in("v", {B, H, Skv, D});
  Value* s = b.node("Div", "scale", {b.node("MatMul", "qk", {q, b.transpose(k, {0, 1, 3, 2}, "k.T")}), b.scalar("c", 4.0)});
  s = b.node("Add", "zero_bias", {s, b.g.add_constant("zeros", Tensor::from_f64(DType::float32, {1, 1, 1, Skv}, std::vector<double>(Skv, 0.0)))});
  b.finish(b.node("MatMul", "pv", {b.softmax(s, "softmax"), v}));
  const auto out = fuse_checked(b.g);
  INFO(reasons(out));
  REQUIRE(out.size() == 1);
  CHECK(out[0].fused);
  const ops::AttentionSpec sp = ops::attention_spec(*only(b.g, "Attention"));
  CHECK(sp.bias.empty());
  CHECK(sp.scale == 0.25);
  CHECK(sp.k == ops::HeadView{0, 0, Skv * D, D});  // batch 1: its stride is 0
  CHECK(sp.o == ops::HeadView{0, 0, Sq * D, D});
}

TEST_CASE("modelc.Attention: attribute checks name the node") {
  Builder b;
  b.finish(gpt2_attention(b, b.in("x", {1, 4, 16}), 1, 4, 2, 8));
  fuse_attention(b.g, fp16_compile());
  Node* a = only(b.g, "Attention");
  auto error_of = [&](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto o_view = a->attr_ints("o_view");
  a->set_attr_ints("o_view", {0, 64, 0, 16});  // both heads onto one place
  CHECK(error_of([&] { ops::attention_spec(*a); }).find("twice") != std::string::npos);
  a->set_attr_ints("o_view", o_view);
  const auto q_view = a->attr_ints("q_view");
  a->set_attr_ints("q_view", {100, 192, 8, 48});
  CHECK(error_of([&] { ops::attention_spec(*a); }).find("q_view reaches element") != std::string::npos);
  a->set_attr_ints("q_view", q_view);
  a->set_attr_int("kv_heads", 3);
  CHECK(error_of([&] { ops::attention_spec(*a); }).find("does not divide") != std::string::npos);
  a->remove_attr("kv_heads");
  CHECK_NOTHROW(ops::attention_spec(*a));
}

// ---- residual + LayerNorm ------------------------------------------------------------------------

TEST_CASE("fuse_residual_norm: post-norm (the product's bias taken), pre-norm (the sum kept for the next residual)") {
  const int64_t S = 5, E = 16;
  Builder b;
  Value* x = b.in("x", {1, S, E});
  Value* y = b.node("Add", "proj.bias", {b.w("proj.b", {E}), b.node("MatMul", "proj", {x, b.w("proj.W", {E, E})})});
  Value* h = b.node("Add", "residual", {x, y});
  Value* n1 = b.node("LayerNormalization", "norm1", {h, b.w("g1", {E}), b.w("b1", {E})});
  // Pre-norm: h2 = n1 + f(n1) feeds a norm and the next residual add.
  Value* f = b.node("MatMul", "ff", {n1, b.w("ff.W", {E, E})});
  Value* h2 = b.node("Add", "residual2", {n1, f});
  Value* n2 = b.node("LayerNormalization", "norm2", {h2, b.w("g2", {E}), b.w("b2", {E})});
  b.finish(b.node("Add", "residual3", {h2, b.node("MatMul", "ff2", {n2, b.w("ff2.W", {E, E})})}));
  std::vector<ResidualNormOutcome> norms;
  fuse_checked(b.g, fp16_compile(), true, &norms);
  REQUIRE(norms.size() == 2);
  CHECK(norms[0].fused);
  CHECK(norms[1].fused);
  REQUIRE(count(b.g, "ResidualNorm") == 2);
  CHECK(count(b.g, "LayerNormalization") == 0);
  const Node* r1 = b.g.nodes_of("ResidualNorm")[0];
  const Node* r2 = b.g.nodes_of("ResidualNorm")[1];
  CHECK(r1->input(0).producer()->name() == "proj");  // X: the product, its bias Add taken as input 4
  CHECK(&r1->input(1) == x);
  CHECK(r1->input(4).name() == "proj.b");
  CHECK(r1->num_outputs() == 1);
  CHECK(r2->num_outputs() == 2);  // h2 is also the next residual
  CHECK(r2->output(1).users().size() == 1);
  CHECK(r2->output(1).users()[0]->name() == "residual3");
  CHECK(r2->num_inputs() == 4);  // no bias
}

TEST_CASE("fuse_residual_norm: refusals (normalized over two dims, rows of 12, a Scale given at run time)") {
  Builder b;
  Value* x = b.in("x", {2, 3, 12});
  Value* r = b.in("r", {2, 3, 12});
  Value* h = b.node("Add", "add", {x, r});
  b.g.add_output(b.node("LayerNormalization", "two_dims", {h, b.w("g", {3, 12})}));
  b.g.nodes().back()->set_attr_int("axis", -2);
  b.g.add_output(b.node("LayerNormalization", "rows12", {h, b.w("g2", {12})}));
  b.finish(b.node("LayerNormalization", "computed_scale", {h, b.in("gamma", {12})}));
  std::vector<ResidualNormOutcome> norms;
  fuse_checked(b.g, fp16_compile(), true, &norms);
  REQUIRE(norms.size() == 3);
  INFO(norms[0].reason << "; " << norms[1].reason << "; " << norms[2].reason);
  CHECK(norms[0].reason.find("more than the last dim") != std::string::npos);
  CHECK(norms[1].reason.find("rows of 12") != std::string::npos);
  CHECK(norms[2].reason.find("computed at run time") != std::string::npos);
  CHECK(count(b.g, "ResidualNorm") == 0);
}

// ---- models ----------------------------------------------------------------------------------------

namespace {

struct ModelRun {
  int softmax = 0, attention = 0, residual_norm = 0, layernorm_before = 0;
  std::map<std::string, int> after;
  std::string reasons;
};

/// Loads a model, folds it (simplify, fold_constants, fold_pads), runs both fusions for an FP16
/// compile, checks the graph and the reference output (1e-6 of its largest magnitude).
ModelRun run_model(const std::string& path) {
  REQUIRE_MESSAGE(std::filesystem::exists(path), path << " is missing: run ctest -R e2e_export first");
  std::unique_ptr<Graph> g = load_onnx(path);
  PassOptions o = fp16_compile();
  for (const char* stage : {"simplify", "fold_constants", "fold_pads"}) run_graph_stage(*g, o, stage);
  ModelRun r;
  r.softmax = count(*g, "Softmax");
  r.layernorm_before = count(*g, "LayerNormalization");
  const TensorMap in = random_inputs(*g, 3);
  const TensorMap before = run_reference(*g, in);
  std::vector<AttentionOutcome> out;
  fuse_attention(*g, o, &out);
  fuse_residual_norm(*g, o);
  g->verify();
  for (const AttentionOutcome& a : out) r.reasons += a.softmax + ": " + (a.fused ? "fused" : a.reason) + "\n";
  r.after = op_counts(*g);
  r.attention = count(*g, "Attention");
  r.residual_norm = count(*g, "ResidualNorm");
  std::string ops_after;
  for (const auto& [op, n] : r.after) ops_after += " " + op + " " + std::to_string(n);
  MESSAGE(path << ":" << ops_after);
  const TensorMap after = run_reference(*g, in);
  for (const auto& entry : before) CHECK_MESSAGE(max_rel_diff(entry.second, after.at(entry.first)) <= 1e-6, entry.first);
  return r;
}

std::string shipped(const char* f) { return std::string(build_source_dir()) + "/models/" + f; }
std::string exported(const char* f) { return std::string(build_binary_dir()) + "/models/" + f; }

}  // namespace

TEST_CASE("fuse_attention on models/tiny_transformer.onnx and models/tiny_encoder.onnx") {
  {
    const ModelRun r = run_model(shipped("tiny_transformer.onnx"));
    INFO(r.reasons);
    CHECK(r.softmax == 1);
    CHECK(r.attention == 1);
    CHECK(r.after.count("Softmax") == 0);    // no Softmax ...
    CHECK(r.after.count("Transpose") == 0);  // ... and no Transpose left
    CHECK(r.residual_norm == 2);
  }
  {
    const ModelRun r = run_model(shipped("tiny_encoder.onnx"));
    INFO(r.reasons);
    CHECK(r.softmax >= 1);
    CHECK(r.attention == r.softmax);
    CHECK(r.after.count("Softmax") == 0);
    CHECK(r.residual_norm == r.layernorm_before);
  }
}

TEST_CASE("fuse_attention on the exported GPT-2 block and swin_t (64x64)" *
          doctest::skip(!std::filesystem::exists(exported("gpt2_block.onnx")) ||
                        !std::filesystem::exists(exported("swin_t_64.onnx")))) {
  {
    const ModelRun r = run_model(exported("gpt2_block.onnx"));
    INFO(r.reasons);
    CHECK(r.attention == 1);
    CHECK(r.after.count("Where") == 0);  // the causal mask is the op's flag
    CHECK(r.after.count("Transpose") == 0);  // no Transpose left at all
    CHECK(r.residual_norm == 1);  // ln_2 over x + attn (kept for the last residual); ln_1 reads the input
  }
  {
    const ModelRun r = run_model(exported("swin_t_64.onnx"));
    INFO(r.reasons);
    CHECK(r.softmax == 12);
    CHECK(r.attention == 12);
  }
}

// BERT-base-sized (12 layers of 768): 340 MB to load and two reference runs, ~15 s of CPU. Label
// long: ctest -R e2e_fuse_attention_bert.
TEST_CASE("fuse_attention on the exported BERT-like encoder" * doctest::skip()) {
  const ModelRun r = run_model(exported("bert.onnx"));
  INFO(r.reasons);
  CHECK(r.softmax == 12);
  CHECK(r.attention == 12);
  CHECK(r.after.count("Softmax") == 0);
  // Left per layer: nn.MultiheadAttention's [1, S, E] <-> [S, 1, E] around it, Transposes of the
  // unit batch dim only (data in place: views for the schedule), not the heads' transposes.
  CHECK(r.after.at("Transpose") == 24);
  CHECK(r.residual_norm == 24);
}

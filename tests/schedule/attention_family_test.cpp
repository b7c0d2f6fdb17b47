// The "attention" family (schedule/attention.h): the tile rule, and models/tiny_transformer.onnx
// through the pipeline with --fp16: the fuse_attention stage makes one modelc.Attention node, whose
// kernel's plan (the views into the Q, K and V projections' buffers, the interleaved O), tactic, work
// and printed launch are checked against the model's shapes. An FP32 compile keeps the unfused
// subgraph and says why (Schedule::attention).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "codegen/family.h"
#include "frontend/onnx_import.h"
#include "pipeline/pipeline.h"
#include "schedule/attention.h"
#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "support/build_paths.h"

using namespace modelc;

namespace {

std::string tiny_transformer() { return std::string(build_source_dir()) + "/models/tiny_transformer.onnx"; }

std::vector<const Kernel*> attention_kernels(const Schedule& s) {
  std::vector<const Kernel*> r;
  for (const Kernel& k : s.kernels) {
    if (k.family_name() == "attention") r.push_back(&k);
  }
  return r;
}

}  // namespace

TEST_CASE("attention family: the tile by head dim, sequence and targets") {
  // Short sequence: one warp of 16 queries, the keys in one tile of 16.
  AttentionTile t = attention::attention_tile(16, 16, 16, 4, 64 * 1024, 40);
  CHECK(t.warps == 1);
  CHECK(t.bq == 16);
  CHECK(t.bkv == 16);
  CHECK(t.stages == 2);
  // A long sequence over many heads fills the SMs with 4 warps; 3 stages where 3 key tiles exist.
  t = attention::attention_tile(64, 512, 512, 32 * 12, 227 * 1024, 132);
  CHECK(t.warps == 4);
  CHECK(t.bq == 64);
  CHECK(t.bkv == 64);
  CHECK(t.stages == 3);
  CHECK(t.smem_bytes(64) == (64 + 3 * 2 * 64) * 72 * 2);
  // Batch 1, 12 heads, 128 queries on 132 SMs: fewer queries per block so the blocks cover the SMs.
  t = attention::attention_tile(64, 128, 128, 12, 227 * 1024, 132);
  CHECK(t.warps == 1);
  CHECK(t.bq == 16);
  // Head dim 128 within sm_75's 64 KiB: 2 stages, key tiles of 32.
  t = attention::attention_tile(128, 1024, 1024, 64, 64 * 1024, 40);
  CHECK(t.stages == 2);
  CHECK(t.bkv == 32);
  CHECK(t.smem_bytes(128) <= 64 * 1024);
  CHECK(t.smem_bytes(128) == (64 + 2 * 2 * 32) * 136 * 2);
  // Odd lengths: key tiles rounded up to 16.
  t = attention::attention_tile(32, 7, 21, 2, 64 * 1024, 40);
  CHECK(t.bq == 16);
  CHECK(t.bkv == 32);
}

TEST_CASE("attention family: registered in the schedule and in codegen") {
  const FamilyFacts* f = find_family("attention");
  REQUIRE(f != nullptr);
  CHECK(f->plan);
  CHECK(f->choose_tactic);
  CHECK(f->work);
  CHECK(FamilyRegistry::instance().find("attention") != nullptr);
}

TEST_CASE("attention family: tiny_transformer --fp16, one fused kernel reading the projections' buffers") {
  REQUIRE_MESSAGE(std::filesystem::exists(tiny_transformer()), tiny_transformer() << " is missing");
  std::unique_ptr<Graph> g = load_onnx(tiny_transformer());
  LowerOptions o;
  o.passes.fp16 = true;
  o.archs = {"sm_75", "sm_90"};
  const Schedule s = lower(*g, o);

  REQUIRE(s.attention.size() == 1);
  CHECK(s.attention[0].fused);
  // The two MatMuls, the scale, the Softmax, the output's Transpose and Reshape, and Q's, K's and V's
  // Reshape + Transpose (K's with the transpose to K^T folded in): 12 nodes, no kernel of their own.
  const std::vector<std::string>& covers = s.attention[0].covers;
  CHECK(covers.size() == 12);
  for (const char* n : {"/MatMul", "/Div", "/Softmax", "/MatMul_1", "/Transpose", "/Transpose_1", "/Transpose_2",
                        "/Transpose_3", "/Reshape", "/Reshape_3"}) {
    CHECK_MESSAGE(std::find(covers.begin(), covers.end(), n) != covers.end(), n);
  }
  const std::vector<const Kernel*> att = attention_kernels(s);
  REQUIRE(att.size() == 1);
  const Kernel& k = *att[0];
  CHECK(k.op.type == "Attention");
  CHECK(k.op.name == s.attention[0].fused_node);
  CHECK(k.nodes == s.attention[0].covers);
  for (const Kernel& other : s.kernels) {
    CHECK_MESSAGE(other.family_name() != "transpose", other.id << " " << other.op.name);
    CHECK_MESSAGE(other.family_name() != "softmax", other.id << " " << other.op.name);
  }

  // The plan: [1, 16, 64] projections read as 4 heads of 16, O written interleaved as [1, 16, 64].
  const attention::AttentionPlan& p = plan_of<attention::AttentionPlan>(k);
  CHECK(p.type == DType::float16);
  CHECK(p.spec.batch == 1);
  CHECK(p.spec.heads == 4);
  CHECK(p.spec.q_length == 16);
  CHECK(p.spec.kv_length == 16);
  CHECK(p.spec.head_dim == 16);
  CHECK(p.spec.bias.empty());
  CHECK(!p.spec.causal);
  CHECK(p.spec.scale == doctest::Approx(0.25));
  for (const ops::HeadView* v : {&p.spec.q, &p.spec.k, &p.spec.v, &p.spec.o}) {
    CHECK(v->offset == 0);
    CHECK(v->stride_h == 16);
    CHECK(v->stride_s == 64);
  }
  REQUIRE(k.inputs.size() >= 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(k.inputs[i].shape == Shape{1, 16, 64});
    CHECK(k.inputs[i].dense());
  }
  CHECK(k.outputs.at(0).shape == Shape{1, 16, 64});
  // Q, K and V are three buffers, each the output of one range of the horizontally fused projection.
  CHECK(k.inputs[0].buffer != k.inputs[1].buffer);
  CHECK(k.inputs[1].buffer != k.inputs[2].buffer);

  // The tactic and the cost model's work: 4 B H Sq Skv D FLOPs on tensor cores.
  const AttentionTile& t = std::get<AttentionTile>(k.tactic);
  CHECK(t.bq == 16);
  CHECK(t.bkv == 16);
  CHECK(t.warps == 1);
  const KernelWork w = kernel_work(k, k.tactic);
  CHECK(w.engine == Engine::tensor_core);
  CHECK(w.flops == doctest::Approx(4.0 * 4 * 16 * 16 * 16));
  CHECK(w.blocks == 4);
  CHECK(w.bytes == doctest::Approx(2.0 * 4 * 16 * 16 * 4));
  CHECK(w.smem_bytes == (16 + 2 * 2 * 16) * 24 * 2);
  CHECK(k.estimate.us > 0);

  // The printed launch: the template, the views' strides, the scale.
  struct Ctx : EmitContext {
    std::string ptr(const TensorView& v, bool) const override { return "P(" + v.value + ")"; }
    std::string ctype(DType t) const override { return t == DType::float16 ? "__half" : "float"; }
  } ctx;
  const KernelFamily* printer = FamilyRegistry::instance().find("attention");
  REQUIRE(printer != nullptr);
  const KernelLaunches l = printer->emit(k, ctx);
  REQUIRE(l.launches.size() == 1);
  CHECK(l.launches[0].type ==
        "mc::attn::Attention<__half, mc::attn::Shape<1, 4, 16, 16, 16, 4>, mc::attn::View<0, 16, 64>, "
        "mc::attn::View<0, 16, 64>, mc::attn::View<0, 16, 64>, mc::attn::View<0, 16, 64>, mc::attn::Tile<16, 16, 1, 2, "
        "true>, mc::attn::NoBias, mc::attn::NoBias, mc::attn::NotCausal>");
  CHECK(l.launches[0].dynamic_smem == w.smem_bytes);
  bool scale = false;
  for (const LaunchParam& p : l.launches[0].params) scale |= p.field == "scale" && p.value == "0.25f";
  CHECK(scale);
}

TEST_CASE("attention family: tiny_transformer FP32 keeps the unfused subgraph") {
  REQUIRE_MESSAGE(std::filesystem::exists(tiny_transformer()), tiny_transformer() << " is missing");
  std::unique_ptr<Graph> g = load_onnx(tiny_transformer());
  LowerOptions o;
  const Schedule s = lower(*g, o);
  CHECK(s.attention.empty());  // the stage runs with --fp16 / --bf16 only
  CHECK(attention_kernels(s).empty());
  int softmax = 0;
  for (const Kernel& k : s.kernels) softmax += k.family_name() == "softmax";
  CHECK(softmax == 1);
}

TEST_CASE("attention family: --disable-pass fuse_attention keeps the unfused subgraph with --fp16") {
  REQUIRE_MESSAGE(std::filesystem::exists(tiny_transformer()), tiny_transformer() << " is missing");
  std::unique_ptr<Graph> g = load_onnx(tiny_transformer());
  LowerOptions o;
  o.passes.fp16 = true;
  o.passes.disabled.insert("fuse_attention");
  const Schedule s = lower(*g, o);
  CHECK(s.attention.empty());
  CHECK(attention_kernels(s).empty());
}

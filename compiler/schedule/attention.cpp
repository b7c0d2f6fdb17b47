// compiler/schedule/attention.cpp — the "attention" family's descriptor: plan, tactic and work (see
// attention.h), registered beside families.cpp's table.
#include "schedule/attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "schedule/cost_model.h"
#include "schedule/families.h"
#include "support/error.h"

namespace modelc::attention {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool half_type(DType t) { return t == DType::float16 || t == DType::bfloat16; }

/// Operand `what` of the kernel: its value's own dense buffer, 16-byte aligned (the HeadViews are
/// element offsets into it, and the template loads and stores 16-byte chunks).
void check_operand(const Node& n, const TensorView& v, const char* what) {
  if (!v.dense()) {
    throw n.error(fmt::format("internal: the fused attention's {} ('{}') is not a dense buffer of its value", what, v.value));
  }
  if (!v.aligned(16)) {
    throw n.error(fmt::format("internal: the fused attention's {} ('{}') starts {} bytes into its buffer, not on a "
                              "16-byte boundary",
                              what, v.value, v.buffer_offset));
  }
}

void attention_work(KernelWork& w, const Kernel& k, const Tactic& tactic) {
  const AttentionPlan& p = plan_of<AttentionPlan>(k);
  const AttentionTile* t = std::get_if<AttentionTile>(&tactic);
  if (!t) throw k.error("internal: an attention kernel's tactic is not an AttentionTile");
  const ops::AttentionSpec& s = p.spec;
  const int64_t dpad = (s.head_dim + 15) / 16 * 16;
  const int64_t q_tiles = ceil_div(s.q_length, t->bq), kv_tiles = ceil_div(s.kv_length, t->bkv);
  const double scores = static_cast<double>(s.batch * s.heads) * static_cast<double>(s.q_length * s.kv_length);
  w.engine = Engine::tensor_core;
  // Two products of 2 B H Sq Skv D each; the tiles execute whole query and key tiles at DPad.
  w.flops = 4.0 * scores * static_cast<double>(s.head_dim);
  w.executed_flops = 4.0 * static_cast<double>(s.batch * s.heads) * static_cast<double>(q_tiles * t->bq) *
                     static_cast<double>(kv_tiles * t->bkv) * static_cast<double>(dpad);
  // The fewest bytes: Q and O once, K and V once per kv head, each bias term's value once (Q, K and V
  // may be parts of one packed value: the kernel reads only the views).
  const double es = static_cast<double>(dtype_size(p.type));
  w.bytes = es * static_cast<double>(2 * s.batch * s.heads * s.q_length * s.head_dim +
                                     2 * s.batch * s.kv_heads * s.kv_length * s.head_dim);
  for (std::size_t i = 0; i < s.bias.size(); ++i) {
    w.bytes += static_cast<double>(k.inputs.at(static_cast<std::size_t>(ops::kAttentionBias0) + i).nbytes());
  }
  w.blocks = q_tiles * s.heads * s.batch;
  w.threads = t->threads();
  w.smem_bytes = t->smem_bytes(s.head_dim);
  // Registers per lane (templates/attention.cuh): Q's fragments DPad x f / 4 (QRegs), S BKV x f / 2,
  // O DPad x f / 2, f = the m16 row tiles of a warp; plus addresses, m, l and loop state (~40).
  const int64_t f = t->bq / (16 * t->warps);
  const int64_t regs = 40 + (t->q_regs ? dpad * f / 4 : 0) + t->bkv * f / 2 + dpad * f / 2;
  w.regs_per_thread = static_cast<int>(std::min<int64_t>(regs, 255));
  w.k_slices = kv_tiles;
  w.stages = t->stages;
}

FamilyFacts attention_facts() {
  FamilyFacts f;
  f.name = "attention";
  f.tensor_cores = true;
  f.plan = [](const Kernel& k) { return make_plan("attention", attention_plan(k)); };
  f.choose_tactic = attention_tactic;
  f.work = attention_work;
  return f;
}

const FamilyFactsRegistration attention_registration{attention_facts()};

}  // namespace

AttentionPlan attention_plan(const Kernel& k) {
  const Node& n = node_to_plan(k);
  AttentionPlan p;
  p.spec = ops::attention_spec(n);
  p.type = k.inputs.at(ops::kAttentionQ).dtype;
  if (!half_type(p.type)) {
    throw n.error(fmt::format("Q, K and V are {}: the fused attention kernel takes float16 or bfloat16", dtype_name(p.type)),
                  "compile with --fp16 or --bf16 (an FP32 compile keeps the unfused subgraph)");
  }
  const char* names[] = {"Q", "K", "V"};
  for (int i = ops::kAttentionQ; i <= ops::kAttentionV; ++i) {
    const TensorView& v = k.inputs.at(static_cast<std::size_t>(i));
    if (v.dtype != p.type) throw n.error(fmt::format("internal: {} is {}, Q {}", names[i], dtype_name(v.dtype), dtype_name(p.type)));
    check_operand(n, v, names[i]);
  }
  const TensorView& o = k.outputs.at(0);
  if (o.dtype != p.type) throw n.error(fmt::format("internal: O is {}, Q {}", dtype_name(o.dtype), dtype_name(p.type)));
  check_operand(n, o, "O");
  for (std::size_t i = 0; i < p.spec.bias.size(); ++i) {
    const TensorView& b = k.inputs.at(static_cast<std::size_t>(ops::kAttentionBias0) + i);
    if (!b.dense()) throw n.error(fmt::format("internal: bias term {} ('{}') is not a dense buffer of its value", i, b.value));
    p.bias_types.push_back(b.dtype);
  }
  return p;
}

AttentionTile attention_tile(int64_t d, int64_t sq, int64_t skv, int64_t blocks_per_q, int smem, int sms) {
  AttentionTile t;
  // One m16 row tile per warp (f = 1: the fewest registers, D = 128 at 64 keys in ~170); four warps
  // where the sequence has the rows, fewer for short sequences and where the blocks would not cover
  // the SMs.
  t.warps = 4;
  while (t.warps > 1 && 16 * t.warps > (sq + 15) / 16 * 16) t.warps /= 2;
  while (t.warps > 1 && ceil_div(sq, 16 * t.warps) * blocks_per_q < sms) t.warps /= 2;
  t.bq = 16 * t.warps;
  t.bkv = skv >= 64 ? 64 : static_cast<int>((skv + 15) / 16 * 16);
  t.stages = ceil_div(skv, t.bkv) >= 3 ? 3 : 2;
  // Within the shared memory of a block: fewer stages, then smaller key tiles, then fewer queries.
  while (t.smem_bytes(d) > smem) {
    if (t.stages > 2) {
      --t.stages;
    } else if (t.bkv > 16) {
      t.bkv = std::max(16, t.bkv / 2 / 16 * 16);
    } else if (t.warps > 1) {
      t.warps /= 2;
      t.bq = 16 * t.warps;
    } else {
      break;  // the caller reports it
    }
  }
  return t;
}

void attention_tactic(Kernel& k, const std::vector<Target>& targets) {
  const AttentionPlan& p = plan_of<AttentionPlan>(k);
  const ops::AttentionSpec& s = p.spec;
  int smem = std::numeric_limits<int>::max(), sms = std::numeric_limits<int>::max();
  for (const Target& t : targets) {
    if (p.type == DType::bfloat16 && t.sm < 80) {
      throw k.error(fmt::format("the fused attention runs BF16 on sm_80 and newer (BF16 tensor-core MMA); sm_{} has none",
                                t.sm),
                    "an --arch of sm_80 or newer, or --fp16");
    }
    smem = std::min(smem, t.smem_per_block);
    sms = std::min(sms, t.sm_count);
  }
  const AttentionTile t = attention_tile(s.head_dim, s.q_length, s.kv_length, s.batch * s.heads, smem, sms);
  if (t.smem_bytes(s.head_dim) > smem) {
    throw k.error(fmt::format("head dim {} needs {} bytes of shared memory per block at the smallest tile, more than "
                              "the {} of the --arch targets",
                              s.head_dim, t.smem_bytes(s.head_dim), smem));
  }
  k.tactic = t;
  k.note = fmt::format(
      "fused attention, one kernel for {} x {} heads: {} queries x {} keys, head dim {}{}{}; a block of {} queries "
      "({} warps), key tiles of {} through {} shared-memory stages ({} bytes), online softmax in FP32, S never in memory",
      s.batch, s.heads, s.q_length, s.kv_length, s.head_dim, s.causal ? ", causal" : "",
      s.bias.empty() ? "" : fmt::format(", {} bias term{}", s.bias.size(), s.bias.size() > 1 ? "s" : ""), t.bq, t.warps,
      t.bkv, t.stages, t.smem_bytes(s.head_dim));
}

}  // namespace modelc::attention

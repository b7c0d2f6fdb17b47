// codegen/families/attention.cpp — the `attention` family: modelc.Attention (ops/attention.h) as one
// launch of templates/attention.cuh's mc::attn::Attention, every (batch, head) in one grid.
//
// Q, K, V and O are the element offsets and strides of the plan's HeadViews into the buffers of the
// values they view (schedule/attention.h AttentionPlan): each pointer is its buffer's plus the view's
// offset, each stride a template parameter (a dim of one element gets 0: it is never stepped, and
// the template wants multiples of 8). The bias terms likewise (Bias<TB, Batches, SB, SH, SQ, SK>),
// the causal mask as Causal<Offset>; the tile is the tactic's.
#include <fmt/format.h>

#include "codegen/family.h"
#include "codegen/literals.h"
#include "schedule/attention.h"
#include "support/error.h"

namespace modelc {
namespace {

/// The View<SB, SH, SS> of a head view over `heads` heads of `length` rows.
std::string view_type(const ops::HeadView& v, int64_t batch, int64_t heads, int64_t length) {
  return fmt::format("mc::attn::View<{}, {}, {}>", batch == 1 ? 0 : v.stride_b, heads == 1 ? 0 : v.stride_h,
                     length == 1 ? 0 : v.stride_s);
}

/// `ptr` advanced by `offset` elements.
std::string at_offset(const std::string& ptr, int64_t offset) {
  return offset == 0 ? ptr : fmt::format("{} + {}", ptr, int_literal(offset));
}

KernelLaunches emit_attention(const Kernel& k, const EmitContext& ctx) {
  const attention::AttentionPlan& p = plan_of<attention::AttentionPlan>(k);
  const ops::AttentionSpec& s = p.spec;
  const AttentionTile* tile = std::get_if<AttentionTile>(&k.tactic);
  if (!tile) throw k.error("internal: the attention kernel has no AttentionTile tactic");
  const std::string t = ctx.ctype(p.type);
  const std::string shape = fmt::format("mc::attn::Shape<{}, {}, {}, {}, {}, {}>", s.batch, s.heads, s.q_length,
                                        s.kv_length, s.head_dim, s.kv_heads);
  std::string bias[2] = {"mc::attn::NoBias", "mc::attn::NoBias"};
  for (std::size_t i = 0; i < s.bias.size(); ++i) {
    const ops::BiasView& b = s.bias[i];
    bias[i] = fmt::format("mc::attn::Bias<{}, {}, {}, {}, {}, {}>", ctx.ctype(p.bias_types.at(i)), b.batches, b.stride_b,
                          b.stride_h, b.stride_q, b.stride_k);
  }
  const std::string mask =
      s.causal ? fmt::format("mc::attn::Causal<{}>", s.causal_offset) : std::string("mc::attn::NotCausal");
  Launch l;
  l.type = fmt::format("mc::attn::Attention<{}, {}, {}, {}, {}, {}, mc::attn::Tile<{}, {}, {}, {}, {}>, {}, {}, {}>", t,
                       shape, view_type(s.q, s.batch, s.heads, s.q_length),
                       view_type(s.k, s.batch, s.kv_heads, s.kv_length), view_type(s.v, s.batch, s.kv_heads, s.kv_length),
                       view_type(s.o, s.batch, s.heads, s.q_length), tile->bq, tile->bkv, tile->warps, tile->stages,
                       tile->q_regs ? "true" : "false", bias[0], bias[1], mask);
  l.comment = fmt::format("{} '{}': softmax(Q K^T x {} {}) V, {} x {} heads, {} queries x {} keys, head dim {}",
                          k.op.type, k.op.name, float_literal(s.scale),
                          s.bias.empty() ? std::string() : fmt::format("+ {} bias term{}", s.bias.size(), s.bias.size() > 1 ? "s" : ""),
                          s.batch, s.heads, s.q_length, s.kv_length, s.head_dim);
  const ops::HeadView* views[] = {&s.q, &s.k, &s.v};
  const char* fields[] = {"q", "k", "v"};
  for (std::size_t i = 0; i < 3; ++i) l.params.push_back({fields[i], at_offset(ctx.ptr(k.inputs.at(i), true), views[i]->offset)});
  l.params.push_back({"o", at_offset(ctx.ptr(k.outputs.at(0), false), s.o.offset)});
  for (std::size_t i = 0; i < s.bias.size(); ++i) {
    l.params.push_back({i == 0 ? "bias0" : "bias1",
                        at_offset(ctx.ptr(k.inputs.at(static_cast<std::size_t>(ops::kAttentionBias0) + i), true), s.bias[i].offset)});
  }
  l.params.push_back({"scale", float_literal(s.scale)});
  l.dynamic_smem = tile->smem_bytes(s.head_dim);
  l.min_blocks = 1;  // the fragments of Q, S and O in registers: no 128-register cap
  return single_launch(std::move(l));
}

MODELC_REGISTER_FAMILY(attention_family)(KernelFamily{"attention", {"attention.cuh"}, emit_attention});

}  // namespace
}  // namespace modelc

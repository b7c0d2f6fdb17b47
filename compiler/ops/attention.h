// compiler/ops/attention.h — modelc's fused attention op (domain "modelc"), made by
// passes/fuse_attention.cpp from what exporters write (MatMul, scale, bias / mask, Softmax, MatMul
// and the Reshape / Transpose / Split / Gather around them):
//
//   O[b, h, i, :] = sum_j softmax_j(scale * Q[b, h, i, :] . K[b, h / g, j, :] + bias terms (b, h, i, j)
//                                    [-inf where causal and j > i + causal_offset]) V[b, h / g, j, :]
//
// for b < batch, h < heads, i < q_length, j < kv_length, g = heads / kv_heads. Q, K, V and O are
// not tensors of their own: each is a strided view (HeadView) of a value, the head dim contiguous,
// so Q, K and V are read straight out of the projection that made them (one packed QKV product, or
// three) and O is written where the output projection reads it (heads interleaved, [B, S, H * D]):
// no transpose or copy runs around the op. A fully masked row (every score -inf) is NaN, as the
// unfused softmax gives it (0 / 0).
//
// Inputs:  0 Q's value, 1 K's, 2 V's (the same value where the projection is packed), all of one
//          float type (float32, float16, bfloat16); 3, 4 optional bias terms (float types), each
//          read through a BiasView.
// Output:  0 the value O is a view of: shape 'output_shape', Q's type; the view covers each of its
//          elements exactly once.
// Attributes (ints unless said):
//   batch, heads, kv_heads (default heads), q_length, kv_length, head_dim
//   q_view, k_view, v_view, o_view   [offset, stride_b, stride_h, stride_s] (HeadView)
//   bias0_view, bias1_view           [offset, batches, stride_b, stride_h, stride_q, stride_k] (BiasView)
//   output_shape                     the output's shape
//   scale                            float: multiplies Q K^T before the bias terms are added
//   causal, causal_offset            a causal mask: key j is visible to query i when j <= i + offset
//
// The op's facts (ops/attention.cpp): FP16 / BF16 storage with FP32 arithmetic (fp32_compute); its
// kernel the "attention" family (templates/attention.cuh, schedule/attention.h); made by the
// fuse_attention stage of the pipeline (compiler/pipeline/pipeline.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace modelc::ops {

/// \brief Element (b, h, s, d) of a logical [batch][heads][length][head_dim] operand at
/// offset + b stride_b + h stride_h + s stride_s + d of a value's row-major data (strides >= 0).
struct HeadView {
  int64_t offset = 0, stride_b = 0, stride_h = 0, stride_s = 0;
  bool operator==(const HeadView& o) const {
    return offset == o.offset && stride_b == o.stride_b && stride_h == o.stride_h && stride_s == o.stride_s;
  }
};

/// \brief A bias term: score (b, h, i, j) adds element offset + (b % batches) stride_b + h stride_h
/// + i stride_q + j stride_k of the term's value (strides >= 0; 0 where it broadcasts). batches:
/// how many batch entries the term has; a windowed transformer's mask [nW, 1, S, S] over B x nW
/// windows has nW, read at b % nW.
struct BiasView {
  int64_t offset = 0, batches = 1, stride_b = 0, stride_h = 0, stride_q = 0, stride_k = 0;
  bool operator==(const BiasView& o) const {
    return offset == o.offset && batches == o.batches && stride_b == o.stride_b && stride_h == o.stride_h &&
           stride_q == o.stride_q && stride_k == o.stride_k;
  }
};

/// \brief Everything a modelc.Attention node says (its attributes, checked).
struct AttentionSpec {
  int64_t batch = 1, heads = 1, kv_heads = 1, q_length = 1, kv_length = 1, head_dim = 1;
  HeadView q, k, v, o;
  std::vector<BiasView> bias;  ///< one per bias input (3, 4), in order
  double scale = 1.0;
  bool causal = false;
  int64_t causal_offset = 0;
  Shape output_shape;
};

/// The spec of a modelc.Attention node; Error naming the node and attribute when one is missing,
/// out of range for its value (a view reaching past the value's last element), or when o_view does
/// not cover the output exactly once. Reads the inputs' shapes (shapes inferred).
AttentionSpec attention_spec(const Node& n);

/// Writes the spec's attributes on a modelc.Attention node (bias views: one per entry of spec.bias).
void set_attention_spec(Node& n, const AttentionSpec& spec);

/// Input slots of modelc.Attention.
constexpr int kAttentionQ = 0, kAttentionK = 1, kAttentionV = 2, kAttentionBias0 = 3;

}  // namespace modelc::ops

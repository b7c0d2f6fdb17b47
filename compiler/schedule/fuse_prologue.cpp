// compiler/schedule/fuse_prologue.cpp — the fuse_prologue stage (schedule/stages.h).
//
// A per-channel elementwise kernel in front of 1x1 convolutions or pools runs no kernel of its own:
// each convolution or pool reading its output reads its input instead and applies it as it loads X
// (an operand prologue: templates/conv.cuh ChannelPrologue, applied by tensor_core.cuh's tc::Conv
// to its A operand and by pool.cuh's Pool and GlobalPool to each element; Kernel::prologue). Two
// forms:
//  - a BatchNormalization (FusedBatchNormalization with a ReLU or without an activation): the
//    pre-activation BN + ReLU of DenseNet's dense layers and transitions, act(x scale[c] +
//    shift[c]) with scale = gamma / sqrt(var + eps), shift = beta - mean scale (new FP32
//    constants, inputs 4 and 5 of every reader that takes it);
//  - a Mul of x [N, C, H, W] by a gate [N, C, 1, 1] (squeeze-and-excite's channel scale): x
//    gate[n][c] (the gate input 6, read where its producer wrote it).
// Where the fold is exact: the reader is a convolution of groups 1 with a 1x1 window, stride 1, no
// padding (a padded tap must stay zero, which act(0 scale + shift) is not), on the 16-bit NHWC
// tensor-core template (FP16 / BF16 storage, channels-last with a pitch of whole 16-byte chunks,
// 16-byte aligned, BF16 only where every --arch has BF16 MMAs): the template masks channels >= C
// and k past K, so they stay zero. It folds only when EVERY reader of the elementwise kernel's
// output is such a convolution (or a pool, below) reading it as X, the output is its buffer's own
// value (not a Concat slice, not a model output), the convolution reads the input at the layout and
// pitch the output had (W is stored OHWI at that pitch) or, where the input is a channel slice of a wider
// buffer (DenseNet's Concats, elide_concat), at that buffer's pitch with compact K (its channels
// whole 16-byte chunks, its weight re-stored so: restore_conv_weights, a weight only it reads), and
// no boundary Cast was folded into either. A pool reader (MaxPool, AveragePool, GlobalAveragePool,
// GlobalMaxPool: DenseNet's last BN + ReLU, norm5, before its global average pool) takes it in
// either layout and any float storage, reading X where the BN's input lies (any channel pitch
// channels-last, a dense view NCHW): the template transforms each element it loads (the average of
// act(x) is not act of the average) and never loads a padded tap, so a padded window keeps the
// pool's own pad value (zero, or no tap at all) rather than act(0 scale + shift). Else the kernel
// stays, and Kernel::kept_prologue says why (the report's note). FP32 and NCHW models in front of
// convolutions, and INT8 convolutions (QConv: the conv_int8 family), keep their elementwise kernels
// ("FP32 storage", "NCHW layout", "read by a conv_int8 kernel").
//
// A schedule stage like fuse_horizontal, for its reasons: the graph keeps the nodes (the reference,
// `verify` and --print-after see the model unchanged), the layout stage has decided every buffer's
// layout and pitch, and only the kernel list and the readers' views change. Runs after
// fuse_horizontal (a reader may be a horizontally fused kernel; its ranges keep their outputs) and
// before streams and the memory plan (the elementwise kernel's output buffer goes; its input lives
// until the last reader).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "ops/fused.h"
#include "ops/registry.h"
#include "ops/window.h"
#include "schedule/layout.h"
#include "schedule/linear.h"
#include "schedule/stages.h"
#include "schedule/target.h"
#include "schedule/views.h"
#include "support/error.h"

namespace modelc {

std::string OperandPrologue::text() const {
  std::vector<std::string> parts;
  if (affine) parts.push_back(relu ? "relu(x * scale + shift)" : "x * scale + shift");
  if (gate) parts.push_back("x * gate[n][c]");
  return fmt::format("{}", fmt::join(parts, ", then "));
}

namespace {

using linear::aligned16;
using linear::channels_last_pitch;

/// A per-channel elementwise kernel the stage could fold: what it computes and its operands.
struct Candidate {
  OperandPrologue prologue;
  const Value* x = nullptr;     ///< what the readers read instead
  const Value* y = nullptr;     ///< its output
  const Value* gate = nullptr;  ///< the Mul's [N, C, 1, 1] operand
  std::string reason;           ///< non-empty: it stays a kernel
};

std::string producer(const Node& n) {
  const std::string p = ops::producer_of_fused(n.op());
  return p.empty() ? n.op() : p;
}

/// The candidate kernel k is, or none (prologue inactive): a BatchNormalization (+ ReLU) or a Mul
/// by an [N, C, 1, 1] gate, on 4-D data.
Candidate candidate_of(const Kernel& k) {
  Candidate c;
  if (k.family_name() != "elementwise" || !k.source.node || k.source.outputs.size() != 1) return c;
  const Node& n = *k.source.node;
  const std::string op = producer(n);
  ops::EpilogueActivation act;
  if (ops::activation_only_fused(n.op())) act = ops::activation_of_fused(n);
  if (op == "BatchNormalization") {
    if (n.num_outputs() != 1 || n.num_inputs() != 5 || n.input(0).shape().size() != 4) return c;
    c.prologue.affine = true;
    c.prologue.relu = act.kind == ops::Activation::relu;
    c.x = &n.input(0);
    if (act.kind != ops::Activation::none && act.kind != ops::Activation::relu) {
      c.reason = fmt::format("activation {} (a prologue takes ReLU or none)", ops::activation_name(act.kind));
    }
    for (int i = 1; i < 5 && c.reason.empty(); ++i) {
      if (!n.input(i).is_constant()) c.reason = "BatchNormalization parameters read at run time";
    }
  } else if (op == "Mul" && n.num_inputs() == 2) {
    const Shape& y = n.output(0).shape();
    for (int i = 0; i < 2; ++i) {
      const Shape& a = n.input(i).shape();
      const Shape& g = n.input(1 - i).shape();
      if (y.size() == 4 && a == y && g.size() == 4 && g[0] == y[0] && g[1] == y[1] && g[2] == 1 && g[3] == 1 &&
          (y[2] > 1 || y[3] > 1) && !n.input(1 - i).is_constant()) {
        c.x = &n.input(i);
        c.gate = &n.input(1 - i);
      }
    }
    if (!c.x) return c;
    c.prologue.gate = true;
    if (act.kind != ops::Activation::none) c.reason = "an activation after the Mul";
  } else {
    return c;
  }
  c.y = &n.output(0);
  c.prologue.nodes = k.nodes;
  return c;
}

/// Why pool kernel r (named `who`; a reader of the candidate's output, `cand` the candidate's kernel)
/// cannot take the prologue ("" when it can). The pool template applies it to each element it
/// loads, in either layout and any float storage, and never loads a padded tap (a padded window
/// keeps the pool's own pad value): only the views must fit.
std::string pool_unfit(const Kernel& cand, const Candidate& c, const Kernel& r, const std::string& who) {
  const TensorView& x = cand.inputs[0];  // what the reader will read
  const DType t = x.dtype;
  if (t != DType::float32 && t != DType::float16 && t != DType::bfloat16) return fmt::format("{} data", dtype_name(t));
  if (cand.outputs[0].dtype != t || r.outputs[0].dtype != t) return fmt::format("{} reads another type", who);
  if (c.gate && std::any_of(cand.inputs.begin(), cand.inputs.end(), [&](const TensorView& v) { return v.dtype != t; })) {
    return "a gate of another type";
  }
  if (r.channels_last ? channels_last_pitch(x) == 0 : !dense_view(x)) {
    return fmt::format("{} runs {}, its input is not", who, r.channels_last ? "channels-last" : "NCHW");
  }
  if (!r.folded_casts.empty()) return fmt::format("{} folds a boundary Cast", who);
  return "";
}

/// Why kernel r (a reader of the candidate's output, `cand` the candidate's kernel) cannot take the
/// prologue ("" when it can).
std::string reader_unfit(const ValueIndex& index, const Kernel& cand, const Candidate& c,
                         const Kernel& r, const std::vector<Target>& targets, bool* new_pitch) {
  *new_pitch = false;
  const std::string who = r.source.node ? fmt::format("'{}' ({})", r.source.node->name(), r.source.node->op()) : r.id;
  const bool pool = r.family_name() == "pool";
  if (!pool && r.family_name() != "conv") return fmt::format("read by {}, a {} kernel", who, r.family_name());
  const Node& n = *r.source.node;
  if (!pool && producer(n) != "Conv") return fmt::format("read by {}", who);
  for (std::size_t i = 0; i < r.source.inputs.size(); ++i) {
    const Value* v = r.source.inputs[i];
    if (i > 0 && v && index.buffer(v) == index.buffer(c.y)) return fmt::format("read by {} as input {}", who, i);
  }
  if (r.source.inputs.empty() || r.source.inputs[0] != c.y) return fmt::format("read by {} through a view", who);
  if (r.prologue.active()) return fmt::format("{} has a prologue already", who);
  if (pool) return pool_unfit(cand, c, r, who);
  const ops::WindowGeometry g = ops::conv_geometry(n);
  const bool one = std::all_of(g.kernel.begin(), g.kernel.end(), [](int64_t d) { return d == 1; }) &&
                   std::all_of(g.stride.begin(), g.stride.end(), [](int64_t d) { return d == 1; }) &&
                   std::all_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t d) { return d == 0; }) &&
                   std::all_of(g.pad_end.begin(), g.pad_end.end(), [](int64_t d) { return d == 0; });
  if (!one) return fmt::format("read by {}, not a 1x1 stride-1 unpadded convolution", who);
  if (g.group != 1) return fmt::format("read by {} of {} groups", who, g.group);
  const TensorView& x = cand.inputs[0];  // what the reader will read
  const DType t = x.dtype;
  if (t == DType::float32) return "FP32 storage (the prologue is the 16-bit tensor-core convolution's)";
  if (t != DType::float16 && t != DType::bfloat16) return fmt::format("{} data", dtype_name(t));
  if (cand.outputs[0].dtype != t || r.inputs[1].dtype != t) return fmt::format("{} reads another type", who);
  if (c.gate && cand.inputs.size() > 1) {
    for (const TensorView& v : cand.inputs) {
      if (v.dtype != t) return "a gate of another type";
    }
  }
  if (t == DType::bfloat16 && std::any_of(targets.begin(), targets.end(), [](const Target& tg) { return tg.sm < 80; })) {
    return "BF16 below sm_80 (no BF16 MMA: the SIMT convolution)";
  }
  if (!r.channels_last || channels_last_pitch(r.inputs[0]) == 0 || channels_last_pitch(x) == 0) return "NCHW layout";
  if (channels_last_pitch(x) % 8 != 0) return fmt::format("channel pitch {} not a whole number of chunks", channels_last_pitch(x));
  if (x.strides != r.inputs[0].strides) {
    // The input is a channel slice of a wider buffer (a Concat's, elide_concat): the convolution
    // reads it there with K over its channels (compact K), its weight stored so, as elide_concat's
    // conv readers do: whole 16-byte chunks of channels, a weight only it reads.
    const int64_t C = x.shape.size() > 1 ? x.shape[1] : 0;
    if (x.shape != r.inputs[0].shape || channels_last_pitch(x) <= C) {
      return fmt::format("{} reads X at pitch {}, its input is at {}", who, channels_last_pitch(r.inputs[0]),
                         channels_last_pitch(x));
    }
    if (C % tensor_core_channels(t) != 0) {
      return fmt::format("{}: its input is a slice at pitch {} and {} channels are not whole 16-byte chunks", who,
                         channels_last_pitch(x), C);
    }
    const int w = ops::lookup(n).layout_roles.weight;
    if (w < 0 || !n.has_input(w) || n.input(w).users().size() != 1) {
      return fmt::format("{}: its input is a slice at pitch {} and its weight another kernel reads too", who,
                         channels_last_pitch(x));
    }
    *new_pitch = true;
  }
  if (!aligned16(x)) return "X not 16-byte aligned";
  if (!r.folded_casts.empty()) return fmt::format("{} folds a boundary Cast", who);
  if (linear::mixed_epilogue_types(r)) return fmt::format("{}: bias and residual of different types", who);
  return "";
}

}  // namespace

bool fuse_prologue(Schedule& s, const LowerOptions& o) {
  Graph& g = *s.graph;
  const std::vector<Target> targets = targets_for(o.archs, false);
  ValueIndex index(s);
  std::set<std::size_t> folded;
  std::vector<const Node*> restore;  // convolutions now reading X at a wider pitch: their weights
  for (std::size_t ki = 0; ki < s.kernels.size(); ++ki) {
    Kernel& cand = s.kernels[ki];
    Candidate c = candidate_of(cand);
    if (!c.prologue.active()) continue;
    // Its readers: every other kernel with an input in its output's buffer.
    const int yb = index.buffer(c.y);
    std::vector<std::size_t> readers;
    for (std::size_t r = 0; r < s.kernels.size(); ++r) {
      if (r == ki) continue;
      for (const Value* v : s.kernels[r].source.inputs) {
        if (v && index.buffer(v) == yb) {
          readers.push_back(r);
          break;
        }
      }
    }
    if (c.reason.empty() && !cand.folded_casts.empty()) c.reason = "a boundary Cast folded in";
    if (c.reason.empty() && (index.step(c.y) != nullptr || index.space(c.y) != Space::arena)) {
      c.reason = "its output is a slice, a view or a model output";
    }
    if (c.reason.empty() && readers.empty()) c.reason = "no reader";
    std::vector<const Node*> repitched;  // readers that will read X at the input's wider pitch
    for (std::size_t r : readers) {
      if (!c.reason.empty()) break;
      bool new_pitch = false;
      c.reason = reader_unfit(index, cand, c, s.kernels[r], targets, &new_pitch);
      if (new_pitch) repitched.push_back(s.kernels[r].source.node);
    }
    if (!c.reason.empty()) {
      cand.kept_prologue = c.reason;
      continue;
    }
    const Value* scale = nullptr;
    const Value* shift = nullptr;
    if (c.prologue.affine) {
      const Node& n = *cand.source.node;
      const double eps = n.attr_float("epsilon", 1e-5);
      const std::vector<double> gamma = n.input(1).constant().to_f64(), beta = n.input(2).constant().to_f64(),
                                mean = n.input(3).constant().to_f64(), var = n.input(4).constant().to_f64();
      std::vector<double> sc(gamma.size()), sh(gamma.size());
      for (std::size_t i = 0; i < gamma.size(); ++i) {
        sc[i] = gamma[i] / std::sqrt(var[i] + eps);
        sh[i] = beta[i] - mean[i] * sc[i];
      }
      const Shape cs{static_cast<int64_t>(gamma.size())};
      scale = g.add_constant(n.name() + "_prologue_scale", Tensor::from_f64(DType::float32, cs, sc));
      shift = g.add_constant(n.name() + "_prologue_shift", Tensor::from_f64(DType::float32, cs, sh));
      add_value_buffer(s, scale);
      add_value_buffer(s, shift);
    }
    for (std::size_t r : readers) {
      Kernel& k = s.kernels[r];
      k.source.inputs.resize(std::max<std::size_t>(k.source.inputs.size(), kPrologueGateInput + 1));
      k.source.inputs[0] = c.x;
      k.source.inputs[kPrologueScaleInput] = scale;
      k.source.inputs[kPrologueShiftInput] = shift;
      k.source.inputs[kPrologueGateInput] = c.gate;
      k.prologue = c.prologue;
      k.nodes.insert(k.nodes.end(), cand.nodes.begin(), cand.nodes.end());
    }
    folded.insert(ki);
    restore.insert(restore.end(), repitched.begin(), repitched.end());
    index.rebuild();
  }
  if (folded.empty()) return false;
  erase_kernels(s, folded);
  restore_conv_weights(s, restore);
  return true;
}

}  // namespace modelc

// compiler/schedule/linear_plans.cpp — the plans of the linear families, from the node and views.
#include "schedule/linear_plans.h"

#include "support/error.h"

namespace modelc::linear {

namespace {

bool present(const Kernel& k, std::size_t i) { return k.inputs.size() > i && k.inputs[i].dtype != DType::undefined; }

LinearEpilogue epilogue_of(const Kernel& k) {
  LinearEpilogue e;
  const Node& n = *k.source.node;
  e.fused = is_fused(n) || k.row_maps.residual;
  if (k.row_maps.residual) {
    // fold_row_maps took the Add after the product's (scattered) output: it adds to the result.
    if (is_fused(n)) e.act = ops::activation_of_fused(n);
    e.residual_position = "after_activation";
  } else if (e.fused) {
    e.act = ops::activation_of_fused(n);
    if (present(k, ops::kFusedResidualInput)) {
      e.residual_position = n.attr_string("residual_position", "");
      if (e.residual_position != "before_activation" && e.residual_position != "after_activation") {
        throw n.error("attribute 'residual_position' is '" + e.residual_position +
                      "', expected before_activation or after_activation");
      }
    }
  }
  for (const OutputRange& r : k.ranges) {
    e.ranges.push_back(is_fused(*r.source) ? ops::activation_of_fused(*r.source) : ops::EpilogueActivation{});
  }
  return e;
}

/// The image pitch of the gate of kernel k's operand prologue (input kPrologueGateInput); 0 without one.
int64_t gate_pitch(const Kernel& k) {
  if (!k.prologue.gate) return 0;
  const TensorView& gate = k.inputs.at(kPrologueGateInput);
  if (gate.strides.size() != 4 || (gate.shape[1] > 1 && gate.strides[1] != 1)) {
    throw Error("internal: kernel " + k.id + ": the prologue's gate '" + gate.value + "' is not [N, C] with unit channel stride");
  }
  return gate.strides[0];
}

}  // namespace

std::shared_ptr<const KernelPlan> gemm_plan(const Kernel& k) {
  return make_plan("gemm", GemmPlan{lower_gemm(k), epilogue_of(k)});
}

std::shared_ptr<const KernelPlan> conv_plan(const Kernel& k) {
  ConvPlan p;
  p.geometry = conv_geometry(k);
  p.epilogue = epilogue_of(k);
  const TensorView &x = k.inputs.at(0), &w = k.inputs.at(1), &y = k.outputs.at(0);
  const bool ranged = !k.ranges.empty();
  p.dense = x.dense() && w.dense() && (ranged || y.dense());
  p.x_pitch = channels_last_pitch(x);
  p.y_pitch = ranged ? 0 : channels_last_pitch(y);
  if (!p.dense && (p.x_pitch == 0 || (p.y_pitch == 0 && !ranged))) {
    throw Error("internal: kernel " + k.id + " (" + k.family_name() + "): X, W and Y are neither dense NCHW nor channels-last");
  }
  // Dense X, W and Y run NCHW even where their strides are channels-last too (X [N, C, 1]: one
  // pixel), with W OIHW; only a channels-last convolution (SIMT or tensor cores) has W stored OHWI.
  if (!p.dense) {
    p.w = kernel_weight_storage(k, x, w, p.x_pitch);
    p.depth = tc_conv_depth(k);
  }
  p.prologue = k.prologue;
  p.gate_pitch = gate_pitch(k);
  return make_plan("conv", std::move(p));
}

std::shared_ptr<const KernelPlan> conv_depthwise_plan(const Kernel& k) {
  DirectConvPlan p{conv_geometry(k), epilogue_of(k), kernel_layout(k)};
  if (!p.layout.channels_last) require_dense(k);
  return make_plan("conv_depthwise", std::move(p));
}

std::shared_ptr<const KernelPlan> conv_transpose_plan(const Kernel& k) {
  require_dense(k);
  return make_plan("conv_transpose", DirectConvPlan{conv_transpose_geometry(k), epilogue_of(k), {}});
}

std::shared_ptr<const KernelPlan> pool_plan(const Kernel& k) {
  const Node& n = *k.source.node;
  PoolPlan p;
  p.layout = kernel_layout(k);
  if (!p.layout.channels_last) require_dense(k);
  p.global = n.op() == "GlobalAveragePool" || n.op() == "GlobalMaxPool";
  p.max = n.op() == "MaxPool" || n.op() == "GlobalMaxPool";
  if (p.global) {
    const std::size_t rank = k.inputs.at(0).shape.size();
    if (rank < 2) throw n.error("input X has rank " + std::to_string(rank) + ", expected 2 or more");
  } else {
    p.geometry = pool_geometry(k);
    p.include_pad = !p.max && n.attr_int("count_include_pad", 0) != 0;
    p.column_major = n.attr_int("storage_order", 0) != 0;
  }
  p.prologue = k.prologue;
  p.gate_pitch = gate_pitch(k);
  return make_plan("pool", std::move(p));
}

std::shared_ptr<const KernelPlan> conv_int8_plan(const Kernel& k) {
  Int8ConvPlan p;
  p.geometry = conv_geometry(k);
  p.x_pitch = channels_last_pitch(k.inputs.at(0));
  p.y_pitch = channels_last_pitch(k.outputs.at(0));
  p.depth = tc_conv_depth(k);
  p.epilogue = ops::int8_epilogue(*k.source.node);
  return make_plan("conv_int8", std::move(p));
}

std::shared_ptr<const KernelPlan> gemm_int8_plan(const Kernel& k) {
  return make_plan("gemm_int8", Int8GemmPlan{int8_gemm(k), ops::int8_epilogue(*k.source.node)});
}

const ops::Int8Epilogue* int8_epilogue_of(const Kernel& k) {
  if (const auto* c = plan_if<Int8ConvPlan>(k)) return &c->epilogue;
  if (const auto* g = plan_if<Int8GemmPlan>(k)) return &g->epilogue;
  return nullptr;
}

}  // namespace modelc::linear

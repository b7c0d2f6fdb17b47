// codegen/families/pad.cpp — the "pad" family: Pad in every form (pads as an attribute before opset
// 11, as an input from 11, with axes from 18, the wrap mode from 19), constant, edge, reflect and
// wrap modes, negative pads cropping first: the pads, mode and fill value of ops::pad_params and
// ops::pad_fill (ops/pad.h), as the reference reads them (the kernel's plan: schedule/data_movement.h
// PadPlan); mc::dm::Pad.
#include "codegen/families/elementwise_util.h"
#include "schedule/data_movement.h"

namespace modelc::codegen {

namespace {

KernelLaunches emit_pad(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const PadPlan& p = plan_of<PadPlan>(k);
  if (y.numel() == 0) return nothing_to_run(node_str(k) + ": the output is empty, nothing to write");
  const std::string comment =
      "mode " + p.mode +
      (p.mode == "constant"
           ? std::string(p.fill_input >= 0 ? ", the fill value from a tensor" : ", fill bits " + bits_literal(p.fill))
           : "");
  const std::string mode = p.mode == "constant"  ? "constant"
                           : p.mode == "edge"    ? "edge"
                           : p.mode == "reflect" ? "reflect"
                                                 : "wrap";
  if (mode != p.mode) throw kernel_error(k, "Pad mode '" + p.mode + "' has no kernel");
  const std::string T = bits_type(x.dtype);
  Launch l;
  l.comment = comment;
  l.type = "mc::dm::Pad<" + T + ", mc::dm::PadMode::" + mode + ", " + dims(y.shape) + ",\n      " + dims(y.strides) +
           ", " + dims(x.strides) + ",\n      " + dims(p.lo) + ", " + dims(p.kept) + ", " + dims(p.begin) + ">";
  l.params = {{"y", ctx.ptr(y, false)}, {"x", ctx.ptr(x, true)}};
  // The fill value: a tensor computed at run time, or its bits (constant mode; 0 is the default).
  if (p.fill_input >= 0) {
    l.params.push_back({"fill", ctx.ptr(k.inputs.at(static_cast<std::size_t>(p.fill_input)), true)});
  } else if (p.mode == "constant") {
    l.params.push_back({"fill_bits", bits_literal(p.fill)});
  }
  return single_launch(std::move(l));
}

}  // namespace

MODELC_REGISTER_FAMILY(pad_family)
(KernelFamily{"pad",
              {"tensor_index.cuh", "data_movement.cuh"},
              emit_pad});

}  // namespace modelc::codegen

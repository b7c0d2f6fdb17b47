// codegen/families/pad.cpp — the "pad" family: Pad in every form (pads as an attribute before opset
// 11, as an input from 11, with axes from 18, the wrap mode from 19), constant, edge, reflect and
// wrap modes, negative pads cropping first: the pads, mode and fill value of ops::pad_params and
// ops::pad_fill (ops/pad.h), as the reference reads them; mc::dm::Pad.
#include "codegen/families/data_movement.h"
#include "ops/pad.h"
#include "support/error.h"

namespace modelc::codegen {

PadPlan pad_plan(const Node& n, const TensorView& x, const TensorView& y) {
  const ops::PadParams params = ops::pad_params(n, x.shape);
  PadPlan p;
  p.mode = params.mode;
  for (std::size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t begin = params.begin[d], end = params.end[d];
    p.begin.push_back(begin);
    p.lo.push_back(begin < 0 ? -begin : 0);
    p.kept.push_back(x.shape[d] - p.lo.back() - (end < 0 ? -end : 0));
    if (x.shape[d] + begin + end != y.shape[d]) throw n.error("internal: the pads disagree with the output shape");
  }
  // The fill value of the constant mode, in x's type: known now, or read from a tensor computed at
  // run time.
  if (n.has_input(2) && !n.input(2).is_constant()) {
    p.fill_input = 2;
  } else {
    p.fill = ops::pad_fill(n, x.dtype, n.has_input(2) ? &n.input(2).constant() : nullptr);
  }
  return p;
}

namespace {

KernelLaunches emit_pad(const Kernel& k, const EmitContext& ctx) {
  const TensorView &x = k.inputs.at(0), &y = k.outputs.at(0);
  const PadPlan p = pad_plan(*k.source.node, x, y);
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
